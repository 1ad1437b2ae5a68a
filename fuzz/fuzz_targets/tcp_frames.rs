//! Feeds arbitrary bytes as the inbound stream of a TCP link
//! (grappe_fabric_tcp::inbound, the code a link reads its socket with),
//! in reads of sizes taken from the input, through a buffer of a size taken
//! from the input, and to the header decoder.
//!
//! Properties: nothing panics; every record handed out is one whose header
//! decodes and whose payload is the bytes that followed it in the stream;
//! offsets only grow and account for every byte consumed; a stream that
//! ends in the middle of a frame reports exactly the bytes missing.
#![no_main]

use std::io::Read;

use grappe_fabric_tcp::inbound::Inbound;
use grappe_fabric_tcp::{FrameHeader, HEADER_BYTES, decode_header, encode_header};
use libfuzzer_sys::fuzz_target;

/// Gives the stream in reads whose sizes cycle through `sizes`.
struct Reads<'a> {
    stream: &'a [u8],
    sizes: &'a [u8],
    next: usize,
}

impl Read for Reads<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let size = match self.sizes {
            [] => usize::MAX,
            sizes => 1 + sizes[self.next % sizes.len()] as usize * 97,
        };
        self.next += 1;
        let n = size.min(buf.len()).min(self.stream.len());
        buf[..n].copy_from_slice(&self.stream[..n]);
        self.stream = &self.stream[n..];
        Ok(n)
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(Some(header)) = decode_header(data) {
        assert_eq!(encode_header(&header)[..], data[..HEADER_BYTES]);
    }
    // The first byte says how many of the next ones are read sizes, the
    // second how large the buffer is: small, so that short inputs grow,
    // compact and shrink it.
    let [split, capacity, rest @ ..] = data else { return };
    let (sizes, stream) = rest.split_at((*split as usize % 8).min(rest.len()));
    let mut inbound = Inbound::with_capacity(*capacity as usize * 4);
    let mut reads = Reads { stream, sizes, next: 0 };
    let mut offset = 0usize;
    loop {
        match inbound.head() {
            Ok(Some(header)) => {
                assert_eq!(inbound.offset(), offset as u64);
                let frame = &stream[offset..offset + header.frame_bytes()];
                assert_eq!(decode_header(frame), Ok(Some(header)));
                assert_eq!(inbound.payload(), &frame[HEADER_BYTES..]);
                inbound.consume();
                offset += header.frame_bytes();
            }
            Ok(None) => {
                if inbound.read_from(&mut reads).unwrap() == 0 {
                    break;
                }
            }
            Err(bad) => {
                assert_eq!(bad.offset, offset as u64);
                assert!(decode_header(&stream[offset..]).is_err());
                return;
            }
        }
    }
    // The stream ended: what is left is a cut frame, or nothing.
    let left = stream.len() - offset;
    match inbound.cut() {
        None => assert_eq!(left, 0),
        Some(cut) => {
            assert_eq!((cut.offset, cut.received), (offset as u64, left));
            let whole = decode_header(&stream[offset..]).ok().flatten().map_or(HEADER_BYTES, |h: FrameHeader| h.frame_bytes());
            assert_eq!(cut.missing, whole - left);
        }
    }
});
