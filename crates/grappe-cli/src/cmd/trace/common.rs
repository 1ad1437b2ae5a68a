//! What the trace tools share: the clock-estimation options, opening a
//! set on global time, progress bars, JSON output.

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use grappe_analysis::stream::Window;
use grappe_analysis::{GlobalOptions, GlobalTime, TraceSet};
use grappe_clock::{Estimator, Strategy};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

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
    /// Clock estimator: robust (convex-hull bounds where every sample allows a line, else a
    /// regression on the quietest exchanges with widened intervals), dunigan (Tape/PVM's),
    /// haddad, min-rtt[=FRACTION] or convex-hull.
    #[arg(long, value_name = "NAME", default_value = "robust")]
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

/// Refuses, before the trace is read, an output file that cannot be
/// created, saying "cannot create PATH: why": a directory on its path
/// missing or a file, a directory in its place, no right to create it
/// there. An existing file is opened for writing (and left unchanged); a
/// new one is created and removed, the one sure test of the right.
pub fn check_output(output: &Path) -> Result<()> {
    let cannot = |why: String| anyhow!("cannot create {}: {why}", output.display());
    match std::fs::metadata(output) {
        Ok(meta) if meta.is_dir() => return Err(cannot("it is a directory".to_owned())),
        // Opening a FIFO for writing waits for its reader: its writer does.
        Ok(meta) if meta.file_type().is_fifo() => return Ok(()),
        Ok(_) => {
            return std::fs::OpenOptions::new().write(true).open(output).map(drop).map_err(|e| cannot(e.to_string()));
        }
        Err(_) => {}
    }
    let dir = output.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if let Some(why) = blocked_directory(dir) {
        return Err(cannot(why));
    }
    std::fs::File::create_new(output).map_err(|e| cannot(e.to_string()))?;
    let _ = std::fs::remove_file(output);
    Ok(())
}

/// Why `dir` cannot hold a file: the first directory on its way that does
/// not exist or is a file; `None` if it is a directory.
fn blocked_directory(dir: &Path) -> Option<String> {
    let ancestors: Vec<&Path> = dir.ancestors().collect();
    // One that cannot be looked at (no right) counts as there: creating
    // the file then says why.
    let found = ancestors.iter().position(|a| a.as_os_str().is_empty() || a.try_exists().unwrap_or(true))?;
    let existing = ancestors[found];
    if std::fs::metadata(existing).is_ok_and(|meta| !meta.is_dir()) {
        return Some(format!("{} is a file, not a directory", existing.display()));
    }
    // The first missing one, below the deepest that exists.
    found.checked_sub(1).map(|missing| format!("{} does not exist", ancestors[missing].display()))
}

/// The events a tool goes through in `passes` passes over the whole
/// trace, as the files' footers say: a progress bar's 100%. `None` when
/// a file does not say (cut, unfinished) or cannot be read (the tool's
/// own reading reports that).
pub fn events_to_read(set: &TraceSet, passes: u64) -> Option<u64> {
    set.events_recorded().ok().flatten().map(|events| events * passes)
}

/// Progress over the events read, on stderr when it is a terminal (never
/// into a pipe or a file): a bar with the share done, the rate and the
/// time left when the events to read are known (`total`, asked only when
/// the bar is drawn: it reads each file's end), else a spinner with the
/// count and the rate.
pub fn progress(what: &str, total: impl FnOnce() -> Option<u64>) -> ProgressBar {
    let target = ProgressDrawTarget::stderr();
    if target.is_hidden() {
        return ProgressBar::hidden();
    }
    let bar = progress_on(what, total(), target);
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}

/// [`progress`] drawn on `target`.
fn progress_on(what: &str, total: Option<u64>, target: ProgressDrawTarget) -> ProgressBar {
    let template = match total {
        Some(_) => "{msg} [{bar:30}] {percent:>3}%  {done} of {total} events, {rate}, {eta} left",
        None => "{spinner} {msg}: {done} events, {rate}, {elapsed}",
    };
    let style = ProgressStyle::with_template(template)
        .expect("a valid template")
        .progress_chars("=> ")
        .with_key("done", |state: &ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = w.write_str(&count_text(state.pos()));
        })
        .with_key("total", |state: &ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = w.write_str(&count_text(state.len().unwrap_or(0)));
        })
        .with_key("rate", |state: &ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = write!(w, "{} events/s", count_text(state.per_sec() as u64));
        });
    let bar = ProgressBar::with_draw_target(total, target);
    bar.set_style(style);
    bar.set_message(what.to_owned());
    bar
}

