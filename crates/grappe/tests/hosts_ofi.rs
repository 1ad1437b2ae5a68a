//! Jobs across hosts over libfabric (`GRAPPE_FABRIC=ofi:tcp;ofi_rxm`),
//! emulated on this machine (`GRAPPE_EMULATED_HOSTS`: each group of
//! processes is a host with its own shared-memory segment, the hosts
//! joined by libfabric over the loopback interface): the point-to-point
//! suite and the collectives with shared memory inside a host, a rank
//! killed on one host stopping the job within two seconds, and the
//! settings that cannot work refused at start-up on every rank.
//!
//! Built with the cargo feature `libfabric` only (`scripts/test` runs it).

mod across_hosts;
mod util;

use std::process::Command;

use across_hosts::{Fabric, LIMIT, grappe_run, passes};

const FABRIC: &str = "ofi:tcp;ofi_rxm";
const OFI: Fabric = Fabric(Some(FABRIC));

fn across(hosts: usize, cmd: Command) -> std::process::Output {
    OFI.across(hosts, cmd)
}

#[test]
fn the_suite_runs_on_two_hosts_of_two_processes() {
    across_hosts::the_suite_runs_on_two_hosts_of_two_processes(OFI);
}

/// Thread ranks share their process's endpoint.
#[test]
fn the_suite_runs_on_three_hosts_of_hybrid_processes() {
    across_hosts::the_suite_runs_on_three_hosts_of_hybrid_processes(OFI);
}

#[test]
fn collectives_split_across_hosts_give_the_right_results() {
    across_hosts::collectives_split_across_hosts_give_the_right_results(OFI, &[(2, "5"), (4, "8")]);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 6, ..Default::default() })]

    /// See [`across_hosts::random_splits_across_hosts_give_the_right_results`].
    #[test]
    fn random_splits_across_hosts_give_the_right_results(
        seed in 0u64..1 << 32,
        hosts in 2usize..=4,
        per_host in 1usize..=4,
        threads in proptest::bool::ANY,
    ) {
        across_hosts::random_splits_across_hosts_give_the_right_results(OFI, seed, hosts, per_host, threads)?;
    }
}

/// Ranks that sleep as soon as they wait (no spinning, no yielding) and
/// whose sleeps last ten minutes: every wait ends only when the endpoint's
/// descriptor, its arrival hook or a peer of the host wakes the rank, so a
/// lost wake-up leaves the job asleep past the test's limit. Four thread
/// ranks share each host's endpoint (one process per host), then four
/// processes have one each.
#[test]
fn ranks_asleep_on_the_endpoint_are_woken_for_every_message() {
    for layout in [&["-n", "8", "--threads-per-process", "4"][..], &["-n", "8"][..]] {
        let mut cmd = grappe_run(layout, "collectives_check", &["5", "21"]);
        cmd.env("GRAPPE_SPIN_ITERS", "0").env("GRAPPE_YIELD_US", "0").env("GRAPPE_SLEEP_MS", "600000");
        let output = across(2, cmd);
        passes(&output, "collectives passed on 8 ranks (5 loops, 6 random cases of seed 21)");
    }
}

#[test]
fn large_messages_cross_hosts_whole() {
    // 1 MiB and 16 MiB messages: many fragments each, past the link's
    // credits, both ways.
    let mut cmd = grappe_run(&["-n", "2"], "pingpong", &[]);
    cmd.env("PINGPONG_SIZES", "8,1048576,16777216").env("PINGPONG_ITERS", "5");
    let output = across(2, cmd);
    passes(&output, "pingpong bytes=16777216");
}

#[test]
fn mpich_hydra_launches_a_job_across_hosts() {
    across_hosts::mpich_hydra_launches_a_job_across_hosts(OFI);
}

#[test]
fn a_rank_killed_on_one_host_stops_the_job_within_two_seconds() {
    across_hosts::a_rank_killed_on_one_host_stops_the_job_within_two_seconds(OFI);
}

/// The lines of `stderr` in which a process says it cannot start. Each
/// process finds the setting wrong before it waits for any other, but the
/// launcher stops the job at the first report: how many others report
/// first depends on the machine, so a test asks for one and checks all.
fn start_failures(stderr: &str, processes: usize) -> Vec<String> {
    (0..processes)
        .filter_map(|p| {
            let prefix = format!("grappe: process {p} cannot start the job: ");
            stderr.lines().find(|l| l.starts_with(&prefix)).map(str::to_owned)
        })
        .collect()
}

#[test]
fn a_provider_that_is_not_there_fails_every_process_naming_the_setting_and_the_providers() {
    let mut cmd = grappe_run(&["-n", "4"], "p2p_suite", &[]);
    cmd.env("GRAPPE_EMULATED_HOSTS", "2").env("GRAPPE_FABRIC", "ofi:no-such-provider");
    let output = util::run_bounded(cmd, LIMIT);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{}", util::describe(&output));
    let failures = start_failures(&stderr, 4);
    assert!(!failures.is_empty(), "no process said why:\n{stderr}");
    for line in failures {
        assert!(line.contains("GRAPPE_FABRIC=ofi with provider \"no-such-provider\""), "{line}");
        assert!(
            line.contains("providers of reliable datagram endpoints here: ") && line.contains("tcp;ofi_rxm"),
            "{line}"
        );
    }
}

#[test]
fn faults_emulated_in_the_tcp_links_are_refused_with_libfabric() {
    let mut cmd = grappe_run(&["-n", "2"], "p2p_suite", &[]);
    cmd.env("GRAPPE_NET_DELAY_US", "2000");
    let output = across(2, cmd);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{}", util::describe(&output));
    let failures = start_failures(&stderr, 2);
    assert!(!failures.is_empty(), "no process said why:\n{stderr}");
    let named = "GRAPPE_NET_DELAY_US=\"2000\": expected nothing with GRAPPE_FABRIC=ofi";
    assert!(failures.iter().all(|l| l.contains(named)), "{failures:?}");
}

/// libfabric's links are made at start-up: connections on demand are
/// TCP's, and asking for them with libfabric stops the start on every rank.
#[test]
fn connections_on_demand_are_refused_with_libfabric() {
    let mut cmd = grappe_run(&["-n", "2"], "p2p_suite", &[]);
    cmd.env("GRAPPE_TCP_CONNECT", "lazy");
    let output = across(2, cmd);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{}", util::describe(&output));
    let failures = start_failures(&stderr, 2);
    assert!(!failures.is_empty(), "no process said why:\n{stderr}");
    let named = "GRAPPE_TCP_CONNECT=\"lazy\": expected eager with GRAPPE_FABRIC=ofi";
    assert!(failures.iter().all(|l| l.contains(named)), "{failures:?}");
}
