//! What a fit returns: the clock model, its intervals (§2.6), %Err (§2.9)
//! and the diagnostics the report prints.

use serde::Serialize;

use crate::error::ClockError;
use crate::estimator::FitConfig;
use crate::hull::HullBounds;
use crate::model::ClockModel;
use crate::ols::{self, Line, LineFit};
use crate::points::{Frame, Point};
use crate::sample::Sample;
use crate::stats::student_t_quantile;

/// Confidence level of the intervals, as in Tape/PVM.
pub const CONFIDENCE: f64 = 0.95;

/// A value with its interval and %Err = 100·half-width/|value| (§2.9).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Estimate {
    /// The point estimate.
    pub value: f64,
    /// Lower end of the interval.
    pub low: f64,
    /// Upper end of the interval.
    pub high: f64,
    /// 100·half-width/|value|; infinite when the value is 0 (NaN if the
    /// interval is empty too).
    pub pct_err: f64,
}

impl Estimate {
    fn symmetric(value: f64, half_width: f64) -> Self {
        Estimate::bounded(value, value - half_width, value + half_width)
    }

    fn bounded(value: f64, low: f64, high: f64) -> Self {
        let pct_err = 100.0 * 0.5 * (high - low) / value.abs();
        Estimate { value, low, high, pct_err }
    }

    /// β = 1 + κ from a drift estimate, %Err relative to β. The half-width
    /// is taken on κ, where it has all its digits.
    fn as_slope(&self) -> Self {
        let value = 1.0 + self.value;
        let pct_err = 100.0 * self.half_width() / value.abs();
        Estimate { value, low: 1.0 + self.low, high: 1.0 + self.high, pct_err }
    }

    /// Half the interval's width.
    pub fn half_width(&self) -> f64 {
        0.5 * (self.high - self.low)
    }

    /// Whether the interval contains a value.
    pub fn contains(&self, v: f64) -> bool {
        self.low <= v && v <= self.high
    }
}

/// What the intervals of a fit mean.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum IntervalKind {
    /// Student intervals β̂_i ± t_{0.975, N−2}·σ̂·√a_ii (§2.6). They assume
    /// independent Gaussian residuals; real clock residuals are periodic and
    /// autocorrelated, so these underestimate the error (see the DW value).
    Student {
        /// Degrees of freedom N − 2.
        dof: usize,
        /// t_{0.975, dof}.
        t_quantile: f64,
    },
    /// Duda's hard bounds: every line consistent with positive latencies.
    HullBounds,
}

/// One residual of the fit, at its reference date.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Residual {
    /// Reference-clock date of the point, ns.
    pub reference_ns: i64,
    /// Observed minus fitted offset, ns.
    pub residual_ns: f64,
}

/// Counts and latencies of the samples behind a fit.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Diagnostics {
    /// Exchanges in the fitted phases.
    pub samples: usize,
    /// Points the estimator produced (after min-rtt's selection).
    pub points_total: usize,
    /// Points left after the running median, the N of Eq. 3.12.
    pub points_used: usize,
    /// Shortest round trip seen by the reference, ns.
    pub min_round_trip_ns: i64,
    /// Half the shortest time on the wire (round trip − turnaround): the
    /// minimum one-way latency µ if the links are symmetric, ns.
    pub min_one_way_ns: f64,
    /// How far the fitted line crosses the bounds the samples themselves
    /// set (it must pass below every ping's offset and above every pong's,
    /// as latencies are positive), ns; 0 when it does not. Positive means
    /// the estimate dates one of its own sampling messages before its send:
    /// delays were too lopsided for the estimator (a loaded host).
    pub contradiction_ns: f64,
}

impl Diagnostics {
    pub(crate) fn of<'a>(samples: impl Iterator<Item = &'a Sample>) -> Self {
        let (mut count, mut rtt, mut wire) = (0, i128::MAX, i128::MAX);
        for s in samples {
            count += 1;
            rtt = rtt.min(s.round_trip());
            wire = wire.min(s.wire_time());
        }
        let min_round_trip_ns = i64::try_from(rtt).unwrap_or(i64::MAX);
        Diagnostics {
            samples: count,
            points_total: 0,
            points_used: 0,
            min_round_trip_ns,
            min_one_way_ns: wire as f64 / 2.0,
            contradiction_ns: 0.0,
        }
    }

    pub(crate) fn with_points(self, total: usize, used: usize) -> Self {
        Diagnostics { points_total: total, points_used: used, ..self }
    }

    /// Measures how far `line` crosses the samples' bounds.
    pub(crate) fn with_contradiction<'a>(
        self,
        frame: &Frame,
        line: Line,
        samples: impl Iterator<Item = &'a Sample>,
    ) -> Self {
        let worst = samples
            .map(|s| {
                let (ping, pong) = (frame.forward(s), frame.back(s));
                (line.at(ping.x) - ping.d).max(pong.d - line.at(pong.x))
            })
            .fold(0.0, f64::max);
        Diagnostics { contradiction_ns: worst, ..self }
    }
}

