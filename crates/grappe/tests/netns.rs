//! Jobs across real hosts, the hosts being network namespaces of this
//! machine (`scripts/emulated-hosts`): each its own network stack, host
//! name and /dev/shm, so that a runtime that took two of them for one host
//! would fail. MPICH's hydra, run on the first host, starts its proxies on
//! the others through `scripts/emulated-hosts-exec` as it would through
//! ssh. Slurm's `srun -N`, run on the first host, starts the ranks through
//! a slurmd on each host (`scripts/emulated-hosts slurm-start`) and gives
//! them PMI-2. Grappe finds everything by itself: its host identity from the
//! host name, its address from the host's interface.
//!
//! The point-to-point suite and the collectives across two and three hosts
//! under hydra and under Slurm, C programs built with `mpicc.mpich` on
//! grappe's MPI library, and a host lost in the middle of a job. Needs root: without it (or without network
//! namespaces) the tests fail, saying so.

mod util;

#[allow(dead_code)] // the library's tests use more of it
#[path = "../../grappe-mpi/tests/common/mod.rs"]
mod mpi_library;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use grappe_testkit::{describe, run_bounded, scratch};

const LIMIT: Duration = Duration::from_secs(60);

/// `scripts/NAME` of this repository.
fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts").join(name)
}

/// A cluster of hosts made for one test, taken down when dropped (also
/// when the test fails).
struct Cluster {
    name: String,
    hosts: usize,
}

impl Cluster {
    /// `hosts` hosts; `tag` tells apart the clusters of one test process.
    fn start(tag: char, hosts: usize) -> Cluster {
        let name = format!("g{}{tag}", std::process::id());
        // A cluster of this name can only be left over by a dead process
        // that had our pid: take it down first.
        let _ = emulated_hosts(&["stop", &name]);
        let output = emulated_hosts(&["start", &name, &hosts.to_string()]);
        assert!(
            output.status.success(),
            "cannot make the emulated hosts: these tests need root (network namespaces need CAP_SYS_ADMIN \
             and CAP_NET_ADMIN)\n{}",
            describe(&output)
        );
        Cluster { name, hosts }
    }

    fn host(&self, i: usize) -> String {
        assert!(i < self.hosts, "host {i} of a cluster of {}", self.hosts);
        format!("{}-h{i}", self.name)
    }

    /// The first `n` hosts, as hydra's `-hosts` takes them.
    fn host_list(&self, n: usize) -> String {
        (0..n).map(|i| self.host(i)).collect::<Vec<_>>().join(",")
    }

    /// `mpiexec.mpich -n ranks program args`, started on host 0 over the
    /// first `hosts` hosts, every proxy through the launcher (none forked
    /// directly), in a clean environment for grappe (no address, no
    /// emulated hosts inherited from the caller).
    fn mpiexec(&self, hosts: usize, ranks: usize, program: &[&OsStr]) -> Command {
        self.mpiexec_with(&[], hosts, ranks, program)
    }

    /// [`Cluster::mpiexec`] with more options for `mpiexec`.
    fn mpiexec_with(&self, options: &[&str], hosts: usize, ranks: usize, program: &[&OsStr]) -> Command {
        let mut cmd = Command::new(script("emulated-hosts"));
        cmd.args(["exec", &self.host(0)])
            .arg(util::system_command("mpiexec.mpich", "mpich"))
            .args(options)
            .args(["-launcher", "ssh", "-launcher-exec"])
            .arg(script("emulated-hosts-exec"))
            .args(["-hosts", &self.host_list(hosts), "-n", &ranks.to_string()])
            .args(program)
            .env("HYDRA_LAUNCHER_AUTOFORK", "0")
            .env_remove("GRAPPE_NET_ADDR")
            .env_remove("GRAPPE_EMULATED_HOSTS")
            .env_remove("GRAPPE_SHM_DIR");
        cmd
    }

