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
    let mut events = Vec::new();
    let whole = loop {
        match trace.next_events() {
            Ok(Some(block)) => events.extend(block),
            Ok(None) => break true,
            Err(_) => break false,
        }
    };
    assert!(events.iter().all(|e| e.end >= e.start));
    // Each event takes at least 5 bytes of the file.
    assert!(events.len() <= data.len() / 5, "{} events from {} bytes", events.len(), data.len());
    read_in_batches(data, &events, whole);
}

/// The same file read a few events at a time (a size taken from the
/// bytes): never more than asked, and, where the blocks read without an
/// error, the same events.
fn read_in_batches(data: &[u8], by_block: &[grappe_trace::Event], whole: bool) {
    let max = data.last().map_or(1, |&b| b as usize % 9 + 1);
    let Ok(mut trace) = TraceFile::from_reader(Path::new("fuzz"), Box::new(Cursor::new(data.to_vec()))) else {
        unreachable!("the header read a moment ago");
    };
    let (mut events, mut batch) = (Vec::new(), Vec::new());
    while let Ok(true) = trace.next_batch_into(&mut batch, max) {
        assert!(!batch.is_empty() && batch.len() <= max, "{} events, {max} asked", batch.len());
        events.extend_from_slice(&batch);
    }
    if whole {
        assert_eq!(events, by_block);
    }
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
