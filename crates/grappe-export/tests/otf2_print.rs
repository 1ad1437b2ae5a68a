//! A synthetic job (known events and messages) exported through libotf2
//! and read back by `otf2-print`: every call, message, collective and
//! counter is there, on the right location, in order.

mod otf2_common;

use grappe_export::otf2::{OPEN_LOCATIONS, Otf2Error};
use grappe_testkit::synthetic::{SyntheticJob, plain_header, write_events, write_job};
use grappe_trace::{Body, Completion, EventKind};
use otf2_common::*;
use std::collections::BTreeMap;

#[test]
fn a_synthetic_job_reads_back_with_every_event_counted() {
    let dir = scratch("synthetic");
    let job = SyntheticJob::new(4, 200);
    write_job(&dir.join("traces"), &job).unwrap();
    let summary = export(&dir.join("traces"), &dir.join("out"), "job").unwrap();
    assert_eq!(summary.anchor, dir.join("out/job.otf2"));
    assert!(dir.join("out/job").is_dir());
    assert_eq!(summary.locations, 4);
    assert_eq!(summary.messages, job.messages());
    assert_eq!(summary.unmatched_leaves, 0);
    // The anchor names the machine, the job and what the dates are.
    assert_eq!(anchor_field(&summary.anchor, "Machine name"), "synthetic");
    assert_eq!(anchor_field(&summary.anchor, "Property name"), "GRAPPE::JOB_ID");
    assert_eq!(anchor_field(&summary.anchor, "Property value"), "synthetic");
    assert!(anchor_field(&summary.anchor, "Description").starts_with("grappe job synthetic, 4 of 4 ranks traced"));

    let lines = events(&summary.anchor);
    let kinds = kinds(&lines);
    let count = |k: &str| kinds.get(k).copied().unwrap_or(0);
    let (ranks, iterations) = (job.ranks as u64, job.iterations);
    // Every trace event but region leaves and counters is one Enter (a
    // call, or a user region) with its Leave.
    let regions = job.events() - 2 * ranks * iterations;
    assert_eq!(count("ENTER"), regions, "{kinds:?}");
    assert_eq!(count("LEAVE"), regions, "{kinds:?}");
    assert_eq!(count("MPI_SEND") + count("MPI_ISEND"), job.messages(), "{kinds:?}");
    assert_eq!(count("MPI_RECV") + count("MPI_IRECV"), job.messages(), "{kinds:?}");
    assert_eq!(count("MPI_ISEND"), count("MPI_ISEND_COMPLETE"));
    assert_eq!(count("MPI_IRECV"), count("MPI_IRECV_REQUEST"));
    let allreduces = ranks * iterations.div_ceil(10);
    assert_eq!(count("MPI_COLLECTIVE_BEGIN"), allreduces);
    assert_eq!(count("MPI_COLLECTIVE_END"), allreduces);
    assert_eq!(count("METRIC"), ranks * iterations);
    assert_eq!(lines.len() as u64, summary.events_written, "{kinds:?}");
    assert_requests_posted(&lines);

    let per_location = check_timelines(&lines);
    let defined = defined_locations(&summary.anchor);
    assert_eq!(defined.len(), 4);
    assert_eq!(defined, per_location, "LOCATION event counts against the events printed");
    for rank in 0..job.ranks {
        // Init, finalize, allreduces, point-to-point calls (one message
        // record each), and per iteration a region and a counter.
        let collectives = iterations.div_ceil(10);
        let p2p = job.events_of(rank) - 2 - collectives - 3 * iterations;
        let expected = 2 * (2 + p2p + collectives + iterations) + p2p + 2 * collectives + iterations;
        assert_eq!(defined[&(rank as u64)], expected, "rank {rank}");
    }
}

/// An event buffer's one chunk.
const CHUNK: u64 = 4 << 20;

