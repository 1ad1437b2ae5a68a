//! A job-wide clock simulation from one setting, e.g.
//! `offset=2ms,drift=50ppm,amplitude=5us,period=10s,jitter=50ns,seed=7`
//! (the value of `GRAPPE_TRACE_SIMULATE`).
//!
//! Each rank gets its own clock from it: offset and drift are the spec's
//! scaled by a factor in [−1, 1] drawn from the seed and the rank, the
//! oscillation has the spec's amplitude and period and a rank-dependent
//! phase, the jitter is the spec's. Rank 0's clock is distorted too: global
//! time is its clock, so the truth to compare estimates with is
//! [`SimulatedClock::linear_model`] of a rank against rank 0.
//!
//! Every rank's offset also has a base added, the same for all:
//! [`SimulationSpec::base_ns`], the largest amount by which a clock can
//! read below true time. So no rank reads a negative date, however early
//! (a real clock since boot may read milliseconds when a rank starts),
//! and no date has to be clamped at 0, which would hide the offsets and the
//! noise the simulation is for. The base cancels between ranks.

use std::str::FromStr;

use super::clock::SimulatedClock;
use super::random::{mix, unit};
use crate::error::ClockError;

/// The parsed setting.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SimulationSpec {
    /// Largest offset, ns.
    pub offset_ns: f64,
    /// Largest drift, ppm.
    pub drift_ppm: f64,
    /// Amplitude of the oscillation, ns.
    pub amplitude_ns: f64,
    /// Its period, s.
    pub period_s: f64,
    /// Read noise half-width, ns.
    pub jitter_ns: f64,
    /// Seed of the per-rank draws.
    pub seed: u64,
}

impl Default for SimulationSpec {
    fn default() -> Self {
        SimulationSpec { offset_ns: 0.0, drift_ppm: 0.0, amplitude_ns: 0.0, period_s: 1.0, jitter_ns: 0.0, seed: 1 }
    }
}

impl SimulationSpec {
    /// The offset every rank's clock has on top of its own: the spec's
    /// largest offset, amplitude and jitter (rounded up), so that a clock
    /// reads 0 or more at every true date from 0 (its drift, above −1,
    /// cannot take it lower).
    pub fn base_ns(&self) -> i64 {
        (self.offset_ns + self.amplitude_ns + self.jitter_ns).ceil() as i64 + 1
    }

    /// The clock of `rank`.
    pub fn clock_for(&self, rank: u32) -> SimulatedClock {
        let draw = |what: u64| 2.0 * unit(mix(self.seed ^ mix(u64::from(rank) << 8 | what))) - 1.0;
        SimulatedClock {
            offset_ns: (self.offset_ns * draw(1)).round() as i64 + self.base_ns(),
            drift_ppm: self.drift_ppm * draw(2),
            amplitude_ns: self.amplitude_ns,
            period_s: self.period_s,
            phase_rad: std::f64::consts::PI * draw(3),
            jitter_ns: self.jitter_ns,
            seed: mix(self.seed ^ u64::from(rank)),
        }
    }
}

/// Why a simulation setting was refused, with the item or the numbers.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    /// An item that is not `KEY=VALUE`.
    #[error("{item:?}: expected KEY=VALUE")]
    NotKeyValue {
        /// The item.
        item: String,
    },
    /// A value its key does not take.
    #[error("{item:?}: expected {expected}")]
    BadValue {
        /// The item, key and value.
        item: String,
        /// What the key takes.
        expected: &'static str,
    },
    /// A key no simulation has.
    #[error("unknown key {key:?} (offset, drift, amplitude, period, jitter, seed)")]
    UnknownKey {
        /// The key.
        key: String,
    },
    /// A negative magnitude.
    #[error("{name} {value} is negative: offsets, drifts, amplitudes and jitters are magnitudes (>= 0)")]
    Negative {
        /// offset, drift, amplitude or jitter.
        name: &'static str,
        /// Its value (ns, or ppm for the drift).
        value: f64,
    },
    /// An offset, amplitude or jitter beyond what dates can hold.
    #[error("{name} {value_ns:e} ns is over the {max_ns:e} ns (31 years) a simulation allows")]
    OverSpan {
        /// offset, amplitude or jitter.
        name: &'static str,
        /// Its value.
        value_ns: f64,
        /// The largest allowed.
        max_ns: f64,
    },
    /// A clock whose rate could reach 0: its dates would go back in time.
    #[error(
        "a clock this far off runs backwards: drift {drift:.3e} plus the oscillation's slope 2πA/P = {swing:.3e} \
         reach 1 (lower the drift or the amplitude, or lengthen the period)"
    )]
    RunsBackwards {
        /// The drift, as a rate (ppm × 10⁻⁶).
        drift: f64,
        /// The oscillation's largest slope, 2πA/P.
        swing: f64,
    },
    /// A clock parameter the simulated clock refuses.
    #[error(transparent)]
    Clock(#[from] ClockError),
}

