//! Channels and protocols: how a message gets from one rank to another.
//!
//! * **eager**: a message up to [`ProtoSettings::eager_max`] is copied into
//!   the receiver's mailbox and out of it on receipt;
//! * **rendezvous**: a larger message waits in the sender's buffer until the
//!   receive matches, then moves with a single copy done cooperatively by
//!   both ends (see `rendezvous`);
//! * **hand-over**: a heap buffer sent to a thread of the same process moves
//!   by ownership, with no copy at all;
//! * **staged**: when cross-memory attach is refused between two processes,
//!   or to a rank of another host, large messages are cut into fragments
//!   pipelined through the mailbox or link;
//! * **pull**: to a rank of another host, a message of at least
//!   [`ProtoSettings::net_pull_min`] waits in its sender's buffer until a
//!   receive takes it and its receiver asks for its bytes.
//!
//! Matching follows MPI: per (communicator context, source, tag), wildcards
//! on source and tag, receives matched in posting order, messages from one
//! source never overtaking each other.
#![warn(unsafe_op_in_unsafe_fn, missing_docs)]

mod board;
mod engine;
mod error;
mod matching;
mod owned;
mod rendezvous;
mod request;
pub mod schedule;
mod settings;
pub mod stop;
pub mod wire;

pub use board::CallBoard;
pub use engine::{
    CLAIMED_CTX, Engine, EngineStats, Failure, InTransit, InTransitError, RankBell, RemoteLink, announce, mark_stopped,
};
pub use error::{Call, Error, ErrorClass, Mismatch, Result, Status};
pub use owned::OwnedBytes;
pub use request::{Completion, RecvTarget, RequestId, Started};
pub use schedule::{BufferId, Schedule};
pub use settings::ProtoSettings;
