//! Time order for the formats that need it (Pajé, PICL).
//!
//! The causal stream is ordered by merge date (a receive by its end), and
//! an event gives records at its start and at its end, so records come
//! nearly, not exactly, in time order. They wait in a heap until the
//! *watermark* — a lower bound of the start of every event still to come
//! — passes them. Per-rank sets give that bound directly
//! ([`CausalStream::pending_start_bound`]); for a merged file it is the
//! smallest start of the last event of each rank still running (a rank's
//! records are in call order). Within a rank, dates are made
//! nondecreasing ([`RankClocks`]), which also nests the overlapping
//! intervals of a sendrecv one after the other.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use grappe_analysis::{CausalStream, Linked, PerRank, Result, StreamSummary};
use grappe_trace::{Body, Event};
use rustc_hash::FxHashMap;

use crate::sink::Sink;
use crate::summary::PROGRESS_EVERY;

/// Records held at most: past this the earliest goes out whatever the
/// watermark says (a rank stuck in a receive that never completes must not
/// hold the whole trace in memory); a record then dated before it is
/// counted late.
const HELD_MAX: usize = 1 << 20;

/// Events read between two releases (the watermark costs a pass over the
/// ranks).
pub(crate) const RELEASE_EVERY: u64 = 1024;

/// A heap of records released in (date, arrival) order.
pub(crate) struct Reorder<R> {
    heap: BinaryHeap<Reverse<Entry<R>>>,
    next_seq: u64,
    /// Date of the last record let out.
    released: u64,
    /// Records that came dated before `released`, moved to it.
    pub(crate) late: u64,
}

struct Entry<R> {
    time: u64,
    seq: u64,
    record: R,
}

impl<R> PartialEq for Entry<R> {
    fn eq(&self, other: &Self) -> bool {
        (self.time, self.seq) == (other.time, other.seq)
    }
}

impl<R> Eq for Entry<R> {}

impl<R> PartialOrd for Entry<R> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<R> Ord for Entry<R> {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.time, self.seq).cmp(&(other.time, other.seq))
    }
}

impl<R> Reorder<R> {
    /// An empty buffer; nothing goes out dated before `origin`.
    pub(crate) fn new(origin: u64) -> Self {
        Reorder { heap: BinaryHeap::new(), next_seq: 0, released: origin, late: 0 }
    }

    /// Adds a record dated `time`; records of equal dates go out in the
    /// order they came.
    pub(crate) fn push(&mut self, time: u64, record: R) {
        let time = if time < self.released {
            self.late += 1;
            self.released
        } else {
            time
        };
        self.heap.push(Reverse(Entry { time, seq: self.next_seq, record }));
        self.next_seq += 1;
    }

    /// The next record if it is dated before `bound` (or if the buffer is
    /// over capacity).
    pub(crate) fn pop_until(&mut self, bound: u64) -> Option<(u64, R)> {
        let Reverse(top) = self.heap.peek()?;
        if top.time >= bound && self.heap.len() <= HELD_MAX {
            return None;
        }
        self.pop()
    }

    /// The next record, whatever its date (at the end of the stream).
    pub(crate) fn pop(&mut self) -> Option<(u64, R)> {
        let Reverse(entry) = self.heap.pop()?;
        self.released = entry.time;
        Some((entry.time, entry.record))
    }

    /// Date of the last record let out.
    pub(crate) fn released(&self) -> u64 {
        self.released
    }
}

/// A lower bound of the start of the events still to come.
#[derive(Default)]
pub(crate) struct Watermark {
    /// Merged input: the start of the last event of each rank still running.
    running: FxHashMap<u32, u64>,
    latest: u64,
}

impl Watermark {
    pub(crate) fn observe(&mut self, event: &Event) {
        self.latest = self.latest.max(event.start);
        if matches!(event.body, Body::Finalize) {
            self.running.remove(&event.rank);
        } else {
            let last = self.running.entry(event.rank).or_insert(event.start);
            *last = (*last).max(event.start);
        }
    }

    pub(crate) fn bound(&self, stream: &CausalStream) -> u64 {
        // Per-rank sets: the stream's bound counts a window's held enters.
        stream.pending_start_bound().unwrap_or_else(|| {
            let running = self.running.values().copied().min().unwrap_or(self.latest);
            // The region enters a window holds back come later, dated earlier.
            stream.held_start().map_or(running, |held| held.min(running))
        })
    }
}

