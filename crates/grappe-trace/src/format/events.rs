//! Event blocks: each record a kind id, its dates as deltas, its α and
//! the slots its kind uses, varint-encoded; the codec is the recorder's
//! and the readers' hot path, so it is written per kind (see `by_kind!`).

use super::{Encoded, get_varint, put_varint, unzigzag, zigzag};
use crate::event::EventKind;
use crate::raw::{RawEvent, slots_of};

/// Where the slots of a kind come from in a record: their indices in
/// `[flags, a, b, c, d, e, site]`, in encoding order.
#[derive(Clone, Copy)]
struct Layout {
    len: usize,
    at: [usize; SLOTS],
}

/// Slots of a raw record.
const SLOTS: usize = 7;

/// `$f::<ID>(args)` for the kind id `$id`, or `$other` for an id no kind
/// has: one copy of `$f` per kind, in which the kind's [`LAYOUTS`] entry
/// is a constant (the encoder's and the decoder's slot loops unroll).
macro_rules! by_kind {
    ($id:expr, $f:ident($($arg:expr),*), $other:expr) => {
        match $id {
            1 => $f::<1>($($arg),*),
            2 => $f::<2>($($arg),*),
            3 => $f::<3>($($arg),*),
            4 => $f::<4>($($arg),*),
            5 => $f::<5>($($arg),*),
            6 => $f::<6>($($arg),*),
            7 => $f::<7>($($arg),*),
            8 => $f::<8>($($arg),*),
            9 => $f::<9>($($arg),*),
            10 => $f::<10>($($arg),*),
            11 => $f::<11>($($arg),*),
            12 => $f::<12>($($arg),*),
            13 => $f::<13>($($arg),*),
            14 => $f::<14>($($arg),*),
            15 => $f::<15>($($arg),*),
            16 => $f::<16>($($arg),*),
            17 => $f::<17>($($arg),*),
            18 => $f::<18>($($arg),*),
            _ => $other,
        }
    };
}
const _: () = assert!(EventKind::ALL.len() == 18, "by_kind! lists every kind id");

/// The layout of every kind, by kind id, made from [`slots_of`] at
/// compile time: the decoder's loop is then a table walk, without a
/// `match` per slot.
const LAYOUTS: [Layout; EventKind::ALL.len() + 1] = {
    let mut out = [Layout { len: 0, at: [0; SLOTS] }; EventKind::ALL.len() + 1];
    let mut k = 0;
    while k < EventKind::ALL.len() {
        let kind = EventKind::ALL[k];
        let slots = slots_of(kind);
        let mut i = 0;
        while i < slots.len() {
            out[kind as usize].at[i] = slots[i].1 as usize;
            i += 1;
        }
        out[kind as usize].len = slots.len();
        k += 1;
    }
    out
};

/// The largest value of each slot, in the same order.
const SLOT_MAX: [u64; SLOTS] =
    [u16::MAX as u64, u32::MAX as u64, u32::MAX as u64, u32::MAX as u64, u64::MAX, u64::MAX, u32::MAX as u64];

/// The longest encoded record: rank and α (5 bytes each), start delta
/// and duration (10), kind (3), flags (3), a, b, c, site (5), d, e (10).
const MAX_RECORD: usize = 5 + 10 + 10 + 5 + 3 + 3 + 4 * 5 + 2 * 10;

/// Encodes events as the payload of an events block.
///
/// On the recording rank's path (policy `full` encodes every buffer):
/// each record is written into a scratch record as long as the longest,
/// then copied out at its length, its slots taken through the same
/// `LAYOUTS` table the decoder walks (pushing a byte at a time cost 18
/// ns/event, this about 10; zeroing room in the block for each record
/// instead of the copy took 5% more instructions).
pub fn encode_events(events: impl ExactSizeIterator<Item = Encoded>, out: &mut Vec<u8>) {
    put_varint(out, events.len() as u64);
    // Records take 12-13 bytes in real traces: one reservation for most blocks.
    out.reserve(events.len() * 16);
    let mut previous = 0u64;
    let mut record = [0u8; MAX_RECORD];
    for e in events {
        let mut at = 0;
        let mut put = |v: u64| put_varint_in(&mut record, &mut at, v);
        put(e.rank as u64);
        put(zigzag(e.start.wrapping_sub(previous) as i64));
        put(e.end.saturating_sub(e.start));
        put(e.alpha_ns as u64);
        put(e.raw.kind as u64);
        // Kinds not in the catalogue have no slots (as `slots_of` says).
        by_kind!(e.raw.kind, put_slots(&e.raw, &mut record, &mut at), ());
        append_record(out, &record, at);
        previous = e.start;
    }
}

