//! Errors that say who is to blame: the network, the disk, the other end
//! (a refusal it explained), or bytes that break the protocol.

use std::path::PathBuf;
use std::time::Duration;

/// A fault-tolerance error.
#[derive(Debug, thiserror::Error)]
pub enum FtError {
    /// Reading or writing the connection failed.
    #[error("{what}: {source}")]
    Net {
        /// What was being done, with whom.
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// A file of the store could not be used.
    #[error("{}: {source}", path.display())]
    Disk {
        /// The file or directory.
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The other end did not answer in time (a stopped or hung server, a
    /// dead network): the call was given up.
    #[error("{peer} did not answer within {:.1} s ({what})", after.as_secs_f64())]
    Silent {
        /// The server or client address.
        peer: String,
        /// What was being waited for.
        what: String,
        /// The time allowed.
        after: Duration,
    },
    /// The other end refused the request and said why.
    #[error("refused by {peer}: {reason}")]
    Refused {
        /// The server or client address.
        peer: String,
        /// Its words.
        reason: String,
    },
    /// Bytes that break the protocol, from the peer or in a stored file.
    #[error("{source_name} at byte {offset}: expected {expected}")]
    Protocol {
        /// The connection or file.
        source_name: String,
        /// Where in its stream.
        offset: u64,
        /// What should have been there (and what was).
        expected: String,
    },
    /// A stored image whose checksum does not match its bytes.
    #[error("{}: image of rank {rank}, wave {wave} is corrupt: {detail}", path.display())]
    Corrupt {
        /// The image file (on the server).
        path: PathBuf,
        /// The rank and wave it holds.
        rank: u32,
        wave: u64,
        /// What does not match.
        detail: String,
    },
    /// A name or number the request cannot have.
    #[error("invalid request: {0}")]
    Invalid(String),
    /// A communication call of the checkpoint protocol failed.
    #[error("checkpoint wave {wave}: {source}")]
    Runtime {
        /// The wave (0 while restoring).
        wave: u64,
        #[source]
        source: grappe_comm::Error,
    },
    /// A setting that cannot be used.
    #[error(transparent)]
    Setting(#[from] grappe_settings::SettingError),
    /// A job name the servers cannot have.
    #[error("invalid request: {0}")]
    JobName(#[from] crate::wire::BadJobName),
    /// The checkpoint directory is another running job's.
    #[error("checkpoint directory {} is in use by another running job (its rank 0 holds {})", dir.display(), lock.display())]
    DirectoryInUse {
        /// The directory.
        dir: PathBuf,
        /// The lock file that job's rank 0 holds.
        lock: PathBuf,
    },
    /// A commit record that cannot be read.
    #[error("commit record {}: {error}", path.display())]
    Record {
        /// The record's file.
        path: PathBuf,
        #[source]
        error: crate::local::RecordError,
    },
    /// The commit record that rank 0 shared holds waves no record can.
    #[error("the commit record rank 0 shared: {0}")]
    SharedRecord(#[source] crate::local::BadWaves),
    /// The commit record could not be written (rank 0 said why).
    #[error("the commit record {} cannot be written (rank 0 says why): the job cannot checkpoint", path.display())]
    RecordNotWritten {
        /// The record's file.
        path: PathBuf,
    },
    /// A checkpoint server refused the job at its start: the job does not
    /// start unprotected.
    #[error(
        "{}; not starting a job its servers would not protect (check GRAPPE_CKPT_SECRET and the server list)",
        match (server, refusal) {
            (Some(server), Some(refusal)) => format!("checkpoint server {server} refused the job: {refusal}"),
            _ => "a checkpoint server refused the job (rank 0 says which)".to_owned(),
        }
    )]
    JobRefused {
        /// The server, on rank 0 (the other ranks learn only that one did).
        server: Option<String>,
        /// Its refusal, on rank 0.
        #[source]
        refusal: Option<Box<FtError>>,
    },
    /// The application's state could not be encoded or decoded.
    #[error("rank {rank}: the application state of wave {wave} cannot be {what}: {detail}")]
    State {
        /// The rank.
        rank: usize,
        /// The wave.
        wave: u64,
        /// "saved" or "restored".
        what: &'static str,
        /// The encoder's words.
        detail: String,
    },
}

/// Results of this crate.
pub type Result<T, E = FtError> = std::result::Result<T, E>;
