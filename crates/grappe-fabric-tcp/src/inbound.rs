//! The receiving half of a link: bytes read from the stream, cut into
//! records. Pure (it reads from any `Read`), so the fuzzer drives the very
//! code a link runs.
//!
//! One buffer holds the live bytes between `start` and `end`. The socket is
//! read only when the record at the head is incomplete, so at that moment
//! every live byte belongs to the head record; before reading, the buffer
//! makes room for the whole head record:
//!
//! * if the record does not fit after `start`, the live bytes move to the
//!   front of the buffer, or to a new buffer sized for the record;
//! * if `start` is past the middle, the live bytes move to the front.
//!
//! Once moved, a record sits at offset 0 until it is consumed, so every
//! byte is copied at most once after the read that brought it; a move
//! copies less than half the buffer when it follows half a buffer of
//! consumed records, so the work stays linear in the bytes received.

use std::io::{self, Read};

use crate::error::Cut;
use crate::frame::{FrameError, FrameHeader, HEADER_BYTES, decode_header};

/// The inbound buffer's usual size. A larger record grows it to fit; it
/// shrinks back when it empties and has grown past four times its usual size.
pub const INBOUND_BYTES: usize = 256 * 1024;

/// A frame header that does not decode, and where it is in the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadFrame {
    /// Stream offset of the header.
    pub offset: u64,
    /// What is wrong with it.
    pub detail: FrameError,
}

/// Buffered inbound bytes, cut into records.
#[derive(Debug)]
pub struct Inbound {
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Stream offset of `buf[start]`.
    offset: u64,
    /// The header at `start`, once decoded.
    header: Option<FrameHeader>,
    /// The buffer's usual size.
    usual: usize,
}

impl Default for Inbound {
    fn default() -> Self {
        Inbound::new()
    }
}

impl Inbound {
    /// An empty stream, with a buffer of [`INBOUND_BYTES`].
    pub fn new() -> Inbound {
        Inbound::with_capacity(INBOUND_BYTES)
    }

    /// An empty stream with a buffer of `bytes` usually (at least a
    /// header's): small buffers make the fuzzer reach every way of making
    /// room with short inputs.
    pub fn with_capacity(bytes: usize) -> Inbound {
        let usual = bytes.max(HEADER_BYTES);
        Inbound { buf: vec![0; usual], start: 0, end: 0, offset: 0, header: None, usual }
    }

    /// The header of the record at the head if the whole record is
    /// buffered; `Ok(None)` if more bytes are needed.
    pub fn head(&mut self) -> Result<Option<FrameHeader>, BadFrame> {
        Ok(self.head_header()?.filter(|header| self.end - self.start >= header.frame_bytes()))
    }

    /// The payload of the record at the head.
    ///
    /// # Panics
    /// If [`Inbound::head`] did not return a record.
    pub fn payload(&self) -> &[u8] {
        let header = self.complete_header();
        let from = self.start + HEADER_BYTES;
        &self.buf[from..from + header.len as usize]
    }

