//! The receiving side of a link: data messages, taken in the order of
//! their numbers whatever the order they complete in, made into records.
//! Pure (no libfabric), so that property tests drive the very code a link
//! runs.
//!
//! A record of one message keeps its receive buffer until it is read;
//! the fragments of a larger record are copied into it as they come and
//! their buffers are freed at once, unless the records reassembled and
//! not read already hold [`INBOUND_LIMIT`] bytes: then the next large
//! record waits (its buffers, and so the peer's credits, held).

use std::collections::VecDeque;

use crate::wire::{HEADER_BYTES, Header, Kind};
use crate::{MAX_PAYLOAD, Meta};

/// Bytes of reassembled records a link keeps unread before it stops
/// taking fragments of the next one (a single larger record is still
/// taken whole).
pub const INBOUND_LIMIT: usize = 8 << 20;

/// A whole record, read from the link and not taken yet.
#[derive(Debug)]
pub(crate) struct Record {
    pub meta: Meta,
    pub body: Body,
}

/// Where a record's payload is.
#[derive(Debug)]
pub(crate) enum Body {
    /// In its receive buffer (after the header), up to `len`.
    Slot { buf: Box<[u8]>, len: usize },
    /// Reassembled from fragments.
    Whole(Vec<u8>),
}

impl Record {
    pub fn payload(&self) -> &[u8] {
        match &self.body {
            Body::Slot { buf, len } => &buf[HEADER_BYTES..*len],
            Body::Whole(data) => data,
        }
    }
}

/// A data message received ahead of its turn.
#[derive(Debug)]
struct Arrived {
    header: Header,
    buf: Box<[u8]>,
    len: usize,
}

#[derive(Debug)]
struct Assembly {
    meta: Meta,
    data: Vec<u8>,
    total: usize,
}

/// The records of one link, as its data messages arrive.
#[derive(Debug)]
pub(crate) struct Inbound {
    fragment: usize,
    /// Receive buffers this side posts: no message may come further ahead.
    depth: u32,
    /// The number of the next data message to take.
    expected: u32,
    /// Messages from `expected` on, as they came.
    early: VecDeque<Option<Arrived>>,
    assembly: Option<Assembly>,
    ready: VecDeque<Record>,
    ready_whole_bytes: usize,
    /// Data messages the peer sent, once it closed.
    peer_sent: Option<u32>,
}

impl Inbound {
    pub fn new(fragment: usize, depth: u32) -> Inbound {
        Inbound {
            fragment,
            depth,
            expected: 0,
            early: VecDeque::new(),
            assembly: None,
            ready: VecDeque::new(),
            ready_whole_bytes: 0,
            peer_sent: None,
        }
    }

    /// A data message of `len` bytes (header included) in `buf`; the
    /// buffers it frees go to `freed`, to be posted again. An error says
    /// how the message breaks the protocol.
    pub fn arrive(
        &mut self,
        header: Header,
        buf: Box<[u8]>,
        len: usize,
        freed: &mut Vec<Box<[u8]>>,
    ) -> Result<(), String> {
        let offset = header.seq.wrapping_sub(self.expected) as usize;
        if offset >= self.depth as usize {
            return Err(format!("data message {} while {} was expected next", header.seq, self.expected));
        }
        if self.early.len() <= offset {
            self.early.resize_with(offset + 1, || None);
        }
        if self.early[offset].is_some() {
            return Err(format!("data message {} twice", header.seq));
        }
        self.early[offset] = Some(Arrived { header, buf, len });
        self.process(freed)
    }

    /// The peer closed after `sent` data messages.
    pub fn bye(&mut self, sent: u32) {
        self.peer_sent = Some(sent);
    }

    /// The next record; the buffers that reading it lets the next records
    /// free go to `freed`.
    pub fn take(&mut self, freed: &mut Vec<Box<[u8]>>) -> Result<Option<Record>, String> {
        let Some(record) = self.ready.pop_front() else { return Ok(None) };
        if let Body::Whole(data) = &record.body {
            self.ready_whole_bytes -= data.len();
            self.process(freed)?;
        }
        Ok(Some(record))
    }

    /// Records ready and not taken.
    pub fn ready(&self) -> usize {
        self.ready.len()
    }

    /// The number of data messages the peer sent, once it closed and all
    /// of them were taken into records.
    pub fn ended(&self) -> Option<u32> {
        self.peer_sent.filter(|&sent| sent == self.expected && self.early.is_empty())
    }

