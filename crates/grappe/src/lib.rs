//! # grappe
//!
//! A runtime for message-passing parallel programs on clusters. A program
//! is written once:
//!
//! ```no_run
//! grappe::run(|world| {
//!     let rank = world.rank() as f64;
//!     let mut sum = 0.0;
//!     world.allreduce(&rank, &mut sum, grappe::Sum).unwrap();
//!     if world.rank() == 0 {
//!         println!("sum of ranks = {sum}");
//!     }
//! });
//! ```
//!
//! and the launch decides how ranks are placed: `grappe run -n 4 --threads
//! ./prog` (one process, four thread ranks), `grappe run -n 4 ./prog` (four
//! processes sharing memory), `grappe run -n 8 --threads-per-process 4`
//! (both), MPICH's `mpiexec -n 4 ./prog`, Slurm's `srun -n 4 ./prog`, or
//! just `./prog` (one rank).
//!
//! The layers, bottom up: `grappe-fabric` (shared segments, mailboxes,
//! single-copy put/get), `grappe-sched` (ranks as user-level threads,
//! waiting), `grappe-proto` (matching, eager and rendezvous protocols),
//! `grappe-comm` (communicators, collectives), `grappe-launch` (PMI,
//! launcher). This crate re-exports what programs need.

#![forbid(unsafe_code)]

pub mod ft;
mod run;

pub use grappe_comm::Region;
pub use grappe_comm::{
    ANY_SOURCE, ANY_TAG, BitAnd, BitOr, BitXor, Buffer, BufferMut, Call, Combine, Communicator, Deliver, Error,
    ErrorClass, ErrorHandler, FATAL_ERROR_EXIT_CODE, InterCollective, InterRoot, Max, Min, Mismatch, NonBlocking,
    Operation, PendingDup, Prod, Request, Result, Scope, ScopeResult, SizeProblem, Source, Status, Sum, TAG_UB, Tag,
    UserOp, test_all, wait_all, wait_any,
};
pub use grappe_runtime::{StartError, testing};
pub use run::{RankResult, run};

// Creations agreed without blocking beside `PendingDup`: splits.
pub use grappe_comm::PendingSplit;
