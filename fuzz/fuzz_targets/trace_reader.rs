//! Trace files come from outside (a disk that filled up, a killed rank, a
//! file from another tool): arbitrary bytes must give a trace, a clear
//! error or a cut ending, never a panic, a hang or an absurd allocation.
//!
//! Three ways in: the whole reader over the bytes, the reader starting at
//! a resume point, and each block decoder over them as a payload. Whatever
//! decodes is re-encoded and must decode to the same thing.
#![no_main]

use std::io::Cursor;
use std::path::Path;

use grappe_trace::TraceFile;
use grappe_trace::format::{
    decode_definitions, decode_events, decode_samples, encode_definitions, encode_events, encode_samples,
};
use grappe_trace::resume::{decode_resume, encode_resume};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    read_whole_file(data);
    read_from_a_resume_point(data);
    if let Ok(resume) = decode_resume(data) {
        let mut again = Vec::new();
        encode_resume(&resume, &mut again);
        assert_eq!(decode_resume(&again).expect("a re-encoded resume point decodes"), resume);
    }
    if let Ok(events) = decode_events(data) {
        let mut again = Vec::new();
        encode_events(events.iter().copied(), &mut again);
        assert_eq!(decode_events(&again).expect("re-encoded events decode"), events);
        assert!(events.iter().all(|e| e.end >= e.start));
    }
    if let Ok(defs) = decode_definitions(data) {
        let mut again = Vec::new();
        encode_definitions(&defs, &mut again);
        assert_eq!(decode_definitions(&again).expect("re-encoded definitions decode"), defs);
    }
    if let Ok(samples) = decode_samples(data) {
        let mut again = Vec::new();
        encode_samples(&samples, &mut again);
        assert_eq!(decode_samples(&again).expect("re-encoded samples decode"), samples);
    }
});

fn read_whole_file(data: &[u8]) {
    let Ok(mut trace) = TraceFile::from_reader(Path::new("fuzz"), Box::new(Cursor::new(data.to_vec()))) else {
        return;
    };
    let mut events = 0usize;
    while let Ok(Some(block)) = trace.next_events() {
        events += block.len();
        assert!(block.iter().all(|e| e.end >= e.start));
    }
    // Each event takes at least 5 bytes of the file.
    assert!(events <= data.len() / 5, "{events} events from {} bytes", data.len());
}

/// The reader asked to start at a resume point settled before a date taken
/// from the bytes themselves: a point settled before it, or none, then
/// blocks read on as usual.
fn read_from_a_resume_point(data: &[u8]) {
    let date = data.iter().take(8).fold(0u64, |d, &b| d << 8 | b as u64);
    let Ok(mut trace) = TraceFile::from_reader(Path::new("fuzz"), Box::new(Cursor::new(data.to_vec()))) else {
        return;
    };
    if let Ok(Some(point)) = trace.resume_before(date) {
        assert!(point.settled < date);
        assert!(point.events.iter().all(|e| e.start <= e.end && e.end <= point.settled));
        assert!(point.in_flight.iter().all(|m| m.end <= point.settled));
    }
    while let Ok(Some(block)) = trace.next_events() {
        assert!(block.iter().all(|e| e.end >= e.start));
    }
}