    /// `grappe run --hosts LIST -n ranks program args`, started on host 0,
    /// every agent through `scripts/emulated-hosts-exec` as through ssh, in
    /// a clean environment for grappe.
    fn grappe_run(&self, hosts: &str, options: &[&str], program: &[&OsStr]) -> Command {
        let mut cmd = Command::new(script("emulated-hosts"));
        cmd.args(["exec", &self.host(0)])
            .arg(util::grappe())
            .args(["run", "--launcher-exec"])
            .arg(script("emulated-hosts-exec"))
            .args(["--hosts", hosts])
            .args(options)
            .args(program)
            .env_remove("GRAPPE_NET_ADDR")
            .env_remove("GRAPPE_EMULATED_HOSTS")
            .env_remove("GRAPPE_SHM_DIR");
        cmd
    }

    /// Runs a Slurm cluster on these hosts (`emulated-hosts slurm-start`);
    /// returns its `SLURM_CONF`. Taken down with the hosts.
    fn start_slurm(&self) -> PathBuf {
        let output = emulated_hosts(&["slurm-start", &self.name]);
        assert!(output.status.success(), "cannot start Slurm on cluster {}\n{}", self.name, describe(&output));
        PathBuf::from(String::from_utf8_lossy(&output.stdout).trim())
    }

    /// `salloc -N hosts --ntasks-per-node=per_host grappe run -n ranks program args` on host 0,
    /// against the Slurm of `conf`: grappe's launcher inside an allocation.
    fn salloc_grappe_run(&self, conf: &Path, hosts: usize, per_host: usize, program: &[&OsStr]) -> Command {
        let mut cmd = Command::new(script("emulated-hosts"));
        cmd.args(["exec", &self.host(0)])
            .arg(util::system_command("salloc", "slurm-wlm"))
            .args(["-N", &hosts.to_string(), &format!("--ntasks-per-node={per_host}"), "--time=2"])
            .arg(util::grappe())
            .args(["run", "-n", &(hosts * per_host).to_string()])
            .args(program);
        for_slurm(cmd, conf)
    }

    /// `srun -N hosts -n ranks --mpi=pmi2 program args` on host 0, against
    /// the Slurm of `conf`.
    fn srun(&self, conf: &Path, hosts: usize, ranks: usize, program: &[&OsStr]) -> Command {
        let mut cmd = Command::new(script("emulated-hosts"));
        cmd.args(["exec", &self.host(0)])
            .arg(util::system_command("srun", "slurm-wlm"))
            .args(["-N", &hosts.to_string(), "-n", &ranks.to_string()])
            .args(["--mpi=pmi2", "--time=2", "--kill-on-bad-exit=1"])
            .args(program);
        for_slurm(cmd, conf)
    }

    /// The processes running on host `i` (pid, command name).
    fn processes(&self, i: usize) -> Vec<(i32, String)> {
        let output = Command::new("ip").args(["netns", "pids", &self.host(i)]).output().expect("ip runs");
        String::from_utf8_lossy(&output.stdout)
            .split_whitespace()
            .filter_map(|pid| pid.parse().ok())
            .map(|pid: i32| (pid, std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default()))
            .map(|(pid, comm)| (pid, comm.trim().to_owned()))
            .collect()
    }

    /// How many processes of host `i` named `comm` run their ranks: set-up
    /// done, their second worker thread started.
    fn running(&self, i: usize, comm: &str) -> usize {
        let started = |pid: i32| {
            let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).into_iter().flatten().flatten();
            tasks
                .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
                .any(|c| c.trim() == "grappe-worker-1")
        };
        self.processes(i).iter().filter(|(pid, c)| c == comm && started(*pid)).count()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let output = emulated_hosts(&["stop", &self.name]);
        if !output.status.success() {
            eprintln!("cannot take down cluster {}: {}", self.name, describe(&output));
        }
    }
}

fn emulated_hosts(args: &[&str]) -> Output {
    Command::new(script("emulated-hosts"))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run scripts/emulated-hosts: {e}"))
}

fn passes(output: &Output, line: &str) {
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success() && stdout.contains(line), "expected {line:?}\n{}", describe(output));
}

fn example(name: &str) -> PathBuf {
    util::example(name)
}

/// `cmd` in a clean environment for grappe and Slurm, against the Slurm of
/// `conf`: no job or step of the caller's, no address or emulated hosts.
fn for_slurm(mut cmd: Command, conf: &Path) -> Command {
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("SLURM_") {
            cmd.env_remove(key);
        }
    }
    cmd.env("SLURM_CONF", conf)
        .env_remove("GRAPPE_NET_ADDR")
        .env_remove("GRAPPE_EMULATED_HOSTS")
        .env_remove("GRAPPE_SHM_DIR");
    cmd
}

