//! The launcher behind `grappe run`: start the processes of a job on this host, serve them
//! PMI-1, forward their output, and stop the whole job as soon as one process fails.
//!
//! ```no_run
//! use grappe_launch::launcher::{LaunchSpec, Layout, launch};
//! let mut spec = LaunchSpec::new("./my-program", 8);
//! spec.layout = Layout::ThreadsPerProcess(4); // 2 processes hosting 4 thread ranks each
//! spec.label = true;
//! let outcome = launch(&spec)?;
//! if let Some(failure) = &outcome.failure {
//!     eprintln!("grappe: {failure}");
//! }
//! std::process::exit(outcome.exit_code());
//! # Ok::<(), grappe_launch::launcher::LaunchError>(())
//! ```
//!
//! Each process gets the environment described in [`crate::env`], `/dev/null` as stdin, its own
//! process group (so that stopping it also stops what it started), and SIGKILL as its parent-death
//! signal (so that no rank outlives a killed launcher). Ranks are numbered in blocks: process p
//! hosts ranks `p*T .. p*T+T-1`.
//!
//! Child deaths are seen at once by one `waitid` thread per child; the job is then stopped with
//! SIGTERM to every process group, and SIGKILL after [`LaunchSpec::kill_grace`].

mod error;
mod outcome;
mod output;
mod program;
mod remote;
pub mod shm;
mod spawn;
mod supervise;
mod watch;

pub use error::LaunchError;
pub use outcome::{
    ExitKind, JobFailure, JobOutcome, ProcessFailure, ProcessInfo, ProcessRecord, RankRange, signal_name,
};
pub(crate) use program::resolve_in as resolve_program;
pub use remote::HostsSpec;
pub(crate) use spawn::spawn_process;
pub(crate) use watch::wait_without_reaping;

use crate::hosts::HostPlan;
use crate::server::{Notify, PmiServer, ServerConfig};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use output::Forwarding;
use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::Child;
use std::sync::mpsc::{Sender, channel};
use std::time::Duration;
use supervise::{JobEvent, Supervisor};

/// How long output forwarding may go on after the last child died (see [`Forwarding::finish`]).
const OUTPUT_DRAIN: Duration = Duration::from_secs(1);

/// How long the agents may take to send back the files gathered after a job.
const GATHER_PATIENCE: Duration = Duration::from_secs(120);

/// How ranks map to processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// One process per rank (the default).
    #[default]
    ProcessPerRank,
    /// One process hosting every rank as a thread (`--threads`).
    Threads,
    /// Processes hosting this many thread ranks each (`--threads-per-process T`).
    ThreadsPerProcess(usize),
}

/// Where the children's output goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputMode {
    /// To the launcher's own stdout and stderr.
    #[default]
    Inherit,
    /// Into [`JobOutcome::stdout`] and [`JobOutcome::stderr`] (for tests).
    Capture,
}

/// What to launch and how.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LaunchSpec {
    /// The program; searched in `PATH` when it contains no `/`.
    pub program: PathBuf,
    pub args: Vec<OsString>,
    /// Number of grappe ranks (`-n`).
    pub ranks: usize,
    pub layout: Layout,
    /// Prefix every output line with `[rank] ` or `[first-last] `.
    pub label: bool,
    /// Stop the job after this long.
    pub timeout: Option<Duration>,
    /// Time between SIGTERM and SIGKILL when stopping a job.
    pub kill_grace: Duration,
    pub output: OutputMode,
    /// Forward SIGINT and SIGTERM received by this process to the job. This installs signal
    /// handlers that stay after [`launch`] returns: meant for a launcher that exits afterwards.
    pub forward_signals: bool,
    /// Extra environment variables for every process.
    pub env: Vec<(OsString, OsString)>,
    /// Run the processes on these hosts, through an agent per host; `None`: on this host.
    pub hosts: Option<HostsSpec>,
    /// Files the ranks write on their hosts that the launcher gathers into one directory after
    /// the job (with `hosts` only: on this host they are there already).
    pub gather: Option<GatherSpec>,
}

