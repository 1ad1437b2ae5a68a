//! Simulated ping-pong sampling (Fig. 3.1) with configurable latencies.

use serde::{Deserialize, Serialize};

use super::clock::LocalClock;
use super::random::SplitMix64;
use crate::error::ClockError;
use crate::sample::Sample;

/// One direction's latency: a floor plus an exponential tail, the usual
/// shape of message times on an idle network.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct OneWay {
    /// Minimum latency µ, ns.
    pub min_ns: i64,
    /// Mean of the exponential part above the minimum, ns.
    pub mean_extra_ns: f64,
}

/// Latencies of the ping (reference → peer) and the pong (peer → reference).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LatencyModel {
    /// The ping's direction.
    pub forward: OneWay,
    /// The pong's direction.
    pub back: OneWay,
    /// Probability that a ping is delayed by `outlier_extra_ns` (system
    /// noise; on the SP2 most peaks delayed the reference → peer direction,
    /// §2.9).
    pub outlier_probability: f64,
    /// Extra delay of an outlier ping, ns.
    pub outlier_extra_ns: i64,
}

impl LatencyModel {
    /// The same distribution both ways, no outliers.
    pub fn symmetric(min_ns: i64, mean_extra_ns: f64) -> Self {
        let way = OneWay { min_ns, mean_extra_ns };
        LatencyModel::asymmetric(way, way)
    }

    /// Different distributions for the ping and the pong, no outliers.
    pub fn asymmetric(forward: OneWay, back: OneWay) -> Self {
        LatencyModel { forward, back, outlier_probability: 0.0, outlier_extra_ns: 0 }
    }

    /// The same model where a fraction of the pings is delayed.
    pub fn with_outliers(self, probability: f64, extra_ns: i64) -> Self {
        LatencyModel { outlier_probability: probability, outlier_extra_ns: extra_ns, ..self }
    }

    /// Refuses negative or non-finite latencies and a probability outside
    /// [0, 1].
    pub fn validate(&self) -> Result<(), ClockError> {
        for way in [self.forward, self.back] {
            check(way.min_ns >= 0, "min_ns", way.min_ns as f64, ">= 0")?;
            check(
                way.mean_extra_ns.is_finite() && way.mean_extra_ns >= 0.0,
                "mean_extra_ns",
                way.mean_extra_ns,
                "finite and >= 0",
            )?;
        }
        let p = self.outlier_probability;
        check((0.0..=1.0).contains(&p), "outlier_probability", p, "0 <= p <= 1")?;
        check(self.outlier_extra_ns >= 0, "outlier_extra_ns", self.outlier_extra_ns as f64, ">= 0")
    }
}

fn check(ok: bool, name: &'static str, value: f64, expected: &'static str) -> Result<(), ClockError> {
    if ok { Ok(()) } else { Err(ClockError::InvalidParameter { name, value, expected }) }
}

/// Produces samples as the runtime would: a ping at a true date, the peer
/// answering after `hold_ns`, one exchange every `interval_ns` (Δt).
#[derive(Clone, Debug)]
pub struct PingPongSim {
    latency: LatencyModel,
    hold_ns: i64,
    interval_ns: i64,
    rng: SplitMix64,
}

impl PingPongSim {
    /// A simulator; refused if the latencies, the turnaround or the
    /// interval are invalid.
    pub fn new(latency: LatencyModel, hold_ns: i64, interval_ns: i64, seed: u64) -> Result<Self, ClockError> {
        latency.validate()?;
        check(hold_ns >= 0, "hold_ns", hold_ns as f64, ">= 0")?;
        check(interval_ns > 0, "interval_ns", interval_ns as f64, "> 0")?;
        Ok(PingPongSim { latency, hold_ns, interval_ns, rng: SplitMix64::new(seed) })
    }

    /// Draws the ping's latency, outliers included, ns.
    pub fn ping_latency(&mut self) -> i64 {
        let mut latency = self.draw(self.latency.forward);
        if self.rng.next_unit() < self.latency.outlier_probability {
            latency = latency.saturating_add(self.latency.outlier_extra_ns);
        }
        latency
    }

    /// Draws the pong's latency, ns.
    pub fn pong_latency(&mut self) -> i64 {
        self.draw(self.latency.back)
    }

    fn draw(&mut self, way: OneWay) -> i64 {
        way.min_ns.saturating_add(self.rng.exponential(way.mean_extra_ns).round() as i64)
    }

    /// One exchange whose ping leaves at true date `true_ns`: the four
    /// readings of Fig. 3.1.
    pub fn exchange(&mut self, reference: &impl LocalClock, peer: &impl LocalClock, true_ns: i64) -> Sample {
        let arrive = true_ns.saturating_add(self.ping_latency());
        let reply = arrive.saturating_add(self.hold_ns);
        let back = reply.saturating_add(self.pong_latency());
        Sample::new(reference.read(true_ns), peer.read(arrive), peer.read(reply), reference.read(back))
    }

    /// `n` exchanges, the first at true date `start_ns`, then every
    /// `interval_ns`: one sampling phase.
    pub fn phase(
        &mut self,
        reference: &impl LocalClock,
        peer: &impl LocalClock,
        start_ns: i64,
        n: usize,
    ) -> Vec<Sample> {
        let step = self.interval_ns;
        (0..n as i64).map(|k| self.exchange(reference, peer, start_ns.saturating_add(k.saturating_mul(step)))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimulatedClock;

    #[test]
    fn exchange_reads_the_four_dates_in_order() {
        let latency = LatencyModel::symmetric(1_000, 0.0);
        let mut sim = PingPongSim::new(latency, 200, 1_000_000, 1).unwrap();
        let peer = SimulatedClock::linear(5_000, 0.0);
        let s = sim.exchange(&SimulatedClock::perfect(), &peer, 10_000);
        assert_eq!(s, Sample::new(10_000, 16_000, 16_200, 12_200));
    }

    #[test]
    fn latencies_have_their_floor_mean_and_outliers() {
        let latency = LatencyModel::symmetric(500, 100.0).with_outliers(0.2, 1_000_000);
        let mut sim = PingPongSim::new(latency, 0, 1, 42).unwrap();
        let pongs: Vec<i64> = (0..20_000).map(|_| sim.pong_latency()).collect();
        assert!(pongs.iter().all(|&l| l >= 500));
        let mean = pongs.iter().sum::<i64>() as f64 / pongs.len() as f64;
        assert!((mean - 600.0).abs() < 5.0, "mean {mean}");
        let outliers = (0..20_000).filter(|_| sim.ping_latency() > 1_000_000).count();
        assert!((3_500..4_500).contains(&outliers), "{outliers}");
    }

    #[test]
    fn bad_settings_are_refused() {
        let ok = LatencyModel::symmetric(1, 1.0);
        assert!(PingPongSim::new(ok, -1, 1, 0).is_err());
        assert!(PingPongSim::new(ok, 0, 0, 0).is_err());
        assert!(PingPongSim::new(ok.with_outliers(f64::NAN, 1), 0, 1, 0).is_err());
        assert!(PingPongSim::new(LatencyModel::symmetric(-5, 1.0), 0, 1, 0).is_err());
        assert!(PingPongSim::new(LatencyModel::symmetric(5, f64::INFINITY), 0, 1, 0).is_err());
    }
}