/// OTF2 writes a buffer out only when it cannot get another chunk: left
/// to itself, it held 128 MiB per location before the first write, so
/// the whole archive of most exports was in memory at once.
#[test]
fn a_long_trace_is_written_chunk_by_chunk_in_bounded_memory() {
    let dir = scratch("long");
    let job = SyntheticJob::new(2, 25_000);
    write_job(&dir.join("traces"), &job).unwrap();
    let summary = export(&dir.join("traces"), &dir.join("out"), "job").unwrap();
    let mut written = 0;
    for location in 0..2 {
        let evt = std::fs::metadata(dir.join(format!("out/job/{location}.evt"))).unwrap().len();
        assert!(evt > CHUNK + CHUNK / 2, "location {location}: {evt} bytes, more than one chunk to write");
        written += evt;
    }
    // Per-rank files are written a location at a time: one chunk, then
    // the definitions' buffers.
    assert!(summary.buffer_peak_bytes >= CHUNK, "{}", summary.buffer_peak_bytes);
    assert!(summary.buffer_peak_bytes <= CHUNK + (1 << 20), "{} of {written} bytes", summary.buffer_peak_bytes);

    // The chunks written as they filled read back whole and in order.
    let lines = events(&summary.anchor);
    assert_eq!(lines.len() as u64, summary.events_written);
    assert_eq!(check_timelines(&lines), defined_locations(&summary.anchor));
    let kinds = kinds(&lines);
    let sends = kinds["MPI_SEND"] + kinds.get("MPI_ISEND").unwrap_or(&0);
    assert_eq!(sends, job.messages());
}

#[test]
fn an_existing_archive_is_refused_and_left_as_it_was() {
    let dir = scratch("existing");
    write_job(&dir.join("traces"), &SyntheticJob::new(2, 5)).unwrap();
    let first = export(&dir.join("traces"), &dir.join("out"), "job").unwrap();
    let events_before = events(&first.anchor).len();

    let again = export(&dir.join("traces"), &dir.join("out"), "job").unwrap_err();
    assert!(matches!(&again, Otf2Error::Exists { path } if path == &first.anchor), "{again:?}");
    assert!(again.to_string().contains(&first.anchor.display().to_string()), "{again}");
    assert_eq!(events(&first.anchor).len(), events_before, "the first archive is intact");

    // A directory in the way, even without its anchor file.
    std::fs::create_dir_all(dir.join("out/other")).unwrap();
    let other = export(&dir.join("traces"), &dir.join("out"), "other").unwrap_err();
    assert!(matches!(&other, Otf2Error::Exists { path } if path == &dir.join("out/other")), "{other:?}");
    assert!(!dir.join("out/other.otf2").exists());

    let bad = export(&dir.join("traces"), &dir.join("out"), "a/b").unwrap_err();
    assert!(matches!(bad, Otf2Error::InvalidPath { .. }), "{bad:?}");
}

#[test]
fn a_rank_without_a_trace_keeps_its_location_with_no_events() {
    let dir = scratch("missing-rank");
    write_job(&dir.join("traces"), &SyntheticJob::new(3, 10)).unwrap();
    std::fs::remove_file(grappe_trace::file_for(&dir.join("traces"), 1)).unwrap();
    let summary = export(&dir.join("traces"), &dir.join("out"), "job").unwrap();
    let per_location = check_timelines(&events(&summary.anchor));
    let defined = defined_locations(&summary.anchor);
    assert_eq!(defined.keys().copied().collect::<Vec<_>>(), vec![0, 1, 2]);
    assert_eq!(defined[&1], 0);
    assert_eq!(defined.get(&0), per_location.get(&0));
    assert_eq!(defined.get(&2), per_location.get(&2));
    assert_eq!(
        anchor_field(&summary.anchor, "Description"),
        "grappe job synthetic, 2 of 3 ranks traced, dates on rank 0's clock (monotonic_raw)"
    );
}

