//! Traces written by the recorder read back exactly, whatever the events,
//! the buffer size and the flush policy; cut and corrupted files give the
//! place and the reason, never a panic.

use std::panic::Location;
use std::path::{Path, PathBuf};

use grappe_trace::alpha::CallCosts;
use grappe_trace::format::{ClockSample, Footer, IncompleteRank, RankEnding, decode_footer, encode_footer};
use grappe_trace::raw::raw_of;
use grappe_trace::{
    Body, CollectiveKind, Completion, Ending, Event, EventKind, FlushPolicy, Identity, RECORDER_BLOCK_EVENTS, RawEvent,
    Recorder, RecorderConfig, TraceError, TraceFile, file_for,
};
use proptest::prelude::*;

fn dir(name: &str) -> grappe_testkit::Scratch {
    grappe_testkit::scratch(&format!("trace-test-{name}"))
}

fn recorder(dir: &Path, policy: FlushPolicy, buffer_events: usize) -> Recorder {
    let config = RecorderConfig { dir: dir.to_owned(), policy, buffer_events, extra_cost_ns: 0 };
    Recorder::create(
        &config,
        Identity { rank: 3, world_size: 8, process_ranks: vec![3], job: "test".into(), thread: None },
        None,
    )
    .unwrap()
}

fn completion() -> impl Strategy<Value = Completion> {
    (any::<bool>(), 0u32..64, any::<i32>(), any::<u64>(), any::<bool>())
        .prop_map(|(is_recv, src, tag, bytes, arrived)| Completion { is_recv, src, tag, bytes, arrived })
}

fn body() -> impl Strategy<Value = Body> {
    let name = "[a-z]{1,12}";
    prop_oneof![
        Just(Body::Init),
        Just(Body::Finalize),
        // Sequence numbers below 2^62, as a recorder's (a failed send's bit
        // is the top one, a synchronous send's the next).
        (0u32..8, any::<i32>(), any::<u32>(), any::<u64>(), 0u64..1 << 62, any::<bool>(), any::<bool>()).prop_map(
            |(dest, tag, comm, bytes, seq, failed, sync)| Body::Send { dest, tag, comm, bytes, seq, failed, sync }
        ),
        (0u32..8, any::<i32>(), any::<u32>(), any::<u64>(), any::<[bool; 4]>()).prop_map(
            |(src, tag, comm, bytes, [arrived, sendrecv, failed, any_source])| Body::Recv {
                src,
                tag,
                comm,
                bytes,
                arrived,
                sendrecv,
                failed,
                any_source
            }
        ),
        (0u32..8, any::<i32>(), any::<u32>(), any::<u64>(), 0u64..1 << 31, 0u64..1 << 32)
            .prop_map(|(dest, tag, comm, bytes, seq, request)| Body::Isend { dest, tag, comm, bytes, seq, request }),
        (any::<u32>(), any::<u32>(), any::<u32>(), any::<u64>()).prop_map(|(src, tag, comm, request)| Body::Irecv {
            src,
            tag,
            comm,
            request
        }),
        (any::<u64>(), any::<u32>(), completion(), any::<bool>())
            .prop_map(|(request, comm, completion, failed)| { Body::Wait { request, comm, completion, failed } }),
        (any::<u64>(), any::<u32>(), proptest::option::of(completion()), any::<bool>())
            .prop_map(|(request, comm, completion, failed)| Body::Test { request, comm, completion, failed }),
        (any::<u32>(), any::<u32>(), any::<u32>(), proptest::option::of(completion()), any::<bool>())
            .prop_map(|(src, tag, comm, found, failed)| Body::Iprobe { src, tag, comm, found, failed }),
        (any::<u32>(), any::<u32>(), any::<u32>(), any::<bool>()).prop_map(|(src, tag, comm, failed)| Body::Probe {
            src,
            tag,
            comm,
            found: None,
            failed
        }),
        (1u8..=16, any::<u32>(), any::<u32>(), any::<u64>(), any::<bool>()).prop_map(
            |(op, comm, root, bytes, failed)| Body::Collective { op: collective(op), comm, root, bytes, failed }
        ),
        (any::<u32>(), any::<u32>(), proptest::collection::vec(0u32..64, 0..20))
            .prop_map(|(comm, parent, members)| Body::CommCreate { comm, parent, members: members.into() }),
        (name, name).prop_map(|(name, location)| Body::RegionEnter { name: name.into(), location: location.into() }),
        name.prop_map(|name| Body::RegionLeave { name: name.into() }),
        (name, any::<i64>()).prop_map(|(name, value)| Body::Counter { name: name.into(), value }),
    ]
}

