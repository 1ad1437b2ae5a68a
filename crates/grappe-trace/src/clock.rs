//! The clock of trace records: the invariant time-stamp counter where the
//! CPU has one (about 10 ns to read here, against 22 ns for
//! `clock_gettime`), `CLOCK_MONOTONIC_RAW` otherwise. Never an NTP-slewed
//! clock: slewing breaks the linear clock model global time relies on.

use std::sync::OnceLock;
use std::time::Duration;

/// Where ticks come from, and how they turn into nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TraceClock {
    source: Source,
    ns_per_tick: f64,
    /// `ns_per_tick` in fixed point, [`SCALE_BITS`] fractional bits.
    scale: u64,
    tick0: u64,
    ns0: u64,
}

/// Fractional bits of [`TraceClock`]'s fixed-point rate. With 56, the
/// rate of a counter of 0.1–10 GHz is rounded by under 4·10^-16 of
/// itself (as in `f64`: 0.02 ns over a week), and it fits in 64 bits for
/// any counter above 8 MHz; ticks × rate fits in 128 bits.
const SCALE_BITS: u32 = 56;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Tsc,
    MonotonicRaw,
}

/// `CLOCK_MONOTONIC_RAW` in nanoseconds.
pub fn monotonic_raw_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_RAW, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

impl TraceClock {
    /// The process's clock: calibrated once, shared by all its ranks.
    /// `GRAPPE_TRACE_CLOCK=monotonic_raw` forces the system clock, and so
    /// does `GRAPPE_TRACE_SIMULATE`: simulated clocks distort a true time
    /// every process of the host reads alike.
    pub fn shared() -> TraceClock {
        static CLOCK: OnceLock<TraceClock> = OnceLock::new();
        *CLOCK.get_or_init(|| {
            let forced = std::env::var("GRAPPE_TRACE_CLOCK").is_ok_and(|v| v == "monotonic_raw")
                || std::env::var_os("GRAPPE_TRACE_SIMULATE").is_some();
            if !forced && tsc_is_invariant() { TraceClock::calibrate_tsc() } else { TraceClock::monotonic_raw() }
        })
    }

    /// The system's raw monotonic clock, one tick per nanosecond.
    pub fn monotonic_raw() -> TraceClock {
        TraceClock { source: Source::MonotonicRaw, ns_per_tick: 1.0, scale: 1 << SCALE_BITS, tick0: 0, ns0: 0 }
    }

    /// The time-stamp counter, its rate measured against the raw clock
    /// over 20 ms. Each end is the tightest of several bracketed reads: a
    /// rank preempted between two plain reads (4 ranks starting on 2 cores)
    /// measured rates off by 3·10^-4; bracketed, the error is the bracket
    /// (~100 ns) over 20 ms, ~5·10^-6.
    fn calibrate_tsc() -> TraceClock {
        let (t0, n0) = paired_read();
        std::thread::sleep(Duration::from_millis(20));
        let (t1, n1) = paired_read();
        let ns_per_tick = (n1 - n0) as f64 / (t1 - t0).max(1) as f64;
        TraceClock::tsc(ns_per_tick, t0, n0)
    }

    /// The time-stamp counter at `ns_per_tick`, which read `tick0` at the
    /// raw date `ns0`.
    fn tsc(ns_per_tick: f64, tick0: u64, ns0: u64) -> TraceClock {
        let scale = (ns_per_tick * (1u64 << SCALE_BITS) as f64).round() as u64;
        TraceClock { source: Source::Tsc, ns_per_tick, scale, tick0, ns0 }
    }

    /// The current date in ticks.
    #[inline(always)]
    pub fn now(&self) -> u64 {
        match self.source {
            Source::Tsc => read_tsc(),
            Source::MonotonicRaw => monotonic_raw_ns(),
        }
    }

    /// Ticks to nanoseconds of the raw monotonic clock (0 for a date
    /// before it). In fixed point: a flush converts two dates an event,
    /// and floating point took 48 instructions for them.
    #[inline]
    pub fn to_ns(&self, ticks: u64) -> u64 {
        match self.source {
            Source::MonotonicRaw => ticks,
            Source::Tsc => {
                // Unsigned, the sign apart: clamping a signed 128-bit
                // date cost as much as the floating point it replaces.
                let span = |ticks: u64| ((ticks as u128 * self.scale as u128) >> SCALE_BITS).min(u64::MAX as u128);
                let delta = ticks.wrapping_sub(self.tick0) as i64;
                if delta >= 0 {
                    self.ns0.saturating_add(span(delta as u64) as u64)
                } else {
                    self.ns0.saturating_sub(span(delta.unsigned_abs()) as u64)
                }
            }
        }
    }

