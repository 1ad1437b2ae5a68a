//! What the protocol puts in mailbox records.
//!
//! Every record carries four words of metadata (see
//! [`grappe_fabric::ring::Meta`]): the record kind, the communicator
//! context, the tag, and the sender's rank in that communicator. The
//! payload depends on the kind.

use grappe_fabric::ring::Meta;

/// Kinds of records. A closed set, matched on the receive path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// A whole message in the payload.
    Eager = 1,
    /// Request to send: the payload is an [`Rts`]; the data waits in the
    /// sender's buffer, described by a rendezvous slot. From a rank of
    /// another host, slot-less, the message's first bytes follow it, and
    /// the receiver pulls the rest ([`Kind::Pull`]).
    Rts = 2,
    /// Hand-over of a heap buffer between thread ranks: the payload is a
    /// [`Handover`]; ownership moves with the record, nothing is copied.
    Handover = 3,
    /// First fragment of a message staged through the mailbox (when
    /// cross-memory attach is refused): payload = total length (8 bytes)
    /// followed by the first bytes.
    FragFirst = 4,
    /// Further fragment of the message started by the last `FragFirst`
    /// from the same sender.
    Frag = 5,
    /// 8-byte short message from a receiver: the rendezvous send named by
    /// the payload (the sender's request id) is complete.
    Fin = 6,
    /// The sender revoked the context of the record: the receiver revokes
    /// it too (see `Engine::revoke`). The payload is an encoded
    /// [`Mismatch`](crate::Mismatch), the reason.
    Revoke = 7,
    /// "Where do you stand in the collective calls of this context?" (see
    /// [`CallBoard`](crate::CallBoard)); no payload.
    Probe = 8,
    /// The answer to a probe: the 4 words of [`CallBoard::current`](crate::CallBoard::current).
    ProbeReply = 9,
    /// The sender's rank changed state, for peers on other hosts, which
    /// cannot read it in the host segment: the payload is the new state
    /// (4 bytes, `grappe_fabric::layout::STATE_*`). A connection that
    /// closes after a final state was announced ended normally.
    State = 10,
    /// A synchronous send's whole message, to a rank it cannot offer a
    /// rendezvous (another host, or cross-memory attach refused): the
    /// payload is the sender's request id (8 bytes) then the message. The
    /// receiver answers with a [`Kind::Fin`] naming that request once a
    /// receive (or a matched probe) takes the message.
    SyncEager = 11,
    /// The first fragment of a synchronous send's staged message: the
    /// sender's request id (8 bytes), then what a [`Kind::FragFirst`]
    /// carries; answered as [`Kind::SyncEager`] is.
    SyncFragFirst = 12,
    /// From a receiver on another host, once a receive took an [`Rts`]
    /// (slot-less between hosts, its first bytes after it): "send the rest
    /// of that message now". The payload is the sender's request id, the
    /// receive's key (which every [`Kind::PullData`] of the message names)
    /// and the bytes the receiver has (8 bytes each).
    Pull = 13,
    /// Bytes of a pulled message, in order: the receive's key (8 bytes),
    /// then the next bytes of the message.
    PullData = 14,
}

impl Kind {
    fn from_u8(v: u8) -> Option<Kind> {
        Some(match v {
            1 => Kind::Eager,
            2 => Kind::Rts,
            3 => Kind::Handover,
            4 => Kind::FragFirst,
            5 => Kind::Frag,
            6 => Kind::Fin,
            7 => Kind::Revoke,
            8 => Kind::Probe,
            9 => Kind::ProbeReply,
            10 => Kind::State,
            11 => Kind::SyncEager,
            12 => Kind::SyncFragFirst,
            13 => Kind::Pull,
            14 => Kind::PullData,
            _ => return None,
        })
    }
}

/// The decoded metadata of a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Envelope {
    /// What the payload is.
    pub kind: Kind,
    /// Communicator context (point-to-point and collective traffic of one
    /// communicator use different contexts).
    pub ctx: u32,
    /// Message tag.
    pub tag: i32,
    /// Sender's rank in the communicator of `ctx`.
    pub src: u32,
}

impl Envelope {
    /// Packs the envelope into record metadata.
    #[inline]
    pub fn encode(&self) -> Meta {
        [self.kind as u32, self.ctx, self.tag as u32, self.src]
    }

