//! The header every message of a link opens with, little-endian:
//!
//! | bytes  | field                                                     |
//! |--------|-----------------------------------------------------------|
//! | 0..16  | the record's four meta words                              |
//! | 16..20 | the record's payload length (all its fragments)           |
//! | 20..24 | data message number; in a `Bye`, data messages sent      |
//! | 24..28 | credits returned: receive buffers posted again            |
//! | 28     | kind                                                      |
//! | 29..32 | zero                                                      |
//! | 32..36 | the sender's end number                                   |
//! | 36..40 | the receiver's end number                                 |
//!
//! A record travels as one `Data` message, or as a `Data` message with its
//! first fragment followed by `More` messages, each full but the last.
//! The control messages (`Credit`, `Ping`, `Bye`) carry a header only.

use crate::Meta;

/// Bytes of a message header.
pub const HEADER_BYTES: usize = 40;

/// What a message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A record, or its first fragment.
    Data = 1,
    /// A following fragment of a record.
    More = 2,
    /// Credits only.
    Credit = 3,
    /// Nothing: sent on an idle link, so that a lost peer shows as a
    /// failed send.
    Ping = 4,
    /// The sender closed the link; `seq` counts its data messages.
    Bye = 5,
}

impl Kind {
    /// True for the messages that take a data receive buffer (and a credit).
    pub fn is_data(self) -> bool {
        matches!(self, Kind::Data | Kind::More)
    }

    fn from_byte(byte: u8) -> Option<Kind> {
        Some(match byte {
            1 => Kind::Data,
            2 => Kind::More,
            3 => Kind::Credit,
            4 => Kind::Ping,
            5 => Kind::Bye,
            _ => return None,
        })
    }
}

/// A decoded header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    pub meta: Meta,
    pub record_len: u32,
    pub seq: u32,
    pub credits: u32,
    pub kind: Kind,
    pub from: u32,
    pub to: u32,
}

/// Writes `header` at the start of `out`.
pub(crate) fn encode(header: &Header, out: &mut [u8]) {
    let words = [
        header.meta[0],
        header.meta[1],
        header.meta[2],
        header.meta[3],
        header.record_len,
        header.seq,
        header.credits,
        header.kind as u32,
        header.from,
        header.to,
    ];
    for (i, word) in words.iter().enumerate() {
        out[4 * i..4 * i + 4].copy_from_slice(&word.to_le_bytes());
    }
}

/// Rewrites the credits of an encoded header (they are known only when
/// the message is posted).
pub(crate) fn set_credits(credits: u32, out: &mut [u8]) {
    out[24..28].copy_from_slice(&credits.to_le_bytes());
}

/// Rewrites the sequence number of an encoded header (known only when
/// the message is posted).
pub(crate) fn set_seq(seq: u32, out: &mut [u8]) {
    out[20..24].copy_from_slice(&seq.to_le_bytes());
}

/// The header at the start of a received message of `bytes`.
pub(crate) fn decode(bytes: &[u8]) -> Result<Header, String> {
    if bytes.len() < HEADER_BYTES {
        return Err(format!("a message of {} bytes, shorter than a header ({HEADER_BYTES})", bytes.len()));
    }
    let word = |i: usize| u32::from_le_bytes([bytes[4 * i], bytes[4 * i + 1], bytes[4 * i + 2], bytes[4 * i + 3]]);
    let kind_word = word(7);
    let kind = Kind::from_byte(kind_word as u8)
        .filter(|_| kind_word >> 8 == 0)
        .ok_or_else(|| format!("unknown message kind {kind_word:#x}"))?;
    Ok(Header {
        meta: [word(0), word(1), word(2), word(3)],
        record_len: word(4),
        seq: word(5),
        credits: word(6),
        kind,
        from: word(8),
        to: word(9),
    })
}

/// Bytes of the link settings that open an endpoint's published name.
pub const NAME_PREFIX_BYTES: usize = 16;

const NAME_MAGIC: [u8; 4] = *b"GOF1";

