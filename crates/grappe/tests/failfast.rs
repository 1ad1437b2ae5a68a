//! A rank that dies makes the job fail fast, with a message naming it:
//! killed, panicked or exited, as a process, a thread or part of a hybrid.

mod util;

use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Runs `faulty` with `fault`; returns (stderr, seconds from the victim's
/// failure to the launcher's exit), asserting a non-zero exit.
fn run_faulty(mut launcher: Command, fault: &str) -> (String, f64) {
    launcher.env("GRAPPE_FAULT", fault).arg(util::example("faulty"));
    let output = util::run_bounded(launcher, Duration::from_secs(30));
    let ended = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs_f64();
    assert!(!output.status.success(), "the job survived {fault}: {}", util::describe(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let failed_at: f64 = stdout
        .lines()
        .find_map(|l| l.split(" fails at ").nth(1))
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or_else(|| panic!("victim did not report: {}", util::describe(&output)));
    (String::from_utf8_lossy(&output.stderr).into_owned(), ended - failed_at)
}

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