    /// The tick-to-nanosecond calibration, for the file header (`None`
    /// for the raw monotonic clock, which needs none).
    pub fn tsc_anchor(&self) -> Option<crate::format::TscAnchor> {
        (self.source == Source::Tsc).then_some(crate::format::TscAnchor {
            tick0: self.tick0,
            ns0: self.ns0,
            ns_per_tick: self.ns_per_tick,
        })
    }

    /// Name of the source, for the file header.
    pub fn source_name(&self) -> &'static str {
        match self.source {
            Source::Tsc => "tsc",
            Source::MonotonicRaw => "monotonic_raw",
        }
    }

    /// Ticks per second.
    pub fn ticks_per_second(&self) -> f64 {
        1e9 / self.ns_per_tick
    }
}

/// A counter value and the raw date it was read at: the read whose two
/// surrounding raw dates are closest, of a few tries.
fn paired_read() -> (u64, u64) {
    let mut best = (0, 0, u64::MAX);
    for _ in 0..16 {
        let before = monotonic_raw_ns();
        let tick = read_tsc();
        let after = monotonic_raw_ns();
        if after - before < best.2 {
            best = (tick, before + (after - before) / 2, after - before);
        }
    }
    (best.0, best.1)
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn read_tsc() -> u64 {
    // SAFETY: RDTSC has no memory effects; it is only used when the CPU
    // reports an invariant counter (or as a harmless read otherwise).
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn read_tsc() -> u64 {
    monotonic_raw_ns()
}

/// CPUID 0x80000007 EDX bit 8: the counter runs at a constant rate in
/// every power state, so it can be a clock.
#[cfg(target_arch = "x86_64")]
fn tsc_is_invariant() -> bool {
    // CPUID is safe to call on every x86-64 CPU (a safe intrinsic here).
    let max_extended = core::arch::x86_64::__cpuid(0x8000_0000).eax;
    max_extended >= 0x8000_0007 && core::arch::x86_64::__cpuid(0x8000_0007).edx & (1 << 8) != 0
}

#[cfg(not(target_arch = "x86_64"))]
fn tsc_is_invariant() -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Within a nanosecond of the exact date (computed on the rate's
        /// exact binary value), up to a week of ticks either way.
        #[test]
        fn fixed_point_dates_are_exact_to_a_nanosecond(
            ghz in 0.1f64..10.0,
            delta in -(1i64 << 52)..(1i64 << 52),
            ns0 in 0u64..(1 << 62),
        ) {
            let clock = TraceClock::tsc(1.0 / ghz, 1 << 62, ns0);
            let ticks = (1u64 << 62).wrapping_add(delta as u64);
            // ns_per_tick = m · 2^e exactly; the date is ns0 + delta · m · 2^e.
            let (m, e) = mantissa_exponent(clock.ns_per_tick);
            let exact = (ns0 as i128 + ((delta as i128 * m as i128) >> -e)).max(0);
            let got = clock.to_ns(ticks) as i128;
            prop_assert!((got - exact).abs() <= 1, "{got} for {exact}");
        }
    }

    /// `x` (positive, below 2^11) as m · 2^e, m an integer below 2^53.
    fn mantissa_exponent(x: f64) -> (u64, i32) {
        let bits = x.to_bits();
        let e = ((bits >> 52) & 0x7ff) as i32 - 1075;
        (bits & ((1 << 52) - 1) | (1 << 52), e)
    }

    #[test]
    fn the_clock_advances_and_agrees_with_the_raw_clock() {
        let clock = TraceClock::shared();
        let (t0, raw0) = (clock.now(), monotonic_raw_ns());
        std::thread::sleep(Duration::from_millis(50));
        let (t1, raw1) = (clock.now(), monotonic_raw_ns());
        assert!(t1 > t0);
        let measured = clock.to_ns(t1) as i64 - clock.to_ns(t0) as i64;
        let truth = (raw1 - raw0) as i64;
        // Same interval by both clocks within 1% (calibration and the two
        // reads not being simultaneous).
        assert!(
            (measured - truth).abs() < truth / 100,
            "{measured} ns by the trace clock, {truth} ns by the raw clock"
        );
    }
}
