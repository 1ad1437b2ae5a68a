//! The clock-statistics report of Tape/PVM (Fig. 6.1) and its warnings
//! (§2.9, §6.1 of the thesis). `Display` prints it for people; `Serialize`
//! hands the same numbers to tools.

use std::fmt;

use serde::Serialize;

use crate::estimator::Estimator;
use crate::estimator::FitConfig;
use crate::result::{ClockFit, IntervalKind};

/// Offset %Err above which the sampling is suspect (§2.9).
pub const OFFSET_ERR_WARN_PCT: f64 = 5.0;
/// Offset %Err a healthy cluster gets below; staying above it with longer
/// phases means a clock resynchronisation mechanism is running (§2.9).
pub const OFFSET_ERR_RESYNC_PCT: f64 = 1.0;

/// One peer's row: its name (host or rank) and its fit.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PeerClock {
    /// Host name or rank, as the tool wants it printed.
    pub label: String,
    /// The peer's fit against the reference.
    pub fit: ClockFit,
}

/// Something in a fit that makes its dates doubtful.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub enum Warning {
    /// Offset %Err > 5 % (and the offset's interval excludes 0, see
    /// [`ClockReport::new`]): the network was loaded during sampling (lengthen
    /// the phases) or a periodic resynchronisation daemon (NTP) is active.
    OffsetErrorHigh {
        /// The peer.
        label: String,
        /// Its offset %Err.
        pct_err: f64,
    },
    /// Offset %Err between 1 % and 5 %: if longer phases do not bring it
    /// below 1 %, a resynchronisation mechanism is present and must be
    /// disabled.
    OffsetErrorAboveOnePercent {
        /// The peer.
        label: String,
        /// Its offset %Err.
        pct_err: f64,
    },
    /// The estimated granularity ε reaches the minimum one-way latency µ,
    /// so the theorem ε < µ(1−ρ) no longer guarantees causal dates (P4).
    CausalityAtRisk {
        /// The peer.
        label: String,
        /// ε estimated from the residual amplitude, ns.
        granularity_ns: f64,
        /// µ estimated from the shortest exchange, ns (0 when not
        /// measurable).
        min_one_way_ns: f64,
        /// False when the clocks' read noise exceeds the sampling
        /// messages' time on the wire, so µ could not be measured.
        latency_measured: bool,
    },
    /// No line respects every sample (read noise or an oscillation larger
    /// than the sampling messages' latency), so the robust estimator fell
    /// back from convex-hull bounds to a regression on the quietest
    /// exchanges, with widened intervals. Dates are corrected, less surely.
    Fallback {
        /// The peer.
        label: String,
        /// How much the offset's interval was widened, ns.
        widened_by_ns: f64,
    },
    /// The predicted dating error somewhere in the run (the half-width of
    /// the offset's interval there, propagated from the intervals of offset
    /// and drift) exceeds the smallest one-way latency µ of the samples,
    /// and does so outside the sampled span: the fit extrapolates (SB, or
    /// a run that goes on after the last samples), and a message of
    /// latency µ there may be dated before its send.
    DatingErrorAboveLatency {
        /// The peer.
        label: String,
        /// The predicted error, ns.
        predicted_ns: f64,
        /// Where, s after the start of the run.
        at_s: f64,
        /// µ, ns (0 when not measurable).
        min_one_way_ns: f64,
    },
    /// The fitted line crosses the bounds of its own samples: it would date
    /// a sampling message before its send, so it is wrong by at least that
    /// much. The delays were lopsided (a loaded host); the convex-hull
    /// estimator respects every sample by construction.
    ContradictsSamples {
        /// The peer.
        label: String,
        /// By how much, ns.
        by_ns: f64,
    },
}

