//! `grappe trace model-test`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Args;
use grappe_analysis::model_test::{self, LinearModel, Route, RouteTest, Transit, Verdict};
use grappe_analysis::{CausalStream, TraceSet};
use serde::Serialize;

use super::common::{EstimationArgs, TraceInput, open, print_json};
use super::report::parse_size;
use crate::cmd::time::parse_seconds;

/// Tests the communication-time model β + L·τ against the transits of a trace's
/// messages (receives that waited for their message, from send start to receive end,
/// global time), per route (same host / different hosts) and per message size, with
/// Student's t-test on sizes with at least 30 observations: ACCEPT or REJECT.
///
/// The model is given (--beta and --bandwidth), fitted on another trace (--fit, a
/// ping-pong's), or else fitted on the tested trace itself. Exit status 1 when a
/// route is rejected.
#[derive(Debug, Args)]
pub struct ModelTestArgs {
    #[command(flatten)]
    input: TraceInput,
    /// Fit β and τ per route on the transits of this trace (e.g. the `pingpong`
    /// example's) instead of the tested one.
    #[arg(long, value_name = "TRACE", conflicts_with_all = ["beta", "bandwidth"])]
    fit: Option<PathBuf>,
    /// β, the transit of an empty message: 2us, 40us, 1ms (with --bandwidth).
    #[arg(long, value_parser = parse_seconds, requires = "bandwidth")]
    beta: Option<f64>,
    /// 1/τ, as bytes per second: 5GB/s, 100MB/s (with --beta).
    #[arg(long, value_parser = parse_bandwidth, requires = "beta")]
    bandwidth: Option<f64>,
    /// Significance level of the two-sided test.
    #[arg(long, default_value_t = 0.05)]
    alpha: f64,
    #[command(flatten)]
    estimation: EstimationArgs,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// Bytes per second from `100MB/s`, `5GB/s`, `1GiB/s`.
fn parse_bandwidth(text: &str) -> Result<f64, String> {
    let Some(size) = text.trim().strip_suffix("/s") else {
        return Err(format!("{text:?}: expected a bandwidth like 100MB/s or 5GB/s"));
    };
    parse_size(size).map(|bytes| bytes as f64)
}

/// What `--json` prints.
#[derive(Serialize)]
struct Report {
    trace: PathBuf,
    model_from: String,
    alpha: f64,
    transits: usize,
    routes: Vec<RouteTest>,
}

pub fn execute(args: ModelTestArgs) -> Result<i32> {
    let tested = transits_of(&args.input.trace, &args.estimation)?;
    if tested.is_empty() {
        bail!(
            "{}: no receive waited for its message, so the trace measures no transit time \
             (a run whose receives are posted before their messages arrive is needed: the pingpong example's, say)",
            args.input.trace.display()
        );
    }
    let (calibration, model_from) = match (&args.fit, args.beta, args.bandwidth) {
        (Some(fit), _, _) => (Some(transits_of(fit, &args.estimation)?), format!("fitted on {}", fit.display())),
        (None, Some(_), Some(_)) => (None, "given".to_owned()),
        _ => (Some(tested.clone()), "fitted on the tested trace itself".to_owned()),
    };
    let mut routes = Vec::new();
    for route in [Route::SharedMemory, Route::Network] {
        if !tested.iter().any(|t| t.route == route) {
            continue;
        }
        let model = match (&calibration, args.beta, args.bandwidth) {
            (Some(calibration), _, _) => fitted(calibration, route, &model_from)?,
            (None, Some(beta_s), Some(bandwidth)) => LinearModel { beta_s, tau_s_per_byte: 1.0 / bandwidth },
            _ => unreachable!("clap requires --beta and --bandwidth together"),
        };
        routes.push(model_test::test_route(route, model, &tested, args.alpha)?);
    }
    let rejected = routes.iter().any(|r| r.verdict() == Some(Verdict::Reject));
    let report =
        Report { trace: args.input.trace.clone(), model_from, alpha: args.alpha, transits: tested.len(), routes };
    if args.json {
        print_json(&report)?;
    } else {
        print_text(&report);
    }
    Ok(i32::from(rejected))
}

/// The model of `route` fitted on `calibration`.
fn fitted(calibration: &[Transit], route: Route, from: &str) -> Result<LinearModel> {
    let points = calibration.iter().filter(|t| t.route == route).map(|t| (t.bytes, t.seconds));
    LinearModel::fit(points).with_context(|| format!("no transit of route {route} to fit the model on ({from})"))
}

fn transits_of(trace: &Path, estimation: &EstimationArgs) -> Result<Vec<Transit>> {
    let (set, time) = open(trace, estimation)?;
    let hosts = hosts_of(&set);
    let stream = CausalStream::open(&set, &time)?;
    Ok(model_test::transits(stream, |rank| hosts.get(rank as usize).cloned().flatten())?)
}

/// Each world rank's host, as its process's record says.
fn hosts_of(set: &TraceSet) -> Vec<Option<String>> {
    let mut hosts = vec![None; set.world_size() as usize];
    for process in set.processes() {
        for rank in process.ranks {
            if let Some(slot) = hosts.get_mut(rank as usize) {
                *slot = Some(process.host.clone());
            }
        }
    }
    hosts
}

fn print_text(report: &Report) {
    sayln!("communication model test: {} ({} transits measured)", report.trace.display(), report.transits);
    sayln!("model {}; Student's t-test per size, two-sided, alpha = {}", report.model_from, report.alpha);
    if report.model_from.ends_with("itself") {
        sayln!(
            "note: a model fitted on the data it is tested on passes where the data are linear in the size; \
             --fit PINGPONG_TRACE or --beta/--bandwidth test it against an independent model"
        );
    }
    for route in &report.routes {
        say!("{route}");
    }
}
