//! A file cut short against a block length corrupted past the end of the
//! file: the first reads as cut, with every event before the cut; the
//! second is an error naming the length's offset, whatever the blocks.

use std::io::Cursor;
use std::path::Path;

use proptest::prelude::*;

use super::{Ending, TraceError, TraceFile};
use crate::format::BLOCK_HEADER;
use crate::raw::raw_of;
use crate::{Body, Event, FlushPolicy, Identity, Recorder, RecorderConfig, file_for};

/// The bytes of a complete trace of `events` point events named `name`,
/// flushed every `buffer` events.
fn written(test: &str, events: usize, buffer: usize, name: &str) -> Vec<u8> {
    let dir = grappe_testkit::scratch(&format!("reader-{test}"));
    let config =
        RecorderConfig { dir: dir.to_path_buf(), policy: FlushPolicy::Full, buffer_events: buffer, extra_cost_ns: 0 };
    let who = Identity { rank: 0, world_size: 1, process_ranks: vec![0], job: "cut".into(), thread: None };
    let mut rec = Recorder::create(&config, who, None).unwrap();
    for _ in 0..events {
        let mut raw = raw_of(&Body::Point { name: name.into(), location: "l".into() }, &mut rec);
        (raw.start, raw.end) = (rec.now(), rec.now());
        rec.record(raw);
    }
    rec.finish().unwrap();
    std::fs::read(file_for(&dir, 0)).unwrap()
}

/// Each block's offset and payload length, in the order of the file.
fn blocks(bytes: &[u8]) -> Vec<(usize, usize)> {
    let le = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    let mut at = 12 + le(8);
    let mut found = Vec::new();
    while at < bytes.len() {
        found.push((at, le(at + 8)));
        at += BLOCK_HEADER + le(at + 8);
    }
    found
}

/// The events read from `bytes`, and how the reading ended: the file's
/// ending, or the error.
fn read(bytes: &[u8]) -> (Vec<Event>, Result<Ending, TraceError>) {
    let mut trace = TraceFile::from_reader(Path::new("t.gtrace"), Box::new(Cursor::new(bytes.to_vec()))).unwrap();
    let mut events = Vec::new();
    loop {
        match trace.next_events() {
            Ok(Some(block)) => events.extend(block),
            Ok(None) => return (events, Ok(trace.ending().cloned().expect("read to the end"))),
            Err(e) => return (events, Err(e)),
        }
    }
}

/// `bytes` with the length of the block at `start` set to `len`.
fn with_length(bytes: &[u8], start: usize, len: usize) -> Vec<u8> {
    let mut bad = bytes.to_vec();
    bad[start + 8..start + 12].copy_from_slice(&(len as u32).to_le_bytes());
    bad
}

/// The events of the whole blocks that end by `cut`.
fn events_before(bytes: &[u8], cut: usize) -> Vec<Event> {
    let whole = blocks(bytes).into_iter().rfind(|&(at, len)| at + BLOCK_HEADER + len <= cut);
    whole.map_or(Vec::new(), |(at, len)| read(&bytes[..at + BLOCK_HEADER + len]).0)
}

#[test]
fn a_length_run_past_the_end_with_blocks_after_it_is_corrupt() {
    let bytes = written("grown", 200, 32, "p");
    let blocks = blocks(&bytes);
    assert!(blocks.len() > 4, "definitions, events blocks and the footer: {blocks:?}");
    for &(start, len) in &blocks[..blocks.len() - 1] {
        let left = bytes.len() - start - BLOCK_HEADER;
        for grown in [left + 1, left + 5000, len | 1 << 16, len | 1 << 20] {
            let (events, result) = read(&with_length(&bytes, start, grown));
            assert_eq!(events, events_before(&bytes, start), "block at {start}: the events before it");
            match result {
                Err(TraceError::Corrupt { path, offset, expected }) => {
                    assert_eq!((path.to_str(), offset), (Some("t.gtrace"), start as u64 + 8), "{expected}");
                    let next = start + BLOCK_HEADER + len;
                    let says = format!("a block length of {len} (");
                    assert!(expected.starts_with(&says), "block at {start}: {expected}");
                    assert!(expected.contains(&format!("at offset {next}), found {grown}: ")), "{expected}");
                }
                other => panic!("block at {start}, length {len} made {grown}: {other:?}"),
            }
        }
    }
    // The last block has nothing after it to tell its length wrong.
    let (start, _) = blocks[blocks.len() - 1];
    let (events, result) = read(&with_length(&bytes, start, bytes.len()));
    assert_eq!(events, read(&bytes).0);
    assert!(matches!(result, Ok(Ending::Cut { offset, .. }) if offset == start as u64), "{result:?}");
}

