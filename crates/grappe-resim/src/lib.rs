//! Trace re-simulation: probe-effect correction and trace-driven
//! prediction over one traversal (Maillet, 1996, §3 and §5).
//!
//! A trace is read into a [`Program`] (each rank's events, linked by the
//! messages and the collective instances), then the [`engine`] walks it
//! rank by rank, deferring an event until what it depends on is dated,
//! and dates every event again under a [`CostModel`]:
//!
//! * correction ([`Mode`]): CorrEvt (each rank's base and accumulator of
//!   the α recorded per event, flushes included) and, for what ties ranks
//!   together, the rendezvous model, the asynchronous-send model with the
//!   `arrived` flag and Propositions 1–2 (MINSIM), FULLSIM, or
//!   Sarukkai–Malony's rule; collectives as a rendezvous of all their
//!   members (the barrier model); wildcard receives under the
//!   conservative approximation (the traced match is kept, a warning when
//!   the corrected dates would have ordered it otherwise);
//! * prediction ([`Network`]): the same traversal, with compute intervals
//!   from the trace (less its α) and every message's transit from the
//!   given latency and bandwidth.
//!
//! The result is written as a merged trace ([`output`]) with a
//! [`Summary`] and the run times, measured as `grappe run --report-time`
//! measures them ([`run_time`]).
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod engine;
mod error;
pub mod fit;
pub mod model;
pub mod output;
pub mod program;
pub mod run_time;
mod summary;

pub use engine::{Dates, Options, Outcome, run};
pub use error::{ResimError, Result};
pub use model::{CostModel, EagerLimits, LinkCost, Mode, Network};
pub use program::{Link, Placement, Program, Step};
pub use summary::Summary;