/// Per-rank files to gather from the hosts of a job (its traces).
#[derive(Debug, Clone)]
pub struct GatherSpec {
    /// The directory the ranks write into, on every host, and where the launcher puts them.
    pub dir: PathBuf,
    /// The name of rank r's file in `dir`.
    pub file_of_rank: fn(usize) -> String,
}

impl LaunchSpec {
    /// `ranks` processes running `program`, output inherited, no timeout, 500 ms grace.
    pub fn new(program: impl Into<PathBuf>, ranks: usize) -> LaunchSpec {
        LaunchSpec {
            program: program.into(),
            args: Vec::new(),
            ranks,
            layout: Layout::default(),
            label: false,
            timeout: None,
            kill_grace: Duration::from_millis(500),
            output: OutputMode::default(),
            forward_signals: false,
            env: Vec::new(),
            hosts: None,
            gather: None,
        }
    }

    /// Thread ranks per process, checked against the number of ranks.
    pub fn ranks_per_process(&self) -> Result<usize, LaunchError> {
        let ranks = self.ranks;
        match self.layout {
            _ if ranks == 0 => Err(LaunchError::NoRanks),
            Layout::ProcessPerRank => Ok(1),
            Layout::Threads => Ok(ranks),
            Layout::ThreadsPerProcess(0) => Err(LaunchError::NoThreadsPerProcess),
            Layout::ThreadsPerProcess(per_process) if ranks % per_process != 0 => {
                Err(LaunchError::UnevenThreads { ranks, per_process })
            }
            Layout::ThreadsPerProcess(per_process) => Ok(per_process),
        }
    }
}

/// The decisions made before anything starts.
pub(crate) struct JobPlan {
    pub job_id: String,
    pub program: PathBuf,
    pub processes: usize,
    pub ranks_per_process: usize,
}

impl JobPlan {
    fn ranks_of(&self, process: usize) -> RankRange {
        RankRange { first: process * self.ranks_per_process, count: self.ranks_per_process }
    }
}

/// Runs a job to its end. `Err` means it could not start (nothing is left running); a job that
/// started and failed is an `Ok` whose [`JobOutcome::failure`] says why.
pub fn launch(spec: &LaunchSpec) -> Result<JobOutcome, LaunchError> {
    let ranks_per_process = spec.ranks_per_process()?;
    let processes = spec.ranks / ranks_per_process;
    let host_plan = spec.hosts.as_ref().map(|hosts| HostPlan::new(processes, &hosts.hosts, hosts.ppn));
    let plan = JobPlan {
        job_id: crate::ids::new_job_id(""),
        // On other hosts the agents find the program, in the same working directory.
        program: match host_plan {
            None => program::resolve(&spec.program)?,
            Some(_) => spec.program.clone(),
        },
        processes,
        ranks_per_process,
    };
    let (events, event_receiver) = channel();
    let (launcher_ends, child_ends) = spawn::socket_pairs(plan.processes)?;
    let config = ServerConfig {
        kvsname: plan.job_id.clone(),
        processes: plan.processes,
        process_mapping: host_plan.as_ref().map(|hosts| hosts.process_mapping(plan.processes)),
    };
    let server = PmiServer::start(config, launcher_ends, notifier(events.clone()))
        .map_err(LaunchError::setup("starting the PMI server"))?;
    let job = match start_job(spec, &plan, host_plan.as_ref(), child_ends, &events) {
        Ok(job) => job,
        Err(e) => {
            server.shutdown();
            shm::remove_job_segments(&plan.job_id);
            return Err(e);
        }
    };
    drop(events); // The watchers, the server and the signal forwarder hold the other senders.
    let signal = |signal| job.members.signal(signal, &job.processes);
    let mut supervisor = Supervisor {
        processes: job.processes.clone(),
        exits: vec![None; plan.processes],
        ended: vec![false; plan.processes],
        server: &server,
        events: event_receiver,
        kill_grace: spec.kill_grace,
        signal: &signal,
    };
    let failure = supervisor.run(spec.timeout);
    let ended = std::mem::take(&mut supervisor.ended);
    let records = records(&supervisor);
    drop(supervisor);
    let run_time = run_time(&server, plan.processes);
    server.shutdown();
    let mut outcome = finish_job(spec.gather.is_some(), plan, job, &ended, records, failure);
    outcome.run_time = run_time;
    Ok(outcome)
}

