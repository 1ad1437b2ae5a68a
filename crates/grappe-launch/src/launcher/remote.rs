//! The launcher's side of a job across hosts: one agent per host, started through the remote
//! shell, and the relays between the agents' channels and the launcher's PMI server, output and
//! event loop (see [`crate::hosts`]).

use super::outcome::{ExitKind, ProcessInfo};
use super::output::{Forwarding, OutputFeed};
use super::spawn::spawn_remote_shell;
use super::supervise::JobEvent;
use super::{JobPlan, LaunchError, LaunchSpec};
use crate::hosts::agent::AgentJob;
use crate::hosts::channel::{ChannelError, Ended, Frame, FrameReader, Stream};
use crate::hosts::{HostPlan, HostSlots, is_this_host};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::collections::HashMap;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Child, ChildStdin};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long the agents have to start every process of their host.
const AGENT_START: Duration = Duration::from_secs(60);

/// Where a job's processes run when they span hosts, and how their agents are started.
#[derive(Debug, Clone)]
pub struct HostsSpec {
    /// The hosts and their slots, as `--hosts a:4,b` or a hostfile gives them.
    pub hosts: Vec<HostSlots>,
    /// Processes per host and round, overriding the slots (`--ppn`).
    pub ppn: Option<usize>,
    /// The remote shell, called as `SHELL... HOST AGENT agent`: `ssh -x` by default.
    pub launcher_exec: Vec<OsString>,
    /// The `grappe` executable to run as the agent, at the same path on every host: this one by
    /// default.
    pub agent: PathBuf,
    /// Start the agent of this host itself (named as `localhost` or by its host name) without
    /// the remote shell, as hydra does (its `HYDRA_LAUNCHER_AUTOFORK`); true by default.
    pub fork_local: bool,
}

impl HostsSpec {
    /// `hosts` reached with `ssh -x`, the agent being this executable.
    pub fn new(hosts: Vec<HostSlots>) -> HostsSpec {
        HostsSpec {
            hosts,
            ppn: None,
            launcher_exec: vec!["ssh".into(), "-x".into()],
            agent: std::env::current_exe().unwrap_or_else(|_| PathBuf::from("grappe")),
            fork_local: true,
        }
    }
}

/// Variables of the launcher that are not passed on to other hosts: those describing this
/// process's own launch or this host.
fn forwarded(key: &[u8]) -> bool {
    const HOST_BOUND: [&[u8]; 6] = [b"PMI_", b"PMIX_", b"SLURM_", b"SSH_", b"GRAPPE_NET_ADDR", b"HOSTNAME"];
    !HOST_BOUND.iter().any(|prefix| key.starts_with(prefix))
}

/// The agents of a running job.
pub(super) struct Agents {
    hosts: Vec<Agent>,
    /// The agent's program on the hosts, for messages.
    agent: PathBuf,
}

struct Agent {
    shell: Child,
    input: Arc<Mutex<Option<ChildStdin>>>,
    /// Says when the agent's channel has ended.
    closed: Receiver<()>,
}

/// What the agents report while they start their processes.
enum StartReport {
    Started { process: usize, pid: u32 },
    Failed { host: usize, status: u32, message: String },
}

impl Agents {
    /// Starts one agent per host of `hosts` and waits until every process runs; returns the
    /// agents and the processes (by index). On failure every agent is stopped.
    pub(super) fn start(
        spec: &LaunchSpec,
        plan: &JobPlan,
        hosts: (&HostsSpec, &HostPlan),
        relay_ends: Vec<UnixStream>,
        events: &Sender<JobEvent>,
        forwarding: &mut Forwarding,
    ) -> Result<(Agents, Vec<ProcessInfo>), LaunchError> {
        let (spec_hosts, host_plan) = hosts;
        let (reports, report_receiver) = channel();
        let relay_ends = Arc::new(relay_ends);
        let mut agents = Agents { hosts: Vec::new(), agent: spec_hosts.agent.clone() };
        for host in 0..host_plan.names.len() {
            let agent =
                Agent::start(spec, plan, (spec_hosts, host_plan, host), &relay_ends, events, &reports, forwarding);
            match agent {
                Ok(agent) => agents.hosts.push(agent),
                Err(e) => {
                    agents.kill();
                    return Err(e);
                }
            }
        }
        drop(reports);
        match agents.wait_for_starts(plan, host_plan, &report_receiver) {
            Ok(processes) => Ok((agents, processes)),
            Err(e) => {
                agents.kill();
                Err(e)
            }
        }
    }