impl Warning {
    /// The warnings one peer's fit deserves, over the run `trust` is for.
    fn of(peer: &PeerClock, trust: &Trust) -> Vec<Warning> {
        let (label, fit) = (peer.label.clone(), &peer.fit);
        let mut warnings = Vec::new();
        let pct_err = fit.offset.pct_err;
        // %Err is relative to the offset, which the thesis's unsynchronised
        // hosts had in tenths of seconds. When the interval contains 0 the
        // clocks already agree within it (ranks on one host share a clock;
        // NTP-kept hosts are close), a large %Err says nothing about the
        // sampling, and the absolute check below is the one that matters.
        let significant = !fit.offset.contains(0.0);
        if significant && pct_err > OFFSET_ERR_WARN_PCT {
            warnings.push(Warning::OffsetErrorHigh { label: label.clone(), pct_err });
        } else if significant && pct_err > OFFSET_ERR_RESYNC_PCT {
            warnings.push(Warning::OffsetErrorAboveOnePercent { label: label.clone(), pct_err });
        }
        let (granularity_ns, min_one_way_ns) = (fit.granularity_ns, fit.diagnostics.min_one_way_ns);
        let latency_measured = !fit.diagnostics.latency_below_noise;
        if granularity_ns >= min_one_way_ns {
            let label = label.clone();
            warnings.push(Warning::CausalityAtRisk { label, granularity_ns, min_one_way_ns, latency_measured });
        }
        if let IntervalKind::Widened { systematic_ns, .. } = fit.interval {
            warnings.push(Warning::Fallback { label: label.clone(), widened_by_ns: systematic_ns });
        }
        if trust.worst_ns > min_one_way_ns && !fit.dating.within_samples(trust.worst_at_ns) {
            warnings.push(Warning::DatingErrorAboveLatency {
                label: label.clone(),
                predicted_ns: trust.worst_ns,
                at_s: trust.worst_after_start_s(),
                min_one_way_ns,
            });
        }
        // Half a nanosecond: below it, the crossing is rounding. After a
        // fallback no line respects every sample, as its warning says.
        let by_ns = fit.diagnostics.contradiction_ns;
        let fell_back = matches!(fit.interval, IntervalKind::Widened { .. });
        if by_ns > 0.5 && !fell_back {
            warnings.push(Warning::ContradictsSamples { label, by_ns });
        }
        warnings
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::OffsetErrorHigh { label, pct_err } => write!(
                f,
                "{label}: offset %Err {pct_err:.2}% > {OFFSET_ERR_WARN_PCT}%: the network was loaded during \
                 sampling (lengthen the phases) or a periodic clock resynchronisation daemon is active"
            ),
            Warning::OffsetErrorAboveOnePercent { label, pct_err } => write!(
                f,
                "{label}: offset %Err {pct_err:.2}% > {OFFSET_ERR_RESYNC_PCT}%: if longer phases do not bring it \
                 below {OFFSET_ERR_RESYNC_PCT}%, a clock resynchronisation mechanism is present; disable it"
            ),
            Warning::CausalityAtRisk { label, granularity_ns, latency_measured: false, .. } => write!(
                f,
                "{label}: estimated granularity {:.1} us, and the clock samples' one-way latency is below the \
                 clocks' read noise (not measurable): receives may be dated before their sends",
                granularity_ns / 1e3,
            ),
            Warning::CausalityAtRisk { label, granularity_ns, min_one_way_ns, .. } => write!(
                f,
                "{label}: estimated granularity {:.1} us >= minimum one-way latency {:.1} us: receives may be \
                 dated before their sends (lengthen the phases or sample more points)",
                granularity_ns / 1e3,
                min_one_way_ns / 1e3
            ),
            Warning::Fallback { label, widened_by_ns } => write!(
                f,
                "{label}: no clock line respects every sample (read noise or a clock oscillation larger than the \
                 sampling messages' latency): fitted by regression on the quietest exchanges instead of convex-hull \
                 bounds, intervals widened by {:.2} us",
                widened_by_ns / 1e3
            ),
            Warning::DatingErrorAboveLatency { label, predicted_ns, at_s, min_one_way_ns } => write!(
                f,
                "{label}: predicted dating error {:.1} us at {at_s:.3} s into the run (extrapolated beyond the \
                 clock samples) exceeds the smallest one-way latency {}: receives may be dated before their sends \
                 (sample after the run too: strategy sba)",
                predicted_ns / 1e3,
                latency_text(*min_one_way_ns),
            ),
            Warning::ContradictsSamples { label, by_ns } => write!(
                f,
                "{label}: the fitted line dates one of its own clock samples {:.1} us before its send: the \
                 sampling delays were lopsided (a loaded host); use the robust estimator (the default) or convex-hull, or sample \
                 again",
                by_ns / 1e3
            ),
        }
    }
}

