//! A report of a trace: one self-contained HTML file (no external
//! script, font or network access) showing a trace:
//!
//! - a header with the job: ranks, hosts, events, the run's two
//!   durations (from the end of init to the start of finalize, and from
//!   the first event to the last), location;
//! - a space-time diagram on a canvas: ranks as lanes, mouse wheel to
//!   zoom, drag to pan. Zoomed out, each pixel column shows the share of
//!   each state (compute, each kind of call, waiting, failed calls) per
//!   rank, as Vampir's summary timeline does; zoomed in where the calls
//!   are embedded, the calls coloured by kind, the late-sender and
//!   collective waiting in red, user regions above the calls, matched
//!   messages as arrows from the send's start to the receive's end, a
//!   tooltip per call. Above it an overview of the whole run;
//! - the communication matrix as a heat map;
//! - the [`profile`](grappe_analysis::profile) tables;
//! - global time (each rank's basis, the clock statistics and warnings)
//!   and the [`check`](grappe_analysis::check()) summary.
//!
//! Any size: the page weighs at most [`ReportOptions::max_bytes`]. The
//! summary covers the whole run at any length (memory and page size are
//! fixed by its resolution, see the `summary` module); the calls, regions and
//! messages drawn one by one are those of *detail windows*: the whole run
//! if it fits, else windows spread over the whole run, as long as the size
//! allows (see the `census` module). The page and [`ReportSummary::embedded`] say
//! what was embedded. The trace is read twice (the check, which also
//! places the summary's bins and plans the windows; then the profile, the
//! summary and the diagram), and memory is bounded by the page's size and
//! the summary's resolution, whatever the trace's length.
//!
//! The address `report.html#view=START,END` (ns from the first event)
//! opens the diagram on that interval; `#selftest` makes the page drive
//! its own controls and set `data-selftest="ok"` (for the browser tests).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod census;
mod data;
mod diagram;
mod lane;
mod page;
mod summary;

use std::path::{Path, PathBuf};

use grappe_analysis::profile::{Profile, Profiler};
use grappe_analysis::{AnalysisError, CausalStream, CheckReport, GlobalTime, TraceSet, check_observing};
use serde::Serialize;

use census::{Census, Costs, Windows};
pub use diagram::{Selection, Window};

/// What [`write_report`] embeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReportOptions {
    /// The page's size, at most (bytes).
    pub max_bytes: u64,
    /// The part of the run detailed call by call, at most (the summary,
    /// the matrix and the tables cover the whole run).
    pub window: Window,
}

impl ReportOptions {
    /// The default bound on the page's size: big enough for a million
    /// calls drawn one by one, small enough for a browser to open in a
    /// second or two.
    pub const DEFAULT_MAX_BYTES: u64 = 30_000_000;
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions { max_bytes: Self::DEFAULT_MAX_BYTES, window: Window::ALL }
    }
}

/// Why no report was written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// Reading the trace or writing the page failed.
    #[error(transparent)]
    Analysis(#[from] AnalysisError),
    /// The page's bound is smaller than its least content.
    #[error(
        "the report needs about {needed} bytes (its tables and the coarsest summary of the run), more than the \
         {max_bytes} bytes it may take: allow more (--max-size)"
    )]
    TooSmall {
        /// The smallest page possible, bytes.
        needed: u64,
        /// The bound asked for.
        max_bytes: u64,
    },
}

/// What [`write_report`] wrote.
#[derive(Debug, Clone, Serialize)]
pub struct ReportSummary {
    /// The HTML file.
    pub path: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
    /// The bound on its size.
    pub max_bytes: u64,
    /// What is drawn one by one, of what the trace has.
    pub selection: Selection,
    /// The detail windows: where the calls are drawn one by one (global
    /// ns, `[start, end)`).
    pub detail_windows: Vec<(u64, u64)>,
    /// The run: first event's start and last event's end (global ns).
    pub run: Option<(u64, u64)>,
    /// The summary's levels sent, coarsest first: bin width (ns), bins.
    pub summary_levels: Vec<(u64, usize)>,
    /// Ranks per row of the summary.
    pub summary_group: u32,
    /// What was embedded, as the page says it.
    pub embedded: Vec<String>,
    /// The profile shown.
    pub profile: Profile,
    /// The check shown.
    pub check: CheckReport,
}

