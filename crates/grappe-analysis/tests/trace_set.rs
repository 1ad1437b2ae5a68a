//! A directory of per-rank traces is read as one job only if its files
//! are of one job: files of another run, another world size or a rank
//! traced twice are refused with an error naming the file and why.

use std::path::Path;

use grappe_analysis::{CausalStream, GlobalOptions, GlobalTime, TraceSet, check, merge_to_file};
use grappe_testkit::synthetic::{plain_header, write_events};
use grappe_trace::format::{FileHeader, RankThread};
use grappe_trace::{Body, file_for};

fn scratch(name: &str) -> grappe_testkit::Scratch {
    grappe_testkit::scratch(&format!("trace-set-{name}"))
}

fn header(rank: u32, world_size: u32, job: &str) -> FileHeader {
    FileHeader { job: job.into(), ..plain_header(rank, world_size, "node") }
}

fn write(path: &Path, header: &FileHeader) {
    write_events(path, header, &[(10, 10, Body::Init), (20, 20, Body::Finalize)]).unwrap();
}

fn refusal(dir: &Path) -> String {
    match TraceSet::open(dir) {
        Ok(_) => panic!("{} was read as one job", dir.display()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn the_files_of_one_job_are_one_set_and_a_missing_rank_is_noted() {
    let dir = scratch("one-job");
    for rank in [0, 2] {
        write(&file_for(&dir, rank), &header(rank, 3, "job-a"));
    }
    let set = TraceSet::open(&dir).unwrap();
    assert_eq!((set.world_size(), set.files().len(), set.missing_ranks()), (3, 2, vec![1]));
    assert_eq!(set.notes(), ["no trace for 1 of 3 ranks (1): their events and messages are absent"]);
}

/// A rank killed as it started leaves a file cut within its header
/// (empty, or part of it): the rank is left out as if it had no file,
/// and the notes say which file and where it ends. Only files cut so
/// give up nothing else: a directory of them alone is an error.
#[test]
fn files_cut_within_their_header_are_left_out_with_a_note() {
    let dir = scratch("header-cut");
    for rank in 0..4 {
        write(&file_for(&dir, rank), &header(rank, 4, "job-a"));
    }
    std::fs::write(file_for(&dir, 1), b"").unwrap();
    let whole = std::fs::read(file_for(&dir, 3)).unwrap();
    std::fs::write(file_for(&dir, 3), &whole[..30]).unwrap();
    let set = TraceSet::open(&dir).unwrap();
    assert_eq!((set.files().len(), set.missing_ranks()), (2, vec![1, 3]));
    let notes = set.notes();
    assert_eq!(notes.len(), 3, "{notes:?}");
    assert!(notes[0].contains("rank-00001.gtrace: cut at offset 0 within its header"), "{notes:?}");
    assert!(notes[1].contains("rank-00003.gtrace: cut at offset 30 within its header"), "{notes:?}");
    assert!(notes[2].starts_with("no trace for 2 of 4 ranks (1, 3)"), "{notes:?}");
    let time = GlobalTime::estimate(&set, &GlobalOptions::default()).unwrap();
    let report = check(CausalStream::open(&set, &time).unwrap(), &mut |_| {}).unwrap();
    assert_eq!(report.events, 4, "the two whole ranks' init and finalize");

    for rank in [0, 2] {
        std::fs::write(file_for(&dir, rank), &whole[..5]).unwrap();
    }
    let err = refusal(&dir);
    assert!(err.contains("rank-00000.gtrace: cut at offset 5 within its header"), "{err}");
}

#[test]
fn a_file_left_by_another_run_is_refused_with_both_job_ids() {
    let dir = scratch("two-runs");
    write(&file_for(&dir, 0), &header(0, 2, "job-new"));
    write(&file_for(&dir, 1), &header(1, 2, "job-old"));
    let message = refusal(&dir);
    for part in ["rank-00001.gtrace", "\"job-old\"", "\"job-new\"", "rank-00000.gtrace", "two runs"] {
        assert!(message.contains(part), "{part:?} missing from: {message}");
    }
    // A file from before job ids were recorded is another job too.
    write(&file_for(&dir, 1), &header(1, 2, ""));
    assert!(refusal(&dir).contains("no id"), "{}", refusal(&dir));
}

#[test]
fn another_world_size_and_a_rank_traced_twice_are_refused() {
    let dir = scratch("sizes");
    write(&file_for(&dir, 0), &header(0, 2, "job"));
    write(&file_for(&dir, 1), &header(1, 3, "job"));
    let message = refusal(&dir);
    assert!(
        message.contains("rank-00001.gtrace") && message.contains("3-rank job among traces of a 2-rank job"),
        "{message}"
    );

    write(&file_for(&dir, 1), &header(0, 2, "job"));
    let message = refusal(&dir);
    assert!(message.contains("rank 0 is also traced in") && message.contains("rank-00000.gtrace"), "{message}");
}

/// Rank 1 of 3 has no trace: the messages it sent or was sent have no
/// other half, which `check` reports apart and does not count as
/// problems (the missing rank is one); a receive whose sender is traced
/// and never sent it still is one. The same from the merged file, which remembers who was traced.
#[test]
fn messages_of_an_untraced_rank_are_not_problems_of_the_trace() {
    let dir = scratch("untraced");
    let send = |dest, tag| Body::Send { dest, tag, comm: 0, bytes: 8, seq: 0, failed: false, sync: false };
    let recv = |src, tag| Body::Recv {
        src,
        tag,
        comm: 0,
        bytes: 8,
        arrived: false,
        sendrecv: false,
        failed: false,
        any_source: false,
    };
    let rank0 = [(10, 10, Body::Init), (20, 25, send(1, 1)), (30, 35, send(2, 2)), (90, 90, Body::Finalize)];
    let rank2 = [(10, 10, Body::Init), (40, 50, recv(0, 2)), (55, 60, recv(1, 3)), (65, 70, recv(0, 9))];
    write_events(&file_for(&dir, 0), &header(0, 3, "job"), &rank0).unwrap();
    write_events(&file_for(&dir, 2), &header(2, 3, "job"), &rank2).unwrap();

    let set = TraceSet::open(&dir).unwrap();
    let time = GlobalTime::estimate(&set, &GlobalOptions::default()).unwrap();
    let merged = dir.join("merged.out");
    merge_to_file(&set, &time, &merged, &mut |_| {}).unwrap();
    let merged_set = TraceSet::open(&merged).unwrap();
    assert_eq!(merged_set.missing_ranks(), [1]);
    let merged_time = GlobalTime::estimate(&merged_set, &GlobalOptions::default()).unwrap();
    for (set, time) in [(&set, &time), (&merged_set, &merged_time)] {
        let report = check(CausalStream::open(set, time).unwrap(), &mut |_| {}).unwrap();
        let what = set.location().display().to_string();
        assert_eq!(report.untraced_ranks, [1], "{what}");
        assert_eq!((report.receives_from_untraced, report.sends_to_untraced), (1, 1), "{what}");
        assert_eq!((report.messages, report.unmatched_receives, report.unreceived_sends), (1, 1, 0), "{what}");
        let problems = ["1 receives with no send in the trace", "1 ranks with no trace (1, see the notes)"];
        assert_eq!(report.problems(), problems, "{what}");
        let text = report.to_string();
        assert!(text.contains("not checked: 1 receives from and 1 sends to the ranks with no trace (1)"), "{text}");
        // Dated as the other tools date, from the run's first event (10).
        let unmatched = "unmatched receive: rank 0 -> rank 2 (comm 0, tag 9) ended at 0.000060 ms from the run's start";
        assert!(text.contains(unmatched), "{text}");
    }
}

/// Ranks bound to one CPU of a host, or run by one unbound thread, took
/// turns: the set says which, in per-rank files and merged alike, and the
/// profile warns that their times include each other's.
#[test]
fn ranks_that_took_turns_on_one_processor_are_grouped() {
    let dir = scratch("turns");
    let on = |rank: u32, host: &str, pid: u32, tid: u32, cpu: Option<u32>| FileHeader {
        host: host.into(),
        pid,
        thread: Some(RankThread { tid, cpu, ranks: vec![rank] }),
        ..header(rank, 7, "job-t")
    };
    let places = [
        on(0, "a", 10, 10, Some(0)),
        on(1, "a", 11, 11, Some(1)),
        on(2, "a", 12, 12, Some(0)),
        on(3, "b", 13, 13, Some(0)),
        // Two coroutines of one unbound worker thread.
        on(4, "a", 14, 15, None),
        on(5, "a", 14, 15, None),
        // A file that does not say.
        FileHeader { thread: None, ..header(6, 7, "job-t") },
    ];
    for (rank, h) in (0..).zip(&places) {
        write(&file_for(&dir, rank), h);
    }
    let set = TraceSet::open(&dir).unwrap();
    let expected = vec![vec![0, 2], vec![4, 5]];
    assert_eq!(set.turn_taking(), expected);
    let merged = dir.join("merged.gtrace");
    let time = GlobalTime::estimate(&set, &GlobalOptions::default()).unwrap();
    merge_to_file(&set, &time, &merged, &mut |_| {}).unwrap();
    let merged = TraceSet::open(&merged).unwrap();
    assert_eq!(merged.turn_taking(), expected);
    let time = GlobalTime::estimate(&merged, &GlobalOptions::default()).unwrap();
    let profile =
        grappe_analysis::profile::profile(CausalStream::open(&merged, &time).unwrap(), 7, &mut |_| {}).unwrap();
    let note = "ranks 0, 2 took turns on one processor (so did 4, 5): a call of one of them lasts while the \
                others run, so its time and waiting include theirs";
    assert!(profile.notes.iter().any(|n| n == note), "{:?}", profile.notes);
    let info = grappe_analysis::info(&set, &mut |_| {}).unwrap();
    assert!(info.notes.iter().any(|n| n == "ranks 0, 2 took turns on one processor (so did 4, 5)"), "{:?}", info.notes);
    let text = info.to_string();
    assert!(text.contains("host a pid 14, thread 15 (not bound to a cpu), clock"), "{text}");
    assert!(text.contains("host a pid 10, thread 10 on cpu 0, clock"), "{text}");
}

/// The set says which process ran which ranks, per-rank files and merged
/// alike, and so does the stream (the exports draw a process per process).
#[test]
fn the_processes_of_a_job_are_its_hosts_and_pids_in_rank_order() {
    use grappe_analysis::Process;
    let dir = scratch("processes");
    let on = |rank: u32, host: &str, pid: u32| FileHeader { host: host.into(), pid, ..header(rank, 5, "job-p") };
    // Pids repeat across hosts: a process is a host and a pid.
    let places = [on(0, "b", 7), on(1, "a", 7), on(2, "b", 7), on(3, "a", 9), on(4, "a", 7)];
    for (rank, h) in (0..).zip(&places) {
        write(&file_for(&dir, rank), h);
    }
    let process = |host: &str, pid, ranks: &[u32]| Process { host: host.into(), pid, ranks: ranks.to_vec() };
    let expected = vec![process("b", 7, &[0, 2]), process("a", 7, &[1, 4]), process("a", 9, &[3])];
    let set = TraceSet::open(&dir).unwrap();
    assert_eq!(set.processes(), expected);
    let time = GlobalTime::estimate(&set, &GlobalOptions::default()).unwrap();
    assert_eq!(CausalStream::open(&set, &time).unwrap().processes(), expected);
    let merged = dir.join("merged.gtrace");
    merge_to_file(&set, &time, &merged, &mut |_| {}).unwrap();
    let merged = TraceSet::open(&merged).unwrap();
    assert_eq!(merged.processes(), expected);
    let time = GlobalTime::estimate(&merged, &GlobalOptions::default()).unwrap();
    assert_eq!(CausalStream::open(&merged, &time).unwrap().processes(), expected);
}

/// `info`'s span puts every rank on global time: the ranks' clocks, 3 ms
/// apart, made it count their offsets (seconds, for real hosts), and the
/// per-rank files and their merged file gave different runs.
#[test]
fn info_spans_the_run_on_global_time() {
    use grappe_testkit::synthetic::{ITERATION_NS, SyntheticJob, write_job};
    let dir = scratch("info-span");
    let job = SyntheticJob::distorted(4, 100);
    write_job(&dir, &job).unwrap();
    let set = TraceSet::open(&dir).unwrap();
    let span = grappe_analysis::info(&set, &mut |_| {}).unwrap().span_ns;
    let run = 100 * ITERATION_NS;
    assert!(span.abs_diff(run) < 1_000, "{span} ns for a run of {run} ns");
    let merged = dir.join("merged.gtrace");
    let time = GlobalTime::estimate(&set, &GlobalOptions::default()).unwrap();
    merge_to_file(&set, &time, &merged, &mut |_| {}).unwrap();
    let merged_span = grappe_analysis::info(&TraceSet::open(&merged).unwrap(), &mut |_| {}).unwrap().span_ns;
    assert_eq!(merged_span, span);
}

/// Rewrites the footer of the complete rank file `path` (its last block)
/// to say its recorder dropped `dropped` events.
fn footer_with_dropped(path: &Path, dropped: u64) {
    use grappe_trace::format::{BlockKind, block_header, decode_footer, encode_footer};
    let bytes = std::fs::read(path).unwrap();
    let le = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    let mut at = 12 + le(8);
    while at + 16 + le(at + 8) < bytes.len() {
        at += 16 + le(at + 8);
    }
    assert_eq!(bytes[at + 4], BlockKind::Footer as u8, "{}: the last block is the footer", path.display());
    let mut footer = decode_footer(&bytes[at + 16..]).unwrap();
    footer.dropped = dropped;
    let mut payload = Vec::new();
    encode_footer(&footer, &mut payload);
    let block = [&block_header(BlockKind::Footer, &payload)[..], &payload].concat();
    std::fs::write(path, [&bytes[..at], &block].concat()).unwrap();
}

/// `info` on a merged file gives the events each rank's recorder dropped,
/// as it does on the rank files (it gave only their total), and says
/// which ranks' counts are unknown: those whose file was incomplete.
#[test]
fn info_gives_a_merged_file_s_dropped_events_rank_by_rank() {
    use grappe_testkit::synthetic::{SyntheticJob, write_job};
    let dir = scratch("info-dropped");
    let ranks = dir.join("ranks");
    write_job(&ranks, &SyntheticJob::new(4, 20)).unwrap();
    footer_with_dropped(&file_for(&ranks, 1), 24);
    footer_with_dropped(&file_for(&ranks, 3), 5);
    let merged = |name: &str| {
        let set = TraceSet::open(&ranks).unwrap();
        let time = GlobalTime::estimate(&set, &GlobalOptions::default()).unwrap();
        merge_to_file(&set, &time, &dir.join(name), &mut |_| {}).unwrap();
        grappe_analysis::info(&TraceSet::open(&dir.join(name)).unwrap(), &mut |_| {}).unwrap()
    };
    let dropped = |info: &grappe_analysis::TraceInfo| info.ranks.iter().map(|r| r.dropped).collect::<Vec<_>>();

    let per_rank = grappe_analysis::info(&TraceSet::open(&ranks).unwrap(), &mut |_| {}).unwrap();
    assert_eq!(dropped(&per_rank), [Some(0), Some(24), Some(0), Some(5)]);
    let info = merged("merged.gtrace");
    assert_eq!(dropped(&info), dropped(&per_rank));
    assert_eq!(info.files[0].dropped, Some(29));
    let text = info.to_string();
    assert!(text.contains("\n    dropped by rank: 0 (ranks 0, 2), 5 (rank 3), 24 (rank 1)\n"), "{text}");

    // Rank 2's file without its footer: its count is unknown.
    let bytes = std::fs::read(file_for(&ranks, 2)).unwrap();
    std::fs::write(file_for(&ranks, 2), &bytes[..bytes.len() - 1]).unwrap();
    let info = merged("cut.gtrace");
    assert_eq!(dropped(&info), [Some(0), Some(24), None, Some(5)]);
    let text = info.to_string();
    assert!(text.contains("\n    dropped by rank: 0 (rank 0), 5 (rank 3), 24 (rank 1), unknown (rank 2)\n"), "{text}");
}

/// The events a set holds are known from its files' footers before they
/// are read: the events every tool goes through, per-rank or merged; not
/// known when a file has no footer.
#[test]
fn the_events_recorded_are_those_read_and_unknown_for_a_cut_file() {
    use grappe_testkit::synthetic::{SyntheticJob, write_job};
    let dir = scratch("events-recorded");
    let traces = dir.join("traces");
    let job = SyntheticJob::new(3, 50);
    write_job(&traces, &job).unwrap();
    let set = TraceSet::open(&traces).unwrap();
    let time = GlobalTime::estimate(&set, &GlobalOptions::default()).unwrap();
    let read = check(CausalStream::open(&set, &time).unwrap(), &mut |_| {}).unwrap().events;
    assert_eq!(read, job.events());
    assert_eq!(set.events_recorded().unwrap(), Some(read));

    let merged = dir.join("merged.gtrace");
    merge_to_file(&set, &time, &merged, &mut |_| {}).unwrap();
    assert_eq!(TraceSet::open(&merged).unwrap().events_recorded().unwrap(), Some(read));

    let rank_file = file_for(&traces, 1);
    let bytes = std::fs::read(&rank_file).unwrap();
    std::fs::write(&rank_file, &bytes[..bytes.len() - 1]).unwrap();
    assert_eq!(TraceSet::open(&traces).unwrap().events_recorded().unwrap(), None);
}
