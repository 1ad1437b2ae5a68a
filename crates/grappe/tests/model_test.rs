//! `grappe trace model-test` on a real trace: the ping-pong example's
//! receives wait for their messages, so each measures a transit; every
//! size with 30 of them is tested, and a model far from the machine's is
//! rejected whatever the machine's speed.

mod util;

use std::process::{Command, Output};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

fn model_test(args: &[&std::ffi::OsStr]) -> Output {
    let mut cmd = Command::new(util::grappe());
    cmd.args(["trace", "model-test"]).args(args);
    util::run_bounded(cmd, LIMIT)
}

#[test]
fn a_ping_pong_trace_tests_every_size_and_rejects_a_model_a_thousand_times_too_slow() {
    let dir = grappe_testkit::scratch("model-test");
    let mut run = Command::new(util::grappe());
    run.args(["run", "-n", "2", "--trace"]).arg(&*dir).arg(util::example("pingpong"));
    run.env("PINGPONG_SIZES", "8,4096").env("PINGPONG_ITERS", "60");
    let output = util::run_bounded(run, LIMIT);
    assert!(output.status.success(), "{}", util::describe(&output));

    // A model of 1 s per message: every measured transit is far below it.
    let slow =
        model_test(&[dir.as_os_str(), "--beta".as_ref(), "1s".as_ref(), "--bandwidth".as_ref(), "1MB/s".as_ref()]);
    assert_eq!(slow.status.code(), Some(1), "a rejected route exits 1: {}", util::describe(&slow));
    let text = String::from_utf8_lossy(&slow.stdout);
    assert!(text.contains("route: shared memory (same host)"), "{text}");
    for size in ["8", "4096"] {
        let line = text.lines().find(|l| l.split_whitespace().next() == Some(size)).unwrap_or_else(|| panic!("{text}"));
        assert!(line.ends_with("REJECT"), "size {size}: {line}");
        let n: usize = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        assert!(n >= 30, "size {size}: {n} transits from 66 round trips");
    }

    // Fitted on the trace itself, in JSON: one route, both sizes, each
    // tested with the two-sided 5% critical value of its n − 1.
    let fitted = model_test(&[dir.as_os_str(), "--json".as_ref()]);
    assert!(fitted.status.code().is_some_and(|c| c <= 1), "{}", util::describe(&fitted));
    let report: serde_json::Value = serde_json::from_slice(&fitted.stdout).expect("JSON");
    let routes = report["routes"].as_array().unwrap();
    assert_eq!(routes.len(), 1);
    assert_eq!(routes[0]["route"], "shared-memory");
    let sizes = routes[0]["sizes"].as_array().unwrap();
    assert_eq!(sizes.iter().map(|s| s["bytes"].as_u64().unwrap()).collect::<Vec<_>>(), [8, 4096]);
    for size in sizes {
        let critical = size["critical"].as_f64().unwrap();
        assert!(critical > 1.96 && critical < 2.05, "t(0.975, n-1) for n = {}: {critical}", size["n"]);
        assert!(size["verdict"] == "accept" || size["verdict"] == "reject", "{size}");
    }
}

#[test]
fn a_trace_without_waiting_receives_is_refused_with_the_reason() {
    let dir = grappe_testkit::scratch("model-test-none");
    let mut run = Command::new(util::grappe());
    run.args(["run", "-n", "1", "--trace"]).arg(&*dir).arg(util::example("ring")).args(["10", "10"]);
    let output = util::run_bounded(run, LIMIT);
    assert!(output.status.success(), "{}", util::describe(&output));
    let refused = model_test(&[dir.as_os_str()]);
    assert_eq!(refused.status.code(), Some(2), "{}", util::describe(&refused));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("no receive waited for its message"));
}