/// The largest run time the processes reported, if every one did.
fn run_time(server: &PmiServer, processes: usize) -> Option<Duration> {
    let each = (0..processes).map(|p| server.value(&format!("{}{p}", crate::env::RUN_TIME_KEY))?.parse::<u64>().ok());
    each.collect::<Option<Vec<u64>>>()?.into_iter().max().map(Duration::from_nanos)
}

/// A job whose processes are running.
struct StartedJob {
    members: Members,
    processes: Vec<ProcessInfo>,
    forwarding: Forwarding,
    /// Kept alive until the job is over.
    _signals: Option<watch::SignalForwarder>,
}

/// Who runs the processes: the launcher's own children, or an agent per host.
enum Members {
    Local(Vec<Child>),
    Hosts(remote::Agents),
}

impl Members {
    /// Sends `signal` to every process (see [`Supervisor`] for why dead children's groups are
    /// signalled too).
    fn signal(&self, signal: Signal, processes: &[ProcessInfo]) {
        match self {
            Members::Local(_) => {
                for process in processes {
                    if let Ok(pid) = i32::try_from(process.pid) {
                        // ESRCH (an empty group) is expected for children that already ended.
                        let _ = killpg(Pid::from_raw(pid), signal);
                    }
                }
            }
            Members::Hosts(agents) => agents.signal(signal),
        }
    }
}

/// Installs the signal forwarder if asked, then starts every process with its output
/// forwarding and its exit watcher, here or through the hosts' agents.
fn start_job(
    spec: &LaunchSpec,
    plan: &JobPlan,
    host_plan: Option<&HostPlan>,
    child_ends: Vec<OwnedFd>,
    events: &Sender<JobEvent>,
) -> Result<StartedJob, LaunchError> {
    let signals = match spec.forward_signals {
        true => Some(
            watch::SignalForwarder::start(events.clone()).map_err(LaunchError::setup("installing signal handlers"))?,
        ),
        false => None,
    };
    let mut forwarding = Forwarding::new(spec.output);
    let (members, processes) = match (spec.hosts.as_ref(), host_plan) {
        (Some(hosts), Some(host_plan)) => {
            let relay_ends = child_ends.into_iter().map(UnixStream::from).collect();
            let (agents, processes) =
                remote::Agents::start(spec, plan, (hosts, host_plan), relay_ends, events, &mut forwarding)?;
            (Members::Hosts(agents), processes)
        }
        _ => {
            let children = start_processes(spec, plan, child_ends, events, &mut forwarding)?;
            let processes = describe(plan, &children);
            (Members::Local(children), processes)
        }
    };
    Ok(StartedJob { members, processes, forwarding, _signals: signals })
}

/// How each process ended, as the supervisor saw it.
fn records(supervisor: &Supervisor<'_>) -> Vec<ProcessRecord> {
    supervisor
        .processes
        .iter()
        .zip(&supervisor.exits)
        .map(|(info, exit)| ProcessRecord {
            info: info.clone(),
            exit: *exit,
            finalized: supervisor.server.has_finalized(info.index),
        })
        .collect()
}

