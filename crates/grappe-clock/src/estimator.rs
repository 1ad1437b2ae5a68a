//! The estimators and strategies, selectable by name for command lines,
//! and the configuration of a fit that combines them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::ClockError;
use crate::filter::check_window;
use crate::phase::Phase;

/// How samples become a clock line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum Estimator {
    /// The default: Duda's convex-hull bounds where a line separates the
    /// pings from the pongs (hard bounds, every sample respected); else, when
    /// clock noise (jitter, an oscillation) is larger than the latency of the
    /// sampling messages, OLS on Eq. 3.9 points of each phase's quietest
    /// exchanges (at most the half with the shortest time on the wire, and
    /// none far above the quietest: on a loaded host most may be delayed),
    /// with Student
    /// intervals widened by the bias an asymmetric exchange can carry (half
    /// its time on the wire). Delayed exchanges (a peer woken from sleep, a
    /// loaded host) are inactive constraints for the hull and are dropped by
    /// the regression, so they do not move the line. See [`crate::fit()`].
    #[default]
    Robust,
    /// Dunigan's communication-time estimator (§2.5): one point per
    /// exchange, the peer's clock at the pong's arrival by Eq. 3.9, then OLS.
    /// Tape/PVM's default. Its Student intervals assume symmetric,
    /// independent delays; one delayed exchange biases it.
    Dunigan,
    /// Haddad et al. (§2.4): OLS on the 2n raw points of Eq. 3.4–3.5. Same
    /// line in expectation, but the ±latency of each point inflates σ̂ and so
    /// the confidence intervals (Table 3.1).
    Haddad,
    /// NTP-style: keep the fraction `keep` of each phase's exchanges with the
    /// smallest time on the wire (round trip minus turnaround), then Dunigan.
    MinRoundTrip {
        /// Fraction of exchanges kept, in (0, 1].
        keep: f64,
    },
    /// Duda et al.'s convex hulls (chapter §2.4.8): hard bounds on offset and
    /// drift from the forward and return point sets; the central line is
    /// the bisector of the extreme-slope lines. Needs positive latencies;
    /// ignores the median filter (delayed messages are inactive constraints).
    ConvexHull,
}

impl Estimator {
    /// The names [`FromStr`] accepts; `min-rtt` takes an optional
    /// `=FRACTION` (default [`Estimator::DEFAULT_KEEP`]).
    pub const NAMES: [&'static str; 5] = ["robust", "dunigan", "haddad", "min-rtt", "convex-hull"];

    /// Default fraction kept by `min-rtt`: NTP's filters keep the best
    /// 10–25 % of exchanges; a quarter leaves 5 points of a 20-point phase.
    pub const DEFAULT_KEEP: f64 = 0.25;

    /// The estimator's name, as parsed.
    pub fn name(&self) -> &'static str {
        match self {
            Estimator::Robust => "robust",
            Estimator::Dunigan => "dunigan",
            Estimator::Haddad => "haddad",
            Estimator::MinRoundTrip { .. } => "min-rtt",
            Estimator::ConvexHull => "convex-hull",
        }
    }

    /// Refuses a `keep` fraction outside (0, 1] (NaN included).
    pub fn validate(&self) -> Result<(), ClockError> {
        match *self {
            Estimator::MinRoundTrip { keep } if !(keep > 0.0 && keep <= 1.0) => {
                Err(ClockError::InvalidParameter { name: "keep", value: keep, expected: "0 < keep <= 1" })
            }
            _ => Ok(()),
        }
    }
}

impl fmt::Display for Estimator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Estimator::MinRoundTrip { keep } => write!(f, "min-rtt={keep}"),
            other => f.write_str(other.name()),
        }
    }
}

impl FromStr for Estimator {
    type Err = ClockError;

    fn from_str(s: &str) -> Result<Self, ClockError> {
        let unknown = || ClockError::UnknownEstimator(s.to_owned());
        let (name, arg) = match s.split_once('=') {
            Some((name, arg)) => (name, Some(arg)),
            None => (s, None),
        };
        let estimator = match (name.trim().to_ascii_lowercase().as_str(), arg) {
            ("robust", None) => Estimator::Robust,
            ("dunigan", None) => Estimator::Dunigan,
            ("haddad", None) => Estimator::Haddad,
            ("convex-hull", None) => Estimator::ConvexHull,
            ("min-rtt", None) => Estimator::MinRoundTrip { keep: Estimator::DEFAULT_KEEP },
            ("min-rtt", Some(arg)) => Estimator::MinRoundTrip { keep: arg.trim().parse().map_err(|_| unknown())? },
            _ => return Err(unknown()),
        };
        estimator.validate()?;
        Ok(estimator)
    }
}

