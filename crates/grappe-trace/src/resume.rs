//! Resume points of a merged trace: what a reader that starts reading
//! after one needs of all the events before it, so that an interval late
//! in a long run (`grappe trace export --from`) is read without reading
//! the run up to it.
//!
//! `grappe trace merge` writes one every few hundred thousand events.
//! Before it, every event ended by `settled`. It holds:
//! - the messages still in flight (sent, not yet received), with the ids
//!   the matcher gave them, and the id of the next one;
//! - events still needed: the communicator creations so far, the user
//!   regions entered and not left, and the finalize of each rank done.
//!
//! ```text
//! settled        varint   every event before the block ends by this date (global ns)
//! next message   varint   the id the next send gets
//! in flight      varint count, then per message: src, dst, comm,
//!                zigzag(tag), id, start, end, bytes, seq (varints)
//! events         the rest: an events payload (format::encode_events)
//! ```

use crate::event::Event;
use crate::format::{Encoded, decode_events, encode_events, put_varint, unzigzag, varint, zigzag};

/// A message sent before a resume point and not received by then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InFlight {
    /// Sending world rank.
    pub src: u32,
    /// Receiving world rank.
    pub dst: u32,
    /// Communicator.
    pub comm: u32,
    /// Tag.
    pub tag: i32,
    /// The message's id in the merged stream.
    pub id: u64,
    /// Its send's start, global ns.
    pub start: u64,
    /// Its send's end.
    pub end: u64,
    /// Bytes.
    pub bytes: u64,
    /// The sender's sequence number towards the receiver.
    pub seq: u64,
}

/// The payload of a resume block, with its events still encoded.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EncodedResume {
    /// Every event before the block ends by this date (global ns).
    pub settled: u64,
    /// The id the next message gets.
    pub next_message: u64,
    /// Messages in flight, in the order they were sent.
    pub in_flight: Vec<InFlight>,
    /// Creations, open region enters and finalizes, in stream order per rank.
    pub events: Vec<Encoded>,
}

/// A resume point as a reader gives it, its events decoded
/// ([`crate::TraceFile::resume_before`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Resume {
    /// Every event before it ends by this date (global ns).
    pub settled: u64,
    /// The id the next message gets.
    pub next_message: u64,
    /// Messages in flight, in the order they were sent.
    pub in_flight: Vec<InFlight>,
    /// Creations, open region enters and finalizes, in stream order per rank.
    pub events: Vec<Event>,
}

/// What comes before a resume payload's events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResumeHead {
    /// See [`Resume::settled`].
    pub settled: u64,
    /// See [`Resume::next_message`].
    pub next_message: u64,
    /// See [`Resume::in_flight`].
    pub in_flight: Vec<InFlight>,
}

/// Encodes a resume block's payload.
pub fn encode_resume(resume: &EncodedResume, out: &mut Vec<u8>) {
    put_varint(out, resume.settled);
    put_varint(out, resume.next_message);
    put_varint(out, resume.in_flight.len() as u64);
    for m in &resume.in_flight {
        let tag = zigzag(m.tag as i64);
        for v in [m.src as u64, m.dst as u64, m.comm as u64, tag, m.id, m.start, m.end, m.bytes, m.seq] {
            put_varint(out, v);
        }
    }
    encode_events(resume.events.iter().copied(), out);
}

/// Decodes a resume block's payload; the error names the byte (within the
/// payload) where decoding failed and what was expected there.
pub fn decode_resume(payload: &[u8]) -> Result<EncodedResume, (usize, String)> {
    let (head, pos) = decode_resume_head(payload)?;
    let events = decode_events(&payload[pos..]).map_err(|(at, what)| (pos + at, what))?;
    let ResumeHead { settled, next_message, in_flight } = head;
    Ok(EncodedResume { settled, next_message, in_flight, events })
}

/// Decodes what comes before a resume payload's events, and says where
/// they start (an events payload from there to the end).
pub fn decode_resume_head(payload: &[u8]) -> Result<(ResumeHead, usize), (usize, String)> {
    let mut pos = 0;
    let (settled, next_message) =
        (varint(payload, &mut pos, "settled date")?, varint(payload, &mut pos, "next message")?);
    let count = varint(payload, &mut pos, "messages in flight")?;
    // Each message takes at least 9 bytes: no count sizes an allocation.
    if count > (payload.len() / 9) as u64 {
        return Err((
            pos,
            format!("at most {} messages in flight in {} bytes, not {count}", payload.len() / 9, payload.len()),
        ));
    }
    let mut in_flight = Vec::with_capacity(count as usize);
    for _ in 0..count {
        in_flight.push(in_flight_at(payload, &mut pos)?);
    }
    Ok((ResumeHead { settled, next_message, in_flight }, pos))
}

/// Only the settled date of a resume payload (a reader looking for where
/// to start decodes no more).
pub fn resume_settled(payload: &[u8]) -> Result<u64, (usize, String)> {
    varint(payload, &mut 0, "settled date")
}

fn in_flight_at(payload: &[u8], pos: &mut usize) -> Result<InFlight, (usize, String)> {
    let rank = |pos: &mut usize, what: &str| {
        let v = varint(payload, pos, what)?;
        u32::try_from(v).map_err(|_| (*pos, format!("{what} below 2^32, not {v}")))
    };
    let (src, dst, comm) = (rank(pos, "source rank")?, rank(pos, "destination rank")?, rank(pos, "communicator")?);
    let tag = i32::try_from(unzigzag(varint(payload, pos, "tag")?)).map_err(|_| (*pos, "a 32-bit tag".to_owned()))?;
    let mut rest = [0u64; 5];
    for (v, what) in rest.iter_mut().zip(["message id", "send start", "send end", "bytes", "sequence"]) {
        *v = varint(payload, pos, what)?;
    }
    let [id, start, end, bytes, seq] = rest;
    Ok(InFlight { src, dst, comm, tag, id, start, end, bytes, seq })
}