/// Reaps the children (or lets the agents do it), drains their output and removes the job's
/// leftover shared memory.
fn finish_job(
    spec_gathers: bool,
    plan: JobPlan,
    job: StartedJob,
    ended: &[bool],
    processes: Vec<ProcessRecord>,
    failure: Option<JobFailure>,
) -> JobOutcome {
    match job.members {
        Members::Local(mut children) => {
            for (child, ended) in children.iter_mut().zip(ended) {
                if *ended {
                    // A dead child is a zombie until now (see `watch`); this returns at once.
                    let _ = child.wait();
                }
            }
        }
        // Gathered files come after the processes end: give them time.
        Members::Hosts(agents) => agents.finish(match spec_gathers {
            true => GATHER_PATIENCE,
            false => OUTPUT_DRAIN * 2,
        }),
    }
    let (stdout, stderr) = job.forwarding.finish(OUTPUT_DRAIN);
    JobOutcome {
        removed_shm_files: shm::remove_job_segments(&plan.job_id),
        job_id: plan.job_id,
        processes,
        failure,
        stdout,
        stderr,
        run_time: None,
    }
}

fn notifier(events: Sender<JobEvent>) -> Notify {
    Box::new(move |event| {
        // Nobody listens once the job is over; late events do not matter then.
        let _ = events.send(JobEvent::Pmi(event));
    })
}

fn describe(plan: &JobPlan, children: &[Child]) -> Vec<ProcessInfo> {
    children
        .iter()
        .enumerate()
        .map(|(index, child)| ProcessInfo { index, ranks: plan.ranks_of(index), pid: child.id(), host: None })
        .collect()
}

/// Starts every process; on failure kills those already started and returns the error.
fn start_processes(
    spec: &LaunchSpec,
    plan: &JobPlan,
    child_ends: Vec<OwnedFd>,
    events: &Sender<JobEvent>,
    forwarding: &mut Forwarding,
) -> Result<Vec<Child>, LaunchError> {
    let mut children = Vec::with_capacity(plan.processes);
    for (process, pmi_end) in child_ends.into_iter().enumerate() {
        let mut child = match spawn::spawn_process(spec, plan, process, pmi_end) {
            Ok(child) => child,
            Err(e) => return Err(kill_all(children, e)),
        };
        let label = spec.label.then(|| format!("[{}] ", plan.ranks_of(process)));
        let watched = forwarding
            .forward_child(&mut child, label)
            .and_then(|()| watch::watch_exit(process, child.id(), events.clone()));
        children.push(child);
        if let Err(e) = watched {
            return Err(kill_all(children, LaunchError::setup("starting a watcher thread")(e)));
        }
    }
    Ok(children)
}

/// Kills and reaps `children` (used when the job cannot start), then returns `error`.
fn kill_all(children: Vec<Child>, error: LaunchError) -> LaunchError {
    for mut child in children {
        if let Ok(pid) = i32::try_from(child.id()) {
            let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
        }
        let _ = child.wait();
    }
    error
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_give_ranks_per_process_or_a_clear_error() {
        let spec = |ranks, layout| {
            let mut spec = LaunchSpec::new("true", ranks);
            spec.layout = layout;
            spec.ranks_per_process()
        };
        assert_eq!(spec(4, Layout::ProcessPerRank).ok(), Some(1));
        assert_eq!(spec(4, Layout::Threads).ok(), Some(4));
        assert_eq!(spec(8, Layout::ThreadsPerProcess(4)).ok(), Some(4));
        let err = spec(6, Layout::ThreadsPerProcess(4)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--threads-per-process 4 does not divide the 6 ranks (-n 6); \
             every process must host the same number of thread ranks"
        );
        assert_eq!(err.exit_code(), 2);
        assert!(matches!(spec(0, Layout::Threads), Err(LaunchError::NoRanks)));
        assert!(matches!(spec(4, Layout::ThreadsPerProcess(0)), Err(LaunchError::NoThreadsPerProcess)));
    }
}