#[test]
fn hydra_runs_the_suite_and_the_collectives_across_namespaces() {
    let cluster = Cluster::start('a', 3);
    let suite = example("p2p_suite");
    let output = run_bounded(cluster.mpiexec(2, 4, &[suite.as_os_str()]), LIMIT);
    passes(&output, "p2p suite passed on 4 ranks");
    let collectives = example("collectives_check");
    let output = run_bounded(cluster.mpiexec(3, 6, &[collectives.as_os_str(), "2".as_ref(), "11".as_ref()]), LIMIT);
    passes(&output, "collectives passed on 6 ranks (2 loops, 6 random cases of seed 11)");
}

/// grappe's own launcher across hosts: an agent per host through the
/// remote shell, ranks placed by slots (`h0:2,h1:2`) or in rounds, and
/// processes of thread ranks on three hosts.
#[test]
fn grappe_run_hosts_runs_the_suite_and_the_collectives_across_namespaces() {
    let cluster = Cluster::start('g', 3);
    let suite = example("p2p_suite");
    let two = format!("{}:2,{}:2", cluster.host(0), cluster.host(1));
    let output = run_bounded(cluster.grappe_run(&two, &["-n", "4"], &[suite.as_os_str()]), LIMIT);
    passes(&output, "p2p suite passed on 4 ranks");
    let collectives = example("collectives_check");
    let options = ["-n", "12", "--threads-per-process", "2", "--label"];
    let output = run_bounded(
        cluster.grappe_run(&cluster.host_list(3), &options, &[collectives.as_os_str(), "2".as_ref(), "12".as_ref()]),
        LIMIT,
    );
    passes(&output, "collectives passed on 12 ranks (2 loops, 6 random cases of seed 12)");
    for i in 0..3 {
        assert_eq!(cluster.processes(i).len(), 0, "host {i} kept processes: {:?}", cluster.processes(i));
    }
}

/// The same with the connections between hosts made on demand
/// (`GRAPPE_TCP_CONNECT=lazy`), and a host lost mid-job still ends it
/// within 2 s, naming it.
#[test]
fn connections_made_on_demand_run_jobs_and_a_lost_host_ends_them_across_namespaces() {
    let cluster = Cluster::start('l', 3);
    let on_demand = |mut cmd: Command| {
        cmd.env("GRAPPE_TCP_CONNECT", "lazy");
        cmd
    };
    let suite = example("p2p_suite");
    let two = format!("{}:2,{}:2", cluster.host(0), cluster.host(1));
    let output = run_bounded(on_demand(cluster.grappe_run(&two, &["-n", "4"], &[suite.as_os_str()])), LIMIT);
    passes(&output, "p2p suite passed on 4 ranks");
    let collectives = example("collectives_check");
    let options = ["-n", "12", "--threads-per-process", "2"];
    let program = [collectives.as_os_str(), "2".as_ref(), "14".as_ref()];
    let output = run_bounded(on_demand(cluster.grappe_run(&cluster.host_list(3), &options, &program)), LIMIT);
    passes(&output, "collectives passed on 12 ranks (2 loops, 6 random cases of seed 14)");
    drop(cluster);
    let cluster = Cluster::start('m', 2);
    let (delay, stderr) = lose_host_1_with(&cluster, false, &[("GRAPPE_TCP_CONNECT", "lazy")]);
    let host = cluster.host(1);
    assert!(stderr.contains(&format!("on host {host}")), "nobody named the lost host:\n{stderr}");
    assert!(delay < Duration::from_secs(2), "the job ended {delay:?} after\n{stderr}");
}

