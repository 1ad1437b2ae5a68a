//! What happened to a job: per-process records and the one cause of failure, if any.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// The block of grappe ranks a process hosts: `first .. first + count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RankRange {
    pub first: usize,
    pub count: usize,
}

impl RankRange {
    /// The last rank of the block.
    pub fn last(&self) -> usize {
        self.first + self.count - 1
    }
}

impl fmt::Display for RankRange {
    /// `3` for a single rank, `4-7` for a block.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.count {
            1 => write!(f, "{}", self.first),
            _ => write!(f, "{}-{}", self.first, self.last()),
        }
    }
}

/// One process of a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessInfo {
    /// Index of the process, its PMI rank.
    pub index: usize,
    /// The grappe ranks it hosts.
    pub ranks: RankRange,
    /// Its process id (on its host).
    pub pid: u32,
    /// The host it runs on, for a job across hosts.
    pub host: Option<std::sync::Arc<str>>,
}

impl fmt::Display for ProcessInfo {
    /// `rank 3 (pid 4242)`, or `ranks 4-7 (process 1, pid 4242)` for thread ranks.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let on = self.host.as_ref().map_or_else(String::new, |host| format!(" on host {host}"));
        match self.ranks.count {
            1 => write!(f, "rank {} (pid {}{on})", self.ranks.first, self.pid),
            _ => write!(f, "ranks {} (process {}, pid {}{on})", self.ranks, self.index, self.pid),
        }
    }
}

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitKind {
    /// It exited with this status.
    Code(i32),
    /// A signal with this number killed it.
    Signal(i32),
}

/// What one process did wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcessFailure {
    /// Exited with a non-zero status.
    Exited(i32),
    /// Killed by a signal.
    Killed(i32),
    /// Exited with status 0 but never called PMI finalize.
    NoFinalize,
    /// Exited with status 0 without a word to the process manager: likely
    /// not a grappe or MPI program.
    NeverSpoke,
    /// Called PMI abort.
    Aborted { code: i32, message: String },
    /// Broke the PMI protocol; the text completes "rank 3 (pid 42) ...".
    Protocol(String),
    /// The launcher could not wait for it.
    Lost(String),
    /// Its host was lost (the agent's channel ended) while it ran.
    HostLost(String),
}

/// Why a job was stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobFailure {
    /// A process failed first.
    Process { process: ProcessInfo, failure: ProcessFailure },
    /// The job outlived its `--timeout`.
    Timeout { after: Duration },
    /// The launcher got this signal and forwarded it.
    Interrupted { signal: i32 },
}

impl JobFailure {
    /// The launcher's exit status for this failure: the failing process's status, 128+signal
    /// for a signal, the abort code, 124 for a timeout (as `timeout(1)`), 1 otherwise.
    ///
    /// An abort with code 0 exits 0: the program chose it, as `MPI_Abort(comm, 0)` does where
    /// one image's `STOP` ends a coarray Fortran job (OpenCoarrays), and MPICH's `mpiexec`
    /// returns it too. Any other code that would read as success once truncated to 8 bits is 1.
    pub fn exit_code(&self) -> i32 {
        match self {
            JobFailure::Process { failure, .. } => match failure {
                ProcessFailure::Exited(code) => nonzero_status(*code),
                ProcessFailure::Killed(signal) => 128 + signal,
                ProcessFailure::Aborted { code: 0, .. } => 0,
                ProcessFailure::Aborted { code, .. } => nonzero_status(*code),
                ProcessFailure::NoFinalize
                | ProcessFailure::NeverSpoke
                | ProcessFailure::Protocol(_)
                | ProcessFailure::Lost(_)
                | ProcessFailure::HostLost(_) => 1,
            },
            JobFailure::Timeout { .. } => 124,
            JobFailure::Interrupted { signal } => 128 + signal,
        }
    }
}

/// `code` as an exit status, 1 when it would read as success once truncated to 8 bits.
fn nonzero_status(code: i32) -> i32 {
    match code & 0xff {
        0 => 1,
        status => status,
    }
}

