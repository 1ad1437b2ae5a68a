//! `GRAPPE_TRACE_SIMULATE` is typed by users: any text must give a clock
//! simulation or an error that quotes it, never a panic. A simulation it
//! gives must date every instant of a long run without saturating, and
//! its clocks must move forward apart from their read noise.
#![no_main]

use grappe_clock::sim::{LocalClock, SimulationSpec};
use libfuzzer_sys::fuzz_target;

/// True dates from the start of a run to ten days in.
const DATES: [i64; 6] = [0, 1_000, 1_000_000, 1_000_000_000, 3_600_000_000_000, 864_000_000_000_000];

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let spec = match text.parse::<SimulationSpec>() {
        Ok(spec) => spec,
        Err(e) => {
            assert!(!e.to_string().is_empty(), "an empty error for {text:?}");
            return;
        }
    };
    // The slowest a clock may run: 1 - drift - the oscillation's slope.
    let slowest = 1.0 - spec.drift_ppm * 1e-6 - std::f64::consts::TAU * spec.amplitude_ns / (spec.period_s * 1e9);
    assert!(slowest > 0.0, "{text:?} accepted with a clock that can run backwards");
    // Over this step a clock advances by more than its read noise and
    // rounding can take back, so two readings that far apart are in order.
    let step = (2.0 * spec.jitter_ns + 2.0) / slowest;
    for rank in 0..4 {
        let clock = spec.clock_for(rank);
        clock.validate().expect("an accepted setting gives valid clocks");
        for t in DATES {
            let now = clock.read(t);
            assert!(now.abs() < i64::MAX / 2, "rank {rank}: {text:?} saturates at {t} ns ({now})");
            if step < 1e15 {
                let later = clock.read(t + step.ceil() as i64);
                assert!(later >= now, "rank {rank}: {text:?} goes back in time at {t} ns ({now} then {later})");
            }
        }
    }
});
