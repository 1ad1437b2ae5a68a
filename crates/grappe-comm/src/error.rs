//! The errors a grappe program sees.
//!
//! One flat enum for every call of the API, whichever layer found the
//! problem:
//!
//! * the API's own: a rank or tag outside the communicator's, buffers whose
//!   sizes do not fit the call, a freed communicator, a value that does not
//!   (de)serialise, a cancelled request. The caller is to blame.
//! * the engine's (`grappe_proto::Error`), taken over variant by variant by
//!   [`From<grappe_proto::Error>`]: a truncated message, a collective whose
//!   calls do not match, a dead peer, a job being stopped, a corrupt
//!   record, the fabric failing. Each keeps the engine's fields and text.
//!
//! Flat rather than nested (`Error::Engine(grappe_proto::Error::PeerDied
//! {..})`): a program matches `Error::PeerDied { rank, .. }` whether the
//! engine or a collective found the death, and which crate produced an
//! error is the runtime's business, not its user's. MPI thinks the same
//! way, one error class per failure whatever the layer. The price is that
//! this enum repeats the engine's variants; a test checks that each one
//! converts to its namesake with the same text and class.
//!
//! The engine's enum is `#[non_exhaustive]` like this one: a cause it gains
//! before this enum names it arrives as [`Error::Engine`], with its own text
//! and class.

use grappe_fabric::FabricError;
use grappe_proto::{ErrorClass, Mismatch};

/// What went wrong. `#[non_exhaustive]`: new causes will appear.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A rank number outside the communicator.
    #[error("invalid rank {rank} for a communicator of size {size}")]
    InvalidRank {
        /// The rank given.
        rank: usize,
        /// The communicator size.
        size: usize,
    },
    /// A tag outside `0..=TAG_UB`, or a wildcard where a real tag is needed.
    #[error("invalid tag {tag}: tags are 0..={max} (wildcards only when receiving)")]
    InvalidTag {
        /// The tag given.
        tag: i32,
        /// The largest valid tag.
        max: i32,
    },
    /// The message is longer than the receive buffer.
    #[error(
        "message truncated: {message_bytes} bytes from rank {source_rank} (tag {tag}) into a {buffer_bytes}-byte buffer"
    )]
    Truncated {
        /// Sender, as a rank of the communicator.
        source_rank: usize,
        /// Tag of the message.
        tag: i32,
        /// Bytes sent.
        message_bytes: usize,
        /// Bytes the receive could hold.
        buffer_bytes: usize,
    },
    /// The message length is not a whole number of elements of the
    /// receive type.
    #[error("type size mismatch: {bytes} bytes received are not a whole number of {type_size}-byte elements")]
    TypeSizeMismatch {
        /// Bytes received.
        bytes: usize,
        /// Size of one element of the receive type.
        type_size: usize,
    },
    /// The ranks called a collective with sizes (or roots, or collectives)
    /// that do not match, as MPI forbids: found where a message or the
    /// shared-memory exchange showed it. The communicator's collectives are
    /// revoked by then: every rank of it gets this error from the call in
    /// which it learns of the mismatch, and from every later collective on
    /// that communicator, instead of data built from inconsistent parts
    /// or a wait for a peer that will never send.
    #[error("{0}")]
    CollectiveMismatch(Box<Mismatch>),
    /// Buffers of a collective do not have the sizes the operation needs.
    #[error("invalid buffer size in {op}: {detail}")]
    BufferSize {
        /// The operation.
        op: &'static str,
        /// What is wrong, with the numbers.
        detail: SizeProblem,
    },
    /// The communicator was freed; handles to it are no longer valid.
    #[error("communicator was freed")]
    CommFreed,
    /// The call needs an intercommunicator and was given an
    /// intracommunicator.
    #[error("the communicator is not an intercommunicator")]
    NotIntercomm,
    /// The call needs an intracommunicator and was given an
    /// intercommunicator.
    #[error("the communicator is an intercommunicator, and the call takes an intracommunicator")]
    NotIntracomm,
    /// The remote leader named to make an intercommunicator is a member
    /// of the local group.
    #[error(
        "remote leader {rank} of the peer communicator is world rank {world}, a member of the local group: it must belong to the other group"
    )]
    RemoteLeaderInGroup {
        /// The remote leader, as a rank of the peer communicator.
        rank: usize,
        /// Its world rank.
        world: usize,
    },
    /// This group's leader could not agree with the other group's while
    /// making an intercommunicator (its own call says why).
    #[error("the group's leader, world rank {leader}, could not join the other group (its call failed, saying why)")]
    LeaderFailed {
        /// The leader (world numbering).
        leader: usize,
    },
    /// A serialised message could not be decoded into the requested type.
    #[error("cannot decode a {bytes}-byte message from rank {source_rank} as {type_name}: {reason}")]
    Deserialize {
        /// Sender.
        source_rank: usize,
        /// Message size.
        bytes: usize,
        /// The requested type.
        type_name: &'static str,
        /// The decoder's complaint.
        reason: String,
    },
    /// A value could not be serialised.
    #[error("cannot serialise a {type_name}: {reason}")]
    Serialize {
        /// The type.
        type_name: &'static str,
        /// The encoder's complaint.
        reason: String,
    },
    /// A peer rank died (killed, crashed, aborted) while we needed it.
    #[error("rank {rank} (pid {pid}) is gone: {cause}")]
    PeerDied {
        /// The dead rank (world numbering).
        rank: usize,
        /// Its process.
        pid: u32,
        /// How we found out.
        cause: String,
    },
    /// A rank of another host is lost: its connection broke before it said
    /// it finalized, or it announced a failure.
    #[error("rank {rank} on host {host} is lost: {cause}")]
    PeerLost {
        /// The lost rank (world numbering).
        rank: usize,
        /// Its host.
        host: String,
        /// How we found out.
        cause: String,
    },
    /// The job is being stopped: this process received `signal` (the
    /// launcher stops every process when one fails). Runtime calls fail
    /// with it so that each rank unwinds and keeps its trace.
    #[error("the job is being stopped (signal {signal} received)")]
    Stopped {
        /// The signal received (SIGTERM).
        signal: i32,
    },
    /// The request was cancelled before it matched.
    #[error("request was cancelled")]
    Cancelled,
    /// A record in a mailbox could not be decoded: memory corruption or a
    /// foreign process writing into the segment.
    #[error("corrupt record from rank {source_rank}: {detail}")]
    Corrupt {
        /// The ring the record came from.
        source_rank: usize,
        /// What was wrong.
        detail: String,
    },
    /// The fabric failed underneath.
    #[error(transparent)]
    Fabric(#[from] FabricError),
    /// A peer had not announced itself in the host segment when this rank
    /// connected: start-up went wrong.
    #[error("rank {rank} did not announce itself in the host segment")]
    NotAnnounced {
        /// The missing rank (world numbering).
        rank: usize,
    },
    /// An error of the engine that this enum does not name yet.
    #[error(transparent)]
    Engine(grappe_proto::Error),
    /// This rank's trace could not be written: the call it records, or
    /// the end of the trace, failed.
    #[error("cannot {action} the trace of rank {rank}: {source}")]
    Trace {
        /// The rank (world numbering).
        rank: usize,
        /// What could not be done: "write clock samples into", "complete".
        action: &'static str,
        /// The system's answer.
        #[source]
        source: std::io::Error,
    },
    /// Under `--replay-matches`, a wildcard call the match log cannot
    /// steer: the program took another path than the recorded run.
    #[error("rank {rank}: wildcard call #{index} cannot follow the match log {}: {detail}", log.display())]
    ReplayDiverged {
        /// The rank (world numbering).
        rank: usize,
        /// The call's index among the rank's wildcard calls, from 0.
        index: usize,
        /// The log file.
        log: std::path::PathBuf,
        /// How the call differs from the log.
        detail: String,
    },
}

