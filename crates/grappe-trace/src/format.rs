//! The trace file format.
//!
//! ```text
//! "GRTRACE1"                     8 bytes
//! header length                  u32 little-endian
//! header                         JSON (FileHeader): identity, clock, α calibration, schema
//! block*                         16-byte block header + payload
//!   magic "GRBK"  u32
//!   kind          u8   (1 definitions, 2 events, 3 clock samples, 4 footer,
//!                       5 resume point: merged traces, see crate::resume)
//!   reserved      3 bytes
//!   payload len   u32
//!   crc32         u32  (of the payload)
//! ```
//!
//! A block is written with one `write` once it is complete, so a rank
//! killed mid-run leaves every block it flushed readable; the reader
//! reports where the file was cut. Payloads are varint-encoded: events as
//! deltas from the previous start date, with only the slots their kind uses
//! (see [`crate::raw::slots_of`], published in the header's schema).

use serde::{Deserialize, Serialize};

use crate::event::EventKind;
use crate::raw::{RawEvent, slots_of};

/// First bytes of every trace file.
pub const MAGIC: &[u8; 8] = b"GRTRACE1";
/// Format version written by this code.
pub const VERSION: u32 = 2;
/// First bytes of every block header.
pub const BLOCK_MAGIC: u32 = u32::from_le_bytes(*b"GRBK");
/// Bytes of a block header.
pub const BLOCK_HEADER: usize = 16;
/// Largest block payload a reader accepts (a guard against corrupt lengths).
pub const MAX_BLOCK: usize = 256 << 20;

/// Kinds of blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum BlockKind {
    /// Strings and member lists referenced by later events.
    Definitions = 1,
    /// Events.
    Events = 2,
    /// Clock samples for global time.
    ClockSamples = 3,
    /// Totals, written when the rank finishes.
    Footer = 4,
    /// What a reader starting after it needs of the events before it
    /// (merged traces; [`crate::resume`]).
    Resume = 5,
}

impl BlockKind {
    /// The kind with id `id`.
    pub fn from_u8(id: u8) -> Option<BlockKind> {
        Some(match id {
            1 => BlockKind::Definitions,
            2 => BlockKind::Events,
            3 => BlockKind::ClockSamples,
            4 => BlockKind::Footer,
            5 => BlockKind::Resume,
            _ => return None,
        })
    }
}

/// The self-description at the head of every trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileHeader {
    /// [`VERSION`].
    pub format: u32,
    /// The rank whose events these are, or `None` for a merged trace.
    pub rank: Option<u32>,
    /// Ranks in the job.
    pub world_size: u32,
    /// The job's id, the same in every rank's file: the process manager's
    /// (grappe's launcher's, hydra's kvsname, Slurm's job.step). Empty in
    /// files written before it was recorded.
    #[serde(default)]
    pub job: String,
    /// Host name of the process.
    pub host: String,
    /// Process id of the rank's process.
    pub pid: u32,
    /// Ranks hosted by that process.
    pub process_ranks: Vec<u32>,
    /// The OS thread that ran the rank (the "thread" of every record:
    /// a rank never moves to another thread). `None` in merged traces and
    /// in files written before it was recorded.
    #[serde(default)]
    pub thread: Option<RankThread>,
    /// How dates were taken and what they mean.
    pub clock: ClockInfo,
    /// Measured cost of recording one event, per kind (nanoseconds).
    pub calibration: Vec<Calibration>,
    /// What each slot of each kind holds.
    pub schema: Vec<SchemaEntry>,
    /// How the recorder emptied its buffer: `end`, `full` or `thread`.
    pub flush_policy: String,
    /// Events the recorder's buffer holds.
    pub buffer_events: u64,
    /// Wall-clock start of the recording (Unix nanoseconds), for humans.
    pub started_unix_ns: u64,
    /// For a merged trace: the per-rank files it was made from.
    #[serde(default)]
    pub merged_from: Vec<MergedRank>,
}

/// The OS thread that runs a rank, for the whole run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankThread {
    /// Its Linux thread id (what `top -H` and `perf` show).
    pub tid: u32,
    /// The CPU it is bound to, if it is bound to one.
    pub cpu: Option<u32>,
    /// The ranks it runs, this one included: thread ranks that outnumber
    /// cores are coroutines of one worker thread, and never run at the
    /// same time.
    pub ranks: Vec<u32>,
}

