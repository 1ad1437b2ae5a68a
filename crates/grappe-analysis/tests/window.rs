//! A causal stream narrowed to an interval of the run (what `grappe trace
//! export --from --to` reads), against what the whole stream holds.
//!
//! Random traces of nested regions, calls and instants check the rules
//! against an answer worked out from the events themselves; a synthetic
//! job with messages checks that a kept receive keeps its arrow exactly
//! when its send is kept, and that a merged file's window gives what the
//! per-rank files' one gives.

use std::path::Path;

use grappe_analysis::stream::{Window, WindowSummary};
use grappe_analysis::{
    CausalStream, GlobalOptions, GlobalTime, Linked, MergeLayout, Message, TraceSet, merge_to_file_with,
};
use grappe_testkit::synthetic::{ITERATION_NS, SyntheticJob, plain_header, write_events, write_job};
use grappe_trace::{ANY, Body, CollectiveKind, Event};
use proptest::prelude::*;

/// Where the hand-made traces start.
const T: u64 = 5_000_000_000;

fn scratch(name: &str) -> grappe_testkit::Scratch {
    grappe_testkit::scratch(&format!("window-{name}"))
}

fn open(location: &Path) -> CausalStream {
    let set = TraceSet::open(location).unwrap();
    let time = GlobalTime::estimate(&set, &GlobalOptions::default()).unwrap();
    CausalStream::open(&set, &time).unwrap()
}

/// The same window read from the trace merged into one file, with a
/// resume point every `block` events: the same events and messages in the
/// same order (message ids included), the same counts, no more read.
/// Returns what the merged file's window read.
fn merged_agrees(dir: &Path, window: Window, block: usize, kept: &[Linked], summary: WindowSummary) -> u64 {
    let merged = dir.with_extension("merged.gtrace");
    let set = TraceSet::open(dir).unwrap();
    let time = GlobalTime::estimate(&set, &GlobalOptions::default()).unwrap();
    let layout = MergeLayout { block_events: block, resume_every: 1 };
    merge_to_file_with(&set, &time, &merged, layout, &mut |_| {}).unwrap();
    let (got, got_summary) = read(open(&merged).windowed(window));
    let _ = std::fs::remove_file(&merged);
    let got_summary = got_summary.unwrap();
    assert_eq!(got, kept, "the merged file's window differs from the per-rank files' one");
    assert_eq!((got_summary.kept, got_summary.cut_messages), (summary.kept, summary.cut_messages));
    assert!(got_summary.read <= summary.read + got_summary.kept, "{got_summary:?} against {summary:?}");
    got_summary.read
}

/// The events a stream gives out, and its window's summary.
fn read(stream: CausalStream) -> (Vec<Linked>, Option<WindowSummary>) {
    let mut stream = stream;
    let events: Vec<Linked> = stream.by_ref().map(|l| l.unwrap()).collect();
    (events, stream.window_summary())
}

fn of_rank(events: &[Linked], rank: u32) -> Vec<Event> {
    events.iter().filter(|l| l.event.rank == rank).map(|l| l.event).collect()
}

/// What a rank does next, in the random traces.
#[derive(Debug, Clone)]
enum Step {
    Enter(u8),
    Leave,
    /// A barrier lasting this long.
    Call(u64),
    Point,
    Counter,
    CommCreate,
    /// Time passing.
    Gap(u64),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (0u8..3).prop_map(Step::Enter),
        3 => Just(Step::Leave),
        3 => (0u64..400).prop_map(Step::Call),
        1 => Just(Step::Point),
        1 => Just(Step::Counter),
        1 => Just(Step::CommCreate),
        3 => (1u64..300).prop_map(Step::Gap),
    ]
}

/// A rank's events from its steps: init, the steps (a leave with nothing
/// open is skipped), the regions still open left, finalize.
fn rank_events(steps: &[Step]) -> Vec<(u64, u64, Body)> {
    let mut t = T;
    let mut events = vec![(t, t, Body::Init)];
    let mut open = Vec::new();
    for step in steps {
        match step {
            Step::Enter(n) => {
                let name = ["outer", "middle", "inner"][*n as usize];
                open.push(name);
                events.push((t, t, Body::RegionEnter { name: name.into(), location: "window.rs:1:1".into() }));
            }
            Step::Leave => {
                if let Some(name) = open.pop() {
                    events.push((t, t, Body::RegionLeave { name: name.into() }));
                }
            }
            Step::Call(d) => {
                let barrier =
                    Body::Collective { op: CollectiveKind::Barrier, comm: 0, root: ANY, bytes: 0, failed: false };
                events.push((t, t + d, barrier));
                t += d;
            }
            Step::Point => events.push((t, t, Body::Point { name: "here".into(), location: "window.rs:2:1".into() })),
            Step::Counter => events.push((t, t, Body::Counter { name: "n".into(), value: t as i64 })),
            Step::CommCreate => {
                events.push((t, t + 5, Body::CommCreate { comm: 7, parent: 0, members: vec![0].into() }));
                t += 5;
            }
            Step::Gap(d) => t += d,
        }
        t += 1;
    }
    while let Some(name) = open.pop() {
        events.push((t, t, Body::RegionLeave { name: name.into() }));
    }
    events.push((t + 1, t + 1, Body::Finalize));
    events
}

