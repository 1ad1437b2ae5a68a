//! Simulated clocks and ping-pong sampling, so that the estimators can be
//! tested (and the whole tracing pipeline exercised) on one host.
//!
//! A [`SimulatedClock`] maps a true date to a local reading following the
//! thesis's clock model (Eq. 3.1) plus the periodic, temperature-driven
//! noise of §2.7:
//!
//! lt(t) = offset + (1 + drift)·t + A·sin(2πt/P + φ) + δ(t)
//!
//! where δ is uniform in ±jitter (resolution and read noise). Everything is
//! deterministic: δ is a hash of the seed and t, so the same true date always
//! reads the same, whatever the call order or thread. [`PingPongSim`] draws
//! message latencies from a seeded generator.

mod clock;
mod pingpong;
mod random;
mod spec;

pub use clock::{LocalClock, SimulatedClock};
pub use pingpong::{LatencyModel, OneWay, PingPongSim};
pub use spec::{SimulationSpec, SpecError};
