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
/// With --from and --to, the diagram details that interval; the overview, matrix and
/// tables still cover the whole run.
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
    #[command(flatten)]
    interval: IntervalArgs,
}

pub fn execute(args: ReportArgs) -> Result<i32> {
    let window = args.interval.window("the diagram's interval")?;
    check_output(&args.output)?;
    let (set, time) = open(&args.input.trace, &args.estimation)?;
    refuse_to_overwrite_input(&set, &args.output)?;
    let options = ReportOptions { max_events: args.max_events, max_arrows: args.max_arrows, window };
    // `write_report` reads the trace twice (the check, then the rest), its
    // progress counting both passes.
    let bar = progress("reporting", || events_to_read(&set, 2));
    let summary = write_report(&set, &time, &args.output, &options, &mut |n| bar.set_position(n))?;
    bar.finish_and_clear();
    sayln!(
        "{}: {:.1} MB, {} of {} calls and {} of {} messages drawn",
        args.output.display(),
        summary.bytes as f64 / 1e6,
        summary.embedded_intervals,
        summary.intervals,
        summary.embedded_arrows,
        summary.messages
    );
    for omitted in &summary.omitted {
        sayln!("  {omitted}");
    }
    Ok(0)
}
