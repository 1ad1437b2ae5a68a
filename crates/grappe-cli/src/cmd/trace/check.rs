//! `grappe trace check`.

use anyhow::Result;
use clap::Args;
use grappe_analysis::CausalStream;

use super::common::{EstimationArgs, TraceInput, events_to_read, open, print_json, progress};

/// Checks a trace: tachyons (receives dated before their send on global time),
/// unmatched sends and receives, sizes, per-rank order, cut files. Exit status 1 if
/// anything is wrong. Warns of each rank whose predicted dating error (see `trace
/// clock`) exceeds the smallest message latency of the run.
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
    warn_of_dating_errors(&time, report.min_gap_ns);
    Ok(if report.problems().is_empty() { 0 } else { 1 })
}

/// Warns of each rank whose predicted dating error where its clock is
/// extrapolated beyond its samples (SB, the clock report's trust) exceeds
/// the smallest message latency the run shows (receive end minus send
/// start, on global time): such a rank's messages may be dated in the
/// wrong order, found as tachyons or not. Between the samples (SBA) the
/// error is the sampling's own, which `trace clock` reports.
fn warn_of_dating_errors(time: &grappe_analysis::GlobalTime, min_gap_ns: Option<i64>) {
    let (Some(clock), Some(gap)) = (&time.report, min_gap_ns) else { return };
    let extrapolated =
        clock.peers.iter().zip(&clock.trust).filter(|(p, t)| !p.fit.dating.within_samples(t.worst_at_ns));
    for (_, trust) in extrapolated.filter(|(_, t)| t.worst_ns > gap as f64) {
        let smallest = match gap {
            1.. => format!("{:.3} us", gap as f64 / 1e3),
            _ => "(none: a receive is dated before its send)".to_owned(),
        };
        eprintln!(
            "grappe trace check: warning: {}: predicted dating error {:.1} us ({:.3} s into the run) exceeds the \
             smallest message latency of the run {smallest}: its messages may be dated out of order",
            trust.label,
            trust.worst_ns / 1e3,
            trust.worst_after_start_s()
        );
    }
}