/// Appends the first `len` bytes of `record`. Most records are 12 or 13
/// bytes: those are copied as 16 (one fixed-size move into the vector's
/// spare room, the length then set to take `len` of them), where
/// `extend_from_slice` called `memcpy` for each (20 instructions).
#[inline(always)]
fn append_record(out: &mut Vec<u8>, record: &[u8; MAX_RECORD], len: usize) {
    const SHORT: usize = 16;
    if len > SHORT || out.capacity() - out.len() < SHORT {
        out.extend_from_slice(&record[..len]);
        return;
    }
    let old = out.len();
    let head: [u8; SHORT] = record[..SHORT].try_into().expect("a record has room for 16 bytes");
    out.spare_capacity_mut()[..SHORT].copy_from_slice(&head.map(std::mem::MaybeUninit::new));
    // SAFETY: the `len` (<= SHORT) bytes past the old length are within
    // capacity and were just written.
    unsafe { out.set_len(old + len) };
}

/// The slots of a record of kind `K`, in its layout's order.
#[inline(always)]
fn put_slots<const K: u16>(raw: &RawEvent, record: &mut [u8; MAX_RECORD], at: &mut usize) {
    let layout = const { &LAYOUTS[K as usize] };
    let values = [raw.flags as u64, raw.a as u64, raw.b as u64, raw.c as u64, raw.d, raw.e, raw.site as u64];
    for &slot in &layout.at[..layout.len] {
        put_varint_in(record, at, values[slot]);
    }
}

/// LEB128 into `record` at `*at`.
#[inline(always)]
fn put_varint_in(record: &mut [u8; MAX_RECORD], at: &mut usize, mut v: u64) {
    while v >= 0x80 {
        record[*at] = v as u8 | 0x80;
        v >>= 7;
        *at += 1;
    }
    record[*at] = v as u8;
    *at += 1;
}

/// Decodes an events block payload. The error names the byte (within the
/// payload) where decoding failed and what was expected there.
pub fn decode_events(payload: &[u8]) -> Result<Vec<Encoded>, (usize, String)> {
    let mut decoder = EventDecoder::start(payload)?;
    let mut events = Vec::with_capacity(decoder.announced());
    decoder.decode(payload, usize::MAX, |e: &Encoded| events.push(*e))?;
    Ok(events)
}

/// An events block payload decoded a few events at a time, so that a
/// reader can hold part of a large block rather than all of it. The
/// payload is passed to every call (the reader keeps it, the decoder its
/// place in it). Errors name the byte within the payload where decoding
/// failed and what was expected there.
#[derive(Debug, Clone)]
pub struct EventDecoder {
    pos: usize,
    previous: u64,
    announced: usize,
    left: usize,
}

impl EventDecoder {
    /// Reads the event count at the head of `payload`.
    pub fn start(payload: &[u8]) -> Result<EventDecoder, (usize, String)> {
        let mut pos = 0;
        let announced = get_varint(payload, &mut pos).ok_or((0, "a varint (event count)".to_owned()))? as usize;
        if announced > payload.len() {
            return Err((0, format!("at most {} events in {} bytes, not {announced}", payload.len(), payload.len())));
        }
        Ok(EventDecoder { pos, previous: 0, announced, left: announced })
    }

    /// The number of events the block announces.
    pub fn announced(&self) -> usize {
        self.announced
    }

    /// Events not decoded yet.
    pub fn left(&self) -> usize {
        self.left
    }