/// A count for people: as is below 1000, else with a prefix and one
/// decimal while that fits in three digits (`950`, `12.3 k`, `123 M`).
fn count_text(n: u64) -> String {
    if n < 1000 {
        return n.to_string();
    }
    let (mut value, mut prefix) = (n as f64, "");
    for next in ["k", "M", "G", "T", "P"] {
        // What rounds to 1000 takes the next prefix.
        if value < 999.5 {
            break;
        }
        value /= 1000.0;
        prefix = next;
    }
    if value < 99.95 { format!("{value:.1} {prefix}") } else { format!("{value:.0} {prefix}") }
}

/// Prints a value as pretty JSON on stdout.
pub fn print_json(value: &impl serde::Serialize) -> Result<()> {
    let text = serde_json::to_string_pretty(value).context("encoding the JSON output")?;
    sayln!("{text}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use indicatif::{ProgressDrawTarget, TermLike};

    use super::{count_text, progress_on};

    #[test]
    fn counts_and_rates_have_a_prefix_and_at_most_one_decimal() {
        let cases = [
            (0, "0"),
            (999, "999"),
            (1_000, "1.0 k"),
            (12_345, "12.3 k"),
            (99_949, "99.9 k"),
            (99_950, "100 k"),
            (123_456, "123 k"),
            (999_499, "999 k"),
            (999_500, "1.0 M"),
            (12_345_678, "12.3 M"),
            (4_200_000_000, "4.2 G"),
        ];
        for (n, text) in cases {
            assert_eq!(count_text(n), text, "{n}");
        }
    }

    /// A terminal that keeps what is written to it, line by line.
    #[derive(Debug, Clone, Default)]
    struct Screen(Arc<Mutex<Vec<String>>>);

    impl Screen {
        fn last(&self) -> String {
            self.0.lock().unwrap().iter().rev().find(|l| !l.trim().is_empty()).cloned().unwrap_or_default()
        }
    }

    impl TermLike for Screen {
        fn width(&self) -> u16 {
            120
        }
        fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn write_line(&self, s: &str) -> std::io::Result<()> {
            self.0.lock().unwrap().push(s.to_owned());
            Ok(())
        }
        fn write_str(&self, s: &str) -> std::io::Result<()> {
            self.0.lock().unwrap().push(s.to_owned());
            Ok(())
        }
        fn clear_line(&self) -> std::io::Result<()> {
            Ok(())
        }
        fn flush(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// What a bar over `total` events shows once at `position`.
    fn drawn(total: Option<u64>, position: u64) -> String {
        let screen = Screen::default();
        let bar = progress_on("reporting", total, ProgressDrawTarget::term_like(Box::new(screen.clone())));
        bar.set_position(position);
        bar.abandon(); // draws the bar as it is, and leaves it
        screen.last()
    }

    /// A known total gives a bar with the share done, the counts and the
    /// rate with a prefix, and the time left; the report's two passes end
    /// at 100%.
    #[test]
    fn a_known_total_draws_a_bar_with_the_share_done_and_the_time_left() {
        let half = drawn(Some(2 * 4_000_000), 4_000_000);
        assert!(half.starts_with("reporting ["), "{half}");
        assert!(half.contains(" 50%  4.0 M of 8.0 M events, "), "{half}");
        assert!(half.ends_with(" left"), "{half}");
        let rate = half.split(", ").nth(1).unwrap();
        assert!(rate.ends_with(" events/s"), "{half}");
        let number = rate.trim_end_matches(" events/s").trim_end_matches([' ', 'k', 'M', 'G']);
        assert!(number.split('.').nth(1).is_none_or(|d| d.len() == 1), "at most one decimal: {half}");
        let done = drawn(Some(2 * 4_000_000), 2 * 4_000_000);
        assert!(done.contains("100%  8.0 M of 8.0 M events"), "{done}");
    }

    #[test]
    fn an_unknown_total_draws_a_count_and_a_rate() {
        let said = drawn(None, 12_345);
        assert!(said.contains("reporting: 12.3 k events, "), "{said}");
        assert!(said.contains(" events/s, "), "{said}");
        assert!(!said.contains('%'), "{said}");
    }
}