fn collective(id: u8) -> CollectiveKind {
    CollectiveKind::from_id(id).expect("every id in 1..=16 is a collective")
}

/// Records `bodies` with increasing dates; returns what went in.
fn record_all(rec: &mut Recorder, bodies: &[(Body, u32)]) -> Vec<(Body, u64, u64)> {
    let sited: Vec<_> = bodies.iter().map(|(body, duration)| (*body, *duration, None)).collect();
    record_sited(rec, &sited)
}

/// Three call sites of this file.
fn sites() -> [&'static Location<'static>; 3] {
    #[track_caller]
    fn here() -> &'static Location<'static> {
        Location::caller()
    }
    [here(), here(), here()]
}

/// Records `bodies`, calls with the call site of the index given.
fn record_sited(rec: &mut Recorder, bodies: &[(Body, u32, Option<usize>)]) -> Vec<(Body, u64, u64)> {
    let mut out = Vec::new();
    for (body, duration, site) in bodies {
        let start = rec.now();
        let mut raw = raw_of(body, rec);
        if let Some(i) = site.filter(|_| body.kind().is_call()) {
            raw.site = rec.site(sites()[i]);
        }
        raw.start = start;
        raw.end = start + *duration as u64;
        rec.record(raw);
        out.push((*body, start, raw.end));
    }
    out
}