impl FromStr for SimulationSpec {
    type Err = SpecError;

    fn from_str(text: &str) -> Result<Self, SpecError> {
        let mut spec = SimulationSpec::default();
        for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (key, value) = item.split_once('=').ok_or_else(|| SpecError::NotKeyValue { item: item.to_owned() })?;
            let bad = |expected| SpecError::BadValue { item: item.to_owned(), expected };
            match key.trim() {
                "offset" => spec.offset_ns = duration_ns(value).ok_or_else(|| bad("a duration like 2ms"))?,
                "drift" => spec.drift_ppm = ppm(value).ok_or_else(|| bad("a rate like 50ppm"))?,
                "amplitude" => spec.amplitude_ns = duration_ns(value).ok_or_else(|| bad("a duration like 5us"))?,
                "period" => spec.period_s = duration_ns(value).ok_or_else(|| bad("a duration like 10s"))? / 1e9,
                "jitter" => spec.jitter_ns = duration_ns(value).ok_or_else(|| bad("a duration like 50ns"))?,
                "seed" => spec.seed = value.trim().parse().map_err(|_| bad("an integer"))?,
                other => return Err(SpecError::UnknownKey { key: other.to_owned() }),
            }
        }
        let magnitudes = [
            ("offset", spec.offset_ns),
            ("drift", spec.drift_ppm),
            ("amplitude", spec.amplitude_ns),
            ("jitter", spec.jitter_ns),
        ];
        if let Some(&(name, value)) = magnitudes.iter().find(|(_, value)| *value < 0.0) {
            return Err(SpecError::Negative { name, value });
        }
        spec.check_bounds()?;
        spec.clock_for(0).validate()?;
        Ok(spec)
    }
}

/// The largest offset, amplitude or jitter (about 31 years): with room to
/// spare, dates of runs up to a century stay within an `i64` of nanoseconds.
const MAX_SPAN_NS: f64 = 1e18;

impl SimulationSpec {
    /// Refuses what a clock cannot do: dates out of range, or a clock
    /// running backwards. A clock's rate is 1 ± drift plus the slope of
    /// its oscillation, at most 2πA/P; a simulation where that could reach
    /// 0 would write traces whose dates go back in time, which no real
    /// clock does (the jitter alone may swap two close readings, as read
    /// noise does).
    fn check_bounds(&self) -> Result<(), SpecError> {
        for (name, value) in [("offset", self.offset_ns), ("amplitude", self.amplitude_ns), ("jitter", self.jitter_ns)]
        {
            if value > MAX_SPAN_NS {
                return Err(SpecError::OverSpan { name, value_ns: value, max_ns: MAX_SPAN_NS });
            }
        }
        let drift = self.drift_ppm * 1e-6;
        let swing = std::f64::consts::TAU * self.amplitude_ns / (self.period_s * 1e9);
        if drift + swing >= 1.0 {
            return Err(SpecError::RunsBackwards { drift, swing });
        }
        Ok(())
    }
}

/// "2ms", "5us", "50ns", "10s", "1.5min", "1e3ns" to nanoseconds.
fn duration_ns(text: &str) -> Option<f64> {
    let text = text.trim();
    // The unit is the trailing letters, so that "1e10s" is 10^10 s.
    let number = text.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &text[number.len()..];
    let scale = match unit {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "min" => 60e9,
        _ => return None,
    };
    let value = number.trim().parse::<f64>().ok()? * scale;
    value.is_finite().then_some(value)
}

