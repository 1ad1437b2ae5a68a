//! Resume points of merged traces, as the reader sees them: reading on
//! past them changes nothing, starting at one gives what follows it, and
//! a cut or corrupt file gives a clear answer, never a panic.

use std::path::{Path, PathBuf};

use grappe_analysis::{GlobalOptions, GlobalTime, MergeLayout, TraceSet, merge_to_file, merge_to_file_with};
use grappe_testkit::synthetic::{SyntheticJob, write_job};
use grappe_trace::format::Encoded;
use grappe_trace::resume::EncodedResume;
use grappe_trace::{Ending, Event, TraceError, TraceFile, TraceWriter};

fn scratch(name: &str) -> grappe_testkit::Scratch {
    grappe_testkit::scratch(&format!("resume-{name}"))
}

/// The synthetic job merged twice: without resume points and with one
/// every 50 events.
fn merged_twice(dir: &Path) -> (PathBuf, PathBuf) {
    write_job(&dir.join("ranks"), &SyntheticJob::distorted(3, 100)).unwrap();
    let set = TraceSet::open(&dir.join("ranks")).unwrap();
    let time = GlobalTime::estimate(&set, &GlobalOptions::default()).unwrap();
    let (plain, pointed) = (dir.join("plain.gtrace"), dir.join("pointed.gtrace"));
    let none = MergeLayout { block_events: 50, resume_every: 0 };
    merge_to_file_with(&set, &time, &plain, none, &mut |_| {}).unwrap();
    merge_to_file_with(&set, &time, &pointed, MergeLayout { resume_every: 1, ..none }, &mut |_| {}).unwrap();
    (plain, pointed)
}

fn all_events(trace: &mut TraceFile) -> Result<Vec<Event>, TraceError> {
    let mut events = Vec::new();
    while let Some(block) = trace.next_events()? {
        events.extend(block);
    }
    Ok(events)
}

#[test]
fn a_reader_going_through_resume_points_reads_the_same_events() {
    let dir = scratch("same");
    let (plain, pointed) = merged_twice(&dir);
    let whole = all_events(&mut TraceFile::open(&plain).unwrap()).unwrap();
    let mut trace = TraceFile::open(&pointed).unwrap();
    assert_eq!(all_events(&mut trace).unwrap(), whole);
    assert!(matches!(trace.ending(), Some(Ending::Complete(_))));
    // One point after each block of 50 events but the last.
    assert_eq!(trace.resume_points(), (whole.len() as u64).div_ceil(50) - 1, "{} events", whole.len());
    let mut plain_trace = TraceFile::open(&plain).unwrap();
    all_events(&mut plain_trace).unwrap();
    assert_eq!(plain_trace.resume_points(), 0);
    assert!(TraceFile::open(&plain).unwrap().resume_before(u64::MAX).unwrap().is_none(), "no points, no resume");
    assert_eq!(MergeLayout::default().resume_every, 32, "the default layout writes points");
    // A merge of the default layout reads back the same (too short a job for a point).
    let set = TraceSet::open(&dir.join("ranks")).unwrap();
    let time = GlobalTime::estimate(&set, &GlobalOptions::default()).unwrap();
    merge_to_file(&set, &time, &dir.join("default.gtrace"), &mut |_| {}).unwrap();
    assert_eq!(all_events(&mut TraceFile::open(&dir.join("default.gtrace")).unwrap()).unwrap(), whole);
}

/// For dates across the run: the point given is settled before the date,
/// the events after it are the whole file's from some event on, every
/// event before them ended by the settled date, and the next point (if
/// any) is settled at or after the date.
#[test]
fn starting_at_a_resume_point_gives_what_follows_it() {
    let dir = scratch("start");
    let (_, pointed) = merged_twice(&dir);
    let whole = all_events(&mut TraceFile::open(&pointed).unwrap()).unwrap();
    let (first, last) = (whole[0].start, whole.iter().map(|e| e.end).max().unwrap());
    let mut resumed = 0;
    for step in 0..=20u64 {
        let date = first + (last - first) * step / 20;
        let mut trace = TraceFile::open(&pointed).unwrap();
        let Some(point) = trace.resume_before(date).unwrap() else {
            assert!(
                whole.iter().take(50).any(|e| e.end >= date),
                "no point before {date}, yet the first block ended by then"
            );
            continue;
        };
        resumed += 1;
        assert!(point.settled < date);
        let rest = all_events(&mut trace).unwrap();
        let skipped = &whole[..whole.len() - rest.len()];
        assert_eq!(rest, whole[skipped.len()..], "the events after the point");
        assert!(skipped.iter().all(|e| e.end <= point.settled));
        assert_eq!(skipped.iter().map(|e| e.end).max(), Some(point.settled), "settled is the latest end before it");
        // The next point would have been settled too late: it is the last one.
        if rest.len() > 50 {
            let next_block_ends = rest.iter().take(50).map(|e| e.end).max().unwrap();
            assert!(next_block_ends.max(point.settled) >= date, "a later point was settled before {date}");
        }
    }
    assert!(resumed >= 15, "resumed at {resumed} of 21 dates");
}

