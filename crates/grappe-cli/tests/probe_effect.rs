//! `grappe trace correct` and `grappe trace predict` on real runs of the
//! examples, with and without `GRAPPE_TRACE_EXTRA_COST_NS`. Every bound
//! holds whatever the machine's speed and load: the injected cost is
//! known, and the untraced run is measured in the same test.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;

const GRAPPE: &str = env!("CARGO_BIN_EXE_grappe");
const LIMIT: Duration = Duration::from_secs(300);
const ITERATIONS: &str = "600";

fn ok(output: Output) -> Output {
    assert!(output.status.success(), "{}", grappe_testkit::describe(&output));
    output
}

/// `grappe run --report-time -n 2 jacobi 64 ITERATIONS`, traced into
/// `trace` if given, with `extra_ns` of recording cost per event; its run time.
fn jacobi(trace: Option<&Path>, extra_ns: u32) -> f64 {
    let mut cmd = Command::new(GRAPPE);
    cmd.args(["run", "--report-time", "-n", "2"]);
    if let Some(dir) = trace {
        cmd.arg("--trace").arg(dir);
    }
    cmd.arg(grappe_testkit::example("jacobi")).args(["64", ITERATIONS]);
    cmd.env("GRAPPE_TRACE_EXTRA_COST_NS", extra_ns.to_string());
    let output = ok(grappe_testkit::run_bounded(cmd, LIMIT));
    let stderr = String::from_utf8_lossy(&output.stderr);
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("run time: ")?.strip_suffix(" s")?.parse().ok())
        .unwrap_or_else(|| panic!("no run time line: {stderr}"))
}

/// `grappe trace TOOL ARGS... --json SUMMARY`: its stdout and the summary.
fn resim(tool: &str, args: &[&str], summary: &Path) -> (String, Value) {
    let mut cmd = Command::new(GRAPPE);
    cmd.args(["trace", tool]).args(args).arg("--json").arg(summary);
    let output = ok(grappe_testkit::run_bounded(cmd, LIMIT));
    let json = serde_json::from_str(&std::fs::read_to_string(summary).unwrap()).unwrap();
    (String::from_utf8_lossy(&output.stdout).into_owned(), json)
}

fn seconds(json: &Value, key: &str) -> f64 {
    json[key].as_f64().unwrap_or_else(|| panic!("no {key} in {json}"))
}

/// With 100 µs of recording cost per event, the corrected run time takes
/// out at least half of that cost times the events of a rank, lands closer to the untraced
/// run than the traced one, and the corrected trace is causal (checked by
/// `grappe trace check` on it).
#[test]
fn correction_moves_jacobi_s_run_time_toward_the_untraced_run() {
    let dir = grappe_testkit::scratch("probe-effect-jacobi");
    let mut untraced: Vec<f64> = (0..3).map(|_| jacobi(None, 0)).collect();
    untraced.sort_by(f64::total_cmp);
    let untraced = untraced[1];
    for extra in [0u32, 100_000] {
        let trace = dir.join(format!("trace-{extra}"));
        let traced = jacobi(Some(&trace), extra);
        let out = dir.join(format!("corrected-{extra}.gtrace"));
        let summary = dir.join(format!("corrected-{extra}.json"));
        let (text, json) = resim("correct", &[trace.to_str().unwrap(), "-o", out.to_str().unwrap()], &summary);
        assert!(text.contains("traced run time: ") && text.contains("corrected run time: "), "{text}");
        let (t, c) = (seconds(&json, "traced_run_time_s"), seconds(&json, "corrected_run_time_s"));
        // The runtime times the same span with its own clock reads, a few
        // instructions away from the trace's (a preemption in between on a
        // busy host is all that separates them).
        assert!((t - traced).abs() <= 0.02 + 0.05 * traced, "the trace's run time {t} s is the run's {traced} s");
        assert_eq!(json["causality_violations_after"], 0, "{json}");
        assert!(c <= t, "corrected {c} s > traced {t} s");
        let events_per_rank = json["events"].as_f64().unwrap() / 2.0;
        let injected = events_per_rank * extra as f64 * 1e-9;
        // Rank by rank: the slowest rank's span is the run time, and the
        // α each rank recorded holds the injected cost, timed in place.
        let ranks = json["ranks"].as_array().unwrap_or_else(|| panic!("no ranks in {json}"));
        assert_eq!(ranks.len(), 2, "{json}");
        let slowest = ranks.iter().map(|r| seconds(r, "corrected_s")).fold(f64::MIN, f64::max);
        assert!((slowest - c).abs() < 1e-9, "slowest rank {slowest} s, corrected run time {c} s");
        for rank in ranks {
            assert!(seconds(rank, "alpha_s") >= 0.9 * injected, "{rank}: less α than the {injected} s injected");
        }
        if extra > 0 {
            assert!(t - c >= 0.5 * injected, "corrected {c} s, traced {t} s: less than half the {injected} s injected");
            assert!((c - untraced).abs() < (t - untraced).abs(), "corrected {c}, traced {t}, untraced {untraced}");
        }
        let check = Command::new(GRAPPE).args(["trace", "check"]).arg(&out).output().unwrap();
        assert!(check.status.success(), "the corrected trace: {}", grappe_testkit::describe(&check));
        // Correcting the corrected trace changes nothing: its α is 0.
        let again = dir.join(format!("again-{extra}.gtrace"));
        let (_, twice) = resim("correct", &[out.to_str().unwrap(), "-o", again.to_str().unwrap()], &summary);
        assert_eq!(twice["events_corrected"], 0, "{twice}");
        assert_eq!(seconds(&twice, "corrected_run_time_s"), c);
    }
}