/// One per-rank file behind a merged trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergedRank {
    /// World rank.
    pub rank: u32,
    /// Its host.
    pub host: String,
    /// Its process id.
    pub pid: u32,
    /// The OS thread that ran it, if its file said.
    #[serde(default)]
    pub thread: Option<RankThread>,
    /// Its clock source.
    pub clock: String,
    /// How its dates were put on global time.
    pub time: String,
}

/// The clock behind the dates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClockInfo {
    /// `tsc` (invariant time-stamp counter) or `monotonic_raw`.
    pub source: String,
    /// Ticks per second of the source, as calibrated.
    pub ticks_per_second: f64,
    /// `local` (nanoseconds of this rank's clock) or `global` (corrected
    /// to the reference rank's clock by `grappe trace merge`).
    pub time_base: String,
    /// The simulated clock distortion applied to every date, if any
    /// (testing the clock estimation on one host).
    pub simulated: Option<String>,
    /// For merged traces: estimator and strategy used.
    pub estimation: Option<String>,
    /// For `tsc`: the calibration that turned ticks into nanoseconds.
    /// Processes on one host share the counter but each calibrates it;
    /// with the anchors, the analysis puts them on one time base exactly
    /// instead of estimating it.
    #[serde(default)]
    pub tsc: Option<TscAnchor>,
}

/// How one process turned time-stamp counter ticks into nanoseconds:
/// ns = `ns0` + (ticks − `tick0`) × `ns_per_tick`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TscAnchor {
    /// Counter value at calibration.
    pub tick0: u64,
    /// Raw monotonic date of `tick0`, ns.
    pub ns0: u64,
    /// Calibrated nanoseconds per tick.
    pub ns_per_tick: f64,
}

/// α of one kind of event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// Kind name.
    pub kind: String,
    /// Median cost in nanoseconds.
    pub alpha_ns: u32,
}

/// The attributes of one kind of event and the slots holding them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SchemaEntry {
    /// Numeric id.
    pub id: u16,
    /// Kind name.
    pub name: String,
    /// (attribute, slot) pairs in encoding order.
    pub fields: Vec<(String, String)>,
}

/// The schema of this version.
pub fn schema() -> Vec<SchemaEntry> {
    EventKind::ALL
        .iter()
        .map(|&kind| SchemaEntry {
            id: kind.id(),
            name: kind.name().to_owned(),
            fields: slots_of(kind).iter().map(|(name, slot)| (name.to_string(), slot.name().to_owned())).collect(),
        })
        .collect()
}

/// One clock sample: a ping-pong between the reference rank (0) and
/// `peer`, four local dates in nanoseconds (Tape/PVM Fig. 3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockSample {
    /// The other rank.
    pub peer: u32,
    /// 0: before the run (SB phase), 1: after it (second phase of SBA).
    pub phase: u8,
    /// Reference sends.
    pub t_send_ref: u64,
    /// Peer receives.
    pub t_recv_peer: u64,
    /// Peer replies.
    pub t_send_peer: u64,
    /// Reference receives the reply.
    pub t_recv_ref: u64,
}

/// Totals written when a rank finishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Footer {
    /// Events written.
    pub events: u64,
    /// Events lost because the buffer was full (policy `end`).
    pub dropped: u64,
    /// Buffer flushes during the run.
    pub flushes: u64,
    /// α per kind id measured again when the rank finished, as the clocks
    /// are sampled before and after the run (SBA): with the header's α
    /// (measured before), it says whether recording got dearer or cheaper
    /// while the program ran, and compensation can take each event's α
    /// between the two. `None` in files written before it was measured
    /// and in merged traces.
    pub alpha_after: Option<[u32; 32]>,
}

/// An event ready to encode: rank, dates in nanoseconds, α, and slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Encoded {
    /// World rank.
    pub rank: u32,
    /// Start (ns).
    pub start: u64,
    /// End (ns).
    pub end: u64,
    /// α (ns).
    pub alpha_ns: u32,
    /// Kind and slots (its `start`/`end` are ignored).
    pub raw: RawEvent,
}

