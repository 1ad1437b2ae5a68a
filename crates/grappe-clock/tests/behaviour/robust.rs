//! The default (robust) estimator on clocks nobody tuned it for: offsets
//! of seconds, drifts of ±1–300 ppm, oscillations of a few µs with periods
//! of seconds, read noise up to above the round trip, delayed exchanges,
//! 3 to 50 exchanges a phase, runs up to two minutes.

use grappe_clock::sim::{LatencyModel, LocalClock, OneWay, PingPongSim, SimulatedClock};
use grappe_clock::{ClockFit, ClockModel, Estimator, FitConfig, IntervalKind, SampleSet, Strategy, fit};

use crate::common::*;

/// A tiny seeded generator for the scenario draws (SplitMix64).
struct Draw(u64);

impl Draw {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1_u64 << 53) as f64
    }

    fn uniform(&mut self, low: f64, high: f64) -> f64 {
        low + (high - low) * self.next()
    }

    fn log_uniform(&mut self, low: f64, high: f64) -> f64 {
        (low.ln() + (high.ln() - low.ln()) * self.next()).exp()
    }

    fn sign(&mut self) -> f64 {
        if self.next() < 0.5 { -1.0 } else { 1.0 }
    }
}

/// One drawn scenario: two clocks, a link, a sampling plan, a run.
#[derive(Debug, Clone, Copy)]
pub struct Drawn {
    pub reference: SimulatedClock,
    pub peer: SimulatedClock,
    pub latency: LatencyModel,
    pub hold_ns: i64,
    pub interval_ns: i64,
    pub per_phase: usize,
    pub run_ns: i64,
}

fn clock(draw: &mut Draw, jitter_ns: f64, seed: u64) -> SimulatedClock {
    SimulatedClock {
        offset_ns: (draw.sign() * draw.log_uniform(1e3, 5e9)) as i64,
        drift_ppm: draw.sign() * draw.uniform(1.0, 300.0),
        amplitude_ns: if draw.next() < 0.25 { 0.0 } else { draw.uniform(0.0, 5_000.0) },
        period_s: draw.uniform(1.0, 20.0),
        phase_rad: draw.uniform(-3.2, 3.2),
        jitter_ns,
        seed,
    }
}

/// Scenario `seed`: the ranges of the module comment.
pub fn drawn(seed: u64) -> Drawn {
    let mut draw = Draw(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ 0x5eed);
    let min_ns = draw.log_uniform(300.0, 20_000.0);
    let way = |draw: &mut Draw| OneWay {
        min_ns: (min_ns * draw.uniform(1.0, 2.0)) as i64,
        mean_extra_ns: draw.log_uniform(50.0, 5_000.0),
    };
    let (forward, back) = (way(&mut draw), way(&mut draw));
    let mut latency = LatencyModel::asymmetric(forward, back);
    if draw.next() < 0.5 {
        // Delayed pings: a peer asleep when its ping came, a loaded host.
        latency = latency.with_outliers(draw.uniform(0.02, 0.3), draw.log_uniform(50_000.0, 500_000.0) as i64);
    }
    let round_trip = (forward.min_ns + back.min_ns) as f64;
    let jitter_ns = match (draw.next() * 3.0) as u32 {
        0 => 0.0,
        1 => draw.uniform(0.0, 0.1) * min_ns,
        _ => draw.uniform(1.0, 3.0) * round_trip,
    };
    Drawn {
        reference: clock(&mut draw, jitter_ns, seed.wrapping_mul(2)),
        peer: clock(&mut draw, jitter_ns, seed.wrapping_mul(2) + 1),
        latency,
        hold_ns: draw.uniform(100.0, 2_000.0) as i64,
        interval_ns: draw.log_uniform(20_000.0, 10_000_000.0) as i64,
        per_phase: draw.uniform(3.0, 51.0) as usize,
        run_ns: draw.log_uniform(0.05, 120.0).mul_add(SECOND as f64, 0.0) as i64,
    }
}

impl Drawn {
    /// Before and After phases around the run, both starting at true date
    /// 1 s (so that the run ends within two minutes and a bit).
    pub fn samples(&self, seed: u64) -> SampleSet {
        let mut sim = PingPongSim::new(self.latency, self.hold_ns, self.interval_ns, seed).unwrap();
        let before = sim.phase(&self.reference, &self.peer, SECOND, self.per_phase);
        let after_start = SECOND + self.per_phase as i64 * self.interval_ns + self.run_ns;
        let after = sim.phase(&self.reference, &self.peer, after_start, self.per_phase);
        SampleSet::from_phases(before, after)
    }