/// The same over libfabric (`GRAPPE_FABRIC=ofi:tcp;ofi_rxm`): each
/// process's endpoint bound to its host's own address, two hosts of two
/// processes, and three hosts of processes of two thread ranks.
#[cfg(feature = "libfabric")]
#[test]
fn grappe_run_hosts_runs_the_suite_and_the_collectives_over_libfabric_across_namespaces() {
    let cluster = Cluster::start('o', 3);
    let over_ofi = |mut cmd: Command| {
        cmd.env("GRAPPE_FABRIC", "ofi:tcp;ofi_rxm");
        cmd
    };
    let suite = example("p2p_suite");
    let two = format!("{}:2,{}:2", cluster.host(0), cluster.host(1));
    let output = run_bounded(over_ofi(cluster.grappe_run(&two, &["-n", "4"], &[suite.as_os_str()])), LIMIT);
    passes(&output, "p2p suite passed on 4 ranks");
    let collectives = example("collectives_check");
    let options = ["-n", "12", "--threads-per-process", "2"];
    let program = [collectives.as_os_str(), "2".as_ref(), "13".as_ref()];
    let output = run_bounded(over_ofi(cluster.grappe_run(&cluster.host_list(3), &options, &program)), LIMIT);
    passes(&output, "collectives passed on 12 ranks (2 loops, 6 random cases of seed 13)");
}

/// A host lost, its agent killed or its link taken down (its processes
/// alive but cut off, which only the heartbeats between hosts reveal):
/// `grappe run` ends the job within 2 s with a line naming the host and its
/// ranks, and no process is left on any host.
#[test]
fn grappe_run_hosts_ends_the_job_within_2s_when_a_host_is_lost() {
    for (name, link_down) in [('h', false), ('k', true)] {
        let cluster = Cluster::start(name, 2);
        let (delay, stderr) = lose_host_1(&cluster, link_down);
        let host = cluster.host(1);
        let named = (4..8).any(|r| stderr.contains(&format!("rank {r} on host {host} is lost")))
            || stderr.contains(&format!("on host {host}) was lost"))
            || stderr.contains(&format!("ranks 4-7 on host {host} are lost"))
            || stderr.contains(&format!("host {host} is cut off from the other hosts"));
        assert!(named, "link down {link_down}: nobody named the lost host:\n{stderr}");
        assert!(delay < Duration::from_secs(2), "link down {link_down}: the job ended {delay:?} after\n{stderr}");
        eprintln!("link down {link_down}: the job ended {delay:?} after the host was lost:\n{stderr}");
        let deadline = Instant::now() + Duration::from_secs(5);
        while (0..2).any(|i| !cluster.processes(i).is_empty()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        for i in 0..2 {
            assert!(cluster.processes(i).is_empty(), "host {i} kept processes: {:?}", cluster.processes(i));
        }
    }
}

/// Runs a long job on 2 hosts of `cluster` under `grappe run --hosts`,
/// then loses host 1: its agent killed, or its link down. Returns how long
/// the job took to end after that, and its stderr; the job must fail.
fn lose_host_1(cluster: &Cluster, link_down: bool) -> (Duration, String) {
    lose_host_1_with(cluster, link_down, &[])
}

/// [`lose_host_1`], the job run with the settings `env`.
fn lose_host_1_with(cluster: &Cluster, link_down: bool, env: &[(&str, &str)]) -> (Duration, String) {
    let collectives = example("collectives_check");
    let hosts = format!("{}:2,{}:2", cluster.host(0), cluster.host(1));
    // Two processes of two thread ranks (two workers) per host: ranks 0-3
    // on host 0, 4-7 on host 1.
    let options = ["-n", "8", "--threads-per-process", "2"];
    let mut cmd = cluster.grappe_run(&hosts, &options, &[collectives.as_os_str(), "1000000000".as_ref()]);
    cmd.env("GRAPPE_WORKERS", "2").envs(env.iter().copied());
    let job = std::thread::spawn(move || {
        let output = run_bounded(cmd, LIMIT);
        (output, Instant::now())
    });
    let comm = "collectives_che"; // the kernel keeps 15 characters
    let started = Instant::now() + LIMIT / 2;
    while cluster.running(0, comm) < 2 || cluster.running(1, comm) < 2 {
        assert!(Instant::now() < started && !job.is_finished(), "the job never ran on both hosts");
        std::thread::sleep(Duration::from_millis(50));
    }
    let lost_at = Instant::now();
    if link_down {
        let down = Command::new("ip").args(["-n", &cluster.host(1), "link", "set", "veth0", "down"]).status();
        assert!(down.expect("ip runs").success(), "cannot take host 1's link down");
    } else {
        let agents: Vec<i32> =
            cluster.processes(1).into_iter().filter(|(_, c)| c == "grappe").map(|(p, _)| p).collect();
        assert_eq!(agents.len(), 1, "one agent on host 1: {:?}", cluster.processes(1));
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(agents[0]), nix::sys::signal::Signal::SIGKILL).unwrap();
    }
    let (output, ended_at) = job.join().expect("the job's thread");
    assert!(!output.status.success(), "the job survived the loss of its host: {}", describe(&output));
    (ended_at.saturating_duration_since(lost_at), String::from_utf8_lossy(&output.stderr).into_owned())
}