    fn wait_for_starts(
        &mut self,
        plan: &JobPlan,
        host_plan: &HostPlan,
        reports: &Receiver<StartReport>,
    ) -> Result<Vec<ProcessInfo>, LaunchError> {
        let mut pids: Vec<Option<u32>> = vec![None; plan.processes];
        let deadline = Instant::now() + AGENT_START;
        while pids.iter().any(Option::is_none) {
            match reports.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(StartReport::Started { process, pid }) => pids[process] = Some(pid),
                Ok(StartReport::Failed { host, status, message }) => {
                    let message = self.with_shell_status(host, message);
                    return Err(LaunchError::Host { host: host_plan.names[host].clone(), status, message });
                }
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {
                    let host = pids.iter().position(Option::is_none).and_then(|p| host_plan.host_of(p)).unwrap_or(0);
                    let message = format!("its agent did not start its processes within {} s", AGENT_START.as_secs());
                    return Err(LaunchError::Host { host: host_plan.names[host].clone(), status: 1, message });
                }
            }
        }
        let host_names: Vec<Arc<str>> = host_plan.names.iter().map(|name| Arc::from(name.as_str())).collect();
        Ok((0..plan.processes)
            .map(|index| ProcessInfo {
                index,
                ranks: plan.ranks_of(index),
                pid: pids[index].unwrap_or(0),
                host: host_plan.host_of(index).map(|host| host_names[host].clone()),
            })
            .collect())
    }

    /// `message`, with how the remote shell of `host` ended if it has (ssh says 255 when it
    /// cannot reach the host).
    fn with_shell_status(&mut self, host: usize, message: String) -> String {
        let Some(agent) = self.hosts.get_mut(host) else { return message };
        let deadline = Instant::now() + Duration::from_millis(500);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = agent.shell.try_wait() {
                // 127: the shell found no such command, the agent's program.
                let hint = match status.code() {
                    Some(127) => format!("; is {} there on that host?", self.agent.display()),
                    _ => String::new(),
                };
                return format!("{message} (the remote shell exited with {status}{hint})");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        message
    }

    /// Asks every agent to send `signal` to its processes.
    pub(super) fn signal(&self, signal: Signal) {
        for agent in &self.hosts {
            agent.send(&Frame::Signal(signal as i32));
        }
    }

    /// Closes every agent's input (the job is over: they reap, clean up and exit), waits up to
    /// `patience` for their channels to end, and kills the remote shells that remain.
    pub(super) fn finish(mut self, patience: Duration) {
        for agent in &self.hosts {
            agent.input.lock().unwrap_or_else(PoisonError::into_inner).take();
        }
        let deadline = Instant::now() + patience;
        for agent in &self.hosts {
            let _ = agent.closed.recv_timeout(deadline.saturating_duration_since(Instant::now()));
        }
        self.kill();
    }

    /// Kills the remote shells (their agents see their input close and kill their processes).
    fn kill(&mut self) {
        for agent in &mut self.hosts {
            if let Ok(Some(_)) = agent.shell.try_wait() {
                continue;
            }
            if let Ok(pid) = i32::try_from(agent.shell.id()) {
                let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
            }
            let _ = agent.shell.wait();
        }
    }
}

impl Agent {
    /// Starts the remote shell of host `host`, sends it the job, and starts the relays.
    fn start(
        spec: &LaunchSpec,
        plan: &JobPlan,
        hosts: (&HostsSpec, &HostPlan, usize),
        relay_ends: &Arc<Vec<UnixStream>>,
        events: &Sender<JobEvent>,
        reports: &Sender<StartReport>,
        forwarding: &mut Forwarding,
    ) -> Result<Agent, LaunchError> {
        let (spec_hosts, host_plan, host) = hosts;
        let name = &host_plan.names[host];
        let mine = host_plan.processes[host].clone();
        let setup = |what| LaunchError::setup(what);
        let local = spec_hosts.fork_local && is_this_host(name);
        let exec: &[OsString] = if local { &[] } else { &spec_hosts.launcher_exec };
        let mut shell = spawn_remote_shell(exec, name, &spec_hosts.agent).map_err(|source| LaunchError::Host {
            host: name.clone(),
            status: 1,
            message: format!("cannot start the remote shell: {source}"),
        })?;
        let (Some(stdin), Some(stdout), Some(stderr)) = (shell.stdin.take(), shell.stdout.take(), shell.stderr.take())
        else {
            let _ = shell.kill();
            return Err(setup("piping a remote shell")(std::io::Error::other("no pipe")));
        };
        let input = Arc::new(Mutex::new(Some(stdin)));
        let (closed_sender, closed) = channel();
        let agent = Agent { shell, input, closed };
        agent.send(&describe(spec, plan, name, &mine).to_frame());
        forwarding
            .forward_stderr(stderr, format!("grappe: host {name}: "))
            .map_err(setup("forwarding a remote shell's errors"))?;
        let feeds = mine
            .iter()
            .flat_map(|&process| {
                let label = spec.label.then(|| format!("[{}] ", plan.ranks_of(process)));
                [
                    ((process, Stream::Stdout), forwarding.feed(false, label.clone())),
                    ((process, Stream::Stderr), forwarding.feed(true, label)),
                ]
            })
            .collect();
        let gather = spec.gather.as_ref().map(|gather| Gathering {
            dir: gather.dir.clone(),
            names: gathered_files(spec, plan, &mine),
            open: None,
        });
        let channel = HostChannel {
            host,
            name: name.clone(),
            gather,
            mine: mine.clone(),
            relay_ends: Arc::clone(relay_ends),
            feeds,
            events: events.clone(),
            reports: reports.clone(),
            exited: Vec::new(),
        };
        spawn("grappe-host", move || {
            channel.serve(stdout);
            let _ = closed_sender.send(());
        })
        .map_err(setup("starting a host's reader"))?;
        for &process in &mine {
            let socket = relay_ends[process].try_clone().map_err(setup("relaying PMI"))?;
            let input = Arc::clone(&agent.input);
            spawn("grappe-host-pmi", move || relay_pmi(process as u32, socket, &input))
                .map_err(setup("starting a PMI relay"))?;
        }
        Ok(agent)
    }

