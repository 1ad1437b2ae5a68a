//! What the trace tools share: the clock-estimation options, opening a
//! set on global time, progress bars, JSON output.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use grappe_analysis::stream::Window;
use grappe_analysis::{GlobalOptions, GlobalTime, TraceSet};
use grappe_clock::{Estimator, Strategy};
use indicatif::{ProgressBar, ProgressStyle};

use crate::cmd::time::parse_offset_ns;

/// The trace to read.
#[derive(Debug, Args)]
pub struct TraceInput {
    /// Directory of per-rank traces, or a merged trace file.
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,
}

/// An interval of the run.
#[derive(Debug, Args)]
pub struct IntervalArgs {
    /// Start of the interval, from the run's first event: 1.5s, 250ms, 40us, 800ns
    /// (bare numbers are seconds).
    #[arg(long, value_name = "TIME", value_parser = parse_offset_ns, allow_hyphen_values = true)]
    from: Option<u64>,
    /// End of the interval (same units as --from).
    #[arg(long, value_name = "TIME", value_parser = parse_offset_ns, allow_hyphen_values = true)]
    to: Option<u64>,
}

impl IntervalArgs {
    /// The interval; an empty one is refused (`what` says what it bounds).
    pub fn window(&self, what: &str) -> Result<Window> {
        let window = Window { from: self.from.unwrap_or(0), to: self.to.unwrap_or(u64::MAX) };
        if window.to <= window.from {
            let from = if self.from.is_some() { "--from" } else { "the run's start (--from, 0 by default)" };
            bail!("--to must come after {from} ({what} would be empty)");
        }
        Ok(window)
    }

    /// Whether an interval was asked for.
    pub fn is_set(&self) -> bool {
        self.from.is_some() || self.to.is_some()
    }
}

/// The running-median window when none is asked for (Tape/PVM's).
const DEFAULT_MEDIAN_WINDOW: usize = 5;

/// How global time is estimated.
#[derive(Debug, Clone, Args)]
pub struct EstimationArgs {
    /// Clock estimator: dunigan (Tape/PVM's), haddad, min-rtt[=FRACTION] or convex-hull.
    #[arg(long, value_name = "NAME", default_value = "dunigan")]
    estimator: Estimator,
    /// Sampling strategy: sba (samples before and after the run, interpolated) or sb
    /// (samples before, extrapolated).
    #[arg(long, value_name = "sb|sba", default_value = "sba")]
    strategy: Strategy,
    /// Running-median window over each phase's offsets (odd; 1 keeps every sample)
    /// [default: 5, narrowed for a rank sampled with fewer points; a window asked for
    /// and wider than a rank's samples is an error].
    #[arg(long, value_name = "N")]
    median_window: Option<usize>,
    /// Estimate the clocks of ranks that share rank 0's clock too (they are rebased
    /// exactly otherwise): shows the estimator's error against a known answer.
    #[arg(long)]
    estimate_shared: bool,
    /// Repair the tachyons global time leaves (receives dated before their send, when the
    /// clocks' estimate errs by more than a message's latency) with a controlled logical
    /// clock, as Scalasca does: such a receive ends at its send's start plus
    /// --min-latency-ns, and its rank's later events move as much. Off: dates as estimated.
    #[arg(long)]
    repair_tachyons: bool,
    /// The controlled logical clock's minimum message latency.
    #[arg(long, value_name = "NS", default_value_t = 0, requires = "repair_tachyons")]
    min_latency_ns: u64,
}

impl EstimationArgs {
    pub fn options(&self) -> GlobalOptions {
        let mut options = GlobalOptions {
            estimate_shared: self.estimate_shared,
            tachyon_repair: self.repair_tachyons.then_some(self.min_latency_ns),
            window_asked: self.median_window.is_some(),
            ..GlobalOptions::default()
        };
        options.fit.estimator = self.estimator;
        options.fit.strategy = self.strategy;
        let window = self.median_window.unwrap_or(DEFAULT_MEDIAN_WINDOW);
        options.fit.median_window = (window != 1).then_some(window);
        options
    }
}

/// Opens the set and builds global time, printing the notes of both.
pub fn open(path: &Path, estimation: &EstimationArgs) -> Result<(TraceSet, GlobalTime)> {
    let set = TraceSet::open(path)?;
    let time = GlobalTime::estimate(&set, &estimation.options())?;
    for note in set.notes().iter().chain(&time.notes) {
        eprintln!("grappe trace: note: {note}");
    }
    Ok((set, time))
}

/// Says on stderr what the files read lack (cut, unfinished, events
/// dropped): what a tool wrote of such a trace is partial.
pub fn note_partial(stream: &grappe_analysis::StreamSummary) {
    for line in grappe_analysis::stream::incomplete(stream) {
        eprintln!("grappe trace: note: partial trace: {line}");
    }
}

/// Refuses to write `output` over one of the trace's own files, which
/// would destroy what is being read (an output not there yet is none).
pub fn refuse_to_overwrite_input(set: &TraceSet, output: &Path) -> Result<()> {
    let Ok(out) = output.canonicalize() else { return Ok(()) };
    for file in set.files() {
        if file.path.canonicalize().is_ok_and(|input| input == out) {
            let whose = file.rank().map_or("the merged trace".to_owned(), |rank| format!("the trace of rank {rank}"));
            bail!(
                "{}: is {whose} being read; writing there would destroy it (choose another output)",
                output.display()
            );
        }
    }
    Ok(())
}

/// A spinner counting events on stderr (hidden when stderr is not a
/// terminal).
pub fn progress(what: &str) -> ProgressBar {
    let bar = ProgressBar::new_spinner();
    let style = ProgressStyle::with_template("{spinner} {msg}: {human_pos} events ({per_sec}, {elapsed})")
        .expect("a valid template");
    bar.set_style(style);
    bar.set_message(what.to_owned());
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}

/// Prints a value as pretty JSON on stdout.
pub fn print_json(value: &impl serde::Serialize) -> Result<()> {
    let text = serde_json::to_string_pretty(value).context("encoding the JSON output")?;
    sayln!("{text}");
    Ok(())
}