/// A reader part way into an events block that looks for a point and
/// finds none (a date before the first) goes on where it was: the search
/// reads over the block being decoded, which it must not lose.
#[test]
fn a_reader_that_finds_no_point_goes_on_inside_its_block() {
    let dir = scratch("stay");
    let (_, pointed) = merged_twice(&dir);
    let whole = all_events(&mut TraceFile::open(&pointed).unwrap()).unwrap();
    let mut trace = TraceFile::open(&pointed).unwrap();
    let mut first = Vec::new();
    assert!(trace.next_batch_into(&mut first, 10).unwrap());
    assert_eq!(first, whole[..10], "a batch of the first block of 50");
    assert!(trace.resume_before(whole[0].start).unwrap().is_none(), "no point settled before the first event");
    let rest = all_events(&mut trace).unwrap();
    assert_eq!(rest.len(), whole.len() - 10, "the rest of the file, the first block's included");
    assert_eq!(rest, whole[10..]);
    assert!(matches!(trace.ending(), Some(Ending::Complete(_))));
}

/// A merged file cut in the middle resumes at its last complete point
/// and reads on to the cut; one whose resume point is corrupt says
/// where. Neither panics.
#[test]
fn a_cut_or_corrupt_merged_file_is_named() {
    let dir = scratch("cut");
    let (_, pointed) = merged_twice(&dir);
    let bytes = std::fs::read(&pointed).unwrap();
    let cut = dir.join("cut.gtrace");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let mut trace = TraceFile::open(&cut).unwrap();
    let point = trace.resume_before(u64::MAX).unwrap().expect("a point before the cut");
    assert!(point.settled > 0);
    all_events(&mut trace).unwrap();
    assert!(matches!(trace.ending(), Some(Ending::Cut { .. })), "{:?}", trace.ending());

    // The first resume block's payload, one byte changed: its checksum fails.
    let at = resume_payload_offset(&bytes);
    let mut bad = bytes.clone();
    bad[at] ^= 0x40;
    let corrupt = dir.join("corrupt.gtrace");
    std::fs::write(&corrupt, &bad).unwrap();
    let err = TraceFile::open(&corrupt).unwrap().resume_before(u64::MAX).unwrap_err().to_string();
    assert!(err.contains("corrupt.gtrace") && err.contains(&at.to_string()) && err.contains("checksum"), "{err}");
}

/// A block length corrupted to run past the end of the file, over whole
/// blocks, is named, read from the start as from a resume point: the
/// search for a point passes event blocks unread (their lengths taken as
/// they are) and reads resume blocks, and the file used to read as cut
/// there, the rest of it left out.
#[test]
fn a_block_length_run_past_the_end_is_corrupt_however_the_file_is_read() {
    let dir = scratch("length");
    let (_, pointed) = merged_twice(&dir);
    let bytes = std::fs::read(&pointed).unwrap();
    let blocks = blocks_of(&bytes);
    let events: Vec<usize> = blocks.iter().filter(|b| b.1 == 2).map(|b| b.0).collect();
    let resume = blocks.iter().find(|b| b.1 == 5).unwrap().0;
    let bad = dir.join("bad.gtrace");
    for start in [events[events.len() / 2], resume] {
        let mut corrupt = bytes.clone();
        corrupt[start + 8..start + 12].copy_from_slice(&(bytes.len() as u32).to_le_bytes());
        std::fs::write(&bad, &corrupt).unwrap();
        let from_start = all_events(&mut TraceFile::open(&bad).unwrap()).unwrap_err();
        let mut trace = TraceFile::open(&bad).unwrap();
        let resumed = match trace.resume_before(u64::MAX) {
            Ok(point) => {
                assert!(point.is_some(), "a point before the block at {start}");
                all_events(&mut trace).unwrap_err()
            }
            Err(e) => e,
        };
        for err in [from_start, resumed] {
            let TraceError::Corrupt { path, offset, expected } = &err else { panic!("block at {start}: {err}") };
            assert_eq!((path, *offset), (&bad, start as u64 + 8), "{err}");
            assert!(expected.contains(&format!("found {}: the length is corrupt", bytes.len())), "{err}");
        }
    }
}

/// A resume point that holds an event ending after the date it says
/// everything before it ended by is refused, naming the file and offset:
/// a reader starting there would miss that event.
#[test]
fn a_resume_point_holding_a_later_date_is_refused() {
    let dir = scratch("late");
    let (_, pointed) = merged_twice(&dir);
    let header = TraceFile::open(&pointed).unwrap().header().clone();
    let bad = dir.join("late.gtrace");
    let mut writer = TraceWriter::create(&bad, &header).unwrap();
    let raw = grappe_trace::RawEvent { kind: grappe_trace::EventKind::Finalize.id(), ..Default::default() };
    let finalize = Encoded { rank: 0, start: 900, end: 900, alpha_ns: 0, raw };
    writer.write_resume(&EncodedResume { settled: 500, events: vec![finalize], ..Default::default() }).unwrap();
    drop(writer);
    let err = TraceFile::open(&bad).unwrap().resume_before(1_000).unwrap_err().to_string();
    assert!(
        err.contains("late.gtrace") && err.contains("settled by its date 500, not one holding a date 900"),
        "{err}"
    );
}

/// Where the first resume block's payload starts.
fn resume_payload_offset(bytes: &[u8]) -> usize {
    blocks_of(bytes).into_iter().find(|&(_, kind)| kind == 5).expect("a resume block").0 + 16
}

/// Each block's offset and kind (blocks after the header: magic, kind at
/// +4, length at +8..12, 16-byte header).
fn blocks_of(bytes: &[u8]) -> Vec<(usize, u8)> {
    let mut at = 12 + u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize;
    let mut blocks = Vec::new();
    while at < bytes.len() {
        blocks.push((at, bytes[at + 4]));
        at += 16 + u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
    }
    blocks
}
