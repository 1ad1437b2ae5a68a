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
    /// The network links between the hosts of the job could not be made.
    #[error("network: {what}: {source}")]
    Network {
        /// What was being done (which rank, which address).
        what: String,
        /// What the link layer said.
        #[source]
        source: grappe_fabric_tcp::LinkError,
    },
    /// The network links between the hosts of the job could not be set up
    /// (the message says what went wrong, with whom).
    #[error("network: {0}")]
    NetworkSetUp(String),
    /// A process published a network address that does not parse.
    #[error("process {process} published the address {value:?}, which is not an IP address and port")]
    NetworkAddress {
        /// The process (its PMI rank).
        process: usize,
        /// What it published.
        value: String,
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
    /// A rank could not read the match log it replays.
    #[error("rank {rank} cannot replay the match log {}: {source}", path.display())]
    MatchLog {
        /// The rank (world numbering).
        rank: usize,
        /// Its log file.
        path: PathBuf,
        /// The system's answer, or what is wrong in the file.
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
        let address = StartError::NetworkAddress { process: 2, value: "nowhere".into() }.to_string();
        assert_eq!(address, "process 2 published the address \"nowhere\", which is not an IP address and port");
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