fn latency_text(ns: f64) -> String {
    if ns > 0.0 { format!("{:.3} us", ns / 1e3) } else { "(below the clocks' read noise)".to_owned() }
}

/// How far one peer's dates can be trusted over a run: the half-width of
/// the 95 % interval of its offset (the error a converted date may carry)
/// at the run's start, at its end, and at its worst point.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Trust {
    /// The peer.
    pub label: String,
    /// Start of the run, reference clock, ns.
    pub start_ns: i64,
    /// End of the run, reference clock, ns.
    pub end_ns: i64,
    /// Half-width at the start, ns.
    pub at_start_ns: f64,
    /// Half-width at the end, ns.
    pub at_end_ns: f64,
    /// The largest half-width over the run, ns.
    pub worst_ns: f64,
    /// Where it is, reference clock, ns.
    pub worst_at_ns: i64,
}

impl Trust {
    /// Seconds from the run's start to the worst point (in i128: dates
    /// of wild samples may lie further apart than an i64 holds).
    pub fn worst_after_start_s(&self) -> f64 {
        (i128::from(self.worst_at_ns) - i128::from(self.start_ns)) as f64 / 1e9
    }

    /// The trust of `fit` over [start, end] (reference dates). The
    /// half-width is convex in the date (see [`crate::DatingBounds`]), so
    /// its largest value is at an end.
    pub fn over(label: &str, fit: &ClockFit, start_ns: i64, end_ns: i64) -> Trust {
        let (at_start_ns, at_end_ns) = (fit.dating.half_width_at(start_ns), fit.dating.half_width_at(end_ns));
        let (worst_ns, worst_at_ns) =
            if at_end_ns >= at_start_ns { (at_end_ns, end_ns) } else { (at_start_ns, start_ns) };
        Trust { label: label.to_owned(), start_ns, end_ns, at_start_ns, at_end_ns, worst_ns, worst_at_ns }
    }
}

/// The clock statistics of one run: the reference, one row per peer, how
/// far each peer's dates can be trusted, and the warnings.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClockReport {
    /// The reference host or rank, printed as the identity row.
    pub reference: String,
    /// One row per peer, in the order given.
    pub peers: Vec<PeerClock>,
    /// Per peer, in the same order: how far its dates can be trusted over
    /// the run (over its sampled span when the run is not known).
    pub trust: Vec<Trust>,
    /// Every warning, peer by peer.
    pub warnings: Vec<Warning>,
}

impl ClockReport {
    /// Builds the report and its warnings.
    ///
    /// The %Err warnings follow §2.9 with one deviation: they are given only
    /// when the offset's interval excludes 0. %Err is relative to the
    /// offset, so clocks that already agree (ranks of one host sharing a
    /// monotonic clock, NTP-kept hosts) would get a large %Err from a
    /// sub-microsecond interval; for them [`Warning::CausalityAtRisk`], an
    /// absolute test, is the meaningful one.
    pub fn new(reference: impl Into<String>, peers: Vec<PeerClock>) -> Self {
        let trust =
            peers.iter().map(|p| Trust::over(&p.label, &p.fit, p.fit.dating.first_ns, p.fit.dating.last_ns)).collect();
        ClockReport::with_trust(reference, peers, trust)
    }

    /// [`ClockReport::new`] for a run between two reference dates: the
    /// trust of each peer over it, and a warning for each whose predicted
    /// error there exceeds the smallest latency.
    pub fn for_run(reference: impl Into<String>, peers: Vec<PeerClock>, start_ns: i64, end_ns: i64) -> Self {
        let trust = peers.iter().map(|p| Trust::over(&p.label, &p.fit, start_ns, end_ns)).collect();
        ClockReport::with_trust(reference, peers, trust)
    }

