//! The fitting pipeline of §2.11: samples → estimator points → running
//! median per phase → concatenation (SBA) → OLS or convex hulls.

use crate::error::ClockError;
use crate::estimator::{Estimator, FitConfig};
use crate::filter::running_median;
use crate::hull;
use crate::ols::{self, MIN_POINTS};
use crate::phase::Phase;
use crate::points::{self, Direction, Frame, Point};
use crate::result::{ClockFit, Diagnostics, Widening};
use crate::sample::{Sample, SampleSet};

/// Estimates one peer's clock against the reference from its samples.
///
/// Errors, never panics, on: an empty phase the strategy needs, samples
/// with a negative round trip or turnaround (except for the robust
/// estimator, which takes them as the clocks' read noise), fewer than 3
/// points left after estimation and filtering, a median window larger than
/// a phase, all points at one reference date, bad parameters, and (convex
/// hull only) overlapping hulls.
pub fn fit(samples: &SampleSet, config: &FitConfig) -> Result<ClockFit, ClockError> {
    config.validate()?;
    let monotonic = config.estimator != Estimator::Robust;
    let phases: Vec<(Phase, &[Sample])> = config
        .strategy
        .phases()
        .iter()
        .map(|&phase| samples.checked_phase(phase, monotonic).map(|s| (phase, s)))
        .collect::<Result<_, _>>()?;
    let frame = Frame::at(&phases[0].1[0]);
    let diagnostics = Diagnostics::of(phases.iter().flat_map(|(_, s)| s.iter()));
    match config.estimator {
        Estimator::ConvexHull => hull_fit(&frame, &phases, config, diagnostics),
        Estimator::Robust => robust_fit(&frame, &phases, config, diagnostics),
        _ => ols_fit(&frame, &phases, config, diagnostics),
    }
}

/// The default estimator: convex-hull bounds when a line respects every
/// sample; else OLS on the quietest exchanges of each phase with widened
/// intervals (see [`Estimator::Robust`]).
fn robust_fit(
    frame: &Frame,
    phases: &[(Phase, &[Sample])],
    config: &FitConfig,
    diagnostics: Diagnostics,
) -> Result<ClockFit, ClockError> {
    match hull_fit(frame, phases, config, diagnostics) {
        Ok(fit) => return Ok(fit),
        Err(ClockError::NoFeasibleLine | ClockError::TooFewPoints { .. }) => {}
        Err(e) => return Err(e),
    }
    let (mut used, mut wire_sum, mut wire_count) = (Vec::new(), 0.0, 0);
    for &(_, samples) in phases {
        let quiet = points::quietest(samples);
        for s in &quiet {
            wire_sum += (s.wire_time() as f64).max(0.0);
            wire_count += 1;
        }
        used.extend(points::dunigan(frame, &quiet));
    }
    let line_fit = ols::ols(&used)?;
    // An exchange whose time on the wire w was all spent one way puts its
    // Eq. 3.9 point w/2 off the line; the mean of the kept exchanges' w/2
    // bounds the bias of the line their points give.
    let widening = Widening { offset_ns: 0.5 * wire_sum / wire_count.max(1) as f64 };
    let all = phases.iter().flat_map(|(_, s)| s.iter());
    let diagnostics =
        diagnostics.with_points(all.clone().count(), used.len()).with_contradiction(frame, line_fit.line, all);
    ClockFit::from_ols(frame, &used, &line_fit, config, diagnostics, Some(widening))
}

fn ols_fit(
    frame: &Frame,
    phases: &[(Phase, &[Sample])],
    config: &FitConfig,
    diagnostics: Diagnostics,
) -> Result<ClockFit, ClockError> {
    let mut total = 0;
    let mut used = Vec::new();
    for &(phase, samples) in phases {
        let phase_points = estimator_points(frame, samples, config.estimator);
        total += phase_points.len();
        used.extend(filter_phase(phase_points, config.median_window_used(), phase)?);
    }
    let line_fit = ols::ols(&used)?;
    let samples = phases.iter().flat_map(|(_, s)| s.iter());
    let diagnostics = diagnostics.with_points(total, used.len()).with_contradiction(frame, line_fit.line, samples);
    ClockFit::from_ols(frame, &used, &line_fit, config, diagnostics, None)
}

/// Points of one phase for the OLS estimators.
fn estimator_points(frame: &Frame, samples: &[Sample], estimator: Estimator) -> Vec<Point> {
    match estimator {
        Estimator::Haddad => points::haddad(frame, samples),
        Estimator::MinRoundTrip { keep } => points::dunigan(frame, &points::shortest_round_trips(samples, keep)),
        Estimator::Dunigan | Estimator::ConvexHull | Estimator::Robust => points::dunigan(frame, samples),
    }
}

/// Running median per direction (Haddad's forward and return points are
/// filtered apart), merged back in x order.
fn filter_phase(points: Vec<Point>, window: Option<usize>, phase: Phase) -> Result<Vec<Point>, ClockError> {
    let Some(window) = window else { return Ok(points) };
    let mut kept = Vec::with_capacity(points.len());
    for dir in [Direction::Midpoint, Direction::Forward, Direction::Return] {
        let series: Vec<Point> = points.iter().copied().filter(|p| p.dir == dir).collect();
        if series.is_empty() {
            continue;
        }
        if window > series.len() {
            return Err(ClockError::WindowTooLarge { window, points: series.len(), phase });
        }
        kept.extend(running_median(&series, window));
    }
    kept.sort_by(|p, q| p.x.total_cmp(&q.x));
    Ok(kept)
}

fn hull_fit(
    frame: &Frame,
    phases: &[(Phase, &[Sample])],
    config: &FitConfig,
    diagnostics: Diagnostics,
) -> Result<ClockFit, ClockError> {
    let all: Vec<Sample> = phases.iter().flat_map(|(_, s)| s.iter().copied()).collect();
    let forward: Vec<Point> = all.iter().map(|s| frame.forward(s)).collect();
    let back: Vec<Point> = all.iter().map(|s| frame.back(s)).collect();
    // Residuals and σ̂² are reported about the central line on the Eq. 3.9
    // points, as a diagnostic comparable with the other estimators; the
    // robust estimator's on the quietest exchanges only, as it regresses on
    // them when it falls back, and a delayed exchange's point would make
    // the residual amplitude (and the granularity ε) half its delay.
    let midpoints: Vec<Point> = match config.estimator {
        Estimator::Robust => phases.iter().flat_map(|(_, s)| points::dunigan(frame, &points::quietest(s))).collect(),
        _ => points::dunigan(frame, &all),
    };
    if midpoints.len() < MIN_POINTS {
        return Err(ClockError::TooFewPoints { needed: MIN_POINTS, got: midpoints.len() });
    }
    let bounds = hull::bounds(&forward, &back)?;
    // The dating bounds' second anchor: the last pong, as for OLS fits.
    let last_x = (i128::from(diagnostics.last_reference_ns) - i128::from(frame.x0)) as f64;
    let last = (last_x, hull::offset_range_at(&forward, &back, last_x)?);
    let diagnostics = diagnostics.with_points(midpoints.len(), midpoints.len());
    ClockFit::from_hull(frame, &midpoints, &bounds, last, config, diagnostics)
}
