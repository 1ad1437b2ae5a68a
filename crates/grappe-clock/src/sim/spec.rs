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

use std::fmt;
use std::str::FromStr;

use super::{SimulatedClock, mix, unit};

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
    /// The clock of `rank`.
    pub fn clock_for(&self, rank: u32) -> SimulatedClock {
        let draw = |what: u64| 2.0 * unit(mix(self.seed ^ mix(u64::from(rank) << 8 | what))) - 1.0;
        SimulatedClock {
            offset_ns: (self.offset_ns * draw(1)).round() as i64,
            drift_ppm: self.drift_ppm * draw(2),
            amplitude_ns: self.amplitude_ns,
            period_s: self.period_s,
            phase_rad: std::f64::consts::PI * draw(3),
            jitter_ns: self.jitter_ns,
            seed: mix(self.seed ^ u64::from(rank)),
        }
    }
}

/// Why a simulation setting was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError(String);

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SpecError {}

impl FromStr for SimulationSpec {
    type Err = SpecError;

    fn from_str(text: &str) -> Result<Self, SpecError> {
        let mut spec = SimulationSpec::default();
        for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (key, value) =
                item.split_once('=').ok_or_else(|| SpecError(format!("{item:?}: expected KEY=VALUE")))?;
            let bad = |expected: &str| SpecError(format!("{item:?}: expected {expected}"));
            match key.trim() {
                "offset" => spec.offset_ns = duration_ns(value).ok_or_else(|| bad("a duration like 2ms"))?,
                "drift" => spec.drift_ppm = ppm(value).ok_or_else(|| bad("a rate like 50ppm"))?,
                "amplitude" => spec.amplitude_ns = duration_ns(value).ok_or_else(|| bad("a duration like 5us"))?,
                "period" => spec.period_s = duration_ns(value).ok_or_else(|| bad("a duration like 10s"))? / 1e9,
                "jitter" => spec.jitter_ns = duration_ns(value).ok_or_else(|| bad("a duration like 50ns"))?,
                "seed" => spec.seed = value.trim().parse().map_err(|_| bad("an integer"))?,
                other => {
                    return Err(SpecError(format!(
                        "unknown key {other:?} (offset, drift, amplitude, period, jitter, seed)"
                    )));
                }
            }
        }
        if spec.amplitude_ns < 0.0 || spec.jitter_ns < 0.0 || spec.offset_ns < 0.0 || spec.drift_ppm < 0.0 {
            return Err(SpecError(format!("{text:?}: offsets, drifts, amplitudes and jitters are magnitudes (>= 0)")));
        }
        spec.clock_for(0).validate().map_err(|e| SpecError(format!("{text:?}: {e}")))?;
        Ok(spec)
    }
}

/// "2ms", "5us", "50ns", "10s", "1.5min" to nanoseconds.
fn duration_ns(text: &str) -> Option<f64> {
    let text = text.trim();
    let split = text.find(|c: char| c.is_ascii_alphabetic())?;
    let (number, unit) = text.split_at(split);
    let scale = match unit {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "min" => 60e9,
        _ => return None,
    };
    let value: f64 = number.trim().parse().ok()?;
    value.is_finite().then_some(value * scale)
}

fn ppm(text: &str) -> Option<f64> {
    let value: f64 = text.trim().strip_suffix("ppm")?.trim().parse().ok()?;
    value.is_finite().then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        ] {
            let err = text.parse::<SimulationSpec>().unwrap_err().to_string();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn ranks_get_distinct_clocks_within_the_spec() {
        let spec: SimulationSpec = "offset=1ms,drift=20ppm,seed=3".parse().unwrap();
        let clocks: Vec<SimulatedClock> = (0..16).map(|r| spec.clock_for(r)).collect();
        for c in &clocks {
            assert!(c.offset_ns.abs() <= 1_000_000 && c.drift_ppm.abs() <= 20.0);
        }
        assert!(clocks.windows(2).all(|w| w[0] != w[1]));
        assert_eq!(spec.clock_for(5), clocks[5], "deterministic");
    }
}
