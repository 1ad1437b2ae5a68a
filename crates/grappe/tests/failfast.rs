//! A rank that dies makes the job fail fast, with a message naming it:
//! killed, panicked or exited, as a process, a thread or part of a hybrid.

mod util;

use std::process::Command;
use std::time::Duration;

use util::run_faulty;

fn grappe_run(args: &[&str]) -> Command {
    let mut cmd = Command::new(util::grappe());
    cmd.arg("run").args(args);
    cmd
}

#[test]
fn a_killed_process_rank_stops_the_job_within_two_seconds() {
    let (stderr, delay) = run_faulty(grappe_run(&["-n", "4"]), "kill:2");
    assert!(delay < 2.0, "job stopped {delay:.2} s after the death");
    assert!(stderr.contains("rank 2") && stderr.contains("signal 9"), "{stderr}");
}

#[test]
fn a_rank_exiting_without_finalize_stops_the_job() {
    let (stderr, delay) = run_faulty(grappe_run(&["-n", "3"]), "exit:1:7");
    assert!(delay < 2.0, "job stopped {delay:.2} s after the exit");
    assert!(stderr.contains("rank 1") && stderr.contains("status 7"), "{stderr}");
}

#[test]
fn a_panicking_thread_rank_names_itself() {
    let (stderr, delay) = run_faulty(grappe_run(&["-n", "4", "--threads"]), "panic:3");
    assert!(delay < 2.0, "job stopped {delay:.2} s after the panic");
    assert!(stderr.contains("rank 3 failed") && stderr.contains("was told to panic"), "{stderr}");
}

#[test]
fn a_killed_hybrid_process_names_its_ranks() {
    let (stderr, delay) = run_faulty(grappe_run(&["-n", "4", "--threads-per-process", "2"]), "kill:3");
    assert!(delay < 2.0, "job stopped {delay:.2} s after the death");
    assert!(stderr.contains("ranks 2-3") && stderr.contains("signal 9"), "{stderr}");
}

#[test]
fn under_mpiexec_the_survivors_notice_a_dead_peer() {
    // Hydra stops the job too; grappe's own check (a dead peer's pid) must
    // not leave the survivors hanging either way.
    let mut cmd = Command::new(util::system_command("mpiexec.mpich", "mpich"));
    cmd.args(["-n", "3"]);
    let (_stderr, delay) = run_faulty(cmd, "kill:1");
    assert!(delay < 5.0, "job stopped {delay:.2} s after the death");
}

#[test]
fn a_full_shared_memory_directory_is_a_clear_start_up_error() {
    // A 256 KiB tmpfs cannot hold the segment of 4 processes: the job must
    // stop at start-up naming the file and the cause, not die of SIGBUS.
    let dir = std::env::temp_dir().join(format!("grappe-tiny-shm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mounted = Command::new("mount").args(["-t", "tmpfs", "-o", "size=256k", "tmpfs"]).arg(&dir).status().unwrap();
    assert!(mounted.success(), "mounting a small tmpfs needs root (CI runs as root)");
    let mut cmd = grappe_run(&["-n", "4"]);
    cmd.env("GRAPPE_SHM_DIR", &dir).arg(util::example("p2p_suite"));
    let output = util::run_bounded(cmd, Duration::from_secs(30));
    let _ = Command::new("umount").arg(&dir).status();
    let _ = std::fs::remove_dir(&dir);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{}", util::describe(&output));
    assert!(stderr.contains("No space left on device") && stderr.contains(&*dir.to_string_lossy()), "{stderr}");
}

/// Runs `faulty` failing inside a scope (see its `truncate` and `unwrap`
/// faults) under `layout`, bounded by `--timeout 20s`, and checks that the
/// job stopped (it used to hang: the scope waited for an isend that no
/// rank would receive) naming the rank and its error, and that the
/// launcher names the victim's process, `victim_process` (`rank 1 (`).
fn check_failure_in_scope(layout: &[&str], victim_process: &str) {
    let truncated = "message truncated: 2227 bytes from rank 2 (tag 94) into a 264-byte buffer";
    for (fault, cause) in [("truncate:1", truncated), ("unwrap:1", "panicked: called `Result::unwrap()`")] {
        let mut args = layout.to_vec();
        args.extend(["--timeout", "20s"]);
        let (stderr, delay) = run_faulty(grappe_run(&args), fault);
        let case = format!("{layout:?}, {fault}");
        assert!(!stderr.contains("--timeout of 20 s"), "{case}: the job hung\n{stderr}");
        assert!(stderr.contains(&format!("grappe: rank 1 failed: {cause}")), "{case}: {stderr}");
        assert_eq!(launcher_lines(&stderr), [format!("grappe: {victim_process}")], "{case}: {stderr}");
        assert!(delay < 20.0, "{case}: the job stopped {delay:.2} s after the failure");
    }
}

/// The launcher's line (the failure it stops the job for), up to the pid.
fn launcher_lines(stderr: &str) -> Vec<String> {
    let lines = stderr.lines().filter(|line| line.starts_with("grappe: ") && line.ends_with("; stopping the job"));
    lines.map(|line| line.split("pid ").next().unwrap_or(line).to_owned()).collect()
}

#[test]
fn a_process_rank_failing_in_a_scope_with_an_unreceived_isend_stops_the_job() {
    check_failure_in_scope(&["-n", "3"], "rank 1 (");
}

#[test]
fn a_thread_rank_failing_in_a_scope_with_an_unreceived_isend_stops_the_job() {
    check_failure_in_scope(&["-n", "3", "--threads"], "ranks 0-2 (process 0, ");
}

#[test]
fn a_hybrid_rank_failing_in_a_scope_with_an_unreceived_isend_stops_the_job() {
    check_failure_in_scope(&["-n", "4", "--threads-per-process", "2"], "ranks 0-1 (process 0, ");
}

/// Rank 1 fails as it starts; its process outlives the failure by its
/// grace period (rank 0 computes, on the process's other worker), while in
/// the other process rank 5 starts only after the failure (rank 3, before
/// it on their worker, computes until then). Rank 5 is no start-up failure
/// ("rank 1 did not announce itself", it said), its process does not end
/// first, and the launcher names rank 1's process, the first failure; the
/// ranks it stopped say they stopped.
#[test]
fn the_first_failure_is_the_one_reported_and_the_ranks_it_stopped_say_so() {
    let scratch = grappe_testkit::scratch("failfast-early");
    let mut launcher = grappe_run(&["-n", "6", "--threads-per-process", "3", "--timeout", "20s"]);
    launcher.env("GRAPPE_WORKERS", "2").env("GRAPPE_FAULT_MARK", scratch.path().join("failed"));
    let (stderr, delay) = run_faulty(launcher, "early:1:0:3");
    assert!(stderr.contains("grappe: rank 1 failed: panicked: rank 1 was told to panic"), "{stderr}");
    assert_eq!(launcher_lines(&stderr), ["grappe: ranks 0-2 (process 0, "], "{stderr}");
    assert!(!stderr.contains("did not announce"), "{stderr}");
    let others =
        stderr.lines().filter(|line| line.starts_with("grappe: rank ") && !line.starts_with("grappe: rank 1 "));
    for line in others {
        assert!(line.contains(" stopped: rank 1 (pid "), "a rank stopped by rank 1's failure says so: {line}");
    }
    assert!(delay < 20.0, "the job stopped {delay:.2} s after the failure");
}