/// Per rank, the date of its last record: a rank's records are made
/// nondecreasing in call order, so its intervals nest (a receive that
/// started with the send of a sendrecv is drawn from the send's end).
#[derive(Default)]
pub(crate) struct RankClocks {
    last: PerRank<u64>,
}

impl RankClocks {
    /// `t`, or the rank's last date if that is later; becomes its last date.
    pub(crate) fn at(&mut self, rank: u32, t: u64) -> u64 {
        let last = self.last.get(rank);
        *last = (*last).max(t);
        *last
    }
}

/// A time-ordered format: turns events into dated records, writes them
/// once they are in order.
pub(crate) trait Ordered {
    type Record;

    /// The records of one event.
    fn event(&mut self, linked: Linked, records: &mut Reorder<Self::Record>);

    /// A date no record may go out after yet, besides the watermark (Pajé
    /// holds a message's start until its receive says whether to draw it).
    fn hold(&self) -> u64 {
        u64::MAX
    }

    /// Gives the records still held back once the stream has ended.
    fn end_of_stream(&mut self, _records: &mut Reorder<Self::Record>) {}

    /// Writes a record, in date order.
    fn write(&mut self, sink: &mut Sink, time: u64, record: Self::Record);

    /// Writes what closes the file; `end` is the last record's date.
    fn finish(&mut self, sink: &mut Sink, end: u64);
}

/// What [`run`] did.
pub(crate) struct Run {
    pub(crate) events: u64,
    pub(crate) late: u64,
    pub(crate) summary: StreamSummary,
}

/// Reads `stream` to the end through `format`, writing in time order.
/// `start` writes the header once the date origin is known (the earliest
/// start for per-rank sets, the first event's for a merged file).
pub(crate) fn run<F: Ordered>(
    mut stream: CausalStream,
    format: &mut F,
    sink: &mut Sink,
    progress: &mut dyn FnMut(u64),
    start: impl FnOnce(&mut F, &mut Sink, u64),
) -> Result<Run> {
    let origin = stream.origin().unwrap_or(0);
    let mut next = stream.next().transpose()?;
    start(format, sink, origin);
    let mut records = Reorder::new(origin);
    let mut watermark = Watermark::default();
    let mut events = 0u64;
    while let Some(linked) = next {
        events += 1;
        watermark.observe(&linked.event);
        format.event(linked, &mut records);
        if events % RELEASE_EVERY == 0 {
            let bound = watermark.bound(&stream).min(format.hold());
            while let Some((time, record)) = records.pop_until(bound) {
                format.write(sink, time, record);
            }
            sink.maybe_flush()?;
        }
        if events % PROGRESS_EVERY == 0 {
            progress(events);
        }
        next = stream.next().transpose()?;
    }
    format.end_of_stream(&mut records);
    while let Some((time, record)) = records.pop() {
        format.write(sink, time, record);
        sink.maybe_flush()?;
    }
    format.finish(sink, records.released());
    progress(events);
    Ok(Run { events, late: records.late, summary: stream.summary() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_go_out_in_date_then_arrival_order_and_late_ones_are_moved() {
        let mut r = Reorder::new(0);
        for (t, name) in [(5, "a"), (3, "b"), (5, "c"), (4, "d")] {
            r.push(t, name);
        }
        assert_eq!(r.pop_until(5), Some((3, "b")));
        assert_eq!(r.pop_until(5), Some((4, "d")));
        assert_eq!(r.pop_until(5), None);
        r.push(1, "late");
        assert_eq!(r.late, 1);
        let rest: Vec<_> = std::iter::from_fn(|| r.pop()).collect();
        assert_eq!(rest, vec![(4, "late"), (5, "a"), (5, "c")]);
    }

    #[test]
    fn rank_clocks_never_go_back() {
        let mut c = RankClocks::default();
        assert_eq!(c.at(1, 10), 10);
        assert_eq!(c.at(1, 7), 10);
        assert_eq!(c.at(2, 7), 7);
        assert_eq!(c.at(1, 12), 12);
    }
}
