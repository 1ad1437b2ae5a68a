//! Messages that arrived before their receive was posted.
//!
//! Kept per source, in arrival order, so a receive naming its source scans
//! only that source's queue; a wildcard receive takes the earliest match
//! over all sources. Either way MPI's non-overtaking rule holds: two
//! messages from one source that both match are received in sending order.

use std::collections::VecDeque;

use crate::OwnedBytes;
use crate::wire::Rts;

/// An unexpected message.
#[derive(Debug)]
pub(crate) struct Arrival {
    seq: u64,
    pub ctx: u32,
    pub tag: i32,
    /// Sender's rank in the communicator.
    pub src_comm: u32,
    pub body: Body,
    /// A synchronous send's request id at its sender, owed a FIN once a
    /// receive (or a matched probe) takes the message.
    pub sync: Option<u64>,
}

/// What an unexpected message holds until it is received.
#[derive(Debug)]
pub(crate) enum Body {
    /// Copied out of the mailbox.
    Eager(Vec<u8>),
    /// Still in the sender's buffer, described by its slot.
    Rts(Rts),
    /// Still in the buffer of a sender of another host, which sends the
    /// rest when the receive that takes it pulls it; `first`: the bytes
    /// that came with the offer.
    Pull { rts: Rts, first: Vec<u8> },
    /// A thread rank's heap buffer, now owned by us.
    Handover(OwnedBytes),
    /// Staged through the mailbox; `data.len() < total` while fragments
    /// are still coming.
    Staged { total: usize, data: Vec<u8> },
}

impl Body {
    /// The bytes held here so far and the message's whole length; `None`
    /// for a rendezvous, whose bytes are still in the sender's buffer.
    pub fn held(&self) -> Option<(&[u8], usize)> {
        match self {
            Body::Eager(data) => Some((data, data.len())),
            Body::Handover(owned) => Some((owned.as_slice(), owned.len())),
            Body::Staged { total, data } => Some((data, *total)),
            Body::Rts(_) | Body::Pull { .. } => None,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Body::Eager(data) => data.len(),
            Body::Rts(rts) | Body::Pull { rts, .. } => rts.len as usize,
            Body::Handover(owned) => owned.len(),
            Body::Staged { total, .. } => *total,
        }
    }
}

/// Unexpected messages of one rank, bucketed by source world rank.
#[derive(Debug)]
pub(crate) struct Unexpected {
    buckets: Vec<VecDeque<Arrival>>,
    next_seq: u64,
    count: usize,
}

/// Where a matching arrival sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Slot {
    pub src: usize,
    index: usize,
}

impl Unexpected {
    pub fn new(sources: usize) -> Self {
        Unexpected { buckets: (0..sources).map(|_| VecDeque::new()).collect(), next_seq: 0, count: 0 }
    }

    pub fn push(&mut self, src: usize, ctx: u32, tag: i32, src_comm: u32, body: Body) {
        self.push_sync(src, ctx, tag, src_comm, body, None);
    }

    /// As [`Unexpected::push`], for a message whose sender awaits a FIN
    /// (`sync`: its request id) once a receive takes it.
    pub fn push_sync(&mut self, src: usize, ctx: u32, tag: i32, src_comm: u32, body: Body, sync: Option<u64>) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.count += 1;
        self.buckets[src].push_back(Arrival { seq, ctx, tag, src_comm, body, sync });
    }

    /// The earliest arrival matching (ctx, src, tag); `None` in src or tag
    /// is a wildcard.
    pub fn find(&self, ctx: u32, src: Option<usize>, tag: Option<i32>) -> Option<Slot> {
        if self.count == 0 {
            return None;
        }
        let first_in = |src: usize| {
            self.buckets[src]
                .iter()
                .position(|a| a.ctx == ctx && tag.is_none_or(|t| t == a.tag))
                .map(|index| Slot { src, index })
        };
        match src {
            Some(src) => first_in(src),
            None => (0..self.buckets.len()).filter_map(first_in).min_by_key(|slot| self.get(*slot).seq),
        }
    }

    pub fn get(&self, slot: Slot) -> &Arrival {
        &self.buckets[slot.src][slot.index]
    }

    /// Gives an arrival another context and tag, in its place (a matched
    /// probe's claim): it then matches only receives of those. The claim
    /// is a match: a synchronous sender's request id is handed back, its
    /// FIN due now.
    pub fn relabel(&mut self, slot: Slot, ctx: u32, tag: i32) -> Option<u64> {
        let arrival = &mut self.buckets[slot.src][slot.index];
        arrival.ctx = ctx;
        arrival.tag = tag;
        arrival.sync.take()
    }

    pub fn remove(&mut self, slot: Slot) -> Arrival {
        self.count -= 1;
        self.buckets[slot.src].remove(slot.index).expect("slot from find")
    }

    /// The last arrival from `src`, if it is a staged message still
    /// collecting fragments.
    pub fn staging_tail(&mut self, src: usize) -> Option<&mut Arrival> {
        self.buckets[src].back_mut().filter(|a| matches!(&a.body, Body::Staged { total, data } if data.len() < *total))
    }

    /// Number of unexpected messages held (for diagnostics at finalize).
    pub fn len(&self) -> usize {
        self.count
    }

    /// Every arrival with its source bucket, in arrival order.
    pub fn in_order(&self) -> Vec<(usize, &Arrival)> {
        let mut all: Vec<(usize, &Arrival)> =
            self.buckets.iter().enumerate().flat_map(|(src, q)| q.iter().map(move |a| (src, a))).collect();
        all.sort_by_key(|(_, a)| a.seq);
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eager(n: u8) -> Body {
        Body::Eager(vec![n])
    }

    fn payload(u: &Unexpected, slot: Slot) -> u8 {
        first_byte(&u.get(slot).body)
    }

    fn first_byte(body: &Body) -> u8 {
        match body {
            Body::Eager(v) => v[0],
            _ => unreachable!(),
        }
    }

    #[test]
    fn arrivals_are_listed_in_arrival_order_across_sources() {
        let mut u = Unexpected::new(3);
        u.push(2, 0, 5, 2, eager(1));
        u.push(0, 0, 5, 0, eager(2));
        u.push(2, 1, 6, 2, eager(3));
        u.push(1, 0, 7, 1, eager(4));
        let order: Vec<(usize, u8)> = u.in_order().into_iter().map(|(src, a)| (src, first_byte(&a.body))).collect();
        assert_eq!(order, vec![(2, 1), (0, 2), (2, 3), (1, 4)]);
    }

    #[test]
    fn specific_source_takes_first_matching_in_order() {
        let mut u = Unexpected::new(3);
        u.push(1, 0, 5, 1, eager(1));
        u.push(1, 0, 6, 1, eager(2));
        u.push(1, 0, 5, 1, eager(3));
        let slot = u.find(0, Some(1), Some(5)).unwrap();
        assert_eq!(payload(&u, slot), 1);
        u.remove(slot);
        let slot = u.find(0, Some(1), Some(5)).unwrap();
        assert_eq!(payload(&u, slot), 3);
        assert!(u.find(1, Some(1), None).is_none(), "other context never matches");
    }

    #[test]
    fn wildcard_source_takes_the_earliest_arrival() {
        let mut u = Unexpected::new(3);
        u.push(2, 0, 1, 2, eager(10));
        u.push(0, 0, 1, 0, eager(20));
        assert_eq!(payload(&u, u.find(0, None, None).unwrap()), 10);
        assert_eq!(u.find(0, None, None).unwrap().src, 2);
    }
}
