//! The programs of this build, for the integration tests of `grappe`.
#![allow(dead_code, unused_imports)] // Each test file uses a different subset.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use grappe_testkit::{describe, example, run_bounded, system_command};

/// The `grappe` command of this build.
pub fn grappe() -> PathBuf {
    grappe_testkit::built("grappe", "build it with `cargo build -p grappe-cli` (a workspace test run does)")
}

/// Runs `faulty` with `fault`; returns (stderr, seconds from the victim's
/// failure to the launcher's exit), asserting a non-zero exit.
pub fn run_faulty(mut launcher: Command, fault: &str) -> (String, f64) {
    launcher.env("GRAPPE_FAULT", fault).arg(example("faulty"));
    let output = run_bounded(launcher, Duration::from_secs(30));
    let ended = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs_f64();
    assert!(!output.status.success(), "the job survived {fault}: {}", describe(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let failed_at: f64 = stdout
        .lines()
        .find_map(|l| l.split(" fails at ").nth(1))
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or_else(|| panic!("victim did not report: {}", describe(&output)));
    (String::from_utf8_lossy(&output.stderr).into_owned(), ended - failed_at)
}