/// Prediction on the corrected trace: with no message between hosts and
/// no model within the host it predicts the corrected run itself; with 1 ms
/// per message within the host, or between the ranks counted as two
/// emulated hosts, every iteration's halo exchange takes 1 ms at least.
#[test]
fn prediction_under_a_slower_network_adds_its_latency_to_every_exchange() {
    let dir = grappe_testkit::scratch("probe-effect-predict");
    let trace = dir.join("trace");
    jacobi(Some(&trace), 0);
    let corrected = dir.join("corrected.gtrace");
    let summary = dir.join("summary.json");
    let (_, json) = resim("correct", &[trace.to_str().unwrap(), "-o", corrected.to_str().unwrap()], &summary);
    let c = seconds(&json, "corrected_run_time_s");
    let predicted = dir.join("predicted.gtrace");
    let args =
        [corrected.to_str().unwrap(), "-o", predicted.to_str().unwrap(), "--latency", "1ms", "--bandwidth", "1GB/s"];
    let (text, json) = resim("predict", &args, &summary);
    assert!(text.contains("predicted run time: "), "{text}");
    assert_eq!(seconds(&json, "traced_run_time_s"), c);
    assert_eq!(seconds(&json, "predicted_run_time_s"), c, "nothing between hosts: the corrected run");
    let slow = [&args[..], &["--copy-latency", "1ms", "--copy-bandwidth", "1GB/s"]].concat();
    let (_, json) = resim("predict", &slow, &summary);
    let p = seconds(&json, "predicted_run_time_s");
    let iterations: f64 = ITERATIONS.parse().unwrap();
    assert!(p >= iterations * 1e-3, "predicted {p} s for {iterations} exchanges of 1 ms at least");
    let check = Command::new(GRAPPE).args(["trace", "check"]).arg(&predicted).output().unwrap();
    assert!(check.status.success(), "the predicted trace: {}", grappe_testkit::describe(&check));
    // The two ranks as two emulated hosts: the network model applies.
    let split = [&args[..], &["--emulated-hosts", "2"]].concat();
    let (text, json) = resim("predict", &split, &summary);
    let p = seconds(&json, "predicted_run_time_s");
    assert!(p >= iterations * 1e-3, "predicted {p} s for {iterations} exchanges between hosts of 1 ms at least");
    assert!(text.contains("predict_network: "), "{text}");
}