/// Slurm's `srun -N` across hosts: ranks started by each host's slurmd
/// (with its host name and /dev/shm), PMI-2 from Slurm. `slurm-stop` then
/// leaves no Slurm daemon on any host.
#[test]
fn srun_runs_the_suite_and_the_collectives_across_namespaces() {
    let cluster = Cluster::start('s', 3);
    let conf = cluster.start_slurm();
    let suite = example("p2p_suite");
    let output = run_bounded(cluster.srun(&conf, 2, 4, &[suite.as_os_str()]), LIMIT);
    passes(&output, "p2p suite passed on 4 ranks");
    let collectives = example("collectives_check");
    let output = run_bounded(cluster.srun(&conf, 3, 6, &[collectives.as_os_str(), "2".as_ref(), "13".as_ref()]), LIMIT);
    passes(&output, "collectives passed on 6 ranks (2 loops, 6 random cases of seed 13)");

    // `grappe run` inside an allocation runs across its nodes, as many per node as Slurm says.
    let with_host = format!("hostname; exec {}", suite.display());
    let program: [&OsStr; 3] = ["sh".as_ref(), "-c".as_ref(), with_host.as_ref()];
    let output = run_bounded(cluster.salloc_grappe_run(&conf, 2, 2, &program), LIMIT);
    passes(&output, "p2p suite passed on 4 ranks");
    let stdout = String::from_utf8_lossy(&output.stdout);
    for host in [cluster.host(0), cluster.host(1)] {
        assert_eq!(stdout.lines().filter(|line| *line == host).count(), 2, "two ranks on {host}:\n{stdout}");
    }

    let output = emulated_hosts(&["slurm-stop", &cluster.name]);
    assert!(output.status.success(), "slurm-stop {}: {}", cluster.name, describe(&output));
    let daemons = ["slurmctld", "slurmd", "slurmstepd"];
    for i in 0..cluster.hosts {
        let left: Vec<_> = cluster.processes(i).into_iter().filter(|(_, c)| daemons.contains(&c.as_str())).collect();
        assert!(left.is_empty(), "slurm-stop left Slurm running on {}: {left:?}", cluster.host(i));
    }
}

/// C programs built with MPICH's compiler, on grappe's library: the
/// point-to-point and collectives conformance tests of grappe-mpi.
#[test]
fn c_programs_on_grappe_s_library_run_across_namespaces() {
    let prefix = mpi_library::installed();
    let dir = scratch("netns-c");
    let cluster = Cluster::start('b', 2);
    for test in ["p2p", "coll"] {
        let binary = compile_with_mpich(test, dir.path());
        let mut cmd = cluster.mpiexec(2, 4, &[binary.as_os_str()]);
        cmd.env("LD_LIBRARY_PATH", prefix.join("lib"));
        let output = run_bounded(cmd, LIMIT);
        passes(&output, &format!("{test}: all checks passed on 4 ranks"));
        let text = describe(&output);
        assert!(!text.lines().any(|l| l.starts_with("FAIL")), "{text}");
    }
}

/// Hosts that share a host name (and a boot id), each with its own network
/// and /dev/shm, as containers on one machine may: grappe tells them apart
/// by the file system of their segments instead of taking them for one
/// host whose segment half of its processes cannot find.
#[test]
fn hosts_that_share_a_host_name_are_told_apart_by_their_shared_memory() {
    let cluster = Cluster::start('e', 2);
    let suite = example("p2p_suite");
    // Hydra cannot find its own host by name: it is told the interface.
    let mut cmd = cluster.mpiexec_with(&["-iface", "veth0"], 2, 4, &[suite.as_os_str()]);
    cmd.env("EMULATED_HOSTS_HOSTNAME", "shared");
    let output = run_bounded(cmd, LIMIT);
    passes(&output, "p2p suite passed on 4 ranks");
}

