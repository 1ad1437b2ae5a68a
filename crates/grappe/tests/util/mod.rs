//! The programs of this build, for the integration tests of `grappe`.
#![allow(dead_code, unused_imports)] // Each test file uses a different subset.

use std::path::PathBuf;

pub use grappe_testkit::{describe, example, run_bounded, system_command};

/// The `grappe` command of this build.
pub fn grappe() -> PathBuf {
    grappe_testkit::built("grappe", "build it with `cargo build -p grappe-cli` (a workspace test run does)")
}
