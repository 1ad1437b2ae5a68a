//! Simulated clocks: a true date in, a local reading out.

use serde::{Deserialize, Serialize};

use super::random::{mix, unit};
use crate::error::ClockError;
use crate::model::ClockModel;

/// Anything that turns a true date into a local clock reading, ns.
pub trait LocalClock {
    /// The local reading at true date `true_ns`.
    fn read(&self, true_ns: i64) -> i64;
}

/// A deterministic imperfect clock (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimulatedClock {
    /// Reading at true date 0, ns.
    pub offset_ns: i64,
    /// Rate error in parts per million (crystals: ~1 ppm; §2.2).
    pub drift_ppm: f64,
    /// Amplitude A of the periodic noise, ns (50 µs on the T800, 17.5 µs on
    /// the SP2, §7.1).
    pub amplitude_ns: f64,
    /// Period P of the periodic noise, s (≈ 17–20 min in the thesis).
    pub period_s: f64,
    /// Phase φ of the periodic noise at true date 0, rad.
    pub phase_rad: f64,
    /// Half-width of the uniform read noise δ, ns. Readings closer together
    /// than this may come out of order.
    pub jitter_ns: f64,
    /// Seed of the read noise.
    pub seed: u64,
}

impl SimulatedClock {
    /// A clock that reads true time.
    pub fn perfect() -> Self {
        SimulatedClock::linear(0, 0.0)
    }

    /// A clock with an offset and a drift and no noise.
    pub fn linear(offset_ns: i64, drift_ppm: f64) -> Self {
        SimulatedClock {
            offset_ns,
            drift_ppm,
            amplitude_ns: 0.0,
            period_s: 1.0,
            phase_rad: 0.0,
            jitter_ns: 0.0,
            seed: 0,
        }
    }

    /// Refuses non-finite parameters, a negative amplitude or jitter, a
    /// non-positive period, and a drift that stops the clock.
    pub fn validate(&self) -> Result<(), ClockError> {
        let invalid = |name, value, expected| Err(ClockError::InvalidParameter { name, value, expected });
        if !(self.drift_ppm.is_finite() && self.drift_ppm > -1e6) {
            return invalid("drift_ppm", self.drift_ppm, "finite and > -1e6");
        }
        if !(self.amplitude_ns.is_finite() && self.amplitude_ns >= 0.0) {
            return invalid("amplitude_ns", self.amplitude_ns, "finite and >= 0");
        }
        if !(self.period_s.is_finite() && self.period_s > 0.0) {
            return invalid("period_s", self.period_s, "finite and > 0");
        }
        if !self.phase_rad.is_finite() {
            return invalid("phase_rad", self.phase_rad, "finite");
        }
        if !(self.jitter_ns.is_finite() && self.jitter_ns >= 0.0) {
            return invalid("jitter_ns", self.jitter_ns, "finite and >= 0");
        }
        Ok(())
    }

    /// The true linear relation of this clock to `reference` (Eq. 3.2, the
    /// periodic noise and δ left out), for comparing estimates with truth.
    pub fn linear_model(&self, reference: &SimulatedClock) -> ClockModel {
        let (kappa, kappa_ref) = (self.drift_ppm * 1e-6, reference.drift_ppm * 1e-6);
        ClockModel {
            origin_ns: reference.offset_ns,
            offset_ns: (i128::from(self.offset_ns) - i128::from(reference.offset_ns)) as f64,
            drift: (kappa - kappa_ref) / (1.0 + kappa_ref),
        }
    }

    /// The true date at which `reference` reads `reference_ns`, ignoring its
    /// periodic noise and read noise (off by at most A·drift, far below a
    /// nanosecond).
    pub fn true_date_of(&self, reference_ns: i64) -> i64 {
        let since_offset = (i128::from(reference_ns) - i128::from(self.offset_ns)) as f64;
        (since_offset / (1.0 + self.drift_ppm * 1e-6)).round() as i64
    }

    /// The true offset of this clock to `reference` (this reading minus the
    /// reference's, read noise left out, periodic noise in) when the
    /// reference reads `reference_ns`, ns.
    pub fn offset_at_reference(&self, reference: &SimulatedClock, reference_ns: i64) -> f64 {
        let t = reference.true_date_of(reference_ns);
        let smooth = |c: &SimulatedClock| c.offset_ns as f64 + t as f64 * c.drift_ppm * 1e-6 + c.periodic_ns(t);
        smooth(self) - smooth(reference)
    }

