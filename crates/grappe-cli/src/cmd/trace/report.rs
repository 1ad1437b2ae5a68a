//! `grappe trace report`.

use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::Args;
use grappe_analysis::report::{ReportOptions, Window, write_report};

use super::common::{EstimationArgs, TraceInput, open, progress};
use crate::cmd::time::parse_offset_ns;

/// One self-contained HTML file: space-time diagram (zoom with the wheel, pan by
/// dragging), communication matrix, profile tables, clock statistics and the
/// consistency check. Opens in any browser, offline.
#[derive(Debug, Args)]
pub struct ReportArgs {
    #[command(flatten)]
    input: TraceInput,
    #[command(flatten)]
    estimation: EstimationArgs,
    /// The HTML file to write.
    #[arg(short, long, value_name = "FILE", default_value = "grappe-report.html")]
    output: PathBuf,
    /// Calls and regions drawn in the diagram at most (the page says what is left out).
    #[arg(long, value_name = "N", default_value_t = ReportOptions::default().max_events)]
    max_events: usize,
    /// Messages drawn as arrows at most.
    #[arg(long, value_name = "N", default_value_t = ReportOptions::default().max_arrows)]
    max_arrows: usize,
    /// The diagram details the run from this date on (from its first event: 1.5s, 250ms,
    /// 40us, 800ns; bare numbers are seconds); the overview, matrix and tables still cover
    /// the whole run.
    #[arg(long, value_name = "TIME", value_parser = parse_offset_ns, allow_hyphen_values = true)]
    from: Option<u64>,
    /// The diagram details the run up to this date (same units as --from).
    #[arg(long, value_name = "TIME", value_parser = parse_offset_ns, allow_hyphen_values = true)]
    to: Option<u64>,
}

pub fn execute(args: ReportArgs) -> Result<i32> {
    let window = Window { from: args.from.unwrap_or(0), to: args.to.unwrap_or(u64::MAX) };
    if window.to <= window.from {
        bail!("--to must come after --from (the diagram's interval would be empty)");
    }
    let (set, time) = open(&args.input.trace, &args.estimation)?;
    let options = ReportOptions { max_events: args.max_events, max_arrows: args.max_arrows, window };
    let bar = progress("reporting");
    let summary = write_report(&set, &time, &args.output, &options, &mut |n| bar.set_position(n))?;
    bar.finish_and_clear();
    println!(
        "{}: {:.1} MB, {} of {} calls and {} of {} messages drawn",
        args.output.display(),
        summary.bytes as f64 / 1e6,
        summary.embedded_intervals,
        summary.intervals,
        summary.embedded_arrows,
        summary.messages
    );
    for omitted in &summary.omitted {
        println!("  {omitted}");
    }
    Ok(0)
}
