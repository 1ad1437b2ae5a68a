//! The deterministic kernels of the fidelity measurements (ring, jacobi,
//! cg, master_worker, fft): each prints a checksum that does not depend on
//! the schedule, so it must come out the same on 1, 2 and 4 ranks, as
//! threads or processes, traced or not.

mod util;

use std::process::Command;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

/// Small problems: a CI run is about correctness, not time.
const KERNELS: [(&str, &[&str]); 5] = [
    ("ring", &["300", "100"]),
    ("jacobi", &["32", "200"]),
    ("cg", &["32", "30"]),
    ("master_worker", &["60", "200"]),
    ("fft", &["32", "3"]),
];

/// The `checksum=` field of the kernel's output under `grappe run ARGS`.
fn checksum(kernel: &str, args: &[&str], launch: &[&str]) -> String {
    let mut cmd = Command::new(util::grappe());
    cmd.arg("run").args(launch).arg(util::example(kernel)).args(args);
    let output = util::run_bounded(cmd, LIMIT);
    assert!(output.status.success(), "{kernel} {launch:?}: {}", util::describe(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let field = stdout.split_whitespace().find_map(|w| w.strip_prefix("checksum="));
    field.unwrap_or_else(|| panic!("{kernel} {launch:?} printed no checksum: {stdout}")).to_owned()
}

#[test]
fn every_kernel_s_checksum_is_the_same_on_1_2_and_4_ranks_threads_or_processes() {
    for (kernel, args) in KERNELS {
        let one = checksum(kernel, args, &["-n", "1"]);
        for launch in [&["-n", "2"][..], &["-n", "4"], &["-n", "4", "--threads"]] {
            assert_eq!(checksum(kernel, args, launch), one, "{kernel} {launch:?} against 1 rank");
        }
    }
}

#[test]
fn every_kernel_s_checksum_is_the_same_traced_and_with_injected_tracing_cost() {
    for (kernel, args) in KERNELS {
        let untraced = checksum(kernel, args, &["-n", "4"]);
        let dir = grappe_testkit::scratch(&format!("kernel-{kernel}"));
        let traced = checksum(kernel, args, &["-n", "4", "--trace", dir.to_str().unwrap()]);
        assert_eq!(traced, untraced, "{kernel} traced");
        // The launcher passes the variable on to the ranks.
        let mut cmd = Command::new(util::grappe());
        let costly = grappe_testkit::scratch(&format!("kernel-{kernel}-costly"));
        cmd.env("GRAPPE_TRACE_EXTRA_COST_NS", "2000").args(["run", "-n", "4", "--trace"]).arg(&*costly);
        cmd.arg(util::example(kernel)).args(args);
        let output = util::run_bounded(cmd, LIMIT);
        assert!(output.status.success(), "{kernel} with extra cost: {}", util::describe(&output));
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(stdout.contains(&format!("checksum={untraced}")), "{kernel} with extra cost: {stdout}");
    }
}

#[test]
fn master_worker_hands_out_tasks_to_several_workers() {
    let mut cmd = Command::new(util::grappe());
    cmd.args(["run", "-n", "3"]).arg(util::example("master_worker")).args(["40", "100"]);
    let output = util::run_bounded(cmd, LIMIT);
    assert!(output.status.success(), "{}", util::describe(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let shares: Vec<u64> = stdout
        .split_whitespace()
        .find_map(|w| w.strip_prefix("tasks_per_worker="))
        .expect("tasks_per_worker")
        .split(',')
        .map(|s| s.parse().unwrap())
        .collect();
    assert_eq!(shares.len(), 3);
    assert_eq!(shares[0], 0, "the master does no task when it has workers");
    assert_eq!(shares.iter().sum::<u64>(), 40, "every task handed out once: {stdout}");
}
