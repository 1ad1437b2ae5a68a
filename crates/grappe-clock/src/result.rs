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
    /// The robust estimator's fallback when no line respects every sample
    /// (clock noise above the sampling latency): Student intervals on the
    /// quietest exchanges, widened by the bias an asymmetric exchange can
    /// carry (half its time on the wire), which the Student term ignores.
    Widened {
        /// Degrees of freedom N − 2.
        dof: usize,
        /// t_{0.975, dof}.
        t_quantile: f64,
        /// The widening of the offset's interval, ns.
        systematic_ns: f64,
    },
}

impl IntervalKind {
    /// Short name for a report column.
    pub fn short(&self) -> &'static str {
        match self {
            IntervalKind::Student { .. } => "t",
            IntervalKind::HullBounds => "hull",
            IntervalKind::Widened { .. } => "t+asym",
        }
    }
}

/// How far a fit's dates can be trusted: the half-width of the interval of
/// the peer's offset at two reference dates (the first and the last
/// sample), from which it follows anywhere. Every line the fit allows
/// passes within these half-widths at both dates, so at a date a fraction
/// s of the way from the first to the last (s < 0 or s > 1 outside the
/// sampled span) it is within |1 − s|·first + |s|·last of the fitted line:
/// constant-ish between SBA's phases, growing linearly with the distance
/// for SB's extrapolation.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct DatingBounds {
    /// Reference date of the first sample, ns.
    pub first_ns: i64,
    /// Reference date of the last sample, ns.
    pub last_ns: i64,
    /// Half-width of the offset's interval at `first_ns`, ns.
    pub first_half_width_ns: f64,
    /// Half-width of the offset's interval at `last_ns`, ns.
    pub last_half_width_ns: f64,
}

impl DatingBounds {
    /// Half-width of the offset's interval at a reference date, ns:
    /// how far a date converted by the fit may be from the truth.
    pub fn half_width_at(&self, reference_ns: i64) -> f64 {
        let span = (i128::from(self.last_ns) - i128::from(self.first_ns)) as f64;
        if span <= 0.0 {
            return if reference_ns == self.first_ns { self.first_half_width_ns } else { f64::INFINITY };
        }
        let s = (i128::from(reference_ns) - i128::from(self.first_ns)) as f64 / span;
        (1.0 - s).abs() * self.first_half_width_ns + s.abs() * self.last_half_width_ns
    }

    /// Whether a reference date lies between the first and last sample.
    pub fn within_samples(&self, reference_ns: i64) -> bool {
        (self.first_ns..=self.last_ns).contains(&reference_ns)
    }
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
    /// minimum one-way latency µ if the links are symmetric, ns. Never
    /// negative: 0 when the clocks' read noise exceeds the time on the wire
    /// (see `latency_below_noise`).
    pub min_one_way_ns: f64,
    /// The shortest time on the wire came out negative: the clocks' read
    /// noise (jitter) is larger than the sampling messages' latency, which
    /// the samples cannot measure.
    pub latency_below_noise: bool,
    /// Reference date of the last pong, ns: the end of the sampled span.
    pub last_reference_ns: i64,
    /// How far the fitted line crosses the bounds the samples themselves
    /// set (it must pass below every ping's offset and above every pong's,
    /// as latencies are positive), ns; 0 when it does not. Positive means
    /// the estimate dates one of its own sampling messages before its send:
    /// delays were too lopsided for the estimator (a loaded host).
    pub contradiction_ns: f64,
}

