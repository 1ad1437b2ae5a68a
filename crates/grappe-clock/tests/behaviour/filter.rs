//! The running median removes asymmetric outliers (§2.9).

use grappe_clock::sim::LatencyModel;
use grappe_clock::{Estimator, FitConfig, Strategy};

use crate::common::*;

/// 15 % of the pings are delayed by 300 µs, as system noise delayed the
/// reference → peer direction on the SP2. Each such exchange puts its
/// Eq. 3.9 point 150 µs above the line, so the unfiltered fit is pulled up
/// by about 0.15 × 150 = 22 µs. A window of 5 drops a point unless 3 of 5
/// neighbours are outliers (probability 2.7 %), so the filtered fit stays
/// within a few µs. Asserted: filtered mean |error| at most a third of the
/// unfiltered one, for the offset and for the drift, over 50 seeds.
#[test]
fn running_median_removes_asymmetric_outliers() {
    let latency = LatencyModel::symmetric(20 * MICRO, 2_000.0).with_outliers(0.15, 300 * MICRO);
    let scenario = Scenario { latency, ..Scenario::drifting() };
    let truth = scenario.truth();
    let raw = config(Estimator::Dunigan, Strategy::SampleBeforeAfter);
    let filtered = FitConfig { median_window: Some(5), ..raw };
    let (mut raw_errors, mut filtered_errors) = (Vec::new(), Vec::new());
    for seed in 0..50 {
        let samples = scenario.samples(seed);
        for (cfg, out) in [(&raw, &mut raw_errors), (&filtered, &mut filtered_errors)] {
            let fit = fit_ok(&samples, cfg);
            out.push((offset_error(&fit, &truth).abs(), drift_error(&fit, &truth).abs(), fit.diagnostics.points_used));
        }
    }
    let offset = |v: &[(f64, f64, usize)]| mean(v.iter().map(|e| e.0));
    let drift = |v: &[(f64, f64, usize)]| mean(v.iter().map(|e| e.1));
    let used = mean(filtered_errors.iter().map(|e| e.2 as f64));
    eprintln!(
        "mean |offset error|: raw {:.0} ns, median(5) {:.0} ns; mean |drift error|: raw {:.2e}, median(5) {:.2e}; \
         points kept {used:.1} of 40",
        offset(&raw_errors),
        offset(&filtered_errors),
        drift(&raw_errors),
        drift(&filtered_errors)
    );
    assert!(offset(&filtered_errors) < offset(&raw_errors) / 3.0);
    assert!(drift(&filtered_errors) < drift(&raw_errors) / 3.0);
}

/// Haddad's forward and return points are filtered apart, each series of a
/// phase keeping at most n − k + 1 of its points, and the filtered fit
/// still recovers the offset on clean data.
#[test]
fn haddad_is_filtered_per_direction() {
    let scenario = Scenario::drifting();
    let truth = scenario.truth();
    let filtered = FitConfig { median_window: Some(5), ..config(Estimator::Haddad, Strategy::SampleBeforeAfter) };
    for seed in 0..10 {
        let fit = fit_ok(&scenario.samples(seed), &filtered);
        assert!(offset_error(&fit, &truth).abs() < 5_000.0, "seed {seed}: {}", offset_error(&fit, &truth));
        assert!(fit.diagnostics.points_used <= 80 - 2 * 2 * 4);
    }
}
