//! One program, every execution mode: the point-to-point suite and the
//! Jacobi example under `grappe run` as threads, processes and hybrids,
//! and the suite in-process on thread ranks.

mod util;

use std::process::Command;
use std::time::Duration;

#[path = "../examples/p2p_suite/checks.rs"]
mod checks;

const LIMIT: Duration = Duration::from_secs(120);

fn grappe_run(args: &[&str], program: &str, program_args: &[&str]) -> std::process::Output {
    let mut cmd = Command::new(util::grappe());
    cmd.arg("run").args(args).arg(util::example(program)).args(program_args);
    let output = util::run_bounded(cmd, LIMIT);
    assert!(output.status.success(), "grappe run {args:?} {program}: {}", util::describe(&output));
    output
}

fn suite_passes(args: &[&str], ranks: usize) {
    let output = grappe_run(args, "p2p_suite", &[]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains(&format!("p2p suite passed on {ranks} ranks")), "{}", util::describe(&output));
}

#[test]
fn suite_on_thread_ranks_in_process() {
    for n in [2, 3, 5] {
        let results = grappe::testing::threads(n, checks::run_all);
        for (rank, result) in results.into_iter().enumerate() {
            result.unwrap_or_else(|e| panic!("{n} ranks, rank {rank}: {e}"));
        }
    }
}

#[test]
fn suite_on_four_thread_ranks() {
    suite_passes(&["-n", "4", "--threads"], 4);
}

#[test]
fn suite_on_four_processes() {
    suite_passes(&["-n", "4"], 4);
}

#[test]
fn suite_on_two_processes_of_two_thread_ranks() {
    suite_passes(&["-n", "4", "--threads-per-process", "2"], 4);
}

#[test]
fn suite_on_three_processes_without_single_copy() {
    // Large messages staged through the mailboxes, as when cross-memory
    // attach is refused.
    let mut cmd = Command::new(util::grappe());
    cmd.env("GRAPPE_SINGLE_COPY", "off").args(["run", "-n", "3"]).arg(util::example("p2p_suite"));
    let output = util::run_bounded(cmd, LIMIT);
    assert!(output.status.success(), "{}", util::describe(&output));
}

#[test]
fn jacobi_gives_the_same_checksum_in_every_mode() {
    let runs: [&[&str]; 4] =
        [&["-n", "1"], &["-n", "4", "--threads"], &["-n", "3"], &["-n", "4", "--threads-per-process", "2"]];
    let checksums: Vec<String> = runs
        .iter()
        .map(|args| {
            let output = grappe_run(args, "jacobi", &["64", "400"]);
            let line = String::from_utf8_lossy(&output.stdout)
                .lines()
                .find(|l| l.starts_with("jacobi "))
                .expect("result line")
                .to_owned();
            let field = |key: &str| line.split_whitespace().find_map(|w| w.strip_prefix(key)).expect(key).to_owned();
            assert_eq!(field("iterations="), "400", "{line}");
            field("checksum=")
        })
        .collect();
    assert!(checksums.iter().all(|c| *c == checksums[0]), "checksums differ between modes: {checksums:?}");

    // And with no launcher at all: a singleton of one rank.
    let mut alone = Command::new(util::example("jacobi"));
    alone.args(["64", "400"]).env_remove("PMI_FD").env_remove("GRAPPE_RANKS_PER_PROCESS");
    let output = util::run_bounded(alone, LIMIT);
    assert!(output.status.success(), "{}", util::describe(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("ranks=1 ") && stdout.contains(&format!("checksum={}", checksums[0])), "{stdout}");
}
