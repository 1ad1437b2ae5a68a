//! Finding the built programs and running them with a hard time limit.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `target/<profile>`, found from the test executable (`.../deps/test-hash`).
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent().and_then(|deps| deps.parent()).expect("target/<profile>/deps").to_path_buf()
}

/// The `grappe` command of this build.
pub fn grappe() -> PathBuf {
    existing(target_dir().join("grappe"), "cargo build -p grappe-cli (or test the whole workspace)")
}

/// An example program of the `grappe` crate.
pub fn example(name: &str) -> PathBuf {
    existing(target_dir().join("examples").join(name), "cargo test builds the examples; run it for the workspace")
}

fn existing(path: PathBuf, hint: &str) -> PathBuf {
    assert!(path.exists(), "{} is missing: {hint}", path.display());
    path
}

/// A command found on PATH, or a failure saying what to install.
pub fn system_command(name: &str, package: &str) -> PathBuf {
    let found = std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).map(|p| p.join(name)).find(|p| p.exists()));
    found.unwrap_or_else(|| panic!("`{name}` is not installed: run scripts/install-deps (Debian package {package})"))
}

/// Runs `cmd` to completion, killing it after `limit`. Returns the output
/// and how long it took.
pub fn run_with_limit(cmd: &mut Command, limit: Duration) -> (Output, Duration) {
    let start = Instant::now();
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    loop {
        if child.try_wait().expect("wait").is_some() {
            let output = child.wait_with_output().expect("output");
            return (output, start.elapsed());
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let output = child.wait_with_output().expect("output");
            panic!(
                "{cmd:?} did not finish within {limit:?}\nstdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Stdout and stderr of a finished command, for assertion messages.
pub fn show(output: &Output) -> String {
    format!(
        "status: {}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}