/// The events of a rank the window must keep, by its rules, in call
/// order: what overlaps `[from, to)`, the regions entered before `to` and
/// left at or after `from` (both ends), and the communicator creations
/// before `from` if `anything_kept` (the window keeps some other event).
fn expected(events: &[(u64, u64, Body)], from: u64, to: u64, anything_kept: bool) -> Vec<(u64, u64, &'static str)> {
    let mut keep = vec![false; events.len()];
    let mut open = Vec::new();
    for (i, (start, end, body)) in events.iter().enumerate() {
        keep[i] = match body {
            Body::RegionEnter { .. } => {
                open.push(i);
                false // decided at its leave
            }
            Body::RegionLeave { .. } => {
                let enter = open.pop().unwrap();
                let kept = events[enter].0 < to && *start >= from;
                keep[enter] = kept;
                kept
            }
            Body::CommCreate { .. } => *start < to && (*end >= from || anything_kept),
            _ => *start < to && *end >= from,
        };
    }
    events.iter().zip(keep).filter(|(_, k)| *k).map(|((s, e, b), _)| (*s, *e, b.kind().name())).collect()
}

fn dates(events: &[Event]) -> Vec<(u64, u64, &'static str)> {
    events.iter().map(|e| (e.start, e.end, e.body.kind().name())).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Each rank keeps exactly what the rules say, in call order: so the
    /// regions kept nest and every enter kept has its leave.
    #[test]
    fn a_window_keeps_what_overlaps_it_and_the_regions_open_in_it(
        ranks in prop::collection::vec(prop::collection::vec(step(), 0..60), 1..4),
        from in 0u64..6_000,
        length in 1u64..6_000,
    ) {
        let dir = scratch("rules");
        let world = ranks.len() as u32;
        let traces: Vec<_> = ranks.iter().map(|steps| rank_events(steps)).collect();
        for (rank, events) in (0u32..).zip(&traces) {
            write_events(&grappe_trace::file_for(&dir, rank), &plain_header(rank, world, "h"), events).unwrap();
        }
        let whole = read(open(&dir)).0;
        let origin = whole.iter().map(|l| l.event.start).min().unwrap();
        prop_assert_eq!(origin, T);
        let (kept, summary) = read(open(&dir).windowed(Window { from, to: from + length }));
        let (f, t) = (T + from, T + from + length);
        let anything_kept = traces.iter().any(|events| !expected(events, f, t, false).is_empty());
        prop_assert_eq!(anything_kept, !kept.is_empty());
        for (rank, events) in (0u32..).zip(&traces) {
            // A creation before the window may come before the enters held.
            let (want_created, want): (Vec<_>, Vec<_>) =
                expected(events, f, t, anything_kept).into_iter().partition(|e| e.2 == "comm_create");
            let (created, got): (Vec<_>, Vec<_>) =
                dates(&of_rank(&kept, rank)).into_iter().partition(|e| e.2 == "comm_create");
            prop_assert_eq!(got, want, "rank {}", rank);
            prop_assert_eq!(created, want_created, "rank {}", rank);
        }
        let summary = summary.unwrap();
        merged_agrees(&dir, Window { from, to: from + length }, 4, &kept, summary);
        prop_assert_eq!(summary.kept, kept.len() as u64);
        prop_assert!(summary.read <= whole.len() as u64);
        prop_assert_eq!((summary.from_ns, summary.to_ns), (T + from, T + from + length));
    }
}

