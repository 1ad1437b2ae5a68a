//! A report of a trace: one self-contained HTML file (no external
//! script, font or network access) showing a trace:
//!
//! - a header with the job: ranks, hosts, events, duration, location;
//! - a space-time diagram on a canvas: ranks as lanes, calls coloured by
//!   kind, the late-sender and collective waiting in red, user regions
//!   above the calls, matched messages as arrows from the send's start to
//!   the receive's end; mouse wheel to zoom, drag to pan, a tooltip per
//!   call; above it an overview of the whole run (time in calls per rank
//!   and time bin);
//! - the communication matrix as a heat map;
//! - the [`profile`](grappe_analysis::profile) tables;
//! - global time (each rank's basis, the clock statistics and warnings)
//!   and the [`check`](grappe_analysis::check()) summary.
//!
//! Big traces: the diagram embeds at most [`ReportOptions::max_events`]
//! calls and regions, those of a *window* from the start of the run (or of
//! the interval asked for, [`ReportOptions::window`]) to the date where
//! that budget ran out (plus the calls that started before that date and
//! end after it, up to a tenth more), and the first
//! [`ReportOptions::max_arrows`] messages received in the window. The page
//! says in words what it left out and shades the diagram outside the window;
//! the overview strip (time in calls per rank and time bin, about 400 000
//! cells at most), the matrix, the profile and the check cover the whole
//! trace. The trace is read twice (check; then profile and diagram), and
//! memory is bounded by what the page embeds. A page of 200 000 calls and
//! 50 000 arrows weighs about 4.5 MB.
//!
//! The address `report.html#view=START,END` (ns from the first event)
//! opens the diagram on that interval; `#selftest` makes the page drive
//! its own controls and set `data-selftest="ok"` (for the browser tests).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod data;
mod diagram;
mod lane;
mod overview;
mod page;

use std::path::{Path, PathBuf};

use grappe_analysis::profile::{Profile, Profiler};
use grappe_analysis::{AnalysisError, CausalStream, CheckReport, GlobalTime, Result, TraceSet, check};
use serde::Serialize;

use diagram::Selection;
pub use diagram::Window;

/// What [`write_report`] embeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReportOptions {
    /// Calls and user regions drawn in the diagram, at most (a tenth more
    /// may be kept to finish the window).
    pub max_events: usize,
    /// Messages drawn as arrows, at most.
    pub max_arrows: usize,
    /// The part of the run the diagram details (the rest of the page
    /// covers the whole run).
    pub window: Window,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions { max_events: 200_000, max_arrows: 50_000, window: Window::ALL }
    }
}

/// What [`write_report`] wrote.
#[derive(Debug, Clone, Serialize)]
pub struct ReportSummary {
    /// The HTML file.
    pub path: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
    /// Calls and regions in the trace.
    pub intervals: u64,
    /// Of them, in the diagram.
    pub embedded_intervals: u64,
    /// Messages matched in the trace.
    pub messages: u64,
    /// Of them, drawn as arrows.
    pub embedded_arrows: u64,
    /// The start of the diagram's window (global ns) when it is not the
    /// run's (an interval was asked for).
    pub window_start_ns: Option<u64>,
    /// The end of the diagram's window (global ns) when the trace did not
    /// fit in it, or the interval asked for ends before the run.
    pub window_end_ns: Option<u64>,
    /// What the diagram leaves out, as the page says it (empty: nothing).
    pub omitted: Vec<String>,
    /// The profile shown.
    pub profile: Profile,
    /// The check shown.
    pub check: CheckReport,
}

