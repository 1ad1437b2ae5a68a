//! Why a job could not start: what the process manager, the launcher's
//! variables, the settings, the host segment or another process said, and
//! which rank could not connect or start its trace. `grappe::run` prints it
//! (`grappe: cannot start the job: ...` for the process, `grappe: rank R
//! failed: ...` for a rank) and exits; an API without a closure (MPI's
//! init) returns it.

use std::path::PathBuf;

use grappe_comm::ErrorClass;
use grappe_fabric::FabricError;
use grappe_launch::PmiError;
use grappe_launch::env::BadEnv;
use grappe_settings::SettingError;

/// What stopped the start of a job. `#[non_exhaustive]`: new causes will
/// appear.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// The process manager (PMI) failed or refused a call.
    #[error("process manager: {0}")]
    ProcessManager(#[from] PmiError),
    /// A variable the launcher sets has a value this process cannot use.
    #[error(transparent)]
    Launcher(#[from] BadEnv),
    /// A setting (`GRAPPE_*`) has a value that cannot be used.
    #[error(transparent)]
    Setting(#[from] SettingError),
    /// The host segment could not be laid out, created or opened.
    #[error(transparent)]
    Segment(#[from] FabricError),
    /// Two processes of the job run on different hosts, which needs a
    /// network fabric.
    #[error(
        "process {process} runs on host {host:?} and process {me} on {my_host:?}: ranks on several hosts need the \
         network fabric, which this grappe does not have yet"
    )]
    SeveralHosts {
        /// The other process (its PMI rank).
        process: usize,
        /// Its host (host name and boot id).
        host: String,
        /// This process.
        me: usize,
        /// This process's host.
        my_host: String,
    },
    /// A process published an entry that is not `ranks,host`.
    #[error("process {process} published {value:?}, expected {expected}")]
    ProcessEntry {
        /// The process (its PMI rank).
        process: usize,
        /// What it published.
        value: String,
        /// What the entry should have been.
        expected: &'static str,
    },
    /// A rank could not connect its engine to the job's other ranks.
    #[error("rank {rank} cannot connect to the other ranks: {source}")]
    Connect {
        /// The rank (world numbering).
        rank: usize,
        /// What the engine found.
        #[source]
        source: grappe_comm::Error,
    },
    /// A traced rank could not time what recording its calls costs.
    #[error("rank {rank}: cannot time the recording of calls: {source}")]
    CallTiming {
        /// The rank (world numbering).
        rank: usize,
        /// The failure of the timing calls.
        #[source]
        source: grappe_comm::Error,
    },
    /// A traced rank could not create its trace file.
    #[error("cannot create the trace of rank {rank} in {}: {source}", dir.display())]
    TraceFile {
        /// The rank (world numbering).
        rank: usize,
        /// The trace directory.
        dir: PathBuf,
        /// The system's answer.
        #[source]
        source: std::io::Error,
    },
    /// An API whose ranks are processes (MPI's C library: a C program's
    /// globals belong to its process) was started in a process that
    /// hosts several ranks.
    #[error(
        "this process hosts {ranks} ranks, and a program that calls MPI_Init runs one rank per process: launch it \
         without --threads or --threads-per-process"
    )]
    NotOneRank {
        /// The ranks the launcher gave this process.
        ranks: usize,
    },
}

impl StartError {
    /// The MPI error class of this error: that of the engine's error for a
    /// rank that could not connect or time its calls, `Other` otherwise.
    pub fn class(&self) -> ErrorClass {
        match self {
            StartError::Connect { source, .. } | StartError::CallTiming { source, .. } => source.class(),
            _ => ErrorClass::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_errors_keep_their_numbers_and_say_them() {
        let hosts =
            StartError::SeveralHosts { process: 2, host: "b/1".into(), me: 0, my_host: "a/9".into() }.to_string();
        assert!(hosts.starts_with("process 2 runs on host \"b/1\" and process 0 on \"a/9\""), "{hosts}");
        let died = grappe_comm::Error::PeerDied { rank: 1, pid: 7, cause: "killed".into() };
        let connect = StartError::Connect { rank: 3, source: died };
        assert_eq!(connect.class(), ErrorClass::ProcFailed);
        assert_eq!(connect.to_string(), "rank 3 cannot connect to the other ranks: rank 1 (pid 7) is gone: killed");
        let setting = StartError::from(SettingError::new("GRAPPE_BIND", "all", "core or none"));
        assert_eq!(
            (setting.to_string().as_str(), setting.class()),
            ("GRAPPE_BIND=\"all\": expected core or none", ErrorClass::Other)
        );
    }
}
