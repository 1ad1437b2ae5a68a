//! Writes a synthetic job's per-rank traces (see
//! `grappe_testkit::synthetic`): traces of any size in seconds, for
//! benchmarks of the trace tools.
//!
//!     cargo run --release -p grappe-testkit --features traces --example synth_trace -- DIR RANKS ITERATIONS [distorted]
//!
//! `distorted` gives the ranks clocks off by up to 3 ms and 80 ppm on
//! distinct hosts, so the tools estimate global time. `SYNTH_BLOCK_EVENTS`
//! sets the events per block (default the runtime's, `RECORDER_BLOCK_EVENTS`;
//! a runtime's buffer holds 65 536).

use grappe_testkit::synthetic::{SyntheticJob, write_job};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(dir), Some(ranks), Some(iterations)) = (args.first(), args.get(1), args.get(2)) else {
        eprintln!("usage: synth_trace DIR RANKS ITERATIONS [distorted]");
        std::process::exit(2);
    };
    let ranks: u32 = ranks.parse().expect("RANKS: a number");
    let iterations = iterations.parse().expect("ITERATIONS: a number");
    let job = if args.get(3).is_some_and(|a| a == "distorted") {
        SyntheticJob::distorted(ranks, iterations)
    } else {
        SyntheticJob::new(ranks, iterations)
    };
    let job = match std::env::var("SYNTH_BLOCK_EVENTS") {
        Ok(n) => SyntheticJob { block_events: n.parse().expect("SYNTH_BLOCK_EVENTS: a number"), ..job },
        Err(_) => job,
    };
    write_job(std::path::Path::new(dir), &job).unwrap_or_else(|e| {
        eprintln!("synth_trace: {e}");
        std::process::exit(1);
    });
    println!("synth_trace dir={dir} ranks={ranks} events={} messages={}", job.events(), job.messages());
}
