//! `grappe run --hosts` end to end on this machine: the "remote shell" is a script that runs
//! the agent here (as hydra's fork launcher does) and logs which host it was asked for and the
//! agent's pid, so the tests can see placement, kill a host's agent and check the clean-up.
//! Jobs across real hosts (network namespaces) are in `crates/grappe/tests/netns.rs`.

#[path = "../../grappe-launch/tests/support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};
use support::{assert_all_gone, describe, ok_count, probe, probe_lines, run_bounded};

const GRAPPE: &str = env!("CARGO_BIN_EXE_grappe");
const LIMIT: Duration = Duration::from_secs(60);

/// A directory with the fork "remote shell" and its log.
struct Shell {
    dir: PathBuf,
}

impl Shell {
    fn new(name: &str) -> Shell {
        let dir = std::env::temp_dir().join(format!("grappe-hosts-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let script = dir.join("fork-shell");
        let log = dir.join("log");
        // Called as `fork-shell HOST AGENT agent`: logs the host and its own pid, which `exec`
        // hands to the agent.
        let text = format!("#!/bin/sh\necho \"$1 $$\" >> '{}'\nshift\nexec \"$@\"\n", log.display());
        std::fs::write(&script, text).unwrap();
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        Shell { dir }
    }

    fn script(&self) -> PathBuf {
        self.dir.join("fork-shell")
    }

    /// `grappe run --launcher-exec fork-shell <args>`.
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(GRAPPE);
        command.arg("run").arg("--launcher-exec").arg(self.script()).args(args);
        command
    }

    /// (host, agent pid) of every agent started so far.
    fn agents(&self) -> Vec<(String, i32)> {
        let log = std::fs::read_to_string(self.dir.join("log")).unwrap_or_default();
        log.lines()
            .filter_map(|line| {
                let (host, pid) = line.split_once(' ')?;
                Some((host.to_owned(), pid.parse().ok()?))
            })
            .collect()
    }
}

impl Drop for Shell {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn probe_path() -> String {
    probe().display().to_string()
}

fn stderr_of(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn processes_run_on_their_hosts_with_labelled_output_and_one_agent_per_host() {
    let shell = Shell::new("ok");
    let output = run_bounded(shell.command(&["-n", "5", "--hosts", "a:2,b,c:4", "--label", &probe_path()]), LIMIT);
    assert!(output.status.success(), "{}", describe(&output));
    assert_eq!(ok_count(&output.stdout), 5, "{}", describe(&output));
    let lines = probe_lines(&output.stdout);
    assert!(lines.iter().all(|l| l.size == 5 && l.kind == "pmi1"), "{lines:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    for rank in 0..5 {
        assert!(stdout.contains(&format!("[{rank}] pmi-probe: rank {rank} of 5")), "{stdout}");
    }
    let mut hosts: Vec<String> = shell.agents().into_iter().map(|(host, _)| host).collect();
    hosts.sort();
    assert_eq!(hosts, ["a", "b", "c"], "one agent per host with processes");
    assert_all_gone(&lines.iter().map(|l| l.pid).collect::<Vec<_>>());
}

#[test]
fn this_host_s_agent_starts_without_the_remote_shell_unless_told() {
    let shell = Shell::new("autofork");
    let output = run_bounded(shell.command(&["-n", "4", "--hosts", "localhost:2,b:2", &probe_path()]), LIMIT);
    assert!(output.status.success(), "{}", describe(&output));
    assert_eq!(ok_count(&output.stdout), 4, "{}", describe(&output));
    let hosts: Vec<String> = shell.agents().into_iter().map(|(host, _)| host).collect();
    assert_eq!(hosts, ["b"], "the remote shell was asked for this host");

    let shell = Shell::new("no-autofork");
    let args = ["-n", "4", "--no-autofork", "--hosts", "localhost:2,b:2", &probe_path()];
    let output = run_bounded(shell.command(&args), LIMIT);
    assert!(output.status.success(), "{}", describe(&output));
    let mut hosts: Vec<String> = shell.agents().into_iter().map(|(host, _)| host).collect();
    hosts.sort();
    assert_eq!(hosts, ["b", "localhost"]);
}

/// The failing process is named with its host: this is where placement shows.
fn failing_host(args: &[&str], fail: &str) -> String {
    let shell = Shell::new(&format!("place-{fail}"));
    let mut full = args.to_vec();
    let probe = probe_path();
    full.extend([probe.as_str(), "--fail", fail]);
    let output = run_bounded(shell.command(&full), LIMIT);
    assert_eq!(output.status.code(), Some(3), "{}", describe(&output));
    let stderr = stderr_of(&output);
    let line = stderr.lines().find(|l| l.contains("exited with status 3")).unwrap_or_else(|| panic!("{stderr}"));
    line.split(" on host ").nth(1).and_then(|rest| rest.split(')').next()).unwrap_or_default().to_owned()
}

#[test]
fn processes_fill_the_slots_in_order_then_round_robin_and_ppn_overrides_slots() {
    assert_eq!(failing_host(&["-n", "4", "--hosts", "a:2,b"], "2:exit3"), "b");
    assert_eq!(failing_host(&["-n", "4", "--hosts", "a:2,b"], "3:exit3"), "a", "past the end: a again");
    assert_eq!(failing_host(&["-n", "4", "--hosts", "a:3,b", "--ppn", "1"], "1:exit3"), "b");
}

#[test]
fn a_hostfile_gives_the_hosts_and_their_slots() {
    let shell = Shell::new("hostfile");
    let hostfile = shell.dir.join("hosts");
    std::fs::write(&hostfile, "# two nodes\nn1 slots=1\nn2:3\n").unwrap();
    let hostfile = hostfile.display().to_string();
    let output =
        run_bounded(shell.command(&["-n", "2", "--hostfile", &hostfile, &probe_path(), "--fail", "1:exit3"]), LIMIT);
    let stderr = stderr_of(&output);
    assert!(stderr.contains("rank 1 (pid") && stderr.contains("on host n2) exited with status 3"), "{stderr}");
}

#[test]
fn a_host_whose_agent_is_killed_ends_the_job_within_2s_naming_the_host_and_its_ranks() {
    let shell = Shell::new("killed");
    // Rank 0 hangs after the fence, so the job lives until the agent of host b dies.
    let mut job = shell.command(&["-n", "4", "--hosts", "a:2,b:2", &probe_path(), "--fail", "0:hang"]);
    job.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let child = job.spawn().unwrap();
    let deadline = Instant::now() + LIMIT;
    let agent_of_b = loop {
        let found = shell.agents().into_iter().find(|(host, _)| host == "b");
        let probes_running = shell.agents().len() == 2 && probes_alive(&shell) >= 4;
        if let (Some((_, pid)), true) = (found, probes_running) {
            break pid;
        }
        assert!(Instant::now() < deadline, "the job never started on both hosts");
        std::thread::sleep(Duration::from_millis(20));
    };
    std::thread::sleep(Duration::from_millis(200)); // past the fence: the ranks wait in rank 0's hang
    let killed_at = Instant::now();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(agent_of_b), nix::sys::signal::Signal::SIGKILL).unwrap();
    let output = child.wait_with_output().unwrap();
    let delay = killed_at.elapsed();
    let stderr = stderr_of(&output);
    assert_eq!(output.status.code(), Some(1), "{}", describe(&output));
    assert!(delay < Duration::from_secs(2), "the job ended {delay:?} after the host was lost\n{stderr}");
    let line = stderr.lines().find(|l| l.contains("was lost with its host")).unwrap_or_else(|| panic!("{stderr}"));
    assert!(line.contains("on host b)") && (line.contains("rank 2 ") || line.contains("rank 3 ")), "{line}");
    // The killed agent's processes die of their parent-death signal, as the kernel gets to it.
    let lines = probe_lines(&output.stdout);
    let pids: Vec<u32> = lines.iter().map(|l| l.pid).collect();
    let deadline = Instant::now() + Duration::from_secs(5);
    while pids.iter().any(|pid| alive(*pid)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left: Vec<&u32> = pids.iter().filter(|pid| alive(**pid)).collect();
    assert!(left.is_empty(), "processes {left:?} outlived their host's agent");
}

/// Whether `pid` runs (a zombie has ended: only its parent has not reaped it yet).
fn alive(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next());
    matches!(state, Some(state) if state != "Z" && state != "X")
}

/// How many pmi-probe processes run that descend from this test's agents.
fn probes_alive(shell: &Shell) -> usize {
    let agents: Vec<i32> = shell.agents().into_iter().map(|(_, pid)| pid).collect();
    let Ok(entries) = std::fs::read_dir("/proc") else { return 0 };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
            let parent: i32 = after_name.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
            stat.contains("(pmi-probe)") && agents.contains(&parent)
        })
        .count()
}