// ---- varints ----

/// Appends `v` as LEB128.
#[inline]
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads a LEB128 value at `*pos`, advancing it; `None` if malformed or cut.
#[inline]
pub fn get_varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    // Most values of a trace (ranks, tags, kinds) take one byte, dates in
    // nanoseconds two or three. (Unpacking eight bytes at once without a
    // branch per byte was tried: slower here, its dependency chain is
    // longer than the branches it saves.)
    let first = *buf.get(*pos)?;
    if first < 0x80 {
        *pos += 1;
        return Some(first as u64);
    }
    if let Some(&second) = buf.get(*pos + 1)
        && second < 0x80
    {
        *pos += 2;
        return Some((first & 0x7f) as u64 | (second as u64) << 7);
    }
    get_long_varint(buf, pos)
}

fn get_long_varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *buf.get(*pos)?;
        *pos += 1;
        if shift == 63 && byte > 1 {
            return None;
        }
        v |= ((byte & 0x7f) as u64) << shift;
        if byte < 0x80 {
            return Some(v);
        }
    }
    None
}

pub(crate) fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

pub(crate) fn unzigzag(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
}

// ---- event blocks ----

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
/// [`LAYOUTS`] table the decoder walks (pushing a byte at a time cost 18
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

// ---- definitions ----

/// A definition referenced by events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Definition {
    /// A string (region name, source location).
    String(u32, String),
    /// A member list (communicator members).
    Members(u64, Vec<u32>),
}

/// Encodes a definitions block payload.
pub fn encode_definitions(defs: &[Definition], out: &mut Vec<u8>) {
    put_varint(out, defs.len() as u64);
    for def in defs {
        match def {
            Definition::String(id, s) => {
                out.push(1);
                put_varint(out, *id as u64);
                put_varint(out, s.len() as u64);
                out.extend_from_slice(s.as_bytes());
            }
            Definition::Members(id, members) => {
                out.push(2);
                put_varint(out, *id);
                put_varint(out, members.len() as u64);
                members.iter().for_each(|m| put_varint(out, *m as u64));
            }
        }
    }
}

/// Decodes a definitions block payload.
pub fn decode_definitions(payload: &[u8]) -> Result<Vec<Definition>, (usize, String)> {
    let mut pos = 0;
    let next =
        |pos: &mut usize, what: &str| get_varint(payload, pos).ok_or_else(|| (*pos, format!("a varint ({what})")));
    let count = next(&mut pos, "definition count")? as usize;
    let mut defs = Vec::with_capacity(count.min(payload.len()));
    for _ in 0..count {
        let tag = *payload.get(pos).ok_or((pos, "a definition tag".to_owned()))?;
        pos += 1;
        match tag {
            1 => {
                let id = u32::try_from(next(&mut pos, "string id")?)
                    .map_err(|_| (pos, "a string id below 2^32".to_owned()))?;
                let len = next(&mut pos, "string length")? as usize;
                let bytes = payload.get(pos..pos.saturating_add(len)).ok_or((pos, format!("{len} bytes of string")))?;
                let s = std::str::from_utf8(bytes).map_err(|_| (pos, "UTF-8 text".to_owned()))?;
                pos += len;
                defs.push(Definition::String(id, s.to_owned()));
            }
            2 => {
                let id = next(&mut pos, "member list id")?;
                let len = next(&mut pos, "member count")? as usize;
                if len > payload.len() {
                    return Err((pos, format!("at most {} members, not {len}", payload.len())));
                }
                let members = (0..len)
                    .map(|_| {
                        next(&mut pos, "member").and_then(|m| u32::try_from(m).map_err(|_| (pos, "a rank".to_owned())))
                    })
                    .collect::<Result<Vec<u32>, _>>()?;
                defs.push(Definition::Members(id, members));
            }
            other => return Err((pos - 1, format!("definition tag 1 or 2, not {other}"))),
        }
    }
    Ok(defs)
}

// ---- clock samples and footer ----