/// What a call or region, and an arrow, add to the page, about (low:
/// the second pass keeps more than fits, and the page is cut to fit).
const COSTS: Costs = Costs { interval: 20, arrow: 14 };
/// The share of the page the summary may take (its coarsest level is
/// always sent).
const SUMMARY_SHARE: u64 = 4;
/// Rounds of cutting the detail windows to fit the page, at most.
const FIT_ROUNDS: usize = 8;

/// Writes the report of a trace to `out`. `progress` gets the events read
/// so far, over both passes (so up to twice the events).
pub fn write_report(
    set: &TraceSet,
    time: &GlobalTime,
    out: &Path,
    options: &ReportOptions,
    progress: &mut dyn FnMut(u64),
) -> Result<ReportSummary, ReportError> {
    let first_pass = CausalStream::open(set, time)?;
    let mut census = Census::new(first_pass.origin());
    let check = check_observing(first_pass, &mut *progress, &mut |linked| census.observe(linked))?;
    let span = census.span().unwrap_or((0, 0));
    let interval = (span.0.saturating_add(options.window.from), span.0.saturating_add(options.window.to));
    let planned = census.windows(interval, options.max_bytes, COSTS);
    let mut stream = CausalStream::open(set, time)?;
    let mut profiler = Profiler::for_stream(&stream, set.world_size());
    let summary = summary::Summary::new(span, set.world_size());
    let mut builder = diagram::Builder::new(&stream, set.world_size(), planned, summary);
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
    let (mut detail, summary) = builder.finish();
    let mut summary = summary.encode(options.max_bytes / SUMMARY_SHARE);
    let fit = Fit { set, time, check: &check, profile: &profile, census: &census, span, interval, options };
    let html = fit.page(&mut detail, &mut summary)?;
    std::fs::write(out, &html.bytes).map_err(|e| AnalysisError::io(out, e))?;
    Ok(ReportSummary {
        path: out.to_owned(),
        bytes: html.bytes.len() as u64,
        max_bytes: options.max_bytes,
        selection: detail.selection,
        detail_windows: detail.windows.clone(),
        run: census.span(),
        summary_levels: summary.levels.iter().map(|l| (l.bin_ns, l.bins)).collect(),
        summary_group: summary.group,
        embedded: html.embedded,
        profile,
        check,
    })
}

/// A page written in memory, and what it says it embeds.
struct Html {
    bytes: Vec<u8>,
    embedded: Vec<String>,
}

/// Fits the page in its bound: drops the summary's finest levels until
/// the page without detail fits, then narrows the detail windows until
/// the whole page does.
struct Fit<'a> {
    set: &'a TraceSet,
    time: &'a GlobalTime,
    check: &'a CheckReport,
    profile: &'a Profile,
    census: &'a Census,
    span: (u64, u64),
    interval: (u64, u64),
    options: &'a ReportOptions,
}

impl Fit<'_> {
    fn page(&self, detail: &mut diagram::Detail, summary: &mut summary::SummaryData) -> Result<Html, ReportError> {
        let max = self.options.max_bytes;
        if detail.selection.kept == detail.selection.intervals {
            // Every call is drawn one by one: bins finer than a quarter of
            // the busiest lane's mean call would never be drawn.
            let run = self.span.1.saturating_sub(self.span.0);
            summary.drop_finer_than(run / detail.busiest_lane().max(1) / 4);
        }
        let base = loop {
            let bare = self.render(detail, summary, true)?;
            if bare.bytes.len() as u64 <= max {
                break bare.bytes.len() as u64;
            }
            if !summary.drop_finest() {
                // Rounded up: the page states its bound, in a few more or
                // fewer characters.
                let needed = (bare.bytes.len() as u64 + 1_000).next_multiple_of(1_000);
                return Err(ReportError::TooSmall { needed, max_bytes: max });
            }
        };
        for _ in 0..FIT_ROUNDS {
            let html = self.render(detail, summary, false)?;
            let bytes = html.bytes.len() as u64;
            if bytes <= max {
                return Ok(html);
            }
            // Bytes per unit of the census' cost, as measured.
            let cost: u64 = detail.windows.iter().map(|&w| self.census.cost_of(w, COSTS)).sum();
            let per_unit = (bytes - base) as f64 / cost.max(1) as f64;
            let budget = ((max - base) as f64 / per_unit * 0.97) as u64;
            let windows = self.narrower(&detail.windows, budget);
            detail.keep_only(windows);
        }
        detail.keep_only(Vec::new());
        self.render(detail, summary, false)
    }

    /// Windows planned for `budget`, strictly within `windows`.
    fn narrower(&self, windows: &Windows, mut budget: u64) -> Windows {
        loop {
            let planned = self.census.windows(self.interval, budget, COSTS);
            if planned != *windows || budget == 0 {
                return planned;
            }
            budget = budget * 9 / 10;
        }
    }

    fn render(
        &self,
        detail: &diagram::Detail,
        summary: &summary::SummaryData,
        bare: bool,
    ) -> Result<Html, ReportError> {
        let origin = self.span.0;
        let to = self.options.window.to;
        let asked = (self.options.window.from, (to != u64::MAX).then_some(to));
        let diagram = detail.data(origin, asked, summary, bare);
        let embedded = embedded(detail, summary, self.span, self.interval, self.options, bare);
        let page = page::Page {
            set: self.set,
            time: self.time,
            check: self.check,
            profile: self.profile,
            diagram: &diagram,
            embedded: &embedded,
        };
        let mut bytes = Vec::new();
        page.render(&mut bytes).map_err(|e| AnalysisError::io(Path::new("(the page in memory)"), e))?;
        Ok(Html { bytes, embedded })
    }
}

