//! Feeds arbitrary bytes to both PMI wire parsers (grappe_launch::wire).
//!
//! Properties: no parser panics; a frame decoder never claims more bytes than it was given; and
//! whatever parses and can be encoded again parses back to the same message.
#![no_main]

use grappe_launch::wire::{WireMessage, pmi2, simple};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    check_simple_line(data);
    check_pmi2_frame(data);
    check_pmi2_body(data);
});

fn check_simple_line(data: &[u8]) {
    if let Ok(message) = simple::parse_line(data)
        && let Ok(line) = simple::encode_line(&message)
    {
        assert_eq!(simple::parse_line(line.as_bytes()), Ok(message));
    }
}

fn check_pmi2_frame(data: &[u8]) {
    if let Ok(Some((message, used))) = pmi2::decode_frame(data) {
        assert!(used <= data.len(), "decoder used {used} of {} bytes", data.len());
        round_trip_frame(message);
    }
}

fn check_pmi2_body(data: &[u8]) {
    if let Ok(message) = pmi2::parse_body(data) {
        round_trip_frame(message);
    }
}

fn round_trip_frame(message: WireMessage) {
    if let Ok(frame) = pmi2::encode_frame(&message) {
        let decoded = pmi2::decode_frame(frame.as_bytes());
        assert_eq!(decoded, Ok(Some((message, frame.len()))));
    }
}