#[test]
fn every_call_says_where_the_program_made_it() {
    let dir = scratch("call-sites");
    let job = SyntheticJob::new(3, 20);
    write_job(&dir.join("traces"), &job).unwrap();
    let summary = export(&dir.join("traces"), &dir.join("out"), "job").unwrap();
    let printed = otf2_print(&["-Werror"], &summary.anchor);
    let mut enters: BTreeMap<(String, Option<String>), u64> = BTreeMap::new();
    let mut lines = printed.lines().peekable();
    while let Some(line) = lines.next() {
        if !line.starts_with("ENTER ") {
            continue;
        }
        let region = between(line, "Region: \"", "\"").to_owned();
        let site = lines.next_if(|next| next.trim_start().starts_with("ADDITIONAL ATTRIBUTES:")).map(|attributes| {
            assert!(attributes.contains("(\"call site\" <0>; SOURCE_CODE_LOCATION; \""), "{attributes}");
            between(attributes, "SOURCE_CODE_LOCATION; \"", "\"").to_owned()
        });
        *enters.entry((region, site)).or_default() += 1;
    }
    // Each call's Enter carries the line it was made at (the synthetic
    // program makes each kind of call at one line); init, finalize and
    // user regions carry none.
    let expected_site = |kind: EventKind| {
        let text = grappe_testkit::synthetic::synthetic_site(kind).unwrap().text();
        Some(text.rsplit_once(':').unwrap().0.to_owned())
    };
    let calls = [
        ("MPI_Send", EventKind::Send),
        ("MPI_Recv", EventKind::Recv),
        ("MPI_Isend", EventKind::Isend),
        ("MPI_Irecv", EventKind::Irecv),
        ("MPI_Wait", EventKind::Wait),
        ("MPI_Allreduce", EventKind::Collective),
    ];
    let recorded = recorded_kinds(&dir.join("traces"), job.ranks);
    let mut expected: BTreeMap<(String, Option<String>), u64> = BTreeMap::new();
    for (region, kind) in calls {
        expected.insert((region.to_owned(), expected_site(kind)), recorded[&kind]);
    }
    for region in ["MPI_Init", "MPI_Finalize"] {
        expected.insert((region.to_owned(), None), job.ranks as u64);
    }
    expected.insert(("step".to_owned(), None), job.ranks as u64 * job.iterations);
    assert_eq!(enters, expected);
    // One source code location per line, all of them defined.
    let definitions = otf2_print(&["-G"], &summary.anchor);
    let locations = definitions.lines().filter(|l| l.starts_with("SOURCE_CODE_LOCATION ")).count();
    assert_eq!(locations, calls.len());
    assert!(definitions.contains("Name: \"call site\""), "{definitions}");
}

/// A location is named after its rank's process and, when the rank's
/// file says, the OS thread that ran it.
#[test]
fn a_location_names_the_thread_that_ran_its_rank() {
    use grappe_testkit::synthetic::{plain_header, write_events};
    use grappe_trace::format::{FileHeader, RankThread};
    let dir = scratch("threads");
    let events = [(10, 10, grappe_trace::Body::Init), (20, 20, grappe_trace::Body::Finalize)];
    let thread = Some(RankThread { tid: 4321, cpu: Some(1), ranks: vec![0] });
    let ranked = FileHeader { thread, ..plain_header(0, 2, "node") };
    std::fs::create_dir_all(dir.join("traces")).unwrap();
    write_events(&grappe_trace::file_for(&dir.join("traces"), 0), &ranked, &events).unwrap();
    write_events(&grappe_trace::file_for(&dir.join("traces"), 1), &plain_header(1, 2, "node"), &events).unwrap();
    let summary = export(&dir.join("traces"), &dir.join("out"), "job").unwrap();
    let definitions = otf2_print(&["-G"], &summary.anchor);
    let names: Vec<&str> =
        definitions.lines().filter(|l| l.starts_with("LOCATION ")).map(|l| between(l, "Name: \"", "\"")).collect();
    assert_eq!(names, ["rank 0 (pid 1000, tid 4321)", "rank 1 (pid 1001)"]);
}

/// Events of each kind in the rank files of `dir`.
fn recorded_kinds(dir: &std::path::Path, ranks: u32) -> BTreeMap<EventKind, u64> {
    let mut kinds = BTreeMap::new();
    for rank in 0..ranks {
        let mut file = grappe_trace::TraceFile::open(&grappe_trace::file_for(dir, rank)).unwrap();
        while let Some(events) = file.next_events().unwrap() {
            events.iter().for_each(|e| *kinds.entry(e.body.kind()).or_default() += 1);
        }
    }
    kinds
}

/// The text of `line` between the first `open` and the next `close`.
fn between<'a>(line: &'a str, open: &str, close: &str) -> &'a str {
    let rest = &line[line.find(open).unwrap_or_else(|| panic!("no {open} in {line}")) + open.len()..];
    &rest[..rest.find(close).unwrap_or_else(|| panic!("no {close} after {open} in {line}"))]
}

/// The value of a field of `otf2-print -I` (the anchor file).
fn anchor_field(anchor: &std::path::Path, name: &str) -> String {
    let info = otf2_print(&["-I"], anchor);
    let line = info.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("no {name} in {info}"));
    line[name.len()..].trim().to_owned()
}

/// Each location's events in order, as `otf2-print` shows them, with the
/// definitions' ids (`<12>`) left out: the two ways of writing an archive
/// number its definitions in the order they meet them.
fn timelines(lines: &[Line]) -> BTreeMap<u64, Vec<String>> {
    let mut by_location: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for l in lines {
        let mut attrs = String::with_capacity(l.attrs.len());
        let mut in_id = false;
        for c in l.attrs.chars() {
            match c {
                '<' => in_id = true,
                '>' if in_id => in_id = false,
                _ if !in_id => attrs.push(c),
                _ => {}
            }
        }
        by_location.entry(l.location).or_default().push(format!("{} {} {attrs}", l.kind, l.time));
    }
    by_location
}

