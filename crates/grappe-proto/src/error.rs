//! The errors a grappe program sees, and the status of a received message.
//!
//! One enum for the whole runtime, so that users match on one type. Every
//! variant carries the numbers that explain it, and [`Error::class`] maps it
//! to the MPI error class a C or Fortran user would expect.

use grappe_fabric::FabricError;

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
    /// Buffers of a collective do not have the sizes the operation needs.
    #[error("invalid buffer size in {op}: {detail}")]
    BufferSize {
        /// The operation.
        op: &'static str,
        /// What is wrong, with the numbers.
        detail: String,
    },
    /// The communicator was freed; handles to it are no longer valid.
    #[error("communicator was freed")]
    CommFreed,
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
    /// Start-up of the job failed.
    #[error("cannot start the job: {0}")]
    Bootstrap(String),
}

/// MPI error classes, for the C ABI and for users who think in them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorClass {
    /// MPI_ERR_RANK
    Rank,
    /// MPI_ERR_TAG
    Tag,
    /// MPI_ERR_TRUNCATE
    Truncate,
    /// MPI_ERR_TYPE
    Type,
    /// MPI_ERR_COUNT / MPI_ERR_BUFFER
    Count,
    /// MPI_ERR_COMM
    Comm,
    /// MPI_ERR_PROC_FAILED (ULFM)
    ProcFailed,
    /// MPI_ERR_OTHER
    Other,
}

impl Error {
    /// The MPI error class of this error.
    pub fn class(&self) -> ErrorClass {
        match self {
            Error::InvalidRank { .. } => ErrorClass::Rank,
            Error::InvalidTag { .. } => ErrorClass::Tag,
            Error::Truncated { .. } => ErrorClass::Truncate,
            Error::TypeSizeMismatch { .. } | Error::Deserialize { .. } | Error::Serialize { .. } => ErrorClass::Type,
            Error::BufferSize { .. } => ErrorClass::Count,
            Error::CommFreed => ErrorClass::Comm,
            Error::PeerDied { .. } | Error::Stopped { .. } => ErrorClass::ProcFailed,
            Error::Cancelled | Error::Corrupt { .. } | Error::Fabric(_) | Error::Bootstrap(_) => ErrorClass::Other,
        }
    }
}

impl Error {
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
            Error::BufferSize { op, detail } => Error::BufferSize { op, detail: detail.clone() },
            Error::CommFreed => Error::CommFreed,
            Error::Deserialize { source_rank, bytes, type_name, reason } => {
                Error::Deserialize { source_rank: *source_rank, bytes: *bytes, type_name, reason: reason.clone() }
            }
            Error::Serialize { type_name, reason } => Error::Serialize { type_name, reason: reason.clone() },
            Error::PeerDied { rank, pid, cause } => Error::PeerDied { rank: *rank, pid: *pid, cause: cause.clone() },
            Error::Stopped { signal } => Error::Stopped { signal: *signal },
            Error::Cancelled => Error::Cancelled,
            Error::Corrupt { source_rank, detail } => {
                Error::Corrupt { source_rank: *source_rank, detail: detail.clone() }
            }
            Error::Fabric(e) => Error::Fabric(e.repeat()),
            Error::Bootstrap(why) => Error::Bootstrap(why.clone()),
        }
    }
}

/// Result of grappe operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What a completed receive or a probe tells about a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Status {
    /// Sender, as a rank of the communicator the message was received on.
    pub source: usize,
    /// The message tag.
    pub tag: i32,
    /// Length of the message in bytes.
    pub bytes: usize,
}

impl Status {
    /// Number of `T` elements in the message, if it is a whole number.
    pub fn count<T>(&self) -> Option<usize> {
        let size = std::mem::size_of::<T>();
        if size == 0 {
            return Some(0);
        }
        (self.bytes % size == 0).then_some(self.bytes / size)
    }
}
