//! `grappe trace report`.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use grappe_report::{ReportOptions, write_report};

use super::common::{
    EstimationArgs, IntervalArgs, TraceInput, check_output, events_to_read, open, progress, refuse_to_overwrite_input,
};

/// One self-contained HTML file: space-time diagram (zoom with the wheel, pan by
/// dragging), communication matrix, profile tables, clock statistics and the
/// consistency check. Opens in any browser, offline.
///
/// The diagram shows the whole run at any length: zoomed out, the share of each
/// state per rank and pixel column (a summary computed over the whole trace);
/// zoomed in, the calls and messages one by one where the page's size allowed
/// them (everywhere if the trace fits, else windows spread over the whole run).
/// With --from and --to, the calls drawn one by one are those of that interval;
/// the summary, matrix and tables still cover the whole run.
#[derive(Debug, Args)]
pub struct ReportArgs {
    #[command(flatten)]
    input: TraceInput,
    #[command(flatten)]
    estimation: EstimationArgs,
    /// The HTML file to write.
    #[arg(short, long, value_name = "FILE", default_value = "grappe-report.html")]
    output: PathBuf,
    /// The page's size at most: 30MB, 500kB, 1.5GB, 64MiB (bare numbers are bytes).
    /// The page says what it embeds within it.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "30MB")]
    max_size: u64,
    #[command(flatten)]
    interval: IntervalArgs,
}

pub fn execute(args: ReportArgs) -> Result<i32> {
    let window = args.interval.window("the diagram's interval")?;
    check_output(&args.output)?;
    let (set, time) = open(&args.input.trace, &args.estimation)?;
    refuse_to_overwrite_input(&set, &args.output)?;
    let options = ReportOptions { max_bytes: args.max_size, window };
    // `write_report` reads the trace twice (the check, then the rest), its
    // progress counting both passes.
    let bar = progress("reporting", || events_to_read(&set, 2));
    let summary = write_report(&set, &time, &args.output, &options, &mut |n| bar.set_position(n))?;
    bar.finish_and_clear();
    let s = &summary.selection;
    sayln!(
        "{}: {:.1} MB of {:.1} MB at most; {} of {} calls and regions and {} of {} messages drawn one by one",
        args.output.display(),
        summary.bytes as f64 / 1e6,
        summary.max_bytes as f64 / 1e6,
        s.kept,
        s.intervals,
        s.arrows,
        s.messages
    );
    for sentence in &summary.embedded {
        sayln!("  {sentence}");
    }
    Ok(0)
}

/// Bytes from `30MB`, `500kB`, `1.5GB`, `64MiB` or a bare number of bytes.
pub(super) fn parse_size(text: &str) -> Result<u64, String> {
    const EXAMPLES: &str = "a size like 30MB, 500kB, 1.5GB or 64MiB (bare numbers are bytes)";
    let at = text.find(|c: char| c.is_alphabetic()).unwrap_or(text.len());
    let (number, unit) = text.split_at(at);
    let scale: f64 = match unit.trim() {
        "" | "B" => 1.0,
        "kB" | "KB" | "k" => 1e3,
        "MB" | "M" => 1e6,
        "GB" | "G" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        other => return Err(format!("{text:?}: unknown unit {other:?}; expected {EXAMPLES}")),
    };
    match number.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v * scale < 1e15 => Ok((v * scale).round() as u64),
        Ok(_) => Err(format!("{text:?}: expected a positive size, {EXAMPLES}")),
        Err(_) => Err(format!("{text:?}: expected {EXAMPLES}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_decimals_and_units() {
        for (text, bytes) in [("30MB", 30_000_000), ("1.5GB", 1_500_000_000), ("500kB", 500_000), ("64MiB", 1 << 26)] {
            assert_eq!(parse_size(text), Ok(bytes), "{text}");
        }
        assert_eq!(parse_size(" 2048 "), Ok(2048));
        for (text, said) in
            [("5 parsecs", "unknown unit"), ("0MB", "positive"), ("MB", "expected a size"), ("-1MB", "positive")]
        {
            let error = parse_size(text).expect_err(text);
            assert!(error.contains(said) && error.contains(text.trim()), "{text}: {error}");
        }
    }
}