    /// The truth a fit is judged against: the line through the true
    /// offsets at its first and last sample.
    pub fn truth(&self, fit: &ClockFit) -> ClockModel {
        self.peer.chord_model(&self.reference, fit.dating.first_ns, fit.dating.last_ns)
    }
}

fn covered(fit: &ClockFit, truth: &ClockModel) -> bool {
    fit.offset.contains(truth.offset_at(fit.model.origin_ns)) && fit.drift.contains(truth.drift)
}

const SCENARIOS: u64 = 400;

/// Coverage of the reported 95 % intervals over 400 drawn scenarios: the
/// true offset and drift must both be inside for at least 95 % of them,
/// with the default settings (robust estimator, SBA) and with SB. Every
/// scenario must fit: a rank the default cannot correct is a failure.
#[test]
fn default_intervals_hold_the_truth_for_95_percent_of_ranks() {
    for strategy in [Strategy::SampleBeforeAfter, Strategy::SampleBefore] {
        let config = FitConfig { strategy, ..FitConfig::default() };
        let (mut hits, mut hull, mut widened) = (0, 0, 0);
        let mut misses = Vec::new();
        for seed in 0..SCENARIOS {
            let scenario = drawn(seed);
            let fit =
                fit(&scenario.samples(seed), &config).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{scenario:?}"));
            let truth = scenario.truth(&fit);
            match fit.interval {
                IntervalKind::HullBounds => hull += 1,
                IntervalKind::Widened { .. } => widened += 1,
                IntervalKind::Student { .. } => panic!("the robust estimator gave plain Student intervals"),
            }
            if covered(&fit, &truth) {
                hits += 1;
            } else {
                misses.push(seed);
            }
        }
        let rate = hits as f64 / SCENARIOS as f64;
        eprintln!("{strategy}: coverage {rate:.3} ({hull} hull, {widened} widened); missed seeds {misses:?}");
        assert!(rate >= 0.95, "{strategy}: the intervals held the truth for {rate:.3} of the scenarios");
    }
}

/// The same scenarios under Tape/PVM's setting (Dunigan, median window
/// 5), the default before: for the record of what changed, and as proof
/// that the scenarios are hard (its coverage is far below 95 %).
#[test]
fn dunigan_intervals_miss_the_truth_on_the_same_scenarios() {
    let config = FitConfig { estimator: Estimator::Dunigan, ..FitConfig::default() };
    let (mut hits, mut fitted) = (0, 0);
    for seed in 0..SCENARIOS {
        let scenario = drawn(seed);
        let Ok(fit) = fit(&scenario.samples(seed), &config) else { continue };
        fitted += 1;
        hits += usize::from(covered(&fit, &scenario.truth(&fit)));
    }
    let rate = hits as f64 / SCENARIOS as f64;
    eprintln!("dunigan: {fitted} of {SCENARIOS} fitted, coverage {rate:.3}");
    assert!(rate < 0.8, "{rate}");
}

/// The reported dating bounds hold too: over the run, the converted date
/// of the peer is within the half-width the fit gives at that date, for
/// at least 95 % of the scenarios (checked at 20 dates of each run).
#[test]
fn dating_bounds_hold_over_the_run() {
    let mut hits = 0;
    for seed in 0..SCENARIOS {
        let scenario = drawn(seed);
        let fit = fit(&scenario.samples(seed), &FitConfig::default()).unwrap();
        let truth = scenario.truth(&fit);
        let (first, last) = (fit.dating.first_ns, fit.dating.last_ns);
        let ok = (0..=20).all(|k| {
            let date = first + (last - first) / 20 * k;
            (fit.model.offset_at(date) - truth.offset_at(date)).abs() <= fit.dating.half_width_at(date)
        });
        hits += usize::from(ok);
    }
    let rate = hits as f64 / SCENARIOS as f64;
    eprintln!("dating bounds held over the whole run for {rate:.3} of the scenarios");
    assert!(rate >= 0.95, "{rate}");
}

#[allow(dead_code)]
fn unused(_: &dyn LocalClock) {}
