//! `grappe run --report-time`: the job's run time, its slowest rank's from
//! the end of its start-up to the start of its finalize, printed as
//! `run time: X s`. Checked against bounds that hold on any machine: at
//! least the time the program measures itself inside that span, at most
//! the launcher's whole wall time.

mod util;

use std::process::Command;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(120);

/// (the reported run time, jacobi's own `seconds=`, the launcher's wall time).
fn jacobi(extra: &[&str]) -> (Option<f64>, f64, f64) {
    let mut cmd = Command::new(util::grappe());
    cmd.args(["run", "--report-time"]).args(extra).arg(util::example("jacobi")).args(["64", "3000"]);
    let started = Instant::now();
    let output = util::run_bounded(cmd, LIMIT);
    let wall = started.elapsed().as_secs_f64();
    assert!(output.status.success(), "{}", util::describe(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let own: f64 = stdout.split("seconds=").nth(1).and_then(|s| s.trim().parse().ok()).expect("jacobi's seconds");
    let reported = stderr.lines().find_map(|l| l.strip_prefix("run time: ")?.strip_suffix(" s")?.parse().ok());
    (reported, own, wall)
}

#[test]
fn the_run_time_lies_between_the_program_s_own_measure_and_the_launcher_s_wall_time() {
    for layout in [&["-n", "4"][..], &["-n", "4", "--threads"], &["-n", "4", "--threads-per-process", "2"]] {
        let (reported, own, wall) = jacobi(layout);
        let reported = reported.unwrap_or_else(|| panic!("{layout:?}: no run time line"));
        // jacobi prints its seconds rounded to the millisecond.
        assert!(reported + 0.0005 >= own, "{layout:?}: run time {reported} s < the program's own {own} s");
        assert!(reported <= wall, "{layout:?}: run time {reported} s > the launcher's wall time {wall} s");
    }
}

#[test]
fn a_traced_run_reports_its_run_time_too() {
    let dir = grappe_testkit::scratch("run-time-traced");
    let dir_arg = dir.to_str().unwrap().to_owned();
    let (reported, own, wall) = jacobi(&["-n", "2", "--trace", &dir_arg]);
    let reported = reported.expect("a run time line");
    assert!(reported + 0.0005 >= own && reported <= wall, "{reported} s, own {own} s, wall {wall} s");
}

#[test]
fn a_failed_job_reports_no_run_time() {
    let mut cmd = Command::new(util::grappe());
    cmd.args(["run", "--report-time", "-n", "2"]).arg(util::example("faulty")).env("GRAPPE_FAULT", "exit:1:3");
    let output = util::run_bounded(cmd, LIMIT);
    assert!(!output.status.success());
    assert!(!String::from_utf8_lossy(&output.stderr).contains("run time:"), "{}", util::describe(&output));
}