/// Which sampling phases are fitted (§2.8).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Strategy {
    /// SB: fit the Before phase only and extrapolate. Dates are available
    /// during the run, but the error grows without bound with run length.
    SampleBefore,
    /// SBA: concatenate the (filtered) Before and After phases and fit once,
    /// so dates in the run are interpolated: error ≤ 2A for a periodic clock
    /// noise of amplitude A, granularity ε = 4A.
    #[default]
    SampleBeforeAfter,
}

impl Strategy {
    /// The phases the strategy fits, in order.
    pub fn phases(&self) -> &'static [Phase] {
        match self {
            Strategy::SampleBefore => &[Phase::Before],
            Strategy::SampleBeforeAfter => &[Phase::Before, Phase::After],
        }
    }

    /// Multiple of the residual amplitude A that bounds the dating
    /// difference between two ranks (§2.7): 2A for a fit on one phase (and
    /// only near it: SB's error grows beyond), 4A for SBA.
    pub fn granularity_factor(&self) -> f64 {
        match self {
            Strategy::SampleBefore => 2.0,
            Strategy::SampleBeforeAfter => 4.0,
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Strategy::SampleBefore => "sb",
            Strategy::SampleBeforeAfter => "sba",
        })
    }
}

impl FromStr for Strategy {
    type Err = ClockError;

    fn from_str(s: &str) -> Result<Self, ClockError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "sb" => Ok(Strategy::SampleBefore),
            "sba" => Ok(Strategy::SampleBeforeAfter),
            _ => Err(ClockError::UnknownStrategy(s.to_owned())),
        }
    }
}

/// What to fit and how. The default: the robust estimator, SBA; the median
/// window 5 of Tape/PVM's published setting (Fig. 6.1) is kept for the
/// estimators that use it (Dunigan, Haddad).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct FitConfig {
    /// How samples become points and the line.
    pub estimator: Estimator,
    /// Which phases are fitted.
    pub strategy: Strategy,
    /// Running-median window (odd), applied to each phase's offset series;
    /// `None` keeps every point.
    pub median_window: Option<usize>,
}

impl Default for FitConfig {
    fn default() -> Self {
        FitConfig { estimator: Estimator::Robust, strategy: Strategy::SampleBeforeAfter, median_window: Some(5) }
    }
}

impl FitConfig {
    /// The running median the estimator takes: none for the minimum
    /// round trips, which keep a few samples of each phase and are an
    /// outlier filter already (a window of 5 over the 5 kept of 20 left
    /// one point), nor for the convex hulls and the robust estimator
    /// (which keeps the quietest exchanges instead).
    pub fn median_window_used(&self) -> Option<usize> {
        match self.estimator {
            Estimator::MinRoundTrip { .. } | Estimator::ConvexHull | Estimator::Robust => None,
            Estimator::Dunigan | Estimator::Haddad => self.median_window,
        }
    }

    /// Refuses an even or zero window and an out-of-range `keep`.
    pub fn validate(&self) -> Result<(), ClockError> {
        self.estimator.validate()?;
        self.median_window.map_or(Ok(()), check_window)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for name in Estimator::NAMES {
            let e: Estimator = name.parse().unwrap();
            assert_eq!(e.name(), name);
            assert_eq!(e.to_string().parse::<Estimator>().unwrap(), e);
        }
        assert_eq!("min-rtt=0.1".parse::<Estimator>().unwrap(), Estimator::MinRoundTrip { keep: 0.1 });
        assert_eq!("SBA".parse::<Strategy>().unwrap(), Strategy::SampleBeforeAfter);
        assert_eq!(Strategy::SampleBefore.to_string(), "sb");
    }

    #[test]
    fn bad_names_and_fractions_are_errors() {
        for bad in ["", "ols", "haddad=2", "min-rtt=0", "min-rtt=1.5", "min-rtt=NaN", "min-rtt=x"] {
            assert!(bad.parse::<Estimator>().is_err(), "{bad:?}");
        }
        assert!("sab".parse::<Strategy>().is_err());
    }
}