    fn send(&self, frame: &Frame) {
        if let Some(input) = self.input.lock().unwrap_or_else(PoisonError::into_inner).as_mut() {
            // An agent that is gone no longer reads; its channel's end reports it.
            let _ = frame.write_to(input);
        }
    }
}

/// The description an agent gets: the program, the environment of the launcher with the job's
/// own variables over it, and the working directory.
fn describe(spec: &LaunchSpec, plan: &JobPlan, host: &str, mine: &[usize]) -> AgentJob {
    let bytes = |text: &std::ffi::OsStr| text.as_bytes().to_vec();
    let mut env: Vec<(Vec<u8>, Vec<u8>)> =
        std::env::vars_os().filter(|(key, _)| forwarded(key.as_bytes())).map(|(k, v)| (bytes(&k), bytes(&v))).collect();
    env.extend(spec.env.iter().map(|(key, value)| (bytes(key), bytes(value))));
    let workdir = std::env::current_dir().map(|dir| bytes(dir.as_os_str())).unwrap_or_else(|_| b"/".to_vec());
    AgentJob {
        job_id: plan.job_id.clone(),
        host: host.to_owned(),
        program: bytes(plan.program.as_os_str()),
        args: spec.args.iter().map(|arg| bytes(arg)).collect(),
        env,
        workdir,
        processes: plan.processes,
        ranks_per_process: plan.ranks_per_process,
        mine: mine.to_vec(),
        gather_dir: spec.gather.as_ref().map(|gather| bytes(gather.dir.as_os_str())),
        gather: gathered_files(spec, plan, mine),
    }
}

/// The names of the files to gather from the host running `mine`: those of its ranks.
fn gathered_files(spec: &LaunchSpec, plan: &JobPlan, mine: &[usize]) -> Vec<String> {
    let Some(gather) = &spec.gather else { return Vec::new() };
    let ranks = mine.iter().flat_map(|&process| {
        let range = plan.ranks_of(process);
        range.first..range.first + range.count
    });
    ranks.map(|rank| (gather.file_of_rank)(rank)).collect()
}

/// Sends what the PMI server writes for `process` to its agent.
fn relay_pmi(process: u32, mut socket: UnixStream, input: &Mutex<Option<ChildStdin>>) {
    let mut buffer = vec![0u8; 64 * 1024];
    while let Ok(n @ 1..) = socket.read(&mut buffer) {
        let frame = Frame::Pmi { process, bytes: buffer[..n].to_vec() };
        let mut input = input.lock().unwrap_or_else(PoisonError::into_inner);
        let sent = input.as_mut().is_some_and(|input| frame.write_to(input).is_ok());
        if !sent {
            return;
        }
    }
}

/// The reading side of one agent's channel.
struct HostChannel {
    host: usize,
    name: String,
    mine: Vec<usize>,
    relay_ends: Arc<Vec<UnixStream>>,
    feeds: HashMap<(usize, Stream), OutputFeed>,
    events: Sender<JobEvent>,
    reports: Sender<StartReport>,
    exited: Vec<usize>,
    gather: Option<Gathering>,
}

/// The files being gathered from one host into the launcher's directory.
struct Gathering {
    dir: PathBuf,
    names: Vec<String>,
    /// The file being received: its index, and the temporary file that becomes it at its end.
    open: Option<(u32, PathBuf, std::fs::File)>,
}

