//! Shared scenarios: simulated clocks sampled by simulated ping-pong.

use grappe_clock::sim::{LatencyModel, PingPongSim, SimulatedClock};
use grappe_clock::{ClockFit, ClockModel, Estimator, FitConfig, SampleSet, Strategy, fit};

pub const SECOND: i64 = 1_000_000_000;
pub const MICRO: i64 = 1_000;

/// A reference and a peer clock, a latency model, and the sampling plan.
#[derive(Clone, Copy, Debug)]
pub struct Scenario {
    pub reference: SimulatedClock,
    pub peer: SimulatedClock,
    pub latency: LatencyModel,
    pub hold_ns: i64,
    pub interval_ns: i64,
    /// Exchanges per phase.
    pub per_phase: usize,
    /// True date of the After phase's first exchange.
    pub after_start_ns: i64,
}

impl Scenario {
    /// Both clocks offset and drifting, a little read noise, a 20 µs link
    /// with a 2 µs exponential tail, one exchange per second, 20 per phase,
    /// the After phase an hour later.
    pub fn drifting() -> Self {
        Scenario {
            reference: SimulatedClock { jitter_ns: 20.0, ..SimulatedClock::linear(-2_000_000, 3.0) },
            peer: SimulatedClock { jitter_ns: 20.0, ..SimulatedClock::linear(1_500_000_000, 25.0) },
            latency: LatencyModel::symmetric(20 * MICRO, 2_000.0),
            hold_ns: MICRO,
            interval_ns: SECOND,
            per_phase: 20,
            after_start_ns: 3_600 * SECOND,
        }
    }

    /// The samples of one trial; `seed` drives latencies and read noise.
    pub fn samples(&self, seed: u64) -> SampleSet {
        let reference = SimulatedClock { seed: seed.wrapping_mul(3), ..self.reference };
        let peer = SimulatedClock { seed: seed.wrapping_mul(3) + 1, ..self.peer };
        let mut sim = PingPongSim::new(self.latency, self.hold_ns, self.interval_ns, seed).unwrap();
        let before = sim.phase(&reference, &peer, 0, self.per_phase);
        let after = sim.phase(&reference, &peer, self.after_start_ns, self.per_phase);
        SampleSet::from_phases(before, after)
    }

    /// The peer's true linear relation to the reference.
    pub fn truth(&self) -> ClockModel {
        self.peer.linear_model(&self.reference)
    }
}

/// A configuration without the median filter.
pub fn config(estimator: Estimator, strategy: Strategy) -> FitConfig {
    FitConfig { estimator, strategy, median_window: None }
}

/// Estimated minus true offset at the fit's origin, ns.
pub fn offset_error(fit: &ClockFit, truth: &ClockModel) -> f64 {
    fit.offset.value - truth.offset_at(fit.model.origin_ns)
}

/// Estimated minus true drift.
pub fn drift_error(fit: &ClockFit, truth: &ClockModel) -> f64 {
    fit.drift.value - truth.drift
}

/// Whether the fit's intervals contain the true offset and drift.
pub fn covers(fit: &ClockFit, truth: &ClockModel) -> (bool, bool) {
    (fit.offset.contains(truth.offset_at(fit.model.origin_ns)), fit.drift.contains(truth.drift))
}

/// Fits, panicking with the error (tests only).
pub fn fit_ok(samples: &SampleSet, config: &FitConfig) -> ClockFit {
    fit(samples, config).unwrap_or_else(|e| panic!("{config:?}: {e}"))
}

pub fn mean(values: impl IntoIterator<Item = f64>) -> f64 {
    let (sum, n) = values.into_iter().fold((0.0, 0_usize), |(s, n), v| (s + v, n + 1));
    sum / n as f64
}

pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
