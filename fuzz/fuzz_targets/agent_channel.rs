//! Feeds arbitrary bytes to the reader of the channel between `grappe run --hosts` and a host's
//! agent (grappe_launch::hosts::channel): what a remote shell, a banner or a broken agent may
//! print.
//!
//! Properties: the reader never panics and always stops (each frame consumes at least its
//! header); every frame it returns encodes back to the very bytes it was read from.
#![no_main]

use grappe_launch::hosts::channel::{ChannelError, FrameReader, HEADER_BYTES};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut reader = FrameReader::new(data);
    let mut at = 0;
    loop {
        match reader.next_frame() {
            Ok(frame) => {
                let bytes = frame.encode();
                assert!(bytes.len() >= HEADER_BYTES);
                assert_eq!(&data[at..at + bytes.len()], bytes.as_slice(), "frame at byte {at} re-encodes differently");
                at += bytes.len();
            }
            Err(ChannelError::Closed) => {
                assert_eq!(at, data.len());
                break;
            }
            Err(_) => break,
        }
    }
});