    fn with_trust(reference: impl Into<String>, peers: Vec<PeerClock>, trust: Vec<Trust>) -> Self {
        let warnings = peers.iter().zip(&trust).flat_map(|(p, t)| Warning::of(p, t)).collect();
        ClockReport { reference: reference.into(), peers, trust, warnings }
    }

    /// The settings shared by every row, or `None` if rows differ.
    fn common_config(&self) -> Option<FitConfig> {
        let first = self.peers.first()?.fit.config;
        self.peers.iter().all(|p| p.fit.config == first).then_some(first)
    }
}

fn settings(config: &FitConfig) -> String {
    let (window, intervals) = match (config.estimator, config.median_window_used()) {
        (Estimator::ConvexHull, _) => ("unused".to_owned(), "convex-hull bounds"),
        (Estimator::Robust, _) => {
            ("unused".to_owned(), "convex-hull bounds (hull), else 95% Student widened by the asymmetry (t+asym)")
        }
        (Estimator::MinRoundTrip { .. }, _) => ("unused".to_owned(), "95% Student"),
        (_, None) => ("none".to_owned(), "95% Student"),
        (_, Some(k)) => (k.to_string(), "95% Student"),
    };
    format!(
        "estimator {}, strategy {}, median window {window}, intervals {intervals}",
        config.estimator, config.strategy
    )
}

const HEADER: &str = "host               Slope      95% Conf   %Err      Offset (s)      95% Conf    %Err  %Err(b-1)     N      DW  \
     Interval";

impl fmt::Display for ClockReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let common = self.common_config();
        match &common {
            Some(config) => writeln!(f, "Clock statistics, reference {}: {}", self.reference, settings(config))?,
            None => writeln!(f, "Clock statistics, reference {} (settings per row)", self.reference)?,
        }
        writeln!(f, "{HEADER}")?;
        writeln!(
            f,
            "{:<12} {:>12.10} {:>12.10} {:>6.2} {:>15.9} {:>13.9} {:>7.2}",
            self.reference, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0
        )?;
        for peer in &self.peers {
            write_row(f, peer)?;
            if common.is_none() {
                write!(f, "  [{}]", settings(&peer.fit.config))?;
            }
            writeln!(f)?;
        }
        writeln!(f, "Dating trust: half-width of the 95% interval of each peer's dates over the run, us")?;
        writeln!(f, "    host           at start      at end       worst   (at, s into the run)")?;
        for t in &self.trust {
            writeln!(
                f,
                "    {:<12} {:>10.3} {:>11.3} {:>11.3}   ({:.3})",
                t.label,
                t.at_start_ns / 1e3,
                t.at_end_ns / 1e3,
                t.worst_ns / 1e3,
                t.worst_after_start_s()
            )?;
        }
        if !self.warnings.is_empty() {
            writeln!(f, "Warnings:")?;
            for warning in &self.warnings {
                writeln!(f, "  {warning}")?;
            }
        }
        Ok(())
    }
}

fn write_row(f: &mut fmt::Formatter<'_>, peer: &PeerClock) -> fmt::Result {
    let fit = &peer.fit;
    let dw = fit.durbin_watson.map_or("-".to_owned(), |dw| format!("{dw:.2}"));
    write!(
        f,
        "{:<12} {:>12.10} {:>12.10} {:>6.2} {:>15.9} {:>13.9} {:>7.2} {:>10.4} {:>5} {:>7}  {:>8}",
        peer.label,
        fit.slope.value,
        fit.drift.half_width(),
        fit.slope.pct_err,
        fit.offset.value / 1e9,
        fit.offset.half_width() / 1e9,
        fit.offset.pct_err,
        fit.drift.pct_err,
        fit.diagnostics.points_used,
        dw,
        fit.interval.short(),
    )
}
