//! `grappe trace profile`.

use anyhow::Result;
use clap::Args;
use grappe_analysis::CausalStream;

use super::common::{EstimationArgs, TraceInput, events_to_read, open, print_json, progress};

/// An mpiP-style profile: time per call type and per call site (the enclosing user
/// region), message sizes, per-rank compute/communication/waiting, the communication
/// matrix, user regions.
#[derive(Debug, Args)]
pub struct ProfileArgs {
    #[command(flatten)]
    input: TraceInput,
    #[command(flatten)]
    estimation: EstimationArgs,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub fn execute(args: ProfileArgs) -> Result<i32> {
    let (set, time) = open(&args.input.trace, &args.estimation)?;
    let bar = progress("profiling", || events_to_read(&set, 1));
    let stream = CausalStream::open(&set, &time)?;
    let profile = grappe_analysis::profile::profile(stream, set.world_size(), &mut |n| bar.set_position(n))?;
    bar.finish_and_clear();
    if args.json {
        print_json(&profile)?;
    } else {
        say!("{profile}");
    }
    Ok(0)
}
