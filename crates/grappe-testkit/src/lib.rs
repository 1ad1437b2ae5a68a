//! What grappe's tests share: finding the programs of this build, running
//! them with a hard time limit, their output drained while they run (a
//! chatty job must never block on a full pipe), and scratch directories
//! that do not outlive their test; with feature `traces`, trace files of
//! synthetic jobs whose every event is known (module `synthetic`).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod scratch;
#[cfg(feature = "traces")]
pub mod synthetic;
pub use scratch::{Scratch, scratch};

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// `target/<profile>`, found from the test executable (`.../deps/test-hash`).
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent().and_then(Path::parent).expect("test binary lives in target/<profile>/deps").to_path_buf()
}

/// A binary of this build (`target/<profile>/<name>`); `hint` says how to
/// build it when it is missing.
pub fn built(name: &str, hint: &str) -> PathBuf {
    existing(target_dir().join(name), hint)
}

/// An example program of this build (`target/<profile>/examples/<name>`).
pub fn example(name: &str) -> PathBuf {
    existing(
        target_dir().join("examples").join(name),
        "a workspace test run (`cargo test --workspace`, `cargo nextest run --workspace`) builds the examples",
    )
}

fn existing(path: PathBuf, hint: &str) -> PathBuf {
    assert!(path.is_file(), "{} is missing: {hint}", path.display());
    path
}

/// A command found on PATH, or a failure saying which package provides it.
pub fn system_command(name: &str, package: &str) -> PathBuf {
    let found = std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).map(|p| p.join(name)).find(|p| p.is_file()));
    found.unwrap_or_else(|| panic!("`{name}` is not installed: run scripts/install-deps (Debian package {package})"))
}

/// Runs `command` to completion with stdin closed, killing it and failing
/// the test (with what it printed) after `limit`.
pub fn run_bounded(mut command: Command, limit: Duration) -> Output {
    let description = format!("{command:?}");
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {description}: {e}"));
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let status = child.wait().expect("wait");
            let output = Output { status, stdout: join(stdout), stderr: join(stderr) };
            panic!("{description} did not finish within {limit:?}\n{}", describe(&output));
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Output { status, stdout: join(stdout), stderr: join(stderr) }
}

fn drain(pipe: Option<impl Read + Send + 'static>) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        bytes
    })
}

fn join(reader: JoinHandle<Vec<u8>>) -> Vec<u8> {
    reader.join().unwrap_or_default()
}

/// Status, stdout and stderr of a finished command, for assertion messages.
pub fn describe(output: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}
