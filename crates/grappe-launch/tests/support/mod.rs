//! Helpers shared by the integration tests of grappe-launch and grappe-cli (which includes this
//! file by path): bounded runs of launchers and checks on pmi-probe's output.
#![allow(dead_code, unused_imports)] // Each test file uses a different subset.

use std::path::{Path, PathBuf};

/// The pmi-probe binary of grappe-launch. Cargo names it for grappe-launch's own tests; other
/// packages' tests find it in the target directory, where a workspace build puts it.
pub fn probe() -> PathBuf {
    match option_env!("CARGO_BIN_EXE_pmi-probe") {
        Some(path) => PathBuf::from(path),
        None => grappe_testkit::built(
            "pmi-probe",
            "build it with `cargo build -p grappe-launch --bin pmi-probe` (a workspace test run does)",
        ),
    }
}

pub use grappe_testkit::{describe, run_bounded};

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