/// What is wrong with the buffers or counts of a call, with the numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SizeProblem {
    /// A buffer of the wrong length.
    #[error("{buffer} has {elements} elements, expected {expected}")]
    Length {
        /// Which buffer ("the receive buffer at the root").
        buffer: &'static str,
        /// Its length.
        elements: usize,
        /// The length the call needs.
        expected: usize,
    },
    /// Per-rank counts that do not name every rank.
    #[error("{counts} has {entries} entries for a communicator of {ranks} ranks")]
    Counts {
        /// Which counts ("receive counts").
        counts: &'static str,
        /// Their number.
        entries: usize,
        /// The communicator's size.
        ranks: usize,
    },
    /// A buffer that does not split into one block per rank.
    #[error("{buffer} has {elements} elements, not a multiple of the {ranks} ranks")]
    NotPerRank {
        /// Which buffer.
        buffer: &'static str,
        /// Its length.
        elements: usize,
        /// The communicator's size.
        ranks: usize,
    },
    /// A buffer that is not one block per rank of the length received.
    #[error("{buffer} has {elements} elements, expected {ranks} ranks × {block} received")]
    Blocks {
        /// Which buffer.
        buffer: &'static str,
        /// Its length.
        elements: usize,
        /// The communicator's size.
        ranks: usize,
        /// The block each rank receives.
        block: usize,
    },
    /// A rank's block to itself that differs between its sends and its
    /// receives.
    #[error("rank {rank} sends itself {sends} elements but expects {expects} from itself")]
    SelfBlock {
        /// The rank.
        rank: usize,
        /// Elements it sends itself.
        sends: usize,
        /// Elements it expects from itself.
        expects: usize,
    },
    /// No request to wait for.
    #[error("no requests")]
    NoRequests,
}

