//! grappe's PMI clients under a real Slurm (`srun`), which speaks PMI-2 by default.
//!
//! Needs a running Slurm found through `SLURM_CONF`:
//!
//! ```text
//! /work/shared/slurm/slurm-ci.sh start
//! export SLURM_CONF=/tmp/slurmcheck/cluster/slurm.conf
//! ```
//!
//! Without it these tests fail (they are not skipped): `scripts/test` starts Slurm first.

mod support;

use std::process::Command;
use std::time::Duration;
use support::{describe, ok_count, probe_lines, run_bounded};

fn srun(tasks: usize) -> Command {
    let conf = std::env::var_os("SLURM_CONF").unwrap_or_else(|| {
        panic!(
            "SLURM_CONF is not set, so no Slurm to test against. Start one with \
             `/work/shared/slurm/slurm-ci.sh start` and \
             `export SLURM_CONF=/tmp/slurmcheck/cluster/slurm.conf` (scripts/test does this)"
        )
    });
    assert!(
        std::path::Path::new(&conf).is_file(),
        "SLURM_CONF={conf:?} does not exist: start Slurm with /work/shared/slurm/slurm-ci.sh start"
    );
    let mut command = Command::new("srun");
    command
        .args(["-n", &tasks.to_string(), "--kill-on-bad-exit=1", "--time=2"])
        .arg(support::probe())
        .env_remove("GRAPPE_PMI");
    command
}

fn check_job(output: &std::process::Output, tasks: usize, kind: &str) {
    assert!(output.status.success(), "{}", describe(output));
    let lines = probe_lines(&output.stdout);
    assert_eq!(lines.len(), tasks, "{}", describe(output));
    for (rank, line) in lines.iter().enumerate() {
        assert_eq!((line.rank, line.size, line.kind.as_str()), (rank, tasks, kind), "{line:?}");
        assert_eq!(line.job, lines[0].job, "one job id per step");
    }
    assert_eq!(ok_count(&output.stdout), tasks, "{}", describe(output));
}

#[test]
fn srun_serves_the_probe_over_pmi2() {
    let output = run_bounded(srun(4), Duration::from_secs(90));
    check_job(&output, 4, "pmi2");
}

/// Slurm's pmi2 plugin also serves PMI-1, with a 1024-byte line limit that the client respects.
#[test]
fn srun_serves_the_probe_over_pmi1_when_asked() {
    let mut command = srun(3);
    command.env("GRAPPE_PMI", "1");
    let output = run_bounded(command, Duration::from_secs(90));
    check_job(&output, 3, "pmi1");
}
