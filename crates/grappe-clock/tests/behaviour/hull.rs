//! Duda's convex-hull bounds hold whenever latencies are positive.

use grappe_clock::sim::{LatencyModel, OneWay, SimulatedClock};
use grappe_clock::{ClockError, Estimator, Strategy, fit};
use proptest::prelude::*;

use crate::common::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Any offset, drift, link asymmetry and phase layout: the bounds contain
    /// the true offset and drift. Read noise stays well below the latency
    /// floor, so every observed one-way latency is positive.
    #[test]
    fn hull_bounds_contain_the_truth(
        offset_ns in -10_000_000_000_i64..10_000_000_000,
        drift_ppm in -100.0_f64..100.0,
        ref_drift_ppm in -100.0_f64..100.0,
        forward_min in 1_000_i64..100_000,
        back_min in 1_000_i64..100_000,
        tail in 0.0_f64..50_000.0,
        per_phase in 3_usize..30,
        sba in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let scenario = Scenario {
            reference: SimulatedClock { jitter_ns: 100.0, ..SimulatedClock::linear(0, ref_drift_ppm) },
            peer: SimulatedClock { jitter_ns: 100.0, ..SimulatedClock::linear(offset_ns, drift_ppm) },
            latency: LatencyModel::asymmetric(
                OneWay { min_ns: forward_min, mean_extra_ns: tail },
                OneWay { min_ns: back_min, mean_extra_ns: tail },
            ),
            per_phase,
            ..Scenario::drifting()
        };
        let strategy = if sba { Strategy::SampleBeforeAfter } else { Strategy::SampleBefore };
        let hull = fit_ok(&scenario.samples(seed), &config(Estimator::ConvexHull, strategy));
        let truth = scenario.truth();
        prop_assert_eq!(covers(&hull, &truth), (true, true), "{:?} vs {:?}", hull.offset, truth);
        prop_assert!(hull.offset.contains(hull.offset.value) && hull.drift.contains(hull.drift.value));
    }
}

/// A clock whose periodic noise (1 ms) dwarfs the latency (20 µs) makes some
/// apparent one-way latencies negative: no line separates the hulls, and the
/// fit says so instead of inventing bounds.
#[test]
fn overlapping_hulls_are_an_error() {
    let peer = SimulatedClock { amplitude_ns: 1_000_000.0, period_s: 60.0, ..SimulatedClock::linear(5_000_000, 0.0) };
    let scenario = Scenario { peer, ..Scenario::drifting() };
    let result = fit(&scenario.samples(3), &config(Estimator::ConvexHull, Strategy::SampleBeforeAfter));
    assert_eq!(result.unwrap_err(), ClockError::NoFeasibleLine);
}