fn send_overlaps(start: u64, end: u64, from: u64, to: u64) -> bool {
    start < to && end >= from
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// On a job with messages and clocks to correct: the calls kept are
    /// the whole stream's that overlap the window, each rank in order; a
    /// kept receive is matched to the same send as in the whole stream,
    /// marked `SendOutside` exactly when that send is not kept.
    #[test]
    fn a_kept_receive_keeps_its_arrow_exactly_when_its_send_is_kept(
        from in 0u64..40 * ITERATION_NS,
        length in 1u64..8 * ITERATION_NS,
    ) {
        let dir = scratch("messages");
        let job = SyntheticJob::distorted(4, 50);
        write_job(&dir, &job).unwrap();
        let whole = read(open(&dir)).0;
        let origin = whole.iter().map(|l| l.event.start).min().unwrap();
        let (f, t) = (origin + from, origin + from + length);
        let (kept, summary) = read(open(&dir).windowed(Window { from, to: from + length }));
        let is_region = |e: &Event| matches!(e.body, Body::RegionEnter { .. } | Body::RegionLeave { .. });
        for rank in 0..job.ranks {
            let want: Vec<Event> = of_rank(&whole, rank)
                .into_iter()
                .filter(|e| !is_region(e) && e.start < t && e.end.max(e.start) >= f)
                .collect();
            let got: Vec<Event> = of_rank(&kept, rank).into_iter().filter(|e| !is_region(e)).collect();
            prop_assert_eq!(got, want, "rank {}", rank);
        }
        let mut cut = 0;
        for linked in &kept {
            let whole_message = whole.iter().find(|w| w.event == linked.event).map(|w| w.message).unwrap();
            match (linked.message, whole_message) {
                (Message::Received { send, .. }, Message::Received { send: same, .. }) => {
                    prop_assert_eq!(send, same);
                    prop_assert!(send_overlaps(send.start, send.end, f, t), "{:?} kept, its send not", linked.event);
                }
                (Message::SendOutside { send, .. }, Message::Received { send: same, .. }) => {
                    prop_assert_eq!(send, same);
                    prop_assert!(!send_overlaps(send.start, send.end, f, t), "{:?} cut, its send kept", linked.event);
                    cut += 1;
                }
                (got, want) => prop_assert_eq!(got, want),
            }
        }
        prop_assert_eq!(summary.unwrap().cut_messages, cut);
        merged_agrees(&dir, Window { from, to: from + length }, 16, &kept, summary.unwrap());
    }
}

/// A region entered before the window and left after it, with nothing
/// else of its rank inside: its leave opens it, and the enter comes out
/// first; a region entered and left before the window is not kept.
/// Reading stops there: the rank is past the window.
#[test]
fn a_region_spanning_the_window_is_kept_by_its_leave() {
    let dir = scratch("span");
    let enter = |name: &str| Body::RegionEnter { name: name.into(), location: "w.rs:1:1".into() };
    let leave = |name: &str| Body::RegionLeave { name: name.into() };
    let events = vec![
        (T, T, Body::Init),
        (T + 10, T + 10, enter("before")),
        (T + 20, T + 20, leave("before")),
        (T + 30, T + 30, enter("across")),
        (T + 5_000, T + 5_000, leave("across")),
        (T + 6_000, T + 6_000, Body::Finalize),
    ];
    write_events(&grappe_trace::file_for(&dir, 0), &plain_header(0, 1, "h"), &events).unwrap();
    let (kept, summary) = read(open(&dir).windowed(Window { from: 1_000, to: 2_000 }));
    assert_eq!(
        dates(&of_rank(&kept, 0)),
        vec![(T + 30, T + 30, "region_enter"), (T + 5_000, T + 5_000, "region_leave")]
    );
    assert!(kept.iter().all(|l| l.message == Message::None));
    let summary = summary.unwrap();
    assert_eq!((summary.read, summary.kept, summary.stopped_early), (5, 2, true));
}

/// A window late in a merged trace starts at the last resume point before
/// it: it reads a few blocks, not the run, and gives what the per-rank
/// files give (messages in flight at the point included).
#[test]
fn a_late_window_of_a_merged_trace_starts_at_a_resume_point() {
    let dir = scratch("resume");
    write_job(&dir, &SyntheticJob::distorted(4, 400)).unwrap();
    let window = Window { from: 380 * ITERATION_NS + 5_000, to: 382 * ITERATION_NS };
    let (kept, summary) = read(open(&dir).windowed(window));
    let summary = summary.unwrap();
    assert!(summary.cut_messages > 0 && kept.iter().any(|l| matches!(l.message, Message::Received { .. })));
    let read = merged_agrees(&dir, window, 64, &kept, summary);
    assert!(
        read * 10 < summary.read,
        "read {read} events from the merged file, {} from the ranks' files",
        summary.read
    );
}
