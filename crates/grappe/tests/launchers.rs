//! Programs launched by other process managers run unchanged: MPICH's
//! hydra `mpiexec` (PMI-1) and Slurm's `srun` (PMI-2); traced through
//! `GRAPPE_TRACE`, their files name the process manager's job.

mod util;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use grappe_analysis::TraceSet;

const LIMIT: Duration = Duration::from_secs(120);

fn assert_suite(output: &std::process::Output, ranks: usize) {
    assert!(output.status.success(), "{}", util::describe(output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains(&format!("p2p suite passed on {ranks} ranks")), "{}", util::describe(output));
}

#[test]
fn mpich_mpiexec_runs_the_suite_on_four_processes() {
    let mut cmd = Command::new(util::system_command("mpiexec.mpich", "mpich"));
    cmd.args(["-n", "4"]).arg(util::example("p2p_suite"));
    assert_suite(&util::run_bounded(cmd, LIMIT), 4);
}

#[test]
fn mpich_mpiexec_runs_hybrid_processes_of_thread_ranks() {
    let mut cmd = Command::new(util::system_command("mpiexec.mpich", "mpich"));
    cmd.args(["-n", "2", "-genv", "GRAPPE_RANKS_PER_PROCESS", "2"]).arg(util::example("p2p_suite"));
    assert_suite(&util::run_bounded(cmd, LIMIT), 4);
}

fn trace_dir(name: &str) -> grappe_testkit::Scratch {
    grappe_testkit::scratch(&format!("launchers-{name}"))
}

/// The traces in `dir` are one job's, every rank's file naming the
/// process manager's job id; returns it.
fn one_job(dir: &Path, ranks: u32) -> String {
    let set = TraceSet::open(dir).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((set.world_size(), set.files().len()), (ranks, ranks as usize));
    let job = set.files()[0].header.job.clone();
    assert!(set.files().iter().all(|f| f.header.job == job), "one job id in every file");
    let _ = std::fs::remove_dir_all(dir);
    job
}

#[test]
fn mpich_mpiexec_runs_a_traced_job_named_by_its_kvs() {
    let dir = trace_dir("mpiexec");
    let mut cmd = Command::new(util::system_command("mpiexec.mpich", "mpich"));
    cmd.args(["-n", "3", "-genv", "GRAPPE_TRACE"]).arg(&dir).arg(util::example("jacobi")).args(["32", "100"]);
    let output = util::run_bounded(cmd, LIMIT);
    assert!(output.status.success(), "{}", util::describe(&output));
    let job = one_job(&dir, 3);
    assert!(job.starts_with("kvs_"), "hydra's kvsname, not {job:?}");
}

fn slurm_conf() -> String {
    std::env::var("SLURM_CONF").unwrap_or_else(|_| {
        panic!("SLURM_CONF is not set: start the test Slurm with ../shared/slurm/slurm-ci.sh start (scripts/test does)")
    })
}

#[test]
fn slurm_srun_runs_the_suite_on_four_processes() {
    let conf = slurm_conf();
    let mut cmd = Command::new(util::system_command("srun", "slurm-wlm"));
    cmd.env("SLURM_CONF", conf).args(["-n", "4", "--time=2", "--kill-on-bad-exit=1"]).arg(util::example("p2p_suite"));
    assert_suite(&util::run_bounded(cmd, LIMIT), 4);
}

#[test]
fn slurm_srun_runs_the_jacobi_example_traced() {
    let conf = slurm_conf();
    let mut cmd = Command::new(util::system_command("srun", "slurm-wlm"));
    let dir = trace_dir("srun");
    cmd.env("SLURM_CONF", conf).env("GRAPPE_TRACE", &dir);
    cmd.args(["-n", "3", "--time=2"]).arg(util::example("jacobi")).args(["64", "400"]);
    let output = util::run_bounded(cmd, LIMIT);
    assert!(output.status.success(), "{}", util::describe(&output));
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("jacobi n=64 ranks=3 iterations=400"),
        "{}",
        util::describe(&output)
    );
    // Traced through GRAPPE_TRACE, the files name Slurm's job.step.
    let job = one_job(&dir, 3);
    let parts: Vec<&str> = job.split('.').collect();
    assert!(parts.len() == 2 && parts.iter().all(|p| p.parse::<u64>().is_ok()), "Slurm's job.step, not {job:?}");
}

#[test]
fn under_srun_a_process_that_cannot_start_stops_the_job() {
    // Task 0 of two has a setting it refuses: it aborts the job through
    // PMI-2, and Slurm stops task 1, which waits for it at start-up, though
    // the step is not told to kill its tasks on a bad exit.
    let conf = slurm_conf();
    let mut cmd = Command::new(util::system_command("srun", "slurm-wlm"));
    let suite = util::example("p2p_suite");
    let script = format!("if [ \"$SLURM_PROCID\" = 0 ]; then export GRAPPE_WORKERS=many; fi; exec {}", suite.display());
    // Its own segment directory: the failed start must leave it empty.
    let shm = trace_dir("srun-failed-start");
    cmd.env("SLURM_CONF", conf).env("GRAPPE_SHM_DIR", &*shm).args(["-n", "2", "--time=2", "sh", "-c", &script]);
    let started = std::time::Instant::now();
    let output = util::run_bounded(cmd, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{}", util::describe(&output));
    assert!(stderr.contains("GRAPPE_WORKERS=\"many\""), "the cause is not said: {stderr}");
    assert!(started.elapsed() < Duration::from_secs(30), "the job took {:?} to stop: {stderr}", started.elapsed());
    let left: Vec<_> =
        std::fs::read_dir(&*shm).map(|d| d.flatten().map(|e| e.file_name()).collect()).unwrap_or_default();
    assert!(left.is_empty(), "the failed start left {left:?} in its segment directory");
}
