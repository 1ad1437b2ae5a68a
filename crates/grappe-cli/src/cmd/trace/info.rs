//! `grappe trace info`.

use anyhow::Result;
use clap::Args;
use grappe_analysis::TraceSet;

use super::common::{TraceInput, events_to_read, print_json, progress};

/// Ranks, events, duration, drops, clock source and truncation of a trace.
#[derive(Debug, Args)]
pub struct InfoArgs {
    #[command(flatten)]
    input: TraceInput,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub fn execute(args: InfoArgs) -> Result<i32> {
    let set = TraceSet::open(&args.input.trace)?;
    let bar = progress("reading", events_to_read(&set, 1));
    let info = grappe_analysis::info(&set, &mut |n| bar.set_position(n))?;
    bar.finish_and_clear();
    if args.json {
        print_json(&info)?;
    } else {
        say!("{info}");
    }
    Ok(0)
}
