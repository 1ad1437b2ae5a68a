//! Duda et al.'s convex-hull bounds (chapter §2.4.8).
//!
//! If every one-way latency is positive, the true offset line d = a + κ·x
//! lies below every forward point (Eq. 3.4: u⁺ > 0) and above every return
//! point (Eq. 3.5: u⁻ < 0). For a given κ a feasible a exists iff
//! max_L(d_l − κx_l) ≤ min_U(d_u − κx_u), i.e. iff for every pair (l, u)
//! d_l − d_u ≤ κ·(x_l − x_u). Only the lower hull of the forward set U and
//! the upper hull of the return set L can be active, so the pairs are taken
//! among hull vertices. The result is a hard interval for κ and for the
//! offset at the origin, not a statistical one; the central estimate is the
//! bisector of the two extreme-slope lines.

use crate::error::ClockError;
use crate::ols::Line;
use crate::points::Point;

/// The feasible region's extent and its central line (centred frame).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct HullBounds {
    pub kappa_min: f64,
    pub kappa_max: f64,
    /// Bounds of the offset at x = 0.
    pub a_min: f64,
    pub a_max: f64,
    pub central: Line,
}

/// Computes the bounds from forward points (line below them) and return
/// points (line above them).
pub(crate) fn bounds(forward: &[Point], back: &[Point]) -> Result<HullBounds, ClockError> {
    let upper = hull(back, |c| c >= 0.0);
    let lower = hull(forward, |c| c <= 0.0);
    let (kappa_min, kappa_max) = slope_range(&upper, &lower, forward.len() + back.len())?;
    let candidates = candidate_slopes(&upper, &lower, kappa_min, kappa_max);
    let floor = |k: f64| upper.iter().map(|l| l.d - k * l.x).fold(f64::NEG_INFINITY, f64::max);
    let ceiling = |k: f64| lower.iter().map(|u| u.d - k * u.x).fold(f64::INFINITY, f64::min);
    // floor is convex and ceiling concave in κ, both piecewise linear with
    // breaks at hull edge slopes: their extremes are at a candidate.
    let a_min = candidates.iter().map(|&k| floor(k)).fold(f64::INFINITY, f64::min);
    let a_max = candidates.iter().map(|&k| ceiling(k)).fold(f64::NEG_INFINITY, f64::max);
    let kappa = 0.5 * (kappa_min + kappa_max);
    let central = Line { a: 0.5 * (floor(kappa) + ceiling(kappa)), kappa };
    Ok(HullBounds { kappa_min, kappa_max, a_min, a_max, central })
}

/// The range of offsets at abscissa `x` over every line consistent with
/// the points: the bounds of the offset at the origin of a frame moved to x.
pub(crate) fn offset_range_at(forward: &[Point], back: &[Point], x: f64) -> Result<(f64, f64), ClockError> {
    let shift = |points: &[Point]| points.iter().map(|p| Point { x: p.x - x, ..*p }).collect::<Vec<_>>();
    let moved = bounds(&shift(forward), &shift(back))?;
    Ok((moved.a_min, moved.a_max))
}

/// Andrew's monotone chain: `drop` says whether the middle of three vertices
/// (by the sign of the cross product) is not on the wanted hull.
fn hull(points: &[Point], drop: impl Fn(f64) -> bool) -> Vec<Point> {
    let mut sorted = points.to_vec();
    sorted.sort_by(|p, q| p.x.total_cmp(&q.x).then(p.d.total_cmp(&q.d)));
    let mut chain: Vec<Point> = Vec::with_capacity(sorted.len());
    for p in sorted {
        while let [.., o, a] = chain[..] {
            if !drop((a.x - o.x) * (p.d - o.d) - (a.d - o.d) * (p.x - o.x)) {
                break;
            }
            chain.pop();
        }
        chain.push(p);
    }
    chain
}

/// [κ_min, κ_max] from every (return, forward) pair of hull vertices.
fn slope_range(upper: &[Point], lower: &[Point], points: usize) -> Result<(f64, f64), ClockError> {
    let (mut lo, mut hi) = (f64::NEG_INFINITY, f64::INFINITY);
    for l in upper {
        for u in lower {
            let (dx, dd) = (l.x - u.x, l.d - u.d);
            if dx > 0.0 {
                lo = lo.max(dd / dx);
            } else if dx < 0.0 {
                hi = hi.min(dd / dx);
            } else if dd > 0.0 {
                return Err(ClockError::NoFeasibleLine);
            }
        }
    }
    if !(lo.is_finite() && hi.is_finite()) {
        // Without a return after a forward and a forward after a return, one
        // side of the slope is unconstrained: two exchanges are the minimum.
        return Err(ClockError::TooFewPoints { needed: 4, got: points });
    }
    if lo > hi {
        return Err(ClockError::NoFeasibleLine);
    }
    Ok((lo, hi))
}

/// κ_min, κ_max and every hull edge slope between them.
fn candidate_slopes(upper: &[Point], lower: &[Point], lo: f64, hi: f64) -> Vec<f64> {
    let edges = upper.windows(2).chain(lower.windows(2));
    let inner = edges.filter(|w| w[1].x > w[0].x).map(|w| (w[1].d - w[0].d) / (w[1].x - w[0].x));
    let mut slopes = vec![lo, hi];
    slopes.extend(inner.filter(|k| (lo..=hi).contains(k)));
    slopes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::points::Direction;

    fn p(x: f64, d: f64, dir: Direction) -> Point {
        Point { x, d, dir }
    }

    /// True line d = 10 + 0.01·x, latencies between 1 and 3.
    fn exchanges() -> (Vec<Point>, Vec<Point>) {
        let line = |x: f64| 10.0 + 0.01 * x;
        let lat = [1.0, 3.0, 2.0, 1.5, 2.5, 1.2];
        let mut fwd = Vec::new();
        let mut back = Vec::new();
        for (k, w) in lat.windows(2).enumerate() {
            let x = 100.0 * k as f64;
            fwd.push(p(x, line(x) + w[0], Direction::Forward));
            back.push(p(x + 5.0, line(x + 5.0) - w[1], Direction::Return));
        }
        (fwd, back)
    }

    #[test]
    fn bounds_contain_the_true_line() {
        let (fwd, back) = exchanges();
        let b = bounds(&fwd, &back).unwrap();
        assert!(b.kappa_min <= 0.01 && 0.01 <= b.kappa_max, "{b:?}");
        assert!(b.a_min <= 10.0 && 10.0 <= b.a_max, "{b:?}");
        assert!(b.central.kappa >= b.kappa_min && b.central.kappa <= b.kappa_max);
        assert!(b.central.a >= b.a_min && b.central.a <= b.a_max);
    }

    #[test]
    fn crossing_sets_have_no_feasible_line() {
        let fwd = [p(0.0, 0.0, Direction::Forward), p(10.0, 0.0, Direction::Forward)];
        let back = [p(5.0, 1.0, Direction::Return), p(15.0, 1.0, Direction::Return)];
        assert_eq!(bounds(&fwd, &back), Err(ClockError::NoFeasibleLine));
    }

    #[test]
    fn one_exchange_leaves_the_slope_unbounded() {
        let fwd = [p(0.0, 1.0, Direction::Forward)];
        let back = [p(5.0, -1.0, Direction::Return)];
        assert!(matches!(bounds(&fwd, &back), Err(ClockError::TooFewPoints { .. })));
    }
}