/// Per-rank files are written a location at a time, a merged file a group
/// of locations at a time (its ranks come interleaved, so it is read once
/// per group): the same archive but for the definitions' numbering, and
/// one chunk held against one per location of a group (all 6 at once,
/// 4 then 2, one at a time).
#[test]
fn a_merged_trace_exports_like_its_per_rank_files() {
    let dir = scratch("merged");
    write_job(&dir.join("traces"), &SyntheticJob::new(6, 30)).unwrap();
    let set = grappe_analysis::TraceSet::open(&dir.join("traces")).unwrap();
    let time = grappe_analysis::GlobalTime::estimate(&set, &Default::default()).unwrap();
    grappe_analysis::merge_to_file(&set, &time, &dir.join("merged.gtrace"), &mut |_| {}).unwrap();

    let per_rank = export(&dir.join("traces"), &dir.join("out"), "per-rank").unwrap();
    let a = events(&per_rank.anchor);
    assert!(per_rank.buffer_peak_bytes <= CHUNK + (1 << 20), "per-rank peak {}", per_rank.buffer_peak_bytes);
    for open in [OPEN_LOCATIONS, 4, 1] {
        let name = format!("merged-by-{open}");
        let merged = export_open_at_most(&dir.join("merged.gtrace"), &dir.join("out"), &name, open).unwrap();
        assert_eq!((merged.events_written, merged.messages), (per_rank.events_written, per_rank.messages));
        assert_eq!(per_rank.stream.matched, merged.stream.matched);
        assert_eq!(per_rank.stream.unreceived_sends, merged.stream.unreceived_sends);
        let b = events(&merged.anchor);
        assert_eq!(kinds(&a), kinds(&b), "{open} open");
        assert_eq!(check_timelines(&a), check_timelines(&b), "{open} open");
        assert_eq!(timelines(&a), timelines(&b), "{open} open");
        let names = |anchor| otf2_print(&["-G"], anchor).lines().filter(|l| l.starts_with("LOCATION ")).count();
        assert_eq!(names(&merged.anchor), 6);
        assert!(otf2_print(&["-G"], &merged.anchor).contains("\"rank 2 (pid 1002)\""));
        let (peak, held) = (merged.buffer_peak_bytes, u64::from(open.min(6)) * CHUNK);
        assert!(peak >= held && peak <= held + (1 << 20), "{open} open: peak {peak}, {held} expected");
    }
}

