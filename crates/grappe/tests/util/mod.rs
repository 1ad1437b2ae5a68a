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
/// and how long it took. Both pipes are drained while it runs, so a chatty
/// job never blocks on a full pipe.
pub fn run_with_limit(cmd: &mut Command, limit: Duration) -> (Output, Duration) {
    let start = Instant::now();
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    let drain = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped stdout")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped stderr")));
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            let (out, err) = (stdout.join().unwrap_or_default(), stderr.join().unwrap_or_default());
            panic!(
                "{cmd:?} did not finish within {limit:?}\nstdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&out),
                String::from_utf8_lossy(&err)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let output =
        Output { status, stdout: stdout.join().unwrap_or_default(), stderr: stderr.join().unwrap_or_default() };
    (output, start.elapsed())
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
