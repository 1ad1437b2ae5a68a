//! Communicators and collectives: the API a grappe rank programs against.
//!
//! Familiar to users of MPI and rsmpi: a world [`Communicator`], `rank()`
//! and `size()`, `dup` and `split`; blocking `send`/`recv`/`sendrecv`;
//! non-blocking `isend`/`irecv` inside a [`Scope`]; `probe`/`iprobe`; tags
//! and wildcards ([`ANY_SOURCE`], [`ANY_TAG`]); plain-old-data buffers
//! (`bytemuck::Pod`), vectors moved without copy between thread ranks, and
//! any `serde` type.
#![warn(unsafe_op_in_unsafe_fn, missing_docs)]

mod buffer;
mod call_cost;
pub mod coll;
mod communicator;
mod error;
mod handlers;
mod idup;
mod intercomm;
mod internal;
mod matched;
pub mod matches;
mod p2p;
mod rank;
mod scope;
mod selectors;
mod trace;

pub use buffer::{Buffer, BufferMut};
pub use coll::inter::{InterCollective, InterRoot};
pub use coll::nonblocking::{Combine, Deliver, NonBlocking};
pub use coll::ops::{BitAnd, BitOr, BitXor, Max, Min, Operation, Prod, Sum, UserOp};
pub use coll::{ARENAS, arena_bytes};
pub use communicator::Communicator;
pub use error::{Error, Result, SizeProblem};
pub use grappe_proto::{Call, ErrorClass, InTransit, Mismatch, RankBell, Status};
pub use grappe_trace::CollectiveKind;
pub use handlers::{ErrorHandler, FATAL_ERROR_EXIT_CODE};
pub use idup::{PendingDup, PendingGroup, PendingMerge, PendingSplit};
pub use matched::Message;
pub use rank::{JobControl, RankContext};
pub use scope::{Request, Scope, ScopeResult, test_all, wait_all, wait_any};
pub use selectors::{ANY_SOURCE, ANY_TAG, Source, TAG_UB, Tag};
pub use trace::{Region, set_foreign_caller};
