//! Errors of clock estimation. Each variant says what in the input is wrong
//! and carries the numbers needed to fix it; none of them is a panic.

use crate::phase::Phase;

/// Why a clock fit or a parameter was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ClockError {
    /// The regression needs at least three points: two for the line, one for
    /// σ̂² (Eq. 3.12 divides by N − 2).
    #[error("too few points for a fit: {got} after estimation and filtering, need at least {needed}")]
    TooFewPoints {
        /// Minimum required.
        needed: usize,
        /// Points left after the estimator and the filter.
        got: usize,
    },
    /// Every point has the same reference date, so the slope is undefined
    /// (X′X of Eq. 3.8 is singular).
    #[error("all {points} points have the same reference date: the drift cannot be estimated")]
    DegenerateAbscissa {
        /// Number of points.
        points: usize,
    },
    /// The strategy needs a phase that has no samples (SBA without an After
    /// phase, or an empty Before phase).
    #[error("the {phase} sampling phase has no samples")]
    EmptyPhase {
        /// The empty phase.
        phase: Phase,
    },
    /// A sample's timestamps are impossible: a negative round trip or a
    /// negative turnaround on the peer.
    #[error("{phase} sample #{index} is invalid: {reason}")]
    InvalidSample {
        /// Phase of the sample.
        phase: Phase,
        /// Index inside that phase.
        index: usize,
        /// What is impossible about it.
        reason: &'static str,
    },
    /// The running-median window must be odd and at least 1.
    #[error("median window {window} must be odd and at least 1")]
    InvalidWindow {
        /// The window given.
        window: usize,
    },
    /// The running-median window is wider than a phase's point series.
    #[error("median window {window} is larger than the {points} points of the {phase} phase")]
    WindowTooLarge {
        /// The window given.
        window: usize,
        /// Points available in that phase (per direction for Haddad).
        points: usize,
        /// The phase.
        phase: Phase,
    },
    /// A numeric parameter is NaN, infinite or out of its range.
    #[error("parameter {name} = {value} is not finite or out of range ({expected})")]
    InvalidParameter {
        /// Parameter name.
        name: &'static str,
        /// The value given.
        value: f64,
        /// The accepted range.
        expected: &'static str,
    },
    /// No line separates the forward points from the return points: some
    /// one-way latency was non-positive after all (clock noise larger than
    /// the minimum latency), so Duda's bounds do not exist.
    #[error("no clock line is consistent with every message (convex hulls overlap)")]
    NoFeasibleLine,
    /// The estimator name is not one of [`crate::Estimator::NAMES`].
    #[error("unknown estimator {0:?}; expected one of robust, dunigan, haddad, min-rtt[=FRACTION], convex-hull")]
    UnknownEstimator(String),
    /// The strategy name is not `sb` or `sba`.
    #[error("unknown strategy {0:?}; expected sb or sba")]
    UnknownStrategy(String),
}
