//! The start and the end of a job, for every way into grappe: the Rust
//! API's `grappe::run`, and MPI's `MPI_Init` / `MPI_Finalize` in the C
//! library.
//!
//! [`Runtime::from_environment`] asks the process manager (PMI-1 from
//! `grappe run` or MPICH's hydra, PMI-2 from Slurm, or none: a singleton)
//! who this process is, agrees with the other processes on the ranks each
//! hosts and on the host segment they share, and reads the settings. Each
//! rank is then started ([`Runtime::start_rank`]: its engine connected, its
//! trace begun), runs, and ends ([`Rank::finish`]: its trace completed, a
//! final barrier) or fails ([`Rank::fail`]: marked failed so its peers
//! stop waiting, reported once for the job).
#![forbid(unsafe_code)]

mod error;
mod job;
mod matches;
mod network;
mod process;
mod settings;
pub mod testing;
mod tracing;

pub use error::StartError;
pub use process::{Rank, RankFailure, RunFailure, Runtime, exit_failed, say};
