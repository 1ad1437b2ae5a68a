//! Every estimator recovers offset and drift, its intervals cover the truth
//! as often as they claim, and they shrink as the sample grows.

use grappe_clock::{Estimator, Strategy};

use crate::common::*;

const TRIALS: u64 = 100;

/// Coverage of the 95 % intervals over seeded trials, per estimator.
///
/// With independent, symmetric residuals (Dunigan's (τ_b − τ_f)/2 is a
/// Laplace-like, symmetric variable) the Student interval covers about 95 %
/// of the time. Over 100 trials the binomial standard deviation of the rate
/// is 2.2 points, so 85 % is 4.5 deviations below 95 %: a true failure of
/// the interval, not bad luck. Haddad's σ̂ includes the ±latency of every
/// raw point, so its intervals are far wider than its error (coverage near
/// 100 %). Convex-hull bounds are hard: they must hold in every trial.
#[test]
fn intervals_cover_the_true_clock() {
    let scenario = Scenario::drifting();
    let truth = scenario.truth();
    let estimators = [
        (Estimator::Dunigan, 0.85),
        (Estimator::Haddad, 0.85),
        (Estimator::MinRoundTrip { keep: 0.5 }, 0.85),
        (Estimator::ConvexHull, 1.0),
    ];
    for (estimator, required) in estimators {
        let (mut offset_hits, mut drift_hits) = (0, 0);
        let (mut worst_offset, mut worst_drift) = (0.0_f64, 0.0_f64);
        for seed in 0..TRIALS {
            let fit = fit_ok(&scenario.samples(seed), &config(estimator, Strategy::SampleBeforeAfter));
            let (offset_in, drift_in) = covers(&fit, &truth);
            offset_hits += usize::from(offset_in);
            drift_hits += usize::from(drift_in);
            worst_offset = worst_offset.max(offset_error(&fit, &truth).abs());
            worst_drift = worst_drift.max(drift_error(&fit, &truth).abs());
        }
        let (offset_rate, drift_rate) = (offset_hits as f64 / TRIALS as f64, drift_hits as f64 / TRIALS as f64);
        eprintln!(
            "{estimator}: coverage offset {offset_rate:.2} drift {drift_rate:.2}; \
             worst |error| offset {worst_offset:.0} ns drift {worst_drift:.2e}"
        );
        assert!(offset_rate >= required && drift_rate >= required, "{estimator}: {offset_rate} {drift_rate}");
        // Recovery itself: 1.5 s and 22 ppm to within a few µs and 1e-9
        // (the hull's central line is only as good as the latency floor is
        // symmetric, so it gets the link's 20 µs).
        let offset_tolerance = if estimator == Estimator::ConvexHull { 20_000.0 } else { 5_000.0 };
        assert!(worst_offset < offset_tolerance, "{estimator}: offset error {worst_offset} ns");
        assert!(worst_drift < 1e-9, "{estimator}: drift error {worst_drift}");
    }
}

/// The interval shrinks with the sample: for one phase of n exchanges Δt
/// apart, the slope's half-width goes as σ/(Δt·n^1.5) and the offset's (at
/// the phase's first point) as 2σ/√n, times t_{0.975,n−2}. From n = 20 to
/// n = 200 that is ×33.7 and ×3.4; the asserted ×10 and ×2 leave room for
/// σ̂'s own sampling noise (medians over 10 seeds).
#[test]
fn intervals_shrink_as_the_sample_grows() {
    let half_widths = |n: usize| {
        let scenario = Scenario { per_phase: n, ..Scenario::drifting() };
        let fits: Vec<_> = (0..10)
            .map(|seed| fit_ok(&scenario.samples(seed), &config(Estimator::Dunigan, Strategy::SampleBefore)))
            .collect();
        let offset = median(fits.iter().map(|f| f.offset.half_width()).collect());
        let drift = median(fits.iter().map(|f| f.drift.half_width()).collect());
        let rms = mean(fits.iter().map(|f| drift_error(f, &scenario.truth()).powi(2))).sqrt();
        (offset, drift, rms)
    };
    let (offset_20, drift_20, rms_20) = half_widths(20);
    let (offset_200, drift_200, rms_200) = half_widths(200);
    eprintln!(
        "n=20: offset ±{offset_20:.0} ns, drift ±{drift_20:.2e} (rms error {rms_20:.2e}); \
         n=200: offset ±{offset_200:.0} ns, drift ±{drift_200:.2e} (rms error {rms_200:.2e})"
    );
    assert!(offset_20 / offset_200 > 2.0, "offset half-width ratio {}", offset_20 / offset_200);
    assert!(drift_20 / drift_200 > 10.0, "drift half-width ratio {}", drift_20 / drift_200);
    assert!(rms_20 / rms_200 > 5.0, "drift rms error ratio {}", rms_20 / rms_200);
}