fn ppm(text: &str) -> Option<f64> {
    let value: f64 = text.trim().strip_suffix("ppm")?.trim().parse().ok()?;
    value.is_finite().then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::LocalClock;

    #[test]
    fn a_full_setting_parses_with_its_units() {
        let spec: SimulationSpec =
            "offset=2ms, drift=50ppm,amplitude=5us,period=1.5min,jitter=50ns,seed=7".parse().unwrap();
        assert_eq!(
            spec,
            SimulationSpec {
                offset_ns: 2e6,
                drift_ppm: 50.0,
                amplitude_ns: 5e3,
                period_s: 90.0,
                jitter_ns: 50.0,
                seed: 7
            }
        );
    }

    #[test]
    fn bad_settings_name_the_item() {
        for (text, needle) in [
            ("offset=2", "offset=2"),
            ("drift=5", "drift=5"),
            ("speed=1", "speed"),
            ("period=0s", "period"),
            ("offset", "KEY=VALUE"),
            ("jitter=-3ns", "magnitudes"),
            ("offset=1e300min", "offset"),
            ("offset=40000d", "offset"),
            ("offset=1e10s", "31 years"),
            ("jitter=2e18ns", "jitter"),
            ("drift=2000000ppm", "runs backwards"),
            ("amplitude=1s,period=1s", "runs backwards"),
        ] {
            let err = text.parse::<SimulationSpec>().unwrap_err().to_string();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn refusals_carry_their_numbers() {
        let err = "jitter=2e18ns".parse::<SimulationSpec>().unwrap_err();
        assert_eq!(err, SpecError::OverSpan { name: "jitter", value_ns: 2e18, max_ns: MAX_SPAN_NS });
        let err = "drift=-3ppm".parse::<SimulationSpec>().unwrap_err();
        assert_eq!(err, SpecError::Negative { name: "drift", value: -3.0 });
        let Err(SpecError::RunsBackwards { drift, swing }) =
            "drift=500000ppm,amplitude=100ms,period=1s".parse::<SimulationSpec>()
        else {
            panic!("a clock running backwards")
        };
        assert_eq!(drift, 0.5);
        assert!((swing - std::f64::consts::TAU * 0.1).abs() < 1e-12, "{swing}");
        let err = "period=0s".parse::<SimulationSpec>().unwrap_err();
        assert!(matches!(err, SpecError::Clock(ClockError::InvalidParameter { name: "period_s", .. })), "{err:?}");
    }

    #[test]
    fn the_fastest_oscillation_allowed_still_moves_forward() {
        // 2πA/P just under 1 - drift: every rank's clock still advances.
        let spec: SimulationSpec = "drift=100000ppm,amplitude=143ms,period=1s,seed=9".parse().unwrap();
        for rank in 0..8 {
            let clock = spec.clock_for(rank);
            let readings: Vec<i64> = (0..2000).map(|i| clock.read(i * 1_000_000)).collect();
            assert!(readings.windows(2).all(|w| w[1] > w[0]), "rank {rank} goes back in time");
        }
    }

    /// Offsets of seconds either way, an oscillation and jitter: no rank
    /// reads a negative date from true date 0 on, so none is clamped, and
    /// the ranks' readings differ by their drawn offsets (the base cancels).
    #[test]
    fn no_rank_reads_a_negative_date_and_the_base_cancels() {
        let spec: SimulationSpec = "offset=5s,drift=300ppm,amplitude=5us,period=2s,jitter=3us,seed=4".parse().unwrap();
        let clocks: Vec<SimulatedClock> = (0..32).map(|r| spec.clock_for(r)).collect();
        assert!(clocks.iter().any(|c| c.offset_ns < spec.base_ns() - 1_000_000_000), "some rank 1 s behind");
        for c in &clocks {
            for t in [0_i64, 1, 1_000, 1_000_000, 1_000_000_000] {
                assert!(c.read(t) >= 0, "{c:?} reads {} at {t}", c.read(t));
            }
        }
        let (a, b) = (clocks[3], clocks[7]);
        let apart = (a.read(0) - b.read(0)) as f64;
        assert!((apart - (a.offset_ns - b.offset_ns) as f64).abs() <= 2.0 * (5_000.0 + 3_000.0), "{apart}");
    }

    #[test]
    fn ranks_get_distinct_clocks_within_the_spec() {
        let spec: SimulationSpec = "offset=1ms,drift=20ppm,seed=3".parse().unwrap();
        let clocks: Vec<SimulatedClock> = (0..16).map(|r| spec.clock_for(r)).collect();
        for c in &clocks {
            assert!((c.offset_ns - spec.base_ns()).abs() <= 1_000_000 && c.drift_ppm.abs() <= 20.0);
        }
        assert!(clocks.windows(2).all(|w| w[0] != w[1]));
        assert_eq!(spec.clock_for(5), clocks[5], "deterministic");
    }
}