fn read_all(path: &Path) -> (Vec<Event>, Option<Ending>) {
    let mut trace = TraceFile::open(path).unwrap();
    let mut events = Vec::new();
    while let Some(block) = trace.next_events().unwrap() {
        events.extend(block);
    }
    (events, trace.ending().cloned())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Every event comes back with its body, rank, order and a duration
    /// equal to the recorded one (dates are converted to nanoseconds).
    #[test]
    fn any_event_sequence_round_trips(bodies in proptest::collection::vec((body(), 0u32..1_000_000, proptest::option::of(0usize..3)), 0..300), buffer in 16usize..200, policy in 0u8..2) {
        let policy = [FlushPolicy::Full, FlushPolicy::Thread][policy as usize];
        let d = dir(&format!("prop-{buffer}-{}", bodies.len()));
        let mut rec = recorder(&d, policy, buffer);
        let input = record_sited(&mut rec, &bodies);
        let footer = rec.finish().unwrap();
        let (events, ending) = read_all(&file_for(&d, 3));
        let ours: Vec<&Event> = events.iter().filter(|e| !matches!(e.body, Body::FlushBegin | Body::FlushEnd)).collect();
        prop_assert_eq!(ours.len(), input.len());
        for ((event, (body, _, _)), (_, _, site)) in ours.iter().zip(&input).zip(&bodies) {
            prop_assert_eq!(&event.body, body);
            prop_assert_eq!(event.rank, 3);
            let expected = site.filter(|_| body.kind().is_call()).map(|i| sites()[i].to_string());
            prop_assert_eq!(event.site.map(|s| s.to_string()), expected);
        }
        prop_assert!(events.windows(2).all(|w| w[0].start <= w[1].start), "dates are not in recording order");
        prop_assert_eq!(footer.events as usize, events.len());
        prop_assert_eq!(ending, Some(Ending::Complete(footer)));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Read in batches of any size, a file gives the events it gives a
    /// block at a time, in order, each batch full but the last of a
    /// block; a block read after a batch is the rest of that block.
    #[test]
    fn batches_of_any_size_read_what_blocks_read(bodies in proptest::collection::vec((body(), 0u32..1000, proptest::option::of(0usize..3)), 1..300), buffer in 16usize..80, max in 1usize..40) {
        let d = dir(&format!("batches-{buffer}-{max}-{}", bodies.len()));
        let mut rec = recorder(&d, FlushPolicy::Full, buffer);
        record_sited(&mut rec, &bodies);
        let footer = rec.finish().unwrap();
        let (mut blocks, mut expected_sizes) = (Vec::new(), Vec::new());
        let mut trace = TraceFile::open(&file_for(&d, 3)).unwrap();
        while let Some(block) = trace.next_events().unwrap() {
            let (full, rest) = (block.len() / max, block.len() % max);
            expected_sizes.extend(std::iter::repeat_n(max, full).chain((rest > 0).then_some(rest)));
            blocks.extend(block);
        }

        let mut trace = TraceFile::open(&file_for(&d, 3)).unwrap();
        let (mut batched, mut batch, mut sizes) = (Vec::new(), Vec::new(), Vec::new());
        while trace.next_batch_into(&mut batch, max).unwrap() {
            sizes.push(batch.len());
            batched.extend_from_slice(&batch);
        }
        prop_assert_eq!(&batched, &blocks);
        prop_assert_eq!(sizes, expected_sizes);
        prop_assert_eq!(trace.ending(), Some(&Ending::Complete(footer)));

        let mut trace = TraceFile::open(&file_for(&d, 3)).unwrap();
        let mut mixed = Vec::new();
        if trace.next_batch_into(&mut batch, max).unwrap() {
            mixed.extend_from_slice(&batch);
            while let Some(block) = trace.next_events().unwrap() {
                mixed.extend(block);
            }
        }
        prop_assert_eq!(&mixed, &blocks);
    }
}

/// A reader that stops decoding partway through a block and skims the rest
/// of the file decodes nothing more: the block it was in is gone.
#[test]
fn skimming_after_a_batch_leaves_no_events_to_read() {
    let d = dir("skim-after-batch");
    let mut rec = recorder(&d, FlushPolicy::Full, 16);
    record_all(&mut rec, &vec![(Body::Init, 0); 100]);
    let footer = rec.finish().unwrap();
    let mut trace = TraceFile::open(&file_for(&d, 3)).unwrap();
    let mut batch = Vec::new();
    assert!(trace.next_batch_into(&mut batch, 5).unwrap());
    assert_eq!(batch.len(), 5);
    assert!(trace.skim().unwrap() > 0);
    assert!(!trace.next_batch_into(&mut batch, 5).unwrap(), "read after the end: {batch:?}");
    assert_eq!(trace.ending(), Some(&Ending::Complete(footer)));
}

#[test]
fn a_small_buffer_flushes_between_flush_events() {
    let d = dir("flushes");
    let mut rec = recorder(&d, FlushPolicy::Full, 16);
    record_all(&mut rec, &vec![(Body::Point { name: "p".into(), location: "here".into() }, 0); 100]);
    let footer = rec.finish().unwrap();
    let (events, _) = read_all(&file_for(&d, 3));
    let flushes = events.iter().filter(|e| e.body == Body::FlushEnd).count() as u64;
    assert!(flushes >= 5, "100 events in 16-event buffers need flushes, saw {flushes}");
    assert_eq!(flushes, footer.flushes);
    let flush = events.iter().find(|e| e.body == Body::FlushEnd).unwrap();
    assert_eq!(flush.alpha_ns as u64, flush.end - flush.start, "a flush's cost is its measured duration");
}

#[test]
fn policy_end_keeps_what_fits_and_counts_the_rest() {
    let d = dir("drops");
    let mut rec = recorder(&d, FlushPolicy::End, 16);
    record_all(&mut rec, &vec![(Body::Init, 0); 40]);
    let footer = rec.finish().unwrap();
    assert_eq!((footer.events, footer.dropped), (16, 24));
    assert_eq!(read_all(&file_for(&d, 3)).0.len(), 16);
}

/// However large the buffer, the recorder writes blocks of at most
/// `RECORDER_BLOCK_EVENTS` events (a reader holds one block per file), and
/// every event reads back, in order.
#[test]
fn a_large_buffer_is_written_in_bounded_blocks() {
    let events = 2 * RECORDER_BLOCK_EVENTS + 123;
    for policy in [FlushPolicy::Full, FlushPolicy::Thread, FlushPolicy::End] {
        let d = dir(&format!("large-buffer-{policy:?}"));
        let mut rec = recorder(&d, policy, events + 16);
        let counters: Vec<_> = (0..events as i64).map(|value| (Body::Counter { name: "n".into(), value }, 0)).collect();
        record_all(&mut rec, &counters);
        let footer = rec.finish().unwrap();
        assert_eq!((footer.events, footer.flushes), (events as u64, 0), "{policy:?}");
        let mut trace = TraceFile::open(&file_for(&d, 3)).unwrap();
        let mut sizes = Vec::new();
        let mut values = Vec::new();
        while let Some(block) = trace.next_events().unwrap() {
            sizes.push(block.len());
            values.extend(block.iter().filter_map(|e| match e.body {
                Body::Counter { value, .. } => Some(value),
                _ => None,
            }));
        }
        let full = RECORDER_BLOCK_EVENTS;
        assert_eq!(sizes, [full, full, 123], "{policy:?}: block sizes");
        assert!(values.iter().copied().eq(0..events as i64), "{policy:?}: the values come back in order");
    }
}

/// A call that records two events with one start (a sendrecv) never has
/// a flush between them, wherever the buffer boundary falls: the file's
/// starts never go back, flushes included.
#[test]
fn pairs_of_events_never_straddle_a_flush() {
    for policy in [FlushPolicy::Full, FlushPolicy::Thread] {
        for singles in 0..20 {
            let d = dir(&format!("pairs-{policy:?}-{singles}"));
            let mut rec = recorder(&d, policy, 16);
            for _ in 0..singles {
                let start = rec.now();
                rec.record(RawEvent { start, end: start, kind: EventKind::Init.id(), ..RawEvent::default() });
            }
            for _ in 0..40 {
                let start = rec.now();
                std::thread::sleep(std::time::Duration::from_micros(20));
                let end = rec.now();
                let pair = |kind: EventKind| RawEvent { start, end, kind: kind.id(), ..RawEvent::default() };
                rec.record_pair(pair(EventKind::Send), pair(EventKind::Recv));
            }
            let footer = rec.finish().unwrap();
            assert!(footer.flushes > 0 && footer.dropped == 0, "{footer:?}");
            let (events, _) = read_all(&file_for(&d, 3));
            assert_eq!(events.len() as u64, singles + 80 + 2 * footer.flushes);
            for w in events.windows(2) {
                assert!(w[1].start >= w[0].start, "{policy:?}, {singles} singles: {:?} after {:?}", w[1], w[0]);
            }
        }
    }
}

#[test]
fn clock_samples_are_kept() {
    let d = dir("samples");
    let mut rec = recorder(&d, FlushPolicy::Thread, 64);
    let sample = ClockSample { peer: 2, phase: 1, t_send_ref: 10, t_recv_peer: 20, t_send_peer: 21, t_recv_ref: 35 };
    rec.write_samples(vec![sample; 3]).unwrap();
    rec.finish().unwrap();
    let mut trace = TraceFile::open(&file_for(&d, 3)).unwrap();
    trace.scan().unwrap();
    assert_eq!(trace.clock_samples(), &[sample; 3]);
}

/// A complete trace of `events` point events in 32-event buffers: its
/// directory (to hold while the file is used), path and bytes.
fn written_trace(name: &str, events: usize) -> (grappe_testkit::Scratch, PathBuf, Vec<u8>) {
    let d = dir(name);
    let mut rec = recorder(&d, FlushPolicy::Full, 32);
    record_all(&mut rec, &vec![(Body::Point { name: "p".into(), location: "l".into() }, 0); events]);
    rec.finish().unwrap();
    let path = file_for(&d, 3);
    let bytes = std::fs::read(&path).unwrap();
    (d, path, bytes)
}

#[test]
fn a_file_cut_anywhere_reads_up_to_its_last_complete_block() {
    let (_dir, path, bytes) = written_trace("cut", 200);
    let (all, _) = read_all(&path);
    let header_end = 12 + u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize;
    for cut in (header_end..bytes.len()).step_by(7) {
        std::fs::write(&path, &bytes[..cut]).unwrap();
        let (events, ending) = read_all(&path);
        assert!(events.len() <= all.len() && events[..] == all[..events.len()], "cut at {cut}: events differ");
        match ending {
            Some(Ending::Cut { offset, .. }) => assert!(offset as usize <= cut, "cut at {cut}, reported at {offset}"),
            Some(Ending::Unfinished { offset }) => assert_eq!(offset as usize, cut),
            other => panic!("cut at {cut}: ending {other:?}"),
        }
    }
}

#[test]
fn corrupted_bytes_give_the_file_and_offset() {
    let (_dir, path, bytes) = written_trace("corrupt", 200);
    let header_end = 12 + u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize;
    let last_length = last_block(&bytes, header_end) + 8;
    for at in (header_end..bytes.len()).step_by(11) {
        let mut bad = bytes.clone();
        bad[at] ^= 0x5a;
        std::fs::write(&path, &bad).unwrap();
        let mut trace = TraceFile::open(&path).unwrap();
        let result = (|| -> Result<(), TraceError> {
            while trace.next_events()?.is_some() {}
            Ok(())
        })();
        match result {
            Err(TraceError::Corrupt { path: p, offset, .. }) => {
                assert_eq!(p, path);
                assert!(offset as usize <= at + 16, "flipped byte {at}, error at {offset}");
            }
            // Only the last block's length, with no block after it to
            // tell it wrong, can turn into a cut file instead.
            Ok(()) => assert!(
                matches!(trace.ending(), Some(Ending::Cut { .. })) && (last_length..last_length + 4).contains(&at),
                "flip at {at} went unnoticed: {:?}",
                trace.ending()
            ),
            Err(other) => panic!("flip at {at}: {other}"),
        }
    }
}

/// The offset of the last block of a whole file whose blocks start at
/// `first`.
fn last_block(bytes: &[u8], first: usize) -> usize {
    let mut at = first;
    loop {
        let next = at + 16 + u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        if next >= bytes.len() {
            return at;
        }
        at = next;
    }
}

/// Every cut of a file before its header's end is named as such, with
/// the file's length, never taken for a file that is not a trace.
#[test]
fn a_file_cut_within_its_header_says_where() {
    let (_dir, path, bytes) = written_trace("header-cut", 10);
    let header_end = 12 + u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize;
    for cut in 0..header_end {
        std::fs::write(&path, &bytes[..cut]).unwrap();
        match TraceFile::open(&path) {
            Err(TraceError::HeaderCut { path: p, offset, .. }) => {
                assert_eq!((p, offset), (path.clone(), cut as u64), "cut at {cut}");
            }
            Err(other) => panic!("cut at {cut}: {other}"),
            Ok(_) => panic!("cut at {cut}: read as a trace"),
        }
    }
    // A whole file whose header length runs past its header is corrupt,
    // not cut: its rank is not to be left out as if it wrote nothing.
    let mut bad = bytes.clone();
    bad[10] ^= 0xff;
    std::fs::write(&path, &bad).unwrap();
    match TraceFile::open(&path) {
        Err(TraceError::BadHeader { offset: 8, reason, .. }) => {
            assert!(reason.contains(&format!("a header length of {}", header_end - 12)), "{reason}")
        }
        other => panic!("a corrupt header length: {:?}", other.err()),
    }
}

#[test]
fn non_traces_and_bad_headers_are_named() {
    let d = dir("headers");
    std::fs::create_dir_all(&d).unwrap();
    let path = d.join("x.gtrace");
    std::fs::write(&path, b"hello, world").unwrap();
    assert!(matches!(TraceFile::open(&path), Err(TraceError::NotATrace { .. })));
    std::fs::write(&path, b"\xf3\x9f\x00N\x1b[2Jxyz").unwrap();
    let err = TraceFile::open(&path).unwrap_err().to_string();
    assert!(err.contains("(it starts with \"\\xf3\\x9f\\x00N\\x1b[2J\", "), "binary bytes are escaped: {err}");
    std::fs::write(&path, b"GRTRACE1\x05\x00\x00\x00{nope").unwrap();
    let err = TraceFile::open(&path).unwrap_err();
    // The JSON starts at byte 12 with `{`; the `n` at 13 is what is wrong.
    assert!(matches!(err, TraceError::BadHeader { offset: 13, .. }), "{err}");
    assert!(err.to_string().contains("x.gtrace"), "{err}");
}

/// A version 2 file (before failed calls) reads as it did: its records
/// decode alike, with no call failed. Other versions are refused, naming
/// which side is too old.
#[test]
fn version_2_files_read_and_unknown_versions_are_refused() {
    let d = dir("versions");
    let mut rec = recorder(&d, FlushPolicy::Full, 32);
    let recv = Body::Recv {
        src: 1,
        tag: 7,
        comm: 0,
        bytes: 8,
        arrived: true,
        sendrecv: false,
        failed: false,
        any_source: false,
    };
    let barrier =
        Body::Collective { op: CollectiveKind::Barrier, comm: 0, root: grappe_trace::ANY, bytes: 0, failed: false };
    let sent = record_all(&mut rec, &[(recv, 10), (barrier, 20)]);
    rec.finish().unwrap();
    let path = file_for(&d, 3);
    let bytes = std::fs::read(&path).unwrap();
    // The header's JSON, `"format":3`, one digit to change in place.
    let digit = bytes.windows(10).position(|w| w == b"\"format\":3").expect("a version 3 header") + 9;
    let with_version = |version: u8| {
        let mut patched = bytes.clone();
        patched[digit] = b'0' + version;
        std::fs::write(&path, patched).unwrap();
    };
    with_version(2);
    let (events, _) = read_all(&path);
    assert_eq!(events.iter().map(|e| e.body).collect::<Vec<_>>(), sent.iter().map(|s| s.0).collect::<Vec<_>>());
    for (version, says) in [(1, "record the trace again"), (4, "written by a newer grappe")] {
        with_version(version);
        let err = TraceFile::open(&path).unwrap_err().to_string();
        assert!(err.contains(&format!("format version 2 to 3, found {version} ({says}")), "{err}");
    }
}

/// α measured again after the run goes to the footer, kind by kind: the
/// calls' from the costs measured in place, the others' from the
/// recorder's own loops.
#[test]
fn the_alpha_measured_after_the_run_reads_back_from_the_footer() {
    let d = dir("alpha-after");
    let mut rec = recorder(&d, FlushPolicy::Full, 64);
    record_all(&mut rec, &vec![(Body::Init, 0); 10]);
    rec.calibrate_after(Some(CallCosts { blocking: 31, probe: 32, nonblocking: 33 }));
    let footer = rec.finish().unwrap();
    let (_, ending) = read_all(&file_for(&d, 3));
    assert_eq!(ending, Some(Ending::Complete(footer.clone())));
    let alpha = footer.alpha_after.expect("the footer has the α after the run");
    for kind in EventKind::ALL {
        let ns = alpha[kind.id() as usize];
        match kind {
            EventKind::Probe | EventKind::Iprobe => assert_eq!(ns, 32, "{kind:?}"),
            EventKind::Isend | EventKind::Irecv | EventKind::Wait | EventKind::Test => assert_eq!(ns, 33, "{kind:?}"),
            _ if kind.is_call() => assert_eq!(ns, 31, "{kind:?}"),
            _ => assert!(ns > 0, "{kind:?}: the recorder's loop measured nothing"),
        }
    }
}

fn alpha_tables() -> impl Strategy<Value = Option<[u32; 32]>> {
    proptest::option::of(proptest::collection::vec(any::<u32>(), EventKind::ALL.len()).prop_map(|values| {
        let mut alpha = [0u32; 32];
        for (kind, ns) in EventKind::ALL.iter().zip(values) {
            alpha[kind.id() as usize] = ns;
        }
        alpha
    }))
}

fn incomplete_ranks() -> impl Strategy<Value = Vec<IncompleteRank>> {
    let rank = (any::<u32>(), any::<u64>(), proptest::option::of(".{0,40}"));
    proptest::collection::vec(rank.prop_map(|(rank, offset, cut)| IncompleteRank { rank, offset, cut }), 0..4)
}

fn rank_endings() -> impl Strategy<Value = Vec<RankEnding>> {
    let rank = (any::<u32>(), any::<u64>(), any::<u64>(), alpha_tables());
    let ending =
        rank.prop_map(|(rank, dropped, flushes, alpha_after)| RankEnding { rank, dropped, flushes, alpha_after });
    proptest::collection::vec(ending, 0..4)
}

proptest! {
    /// A footer reads back as written, with or without the α after the
    /// run, the incomplete ranks and the rank endings of a merge. Cut
    /// between two sections, it reads as the earlier versions that ended
    /// there wrote it (the later sections empty); cut anywhere else past
    /// the totals, it is an error.
    #[test]
    fn footers_round_trip_and_a_cut_one_is_an_error(
        events in any::<u64>(), dropped in any::<u64>(), flushes in any::<u64>(), alpha_after in alpha_tables(),
        incomplete in incomplete_ranks(), ranks in rank_endings(),
    ) {
        let footer = Footer { events, dropped, flushes, alpha_after, incomplete, ranks };
        let mut payload = Vec::new();
        encode_footer(&footer, &mut payload);
        prop_assert_eq!(decode_footer(&payload), Ok(footer.clone()));
        let totals_only = Footer { events, dropped, flushes, ..Footer::default() };
        let before_ranks = Footer { ranks: Vec::new(), ..footer };
        let boundaries = [(encoded_len(&totals_only) - 3, totals_only), (encoded_len(&before_ranks) - 1, before_ranks)];
        for cut in boundaries[0].0..payload.len() {
            match boundaries.iter().find(|(at, _)| *at == cut) {
                Some((_, earlier)) => prop_assert_eq!(decode_footer(&payload[..cut]), Ok(earlier.clone())),
                None => prop_assert!(decode_footer(&payload[..cut]).is_err(), "cut at {} of {}", cut, payload.len()),
            }
        }
    }
}

/// Bytes of a footer's encoding.
fn encoded_len(footer: &Footer) -> usize {
    let mut payload = Vec::new();
    encode_footer(footer, &mut payload);
    payload.len()
}

#[test]
fn a_footer_naming_an_unknown_kind_says_which_and_where() {
    let mut payload = Vec::new();
    encode_footer(&Footer { events: 1, ..Footer::default() }, &mut payload);
    payload.truncate(3); // the totals
    payload.extend([1, 99, 12, 0]); // one kind: id 99, 12 ns; no incomplete rank
    let (offset, expected) = decode_footer(&payload).unwrap_err();
    assert_eq!((offset, expected.as_str()), (5, "a known event kind id, not 99"));
}

#[test]
fn a_trace_directory_that_is_a_file_is_named_as_such() {
    let d = dir("dir-is-file");
    std::fs::create_dir_all(&d).unwrap();
    let file = d.join("rank-00000.gtrace");
    std::fs::write(&file, "").unwrap();
    let config = RecorderConfig { dir: file.clone(), policy: FlushPolicy::Full, buffer_events: 16, extra_cost_ns: 0 };
    let who = Identity { rank: 0, world_size: 1, process_ranks: vec![0], job: "test".into(), thread: None };
    let err = Recorder::create(&config, who, None).err().expect("a file is no trace directory");
    assert_eq!(err.to_string(), format!("{} is a file, not a directory", file.display()));
}

/// A distortion whose read noise is larger than the time between reads
/// (what a simulated clock with jitter is, on a fast loop).
struct Noisy;

impl grappe_trace::TimeMap for Noisy {
    fn map(&self, local_ns: u64) -> u64 {
        // ±5 µs, from the date's low bits: far more than a loop's reads apart.
        let noise = (local_ns.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 54) as i64 - 512;
        (local_ns as i64 + 10 * noise).max(0) as u64
    }
    fn describe(&self) -> String {
        "noisy".into()
    }
}

/// A simulated clock's noise is kept as read: records of one rank may be
/// dated before the one before them (what `check` reports as records out
/// of order, the reordering read noise makes), where the recorder used to
/// force them in order and hid it. Within a record, the end is never
/// before the start (the format stores the duration).
#[test]
fn a_noisy_simulated_clock_s_reordering_is_kept_for_check_to_see() {
    let d = dir("noisy-clock");
    let config =
        RecorderConfig { dir: d.to_path_buf(), policy: FlushPolicy::Full, buffer_events: 64, extra_cost_ns: 0 };
    let who = Identity { rank: 0, world_size: 1, process_ranks: vec![0], job: "noisy".into(), thread: None };
    let mut recorder = Recorder::create(&config, who, Some(std::sync::Arc::new(Noisy))).unwrap();
    for _ in 0..1000 {
        let start = recorder.now();
        let end = recorder.now();
        recorder.record(RawEvent { start, end, kind: EventKind::Init.id(), ..RawEvent::default() });
    }
    recorder.finish().unwrap();
    let events: Vec<_> = TraceFile::open(&d.join("rank-00000.gtrace")).unwrap().events().map(Result::unwrap).collect();
    assert!(events.len() >= 1000);
    let reversed = events.windows(2).filter(|pair| pair[1].start < pair[0].start).count();
    assert!(reversed > 100, "±5 µs of noise on reads ns apart reverses about half the pairs, got {reversed}");
    assert!(events.iter().all(|e| e.end >= e.start));
}
