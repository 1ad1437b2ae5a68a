//! The export's one packet sequence: its interned strings (event names,
//! categories, annotation names and string values, each numbered once and
//! then referred to by number), and the packets written to the sink.
//!
//! Strings are numbered from 1 in first-use order; a packet that uses a
//! new one carries it in its `interned_data`. So that memory stays bounded
//! whatever the trace (a program may name millions of regions), the
//! numbering is dropped once it holds [`INTERNED_MAX`] strings: the next
//! packet says so (`SEQ_INCREMENTAL_STATE_CLEARED`) and numbering starts
//! anew, as Perfetto's own writers do.

use prost::Message;
use rustc_hash::FxHashMap;

use super::proto::{
    DebugAnnotationName, EventCategory, EventName, InternedData, InternedString, SEQ_INCREMENTAL_STATE_CLEARED,
    SEQ_NEEDS_INCREMENTAL_STATE, TracePacket,
};
use crate::sink::Sink;

/// The export's trusted packet sequence id: one writer, one sequence.
pub(crate) const SEQUENCE_ID: u32 = 1;

/// Strings held at most before the numbering starts anew.
pub(crate) const INTERNED_MAX: usize = 1 << 14;

/// Room for a packet's key and length before its bytes.
const PACKET_HEAD: usize = 1 + 10;

/// A `Trace`'s packets are its field 1, length-delimited: key 0x0a.
const PACKET_KEY: u8 = 0x0a;

/// Strings numbered in first-use order.
#[derive(Default)]
struct Table {
    iids: FxHashMap<Box<str>, u64>,
}

impl Table {
    /// The number of `s`, and whether it is new.
    #[inline(always)]
    fn iid(&mut self, s: &str) -> (u64, bool) {
        if let Some(&iid) = self.iids.get(s) {
            return (iid, false);
        }
        let iid = self.iids.len() as u64 + 1;
        self.iids.insert(s.into(), iid);
        (iid, true)
    }
}

/// The sequence's state, and what the next packet must carry.
pub(crate) struct Sequence {
    names: Table,
    categories: Table,
    annotation_names: Table,
    strings: Table,
    /// Strings numbered since the last packet.
    pending: InternedData,
    /// Strings held before the numbering starts anew.
    limit: usize,
    /// The next packet starts the numbering (the first, or one after a
    /// reset).
    cleared: bool,
    first: bool,
    /// Times the numbering started anew.
    pub(crate) resets: u64,
}

impl Sequence {
    pub(crate) fn new(limit: usize) -> Sequence {
        Sequence {
            names: Table::default(),
            categories: Table::default(),
            annotation_names: Table::default(),
            strings: Table::default(),
            pending: InternedData::default(),
            limit,
            cleared: true,
            first: true,
            resets: 0,
        }
    }

    /// Before the strings of a packet are numbered: starts the numbering
    /// anew if it holds too many.
    #[inline(always)]
    pub(crate) fn make_room(&mut self) {
        let held = self.names.iids.len()
            + self.categories.iids.len()
            + self.annotation_names.iids.len()
            + self.strings.iids.len();
        if held >= self.limit {
            self.reset();
        }
    }

    #[cold]
    fn reset(&mut self) {
        for table in [&mut self.names, &mut self.categories, &mut self.annotation_names, &mut self.strings] {
            *table = Table::default();
        }
        self.pending = InternedData::default();
        self.cleared = true;
        self.resets += 1;
    }

    /// The number of an event name.
    #[inline(always)]
    pub(crate) fn name(&mut self, s: &str) -> u64 {
        let (iid, new) = self.names.iid(s);
        if new {
            self.pending.event_names.push(EventName { iid: Some(iid), name: Some(s.to_owned()) });
        }
        iid
    }

    /// The number of a category.
    #[inline(always)]
    pub(crate) fn category(&mut self, s: &str) -> u64 {
        let (iid, new) = self.categories.iid(s);
        if new {
            self.pending.event_categories.push(EventCategory { iid: Some(iid), name: Some(s.to_owned()) });
        }
        iid
    }

    /// The number of an annotation's name.
    #[inline(always)]
    pub(crate) fn annotation_name(&mut self, s: &str) -> u64 {
        let (iid, new) = self.annotation_names.iid(s);
        if new {
            self.pending.debug_annotation_names.push(DebugAnnotationName { iid: Some(iid), name: Some(s.to_owned()) });
        }
        iid
    }

    /// The number of an annotation's string value.
    #[inline(always)]
    pub(crate) fn string(&mut self, s: &str) -> u64 {
        let (iid, new) = self.strings.iid(s);
        if new {
            self.pending.debug_annotation_string_values.push(InternedString { iid: Some(iid), str: Some(s.into()) });
        }
        iid
    }

    /// Writes `packet` on the sequence: with the strings numbered since
    /// the last one, and flags saying whether it uses numbered strings
    /// (`interned`) and whether it starts the numbering.
    pub(crate) fn write(&mut self, sink: &mut Sink, packet: &mut TracePacket, interned: bool) {
        packet.trusted_packet_sequence_id = Some(SEQUENCE_ID);
        let mut flags = 0;
        if interned {
            flags |= SEQ_NEEDS_INCREMENTAL_STATE;
            if std::mem::take(&mut self.cleared) {
                flags |= SEQ_INCREMENTAL_STATE_CLEARED;
            }
        }
        packet.sequence_flags = (flags != 0).then_some(flags);
        if std::mem::take(&mut self.first) {
            packet.first_packet_on_sequence = Some(true);
        }
        // Only a packet that uses numbered strings carries new ones: one
        // that starts the numbering anew drops those before it.
        if interned && self.has_pending() {
            packet.interned_data = Some(std::mem::take(&mut self.pending));
        }
        let mut c = sink.record(PACKET_HEAD + packet.encoded_len());
        c.byte(PACKET_KEY);
        c.length_delimited(packet);
        packet.interned_data = None;
        packet.first_packet_on_sequence = None;
    }

    fn has_pending(&self) -> bool {
        let p = &self.pending;
        !(p.event_names.is_empty()
            && p.event_categories.is_empty()
            && p.debug_annotation_names.is_empty()
            && p.debug_annotation_string_values.is_empty())
    }
}