    /// Hands the next `max` events (fewer at the end of the block) to
    /// `each`; after the last, checks that the payload ends there. By
    /// reference, and with the place in locals during the loop: an
    /// iterator returning each event whole, right after writing it field
    /// by field, stalls the CPU, and took 49 more instructions an event.
    #[inline]
    pub fn decode(&mut self, payload: &[u8], max: usize, mut each: impl TakeEncoded) -> Result<(), (usize, String)> {
        let (mut pos, mut previous) = (self.pos, self.previous);
        let count = max.min(self.left);
        for _ in 0..count {
            previous = decode_event(payload, &mut pos, previous, &mut each)?;
        }
        (self.pos, self.previous, self.left) = (pos, previous, self.left - count);
        if self.left == 0 && pos != payload.len() {
            return Err((pos, format!("the end of the block ({} bytes left)", payload.len() - pos)));
        }
        Ok(())
    }
}

/// Hands the event at `*pos`, whose start is a delta from `previous`, to
/// `each`, built in the call; returns its start.
#[inline(always)]
fn decode_event(
    payload: &[u8],
    pos: &mut usize,
    previous: u64,
    each: &mut impl TakeEncoded,
) -> Result<u64, (usize, String)> {
    let next =
        |pos: &mut usize, what: &str| get_varint(payload, pos).ok_or_else(|| (*pos, format!("a varint ({what})")));
    let rank = u32::try_from(next(pos, "rank")?).map_err(|_| (*pos, "a rank below 2^32".to_owned()))?;
    let start = previous.wrapping_add(unzigzag(next(pos, "start delta")?) as u64);
    let end = start.saturating_add(next(pos, "duration")?);
    let alpha_ns = u32::try_from(next(pos, "alpha")?).map_err(|_| (*pos, "an alpha below 2^32 ns".to_owned()))?;
    let kind_id = next(pos, "kind")?;
    let kind = u16::try_from(kind_id)
        .ok()
        .and_then(EventKind::from_id)
        .ok_or_else(|| (*pos, format!("a known event kind, not {kind_id}")))?;
    let head = Encoded { rank, start, end, alpha_ns, raw: RawEvent::default() };
    // One copy of the rest per kind: its layout is a constant there, so
    // the slot loop unrolls and the body's `match` on the kind folds away.
    by_kind!(kind.id(), decode_slots(payload, pos, head, each), unreachable!("a known kind has a copy"))?;
    Ok(start)
}

/// Decodes the slots of a record of kind `K` and hands it to `each`.
#[inline(always)]
fn decode_slots<const K: u16>(
    payload: &[u8],
    pos: &mut usize,
    mut head: Encoded,
    each: &mut impl TakeEncoded,
) -> Result<(), (usize, String)> {
    let layout = const { &LAYOUTS[K as usize] };
    let mut v = [0u64; SLOTS];
    for i in 0..layout.len {
        let slot = layout.at[i];
        let name = || EventKind::from_id(K).map_or("?", |kind| slots_of(kind)[i].0);
        v[slot] = get_varint(payload, pos).ok_or_else(|| (*pos, format!("a varint ({})", name())))?;
        if v[slot] > SLOT_MAX[slot] {
            return Err((*pos, format!("{} within its slot's range", name())));
        }
    }
    head.raw = RawEvent {
        start: 0,
        end: 0,
        kind: K,
        flags: v[0] as u16,
        a: v[1] as u32,
        b: v[2] as u32,
        c: v[3] as u32,
        site: v[6] as u32,
        d: v[4],
        e: v[5],
    };
    each.take(&head);
    Ok(())
}

/// Where [`EventDecoder::decode`] hands each record. A trait rather than a
/// closure so that a taker can be inlined, by `#[inline(always)]`, into
/// the decoder's copy for each kind (a closure called from eighteen places
/// was left a call).
pub trait TakeEncoded {
    /// Takes the next record.
    fn take(&mut self, e: &Encoded);
}

impl<F: FnMut(&Encoded)> TakeEncoded for F {
    fn take(&mut self, e: &Encoded) {
        self(e)
    }
}