    /// Drops the record at the head.
    ///
    /// # Panics
    /// If [`Inbound::head`] did not return a record.
    pub fn consume(&mut self) {
        let bytes = self.complete_header().frame_bytes();
        self.start += bytes;
        self.offset += bytes as u64;
        self.header = None;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
            if self.buf.len() > 4 * self.usual {
                self.buf = vec![0; self.usual];
            }
        }
    }

    /// Stream offset of the record at the head.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Bytes buffered and not consumed.
    pub fn buffered(&self) -> usize {
        self.end - self.start
    }

    /// The incomplete record at the head, if it has begun: what the end
    /// of the stream cut.
    pub fn cut(&self) -> Option<Cut> {
        let received = self.end - self.start;
        if received == 0 {
            return None;
        }
        let (announced, frame_bytes) = match decode_header(&self.buf[self.start..self.end]) {
            Ok(Some(header)) => (Some(header.len), header.frame_bytes()),
            _ => (None, HEADER_BYTES),
        };
        let missing = frame_bytes.saturating_sub(received);
        (missing > 0).then_some(Cut { offset: self.offset, announced, received, missing })
    }

    /// Makes room for the head record and does one `read` into it.
    /// Returns what `read` returned: 0 at the end of the stream.
    ///
    /// # Panics
    /// Unless [`Inbound::head`] returned `Ok(None)` since the last read:
    /// reading is for an incomplete record.
    pub fn read_from(&mut self, source: &mut impl Read) -> io::Result<usize> {
        let live = self.end - self.start;
        let need = match self.header {
            Some(header) => header.frame_bytes(),
            None => HEADER_BYTES,
        };
        assert!(live < need, "read_from with a whole record or an unchecked header at the head: call head first");
        self.make_room(need);
        let n = source.read(&mut self.buf[self.end..])?;
        self.end += n;
        Ok(n)
    }

    /// Ensures `buf[start..]` can hold `need` bytes, with `start` in the
    /// first half of the buffer. Only the head record's bytes are live.
    fn make_room(&mut self, need: usize) {
        if need > self.buf.len() {
            let mut grown = vec![0; need.max(self.usual)];
            grown[..self.end - self.start].copy_from_slice(&self.buf[self.start..self.end]);
            self.buf = grown;
        } else if need > self.buf.len() - self.start || self.start > self.buf.len() / 2 {
            self.buf.copy_within(self.start..self.end, 0);
        } else {
            return;
        }
        self.end -= self.start;
        self.start = 0;
    }

    /// The header at the head, decoded once it is whole.
    fn head_header(&mut self) -> Result<Option<FrameHeader>, BadFrame> {
        if self.header.is_none() {
            self.header = decode_header(&self.buf[self.start..self.end])
                .map_err(|detail| BadFrame { offset: self.offset, detail })?;
        }
        Ok(self.header)
    }

    fn complete_header(&self) -> FrameHeader {
        match self.header {
            Some(header) if self.end - self.start >= header.frame_bytes() => header,
            _ => panic!("no whole record at the head of the inbound stream: consume or payload without a record"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::encode_header;

    /// Gives its bytes in chunks of the sizes listed (cycled).
    struct Chunked<'a> {
        bytes: &'a [u8],
        chunks: &'a [usize],
        next: usize,
    }

    impl Read for Chunked<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let chunk = self.chunks[self.next % self.chunks.len()].max(1);
            self.next += 1;
            let n = chunk.min(buf.len()).min(self.bytes.len());
            buf[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }

    fn frame(meta: u32, len: usize) -> Vec<u8> {
        let mut out = encode_header(&FrameHeader { len: len as u32, meta: [meta; 4] }).to_vec();
        out.extend((0..len).map(|i| (i as u32 ^ meta) as u8));
        out
    }

    fn drain(inbound: &mut Inbound, source: &mut impl Read) -> Vec<(u32, Vec<u8>)> {
        let mut got = Vec::new();
        loop {
            while let Some(header) = inbound.head().unwrap() {
                got.push((header.meta[0], inbound.payload().to_vec()));
                inbound.consume();
            }
            if inbound.read_from(source).unwrap() == 0 {
                return got;
            }
        }
    }

    #[test]
    fn records_split_anyhow_arrive_whole() {
        let lens = [0, 1, 23, 24, INBOUND_BYTES - HEADER_BYTES, INBOUND_BYTES, 3 * INBOUND_BYTES + 7, 5, 0];
        let stream: Vec<u8> = lens.iter().enumerate().flat_map(|(i, &len)| frame(i as u32, len)).collect();
        for chunks in [&[1usize][..], &[7, 3000, 1], &[INBOUND_BYTES / 2 + 1], &[usize::MAX]] {
            let mut inbound = Inbound::new();
            let got = drain(&mut inbound, &mut Chunked { bytes: &stream, chunks, next: 0 });
            assert_eq!(got.len(), lens.len(), "chunks {chunks:?}");
            for (i, (meta, payload)) in got.iter().enumerate() {
                assert_eq!((*meta, payload.clone()), (i as u32, frame(i as u32, lens[i])[HEADER_BYTES..].to_vec()));
            }
            assert_eq!(inbound.offset(), stream.len() as u64);
            assert_eq!(inbound.cut(), None);
        }
    }

    #[test]
    fn a_large_record_grows_the_buffer_which_shrinks_back_once_empty() {
        let big = 5 * INBOUND_BYTES;
        let stream = frame(1, big);
        let mut inbound = Inbound::new();
        let got = drain(&mut inbound, &mut Chunked { bytes: &stream, chunks: &[4096], next: 0 });
        assert_eq!(got[0].1.len(), big);
        assert_eq!(inbound.buf.len(), INBOUND_BYTES);
    }

    #[test]
    fn a_cut_names_its_offset_and_missing_bytes() {
        let mut stream = frame(0, 10);
        stream.extend_from_slice(&frame(1, 100)[..HEADER_BYTES + 40]);
        let mut inbound = Inbound::new();
        drain(&mut inbound, &mut Chunked { bytes: &stream, chunks: &[usize::MAX], next: 0 });
        let offset = (HEADER_BYTES + 10) as u64;
        assert_eq!(inbound.cut(), Some(Cut { offset, announced: Some(100), received: 64, missing: 60 }));

        let mut inbound = Inbound::new();
        drain(&mut inbound, &mut Chunked { bytes: &frame(0, 10)[..5], chunks: &[usize::MAX], next: 0 });
        assert_eq!(inbound.cut(), Some(Cut { offset: 0, announced: None, received: 5, missing: 19 }));
    }

    #[test]
    fn garbage_after_a_record_is_refused_at_its_offset() {
        let mut stream = frame(0, 10);
        stream.extend_from_slice(b"definitely not a frame header!");
        let mut inbound = Inbound::new();
        inbound.read_from(&mut stream.as_slice()).unwrap();
        assert!(inbound.head().unwrap().is_some());
        inbound.consume();
        let bad = inbound.head().unwrap_err();
        assert_eq!(bad.offset, (HEADER_BYTES + 10) as u64);
        assert!(matches!(bad.detail, FrameError::BadCheck { .. }));
    }

    #[test]
    #[should_panic(expected = "no whole record")]
    fn consuming_without_a_record_is_a_caller_bug() {
        Inbound::new().consume();
    }
}
