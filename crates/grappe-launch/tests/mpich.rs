//! Compatibility with MPICH both ways: grappe's PMI-1 client under MPICH's real hydra launcher,
//! and a real MPICH program under grappe's launcher (Debian packages `mpich`, `libmpich-dev`).

mod support;

use grappe_launch::launcher::{LaunchSpec, OutputMode, launch};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use support::{describe, ok_count, probe_lines, run_bounded};

const MPIEXEC: &str = "mpiexec.mpich";
const MPICC: &str = "mpicc.mpich";

/// `tool` from PATH, or a test failure telling how to install it.
fn require(tool: &str, package: &str) -> Command {
    let found =
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()).any(|dir| dir.join(tool).is_file());
    assert!(
        found,
        "{tool} is not installed: `apt-get install {package}` (or `/work/shared/slurm/slurm-ci.sh install`)"
    );
    let mut command = Command::new(tool);
    command.env_remove("GRAPPE_PMI");
    command
}

fn mpiexec() -> Command {
    require(MPIEXEC, "mpich")
}

/// Compiles `tests/data/<name>.c` with MPICH's compiler into a fresh
/// directory; the binary, and its directory to hold while it is used.
fn compile_mpich_program(name: &str) -> (PathBuf, grappe_testkit::Scratch) {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/data/{name}.c"));
    let dir = grappe_testkit::scratch(&format!("mpich-{name}"));
    let binary = dir.join(name);
    let mut mpicc = require(MPICC, "libmpich-dev");
    mpicc.arg("-o").arg(&binary).arg(&source);
    let output = run_bounded(mpicc, Duration::from_secs(60));
    assert!(output.status.success(), "{}", describe(&output));
    (binary, dir)
}

#[test]
fn hydra_serves_the_probe_over_pmi1() {
    let mut command = mpiexec();
    command.args(["-n", "4"]).arg(support::probe());
    let output = run_bounded(command, Duration::from_secs(60));
    assert!(output.status.success(), "{}", describe(&output));
    let lines = probe_lines(&output.stdout);
    assert_eq!(lines.len(), 4, "{}", describe(&output));
    for (rank, line) in lines.iter().enumerate() {
        assert_eq!((line.rank, line.size, line.kind.as_str()), (rank, 4, "pmi1"), "{line:?}");
        assert_eq!(line.job, lines[0].job, "one kvsname per job");
    }
    assert_eq!(ok_count(&output.stdout), 4, "{}", describe(&output));
}

#[test]
fn an_mpich_program_runs_unchanged_under_grappe_run() {
    let (program, _dir) = compile_mpich_program("mpi_allreduce");
    let mut spec = LaunchSpec::new(&program, 3);
    spec.output = OutputMode::Capture;
    spec.label = true;
    spec.timeout = Some(Duration::from_secs(60));
    let outcome = launch(&spec).expect("launch");
    let stdout = String::from_utf8_lossy(&outcome.stdout).into_owned();
    assert!(outcome.success(), "{:?}\n{stdout}{}", outcome.failure, String::from_utf8_lossy(&outcome.stderr));
    let mut lines: Vec<&str> = stdout.lines().collect();
    lines.sort_unstable();
    assert_eq!(lines, ["[0] mpi rank 0 of 3 sum 3", "[1] mpi rank 1 of 3 sum 3", "[2] mpi rank 2 of 3 sum 3"]);
}
