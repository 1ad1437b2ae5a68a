//! Collective operations.
//!
//! Each collective picks its algorithm from the data size and the number
//! of ranks: a shared-memory exchange (`arena`) for small data when the
//! communicator has an arena, message-based algorithms otherwise (binomial
//! trees, recursive doubling, Bruck, rings, pairwise exchange and
//! Rabenseifner for large vectors). Each file's header has its table of
//! choices and each threshold says why it is where it is.
//!
//! Collective traffic uses the communicator's second context, so it never
//! matches user receives; each collective's tags carry its family
//! (`tags`) and the call's signature (`signature`).
//!
//! Conventions of the API, as in MPI:
//! - every rank calls the same collectives in the same order, with the
//!   same root and matching sizes; sizes a rank can check on its own are
//!   checked ([`Error::BufferSize`](crate::Error::BufferSize) with the
//!   numbers);
//! - calls that do not match across ranks are found where they show: a
//!   message whose length or signature (carried in its tag, see
//!   `signature`) is not what the receiver's call expects, the arena's
//!   comparison of every rank's signature, and a wait that nobody ends
//!   (the waiter asks its peer where it stands, `board`; an arena waiter
//!   reads the other ranks' headers). The rank that finds one revokes the
//!   communicator's collectives: every rank then gets
//!   [`Error::CollectiveMismatch`](crate::Error::CollectiveMismatch), with
//!   the ranks and sizes, from the call that cannot give it right data or
//!   would wait forever, and from every later collective on that
//!   communicator. A rank whose data is right may return `Ok`;
//! - arguments significant only at the root (the root's receive buffer of
//!   `reduce` and `gather`, the send buffer of `scatter`, the counts of
//!   `gatherv` and `scatterv`) may be empty elsewhere: `&mut []`, `&[]`;
//! - the variable-size collectives take counts per rank and lay the
//!   blocks end to end in rank order (displacements are implied).

mod allgather;
mod allreduce;
mod alltoall;
mod arena;
mod barrier;
mod bcast;
mod binomial;
pub(crate) mod board;
mod common;
mod gather;
mod halving;
pub(crate) mod hosts;
pub mod inter;
pub mod nonblocking;
pub mod ops;
mod reduce;
mod reduce_scatter;
mod scan;
mod scatter;
mod signature;
mod xfer;

pub use arena::{ARENAS, SLOT_BYTES, arena_bytes};

use crate::Communicator;

/// Families of the tags of collective traffic on the collective context,
/// one per collective (communicator management uses `TAG_UB`, clock
/// sampling `TAG_UB - 1`), in a tag's low 4 bits; the others carry the
/// call's signature (`signature`). Messages of one pair on one context
/// never overtake each other and collectives are called in the same
/// order everywhere, so receives match any tag and check it afterwards.
pub(crate) mod tags {
    pub const BARRIER: i32 = 1;
    pub const ALLREDUCE: i32 = 2;
    pub const BCAST: i32 = 3;
    pub const REDUCE: i32 = 4;
    pub const GATHER: i32 = 5;
    pub const SCATTER: i32 = 6;
    pub const ALLGATHER: i32 = 7;
    pub const ALLTOALL: i32 = 8;
    pub const SCAN: i32 = 9;
    pub const REDUCE_SCATTER: i32 = 10;
}

impl Communicator {
    /// True if the small collectives of this communicator go through a
    /// shared-memory arena: all its ranks share a host, and an arena was
    /// free when it was created. Otherwise every collective uses messages.
    pub fn has_shared_arena(&self) -> bool {
        self.arena_index().is_some()
    }
}