    /// Unpacks record metadata. `None` means a corrupt or foreign record.
    #[inline]
    pub fn decode(meta: Meta) -> Option<Envelope> {
        Some(Envelope {
            kind: Kind::from_u8(u8::try_from(meta[0]).ok()?)?,
            ctx: meta[1],
            tag: meta[2] as i32,
            src: meta[3],
        })
    }
}

/// Payload of an [`Kind::Rts`] record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rts {
    /// The sender's rendezvous slot, for a cooperative copy, or
    /// [`Rts::NO_SLOT`]: the receiver then copies alone and answers with a
    /// [`Kind::Fin`] naming `request`.
    pub slot: u32,
    /// Message length in bytes.
    pub len: u64,
    /// Address of the data in the sender's address space.
    pub addr: u64,
    /// The sender's request id.
    pub request: u64,
}

impl Rts {
    /// No slot was free when the message was offered.
    pub const NO_SLOT: u32 = u32::MAX;
}

/// Payload of a [`Kind::Handover`] record: the raw parts of a heap buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handover {
    /// Address of the first element.
    pub ptr: u64,
    /// Bytes in use.
    pub len: u64,
    /// Bytes allocated.
    pub cap: u64,
    /// Alignment of the allocation.
    pub align: u64,
    /// Identifies the element type, so the receiver can reuse the buffer
    /// as-is only for the same type.
    pub type_hash: u64,
}

/// Fixed-size payloads that travel as little-endian words.
pub trait Words: Sized {
    /// Payload size in bytes.
    const BYTES: usize;
    /// Writes the payload.
    fn write(&self, out: &mut [u8]);
    /// Reads the payload; `None` if it is too short.
    fn read(bytes: &[u8]) -> Option<Self>;
}

fn word(bytes: &[u8], i: usize) -> Option<u64> {
    Some(u64::from_le_bytes(bytes.get(i * 8..i * 8 + 8)?.try_into().ok()?))
}

fn put_words(out: &mut [u8], words: &[u64]) {
    for (chunk, w) in out.chunks_exact_mut(8).zip(words) {
        chunk.copy_from_slice(&w.to_le_bytes());
    }
}

impl Words for Rts {
    const BYTES: usize = 32;
    fn write(&self, out: &mut [u8]) {
        put_words(out, &[self.slot as u64, self.len, self.addr, self.request]);
    }
    fn read(bytes: &[u8]) -> Option<Self> {
        Some(Rts {
            slot: u32::try_from(word(bytes, 0)?).ok()?,
            len: word(bytes, 1)?,
            addr: word(bytes, 2)?,
            request: word(bytes, 3)?,
        })
    }
}

impl Words for Handover {
    const BYTES: usize = 40;
    fn write(&self, out: &mut [u8]) {
        put_words(out, &[self.ptr, self.len, self.cap, self.align, self.type_hash]);
    }
    fn read(bytes: &[u8]) -> Option<Self> {
        Some(Handover {
            ptr: word(bytes, 0)?,
            len: word(bytes, 1)?,
            cap: word(bytes, 2)?,
            align: word(bytes, 3)?,
            type_hash: word(bytes, 4)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn envelopes_round_trip(kind in 1u8..=14, ctx: u32, tag: i32, src: u32) {
            let env = Envelope { kind: Kind::from_u8(kind).unwrap(), ctx, tag, src };
            prop_assert_eq!(Envelope::decode(env.encode()), Some(env));
        }

        #[test]
        fn payload_words_round_trip(slot: u32, len: u64, ptr: u64, cap: u64, align: u64, hash: u64) {
            let mut buf = [0u8; 40];
            let rts = Rts { slot, len, addr: ptr, request: hash };
            rts.write(&mut buf);
            prop_assert_eq!(Rts::read(&buf), Some(rts));
            let h = Handover { ptr, len, cap, align, type_hash: hash };
            h.write(&mut buf);
            prop_assert_eq!(Handover::read(&buf), Some(h));
        }

        #[test]
        fn short_or_foreign_records_are_rejected(kind in 15u32.., bytes in proptest::collection::vec(any::<u8>(), 0..16)) {
            prop_assert_eq!(Envelope::decode([kind, 0, 0, 0]), None);
            prop_assert_eq!(Handover::read(&bytes), None);
        }
    }
}