    /// The straight line through the true offsets to `reference` at two
    /// reference dates: what a linear fit of samples taken around those
    /// dates should find when the periodic noise is too slow to show
    /// within a sampling phase (the truth a fit's intervals are judged
    /// against; with no periodic noise it is [`SimulatedClock::linear_model`]).
    pub fn chord_model(&self, reference: &SimulatedClock, from_ns: i64, to_ns: i64) -> ClockModel {
        let (from, to) = (self.offset_at_reference(reference, from_ns), self.offset_at_reference(reference, to_ns));
        let drift = if to_ns == from_ns { 0.0 } else { (to - from) / (to_ns - from_ns) as f64 };
        ClockModel { origin_ns: from_ns, offset_ns: from, drift }
    }

    /// The periodic noise at a true date, ns.
    pub fn periodic_ns(&self, true_ns: i64) -> f64 {
        if self.amplitude_ns == 0.0 {
            return 0.0;
        }
        let turns = true_ns as f64 / (self.period_s * 1e9);
        self.amplitude_ns * (std::f64::consts::TAU * turns + self.phase_rad).sin()
    }

    fn jitter(&self, true_ns: i64) -> f64 {
        if self.jitter_ns == 0.0 {
            return 0.0;
        }
        let u = unit(mix(self.seed ^ mix(true_ns as u64)));
        self.jitter_ns * (2.0 * u - 1.0)
    }
}

impl LocalClock for SimulatedClock {
    fn read(&self, true_ns: i64) -> i64 {
        let noise = true_ns as f64 * self.drift_ppm * 1e-6 + self.periodic_ns(true_ns) + self.jitter(true_ns);
        true_ns.saturating_add(self.offset_ns).saturating_add(noise.round() as i64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_clock_follows_eq_3_1() {
        let c = SimulatedClock::linear(1_000, 20.0);
        assert_eq!(c.read(0), 1_000);
        assert_eq!(c.read(1_000_000_000), 1_000_000_000 + 1_000 + 20_000);
    }

    #[test]
    fn noise_is_deterministic_and_bounded() {
        let c = SimulatedClock { jitter_ns: 50.0, seed: 7, ..SimulatedClock::perfect() };
        let again = c;
        for t in (0..10_000_i64).map(|k| k * 1_234_567) {
            let r = c.read(t);
            assert_eq!(r, again.read(t));
            assert!((r - t).abs() <= 50);
        }
        let other = SimulatedClock { seed: 8, ..c };
        assert!((0..100).any(|t| c.read(t) != other.read(t)));
    }

    #[test]
    fn periodic_noise_has_its_amplitude_and_period() {
        let c = SimulatedClock { amplitude_ns: 1_000.0, period_s: 4.0, ..SimulatedClock::perfect() };
        assert_eq!(c.read(1_000_000_000), 1_000_000_000 + 1_000);
        assert_eq!(c.read(3_000_000_000), 3_000_000_000 - 1_000);
        assert_eq!(c.read(4_000_000_000), 4_000_000_000);
    }

    #[test]
    fn true_model_converts_peer_readings_to_reference_readings() {
        let reference = SimulatedClock::linear(-3_000_000, 5.0);
        let peer = SimulatedClock::linear(2_000_000_000, -12.0);
        let truth = peer.linear_model(&reference);
        for t in [0_i64, 1_000_000_000_000, 7_200_000_000_000] {
            let global = truth.to_global(peer.read(t));
            assert!((global - reference.read(t)).abs() <= 1, "t={t}");
        }
    }

    #[test]
    fn chord_of_a_linear_clock_is_its_linear_model() {
        let reference = SimulatedClock::linear(-3_000_000, 5.0);
        let peer = SimulatedClock::linear(2_000_000_000, -12.0);
        let (truth, chord) =
            (peer.linear_model(&reference), peer.chord_model(&reference, 10_000_000_000, 90_000_000_000));
        for date in [0_i64, 50_000_000_000, 120_000_000_000] {
            assert!((truth.offset_at(date) - chord.offset_at(date)).abs() < 1.0, "{date}");
        }
        let wavy = SimulatedClock { amplitude_ns: 1_000.0, period_s: 4.0, ..peer };
        let at = reference.read(1_000_000_000);
        let expected = peer.linear_model(&reference).offset_at(at) + 1_000.0;
        assert!((wavy.offset_at_reference(&reference, at) - expected).abs() < 1.0);
    }

    #[test]
    fn bad_parameters_are_refused() {
        let ok = SimulatedClock::perfect();
        assert!(ok.validate().is_ok());
        for bad in [
            SimulatedClock { drift_ppm: f64::NAN, ..ok },
            SimulatedClock { amplitude_ns: f64::INFINITY, ..ok },
            SimulatedClock { period_s: 0.0, ..ok },
            SimulatedClock { jitter_ns: -1.0, ..ok },
            SimulatedClock { phase_rad: f64::NAN, ..ok },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }
}