/// The largest length a header may give, in a file of a few KB: read as
/// the corruption (or cut) it is, with a payload buffer the size of what
/// the file holds, not of the length.
#[test]
fn the_largest_length_in_a_short_file_costs_what_the_file_holds() {
    let bytes = written("largest", 100, 32, "p");
    let blocks = blocks(&bytes);
    for (i, &(start, _)) in blocks.iter().enumerate() {
        let bad = with_length(&bytes, start, crate::format::MAX_BLOCK);
        let mut trace = TraceFile::from_reader(Path::new("t.gtrace"), Box::new(Cursor::new(bad))).unwrap();
        let result = loop {
            match trace.next_events() {
                Ok(Some(_)) => {}
                Ok(None) => break Ok(trace.ending().cloned()),
                Err(e) => break Err(e),
            }
        };
        let last = i == blocks.len() - 1;
        assert!(
            matches!((&result, last), (Err(TraceError::Corrupt { .. }), false) | (Ok(Some(Ending::Cut { .. })), true)),
            "block at {start}: {result:?}"
        );
        assert!(trace.payload.capacity() <= super::PAYLOAD_STEP, "a {} B buffer", trace.payload.capacity());
    }
}

/// Damage other than the length (the payload ends early and later blocks
/// follow, as after a write cut short by a full disk) is corrupt too, said
/// without blaming the length alone.
#[test]
fn a_short_payload_with_blocks_after_it_is_corrupt() {
    // One events block, then the blocks that end the file: what is kept of
    // the events block and all that follows it fall short of its length.
    // What follows depends on the machine (its host name) and the dates
    // written, so the part kept is chosen from the sizes, not fixed.
    let bytes = written("short", 1000, 1000, "p");
    let blocks = blocks(&bytes);
    let (start, len) = blocks.iter().copied().max_by_key(|&(_, len)| len).unwrap();
    let payload = start + BLOCK_HEADER;
    let after = bytes.len() - (payload + len);
    assert!(
        after + BLOCK_HEADER < len / 2,
        "{blocks:?}: the events block ({len} B) outweighs what follows ({after} B)"
    );
    let kept = (len / 4).min(len - after - BLOCK_HEADER - 1);
    let bad = [&bytes[..payload + kept], &bytes[payload + len..]].concat();
    assert!(bad.len() - payload < len, "the length runs past the end");
    match read(&bad).1 {
        Err(TraceError::Corrupt { offset, expected, .. }) => {
            assert_eq!(offset, start as u64 + 8, "{expected}");
            let next = payload + kept;
            assert!(expected.starts_with(&format!("a block length within the {} bytes left", bad.len() - payload)));
            assert!(expected.contains(&format!("found {len}, yet a complete block starts at offset {next} ")));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_length_shrunk_is_corrupt() {
    let bytes = written("shrunk", 100, 32, "p");
    for (start, len) in blocks(&bytes) {
        for shrunk in [0, len / 2, len - 1] {
            match read(&with_length(&bytes, start, shrunk)).1 {
                Err(TraceError::Corrupt { offset, expected, .. }) => {
                    assert_eq!(offset, (start + BLOCK_HEADER) as u64, "{expected}");
                    assert!(expected.starts_with("a payload with checksum "), "{expected}");
                }
                other => panic!("block at {start}, length {len} made {shrunk}: {other:?}"),
            }
        }
    }
}

/// Asserts that `bytes` cut at `cut` reads as cut (or unfinished, at a
/// block's end), with every event of the blocks before.
fn assert_cut(bytes: &[u8], cut: usize) {
    let (events, result) = read(&bytes[..cut]);
    assert_eq!(events, events_before(bytes, cut), "cut at {cut}");
    let starts: Vec<usize> = blocks(bytes).iter().map(|&(at, _)| at).collect();
    match result {
        Ok(Ending::Unfinished { offset }) => assert!(starts.contains(&cut) && offset == cut as u64, "cut at {cut}"),
        Ok(Ending::Cut { offset, .. }) => {
            let block = starts.iter().rev().find(|&&at| at < cut).copied();
            assert_eq!(Some(offset as usize), block, "cut at {cut}");
        }
        other => panic!("cut at {cut}: {other:?}"),
    }
}

#[test]
fn a_file_cut_at_any_byte_after_its_header_is_cut() {
    let bytes = written("cut", 40, 16, "p");
    let header_end = blocks(&bytes)[0].0;
    for cut in header_end..bytes.len() {
        assert_cut(&bytes, cut);
    }
}

/// A payload cut short that spells a block header, even one whose length
/// fits, is still a cut: the header's checksum must match too.
#[test]
fn a_header_spelled_in_a_cut_payload_is_not_taken_for_a_block() {
    // "GRBK", events, reserved, 4 bytes, a checksum that is not theirs.
    let name = "GRBK\u{2}\0\0\0\u{4}\0\0\0\u{1}\u{2}\u{3}\u{4}abcd";
    let bytes = written("spelled", 10, 16, name);
    let blocks = blocks(&bytes);
    let magics = bytes.windows(4).enumerate().filter(|(_, w)| *w == b"GRBK");
    let spelled: Vec<usize> = magics.map(|(at, _)| at).filter(|at| !blocks.iter().any(|b| b.0 == *at)).collect();
    assert_eq!(spelled.len(), 1, "the name is defined once");
    let head = bytes[spelled[0]..][..BLOCK_HEADER].try_into().unwrap();
    assert!(super::parse_head(head).is_ok(), "the name spells a block header");
    let (start, len) = *blocks.iter().rfind(|b| b.0 < spelled[0]).unwrap();
    // From the first cut that leaves the spelled block whole.
    for cut in spelled[0] + BLOCK_HEADER + 4..start + BLOCK_HEADER + len {
        assert_cut(&bytes, cut);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// However many blocks, wherever the cut: a cut.
    #[test]
    fn a_file_cut_anywhere_is_never_corrupt(events in 1usize..200, buffer in 16usize..64, cut in 0.0..1.0f64) {
        let bytes = written("cut-anywhere", events, buffer, "p");
        let header_end = blocks(&bytes)[0].0;
        let cut = header_end + ((bytes.len() - header_end) as f64 * cut) as usize;
        assert_cut(&bytes, cut);
    }

    /// Any other length for a block followed by a whole one: corrupt.
    #[test]
    fn any_wrong_length_before_a_whole_block_is_corrupt(
        events in 1usize..200,
        buffer in 16usize..64,
        which in any::<prop::sample::Index>(),
        // Past 1 MiB, every length runs past the end of these files alike.
        wrong in prop_oneof![0usize..4096, 0usize..1 << 20],
    ) {
        let bytes = written("wrong-length", events, buffer, "p");
        let blocks = blocks(&bytes);
        let (start, len) = blocks[which.index(blocks.len() - 1)];
        prop_assume!(wrong != len);
        let (_, result) = read(&with_length(&bytes, start, wrong));
        prop_assert!(matches!(result, Err(TraceError::Corrupt { .. })), "block at {}: {:?}", start, result);
    }
}

/// The footer read from the end of `bytes`.
fn footer_from_end(bytes: &[u8]) -> Option<crate::Footer> {
    let trace = TraceFile::from_reader(Path::new("t.gtrace"), Box::new(Cursor::new(bytes.to_vec()))).unwrap();
    trace.footer_from_end().unwrap()
}

/// A complete file's footer is read from its end as reading the whole
/// file reads it; a file cut anywhere has none, even where its last
/// bytes spell a footer's header (a point's name here).
#[test]
fn the_footer_is_read_from_the_end_of_a_complete_file_only() {
    let name = "GRBK\u{4}\0\0\0\u{4}\0\0\0\u{1}\u{2}\u{3}\u{4}abcd";
    let bytes = written("footer-from-end", 40, 16, name);
    let (events, ending) = read(&bytes);
    let Ok(Ending::Complete(footer)) = ending else { panic!("a complete file: {ending:?}") };
    assert_eq!(footer.events, events.len() as u64);
    assert_eq!(footer_from_end(&bytes), Some(footer));
    let header_end = blocks(&bytes)[0].0;
    for cut in header_end..bytes.len() {
        assert_eq!(footer_from_end(&bytes[..cut]), None, "cut at {cut}");
    }
}

/// A FIFO named like a trace is refused, naming it, instead of waiting
/// for a writer that never comes.
#[test]
fn a_fifo_is_refused_not_waited_on() {
    let dir = grappe_testkit::scratch("reader-fifo");
    let fifo = file_for(&dir, 0);
    let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0, "{}", std::io::Error::last_os_error());
    let (tx, rx) = std::sync::mpsc::channel();
    let opening = fifo.clone();
    std::thread::spawn(move || tx.send(TraceFile::open(&opening).map(|_| ())));
    let opened = match rx.recv_timeout(std::time::Duration::from_secs(60)) {
        Ok(opened) => opened,
        Err(_) => {
            // Frees the blocked open (a writer arrives), then fails.
            let _writer = std::fs::OpenOptions::new().write(true).open(&fifo);
            panic!("opening a FIFO waited for a writer");
        }
    };
    let err = opened.expect_err("a FIFO is not a trace file");
    assert!(matches!(err, TraceError::NotAFile { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        format!("{}: a FIFO (named pipe), not a regular file (trace files are regular files)", fifo.display())
    );
}
