//! How ranks run and how they wait.
//!
//! Thread ranks are user-level threads (stackful coroutines) multiplexed on
//! one worker OS thread per core, as in MPC: a rank that blocks in a
//! communication call yields to its worker, which resumes the next rank, so
//! switching costs tens of nanoseconds instead of an OS wake-up. When every
//! rank of a worker is blocked, the worker keeps polling them (each resume
//! is one poll of that rank's wait condition), then yields the core to the
//! OS, then sleeps on its [`Doorbell`](grappe_fabric::Doorbell) until a
//! sender rings it.
//!
//! A rank alone on its OS thread (a process rank, or a thread rank when
//! ranks do not outnumber cores) waits the same way without coroutines:
//! spin briefly, yield, then sleep. When ranks outnumber cores the spin
//! phase is skipped, since spinning would only steal time from the rank
//! being waited for.
//!
//! The communication layers above only call [`Backoff::snooze`] after each
//! unsuccessful poll; they never know which of these cases they are in.
#![warn(unsafe_op_in_unsafe_fn, missing_docs)]

mod backoff;
mod bind;
mod settings;
mod worker;

pub use backoff::{Backoff, Snooze};
pub use bind::{allowed_cpus, bind_current_thread};
pub use settings::WaitSettings;
pub use worker::{RankOutcome, WorkerSpec, run_workers};
