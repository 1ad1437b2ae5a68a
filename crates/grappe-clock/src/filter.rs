//! The running-median filter of §2.9.
//!
//! A window of k points slides along x; in each position the point whose
//! offset d is the window's median is kept. As the [impl. suggestion] of §2.9
//! says, the median is taken on the offset series d = y − x (on raw y the
//! trend dominates and the median would always be the middle point), and the
//! fit module applies it per phase and, for Haddad, per direction (mixing the
//! above-the-line and below-the-line points would make the median a
//! latency-dependent bias).
//!
//! The kept pairs are real observations, not the window median placed at the
//! window's centre: with a drift of 1e-5 and points 1 s apart, moving a d
//! value by two points would shift it by 20 µs. A point that is the median
//! of several windows is kept once, so the output has at most n − k + 1
//! points (the thesis's count counts repeats): counting it twice would
//! narrow the confidence interval without new information.

use crate::error::ClockError;
use crate::points::Point;

/// Checks a window size: odd, so the median is a point of the window.
pub(crate) fn check_window(window: usize) -> Result<(), ClockError> {
    if window == 0 || window % 2 == 0 {
        return Err(ClockError::InvalidWindow { window });
    }
    Ok(())
}

/// Running median of window `window` over points sorted by x. The caller
/// has checked `window` and that it is at most `points.len()`.
pub(crate) fn running_median(points: &[Point], window: usize) -> Vec<Point> {
    debug_assert!(window % 2 == 1 && window <= points.len());
    let mut keep = vec![false; points.len()];
    let mut order: Vec<usize> = Vec::with_capacity(window);
    for start in 0..=points.len() - window {
        order.clear();
        order.extend(start..start + window);
        order.sort_by(|&i, &j| points[i].d.total_cmp(&points[j].d));
        keep[order[window / 2]] = true;
    }
    points.iter().zip(keep).filter_map(|(p, k)| k.then_some(*p)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::points::Direction;
    use proptest::prelude::*;

    fn series(ds: &[f64]) -> Vec<Point> {
        ds.iter().enumerate().map(|(i, &d)| Point { x: i as f64, d, dir: Direction::Midpoint }).collect()
    }

    #[test]
    fn isolated_spikes_are_dropped() {
        let out = running_median(&series(&[0.0, 0.1, 90.0, -0.1, 0.2, 0.0, -80.0, 0.1, 0.0]), 3);
        assert!(out.iter().all(|p| p.d.abs() < 1.0), "{out:?}");
        assert!(out.len() <= 7);
    }

    #[test]
    fn window_one_is_identity() {
        let s = series(&[3.0, 1.0, 2.0]);
        assert_eq!(running_median(&s, 1), s);
    }

    #[test]
    fn even_and_zero_windows_are_refused() {
        assert_eq!(check_window(4), Err(ClockError::InvalidWindow { window: 4 }));
        assert_eq!(check_window(0), Err(ClockError::InvalidWindow { window: 0 }));
        assert_eq!(check_window(5), Ok(()));
    }

    proptest! {
        /// Every kept point is an input point, in x order, and there are
        /// between 1 and n − k + 1 of them.
        #[test]
        fn output_is_a_subsequence(ds in prop::collection::vec(-1e6_f64..1e6, 1..60), half in 0_usize..5) {
            let window = (2 * half + 1).min(if ds.len() % 2 == 1 { ds.len() } else { ds.len() - 1 });
            let input = series(&ds);
            let out = running_median(&input, window);
            prop_assert!(!out.is_empty() && out.len() <= ds.len() - window + 1);
            prop_assert!(out.windows(2).all(|w| w[0].x < w[1].x));
            prop_assert!(out.iter().all(|p| input.contains(p)));
        }
    }
}