/// Result of grappe operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<grappe_proto::Error> for Error {
    fn from(error: grappe_proto::Error) -> Error {
        use grappe_proto::Error as Engine;
        match error {
            Engine::Truncated { source_rank, tag, message_bytes, buffer_bytes } => {
                Error::Truncated { source_rank, tag, message_bytes, buffer_bytes }
            }
            Engine::CollectiveMismatch(why) => Error::CollectiveMismatch(why),
            Engine::PeerDied { rank, pid, cause } => Error::PeerDied { rank, pid, cause },
            Engine::PeerLost { rank, host, cause } => Error::PeerLost { rank, host, cause },
            Engine::Stopped { signal } => Error::Stopped { signal },
            Engine::Corrupt { source_rank, detail } => Error::Corrupt { source_rank, detail },
            Engine::Fabric(e) => Error::Fabric(e),
            Engine::NotAnnounced { rank } => Error::NotAnnounced { rank },
            other => Error::Engine(other),
        }
    }
}

impl Error {
    /// The MPI error class of this error.
    pub fn class(&self) -> ErrorClass {
        match self {
            Error::InvalidRank { .. } | Error::RemoteLeaderInGroup { .. } => ErrorClass::Rank,
            Error::InvalidTag { .. } => ErrorClass::Tag,
            Error::Truncated { .. } | Error::CollectiveMismatch(_) => ErrorClass::Truncate,
            Error::TypeSizeMismatch { .. } | Error::Deserialize { .. } | Error::Serialize { .. } => ErrorClass::Type,
            Error::BufferSize { .. } => ErrorClass::Count,
            Error::CommFreed | Error::NotIntercomm | Error::NotIntracomm => ErrorClass::Comm,
            Error::PeerDied { .. } | Error::PeerLost { .. } | Error::Stopped { .. } => ErrorClass::ProcFailed,
            Error::Engine(e) => e.class(),
            Error::Cancelled
            | Error::LeaderFailed { .. }
            | Error::Corrupt { .. }
            | Error::Fabric(_)
            | Error::NotAnnounced { .. }
            | Error::Trace { .. }
            | Error::ReplayDiverged { .. } => ErrorClass::Other,
        }
    }

    /// The same error again, for a failure reported more than once (a
    /// request whose test said it failed, waited for afterwards).
    pub fn repeat(&self) -> Error {
        match self {
            Error::InvalidRank { rank, size } => Error::InvalidRank { rank: *rank, size: *size },
            Error::InvalidTag { tag, max } => Error::InvalidTag { tag: *tag, max: *max },
            &Error::Truncated { source_rank, tag, message_bytes, buffer_bytes } => {
                Error::Truncated { source_rank, tag, message_bytes, buffer_bytes }
            }
            Error::TypeSizeMismatch { bytes, type_size } => {
                Error::TypeSizeMismatch { bytes: *bytes, type_size: *type_size }
            }
            Error::CollectiveMismatch(mismatch) => Error::CollectiveMismatch(mismatch.clone()),
            Error::BufferSize { op, detail } => Error::BufferSize { op, detail: *detail },
            Error::CommFreed => Error::CommFreed,
            Error::NotIntercomm => Error::NotIntercomm,
            Error::NotIntracomm => Error::NotIntracomm,
            Error::RemoteLeaderInGroup { rank, world } => Error::RemoteLeaderInGroup { rank: *rank, world: *world },
            Error::LeaderFailed { leader } => Error::LeaderFailed { leader: *leader },
            Error::Deserialize { source_rank, bytes, type_name, reason } => {
                Error::Deserialize { source_rank: *source_rank, bytes: *bytes, type_name, reason: reason.clone() }
            }
            Error::Serialize { type_name, reason } => Error::Serialize { type_name, reason: reason.clone() },
            Error::PeerDied { rank, pid, cause } => Error::PeerDied { rank: *rank, pid: *pid, cause: cause.clone() },
            Error::PeerLost { rank, host, cause } => {
                Error::PeerLost { rank: *rank, host: host.clone(), cause: cause.clone() }
            }
            Error::Stopped { signal } => Error::Stopped { signal: *signal },
            Error::Cancelled => Error::Cancelled,
            Error::Corrupt { source_rank, detail } => {
                Error::Corrupt { source_rank: *source_rank, detail: detail.clone() }
            }
            Error::Fabric(e) => Error::Fabric(e.repeat()),
            Error::NotAnnounced { rank } => Error::NotAnnounced { rank: *rank },
            Error::Engine(e) => Error::Engine(e.repeat()),
            Error::Trace { rank, action, source } => Error::Trace { rank: *rank, action, source: io_again(source) },
            Error::ReplayDiverged { rank, index, log, detail } => {
                Error::ReplayDiverged { rank: *rank, index: *index, log: log.clone(), detail: detail.clone() }
            }
        }
    }
}

