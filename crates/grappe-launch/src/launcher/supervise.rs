//! The launcher's event loop: wait until every process has finished cleanly or the first thing
//! goes wrong, then stop whatever still runs (SIGTERM, then SIGKILL after a grace period).

use super::outcome::{ExitKind, JobFailure, ProcessFailure, ProcessInfo};
use crate::server::{PmiServer, ServerEvent};
use nix::sys::signal::Signal;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How long to wait for processes to die after SIGKILL before giving up on them (only a
/// process stuck in the kernel survives that long).
const AFTER_SIGKILL: Duration = Duration::from_secs(5);

/// Everything the launcher reacts to.
#[derive(Debug)]
pub(super) enum JobEvent {
    /// A child died (it is not reaped yet).
    Exited { process: usize, exit: Result<ExitKind, String> },
    /// The PMI server saw an abort or a protocol violation.
    Pmi(ServerEvent),
    /// The launcher received this signal.
    Signal(i32),
    /// The host of process `process` was lost (its agent's channel ended) before it ended.
    HostLost { process: usize, why: String },
}

/// The state of a running job, as the event loop sees it.
pub(super) struct Supervisor<'a> {
    pub processes: Vec<ProcessInfo>,
    /// How each process ended; `None` while running or when it could not be learnt.
    pub exits: Vec<Option<ExitKind>>,
    /// Which processes have ended.
    pub ended: Vec<bool>,
    pub server: &'a PmiServer,
    pub events: Receiver<JobEvent>,
    pub kill_grace: Duration,
    /// Sends a signal to every process of the job.
    pub signal: &'a dyn Fn(Signal),
}

impl Supervisor<'_> {
    /// Runs the job to its end; returns the first failure, after stopping every process.
    pub(super) fn run(&mut self, timeout: Option<Duration>) -> Option<JobFailure> {
        let failure = self.wait_for_end(timeout);
        if self.running() > 0 || failure.is_some() {
            self.stop_all();
        }
        failure
    }

    fn running(&self) -> usize {
        self.ended.iter().filter(|&&ended| !ended).count()
    }

    /// Waits until every process has ended cleanly (`None`) or something failed.
    fn wait_for_end(&mut self, timeout: Option<Duration>) -> Option<JobFailure> {
        let deadline = timeout.map(|after| (Instant::now() + after, after));
        while self.running() > 0 {
            let event = match deadline {
                None => self.events.recv().map_err(|_| RecvTimeoutError::Disconnected),
                Some((at, _)) => self.events.recv_timeout(at.saturating_duration_since(Instant::now())),
            };
            let failure = match event {
                Ok(event) => self.judge(event),
                Err(RecvTimeoutError::Timeout) => deadline.map(|(_, after)| JobFailure::Timeout { after }),
                Err(RecvTimeoutError::Disconnected) => self.lost_everyone(),
            };
            if failure.is_some() {
                return failure;
            }
        }
        None
    }

    /// The failure `event` reveals, if any.
    fn judge(&mut self, event: JobEvent) -> Option<JobFailure> {
        let (process, failure) = match event {
            JobEvent::Exited { process, exit } => (process, self.judge_exit(process, exit)?),
            JobEvent::Pmi(ServerEvent::Abort { process, code, message }) => {
                (process, ProcessFailure::Aborted { code, message })
            }
            JobEvent::Pmi(ServerEvent::ProtocolError { process, detail }) => {
                (process, ProcessFailure::Protocol(detail))
            }
            JobEvent::HostLost { process, why } => {
                self.record_exit(process, &Err(why.clone()));
                (process, ProcessFailure::HostLost(why))
            }
            JobEvent::Signal(signal) => {
                self.signal_all(Signal::try_from(signal).unwrap_or(Signal::SIGTERM));
                return Some(JobFailure::Interrupted { signal });
            }
        };
        let process = self.processes.get(process)?.clone();
        Some(JobFailure::Process { process, failure })
    }

    fn judge_exit(&mut self, process: usize, exit: Result<ExitKind, String>) -> Option<ProcessFailure> {
        self.record_exit(process, &exit);
        let exit = match exit {
            Ok(exit) => exit,
            Err(why) => return Some(ProcessFailure::Lost(why)),
        };
        match exit {
            ExitKind::Code(0) if self.server.has_finalized(process) => None,
            ExitKind::Code(0) if !self.server.has_spoken(process) => Some(ProcessFailure::NeverSpoke),
            ExitKind::Code(0) => Some(ProcessFailure::NoFinalize),
            ExitKind::Code(code) => Some(ProcessFailure::Exited(code)),
            ExitKind::Signal(signal) => Some(ProcessFailure::Killed(signal)),
        }
    }

    /// Every watcher thread is gone without reporting: nothing more can be learnt.
    fn lost_everyone(&self) -> Option<JobFailure> {
        let index = self.ended.iter().position(|&ended| !ended)?;
        Some(JobFailure::Process {
            process: self.processes[index].clone(),
            failure: ProcessFailure::Lost("its watcher thread vanished".to_owned()),
        })
    }

    /// SIGTERM to every process group, SIGKILL to those still alive after the grace period.
    fn stop_all(&mut self) {
        self.signal_all(Signal::SIGTERM);
        self.collect_exits_for(self.kill_grace);
        if self.running() > 0 {
            self.signal_all(Signal::SIGKILL);
            self.collect_exits_for(AFTER_SIGKILL);
        }
    }

    /// Sends `signal` to every process, including the process groups of children that already
    /// died, whose own children may still run. Their pids cannot have been reused because dead
    /// children stay unreaped zombies until the job is over.
    fn signal_all(&self, signal: Signal) {
        (self.signal)(signal);
    }

    /// Records exits until none is running or `patience` has passed.
    fn collect_exits_for(&mut self, patience: Duration) {
        let deadline = Instant::now() + patience;
        while self.running() > 0 {
            match self.events.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(JobEvent::Exited { process, exit }) => self.record_exit(process, &exit),
                Ok(JobEvent::HostLost { process, why }) => self.record_exit(process, &Err(why)),
                Ok(_) => {} // Already stopping: later aborts and signals change nothing.
                Err(_) => return,
            }
        }
    }

    fn record_exit(&mut self, process: usize, exit: &Result<ExitKind, String>) {
        if let (Some(ended), Some(slot)) = (self.ended.get_mut(process), self.exits.get_mut(process)) {
            *ended = true;
            *slot = exit.as_ref().ok().copied();
        }
    }
}
