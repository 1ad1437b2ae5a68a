//! `grappe trace merge`.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use super::common::{
    EstimationArgs, TraceInput, check_output, events_to_read, open, progress, refuse_to_overwrite_input,
};

/// Merges per-rank traces into one trace on global time, in causal order (every
/// send before its receive), in the same format: every tool reads it.
#[derive(Debug, Args)]
pub struct MergeArgs {
    #[command(flatten)]
    input: TraceInput,
    #[command(flatten)]
    estimation: EstimationArgs,
    /// The merged trace to write.
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
}

pub fn execute(args: MergeArgs) -> Result<i32> {
    check_output(&args.output)?;
    let (set, time) = open(&args.input.trace, &args.estimation)?;
    refuse_to_overwrite_input(&set, &args.output)?;
    let bar = progress("merging", || events_to_read(&set, 1));
    let outcome = grappe_analysis::merge_to_file(&set, &time, &args.output, &mut |n| bar.set_position(n))?;
    bar.finish_and_clear();
    let s = &outcome.summary;
    sayln!(
        "{}: {} events of {} ranks, {} messages matched, {} receives unmatched, {} sends never received, {} receives deferred behind their send",
        args.output.display(),
        outcome.events,
        s.flows.len(),
        s.matched,
        s.unmatched_receives,
        s.unreceived_sends,
        s.deferred
    );
    if s.repairs.receives > 0 {
        sayln!("  ({})", s.repairs);
    }
    for input in &outcome.incomplete {
        sayln!("  (made from {}; the merged file's footer says so)", grappe_analysis::stream::IncompleteText(input));
    }
    let untraced = set.missing_ranks();
    if !untraced.is_empty() {
        sayln!(
            "  (ranks {} have no trace: the receives from them and the sends to them are among the unmatched)",
            grappe_analysis::set::list_ranks(&untraced)
        );
    }
    Ok(0)
}