/// What an endpoint publishes: the settings its peers' links must agree
/// with, and the provider's address (`fi_getname`).
///
/// | bytes  | field                                     |
/// |--------|-------------------------------------------|
/// | 0..4   | `GOF1`                                    |
/// | 4..8   | fragment bytes                            |
/// | 8..12  | depth: data buffers posted per link       |
/// | 12     | 1 for tagged messages, 0 for plain ones   |
/// | 13..16 | zero                                      |
/// | 16..   | the provider's address                    |
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Published {
    pub fragment: u32,
    pub depth: u32,
    pub tagged: bool,
    pub address: Vec<u8>,
}

impl Published {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(NAME_PREFIX_BYTES + self.address.len());
        out.extend_from_slice(&NAME_MAGIC);
        out.extend_from_slice(&self.fragment.to_le_bytes());
        out.extend_from_slice(&self.depth.to_le_bytes());
        out.extend_from_slice(&[u8::from(self.tagged), 0, 0, 0]);
        out.extend_from_slice(&self.address);
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<Published, String> {
        if bytes.len() <= NAME_PREFIX_BYTES || bytes[..4] != NAME_MAGIC {
            return Err(format!("{} bytes that are not an endpoint name of this version (GOF1)", bytes.len()));
        }
        let word = |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
        let tagged = match (bytes[12], &bytes[13..16]) {
            (0, [0, 0, 0]) => false,
            (1, [0, 0, 0]) => true,
            _ => return Err(format!("a matching flag {:02x?} that is neither tagged nor plain", &bytes[12..16])),
        };
        Ok(Published { fragment: word(4), depth: word(8), tagged, address: bytes[NAME_PREFIX_BYTES..].to_vec() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn kind() -> impl Strategy<Value = Kind> {
        prop_oneof![Just(Kind::Data), Just(Kind::More), Just(Kind::Credit), Just(Kind::Ping), Just(Kind::Bye)]
    }

    proptest! {
        #[test]
        fn headers_round_trip(
            meta in any::<Meta>(), record_len in any::<u32>(), seq in any::<u32>(), credits in any::<u32>(),
            kind in kind(), from in any::<u32>(), to in any::<u32>(), late_credits in any::<u32>(),
        ) {
            let header = Header { meta, record_len, seq, credits, kind, from, to };
            let mut bytes = [0u8; HEADER_BYTES + 3];
            encode(&header, &mut bytes);
            prop_assert_eq!(decode(&bytes), Ok(header));
            set_credits(late_credits, &mut bytes);
            prop_assert_eq!(decode(&bytes), Ok(Header { credits: late_credits, ..header }));
        }
    }

    proptest! {
        #[test]
        fn published_names_round_trip(
            fragment in any::<u32>(), depth in any::<u32>(), tagged in any::<bool>(),
            address in proptest::collection::vec(any::<u8>(), 1..64),
        ) {
            let name = Published { fragment, depth, tagged, address };
            prop_assert_eq!(Published::decode(&name.encode()), Ok(name));
        }
    }

    #[test]
    fn names_of_another_kind_are_refused() {
        let name = Published { fragment: 1, depth: 2, tagged: true, address: vec![7; 16] }.encode();
        assert!(Published::decode(&name[..NAME_PREFIX_BYTES]).unwrap_err().contains("16 bytes"));
        assert!(Published::decode(&name[1..]).is_err());
        let mut flagged = name.clone();
        flagged[12] = 2;
        assert!(Published::decode(&flagged).unwrap_err().contains("neither tagged nor plain"));
    }

    #[test]
    fn a_header_is_laid_out_as_documented() {
        let header = Header { meta: [1, 2, 3, 4], record_len: 5, seq: 6, credits: 7, kind: Kind::Bye, from: 8, to: 9 };
        let mut bytes = [0u8; HEADER_BYTES];
        encode(&header, &mut bytes);
        assert_eq!(bytes[..], [1u32, 2, 3, 4, 5, 6, 7, 5, 8, 9].map(u32::to_le_bytes).concat()[..]);
    }

    #[test]
    fn short_messages_and_unknown_kinds_are_refused() {
        assert!(decode(&[0; HEADER_BYTES - 1]).unwrap_err().contains("39 bytes"));
        let mut bytes = [0u8; HEADER_BYTES];
        assert!(decode(&bytes).unwrap_err().contains("kind 0x0"));
        bytes[28] = 1;
        bytes[29] = 1;
        assert!(decode(&bytes).unwrap_err().contains("kind 0x101"));
    }
}