impl Gathering {
    /// Appends `bytes` to file `file`, written beside its final name until it is complete (the
    /// directory may be the one the agent reads from, on a shared file system).
    fn write(&mut self, file: u32, bytes: &[u8], host: &str) -> Result<(), String> {
        if self.open.as_ref().is_none_or(|(open, _, _)| *open != file) {
            let name = self.names.get(file as usize).ok_or_else(|| format!("its agent sent unknown file {file}"))?;
            let part = self.dir.join(format!(".{name}.from-{host}"));
            std::fs::create_dir_all(&self.dir).map_err(|e| format!("cannot create {}: {e}", self.dir.display()))?;
            let created = std::fs::File::create(&part).map_err(|e| format!("cannot write {}: {e}", part.display()))?;
            self.open = Some((file, part, created));
        }
        let Some((_, part, open)) = self.open.as_mut() else { return Ok(()) };
        open.write_all(bytes).map_err(|e| format!("cannot write {}: {e}", part.display()))
    }

    /// Moves file `file`, complete, to its name.
    fn end(&mut self, file: u32) -> Result<(), String> {
        let Some((open, part, _)) = self.open.take() else { return Ok(()) };
        let name = self.names.get(open as usize).filter(|_| open == file);
        let Some(name) = name else { return Err(format!("its agent ended file {file} while sending file {open}")) };
        let target = self.dir.join(name);
        std::fs::rename(&part, &target).map_err(|e| format!("cannot write {}: {e}", target.display()))
    }
}

impl HostChannel {
    /// Acts on the agent's frames until its channel ends, then reports the host's processes that
    /// had not ended as lost with it.
    fn serve(mut self, stdout: impl Read) {
        let mut reader = FrameReader::new(stdout);
        let why = loop {
            match reader.next_frame() {
                Ok(frame) => {
                    if let Err(why) = self.act(frame) {
                        break why;
                    }
                }
                Err(ChannelError::Closed) => break "its agent's connection closed".to_owned(),
                Err(e) => break format!("its agent's channel broke: {e}"),
            }
        };
        for ((_, _), feed) in self.feeds.drain() {
            feed.finish();
        }
        let _ = self.reports.send(StartReport::Failed { host: self.host, status: 1, message: why.clone() });
        for &process in self.mine.iter().filter(|process| !self.exited.contains(process)) {
            let _ = self.events.send(JobEvent::HostLost { process, why: why.clone() });
        }
    }

    fn act(&mut self, frame: Frame) -> Result<(), String> {
        match frame {
            Frame::Started { process, pid } => {
                let process = self.own(process)?;
                let _ = self.reports.send(StartReport::Started { process, pid });
            }
            Frame::Pmi { process, bytes } => {
                let process = self.own(process)?;
                // The server hung up on a process that broke PMI; its report says so.
                let _ = (&self.relay_ends[process]).write_all(&bytes);
            }
            Frame::Output { process, stream, bytes } => {
                let process = self.own(process)?;
                if let Some(feed) = self.feeds.get_mut(&(process, stream)) {
                    feed.push(&bytes);
                }
            }
            Frame::Exited { process, ended } => {
                let process = self.own(process)?;
                self.exited.push(process);
                let exit = match ended {
                    Ended::Code(code) => Ok(ExitKind::Code(code)),
                    Ended::Signal(signal) => Ok(ExitKind::Signal(signal)),
                    Ended::Unknown => Err(format!("its agent on host {} could not wait for it", self.name)),
                };
                let _ = self.events.send(JobEvent::Exited { process, exit });
            }
            Frame::Failed { status, message } => {
                let _ = self.reports.send(StartReport::Failed { host: self.host, status, message });
            }
            Frame::File { file, bytes } => self.gathered(|gather, host| gather.write(file, &bytes, host)),
            Frame::FileEnd { file } => self.gathered(|gather, _| gather.end(file)),
            Frame::Job(_) | Frame::Signal(_) => return Err("its agent sent a frame meant for agents".to_owned()),
        }
        Ok(())
    }

    /// Acts on a gathered file; a file that cannot be written is said and left out, the job's
    /// outcome stays what it was.
    fn gathered(&mut self, act: impl FnOnce(&mut Gathering, &str) -> Result<(), String>) {
        let Some(gather) = self.gather.as_mut() else { return };
        if let Err(why) = act(gather, &self.name) {
            eprintln!("grappe: host {}: gathering its trace: {why}", self.name);
            gather.open = None;
        }
    }

    /// `process` if it is one of this host's.
    fn own(&self, process: u32) -> Result<usize, String> {
        let process = process as usize;
        match self.mine.contains(&process) {
            true => Ok(process),
            false => Err(format!("its agent spoke for process {process}, which runs elsewhere")),
        }
    }
}

fn spawn(name: &str, body: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
    std::thread::Builder::new().name(name.to_owned()).spawn(body).map(drop)
}
