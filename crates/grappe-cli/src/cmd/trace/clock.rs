//! `grappe trace clock`.

use anyhow::Result;
use clap::Args;
use grappe_analysis::{Basis, GlobalTime, Layout};

use super::common::{EstimationArgs, TraceInput, open, print_json};

/// The clock statistics: how each rank's dates are put on rank 0's clock, and for
/// estimated clocks the slope, offset, 95% confidence intervals and %Err per rank
/// (laid out like Tape/PVM's report), with its warnings.
#[derive(Debug, Args)]
pub struct ClockArgs {
    #[command(flatten)]
    input: TraceInput,
    #[command(flatten)]
    estimation: EstimationArgs,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub fn execute(args: ClockArgs) -> Result<i32> {
    let (set, time) = open(&args.input.trace, &args.estimation)?;
    if args.json {
        print_json(&time)?;
    } else {
        print_text(&time, set.layout() == Layout::Merged);
    }
    Ok(0)
}

fn print_text(time: &GlobalTime, merged: bool) {
    match merged {
        true => sayln!("a merged trace: its dates were made global by the merge ({})", time.estimation),
        false => sayln!("global time: {}", time.estimation),
    }
    for rank in time.ranks.iter().flatten() {
        sayln!("  rank {:>5}: {}", rank.rank, rank.basis.describe());
    }
    match &time.report {
        Some(report) => sayln!("\n{report}"),
        None if time.ranks.iter().flatten().any(|r| matches!(r.basis, Basis::Uncorrected { .. })) => {
            sayln!("\nno clock statistics: no rank's clock could be estimated (the reasons are above)")
        }
        None => sayln!("\nno rank needed an estimate (add --estimate-shared to see the estimator on them)"),
    }
}