/// Compiles grappe-mpi's `tests/c/NAME.c` with `mpicc.mpich` into `dir`.
fn compile_with_mpich(name: &str, dir: &Path) -> PathBuf {
    let source = mpi_library::root().join("crates/grappe-mpi/tests/c").join(format!("{name}.c"));
    let binary = dir.join(name);
    let mut cmd = Command::new(util::system_command("mpicc.mpich", "mpich"));
    cmd.args(["-g", "-O2", "-o"]).arg(&binary).arg(&source);
    let output = run_bounded(cmd, LIMIT);
    assert!(output.status.success(), "mpicc.mpich {name}.c:\n{}", describe(&output));
    binary
}

/// Every process of host 1 killed while a job runs across hosts 0 and 1
/// (its ranks and hydra's proxy, as if the host had crashed): the job ends,
/// failed, at once, and says what was lost. Whoever notices first reports:
/// the ranks of host 0 (grappe: "rank R on host H is lost"), or hydra,
/// whose `mpiexec` stops as soon as a proxy's connection closes ("assert
/// (!closed) failed"), often before the ranks' last words are forwarded.
#[test]
fn a_host_lost_mid_job_ends_it_at_once_and_says_so() {
    let cluster = Cluster::start('c', 2);
    let collectives = example("collectives_check");
    // Two processes of two thread ranks (two workers) per host: ranks 0, 1,
    // 4, 5 on host 0, the others on host 1.
    let mut cmd = cluster.mpiexec(2, 4, &[collectives.as_os_str(), "1000000000".as_ref()]);
    cmd.env("GRAPPE_RANKS_PER_PROCESS", "2").env("GRAPPE_WORKERS", "2");
    let job = std::thread::spawn(move || {
        let output = run_bounded(cmd, LIMIT);
        (output, Instant::now())
    });
    let comm = "collectives_che"; // the kernel keeps 15 characters
    let started = Instant::now() + LIMIT / 2;
    while cluster.running(0, comm) < 2 || cluster.running(1, comm) < 2 {
        assert!(Instant::now() < started && !job.is_finished(), "the job never ran on both hosts");
        std::thread::sleep(Duration::from_millis(50));
    }
    let killed_at = Instant::now();
    for (pid, _) in cluster.processes(1) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
    }
    let (output, ended_at) = job.join().expect("the job's thread");
    let delay = ended_at.saturating_duration_since(killed_at);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "the job survived the loss of its host: {}", describe(&output));
    let host = cluster.host(1);
    let grappe_said = [2, 3, 6, 7].iter().any(|r| stderr.contains(&format!("rank {r} on host {host} is lost")));
    let hydra_said = stderr.contains("assert (!closed) failed");
    assert!(grappe_said || hydra_said, "nobody said a host was lost:\n{stderr}");
    assert!(delay < Duration::from_secs(10), "the job ended {delay:?} after its host was lost\n{stderr}");
    eprintln!("the job ended {delay:?} after the kill; grappe said so: {grappe_said}, hydra: {hydra_said}");
}

#[test]
fn a_host_whose_link_goes_down_is_named_lost_within_2s_under_hydra() {
    link_down_names_the_lost_host('d', None);
}

/// The same over libfabric: the heartbeats between hosts do not depend on
/// the fabric.
#[cfg(feature = "libfabric")]
#[test]
fn a_host_whose_link_goes_down_over_libfabric_is_named_lost_within_2s() {
    link_down_names_the_lost_host('l', Some("ofi:tcp;ofi_rxm"));
}