#[test]
fn the_timeout_stops_the_processes_of_every_host() {
    let shell = Shell::new("timeout");
    let output = run_bounded(
        shell.command(&["-n", "4", "--hosts", "a,b", "--timeout", "1", &probe_path(), "--fail", "0:hang"]),
        LIMIT,
    );
    assert_eq!(output.status.code(), Some(124), "{}", describe(&output));
    let lines = probe_lines(&output.stdout);
    assert_eq!(lines.len(), 4, "{}", describe(&output));
    assert_all_gone(&lines.iter().map(|l| l.pid).collect::<Vec<_>>());
    for (_, agent) in shell.agents() {
        assert!(!Path::new(&format!("/proc/{agent}")).exists(), "agent {agent} was left behind");
    }
}

#[test]
fn a_program_missing_on_a_host_or_an_unreachable_host_is_a_clear_error() {
    let shell = Shell::new("errors");
    let output = run_bounded(shell.command(&["-n", "2", "--hosts", "a,b", "./no-such-program"]), LIMIT);
    assert_eq!(output.status.code(), Some(127), "{}", describe(&output));
    let stderr = stderr_of(&output);
    // Both hosts miss the program; whichever agent reports first ends the job.
    assert!(
        ["a", "b"].iter().any(
            |host| stderr.contains(&format!("grappe: host {host}: cannot execute ./no-such-program: no such file"))
        ),
        "{stderr}"
    );

    let unreachable = shell.dir.join("no-route");
    std::fs::write(
        &unreachable,
        "#!/bin/sh\necho \"ssh: connect to host $1 port 22: No route to host\" >&2\nexit 255\n",
    )
    .unwrap();
    std::fs::set_permissions(&unreachable, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut command = Command::new(GRAPPE);
    command.arg("run").arg("--launcher-exec").arg(&unreachable).args(["-n", "2", "--hosts", "far", &probe_path()]);
    let output = run_bounded(command, LIMIT);
    assert_eq!(output.status.code(), Some(1), "{}", describe(&output));
    let stderr = stderr_of(&output);
    assert!(stderr.contains("grappe: host far: ssh: connect to host far port 22: No route to host"), "{stderr}");
    assert!(stderr.contains("grappe: host far: its agent's connection closed"), "{stderr}");

    let output = run_bounded(shell.command(&["-n", "2", "--hosts", "a", "--agent", "/nonexistent/grappe", "p"]), LIMIT);
    assert_eq!(output.status.code(), Some(1), "{}", describe(&output));
    let stderr = stderr_of(&output);
    assert!(stderr.contains("is /nonexistent/grappe there on that host?"), "{stderr}");

    for (args, expected) in [
        (&["-n", "2", "--hosts", "a:x", "p"][..], "--hosts: host entry `a:x`: the slot count is not a number"),
        (
            &["-n", "2", "--ppn", "2", "p"],
            "--ppn, --launcher-exec, --agent, --no-autofork and --spare-hosts need --hosts, --hostfile or a Slurm allocation",
        ),
        (&["-n", "2", "--hostfile", "/nonexistent/hosts", "p"], "/nonexistent/hosts"),
    ] {
        let mut command = Command::new(GRAPPE);
        command.arg("run").args(args);
        let output = run_bounded(command, LIMIT);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", describe(&output));
        assert!(stderr_of(&output).contains(expected), "{args:?}: {}", describe(&output));
    }
}
