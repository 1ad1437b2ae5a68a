//! The resume points `grappe trace merge` writes into a merged trace
//! ([`grappe_trace::resume`]): what the events so far leave open, kept up
//! to date as they are written.

use grappe_trace::format::Encoded;
use grappe_trace::raw::{Interner, raw_of_event};
use grappe_trace::resume::{EncodedResume, InFlight};
use grappe_trace::{Body, Event};

use crate::matching::{Channel, Matcher, SendSide};
use crate::per_rank::PerRank;

/// What the events written so far leave open.
#[derive(Default)]
pub(crate) struct OpenState {
    /// The latest end of an event so far.
    settled: u64,
    /// Communicator creations, in stream order.
    creations: Vec<Event>,
    /// Each rank's user regions entered and not left, innermost last.
    regions: PerRank<Vec<Event>>,
    /// The finalize of each rank done.
    finalized: Vec<Event>,
}

impl OpenState {
    /// Takes in the next event written.
    #[inline]
    pub(crate) fn observe(&mut self, e: &Event) {
        self.settled = self.settled.max(e.end); // never before the start
        match e.body {
            Body::RegionEnter { .. } => self.regions.get(e.rank).push(*e),
            // As a window reads it: a leave closes the innermost region.
            Body::RegionLeave { .. } => _ = self.regions.get(e.rank).pop(),
            Body::CommCreate { .. } => self.creations.push(*e),
            Body::Finalize => self.finalized.push(*e),
            _ => {}
        }
    }

    /// The resume point after the events so far, with the matcher's
    /// messages in flight; names go through `interner`, whose definitions
    /// must be written before the point.
    #[inline(never)]
    pub(crate) fn point(&self, matcher: &Matcher, interner: &mut dyn Interner) -> EncodedResume {
        let mut in_flight: Vec<InFlight> = matcher.unreceived().map(|(c, s)| in_flight(c, s)).collect();
        in_flight.sort_by_key(|m| m.id);
        let regions = self.regions.iter().flat_map(|(_, open)| open.iter());
        let events = self.creations.iter().chain(regions).chain(&self.finalized);
        let events = events
            .map(|e| Encoded {
                rank: e.rank,
                start: e.start,
                end: e.end,
                alpha_ns: e.alpha_ns,
                raw: raw_of_event(e, interner),
            })
            .collect();
        EncodedResume { settled: self.settled, next_message: matcher.next_message(), in_flight, events }
    }
}

/// A message in flight as a resume point stores it.
fn in_flight(c: &Channel, s: &SendSide) -> InFlight {
    let (id, start, end, bytes, seq) = (s.id, s.start, s.end, s.bytes, s.seq);
    InFlight { src: c.src, dst: c.dst, comm: c.comm, tag: c.tag, id, start, end, bytes, seq }
}

/// A message in flight of a resume point, as the matcher takes it up.
pub(crate) fn sent(m: &InFlight) -> (Channel, SendSide) {
    let channel = Channel { src: m.src, dst: m.dst, comm: m.comm, tag: m.tag };
    (channel, SendSide { id: m.id, start: m.start, end: m.end, bytes: m.bytes, seq: m.seq })
}
