//! `grappe trace check`.

use anyhow::Result;
use clap::Args;
use grappe_analysis::CausalStream;

use super::common::{EstimationArgs, TraceInput, events_to_read, open, print_json, progress};

/// Checks a trace: tachyons (receives dated before their send on global time),
/// unmatched sends and receives, sizes, per-rank order, cut files. Exit status 1 if
/// anything is wrong.
#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    input: TraceInput,
    #[command(flatten)]
    estimation: EstimationArgs,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub fn execute(args: CheckArgs) -> Result<i32> {
    let (set, time) = open(&args.input.trace, &args.estimation)?;
    let bar = progress("checking", || events_to_read(&set, 1));
    let report = grappe_analysis::check(CausalStream::open(&set, &time)?, &mut |n| bar.set_position(n))?;
    bar.finish_and_clear();
    if args.json {
        print_json(&report)?;
    } else {
        say!("{report}");
    }
    Ok(if report.problems().is_empty() { 0 } else { 1 })
}
