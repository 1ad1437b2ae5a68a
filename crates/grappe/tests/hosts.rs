//! Jobs across hosts, emulated on this machine (`GRAPPE_EMULATED_HOSTS`:
//! the processes split into hosts, each with its own shared-memory
//! segment, joined by TCP over the loopback interface): the point-to-point
//! suite and the collectives under `grappe run` and MPICH's `mpiexec`,
//! process and hybrid ranks, and a rank killed on one host stopping the
//! job within two seconds.

mod util;

use std::process::Command;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

fn across(hosts: usize, mut cmd: Command) -> std::process::Output {
    cmd.env("GRAPPE_EMULATED_HOSTS", hosts.to_string());
    util::run_bounded(cmd, LIMIT)
}

fn grappe_run(args: &[&str], program: &str, program_args: &[&str]) -> Command {
    let mut cmd = Command::new(util::grappe());
    cmd.arg("run").args(args).arg(util::example(program)).args(program_args);
    cmd
}

fn passes(output: &std::process::Output, line: &str) {
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success() && stdout.contains(line), "{}", util::describe(output));
}

#[test]
fn the_suite_runs_on_two_hosts_of_two_processes() {
    let output = across(2, grappe_run(&["-n", "4"], "p2p_suite", &[]));
    passes(&output, "p2p suite passed on 4 ranks");
}

#[test]
fn the_suite_runs_on_three_hosts_of_hybrid_processes() {
    // Thread ranks in a process, processes on a host, hosts: every kind of
    // link in one job.
    let output = across(3, grappe_run(&["-n", "6", "--threads-per-process", "2"], "p2p_suite", &[]));
    passes(&output, "p2p suite passed on 6 ranks");
}

#[test]
fn collectives_split_across_hosts_give_the_right_results() {
    for (hosts, ranks) in [(2, "5"), (3, "6")] {
        let output = across(hosts, grappe_run(&["-n", ranks], "collectives_check", &["2"]));
        passes(&output, &format!("collectives passed on {ranks} ranks"));
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 8, ..Default::default() })]

    /// Random splits of the world with every collective on each part
    /// (`collectives_check`'s seeded cases), on 2 to 4 hosts of 1 to 4
    /// ranks, as processes or as processes of two thread ranks: the members
    /// of a communicator on hosts in every mix.
    #[test]
    fn random_splits_across_hosts_give_the_right_results(
        seed in 0u64..1 << 32,
        hosts in 2usize..=4,
        per_host in 1usize..=4,
        threads in proptest::bool::ANY,
    ) {
        let ranks = hosts * per_host;
        let layout: Vec<String> = match threads && per_host % 2 == 0 {
            true => vec!["-n".into(), ranks.to_string(), "--threads-per-process".into(), "2".into()],
            false => vec!["-n".into(), ranks.to_string()],
        };
        let layout: Vec<&str> = layout.iter().map(String::as_str).collect();
        let seed_arg = seed.to_string();
        let output = across(hosts, grappe_run(&layout, "collectives_check", &["1", &seed_arg]));
        let stdout = String::from_utf8_lossy(&output.stdout);
        let expected = format!("collectives passed on {ranks} ranks (1 loops, 6 random cases of seed {seed})");
        proptest::prop_assert!(output.status.success() && stdout.contains(&expected), "{}", util::describe(&output));
    }
}

#[test]
fn mpich_hydra_launches_a_job_across_hosts() {
    let mut cmd = Command::new(util::system_command("mpiexec.mpich", "mpich"));
    cmd.args(["-n", "4"]).arg(util::example("p2p_suite"));
    let output = across(2, cmd);
    passes(&output, "p2p suite passed on 4 ranks");
}

#[test]
fn a_rank_killed_on_one_host_stops_the_job_within_two_seconds() {
    let mut cmd = Command::new(util::grappe());
    cmd.args(["run", "-n", "4"]).env("GRAPPE_EMULATED_HOSTS", "2");
    let (stderr, delay) = util::run_faulty(cmd, "kill:3");
    assert!(delay < 2.0, "job stopped {delay:.2} s after the death");
    assert!(stderr.contains("rank 3") && stderr.contains("signal 9"), "{stderr}");
}

#[test]
fn a_bad_emulated_host_count_is_a_clear_start_up_error() {
    let output = util::run_bounded(
        {
            let mut cmd = grappe_run(&["-n", "2"], "p2p_suite", &[]);
            cmd.env("GRAPPE_EMULATED_HOSTS", "0");
            cmd
        },
        LIMIT,
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success() && stderr.contains("GRAPPE_EMULATED_HOSTS=\"0\""), "{stderr}");
}