impl Diagnostics {
    pub(crate) fn of<'a>(samples: impl Iterator<Item = &'a Sample>) -> Self {
        let (mut count, mut rtt, mut wire, mut last) = (0, i128::MAX, i128::MAX, i64::MIN);
        for s in samples {
            count += 1;
            rtt = rtt.min(s.round_trip());
            wire = wire.min(s.wire_time());
            last = last.max(s.t_recv_ref);
        }
        let min_round_trip_ns = i64::try_from(rtt).unwrap_or(i64::MAX);
        Diagnostics {
            samples: count,
            points_total: 0,
            points_used: 0,
            min_round_trip_ns,
            min_one_way_ns: (wire as f64 / 2.0).max(0.0),
            latency_below_noise: wire < 0,
            last_reference_ns: last,
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
    /// How far its dates can be trusted, anywhere.
    pub dating: DatingBounds,
}

impl ClockFit {
    /// An OLS fit with Student intervals, widened by `widening` when the
    /// robust estimator fell back to it.
    pub(crate) fn from_ols(
        frame: &Frame,
        points: &[Point],
        fit: &LineFit,
        config: &FitConfig,
        diagnostics: Diagnostics,
        widening: Option<Widening>,
    ) -> Result<Self, ClockError> {
        let dof = fit.dof();
        let t = student_t_quantile(0.5 + CONFIDENCE / 2.0, dof as f64)?;
        let systematic = widening.as_ref().map_or(0.0, |w| w.offset_ns);
        let (x_min, x_max) =
            points.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), p| (lo.min(p.x), hi.max(p.x)));
        // An exchange biased by b at one end of the points and −b at the
        // other tilts the line by at most 2b over their span.
        let drift_systematic = match systematic {
            0.0 => 0.0,
            _ if x_max > x_min => 2.0 * systematic / (x_max - x_min),
            _ => f64::INFINITY,
        };
        let offset = Estimate::symmetric(frame.offset(fit.line.a), t * fit.var_a.sqrt() + systematic);
        let drift = Estimate::symmetric(fit.line.kappa, t * fit.var_kappa.sqrt() + drift_systematic);
        let half_width = |x: f64| t * fit.var_at(x).sqrt() + systematic;
        let last_x = diagnostics_last_x(frame, &diagnostics);
        let dating = DatingBounds {
            first_ns: frame.x0,
            last_ns: frame.reference_date(last_x),
            first_half_width_ns: half_width(0.0),
            last_half_width_ns: half_width(last_x),
        };
        let interval = match widening {
            None => IntervalKind::Student { dof, t_quantile: t },
            Some(w) => IntervalKind::Widened { dof, t_quantile: t, systematic_ns: w.offset_ns },
        };
        let parts = Parts { line: fit.line, offset, drift, sigma2: fit.sigma2, residuals: &fit.residuals, dating };
        parts.build(frame, points, config, interval, diagnostics)
    }

    /// A convex-hull fit; `last` is the offset range at the last sample's
    /// abscissa `last_x`.
    pub(crate) fn from_hull(
        frame: &Frame,
        midpoints: &[Point],
        bounds: &HullBounds,
        last: (f64, (f64, f64)),
        config: &FitConfig,
        diagnostics: Diagnostics,
    ) -> Result<Self, ClockError> {
        let line = bounds.central;
        let offset = Estimate::bounded(frame.offset(line.a), frame.offset(bounds.a_min), frame.offset(bounds.a_max));
        let drift = Estimate::bounded(line.kappa, bounds.kappa_min, bounds.kappa_max);
        let residuals: Vec<f64> = midpoints.iter().map(|p| p.d - line.at(p.x)).collect();
        let sigma2 = residuals.iter().map(|r| r * r).sum::<f64>() / (residuals.len().max(3) - 2) as f64;
        let (last_x, (low, high)) = last;
        let reach = |value: f64, low: f64, high: f64| (high - value).max(value - low).max(0.0);
        let dating = DatingBounds {
            first_ns: frame.x0,
            last_ns: frame.reference_date(last_x),
            first_half_width_ns: reach(line.a, bounds.a_min, bounds.a_max),
            last_half_width_ns: reach(line.at(last_x), low, high),
        };
        let parts = Parts { line, offset, drift, sigma2, residuals: &residuals, dating };
        parts.build(frame, midpoints, config, IntervalKind::HullBounds, diagnostics)
    }
}

/// How the robust estimator's fallback widens the Student intervals.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Widening {
    /// Added to the offset's half-width everywhere, ns.
    pub offset_ns: f64,
}

/// The abscissa of the last sample's pong, from the diagnostics.
fn diagnostics_last_x(frame: &Frame, diagnostics: &Diagnostics) -> f64 {
    (i128::from(diagnostics.last_reference_ns) - i128::from(frame.x0)) as f64
}

/// The estimator-specific numbers, before the common derived ones.
struct Parts<'a> {
    line: Line,
    offset: Estimate,
    drift: Estimate,
    sigma2: f64,
    residuals: &'a [f64],
    dating: DatingBounds,
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
            dating: self.dating,
        })
    }
}
