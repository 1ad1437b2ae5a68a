//! The process-wide bounds on interned texts and member lists: past them,
//! nothing more is kept, and a trace that names a text or a list defined
//! past them is refused with an error that says so (a hostile file cannot
//! make a reader hold unbounded memory).
//!
//! A file of its own: it fills the process's tables, which every other
//! test of its process would then find full.

use std::path::PathBuf;

use grappe_trace::interned::{MAX_MEMBER_BYTES, MAX_TEXT_BYTES};
use grappe_trace::{
    EventKind, FlushPolicy, Identity, Members, RawEvent, Recorder, RecorderConfig, Text, TraceError, TraceFile,
};

/// A trace of one event in `dir`, which `make` builds with the recorder's
/// own ids (the recorder keeps its strings apart from the process's tables).
fn trace_of(dir: PathBuf, make: impl FnOnce(&mut Recorder) -> RawEvent) -> PathBuf {
    let config = RecorderConfig { dir: dir.clone(), policy: FlushPolicy::Full, buffer_events: 16, extra_cost_ns: 0 };
    let mut rec = Recorder::create(
        &config,
        Identity { rank: 0, world_size: 2, process_ranks: vec![0], job: "test".into(), thread: None },
        None,
    )
    .unwrap();
    let mut raw = make(&mut rec);
    (raw.start, raw.end) = (rec.now(), rec.now());
    rec.record(raw);
    rec.finish().unwrap();
    grappe_trace::file_for(&dir, 0)
}

fn region_named(name: &'static str) -> impl FnOnce(&mut Recorder) -> RawEvent {
    move |rec| RawEvent {
        kind: EventKind::RegionEnter.id(),
        a: rec.intern(name),
        b: rec.intern("here:1"),
        ..RawEvent::default()
    }
}

fn communicator_of(members: &'static [u32]) -> impl FnOnce(&mut Recorder) -> RawEvent {
    move |rec| RawEvent { kind: EventKind::CommCreate.id(), a: 7, e: rec.members(members), ..RawEvent::default() }
}

/// Reads the whole file: `None`, or the error that stopped it.
fn read_error(path: &std::path::Path) -> Option<String> {
    let mut trace = TraceFile::open(path).unwrap();
    loop {
        match trace.next_events() {
            Ok(Some(_)) => {}
            Ok(None) => return None,
            Err(e @ TraceError::Corrupt { .. }) => return Some(e.to_string()),
            Err(other) => panic!("expected a corrupt-file error, got {other}"),
        }
    }
}

#[test]
fn past_the_bounds_nothing_is_kept_and_readers_say_why() {
    let scratch = grappe_testkit::scratch("trace-bounds");
    // Read once while there is room: their values are kept from then on.
    let known_region = trace_of(scratch.join("known-region"), region_named("step"));
    let known_comm = trace_of(scratch.join("known-comm"), communicator_of(&[1, 0]));
    assert_eq!(read_error(&known_region), None);
    assert_eq!(read_error(&known_comm), None);

    // Fill both tables, with values of 1 MiB, then of halving sizes, each
    // size until one is refused, so that the room left is a few bytes.
    // A text of `size` bytes, new: ends with the count kept so far (a
    // size holds at most two texts after the larger ones filled the room,
    // so its last digit tells them apart).
    let text = |size: usize, kept: usize| {
        let digits = format!("{kept:016}");
        if size >= 16 { digits + &" ".repeat(size - 16) } else { digits[16 - size..].to_owned() }
    };
    let mut kept = 0;
    for size in (0..=20).rev().map(|bits| 1usize << bits) {
        while Text::of(&text(size, kept)).is_some() {
            kept += 1;
            assert!(kept <= MAX_TEXT_BYTES, "more than the bound was kept");
        }
    }
    for size in (0..=18).rev().map(|bits| 1usize << bits) {
        let mut list = vec![0u32; size.max(2)];
        while Members::of(&list).is_some() {
            kept += 1;
            list[0] += 1;
            assert!(kept <= MAX_TEXT_BYTES + MAX_MEMBER_BYTES, "more than the bound was kept");
        }
    }
    // What is kept is still found; nothing new is kept.
    assert!(Text::of("step").is_some());
    assert!(Text::of("new").is_none());
    assert!(Members::of(&[9, 9, 9]).is_none());

    // Traces of values already kept still read.
    assert_eq!(read_error(&known_region), None);
    assert_eq!(read_error(&known_comm), None);

    // Traces of new values are refused, saying why.
    let new_region = read_error(&trace_of(scratch.join("new-region"), region_named("solve")));
    assert!(
        new_region.as_deref().is_some_and(|e| e.contains("name definition 0 is past the 64 MiB of distinct texts")),
        "{new_region:?}"
    );
    let new_comm = read_error(&trace_of(scratch.join("new-comm"), communicator_of(&[0, 1, 5])));
    assert!(
        new_comm.as_deref().is_some_and(|e| e.contains("members definition 0 is past the 64 MiB of distinct member")),
        "{new_comm:?}"
    );
}