/// Writes the report of a trace to `out`. `progress` gets the events read
/// so far, over both passes (so up to twice the events).
pub fn write_report(
    set: &TraceSet,
    time: &GlobalTime,
    out: &Path,
    options: &ReportOptions,
    progress: &mut dyn FnMut(u64),
) -> Result<ReportSummary> {
    let check = check(CausalStream::open(set, time)?, &mut *progress)?;
    let mut stream = CausalStream::open(set, time)?;
    let mut profiler = Profiler::for_stream(&stream, set.world_size());
    let mut builder =
        diagram::Builder::new(&stream, set.world_size(), options.max_events, options.max_arrows, options.window);
    let mut read = 0u64;
    while let Some(linked) = stream.next_event()? {
        profiler.observe(linked);
        builder.observe(linked);
        read += 1;
        if read % grappe_analysis::PROGRESS_EVERY == 0 {
            progress(check.events + read);
        }
    }
    progress(check.events + read);
    let profile = profiler.finish();
    let (diagram, selection) = builder.finish();
    let omitted = omitted(&selection, diagram.origin_ns, diagram.end, options);
    let page = page::Page { set, time, check: &check, profile: &profile, diagram: &diagram, omitted: &omitted };
    page.write(out)?;
    let bytes = std::fs::metadata(out).map_err(|e| AnalysisError::io(out, e))?.len();
    Ok(ReportSummary {
        path: out.to_owned(),
        bytes,
        intervals: selection.intervals,
        embedded_intervals: selection.kept,
        messages: selection.messages,
        embedded_arrows: selection.arrows,
        window_start_ns: selection.window_start,
        window_end_ns: selection.window_end,
        omitted,
        profile,
        check,
    })
}

/// What the diagram's window leaves out, in words (`None`: nothing).
fn window_sentence(s: &Selection, origin: u64, end: u64, options: &ReportOptions) -> Option<String> {
    let ms = |global: u64| global.saturating_sub(origin) as f64 / 1e6;
    let run = end as f64 / 1e6;
    let whole = "the overview above it, the matrix, the profile and the check cover the whole run";
    if let Some(from) = s.window_start.filter(|&from| ms(from) > run) {
        return Some(format!(
            "Nothing is in the diagram: the interval asked for starts at {:.3} ms, after the end of the {run:.3} ms \
             run; {whole}.",
            ms(from)
        ));
    }
    if s.window_end.is_none() && s.window_start.is_none() {
        return None;
    }
    let shown = match (s.window_start, s.window_end) {
        (None, Some(to)) => format!("the first {:.3} ms", ms(to)),
        (from, to) => format!("{:.3} ms to {:.3} ms", from.map_or(0.0, ms), to.map_or(run, |to| ms(to).min(run))),
    };
    let next = match s.window_end.map(ms) {
        Some(to) if to < run => format!(" `grappe trace report --from {to:.3}ms` details what follows."),
        _ => String::new(),
    };
    // Not full, the window can only end where the interval asked for does.
    let why = match s.full {
        true => format!("at most {} are embedded, plus those that start in that window", options.max_events),
        false => "the interval asked for".to_owned(),
    };
    Some(format!(
        "Left out of the diagram: {} of the trace's {} calls and regions. The diagram shows {shown} of the {run:.3} ms \
         run ({} calls and regions: {why}); {whole}.{next}",
        s.intervals - s.kept,
        s.intervals,
        s.kept,
    ))
}

/// The sentences that say what the diagram leaves out.
fn omitted(s: &Selection, origin: u64, end: u64, options: &ReportOptions) -> Vec<String> {
    let ms = |global: u64| global.saturating_sub(origin) as f64 / 1e6;
    let mut out = Vec::new();
    out.extend(window_sentence(s, origin, end, options));
    if s.window_dropped > 0 {
        out.push(format!(
            "{} calls and regions that start in the diagram's window were left out too (its margin for calls \
             that end after the window was full).",
            s.window_dropped
        ));
    }
    if s.arrows < s.messages {
        let stop =
            s.arrows_end.map_or(String::new(), |t| format!("; arrows stop at receives ending after {:.3} ms", ms(t)));
        out.push(format!(
            "{} of the trace's {} messages are drawn as arrows (those received in the diagram's window, at most {}{stop}).",
            s.arrows, s.messages, options.max_arrows
        ));
    }
    out
}
