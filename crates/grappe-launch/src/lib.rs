//! Launching grappe jobs and bootstrapping their ranks.
//!
//! - [`pmi`]: the rank side. [`pmi::connect_from_env`] finds the process manager that started
//!   this process (`grappe run`, MPICH's hydra, Slurm's `srun`, or none) and gives a small
//!   [`pmi::Pmi`] interface: rank, size, put / fence / get, barrier, finalize, abort.
//! - [`launcher`]: the launcher side. [`launcher::launch`] starts a job's processes on this host,
//!   serves them PMI-1 ([`server`]), forwards their output and stops the whole job when one
//!   process fails. `grappe run` is a thin wrapper over it.
//! - [`hosts`]: jobs across hosts: placement, the per-host agent (`grappe agent`) and its channel.
//! - [`mod@env`]: every environment variable between launcher and ranks, documented in one place.
//! - [`wire`]: the PMI-1 and PMI-2 wire formats as pure, fuzzed parsers and encoders.
#![deny(unsafe_code)] // Allowed only in `pmi::transport` and `launcher::spawn`, each argued.
#![warn(unsafe_op_in_unsafe_fn)]
#![warn(missing_debug_implementations)]

pub mod env;
pub mod hosts;
mod ids;
pub mod launcher;
pub mod pmi;
pub mod server;
pub mod wire;

pub use ids::new_job_id;
pub use launcher::{JobOutcome, LaunchError, LaunchSpec, launch};
pub use pmi::{Pmi, PmiError, PmiKind, connect_from_env};
