//! `grappe trace clock`.

use std::path::Path;

use anyhow::Result;
use clap::Args;
use grappe_analysis::set::list_ranks;
use grappe_analysis::{Basis, GlobalTime, Layout};
use grappe_clock::ClockReport;

use super::common::{EstimationArgs, TraceInput, open, print_json};

/// The clock statistics: how each rank's dates are put on rank 0's clock, and for
/// estimated clocks the slope, offset, 95% confidence intervals and %Err per rank
/// (laid out like Tape/PVM's report), how far each rank's dates can be trusted over
/// the run (the half-width of their 95% interval at its start, its end and its worst
/// point), with its warnings. By default the ranks that are put on it alike are named
/// together, and the statistics are those of the least sure ranks; --ranks gives every
/// rank. Exits 1 when a rank's dates could not be put on rank 0's clock.
#[derive(Debug, Args)]
pub struct ClockArgs {
    #[command(flatten)]
    input: TraceInput,
    #[command(flatten)]
    estimation: EstimationArgs,
    /// Every rank: its own line, and its row of clock statistics.
    #[arg(long)]
    ranks: bool,
    /// Print JSON instead of text (every rank).
    #[arg(long)]
    json: bool,
}

/// Rows of clock statistics shown without --ranks: the ranks whose offset
/// is least sure (the widest confidence interval).
const LEAST_SURE_SHOWN: usize = 5;

/// Exits 1 when a rank's dates stay on its own clock (no fit), after
/// saying which on stderr: its dates are wrong by its clock's offset, and
/// a script must not take them for global ones.
pub fn execute(args: ClockArgs) -> Result<i32> {
    let (set, time) = open(&args.input.trace, &args.estimation)?;
    if args.json {
        print_json(&time)?;
    } else {
        print_text(&time, set.layout() == Layout::Merged, args.ranks, &args.input.trace);
    }
    let uncorrected = time.uncorrected();
    if uncorrected.is_empty() {
        return Ok(0);
    }
    let s = if uncorrected.len() == 1 { "" } else { "s" };
    eprintln!(
        "grappe trace clock: error: rank{s} {} left on local time (no clock fit, see the notes above): their dates \
         are not on rank 0's clock",
        list_ranks(&uncorrected)
    );
    Ok(1)
}

fn print_text(time: &GlobalTime, merged: bool, every_rank: bool, trace: &Path) {
    match merged {
        true => sayln!("a merged trace: its dates were made global by the merge ({})", time.estimation),
        false => sayln!("global time: {}", time.estimation),
    }
    let bases = grouped_bases(time);
    let mut condensed = false;
    if every_rank {
        for rank in time.ranks.iter().flatten() {
            sayln!("  rank {:>5}: {}", rank.rank, rank.basis.describe());
        }
    } else {
        for (basis, ranks) in &bases {
            let s = if ranks.len() == 1 { "" } else { "s" };
            sayln!("  rank{s} {}: {basis}", list_ranks(ranks));
            condensed |= ranks.len() > 1;
        }
    }
    match &time.report {
        Some(report) if every_rank || report.peers.len() <= LEAST_SURE_SHOWN => sayln!("\n{report}"),
        Some(report) => {
            condensed = true;
            sayln!("\n{}", least_sure(report, LEAST_SURE_SHOWN));
            let warnings = match report.warnings.len() {
                0 => "no warnings".to_owned(),
                1 => "1 warning in all".to_owned(),
                n => format!("{n} warnings in all"),
            };
            sayln!(
                "(the {LEAST_SURE_SHOWN} of {} estimated ranks whose offset is least sure, widest interval first; \
                 {warnings})",
                report.peers.len(),
            );
        }
        None if time.ranks.iter().flatten().any(|r| matches!(r.basis, Basis::Uncorrected { .. })) => {
            sayln!("\nno clock statistics: no rank's clock could be estimated (the reasons are above)")
        }
        None => sayln!("\nno rank needed an estimate (add --estimate-shared to see the estimator on them)"),
    }
    if condensed {
        sayln!("every rank's line and statistics: grappe trace clock --ranks {}", trace.display());
    }
}

/// The ranks by how their dates are put on the reference clock, in the
/// order of their first rank.
fn grouped_bases(time: &GlobalTime) -> Vec<(String, Vec<u32>)> {
    let mut groups: Vec<(String, Vec<u32>)> = Vec::new();
    for rank in time.ranks.iter().flatten() {
        let basis = rank.basis.describe();
        match groups.iter_mut().find(|(b, _)| *b == basis) {
            Some((_, ranks)) => ranks.push(rank.rank),
            None => groups.push((basis, vec![rank.rank])),
        }
    }
    groups
}

/// The report of the `shown` peers whose offset's confidence interval is
/// widest, widest first, with their warnings.
fn least_sure(report: &ClockReport, shown: usize) -> ClockReport {
    let mut peers = report.peers.clone();
    peers.sort_by(|a, b| b.fit.offset.half_width().total_cmp(&a.fit.offset.half_width()));
    peers.truncate(shown);
    match report.trust.first() {
        Some(run) => ClockReport::for_run(report.reference.clone(), peers, run.start_ns, run.end_ns),
        None => ClockReport::new(report.reference.clone(), peers),
    }
}