/// Encodes a clock-samples block payload.
pub fn encode_samples(samples: &[ClockSample], out: &mut Vec<u8>) {
    put_varint(out, samples.len() as u64);
    for s in samples {
        put_varint(out, s.peer as u64);
        out.push(s.phase);
        for t in [s.t_send_ref, s.t_recv_peer, s.t_send_peer, s.t_recv_ref] {
            put_varint(out, t);
        }
    }
}

/// Decodes a clock-samples block payload.
pub fn decode_samples(payload: &[u8]) -> Result<Vec<ClockSample>, (usize, String)> {
    let mut pos = 0;
    let next =
        |pos: &mut usize, what: &str| get_varint(payload, pos).ok_or_else(|| (*pos, format!("a varint ({what})")));
    let count = next(&mut pos, "sample count")? as usize;
    let mut samples = Vec::with_capacity(count.min(payload.len()));
    for _ in 0..count {
        let peer = u32::try_from(next(&mut pos, "peer")?).map_err(|_| (pos, "a rank".to_owned()))?;
        let phase = *payload.get(pos).ok_or((pos, "a phase byte".to_owned()))?;
        pos += 1;
        let mut t = [0u64; 4];
        for (i, slot) in t.iter_mut().enumerate() {
            *slot = next(&mut pos, ["t_send_ref", "t_recv_peer", "t_send_peer", "t_recv_ref"][i])?;
        }
        samples.push(ClockSample {
            peer,
            phase,
            t_send_ref: t[0],
            t_recv_peer: t[1],
            t_send_peer: t[2],
            t_recv_ref: t[3],
        });
    }
    Ok(samples)
}

/// Encodes a footer payload.
pub fn encode_footer(f: &Footer, out: &mut Vec<u8>) {
    for v in [f.events, f.dropped, f.flushes] {
        put_varint(out, v);
    }
    if let Some(alpha) = &f.alpha_after {
        put_varint(out, EventKind::ALL.len() as u64);
        for kind in EventKind::ALL {
            put_varint(out, kind.id() as u64);
            put_varint(out, alpha[kind.id() as usize] as u64);
        }
    }
}

/// Decodes a footer payload. The α after the run is optional (files of
/// earlier versions end after the flushes).
pub fn decode_footer(payload: &[u8]) -> Result<Footer, (usize, String)> {
    let mut pos = 0;
    let mut next = |what: &str| get_varint(payload, &mut pos).ok_or_else(|| (pos, format!("a varint ({what})")));
    let (events, dropped, flushes) = (next("events")?, next("dropped")?, next("flushes")?);
    let alpha_after = if pos == payload.len() { None } else { Some(decode_alpha_after(payload, &mut pos)?) };
    Ok(Footer { events, dropped, flushes, alpha_after })
}

/// The footer's α after the run: a count of kinds, then (kind id, ns) pairs.
fn decode_alpha_after(payload: &[u8], pos: &mut usize) -> Result<[u32; 32], (usize, String)> {
    let next = |pos: &mut usize, what: &str| get_varint(payload, pos).ok_or_else(|| (*pos, format!("a varint ({what})")));
    let count = next(pos, "kinds with an α after the run")?;
    if count > EventKind::ALL.len() as u64 {
        return Err((*pos, format!("at most {} kinds with an α after the run, not {count}", EventKind::ALL.len())));
    }
    let mut alpha = [0u32; 32];
    for _ in 0..count {
        let id = next(pos, "an event kind id")?;
        let kind = u16::try_from(id).ok().and_then(EventKind::from_id);
        let kind = kind.ok_or_else(|| (*pos, format!("a known event kind id, not {id}")))?;
        let ns = next(pos, "an α in ns")?;
        alpha[kind.id() as usize] = u32::try_from(ns).map_err(|_| (*pos, format!("an α below 2^32 ns, not {ns}")))?;
    }
    Ok(alpha)
}

/// The 16-byte header of a block with this payload.
pub fn block_header(kind: BlockKind, payload: &[u8]) -> [u8; BLOCK_HEADER] {
    let mut h = [0u8; BLOCK_HEADER];
    h[0..4].copy_from_slice(&BLOCK_MAGIC.to_le_bytes());
    h[4] = kind as u8;
    h[8..12].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    h[12..16].copy_from_slice(&crc32fast::hash(payload).to_le_bytes());
    h
}