/// What the page embeds, in words.
fn embedded(
    detail: &diagram::Detail,
    summary: &summary::SummaryData,
    span: (u64, u64),
    interval: (u64, u64),
    options: &ReportOptions,
    bare: bool,
) -> Vec<String> {
    let ms = |ns: u64| format!("{:.3} ms", ns as f64 / 1e6);
    let duration = |ns: u64| page::duration(ns);
    let run = span.1.saturating_sub(span.0);
    let mut out = Vec::new();
    let rows = match summary.group {
        1 => "per rank".to_owned(),
        n => format!("per group of {n} ranks"),
    };
    let (coarse, fine) = (summary.levels.first(), summary.levels.last());
    if let (Some(coarse), Some(fine)) = (coarse, fine) {
        let mut s = format!(
            "The whole run ({}) is summarised {rows}: the share of each state in bins of {} ({} bins)",
            ms(run),
            duration(coarse.bin_ns),
            coarse.bins
        );
        if summary.levels.len() > 1 {
            s += &format!(", and finer as you zoom in, down to {} ({} bins)", duration(fine.bin_ns), fine.bins);
        }
        if summary.levels_left_out > 0 {
            s += &format!(
                "; finer levels, down to {}, were left out to keep the page within {:.1} MB",
                duration(summary.finest_ns),
                options.max_bytes as f64 / 1e6
            );
        }
        out.push(s + ".");
    }
    let sel = detail.selection;
    let windows = if bare { &Vec::new() } else { &detail.windows };
    let covered: u64 = windows.iter().map(|w| w.1 - w.0).sum();
    let (kept, arrows) = if bare { (0, 0) } else { (sel.kept, sel.arrows) };
    let asked = interval.0 > span.0 || interval.1 <= span.1;
    if kept == sel.intervals && arrows == sel.messages {
        out.push(format!(
            "Every call and region ({kept}) and every message ({arrows}) of the trace is drawn one by one when you zoom in."
        ));
    } else if windows.is_empty() {
        out.push(format!(
            "No call is drawn one by one: the page's bound ({:.1} MB) leaves no room for them, or the interval asked \
             for has none; the summary is drawn at every zoom.",
            options.max_bytes as f64 / 1e6
        ));
    } else {
        let from = |date: u64| ms(date.saturating_sub(span.0));
        let whole = |w: &(u64, u64)| (asked && *w == interval) || (!asked && w.0 <= span.0 && w.1 > span.1);
        let spread = match windows.len() {
            1 if whole(&windows[0]) && asked => {
                format!("the interval asked for, {} to {}", from(windows[0].0), from(windows[0].1))
            }
            1 => format!("one window, {} to {}", from(windows[0].0), from(windows[0].1.min(span.1))),
            n => format!(
                "{n} windows spread from {} to {}{}, {:.1}% of the run",
                from(windows[0].0),
                from(windows[n - 1].1.min(span.1)),
                if asked { " (in the interval asked for)" } else { "" },
                100.0 * covered as f64 / run.max(1) as f64
            ),
        };
        out.push(format!(
            "Drawn one by one when you zoom in: {kept} of the trace's {} calls and regions and {arrows} of its {} \
             messages, those of {spread} (marked under the overview); elsewhere the summary is drawn. The page is \
             kept within {:.1} MB (`grappe trace report --max-size`; --from and --to choose the interval detailed).",
            sel.intervals,
            sel.messages,
            options.max_bytes as f64 / 1e6
        ));
    }
    out
}
