//! α, the direct perturbation of recording an event (Tape/PVM stores it
//! in every event; probe-effect compensation subtracts it): what the
//! recording thread spends on the event, measured by the recorder when it
//! starts and written in the file header, one value per kind.
//!
//! Kinds are recorded in three ways (see [`recording_of`]), and each is
//! timed as it runs: a tight loop of the same clock reads, lookups and
//! store into a buffer, the median of nine batches. A runtime call's two
//! reads, back to back in that loop, cost more than in a real call, whose
//! own work runs beside them (19.5 ns against 12.8–15.0 on the AMD EPYC):
//! the runtime measures its calls in place when it starts, group by group
//! (`grappe_comm`'s `measure_call_recording`), and gives the figures
//! ([`CallCosts`]) to [`with_calls_measured`], which replaces the loop's.

use std::panic::Location;

use crate::clock::TraceClock;
use crate::event::EventKind;
use crate::names::RecentNames;
use crate::raw::RawEvent;
use crate::site::RecentIds;

/// How the runtime records an event of some kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recording {
    /// A runtime call: a clock read on entry and one on return, the call
    /// site's id, the record.
    Call,
    /// The program's region entry, point or counter: one clock read, the
    /// name's ids by call site (`Recorder::name_at`), the record.
    Named,
    /// A region's exit, a flush's start: one clock read and the record.
    Instant,
}

/// How events of `kind` are recorded. The communication layer records
/// every runtime call as a [`Recording::Call`], with both dates (calls
/// that return at once too: a non-blocking post, a creation).
pub const fn recording_of(kind: EventKind) -> Recording {
    match kind {
        EventKind::Point | EventKind::Counter | EventKind::RegionEnter => Recording::Named,
        EventKind::RegionLeave | EventKind::FlushBegin | EventKind::FlushEnd => Recording::Instant,
        EventKind::Init
        | EventKind::Finalize
        | EventKind::Send
        | EventKind::Recv
        | EventKind::Isend
        | EventKind::Irecv
        | EventKind::Wait
        | EventKind::Test
        | EventKind::Probe
        | EventKind::Iprobe
        | EventKind::Collective
        | EventKind::CommCreate => Recording::Call,
    }
}

/// α per kind id, in nanoseconds. (A flush's α is its own measured
/// duration; the writer puts it in the flush's end event.)
pub fn calibrate(clock: TraceClock) -> [u32; 32] {
    let [call, named, instant] = [Recording::Call, Recording::Named, Recording::Instant].map(|r| median_cost(clock, r));
    let mut alpha = [0u32; 32];
    for kind in EventKind::ALL {
        alpha[kind.id() as usize] = match recording_of(kind) {
            Recording::Call => call,
            Recording::Named => named,
            Recording::Instant => instant,
        };
    }
    alpha
}

/// `alpha` with `extra_ns` more for every kind the program's calls and
/// events record (the busy wait of `GRAPPE_TRACE_EXTRA_COST_NS`, spent when
/// each is recorded); a flush's events, which the recorder writes itself,
/// cost no more.
pub fn with_extra_cost(mut alpha: [u32; 32], extra_ns: u32) -> [u32; 32] {
    let flush = |kind: &EventKind| matches!(kind, EventKind::FlushBegin | EventKind::FlushEnd);
    for kind in EventKind::ALL.iter().filter(|kind| !flush(kind)) {
        let slot = &mut alpha[kind.id() as usize];
        *slot = slot.saturating_add(extra_ns);
    }
    alpha
}

/// What recording adds to the runtime's calls, measured in place (ns per
/// call), in three groups that record differently: a non-blocking call
/// records a request besides, and a probe that finds nothing is short
/// enough for its two clock reads to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallCosts {
    /// A blocking send or receive (timed as a send and a receive to self).
    pub blocking: u32,
    /// A probe (timed as an `iprobe` that finds nothing).
    pub probe: u32,
    /// A non-blocking post or completion (timed as an `isend`, an `irecv`
    /// and their two waits, to self).
    pub nonblocking: u32,
}

impl CallCosts {
    /// α of a call of `kind` (`None` for kinds that are not calls). Calls
    /// made too rarely to time in place (init, finalize, collectives,
    /// communicator creations) are recorded as a send or a receive is, two
    /// dates and a site, and take its α.
    pub fn of(&self, kind: EventKind) -> Option<u32> {
        (recording_of(kind) == Recording::Call).then_some(match kind {
            EventKind::Probe | EventKind::Iprobe => self.probe,
            EventKind::Isend | EventKind::Irecv | EventKind::Wait | EventKind::Test => self.nonblocking,
            _ => self.blocking,
        })
    }
}

/// `alpha` with every kind recorded as a [`Recording::Call`] given its
/// cost measured in place.
pub fn with_calls_measured(mut alpha: [u32; 32], calls: &CallCosts) -> [u32; 32] {
    for kind in EventKind::ALL {
        if let Some(ns) = calls.of(kind) {
            alpha[kind.id() as usize] = ns;
        }
    }
    alpha
}

/// Median over 9 batches of the time per record, in nanoseconds.
fn median_cost(clock: TraceClock, recording: Recording) -> u32 {
    const BATCH: usize = 4096;
    let mut buf: Vec<RawEvent> = Vec::with_capacity(BATCH);
    let (mut sites, mut names) = (RecentIds::<8>::default(), RecentNames::<8>::default());
    let (key, name) = std::hint::black_box((Location::caller() as *const Location<'static> as usize, "calibration"));
    sites.insert(key, 1);
    names.insert(key, name, (1, 2));
    let mut costs: Vec<f64> = (0..9)
        .map(|_| {
            buf.clear();
            let t0 = clock.now();
            for i in 0..BATCH {
                let raw = match recording {
                    Recording::Call => {
                        let start = clock.now();
                        // Through `black_box`, so that the table is read
                        // anew each time, as the runtime reads it.
                        let site = std::hint::black_box(&sites).get(key).unwrap_or(0);
                        RawEvent { start, end: clock.now(), kind: 15, a: i as u32, site, ..RawEvent::default() }
                    }
                    Recording::Named => {
                        let (a, b) = std::hint::black_box(&names).get(key, name).unwrap_or((0, 0));
                        let start = clock.now();
                        RawEvent { start, end: start, kind: 15, a, b, ..RawEvent::default() }
                    }
                    Recording::Instant => {
                        let start = clock.now();
                        RawEvent { start, end: start, kind: 15, a: i as u32, ..RawEvent::default() }
                    }
                };
                buf.push(raw);
            }
            let t1 = clock.now();
            std::hint::black_box(&buf);
            (clock.to_ns(t1) - clock.to_ns(t0)) as f64 / BATCH as f64
        })
        .collect();
    costs.sort_by(f64::total_cmp);
    costs[costs.len() / 2].ceil() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_measured_in_place_replace_the_loop_s_for_calls_only_kind_by_kind() {
        let calls = CallCosts { blocking: 7, probe: 5, nonblocking: 12 };
        let alpha = with_calls_measured([3; 32], &calls);
        for kind in EventKind::ALL {
            let expected = match kind {
                EventKind::Probe | EventKind::Iprobe => 5,
                EventKind::Isend | EventKind::Irecv | EventKind::Wait | EventKind::Test => 12,
                _ if recording_of(kind) == Recording::Call => 7,
                _ => 3,
            };
            assert_eq!(alpha[kind.id() as usize], expected, "{kind:?}");
            assert_eq!(calls.of(kind).is_some(), recording_of(kind) == Recording::Call, "{kind:?}");
        }
    }
}