/// Takes host 1's link down mid-job (`fabric`: `GRAPPE_FABRIC`, the
/// default if `None`) and waits for a rank to name a rank of host 1 lost.
fn link_down_names_the_lost_host(tag: char, fabric: Option<&str>) {
    // The host's processes live on but its network is gone (a cut cable):
    // nothing closes the connections, and only the heartbeats between hosts
    // (a second of silence by default) tell host 0. Its line is awaited on
    // the job's stderr; hydra, whose proxy on host 1 is cut off too, may
    // then wait forever, so the job is stopped by the test.
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let cluster = Cluster::start(tag, 2);
    let collectives = example("collectives_check");
    // A process of two thread ranks (two workers) per host: ranks 0 and 1
    // on host 0, 2 and 3 on host 1.
    let mut cmd = cluster.mpiexec(2, 2, &[collectives.as_os_str(), "1000000000".as_ref()]);
    cmd.env("GRAPPE_RANKS_PER_PROCESS", "2").env("GRAPPE_WORKERS", "2");
    if let Some(fabric) = fabric {
        cmd.env("GRAPPE_FABRIC", fabric);
    }
    cmd.stderr(Stdio::piped()).stdout(Stdio::null());
    let mut job = cmd.spawn().expect("mpiexec starts");
    let (lines, said) = std::sync::mpsc::channel();
    let stderr = job.stderr.take().expect("piped");
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = lines.send((line, Instant::now()));
        }
    });
    let comm = "collectives_che"; // the kernel keeps 15 characters
    let started = Instant::now() + LIMIT / 2;
    while cluster.running(0, comm) < 1 || cluster.running(1, comm) < 1 {
        assert!(Instant::now() < started, "the job never ran on both hosts");
        std::thread::sleep(Duration::from_millis(50));
    }
    let down = Command::new("ip").args(["-n", &cluster.host(1), "link", "set", "veth0", "down"]).status();
    assert!(down.expect("ip runs").success(), "cannot take host 1's link down");
    let cut_at = Instant::now();
    let host = cluster.host(1);
    let lost = [
        format!("rank 2 on host {host} is lost"),
        format!("ranks 2-3 on host {host} are lost"),
        format!("host {host} is cut off from the other hosts"),
    ];
    let mut seen = Vec::new();
    let named_at = loop {
        match said.recv_timeout(Duration::from_secs(15)) {
            Ok((line, at)) if lost.iter().any(|l| line.contains(l)) => break at,
            Ok((line, _)) => seen.push(line),
            Err(_) => {
                let _ = job.kill();
                panic!("no rank said one of {lost:?} within 15 s of the cut; stderr:\n{}", seen.join("\n"));
            }
        }
    };
    let _ = job.kill();
    let _ = job.wait();
    let delay = named_at.saturating_duration_since(cut_at);
    assert!(delay < Duration::from_secs(2), "the lost host was named {delay:?} after its link went down");
    eprintln!("host 1 was named lost {delay:?} after its link went down");
}

#[test]
fn a_fifth_of_the_packets_lost_on_one_link_slows_a_job_but_changes_no_result() {
    // nftables drops 20% of the TCP packets host 1 sends (netem does not
    // exist here): TCP retransmits, grappe's connections must hold (its
    // default loss timeout is far above the retransmissions' back-off),
    // and every check of the suite and the collectives still passes.
    let cluster = Cluster::start('e', 2);
    let host = cluster.host(1);
    for rule in [
        &["add", "table", "inet", "loss"][..],
        &["add", "chain", "inet", "loss", "out", "{ type filter hook output priority 0; }"],
        &[
            "add", "rule", "inet", "loss", "out", "meta", "l4proto", "tcp", "numgen", "random", "mod", "100", "<",
            "20", "drop",
        ],
    ] {
        let status = Command::new("ip")
            .args(["netns", "exec", &host])
            .arg(util::system_command("nft", "nftables"))
            .args(rule)
            .status();
        assert!(status.expect("nft runs").success(), "nft {rule:?} failed in {host}");
    }
    let suite = example("p2p_suite");
    passes(&run_bounded(cluster.mpiexec(2, 4, &[suite.as_os_str()]), LIMIT), "p2p suite passed on 4 ranks");
    let collectives = example("collectives_check");
    let output = run_bounded(cluster.mpiexec(2, 4, &[collectives.as_os_str(), "2".as_ref()]), LIMIT);
    passes(&output, "collectives passed on 4 ranks");
}

