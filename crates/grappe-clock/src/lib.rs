//! Global time for grappe traces: each rank's clock is estimated against a
//! reference rank's clock from ping-pong samples, as Tape/PVM does (Maillet,
//! 1996, ch. 3; the "monitoring cluster programs" chapter, §4).
//!
//! The clock model is linear (Eq. 3.1–3.2): a peer's reading is
//! lt_j = α + β·lt_ref + δ. The runtime samples it before the run (SB) and
//! before and after (SBA), four timestamps per exchange ([`Sample`]); this
//! crate turns a [`SampleSet`] into a [`ClockFit`] with [`fit()`]:
//!
//! 1. an [`Estimator`] makes regression points or bounds: the default
//!    [`Estimator::Robust`] takes [`Estimator::ConvexHull`]'s hard bounds
//!    where a line respects every sample, else a regression on the quieter
//!    half of each phase's exchanges with intervals widened by the bias an
//!    asymmetric exchange can carry; [`Estimator::Dunigan`]'s Eq. 3.9
//!    midpoints (Tape/PVM's), [`Estimator::Haddad`]'s 2n raw points and
//!    [`Estimator::MinRoundTrip`]'s fastest exchanges are kept for
//!    comparison;
//! 2. for Dunigan and Haddad, an optional running median per phase removes
//!    asymmetric exchanges (§2.9);
//! 3. the [`Strategy`] fits the Before phase alone or both phases together;
//! 4. OLS gives α̂, β̂, σ̂² and 95 % Student intervals (§2.6) with %Err.
//!
//! The fit's [`ClockModel`] converts local dates to global ones (Eq. 3.3),
//! its [`DatingBounds`] say how far a converted date can be trusted at any
//! date (growing away from the samples: SB's extrapolation),
//! [`is_tachyon`] checks a message after conversion, and [`ClockReport`]
//! prints the clock statistics of Fig. 6.1, each peer's [`Trust`] over the
//! run, and their warnings. [`sim`] simulates clocks and sampling so all of
//! this runs on one host.
//!
//! Dates are signed nanoseconds (`i64`); see [`Sample`] for why.
//!
//! ```
//! use grappe_clock::sim::{LatencyModel, LocalClock, PingPongSim, SimulatedClock};
//! use grappe_clock::{fit, ClockReport, FitConfig, PeerClock, SampleSet};
//!
//! let reference = SimulatedClock::perfect();
//! let peer = SimulatedClock::linear(1_500_000_000, 12.0); // 1.5 s ahead, 12 ppm fast
//! let mut sim = PingPongSim::new(LatencyModel::symmetric(20_000, 500.0), 1_000, 1_000_000_000, 7)?;
//! let before = sim.phase(&reference, &peer, 0, 20);
//! let after = sim.phase(&reference, &peer, 3_600_000_000_000, 20);
//! let clock = fit(&SampleSet::from_phases(before, after), &FitConfig::default())?;
//!
//! let truth = peer.linear_model(&reference);
//! assert!((clock.model.drift - truth.drift).abs() < 1e-8);
//! let t = 1_800_000_000_000; // half an hour in
//! assert!((clock.model.to_global(peer.read(t)) - t).abs() < 1_000);
//!
//! let report = ClockReport::new("rank 0", vec![PeerClock { label: "rank 1".into(), fit: clock }]);
//! assert!(report.warnings.is_empty());
//! println!("{report}");
//! # Ok::<(), grappe_clock::ClockError>(())
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod sim;
pub mod stats;

mod error;
mod estimator;
mod filter;
mod fit;
mod hull;
mod model;
mod ols;
mod phase;
mod points;
mod report;
mod result;
mod sample;

pub use error::ClockError;
pub use estimator::{Estimator, FitConfig, Strategy};
pub use fit::fit;
pub use model::{ClockModel, causal_gap_ns, is_tachyon};
pub use phase::Phase;
pub use report::{ClockReport, OFFSET_ERR_RESYNC_PCT, OFFSET_ERR_WARN_PCT, PeerClock, Trust, Warning};
pub use result::{CONFIDENCE, ClockFit, DatingBounds, Diagnostics, Estimate, IntervalKind, Residual};
pub use sample::{Sample, SampleSet};
