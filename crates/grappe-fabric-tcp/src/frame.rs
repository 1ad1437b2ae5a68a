//! The frame of a record on the wire: a fixed little-endian header, then
//! the payload.
//!
//! | bytes  | field                                           |
//! |--------|-------------------------------------------------|
//! | 0..4   | payload length                                  |
//! | 4..20  | the four meta words                             |
//! | 20..24 | check word: a hash of the length and the meta   |
//!
//! The check word depends on every other header field, so bytes that are
//! not a header (garbage, a stream that lost its framing, a length
//! corrupted in flight) are refused with overwhelming probability instead
//! of being read as a record.

use crate::{MAX_PAYLOAD, Meta};

/// Bytes of a frame header; the payload follows it.
pub const HEADER_BYTES: usize = 24;

/// Seed of the check word ("GRPT" read little-endian): a stream of zeros
/// does not check.
const CHECK_SEED: u32 = u32::from_le_bytes(*b"GRPT");

/// A decoded frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    /// Payload bytes that follow the header.
    pub len: u32,
    /// The record's protocol words.
    pub meta: Meta,
}

impl FrameHeader {
    /// Bytes of the whole frame, header included.
    pub fn frame_bytes(&self) -> usize {
        HEADER_BYTES + self.len as usize
    }
}

/// Why bytes are not a frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// The check word does not match the other fields.
    #[error("bad check word {found:#010x} (the header's fields give {expected:#010x}): not a frame")]
    BadCheck {
        /// The word read.
        found: u32,
        /// The word the length and meta read call for.
        expected: u32,
    },
    /// The header announces a payload larger than [`MAX_PAYLOAD`].
    #[error("frame announces a payload of {len} bytes, more than the {max} accepted")]
    TooLarge {
        /// Announced payload bytes.
        len: u32,
        /// [`MAX_PAYLOAD`].
        max: usize,
    },
}

/// The check word of a header: a multiplicative hash over its fields.
fn check_word(len: u32, meta: &Meta) -> u32 {
    let mut hash = CHECK_SEED;
    for word in std::iter::once(len).chain(meta.iter().copied()) {
        hash = (hash ^ word).wrapping_mul(0x9E37_79B1).rotate_left(13);
    }
    hash
}

/// The wire bytes of a header. Does not check the length against
/// [`MAX_PAYLOAD`]: the sender does that before framing.
pub fn encode_header(header: &FrameHeader) -> [u8; HEADER_BYTES] {
    let mut out = [0u8; HEADER_BYTES];
    out[0..4].copy_from_slice(&header.len.to_le_bytes());
    for (i, word) in header.meta.iter().enumerate() {
        out[4 + 4 * i..8 + 4 * i].copy_from_slice(&word.to_le_bytes());
    }
    out[20..24].copy_from_slice(&check_word(header.len, &header.meta).to_le_bytes());
    out
}

/// The header at the start of `bytes`: `Ok(None)` if fewer than
/// [`HEADER_BYTES`] are there, an error if they are not a header of an
/// acceptable frame. Bytes after the header are not looked at.
pub fn decode_header(bytes: &[u8]) -> Result<Option<FrameHeader>, FrameError> {
    let Some(raw) = bytes.get(..HEADER_BYTES) else {
        return Ok(None);
    };
    let word = |i: usize| u32::from_le_bytes([raw[4 * i], raw[4 * i + 1], raw[4 * i + 2], raw[4 * i + 3]]);
    let len = word(0);
    let meta = [word(1), word(2), word(3), word(4)];
    let (found, expected) = (word(5), check_word(len, &meta));
    if found != expected {
        return Err(FrameError::BadCheck { found, expected });
    }
    if len as usize > MAX_PAYLOAD {
        return Err(FrameError::TooLarge { len, max: MAX_PAYLOAD });
    }
    Ok(Some(FrameHeader { len, meta }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn headers_round_trip(len in 0..=MAX_PAYLOAD as u32, meta in any::<Meta>()) {
            let header = FrameHeader { len, meta };
            prop_assert_eq!(decode_header(&encode_header(&header)), Ok(Some(header)));
        }

        #[test]
        fn a_flipped_bit_is_refused(len in 0..=MAX_PAYLOAD as u32, meta in any::<Meta>(), bit in 0..HEADER_BYTES * 8) {
            let mut bytes = encode_header(&FrameHeader { len, meta });
            bytes[bit / 8] ^= 1 << (bit % 8);
            prop_assert!(decode_header(&bytes).is_err(), "flipping bit {} went unnoticed", bit);
        }
    }

    /// The wire format is fixed: a known header, byte for byte (the fuzz
    /// seeds are written from this definition too).
    #[test]
    fn a_header_is_laid_out_as_documented() {
        let bytes = encode_header(&FrameHeader { len: 5, meta: [1, 2, 3, 4] });
        let expected = [5, 1, 2, 3, 4, 0xa1c4_fc32u32].map(u32::to_le_bytes).concat();
        assert_eq!(bytes[..], expected[..]);
    }

    #[test]
    fn short_input_is_not_yet_a_header() {
        let bytes = encode_header(&FrameHeader { len: 3, meta: [1, 2, 3, 4] });
        for cut in 0..HEADER_BYTES {
            assert_eq!(decode_header(&bytes[..cut]), Ok(None));
        }
    }

    #[test]
    fn zeros_are_not_a_header() {
        assert!(matches!(decode_header(&[0; HEADER_BYTES]), Err(FrameError::BadCheck { found: 0, .. })));
    }

    #[test]
    fn an_oversized_length_is_refused_even_with_a_good_check() {
        let len = MAX_PAYLOAD as u32 + 1;
        let bytes = encode_header(&FrameHeader { len, meta: [0; 4] });
        assert_eq!(decode_header(&bytes), Err(FrameError::TooLarge { len, max: MAX_PAYLOAD }));
    }
}
