//! `grappe trace correct`.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use grappe_resim::{CostModel, Mode, Options};
use serde_json::json;

use super::common::{EstimationArgs, TraceInput};
use super::resim::{EagerArgs, resimulate, seconds, write_json};

/// Compensates the tracer's own cost (the probe effect): re-dates every event as the run
/// would have without recording (the α each event records is taken out, rank by rank, and the
/// ranks' waits for each other are recomputed with the rendezvous and asynchronous-send
/// models), and writes the corrected trace in the same format (a merged trace file).
#[derive(Debug, Args)]
pub struct CorrectArgs {
    #[command(flatten)]
    input: TraceInput,
    #[command(flatten)]
    estimation: EstimationArgs,
    /// The corrected trace to write (a merged trace file).
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
    /// Receive model: minsim (the transit model only where Propositions 1-2 cannot decide),
    /// fullsim (every transit modelled) or sarukkai-malony.
    #[arg(long, value_name = "NAME", default_value = "minsim")]
    model: Mode,
    /// Also write the summary as JSON to this file.
    #[arg(long, value_name = "SUMMARY")]
    json: Option<PathBuf>,
    #[command(flatten)]
    eager: EagerArgs,
}

pub fn execute(args: CorrectArgs) -> Result<i32> {
    let options = Options { model: CostModel::Correct(args.model), eager: args.eager.limits() };
    let outcome = resimulate(&args.input.trace, &args.estimation, &args.output, &options, None)?;
    let s = &outcome.summary;
    say!("{s}");
    sayln!("traced run time: {} s", seconds(s.traced_run_time_s));
    sayln!("corrected run time: {} s", seconds(s.new_run_time_s));
    if let Some(path) = &args.json {
        let value = json!({
            "traced_run_time_s": s.traced_run_time_s,
            "corrected_run_time_s": s.new_run_time_s,
            "events": s.events,
            "events_corrected": s.events_corrected,
            "model": args.model.name(),
            "model_evaluations": s.cases,
            "communication_model_uses": s.communication_model_uses,
            "sarukkai_malony_model_uses": s.sarukkai_malony_model_uses,
            "receives": s.receives(),
            "arrived_measured": s.arrived_measured,
            "arrived_after": s.arrived_after,
            "wildcard_orders_imposed": s.wildcard_orders_imposed,
            "causality_violations_after": s.causality_violations_after,
            "fits": s.fits,
            // Per rank: traced_s, corrected_s, and the α its events
            // recorded in that span (what a full correction takes out).
            "ranks": s.ranks.iter().map(|r| json!({
                "rank": r.rank,
                "traced_s": r.traced_s,
                "corrected_s": r.new_s,
                "alpha_s": r.alpha_s,
            })).collect::<Vec<_>>(),
        });
        write_json(path, &value)?;
    }
    Ok(0)
}