/// An interval of a merged file (a resume point every 300 events, more
/// than the reader's batch of 256, so that the first block is partly read
/// when the window looks for its point) gives the archive its per-rank
/// files give, byte for byte: the interval before the first point, across
/// points, after the last, to past the run's end. The anchor file's trace
/// identifier, drawn by libotf2 for each archive, is the one difference.
#[test]
fn an_interval_of_a_merged_trace_exports_the_same_bytes_as_its_per_rank_files() {
    let dir = scratch("merged-interval");
    let traces = dir.join("traces");
    write_job(&traces, &SyntheticJob::distorted(4, 60)).unwrap();
    let set = grappe_analysis::TraceSet::open(&traces).unwrap();
    let time = grappe_analysis::GlobalTime::estimate(&set, &Default::default()).unwrap();
    let merged = dir.join("merged.gtrace");
    let layout = grappe_analysis::MergeLayout { block_events: 300, resume_every: 1 };
    grappe_analysis::merge_to_file_with(&set, &time, &merged, layout, &mut |_| {}).unwrap();
    let us = 1_000u64;
    for (from, to) in
        [(0, 100 * us), (50 * us, 300 * us), (400 * us, 900 * us), (1_180 * us, 2_000 * us), (0, 2_000 * us)]
    {
        let window = Window { from, to };
        let name = |input| format!("{input}-{from}-{to}");
        let per_rank = export_window(&traces, &dir.join("out"), &name("ranks"), window).unwrap();
        let resumed = export_window(&merged, &dir.join("out"), &name("merged"), window).unwrap();
        assert!(per_rank.events_written > 0, "{window:?} keeps events");
        let (a, b) = (dir.join("out").join(name("ranks")), dir.join("out").join(name("merged")));
        let (want, got) = (archive_files(&a), archive_files(&b));
        assert!(want.keys().eq(got.keys()), "{window:?}: files {:?}, not {:?}", got.keys(), want.keys());
        for (file, bytes) in &want {
            assert!(got[file] == *bytes, "{window:?}: {file} of the merged file's archive differs");
        }
        let anchor = |path| {
            otf2_print(&["-A"], path)
                .lines()
                .filter(|l| !l.starts_with("Trace identifier"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(anchor(&resumed.anchor), anchor(&per_rank.anchor), "{window:?}");
    }
}

/// Every file under an archive's directory and its global definitions,
/// by name (relative), with their bytes.
fn archive_files(dir: &std::path::Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    let global = dir.with_extension("def");
    files.insert("(global definitions)".to_owned(), std::fs::read(&global).unwrap());
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        files.insert(path.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&path).unwrap());
    }
    files
}

/// An interval of a run (`export --from --to`): a valid archive (nested,
/// nothing left open, `otf2-print -Werror` silent), every receive
/// record pairs, in channel order as readers pair them, with a send
/// written before it: a receive whose send is before the interval keeps
/// its call but not its message record; and no record completes or tests
/// a request the archive never posted.
#[test]
fn an_interval_pairs_every_receive_record_with_its_own_send() {
    let dir = scratch("interval");
    // 200 iterations of 20 µs; the interval starts and ends inside one.
    write_job(&dir.join("traces"), &SyntheticJob::new(4, 200)).unwrap();
    let window = Window { from: 1_005_000, to: 2_007_000 };
    let summary = export_window(&dir.join("traces"), &dir.join("out"), "job", window).unwrap();
    let kept = summary.stream.window.expect("a window summary");
    assert!(kept.cut_messages > 0, "the interval cuts messages: {kept:?}");
    let lines = events(&summary.anchor);
    check_timelines(&lines);

    let field = |attrs: &str, key: &str| -> String {
        let at = attrs.find(key).unwrap_or_else(|| panic!("no {key} in {attrs}")) + key.len();
        attrs[at..].split([',', ' ']).next().unwrap().to_owned()
    };
    // Per channel (sender, receiver, communicator, tag): send dates in order.
    let mut sends: BTreeMap<(u64, u64, String, String), Vec<u64>> = BTreeMap::new();
    let mut receives = Vec::new();
    for l in &lines {
        let comm = || field(&l.attrs, "Communicator: ");
        match l.kind.as_str() {
            "MPI_SEND" | "MPI_ISEND" => {
                let to = field(&l.attrs, "Receiver: ").parse().unwrap();
                sends.entry((l.location, to, comm(), field(&l.attrs, "Tag: "))).or_default().push(l.time);
            }
            "MPI_RECV" | "MPI_IRECV" => {
                let from = field(&l.attrs, "Sender: ").parse().unwrap();
                receives.push(((from, l.location, comm(), field(&l.attrs, "Tag: ")), l.time));
            }
            _ => {}
        }
    }
    assert_requests_posted(&lines);
    receives.sort_by_key(|(_, time)| *time);
    let mut next: BTreeMap<_, usize> = BTreeMap::new();
    for (channel, time) in &receives {
        let i = next.entry(channel.clone()).or_default();
        let sent = sends.get(channel).and_then(|s| s.get(*i)).copied();
        assert!(sent.is_some_and(|sent| sent <= *time), "receive at {time} on {channel:?} pairs with send {sent:?}");
        *i += 1;
    }
    assert_eq!(receives.len() as u64, summary.messages);
    assert!(summary.messages > 0);
}

/// An interval that starts between an `irecv` and its message's send:
/// the wait keeps the receive record, a plain `MPI_RECV` since the
/// request was posted before the archive starts, so the channel pairs;
/// the other rank's isend posted before the interval has its completion
/// written without a request record.
#[test]
fn a_receive_posted_before_an_interval_keeps_its_record_without_a_request() {
    let dir = scratch("posted-before");
    let t = 7_000_000_000u64;
    let got = Completion { is_recv: true, src: 0, tag: 5, bytes: 8, arrived: false };
    let sent = Completion { is_recv: false, src: 0, tag: 0, bytes: 0, arrived: false };
    let rank0 = [
        (t, t, Body::Init),
        (t + 100, t + 200, Body::Isend { dest: 1, tag: 6, comm: 0, bytes: 8, seq: 0, request: 3 }),
        (t + 2_000, t + 2_100, Body::Send { dest: 1, tag: 5, comm: 0, bytes: 8, seq: 0, failed: false, sync: false }),
        (t + 2_200, t + 2_300, Body::Wait { request: 3, comm: 0, completion: sent, failed: false }),
        (t + 3_000, t + 3_000, Body::Finalize),
    ];
    let rank1 = [
        (t, t, Body::Init),
        (t + 100, t + 200, Body::Irecv { src: 0, tag: 5, comm: 0, request: 7 }),
        (
            t + 300,
            t + 400,
            Body::Recv {
                src: 0,
                tag: 6,
                comm: 0,
                bytes: 8,
                arrived: true,
                sendrecv: false,
                failed: false,
                any_source: false,
            },
        ),
        (t + 1_900, t + 2_200, Body::Wait { request: 7, comm: 0, completion: got, failed: false }),
        (t + 3_000, t + 3_000, Body::Finalize),
    ];
    let traces = dir.join("traces");
    std::fs::create_dir_all(&traces).unwrap();
    for (rank, events) in [(0u32, &rank0), (1, &rank1)] {
        write_events(&grappe_trace::file_for(&traces, rank), &plain_header(rank, 2, "h"), events).unwrap();
    }
    let summary = export_window(&traces, &dir.join("out"), "job", Window { from: 1_000, to: 2_500 }).unwrap();
    assert_eq!(summary.messages, 1);
    let lines = events(&summary.anchor);
    check_timelines(&lines);
    let records: Vec<_> =
        lines.iter().filter(|l| l.kind.starts_with("MPI_")).map(|l| (l.kind.as_str(), l.location, l.time)).collect();
    assert_eq!(records, [("MPI_SEND", 0, t + 2_000), ("MPI_RECV", 1, t + 2_200)], "{lines:?}");
    let waits = lines.iter().filter(|l| l.kind == "ENTER" && l.attrs.contains("MPI_Wait")).count();
    assert_eq!(waits, 2, "both waits keep their regions");
}

/// Every request completed or tested on a location was posted there
/// before (by an `MPI_ISEND` or `MPI_IRECV_REQUEST`), and is completed
/// once: what Vampir follows a non-blocking call's request by.
fn assert_requests_posted(lines: &[Line]) {
    let mut posted: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    let mut completions = 0;
    for l in lines {
        let Some(at) = l.attrs.find("Request: ") else { continue };
        let request = l.attrs[at + "Request: ".len()..].split([',', ' ']).next().unwrap().to_owned();
        let open = posted.entry(l.location).or_default();
        match l.kind.as_str() {
            "MPI_ISEND" | "MPI_IRECV_REQUEST" => open.push(request),
            kind => {
                let found = open.iter().position(|r| *r == request);
                let Some(found) = found else {
                    panic!("{kind} at {} on location {} for request {request}, never posted", l.time, l.location)
                };
                if kind != "MPI_REQUEST_TEST" {
                    open.remove(found);
                    completions += 1;
                }
            }
        }
    }
    assert!(completions > 0, "the interval completes requests");
}

/// A merged trace written in passes (one per group of locations) reports
/// its progress as shares of one pass: it climbs without going back and
/// ends at the events read, whatever the passes, never at their multiple.
#[test]
fn progress_over_passes_ends_at_the_events_read() {
    let dir = scratch("progress-passes");
    let job = SyntheticJob::new(6, 30);
    write_job(&dir.join("traces"), &job).unwrap();
    let set = grappe_analysis::TraceSet::open(&dir.join("traces")).unwrap();
    let time = grappe_analysis::GlobalTime::estimate(&set, &Default::default()).unwrap();
    let merged = dir.join("merged.gtrace");
    grappe_analysis::merge_to_file(&set, &time, &merged, &mut |_| {}).unwrap();
    let set = grappe_analysis::TraceSet::open(&merged).unwrap();
    let time = grappe_analysis::GlobalTime::estimate(&set, &Default::default()).unwrap();
    for open in [OPEN_LOCATIONS, 4, 1] {
        let mut seen = Vec::new();
        let stream = || grappe_analysis::CausalStream::open(&set, &time);
        let name = format!("by-{open}");
        grappe_export::otf2::write_otf2_open_at_most(&set, &stream, &dir.join("out"), &name, open, &mut |n| {
            seen.push(n)
        })
        .unwrap();
        assert!(seen.is_sorted(), "{open} open: {seen:?}");
        assert_eq!(seen.last(), Some(&job.events()), "{open} open");
    }
}
