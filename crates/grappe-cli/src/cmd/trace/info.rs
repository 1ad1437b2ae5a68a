//! `grappe trace info`.

use anyhow::Result;
use clap::Args;
use grappe_analysis::TraceSet;

use super::common::{TraceInput, events_to_read, print_json, progress};

/// Ranks, events, duration, drops, clock source and truncation of a trace: a
/// summary, each file's and rank's details with --ranks.
#[derive(Debug, Args)]
pub struct InfoArgs {
    #[command(flatten)]
    input: TraceInput,
    /// Each file's and rank's details: host, process and thread, clock, buffer,
    /// drops, α per event kind before and after the run, events per kind.
    #[arg(long)]
    ranks: bool,
    /// Print JSON instead of text (everything --ranks gives, and more).
    #[arg(long)]
    json: bool,
}

pub fn execute(args: InfoArgs) -> Result<i32> {
    let set = TraceSet::open(&args.input.trace)?;
    let bar = progress("reading", || events_to_read(&set, 1));
    let info = grappe_analysis::info(&set, &mut |n| bar.set_position(n))?;
    bar.finish_and_clear();
    if args.json {
        print_json(&info)?;
    } else if args.ranks {
        say!("{info}");
    } else {
        say!("{}", info.summary());
        sayln!(
            "each file's and rank's details (hosts, threads, buffers, α per event kind): grappe trace info --ranks {}",
            args.input.trace.display()
        );
    }
    Ok(0)
}