/// A system error again: its error number, or its kind and text.
fn io_again(error: &std::io::Error) -> std::io::Error {
    match error.raw_os_error() {
        Some(code) => std::io::Error::from_raw_os_error(code),
        None => std::io::Error::new(error.kind(), error.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use std::io;

    use grappe_proto::Call;

    use super::*;

    /// One of each error the engine produces today.
    fn engine_errors() -> Vec<grappe_proto::Error> {
        use grappe_proto::Error as Engine;
        let mismatch = Mismatch {
            op: "bcast".into(),
            found_by: 1,
            calls: vec![Call { rank: 1, op: None, bytes: Some(8), root: Some(0) }],
            evidence: "a message of 4 bytes".into(),
        };
        let copy = io::Error::from(io::ErrorKind::PermissionDenied);
        vec![
            Engine::Truncated { source_rank: 3, tag: 7, message_bytes: 100, buffer_bytes: 10 },
            Engine::CollectiveMismatch(Box::new(mismatch)),
            Engine::PeerDied { rank: 2, pid: 4242, cause: "its process exited during a transfer".into() },
            Engine::Stopped { signal: 15 },
            Engine::Corrupt { source_rank: 1, detail: "first fragment of 9 bytes for a 4-byte message".into() },
            Engine::Fabric(FabricError::CrossMemory { direction: "to", pid: 4242, len: 65536, source: copy }),
            Engine::NotAnnounced { rank: 5 },
        ]
    }

    #[test]
    fn every_engine_error_becomes_its_namesake_with_the_same_text_and_class() {
        for engine in engine_errors() {
            let (text, class, shown) = (engine.to_string(), engine.class(), format!("{engine:?}"));
            let error = Error::from(engine);
            assert!(!matches!(error, Error::Engine(_)), "{shown} has no namesake");
            let name = |debug: &str| debug.split([' ', '(', '{']).next().unwrap_or_default().to_owned();
            assert_eq!(name(&format!("{error:?}")), name(&shown));
            assert_eq!(error.to_string(), text, "{shown}");
            assert_eq!(error.class(), class, "{shown}");
            assert_eq!(error.repeat().to_string(), text, "{shown}");
        }
    }

    #[test]
    fn users_match_the_engine_errors_flatly() {
        let died = Error::from(grappe_proto::Error::PeerDied { rank: 2, pid: 7, cause: "killed".into() });
        assert!(matches!(died, Error::PeerDied { rank: 2, pid: 7, .. }));
        assert_eq!(died.class(), ErrorClass::ProcFailed);
        let cut =
            Error::from(grappe_proto::Error::Truncated { source_rank: 0, tag: 1, message_bytes: 9, buffer_bytes: 8 });
        assert!(matches!(cut, Error::Truncated { message_bytes: 9, buffer_bytes: 8, .. }));
        assert_eq!(cut.class(), ErrorClass::Truncate);
    }

    #[test]
    fn a_trace_error_names_the_rank_and_keeps_its_error_number_when_repeated() {
        let error = Error::Trace { rank: 3, action: "complete", source: io::Error::from_raw_os_error(28) };
        assert!(error.to_string().starts_with("cannot complete the trace of rank 3: "), "{error}");
        let Error::Trace { source, .. } = error.repeat() else { panic!("a trace error") };
        assert_eq!(source.raw_os_error(), Some(28));
    }

    #[test]
    fn api_errors_have_their_mpi_classes() {
        for (error, class) in [
            (Error::InvalidRank { rank: 4, size: 4 }, ErrorClass::Rank),
            (Error::InvalidTag { tag: -3, max: 100 }, ErrorClass::Tag),
            (Error::TypeSizeMismatch { bytes: 3, type_size: 2 }, ErrorClass::Type),
            (Error::BufferSize { op: "wait_any", detail: SizeProblem::NoRequests }, ErrorClass::Count),
            (Error::CommFreed, ErrorClass::Comm),
            (Error::Cancelled, ErrorClass::Other),
            (Error::Trace { rank: 1, action: "complete", source: io::Error::from_raw_os_error(28) }, ErrorClass::Other),
        ] {
            assert_eq!(error.class(), class, "{error}");
        }
    }
}
