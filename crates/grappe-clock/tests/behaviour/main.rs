//! Behaviour of the clock estimators on simulated clocks: one test binary,
//! one module per claim.

mod common;
mod degenerate;
mod estimators;
mod filter;
mod hull;
mod recovery;
mod report;
mod robust;
mod strategy;