/// The fault-tolerance kill test across namespaces: `ft_ring` (messages
/// crossing the checkpoint points, here between hosts over TCP) under
/// `grappe run --hosts` with checkpoints; a rank of host 1 is killed after
/// the first committed wave; the job restarts from the wave and ends with
/// the result of the fault-free run.
#[test]
fn a_checkpointed_job_across_namespaces_survives_a_killed_rank_with_the_same_result() {
    let cluster = Cluster::start('f', 2);
    let ring = example("ft_ring");
    let hosts = format!("{}:2,{}:2", cluster.host(0), cluster.host(1));
    let reference = run_bounded(cluster.grappe_run(&hosts, &["-n", "4"], &[ring.as_os_str(), "20000".as_ref()]), LIMIT);
    let checksum = |output: &Output| {
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let line = stdout.lines().find(|l| l.starts_with("ft_ring ")).map(str::to_owned);
        line.and_then(|l| l.split(" saved_messages=").next().map(str::to_owned))
    };
    let expected = checksum(&reference).unwrap_or_else(|| panic!("no result\n{}", describe(&reference)));
    let dir = scratch("netns-ft");
    let gate = dir.join("gate");
    let ckpt = dir.join("ckpt");
    let options = ["-n", "4", "--checkpoint-every", "40ms", "--checkpoint-dir", ckpt.to_str().unwrap()];
    let mut cmd = cluster.grappe_run(&hosts, &options, &[ring.as_os_str(), "20000".as_ref()]);
    cmd.env("GRAPPE_FT_HOLD", &gate);
    let job = std::thread::spawn(move || run_bounded(cmd, LIMIT));
    let deadline = Instant::now() + LIMIT / 2;
    while !ckpt.join("COMMITTED").exists() {
        assert!(Instant::now() < deadline && !job.is_finished(), "no wave was committed");
        std::thread::sleep(Duration::from_millis(10));
    }
    let victim = cluster.processes(1).into_iter().find(|(_, comm)| comm == "ft_ring").expect("a rank on host 1").0;
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(victim), nix::sys::signal::Signal::SIGKILL).unwrap();
    std::fs::write(&gate, "").unwrap();
    let output = job.join().expect("the job's thread");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the job did not survive: {}", describe(&output));
    assert!(stderr.contains("grappe: restarted from checkpoint wave"), "{stderr}");
    assert_eq!(checksum(&output), Some(expected), "the result changed\n{stderr}");
}

/// `grappe run --hosts --trace DIR` with DIR in /dev/shm, which is private
/// to each host here (nothing shared between the hosts' files): the
/// launcher gathers host 1's rank files into its own DIR, so the trace
/// tools, run on host 0 in the launcher's session, see every rank, each
/// with its host, and estimate the clocks of host 1's ranks.
#[test]
fn grappe_run_hosts_gathers_the_hosts_traces_into_the_launcher_s_directory() {
    let cluster = Cluster::start('t', 2);
    let hosts = format!("{}:2,{}:2", cluster.host(0), cluster.host(1));
    let run = cluster.grappe_run(&hosts, &["-n", "4", "--trace", "/dev/shm/trace"], &[example("jacobi").as_os_str()]);
    let grappe = util::grappe();
    let line = format!(
        "env -u GRAPPE_NET_ADDR -u GRAPPE_EMULATED_HOSTS -u GRAPPE_SHM_DIR {run} 64 200 && \
         {grappe} trace info /dev/shm/trace && {grappe} trace clock /dev/shm/trace",
        run = shell_words(&run),
        grappe = grappe.display()
    );
    let mut cmd = Command::new(script("emulated-hosts"));
    cmd.args(["exec", &cluster.host(0), "sh", "-c", &line]);
    let output = run_bounded(cmd, LIMIT);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}", describe(&output));
    assert!(stdout.contains("files:    4 complete"), "{stdout}");
    let (h0, h1) = (cluster.host(0), cluster.host(1));
    assert!(stdout.contains(&format!("hosts:    {h0} (ranks 0-1), {h1} (ranks 2-3)")), "{stdout}");
    assert!(stdout.contains("ranks 2-3: estimated"), "{stdout}");
}

/// The words of `cmd` (past `emulated-hosts exec HOST`) as one shell line.
fn shell_words(cmd: &Command) -> String {
    let words = cmd.get_args().skip(2).map(|arg| format!("'{}'", arg.to_string_lossy().replace('\'', "'\\''")));
    words.collect::<Vec<_>>().join(" ")
}