/// pingpong's large messages go by rendezvous: the rendezvous model
/// corrects them, and the corrected trace is causal.
#[test]
fn pingpong_s_rendezvous_are_corrected() {
    let dir = grappe_testkit::scratch("probe-effect-pingpong");
    let trace = dir.join("trace");
    let mut cmd = Command::new(GRAPPE);
    cmd.args(["run", "-n", "2", "--trace"]).arg(&trace).arg(grappe_testkit::example("pingpong"));
    cmd.env("PINGPONG_SIZES", "8,65536").env("PINGPONG_ITERS", "200").env("GRAPPE_TRACE_EXTRA_COST_NS", "5000");
    ok(grappe_testkit::run_bounded(cmd, LIMIT));
    let out = dir.join("corrected.gtrace");
    let summary = dir.join("summary.json");
    let (_, json) = resim("correct", &[trace.to_str().unwrap(), "-o", out.to_str().unwrap()], &summary);
    assert!(json["model_evaluations"]["rendezvous"].as_u64().unwrap() >= 2 * 200, "{json}");
    assert_eq!(json["causality_violations_after"], 0, "{json}");
    assert!(seconds(&json, "corrected_run_time_s") < seconds(&json, "traced_run_time_s"), "{json}");
    let check = Command::new(GRAPPE).args(["trace", "check"]).arg(&out).output().unwrap();
    assert!(check.status.success(), "{}", grappe_testkit::describe(&check));
}

/// The summaries carry the keys the fidelity tables are made from, with
/// values of the right kinds; a merged trace is corrected as its per-rank
/// files are; an output that is a directory is refused before anything is
/// read, naming it.
#[test]
fn the_json_summaries_have_their_keys_and_a_directory_is_no_output() {
    use grappe_testkit::synthetic::{SyntheticJob, write_job};
    let dir = grappe_testkit::scratch("probe-effect-json");
    let traces = dir.join("traces");
    write_job(&traces, &SyntheticJob::new(3, 20)).unwrap();
    let out = dir.join("corrected.gtrace");
    let summary = dir.join("summary.json");
    let (_, json) = resim("correct", &[traces.to_str().unwrap(), "-o", out.to_str().unwrap()], &summary);
    for key in ["traced_run_time_s", "corrected_run_time_s"] {
        assert!(json[key].is_f64(), "{key}: {json}");
    }
    for key in ["events", "events_corrected", "wildcard_orders_imposed", "causality_violations_after"] {
        assert!(json[key].is_u64(), "{key}: {json}");
    }
    assert!(json["model_evaluations"].as_object().is_some_and(|cases| cases.values().all(Value::is_u64)), "{json}");
    assert_eq!(json["events"].as_u64(), Some(SyntheticJob::new(3, 20).events()));
    for model in ["fullsim", "sarukkai-malony"] {
        let (_, json) =
            resim("correct", &[traces.to_str().unwrap(), "-o", out.to_str().unwrap(), "--model", model], &summary);
        assert_eq!(json["model"], model);
    }
    let predicted = dir.join("predicted.gtrace");
    let args =
        [out.to_str().unwrap(), "-o", predicted.to_str().unwrap(), "--latency", "50us", "--bandwidth", "800Mbit/s"];
    let (_, json) = resim("predict", &args, &summary);
    assert!(json["predicted_run_time_s"].is_f64() && json["traced_run_time_s"].is_f64(), "{json}");

    // A merged trace of the same run is corrected alike: the merge keeps
    // every event's α.
    let merged = dir.join("merged.gtrace");
    ok(Command::new(GRAPPE).args(["trace", "merge"]).arg(&traces).arg("-o").arg(&merged).output().unwrap());
    let from_merged = dir.join("from-merged.gtrace");
    let (_, direct) = resim("correct", &[traces.to_str().unwrap(), "-o", out.to_str().unwrap()], &summary);
    let (_, chained) = resim("correct", &[merged.to_str().unwrap(), "-o", from_merged.to_str().unwrap()], &summary);
    for key in ["corrected_run_time_s", "events_corrected", "model_evaluations"] {
        assert_eq!(direct[key], chained[key], "{key}");
    }

    let refused = Command::new(GRAPPE).args(["trace", "correct"]).arg(&traces).arg("-o").arg(&dir).output().unwrap();
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{said}");
    assert!(said.contains(dir.to_str().unwrap()) && said.contains("is a directory"), "{said}");
    let bad_rate = [&args[..3], &["--latency", "50us", "--bandwidth", "fast"]].concat();
    let refused = Command::new(GRAPPE).args(["trace", "predict"]).args(&bad_rate).output().unwrap();
    assert!(String::from_utf8_lossy(&refused.stderr).contains("expected a rate"), "{refused:?}");
}
