//! Programs launched by other process managers run unchanged: MPICH's
//! hydra `mpiexec` (PMI-1) and Slurm's `srun` (PMI-2).

mod util;

use std::process::Command;
use std::time::Duration;

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
fn slurm_srun_runs_the_jacobi_example() {
    let conf = slurm_conf();
    let mut cmd = Command::new(util::system_command("srun", "slurm-wlm"));
    cmd.env("SLURM_CONF", conf).args(["-n", "3", "--time=2"]).arg(util::example("jacobi")).args(["64", "400"]);
    let output = util::run_bounded(cmd, LIMIT);
    assert!(output.status.success(), "{}", util::describe(&output));
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("jacobi n=64 ranks=3 iterations=400"),
        "{}",
        util::describe(&output)
    );
}