    /// Takes the messages that are next in order into records.
    fn process(&mut self, freed: &mut Vec<Box<[u8]>>) -> Result<(), String> {
        while let Some(Some(next)) = self.early.front() {
            let (header, len) = (next.header, next.len);
            if !self.take_fragment(header, len, freed)? {
                return Ok(());
            }
        }
        Ok(())
    }

    /// Takes the next data message into a record; false if it must wait
    /// for records to be read.
    fn take_fragment(&mut self, header: Header, len: usize, freed: &mut Vec<Box<[u8]>>) -> Result<bool, String> {
        let fragment = self.fragment;
        let bytes = len - HEADER_BYTES;
        let total = header.record_len as usize;
        if total > MAX_PAYLOAD || bytes > total || bytes > fragment {
            return Err(format!("a fragment of {bytes} bytes of a record of {total}"));
        }
        match (header.kind, self.assembly.as_mut()) {
            (Kind::Data, None) if bytes == total => {
                let arrived = self.early.pop_front().flatten().expect("the front message");
                self.ready.push_back(Record { meta: header.meta, body: Body::Slot { buf: arrived.buf, len } });
                self.expected = self.expected.wrapping_add(1);
                return Ok(true);
            }
            (Kind::Data, None) => {
                if bytes != fragment {
                    return Err(format!("a first fragment of {bytes} bytes, not {fragment}"));
                }
                if self.ready_whole_bytes > 0 && self.ready_whole_bytes + total > INBOUND_LIMIT {
                    return Ok(false);
                }
                self.assembly = Some(Assembly { meta: header.meta, data: Vec::with_capacity(total), total });
            }
            (Kind::More, Some(assembly)) => {
                let left = assembly.total - assembly.data.len();
                if bytes > left || (bytes < left && bytes != fragment) || header.meta != assembly.meta {
                    return Err(format!("a fragment of {bytes} bytes where {left} of the record are missing"));
                }
            }
            (kind, _) => return Err(format!("a {kind:?} message out of place in a record's fragments")),
        }
        let arrived = self.early.pop_front().flatten().expect("the front message");
        let assembly = self.assembly.as_mut().expect("an assembly begun");
        assembly.data.extend_from_slice(&arrived.buf[HEADER_BYTES..len]);
        self.expected = self.expected.wrapping_add(1);
        if assembly.data.len() == assembly.total {
            let assembly = self.assembly.take().expect("an assembly");
            self.ready_whole_bytes += assembly.total;
            self.ready.push_back(Record { meta: assembly.meta, body: Body::Whole(assembly.data) });
        }
        freed.push(arrived.buf);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::encode;
    use proptest::prelude::*;

    const FRAGMENT: usize = 16;

    /// The messages of record `meta` of `len` bytes from message number
    /// `seq` on, as a link's sending half makes them.
    fn messages(meta: Meta, len: usize, seq: &mut u32) -> Vec<(Header, Box<[u8]>, usize)> {
        let payload: Vec<u8> = (0..len).map(|i| (i as u32 ^ meta[0]) as u8).collect();
        let chunks: Vec<&[u8]> = if len == 0 { vec![&[]] } else { payload.chunks(FRAGMENT).collect() };
        chunks
            .iter()
            .enumerate()
            .map(|(i, chunk)| {
                let kind = if i == 0 { Kind::Data } else { Kind::More };
                let header = Header { meta, record_len: len as u32, seq: *seq, credits: 0, kind, from: 0, to: 1 };
                *seq += 1;
                let mut buf = vec![0u8; HEADER_BYTES + FRAGMENT].into_boxed_slice();
                encode(&header, &mut buf);
                buf[HEADER_BYTES..HEADER_BYTES + chunk.len()].copy_from_slice(chunk);
                (header, buf, HEADER_BYTES + chunk.len())
            })
            .collect()
    }

    fn expected_payload(meta: Meta, len: usize) -> Vec<u8> {
        (0..len).map(|i| (i as u32 ^ meta[0]) as u8).collect()
    }

    proptest! {
        /// Messages complete in any order within the receive window (the
        /// credits): records come out whole and in order, and every buffer
        /// comes back once its record is read.
        #[test]
        fn records_come_out_in_order_whatever_order_messages_complete_in(
            lens in proptest::collection::vec(prop_oneof![0..3usize, 0..5 * FRAGMENT], 1..40),
            depth in 1..8u32,
            swaps in proptest::collection::vec(any::<prop::sample::Index>(), 0..64),
            reads in proptest::collection::vec(any::<bool>(), 0..200),
        ) {
            let mut seq = 0;
            let mut unsent: VecDeque<_> = lens.iter().enumerate()
                .flat_map(|(i, &len)| messages([i as u32, 0, 0, 0], len, &mut seq))
                .collect();
            let mut inbound = Inbound::new(FRAGMENT, depth);
            let mut freed = Vec::new();
            // Buffers given back when a record held in its buffer is read.
            let mut read_back = 0;
            let mut sent = 0;
            let mut window: Vec<(Header, Box<[u8]>, usize)> = Vec::new();
            let (mut next_record, mut reads, mut swaps) = (0, reads.into_iter(), swaps.into_iter());
            while next_record < lens.len() {
                // The sender has `depth` credits; each buffer freed or given
                // back returns one.
                let returned = freed.len() + read_back;
                if sent - returned < depth as usize && let Some(message) = unsent.pop_front() {
                    window.push(message);
                    sent += 1;
                    continue;
                }
                // Messages in flight complete in any order.
                if !window.is_empty() && reads.next() != Some(true) {
                    let pick = swaps.next().map_or(0, |index| index.index(window.len()));
                    let (header, buf, len) = window.swap_remove(pick);
                    inbound.arrive(header, buf, len, &mut freed).map_err(TestCaseError::fail)?;
                    continue;
                }
                match inbound.take(&mut freed).map_err(TestCaseError::fail)? {
                    Some(record) => {
                        prop_assert_eq!(record.meta, [next_record as u32, 0, 0, 0]);
                        prop_assert_eq!(record.payload(), &expected_payload(record.meta, lens[next_record])[..]);
                        read_back += usize::from(matches!(record.body, Body::Slot { .. }));
                        next_record += 1;
                    }
                    None => prop_assert!(!window.is_empty(), "stuck before record {}: nothing in flight", next_record),
                }
            }
            prop_assert!(unsent.is_empty() && window.is_empty());
            prop_assert_eq!(freed.len() + read_back, sent, "a buffer was never given back");
            prop_assert_eq!(inbound.ended(), None);
            inbound.bye(seq);
            prop_assert_eq!(inbound.ended(), Some(seq));
        }
    }

    #[test]
    fn a_message_outside_the_window_or_twice_is_refused() {
        let mut seq = 0;
        let mut all = messages([1, 0, 0, 0], 3 * FRAGMENT, &mut seq);
        let mut inbound = Inbound::new(FRAGMENT, 2);
        let mut freed = Vec::new();
        let third = all.pop().unwrap();
        let error = inbound.arrive(third.0, third.1, third.2, &mut freed).unwrap_err();
        assert!(error.contains("data message 2 while 0"), "{error}");
        let (header, buf, len) = all.remove(1);
        inbound.arrive(header, buf.clone(), len, &mut freed).unwrap();
        assert!(inbound.arrive(header, buf, len, &mut freed).unwrap_err().contains("twice"));
    }

    #[test]
    fn a_fragment_of_the_wrong_size_is_refused() {
        let mut seq = 0;
        let mut all = messages([1, 0, 0, 0], 2 * FRAGMENT + 1, &mut seq);
        let (header, buf, _) = all.remove(0);
        let error = Inbound::new(FRAGMENT, 4).arrive(header, buf, HEADER_BYTES + 5, &mut Vec::new()).unwrap_err();
        assert!(error.contains("a first fragment of 5 bytes, not 16"), "{error}");
    }

    #[test]
    fn reassembled_records_past_the_limit_hold_the_next_large_one() {
        let fragment = 1 << 20;
        let mut inbound = Inbound::new(fragment, 64);
        let mut freed = Vec::new();
        let mut seq = 0;
        let big = |seq: &mut u32, meta: u32| {
            (0..5)
                .map(|i| {
                    let kind = if i == 0 { Kind::Data } else { Kind::More };
                    let header =
                        Header { meta: [meta; 4], record_len: 5 << 20, seq: *seq, credits: 0, kind, from: 0, to: 1 };
                    *seq += 1;
                    let mut buf = vec![0u8; HEADER_BYTES + fragment].into_boxed_slice();
                    encode(&header, &mut buf);
                    (header, buf, HEADER_BYTES + fragment)
                })
                .collect::<Vec<_>>()
        };
        for (header, buf, len) in big(&mut seq, 1).into_iter().chain(big(&mut seq, 2)) {
            inbound.arrive(header, buf, len, &mut freed).unwrap();
        }
        // The first (5 MiB) is whole; the second would pass 8 MiB: it waits,
        // its buffers held.
        assert_eq!((inbound.ready(), freed.len()), (1, 5));
        let first = inbound.take(&mut freed).unwrap().unwrap();
        assert_eq!((first.meta, first.payload().len()), ([1; 4], 5 << 20));
        assert_eq!((inbound.ready(), freed.len()), (1, 10));
    }
}
