//! Degenerate input gives errors, never panics.

use grappe_clock::Strategy as Plan;
use grappe_clock::sim::{LatencyModel, PingPongSim, SimulatedClock};
use grappe_clock::{ClockError, ClockModel, Estimator, FitConfig, Phase, Sample, SampleSet, fit};
use proptest::prelude::*;

use crate::common::*;

fn sb(estimator: Estimator, median_window: Option<usize>) -> FitConfig {
    FitConfig { estimator, strategy: Plan::SampleBefore, median_window }
}

/// n exchanges one second apart with a 1 µs link and a peer 1 ms ahead.
fn clean(n: i64) -> Vec<Sample> {
    (0..n).map(|k| k * SECOND).map(|t| Sample::new(t, t + 1_001_000, t + 1_002_000, t + 3_000)).collect()
}

#[test]
fn fewer_than_three_points_is_an_error() {
    let two = SampleSet::from_phases(clean(2), vec![]);
    for estimator in [Estimator::Dunigan, Estimator::MinRoundTrip { keep: 1.0 }, Estimator::ConvexHull] {
        assert_eq!(fit(&two, &sb(estimator, None)), Err(ClockError::TooFewPoints { needed: 3, got: 2 }));
    }
    // min-rtt leaves 2 of 8 exchanges.
    let eight = SampleSet::from_phases(clean(8), vec![]);
    let err = fit(&eight, &sb(Estimator::MinRoundTrip { keep: 0.25 }, None)).unwrap_err();
    assert_eq!(err, ClockError::TooFewPoints { needed: 3, got: 2 });
}

#[test]
fn all_points_at_one_date_is_an_error() {
    let same = SampleSet::from_phases(vec![Sample::new(0, 10, 20, 30); 5], vec![]);
    assert_eq!(fit(&same, &sb(Estimator::Dunigan, None)), Err(ClockError::DegenerateAbscissa { points: 5 }));
}

#[test]
fn missing_phases_and_impossible_samples_are_errors() {
    let before_only = SampleSet::from_phases(clean(5), vec![]);
    let err = fit(&before_only, &FitConfig { median_window: None, ..FitConfig::default() }).unwrap_err();
    assert_eq!(err, ClockError::EmptyPhase { phase: Phase::After });
    assert_eq!(
        fit(&SampleSet::new(), &sb(Estimator::Dunigan, None)),
        Err(ClockError::EmptyPhase { phase: Phase::Before })
    );
    let mut backwards = clean(5);
    backwards[3].t_recv_ref = backwards[3].t_send_ref - 1;
    let err = fit(&SampleSet::from_phases(backwards, vec![]), &sb(Estimator::Dunigan, None)).unwrap_err();
    assert!(matches!(err, ClockError::InvalidSample { phase: Phase::Before, index: 3, .. }), "{err}");
}

#[test]
fn window_larger_than_the_sample_is_an_error() {
    let three = SampleSet::from_phases(clean(3), clean(9));
    let err = fit(&three, &sb(Estimator::Dunigan, Some(5))).unwrap_err();
    assert_eq!(err, ClockError::WindowTooLarge { window: 5, points: 3, phase: Phase::Before });
    let err = fit(&three, &sb(Estimator::Dunigan, Some(4))).unwrap_err();
    assert_eq!(err, ClockError::InvalidWindow { window: 4 });
}

#[test]
fn nan_and_infinite_parameters_are_errors() {
    let samples = SampleSet::from_phases(clean(10), vec![]);
    for keep in [f64::NAN, f64::INFINITY, 0.0, -0.5] {
        assert!(matches!(
            fit(&samples, &sb(Estimator::MinRoundTrip { keep }, None)),
            Err(ClockError::InvalidParameter { name: "keep", .. })
        ));
    }
    assert!(ClockModel::new(0, f64::NAN, 0.0).is_err());
    assert!(ClockModel::new(0, 0.0, f64::NEG_INFINITY).is_err());
    assert!(SimulatedClock { drift_ppm: f64::NAN, ..SimulatedClock::perfect() }.validate().is_err());
    let latency = LatencyModel::symmetric(1_000, f64::NAN);
    assert!(PingPongSim::new(latency, 0, SECOND, 0).is_err());
}

/// A raw sample for the property test: any dates, but biased towards
/// plausible ones so that some fits succeed.
fn any_sample() -> impl Strategy<Value = Sample> {
    let plausible = (0_i64..1 << 40, 0_i64..1 << 20, 0_i64..1 << 20, -(1_i64 << 40)..1 << 40)
        .prop_map(|(t, a, b, off)| Sample::new(t, t + off + a, t + off + a + b, t + 2 * a + b));
    prop_oneof![plausible, any::<(i64, i64, i64, i64)>().prop_map(|(a, b, c, d)| Sample::new(a, b, c, d))]
}

fn any_estimator() -> impl Strategy<Value = Estimator> {
    prop_oneof![
        Just(Estimator::Dunigan),
        Just(Estimator::Haddad),
        Just(Estimator::ConvexHull),
        (-0.5_f64..1.5).prop_map(|keep| Estimator::MinRoundTrip { keep }),
    ]
}

proptest! {
    /// Whatever the samples and settings, `fit` returns, and a fit that
    /// succeeds has finite estimates and converts dates without panicking.
    #[test]
    fn fit_never_panics(
        before in prop::collection::vec(any_sample(), 0..12),
        after in prop::collection::vec(any_sample(), 0..12),
        estimator in any_estimator(),
        sba in any::<bool>(),
        window in prop::option::of(0_usize..8),
        date in any::<i64>(),
    ) {
        let strategy = if sba { Plan::SampleBeforeAfter } else { Plan::SampleBefore };
        let config = FitConfig { estimator, strategy, median_window: window };
        if let Ok(fit) = fit(&SampleSet::from_phases(before, after), &config) {
            prop_assert!(fit.offset.value.is_finite() && fit.drift.value.is_finite());
            let _ = fit.model.to_local(fit.model.to_global(date));
            let _ = grappe_clock::ClockReport::new("0", vec![grappe_clock::PeerClock { label: "1".into(), fit }]).to_string();
        }
    }
}