impl fmt::Display for JobFailure {
    /// One line for the user, without the `grappe: ` prefix.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JobFailure::Process { process, failure } => {
                write!(f, "{process} ")?;
                match failure {
                    ProcessFailure::Exited(code) => write!(f, "exited with status {code}")?,
                    ProcessFailure::Killed(signal) => {
                        write!(f, "was killed by signal {signal} ({})", signal_name(*signal))?
                    }
                    ProcessFailure::NoFinalize => write!(f, "exited with status 0 without calling PMI finalize")?,
                    ProcessFailure::NeverSpoke => write!(
                        f,
                        "exited with status 0 without ever contacting the process manager (PMI): \
                         the program may not be a grappe or MPI program"
                    )?,
                    ProcessFailure::Aborted { code, message } if message.is_empty() => {
                        write!(f, "called PMI abort with exit code {code}")?
                    }
                    ProcessFailure::Aborted { code, message } => {
                        write!(f, "called PMI abort with exit code {code}: {message}")?
                    }
                    ProcessFailure::Protocol(detail) => write!(f, "{detail}")?,
                    ProcessFailure::Lost(why) => write!(f, "could not be waited for: {why}")?,
                    ProcessFailure::HostLost(why) => write!(f, "was lost with its host: {why}")?,
                }
                write!(f, "; stopping the job")
            }
            JobFailure::Timeout { after } => {
                write!(f, "the job did not finish within its --timeout of {} s; stopping the job", after.as_secs_f64())
            }
            JobFailure::Interrupted { signal } => {
                write!(f, "received {}; forwarded it to the job and stopping the job", signal_name(*signal))
            }
        }
    }
}

/// `SIGKILL` for 9, `signal 77` for a number with no name.
pub fn signal_name(signal: i32) -> String {
    match nix::sys::signal::Signal::try_from(signal) {
        Ok(known) => known.as_str().to_owned(),
        Err(_) => format!("signal {signal}"),
    }
}

/// One process as it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessRecord {
    pub info: ProcessInfo,
    /// How it ended; `None` if it could not be stopped (e.g. stuck in the kernel).
    pub exit: Option<ExitKind>,
    /// Whether it called PMI finalize.
    pub finalized: bool,
}

/// The result of a job that was launched.
#[derive(Debug, Clone)]
pub struct JobOutcome {
    /// The job's id (`GRAPPE_JOB_ID`).
    pub job_id: String,
    /// Every process, by index.
    pub processes: Vec<ProcessRecord>,
    /// The first failure; `None` when every process exited 0 after PMI finalize.
    pub failure: Option<JobFailure>,
    /// Children's standard output, with labels, when the spec asked to capture it.
    pub stdout: Vec<u8>,
    /// Children's standard error, with labels, when the spec asked to capture it.
    pub stderr: Vec<u8>,
    /// Shared-memory files of the job that were left and have been removed.
    pub removed_shm_files: Vec<PathBuf>,
    /// The job's run time: its slowest rank's, from the end of its start-up to the start of its
    /// finalize, as the processes reported it at their PMI finalize (see
    /// [`crate::env::RUN_TIME_KEY`]); `None` unless every process did.
    pub run_time: Option<Duration>,
}

impl JobOutcome {
    /// Whether every process exited 0 after PMI finalize.
    pub fn success(&self) -> bool {
        self.failure.is_none()
    }

    /// The exit status a launcher should return: 0 on success, else see
    /// [`JobFailure::exit_code`].
    pub fn exit_code(&self) -> i32 {
        self.failure.as_ref().map_or(0, JobFailure::exit_code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn process(first: usize, count: usize) -> ProcessInfo {
        ProcessInfo { index: first / count, ranks: RankRange { first, count }, pid: 4242, host: None }
    }

    #[test]
    fn failure_lines_name_the_ranks_the_pid_and_the_cause() {
        let killed = JobFailure::Process { process: process(3, 1), failure: ProcessFailure::Killed(9) };
        assert_eq!(killed.to_string(), "rank 3 (pid 4242) was killed by signal 9 (SIGKILL); stopping the job");
        assert_eq!(killed.exit_code(), 137);
        let exited = JobFailure::Process { process: process(4, 4), failure: ProcessFailure::Exited(3) };
        assert_eq!(exited.to_string(), "ranks 4-7 (process 1, pid 4242) exited with status 3; stopping the job");
        assert_eq!(exited.exit_code(), 3);
    }

    #[test]
    fn exit_codes_are_never_zero_for_a_failure_but_an_abort_with_code_0() {
        let aborted = |code| JobFailure::Process {
            process: process(0, 1),
            failure: ProcessFailure::Aborted { code, message: String::new() },
        };
        assert_eq!(aborted(0).exit_code(), 0);
        assert_eq!(aborted(256).exit_code(), 1);
        assert_eq!(aborted(-256).exit_code(), 1);
        assert_eq!(aborted(5).exit_code(), 5);
        let timeout = JobFailure::Timeout { after: Duration::from_millis(1500) };
        assert_eq!(timeout.exit_code(), 124);
        assert!(timeout.to_string().contains("--timeout of 1.5 s"), "{timeout}");
        assert_eq!(JobFailure::Interrupted { signal: 2 }.exit_code(), 130);
    }

    #[test]
    fn unknown_signals_still_get_a_name() {
        assert_eq!(signal_name(15), "SIGTERM");
        assert_eq!(signal_name(77), "signal 77");
    }
}
