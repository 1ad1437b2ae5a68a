//! Helpers shared by the integration tests of grappe-launch and grappe-cli (which includes this
//! file by path): bounded runs of launchers and checks on pmi-probe's output.
#![allow(dead_code)] // Each test file uses a different subset.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The pmi-probe binary of grappe-launch. Cargo names it for grappe-launch's own tests; other
/// packages' tests find it in the target directory, where a workspace build puts it.
pub fn probe() -> PathBuf {
    if let Some(path) = option_env!("CARGO_BIN_EXE_pmi-probe") {
        return PathBuf::from(path);
    }
    // This test runs as target/<profile>/deps/<test>-<hash>.
    let exe = std::env::current_exe().expect("current_exe");
    let path = exe
        .parent()
        .and_then(Path::parent)
        .map(|profile_dir| profile_dir.join("pmi-probe"))
        .expect("test binary lives in target/<profile>/deps");
    assert!(
        path.is_file(),
        "{} is missing: build it with `cargo build -p grappe-launch --bin pmi-probe` \
         (a workspace test run, `cargo test --workspace` or `cargo nextest run --workspace`, does)",
        path.display()
    );
    path
}

/// Runs `command` to completion, killing it and failing the test after `limit`.
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
            let _ = child.wait();
            panic!("{description} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Output { status, stdout: stdout.join().expect("stdout reader"), stderr: stderr.join().expect("stderr reader") }
}

fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        bytes
    })
}

/// What one probe process reported: `pmi-probe: rank R of S kind=K job=J pid=P ranks_per_process=T`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeLine {
    pub rank: usize,
    pub size: usize,
    pub kind: String,
    pub job: String,
    pub pid: u32,
    pub ranks_per_process: usize,
}

/// Every probe start line in `output` (labels before `pmi-probe:` are skipped), by rank.
pub fn probe_lines(output: &[u8]) -> Vec<ProbeLine> {
    let text = String::from_utf8_lossy(output);
    let mut lines: Vec<ProbeLine> = text.lines().filter_map(parse_probe_line).collect();
    lines.sort_by_key(|line| line.rank);
    lines
}

fn parse_probe_line(line: &str) -> Option<ProbeLine> {
    let rest = &line[line.find("pmi-probe: rank ")? + "pmi-probe: rank ".len()..];
    let words: Vec<&str> = rest.split(' ').collect();
    let field =
        |name: &str| words.iter().find_map(|word| word.strip_prefix(name)?.strip_prefix('=')).map(str::to_owned);
    if words.get(1) != Some(&"of") {
        return None;
    }
    Some(ProbeLine {
        rank: words.first()?.parse().ok()?,
        size: words.get(2)?.parse().ok()?,
        kind: field("kind")?,
        job: field("job")?,
        pid: field("pid")?.parse().ok()?,
        ranks_per_process: field("ranks_per_process")?.parse().ok()?,
    })
}

/// Number of `pmi-probe: rank R ok` lines in `output`.
pub fn ok_count(output: &[u8]) -> usize {
    let text = String::from_utf8_lossy(output);
    text.lines().filter(|line| line.contains("pmi-probe: rank ") && line.ends_with(" ok")).count()
}

/// Fails the test if any of `pids` still exists.
pub fn assert_all_gone(pids: &[u32]) {
    for pid in pids {
        assert!(!Path::new(&format!("/proc/{pid}")).exists(), "process {pid} was left behind");
    }
}

/// Text of `output` for assertion messages.
pub fn describe(output: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}
