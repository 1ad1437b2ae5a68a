//! Collective operations.
//!
//! Each collective picks its algorithm from the data size and the number
//! of ranks: a shared-memory exchange ([`arena`]) for small data when the
//! communicator has an arena, message-based algorithms otherwise (binomial
//! trees, recursive doubling, rings and Rabenseifner for large vectors).
//! Collective traffic uses the communicator's second context, so it never
//! matches user receives.

pub(crate) mod arena;
mod allreduce;
mod barrier;
pub mod ops;

pub use arena::{ARENAS, SLOT_BYTES, arena_bytes};