/// One peer's clock estimate against the reference.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClockFit {
    /// The settings that produced it.
    pub config: FitConfig,
    /// The line used for conversion (the central line for convex hulls).
    pub model: ClockModel,
    /// Meaning of `offset` and `slope` intervals.
    pub interval: IntervalKind,
    /// lt_j − lt_ref at `model.origin_ns` (the first sample), ns. Reported
    /// there rather than at reference date 0 so the interval measures the
    /// fit, not an extrapolation back to the clock's epoch.
    pub offset: Estimate,
    /// β; its `pct_err` is relative to β (Fig. 6.1's column).
    pub slope: Estimate,
    /// κ = β − 1 with the same interval; its `pct_err` is relative to
    /// |β − 1|, Table 3.1's drift error. Kept apart from `slope` because
    /// κ ≈ 1e-6 keeps all its digits here and not as the decimals of β.
    pub drift: Estimate,
    /// σ̂² of Eq. 3.12, ns².
    pub sigma2: f64,
    /// Residuals in point order (phase by phase, by reference date).
    pub residuals: Vec<Residual>,
    /// Durbin–Watson statistic of the residuals; `None` for a perfect fit.
    pub durbin_watson: Option<f64>,
    /// Half the residuals' peak-to-peak range, ns: the amplitude A of §2.7,
    /// inflated by the communication noise (so a conservative value).
    pub residual_amplitude_ns: f64,
    /// Estimated granularity ε: 2A for SB (near the sampling phase only),
    /// 4A for SBA (§2.7), ns.
    pub granularity_ns: f64,
    /// Counts and latencies.
    pub diagnostics: Diagnostics,
}

impl ClockFit {
    pub(crate) fn from_ols(
        frame: &Frame,
        points: &[Point],
        fit: &LineFit,
        config: &FitConfig,
        diagnostics: Diagnostics,
    ) -> Result<Self, ClockError> {
        let dof = fit.dof();
        let t = student_t_quantile(0.5 + CONFIDENCE / 2.0, dof as f64)?;
        let offset = Estimate::symmetric(frame.offset(fit.line.a), t * fit.var_a.sqrt());
        let drift = Estimate::symmetric(fit.line.kappa, t * fit.var_kappa.sqrt());
        let parts = Parts { line: fit.line, offset, drift, sigma2: fit.sigma2, residuals: &fit.residuals };
        parts.build(frame, points, config, IntervalKind::Student { dof, t_quantile: t }, diagnostics)
    }

    pub(crate) fn from_hull(
        frame: &Frame,
        midpoints: &[Point],
        bounds: &HullBounds,
        config: &FitConfig,
        diagnostics: Diagnostics,
    ) -> Result<Self, ClockError> {
        let line = bounds.central;
        let offset = Estimate::bounded(frame.offset(line.a), frame.offset(bounds.a_min), frame.offset(bounds.a_max));
        let drift = Estimate::bounded(line.kappa, bounds.kappa_min, bounds.kappa_max);
        let residuals: Vec<f64> = midpoints.iter().map(|p| p.d - line.at(p.x)).collect();
        let sigma2 = residuals.iter().map(|r| r * r).sum::<f64>() / (residuals.len() - 2) as f64;
        let parts = Parts { line, offset, drift, sigma2, residuals: &residuals };
        parts.build(frame, midpoints, config, IntervalKind::HullBounds, diagnostics)
    }
}

/// The estimator-specific numbers, before the common derived ones.
struct Parts<'a> {
    line: Line,
    offset: Estimate,
    drift: Estimate,
    sigma2: f64,
    residuals: &'a [f64],
}

impl Parts<'_> {
    fn build(
        self,
        frame: &Frame,
        points: &[Point],
        config: &FitConfig,
        interval: IntervalKind,
        diagnostics: Diagnostics,
    ) -> Result<ClockFit, ClockError> {
        let model = ClockModel::new(frame.x0, self.offset.value, self.line.kappa)?;
        let (lo, hi) =
            self.residuals.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &r| (lo.min(r), hi.max(r)));
        let amplitude = 0.5 * (hi - lo);
        let residuals = points
            .iter()
            .zip(self.residuals)
            .map(|(p, &r)| Residual { reference_ns: frame.reference_date(p.x), residual_ns: r })
            .collect();
        Ok(ClockFit {
            config: *config,
            model,
            interval,
            offset: self.offset,
            slope: self.drift.as_slope(),
            drift: self.drift,
            sigma2: self.sigma2,
            residuals,
            durbin_watson: ols::durbin_watson(self.residuals),
            residual_amplitude_ns: amplitude,
            granularity_ns: config.strategy.granularity_factor() * amplitude,
            diagnostics,
        })
    }
}
