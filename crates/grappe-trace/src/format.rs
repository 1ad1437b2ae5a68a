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
//! (see [`crate::raw::slots_of`], published in the header's schema). The
//! bits within a slot are [`crate::raw`]'s: `ARRIVED` (4),
//! `RECV_OF_SENDRECV` (8), `ASKED_ANY_SOURCE` (16, which older readers
//! ignore) and, from version 3, `FAILED` (0x100) in `flags`; `SEND_FAILED`
//! (2^63) and `SEND_SYNC` (2^62; a reader older than it would take it
//! for part of a synchronous send's sequence number) in a send's `seq`.

use serde::{Deserialize, Serialize};

use crate::event::EventKind;
use crate::raw::{RawEvent, slots_of};

/// First bytes of every trace file.
pub const MAGIC: &[u8; 8] = b"GRTRACE1";
/// Format version written by this code. Version 3 records calls that
/// failed because a peer died or the job was stopped, with a bit
/// ([`crate::raw::FAILED`], [`crate::raw::SEND_FAILED`]) that a reader
/// of version 2 would ignore, and so match a failed receive with a send:
/// it refuses version 3 instead.
pub const VERSION: u32 = 3;
/// The oldest version this code reads. Version 2 is version 3 without
/// failed calls: its records read the same.
pub const OLDEST_READABLE: u32 = 2;
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
    /// How its recorder emptied its buffer (empty in files merged before
    /// it was kept).
    #[serde(default)]
    pub flush_policy: String,
    /// Events its recorder's buffer held (0: not kept).
    #[serde(default)]
    pub buffer_events: u64,
    /// Its recorder's α per kind id, in ns (the header's calibration of its
    /// file, kept compactly: a merge of many ranks keeps one per rank).
    /// Empty in files merged before it was kept.
    #[serde(default)]
    pub alpha_ns: Vec<u32>,
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

/// [`get_varint`], or where and what was expected: the decoders' error.
pub(crate) fn varint(payload: &[u8], pos: &mut usize, what: &str) -> Result<u64, (usize, String)> {
    get_varint(payload, pos).ok_or_else(|| (*pos, format!("a varint ({what})")))
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

// ---- event blocks: see `events` ----

mod events;
mod footer;
pub use events::{EventDecoder, TakeEncoded, decode_events, encode_events};
pub use footer::{Footer, IncompleteRank, RankEnding, decode_footer, encode_footer};

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
    let count = varint(payload, &mut pos, "definition count")? as usize;
    let mut defs = Vec::with_capacity(count.min(payload.len()));
    for _ in 0..count {
        let tag = *payload.get(pos).ok_or((pos, "a definition tag".to_owned()))?;
        pos += 1;
        match tag {
            1 => {
                let id = u32::try_from(varint(payload, &mut pos, "string id")?)
                    .map_err(|_| (pos, "a string id below 2^32".to_owned()))?;
                let len = varint(payload, &mut pos, "string length")? as usize;
                let bytes = payload.get(pos..pos.saturating_add(len)).ok_or((pos, format!("{len} bytes of string")))?;
                let s = std::str::from_utf8(bytes).map_err(|_| (pos, "UTF-8 text".to_owned()))?;
                pos += len;
                defs.push(Definition::String(id, s.to_owned()));
            }
            2 => {
                let id = varint(payload, &mut pos, "member list id")?;
                let len = varint(payload, &mut pos, "member count")? as usize;
                if len > payload.len() {
                    return Err((pos, format!("at most {} members, not {len}", payload.len())));
                }
                let members = (0..len)
                    .map(|_| {
                        varint(payload, &mut pos, "member")
                            .and_then(|m| u32::try_from(m).map_err(|_| (pos, "a rank".to_owned())))
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
    let count = varint(payload, &mut pos, "sample count")? as usize;
    let mut samples = Vec::with_capacity(count.min(payload.len()));
    for _ in 0..count {
        let peer = u32::try_from(varint(payload, &mut pos, "peer")?).map_err(|_| (pos, "a rank".to_owned()))?;
        let phase = *payload.get(pos).ok_or((pos, "a phase byte".to_owned()))?;
        pos += 1;
        let mut t = [0u64; 4];
        for (i, slot) in t.iter_mut().enumerate() {
            *slot = varint(payload, &mut pos, ["t_send_ref", "t_recv_peer", "t_send_peer", "t_recv_ref"][i])?;
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

/// The 16-byte header of a block with this payload.
pub fn block_header(kind: BlockKind, payload: &[u8]) -> [u8; BLOCK_HEADER] {
    let mut h = [0u8; BLOCK_HEADER];
    h[0..4].copy_from_slice(&BLOCK_MAGIC.to_le_bytes());
    h[4] = kind as u8;
    h[8..12].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    h[12..16].copy_from_slice(&crc32fast::hash(payload).to_le_bytes());
    h
}
