//! The jobs that every fabric between hosts must run, on hosts emulated on
//! this machine (`GRAPPE_EMULATED_HOSTS`: each group of processes a host
//! with its own shared-memory segment, the hosts joined over the loopback
//! interface): written once, run over TCP by `hosts.rs` and over libfabric
//! by `hosts_ofi.rs`.

use std::process::{Command, Output};
use std::time::Duration;

use crate::util;

pub const LIMIT: Duration = Duration::from_secs(120);

/// The fabric between hosts: its `GRAPPE_FABRIC`, or the default (TCP).
#[derive(Clone, Copy)]
pub struct Fabric(pub Option<&'static str>);

/// A fabric with one more setting of its own (`GRAPPE_TCP_CONNECT`...).
#[derive(Clone, Copy)]
#[allow(dead_code)] // used by the TCP fabric's tests only
pub struct Configured {
    fabric: Fabric,
    var: (&'static str, &'static str),
}

/// Runs commands across emulated hosts.
pub trait Across: Copy {
    /// `cmd` run on `hosts` emulated hosts.
    fn across(self, hosts: usize, cmd: Command) -> Output;
}

impl Fabric {
    /// This fabric with `var` set to `value`.
    #[allow(dead_code)]
    pub fn with_env(self, var: &'static str, value: &'static str) -> Configured {
        Configured { fabric: self, var: (var, value) }
    }

    /// `cmd` run on `hosts` emulated hosts over this fabric.
    pub fn across(self, hosts: usize, mut cmd: Command) -> Output {
        cmd.env("GRAPPE_EMULATED_HOSTS", hosts.to_string());
        if let Some(fabric) = self.0 {
            cmd.env("GRAPPE_FABRIC", fabric);
        }
        util::run_bounded(cmd, LIMIT)
    }
}

impl Across for Fabric {
    fn across(self, hosts: usize, cmd: Command) -> Output {
        Fabric::across(self, hosts, cmd)
    }
}

impl Across for Configured {
    fn across(self, hosts: usize, mut cmd: Command) -> Output {
        cmd.env(self.var.0, self.var.1);
        self.fabric.across(hosts, cmd)
    }
}

/// `grappe run ARGS example PROGRAM_ARGS`.
pub fn grappe_run(args: &[&str], program: &str, program_args: &[&str]) -> Command {
    let mut cmd = Command::new(util::grappe());
    cmd.arg("run").args(args).arg(util::example(program)).args(program_args);
    cmd
}

/// The job succeeded and printed `line`.
pub fn passes(output: &Output, line: &str) {
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success() && stdout.contains(line), "{}", util::describe(output));
}

pub fn the_suite_runs_on_two_hosts_of_two_processes(fabric: Fabric) {
    let output = fabric.across(2, grappe_run(&["-n", "4"], "p2p_suite", &[]));
    passes(&output, "p2p suite passed on 4 ranks");
}

/// Thread ranks in a process, processes on a host, hosts: every kind of
/// link in one job.
pub fn the_suite_runs_on_three_hosts_of_hybrid_processes(fabric: Fabric) {
    let output = fabric.across(3, grappe_run(&["-n", "6", "--threads-per-process", "2"], "p2p_suite", &[]));
    passes(&output, "p2p suite passed on 6 ranks");
}

/// `collectives_check` on each (hosts, ranks) of `layouts`.
pub fn collectives_split_across_hosts_give_the_right_results(fabric: Fabric, layouts: &[(usize, &str)]) {
    for &(hosts, ranks) in layouts {
        let output = fabric.across(hosts, grappe_run(&["-n", ranks], "collectives_check", &["2"]));
        passes(&output, &format!("collectives passed on {ranks} ranks"));
    }
}

/// Random splits of the world with every collective on each part
/// (`collectives_check`'s seeded cases) on `hosts` hosts of `per_host`
/// ranks, as processes or as processes of two thread ranks: the members of
/// a communicator on hosts in every mix.
pub fn random_splits_across_hosts_give_the_right_results(
    fabric: impl Across,
    seed: u64,
    hosts: usize,
    per_host: usize,
    threads: bool,
) -> Result<(), proptest::test_runner::TestCaseError> {
    let ranks = hosts * per_host;
    let layout: Vec<String> = match threads && per_host % 2 == 0 {
        true => vec!["-n".into(), ranks.to_string(), "--threads-per-process".into(), "2".into()],
        false => vec!["-n".into(), ranks.to_string()],
    };
    let layout: Vec<&str> = layout.iter().map(String::as_str).collect();
    let seed_arg = seed.to_string();
    let output = fabric.across(hosts, grappe_run(&layout, "collectives_check", &["1", &seed_arg]));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let expected = format!("collectives passed on {ranks} ranks (1 loops, 6 random cases of seed {seed})");
    proptest::prop_assert!(output.status.success() && stdout.contains(&expected), "{}", util::describe(&output));
    Ok(())
}

pub fn mpich_hydra_launches_a_job_across_hosts(fabric: Fabric) {
    let mut cmd = Command::new(util::system_command("mpiexec.mpich", "mpich"));
    cmd.args(["-n", "4"]).arg(util::example("p2p_suite"));
    let output = fabric.across(2, cmd);
    passes(&output, "p2p suite passed on 4 ranks");
}

pub fn a_rank_killed_on_one_host_stops_the_job_within_two_seconds(fabric: Fabric) {
    let mut cmd = Command::new(util::grappe());
    cmd.args(["run", "-n", "4"]).env("GRAPPE_EMULATED_HOSTS", "2");
    if let Some(fabric) = fabric.0 {
        cmd.env("GRAPPE_FABRIC", fabric);
    }
    let (stderr, delay) = util::run_faulty(cmd, "kill:3");
    assert!(delay < 2.0, "job stopped {delay:.2} s after the death");
    assert!(stderr.contains("rank 3") && stderr.contains("signal 9"), "{stderr}");
}
