//! `grappe run` end to end: the real binary launching pmi-probe processes.
//!
//! The fail-fast tests check the promise to users: when one process dies, `grappe run` exits
//! within 2 s of the death (measured from the time the probe prints just before it dies),
//! prints one line naming the rank, pid and cause, and leaves no process behind.

#[path = "../../grappe-launch/tests/support/mod.rs"]
mod support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use support::{assert_all_gone, describe, ok_count, probe, probe_lines, run_bounded};

const GRAPPE: &str = env!("CARGO_BIN_EXE_grappe");
const LIMIT: Duration = Duration::from_secs(60);

fn grappe_run(args: &[&str]) -> Output {
    let mut command = Command::new(GRAPPE);
    command.arg("run").args(args);
    run_bounded(command, LIMIT)
}

/// `grappe run <launcher args> pmi-probe <probe args>`.
fn run_probe(launcher_args: &[&str], probe_args: &[&str]) -> Output {
    let mut command = Command::new(GRAPPE);
    command.arg("run").args(launcher_args).arg(probe()).args(probe_args);
    run_bounded(command, LIMIT)
}

fn stderr_of(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn four_ranks_run_and_every_line_is_labelled_with_its_rank() {
    let output = run_probe(&["-n", "4", "--label"], &[]);
    assert!(output.status.success(), "{}", describe(&output));
    assert_eq!(ok_count(&output.stdout), 4, "{}", describe(&output));
    let lines = probe_lines(&output.stdout);
    assert_eq!(lines.len(), 4);
    assert!(lines.iter().all(|l| l.size == 4 && l.kind == "pmi1"), "{lines:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    for line in stdout.lines() {
        let rank = line
            .split("pmi-probe: rank ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .unwrap_or_else(|| panic!("unexpected line {line:?}"));
        assert!(line.starts_with(&format!("[{rank}] pmi-probe: ")), "{line:?}");
    }
}

#[test]
fn threads_per_process_starts_two_processes_of_two_ranks() {
    let output = run_probe(&["-n", "4", "--threads-per-process", "2", "--label"], &[]);
    assert!(output.status.success(), "{}", describe(&output));
    let lines = probe_lines(&output.stdout);
    assert_eq!(lines.len(), 2, "{}", describe(&output));
    assert!(lines.iter().all(|l| l.size == 2 && l.ranks_per_process == 2), "{lines:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("[0-1] pmi-probe: rank 0 of 2"), "{stdout}");
    assert!(stdout.contains("[2-3] pmi-probe: rank 1 of 2"), "{stdout}");
}

/// Runs a job in which one process fails as `how`, and checks the exit status, the single
/// `grappe:` line (which must contain `expected` with `{pid}` replaced), the 2 s bound and
/// that no probe survives.
fn check_fail_fast(launcher_args: &[&str], how: &str, status: i32, expected: &str) {
    let output = run_probe(launcher_args, &["--fail", how]);
    let exited_at = unix_millis();
    let stderr = stderr_of(&output);
    assert_eq!(output.status.code(), Some(status), "{}", describe(&output));

    let died_at: u128 = stderr
        .split("unix_ms=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|ms| ms.parse().ok())
        .unwrap_or_else(|| panic!("no death time in:\n{stderr}"));
    let delay = exited_at.saturating_sub(died_at);
    assert!(delay < 2000, "grappe exited {delay} ms after the death\n{stderr}");

    let lines = probe_lines(&output.stdout);
    let failing_rank: usize = how.split(':').next().and_then(|r| r.parse().ok()).unwrap();
    let failing = lines.iter().find(|l| l.rank == failing_rank).expect("failing rank started");
    let expected = expected.replace("{pid}", &failing.pid.to_string());
    let grappe_lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("grappe: ")).collect();
    assert_eq!(grappe_lines.len(), 1, "exactly one line from grappe\n{stderr}");
    assert!(grappe_lines[0].contains(&expected), "{:?} lacks {expected:?}", grappe_lines[0]);
    assert_all_gone(&lines.iter().map(|l| l.pid).collect::<Vec<_>>());
}

fn unix_millis() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("clock after 1970").as_millis()
}

#[test]
fn a_rank_killed_by_sigkill_stops_the_job_within_2s() {
    check_fail_fast(
        &["-n", "4"],
        "1:sigkill",
        137,
        "grappe: rank 1 (pid {pid}) was killed by signal 9 (SIGKILL); stopping the job",
    );
}

#[test]
fn a_rank_exiting_with_3_stops_the_job_and_grappe_exits_3() {
    check_fail_fast(&["-n", "4"], "2:exit3", 3, "grappe: rank 2 (pid {pid}) exited with status 3; stopping the job");
}

#[test]
fn a_rank_exiting_0_without_finalize_is_a_failure() {
    check_fail_fast(
        &["-n", "3"],
        "0:exit0",
        1,
        "grappe: rank 0 (pid {pid}) exited with status 0 without calling PMI finalize",
    );
}

/// A program that never speaks PMI (`/bin/true`) is told apart from a
/// PMI program that forgot to finalize.
#[test]
fn a_program_that_never_contacts_the_process_manager_may_not_be_an_mpi_program() {
    let output = grappe_run(&["-n", "2", "/bin/true"]);
    assert_eq!(output.status.code(), Some(1), "{}", describe(&output));
    let stderr = stderr_of(&output);
    assert!(
        stderr.contains("exited with status 0 without ever contacting the process manager (PMI): the program may not be a grappe or MPI program"),
        "{stderr}"
    );
    assert!(!stderr.contains("without calling PMI finalize"), "{stderr}");
}

#[test]
fn a_pmi_abort_stops_the_job_with_the_abort_code() {
    check_fail_fast(&["-n", "3"], "2:abort", 5, "grappe: rank 2 (pid {pid}) called PMI abort with exit code 5");
}

#[test]
fn a_failing_process_of_thread_ranks_is_named_by_its_ranks() {
    check_fail_fast(
        &["-n", "8", "--threads-per-process", "4"],
        "1:exit3",
        3,
        "grappe: ranks 4-7 (process 1, pid {pid}) exited with status 3; stopping the job",
    );
}

#[test]
fn the_timeout_stops_a_job_stuck_in_a_barrier() {
    let output = run_probe(&["-n", "2", "--timeout", "0.5"], &["--fail", "0:hang"]);
    assert_eq!(output.status.code(), Some(124), "{}", describe(&output));
    assert!(stderr_of(&output).contains("grappe: the job did not finish within its --timeout of 0.5 s"));
    let pids: Vec<u32> = probe_lines(&output.stdout).iter().map(|l| l.pid).collect();
    assert_eq!(pids.len(), 2);
    assert_all_gone(&pids);
}

#[test]
fn sigint_to_grappe_is_forwarded_and_stops_the_job() {
    let mut child = Command::new(GRAPPE)
        .args(["run", "-n", "3"])
        .arg(probe())
        .args(["--fail", "0:hang"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start grappe");
    let stdout = child.stdout.take().expect("stdout");
    let (started, started_lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = started.send(line);
        }
    });
    let mut lines = Vec::new();
    while probe_lines(lines.join("\n").as_bytes()).len() < 3 {
        match started_lines.recv_timeout(LIMIT) {
            Ok(line) => lines.push(line),
            Err(_) => {
                let _ = child.kill();
                panic!("the probes did not start: {lines:?}");
            }
        }
    }
    let kill = Command::new("kill").args(["-INT", &child.id().to_string()]).status().expect("run kill");
    assert!(kill.success());
    let output = child.wait_with_output().expect("wait for grappe");
    assert_eq!(output.status.code(), Some(130), "{}", describe(&output));
    assert!(stderr_of(&output).contains("grappe: received SIGINT; forwarded it to the job"));
    let pids: Vec<u32> = probe_lines(lines.join("\n").as_bytes()).iter().map(|l| l.pid).collect();
    assert_all_gone(&pids);
}

#[test]
fn a_missing_program_is_a_clear_error_naming_it() {
    let output = grappe_run(&["-n", "2", "/nonexistent/grappe-test-prog", "arg"]);
    assert_eq!(output.status.code(), Some(127), "{}", describe(&output));
    assert_eq!(stderr_of(&output), "grappe: cannot execute /nonexistent/grappe-test-prog: no such file\n");
}

#[test]
fn a_file_without_execute_permission_is_refused() {
    let path = std::env::temp_dir().join(format!("grappe-cli-noexec-{}", std::process::id()));
    std::fs::write(&path, "#!/bin/sh\n").expect("write temp file");
    let output = grappe_run(&["-n", "1", path.to_str().expect("utf-8 temp path")]);
    std::fs::remove_file(&path).expect("remove temp file");
    assert_eq!(output.status.code(), Some(126), "{}", describe(&output));
    assert!(stderr_of(&output).contains("no execute permission"), "{}", describe(&output));
}

#[test]
fn thread_counts_that_do_not_divide_the_ranks_are_refused() {
    let output = grappe_run(&["-n", "6", "--threads-per-process", "4", "true"]);
    assert_eq!(output.status.code(), Some(2), "{}", describe(&output));
    assert!(stderr_of(&output).contains("--threads-per-process 4 does not divide the 6 ranks"));
}

/// `grappe run -n 24 pmi-probe` from a shell that first runs `limit`.
fn probes_under(limit: &str) -> Output {
    let mut command = Command::new("sh");
    let script = format!("{limit} && exec \"$0\" run -n 24 \"$1\"");
    command.args(["-c", &script, GRAPPE]).arg(probe());
    run_bounded(command, LIMIT)
}

/// The launcher holds a socket and pipes per process: under a soft limit
/// of open files below what the job needs (1024 on many systems), it
/// lifts its own to the hard limit rather than stop; when the hard one is
/// too low, the error says which limit to raise.
#[test]
fn a_job_needing_more_files_than_the_soft_limit_starts() {
    let output = probes_under("ulimit -Sn 32");
    assert!(output.status.success(), "{}", describe(&output));
    assert_eq!(ok_count(&output.stdout), 24, "{}", describe(&output));

    let capped = probes_under("ulimit -n 32");
    let stderr = stderr_of(&capped);
    assert!(!capped.status.success(), "{}", describe(&capped));
    assert!(stderr.contains("Too many open files") && stderr.contains("may open 32 files"), "{stderr}");
}
