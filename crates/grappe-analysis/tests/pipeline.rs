//! The shared pipeline on synthetic jobs, whose messages and clock
//! distortions are known: global time, the causal stream, matching,
//! `check` and `merge`.

use std::path::Path;

use grappe_analysis::{
    Basis, CausalStream, GlobalOptions, GlobalTime, Layout, Message, TraceSet, check, merge_date, merge_to_file,
};
use grappe_clock::{Estimator, Strategy, Warning};
use grappe_testkit::synthetic::{SyntheticJob, T0, plain_header, write_events, write_job};
use grappe_trace::{ANY, Body, CollectiveKind};

fn scratch(name: &str) -> grappe_testkit::Scratch {
    grappe_testkit::scratch(&format!("pipeline-{name}"))
}

fn open(dir: &Path, options: &GlobalOptions) -> (TraceSet, GlobalTime) {
    let set = TraceSet::open(dir).unwrap();
    let time = GlobalTime::estimate(&set, options).unwrap();
    (set, time)
}

fn distorted(ranks: u32, iterations: u64) -> SyntheticJob {
    SyntheticJob::distorted(ranks, iterations)
}

#[test]
fn the_stream_of_a_one_host_job_is_causal_matched_and_complete() {
    let dir = scratch("one-host");
    let job = SyntheticJob::new(5, 300);
    write_job(&dir, &job).unwrap();
    let (set, time) = open(&dir, &GlobalOptions::default());
    assert_eq!(set.layout(), Layout::PerRank);
    assert!(time.rank(0).is_some_and(|t| t.basis == Basis::Reference));
    for r in 1..5 {
        assert_eq!(time.rank(r).unwrap().basis, Basis::SharedClock, "rank {r}");
    }
    let mut events = 0u64;
    let mut last = 0u64;
    let mut sent = std::collections::HashSet::new();
    for linked in CausalStream::open(&set, &time).unwrap() {
        let linked = linked.unwrap();
        events += 1;
        let date = merge_date(&linked.event);
        assert!(date >= last, "event {events} at {date} after one at {last}");
        last = date;
        match linked.message {
            Message::Sent { id, .. } => assert!(sent.insert(id)),
            Message::Received { send, .. } => assert!(sent.contains(&send.id), "a receive before its send"),
            Message::Unmatched { channel } => panic!("unmatched receive on {channel:?}"),
            Message::SendOutside { channel, .. } => panic!("a window on a whole stream, on {channel:?}"),
            Message::None => {}
        }
    }
    assert_eq!(events, job.events());
    assert_eq!(sent.len() as u64, job.messages());
    let report = check(CausalStream::open(&set, &time).unwrap(), &mut |_| {}).unwrap();
    assert!(report.problems().is_empty(), "{report}");
    assert_eq!(report.messages, job.messages());
    assert_eq!(report.stream.deferred, 0);
}

#[test]
fn distorted_clocks_are_recovered_within_their_confidence_intervals() {
    let dir = scratch("distorted");
    let job = distorted(4, 2_000);
    write_job(&dir, &job).unwrap();
    // Student intervals hold for OLS on independent noise; the running
    // median correlates neighbouring points and narrows them (it is for
    // outliers, which this job has none of).
    let mut options = GlobalOptions::default();
    options.fit.median_window = None;
    let (set, time) = open(&dir, &options);
    let report = time.report.as_ref().expect("three estimated peers");
    assert_eq!(report.peers.len(), 3);
    for (peer, r) in report.peers.iter().zip(1u32..) {
        assert_eq!(time.rank(r).unwrap().basis, Basis::Estimated { strategy: Strategy::SampleBeforeAfter });
        let truth = job.clocks[r as usize];
        let origin = peer.fit.model.origin_ns as f64;
        let offset_at_origin = truth.offset_ns as f64 + truth.drift_ppm * 1e-6 * (origin - T0 as f64);
        assert!(peer.fit.offset.contains(offset_at_origin), "rank {r}: {:?} vs {offset_at_origin}", peer.fit.offset);
        assert!(peer.fit.drift.contains(truth.drift_ppm * 1e-6), "rank {r}: {:?}", peer.fit.drift);
    }
    let check = check(CausalStream::open(&set, &time).unwrap(), &mut |_| {}).unwrap();
    assert!(check.problems().is_empty(), "{check}");
    assert_eq!(check.messages, job.messages());
}

/// A job sampled with fewer points than the median window: Dunigan's
/// default window narrows to the samples (with a note) and the clocks are
/// still estimated; the same window asked for is the caller's error, named.
#[test]
fn a_median_window_wider_than_the_samples_narrows_by_default_and_is_refused_when_asked() {
    let dir = scratch("narrow-window");
    let mut job = distorted(3, 200);
    job.sample_points = 4;
    write_job(&dir, &job).unwrap();
    let mut dunigan = GlobalOptions::default();
    dunigan.fit.estimator = Estimator::Dunigan;
    let (_, time) = open(&dir, &dunigan);
    for rank in 1..3 {
        let basis = &time.rank(rank).unwrap().basis;
        assert_eq!(*basis, Basis::Estimated { strategy: Strategy::SampleBeforeAfter }, "rank {rank}");
        let note = format!("rank {rank}: median window narrowed from 5 to 3 (its before phase has 4 clock samples)");
        assert!(time.notes.contains(&note), "{:?}", time.notes);
    }
    let set = TraceSet::open(&dir).unwrap();
    let asked = GlobalOptions { window_asked: true, ..dunigan };
    let err = GlobalTime::estimate(&set, &asked).unwrap_err().to_string();
    let expected = "median window 5 is larger than the 4 clock samples of rank 1's before phase (it can be at most 3)";
    assert_eq!(err, expected);
}

/// Three exchanges a phase, the fewest the runtime takes: the default
/// estimator fits every rank, SBA and SB alike, its intervals holding the
/// truth. Dunigan's median window, narrowed to 3, leaves one point a
/// phase, too few for a line: the analysis says so and uses the robust
/// estimator instead, rather than leave the dates on local clocks.
#[test]
fn three_exchanges_a_phase_are_enough_for_the_default_and_a_failing_estimator_falls_back() {
    let dir = scratch("three-points");
    let mut job = distorted(4, 200);
    job.sample_points = 3;
    write_job(&dir, &job).unwrap();
    for strategy in [Strategy::SampleBeforeAfter, Strategy::SampleBefore] {
        let mut options = GlobalOptions::default();
        options.fit.strategy = strategy;
        let (_, time) = open(&dir, &options);
        assert!(time.uncorrected().is_empty() && time.notes.is_empty(), "{strategy}: {:?}", time.notes);
        let report = time.report.as_ref().expect("three estimated peers");
        for (peer, r) in report.peers.iter().zip(1u32..) {
            let truth = job.clocks[r as usize];
            let origin = peer.fit.model.origin_ns as f64;
            let offset_at_origin = truth.offset_ns as f64 + truth.drift_ppm * 1e-6 * (origin - T0 as f64);
            assert!(peer.fit.offset.contains(offset_at_origin), "{strategy} rank {r}: {:?}", peer.fit.offset);
            assert!(peer.fit.drift.contains(truth.drift_ppm * 1e-6), "{strategy} rank {r}: {:?}", peer.fit.drift);
        }
    }
    let mut dunigan = GlobalOptions::default();
    dunigan.fit.estimator = Estimator::Dunigan;
    let (_, time) = open(&dir, &dunigan);
    assert!(time.uncorrected().is_empty(), "{:?}", time.notes);
    for rank in 1..4 {
        let said = format!("rank {rank}: the dunigan estimator cannot fit its clock (too few points");
        assert!(time.notes.iter().any(|n| n.starts_with(&said)), "{:?}", time.notes);
    }
}

#[test]
fn sb_extrapolation_makes_tachyons_on_a_long_run_where_sba_makes_none() {
    let dir = scratch("sb-sba");
    let mut job = distorted(4, 20_000);
    job.sample_points = 10;
    write_job(&dir, &job).unwrap();
    let sba = GlobalOptions::default();
    let mut sb = GlobalOptions::default();
    sb.fit.strategy = Strategy::SampleBefore;
    let tachyons = |options: &GlobalOptions| {
        let (set, time) = open(&dir, options);
        let report = check(CausalStream::open(&set, &time).unwrap(), &mut |_| {}).unwrap();
        assert_eq!(report.messages, job.messages(), "every message matched whatever the clocks");
        assert_eq!(report.unmatched_receives, 0);
        report.tachyons
    };
    let (with_sb, with_sba) = (tachyons(&sb), tachyons(&sba));
    assert!(with_sb > 0, "SB extrapolated over 0.4 s should misdate some messages");
    assert_eq!(with_sba, 0);
    // The clock report foresaw it: SB's predicted error at the end of the
    // run exceeds the smallest latency, for every estimated rank, with a
    // warning; SBA's stays within its samples and gets none.
    let predicted = |options: &GlobalOptions| {
        let (_, time) = open(&dir, options);
        let report = time.report.expect("estimated ranks");
        let warned = report.warnings.iter().filter(|w| matches!(w, Warning::DatingErrorAboveLatency { .. })).count();
        let worst = report.trust.iter().map(|t| t.worst_ns).fold(0.0, f64::max);
        (warned, worst)
    };
    let ((sb_warned, sb_worst), (sba_warned, sba_worst)) = (predicted(&sb), predicted(&sba));
    eprintln!("predicted worst dating error: SB {sb_worst:.0} ns, SBA {sba_worst:.0} ns");
    assert_eq!((sb_warned, sba_warned), (3, 0));
    assert!(sb_worst > 10.0 * sba_worst, "SB {sb_worst} ns, SBA {sba_worst} ns");
}

#[test]
fn without_global_time_the_merge_defers_receives_and_still_matches_everything() {
    let dir = scratch("raw-dates");
    let job = distorted(4, 200);
    write_job(&dir, &job).unwrap();
    let (set, time) = local_dates(&dir);
    let report = check(CausalStream::open(&set, &time).unwrap(), &mut |_| {}).unwrap();
    assert!(report.tachyons > 0);
    assert!(report.stream.deferred > 0);
    assert_eq!((report.messages, report.unmatched_receives, report.unreceived_sends), (job.messages(), 0, 0));
}

/// The set in `dir` on each rank's own dates: pretending every rank
/// shares rank 0's clock, the synthetic offsets stay.
fn local_dates(dir: &Path) -> (TraceSet, GlobalTime) {
    let set = TraceSet::open(dir).unwrap();
    let mut time = GlobalTime::estimate(&set, &GlobalOptions::default()).unwrap();
    for rank in time.ranks.iter_mut().flatten() {
        rank.model = grappe_clock::ClockModel::identity();
    }
    (set, time)
}

/// The events of `rank` in a stream, in order.
fn of_rank(stream: &[grappe_analysis::Linked], rank: u32) -> Vec<grappe_trace::Event> {
    stream.iter().filter(|l| l.event.rank == rank).map(|l| l.event).collect()
}

/// Dates left with tachyons (each rank's own clock, 3 ms apart): the
/// controlled logical clock moves every receive after its send, by the
/// minimum latency, and each rank's events after such a receive move as
/// much, so that the rank's intervals are those recorded and only the
/// moved receives last longer.
#[test]
fn the_controlled_logical_clock_repairs_every_tachyon_and_keeps_each_rank_s_intervals() {
    let dir = scratch("clc");
    let job = distorted(4, 200);
    write_job(&dir, &job).unwrap();
    let (set, mut time) = local_dates(&dir);
    let plain: Vec<_> = CausalStream::open(&set, &time).unwrap().map(Result::unwrap).collect();
    time.tachyon_repair = Some(100);
    let repaired: Vec<_> = CausalStream::open(&set, &time).unwrap().map(Result::unwrap).collect();
    let report = check(CausalStream::open(&set, &time).unwrap(), &mut |_| {}).unwrap();
    assert_eq!((report.tachyons, report.messages, report.unmatched_receives), (0, job.messages(), 0), "{report}");
    assert_eq!(report.min_gap_ns, Some(100), "the closest receive ends the minimum latency after its send");
    let repairs = report.stream.repairs;
    assert!(repairs.receives > 0 && repairs.largest_shift_ns >= repairs.largest_ns, "{repairs:?}");
    for rank in 0..4 {
        let (before, after) = (of_rank(&plain, rank), of_rank(&repaired, rank));
        assert_eq!(before.len(), after.len(), "rank {rank}");
        let mut shift = 0;
        for (b, a) in before.iter().zip(&after) {
            assert_eq!((&b.body, a.start - b.start), (&a.body, shift), "rank {rank}: moved as the events before");
            let moved = a.end - b.end;
            let receive = grappe_analysis::matching::receive_of(b).is_some();
            assert!(moved == shift || (receive && moved > shift), "rank {rank}: {b:?} became {a:?}");
            shift = moved;
        }
        assert!(shift <= repairs.largest_shift_ns, "rank {rank}");
    }
}

#[test]
fn a_merged_file_reads_back_as_the_same_causal_stream() {
    let dir = scratch("merge");
    let job = distorted(3, 500);
    write_job(&dir, &job.clone()).unwrap();
    let (set, time) = open(&dir, &GlobalOptions::default());
    let merged = dir.join("merged.gtrace");
    let outcome = merge_to_file(&set, &time, &merged, &mut |_| {}).unwrap();
    assert_eq!(outcome.events, job.events());
    let direct: Vec<_> = CausalStream::open(&set, &time).unwrap().map(Result::unwrap).collect();

    let merged_set = TraceSet::open(&merged).unwrap();
    assert_eq!(merged_set.layout(), Layout::Merged);
    let merged_time = GlobalTime::estimate(&merged_set, &GlobalOptions::default()).unwrap();
    let reread: Vec<_> = CausalStream::open(&merged_set, &merged_time).unwrap().map(Result::unwrap).collect();
    assert_eq!(direct, reread);
    // The directory now holds the merged file too: it is left out, with a note.
    let again = TraceSet::open(&dir).unwrap();
    assert_eq!(again.files().len(), 3);
    assert!(again.notes().iter().any(|n| n.contains("merged.gtrace")), "{:?}", again.notes());
}

/// Calls that failed (a peer died, the job was stopped) are listed by
/// `check`, not matched and not problems: a trace of a failed run whose
/// files are whole is consistent. A merged file keeps them failed.
#[test]
fn check_lists_failed_calls_as_information_and_a_merge_keeps_them() {
    let dir = scratch("failed");
    let t = 5_000_000_000;
    let recv = |src, tag, failed| Body::Recv {
        src,
        tag,
        comm: 0,
        bytes: 8,
        arrived: false,
        sendrecv: false,
        failed,
        any_source: false,
    };
    let send = |dest, failed| Body::Send { dest, tag: 1, comm: 0, bytes: 8, seq: 1, failed, sync: false };
    let barrier = Body::Collective { op: CollectiveKind::Barrier, comm: 0, root: ANY, bytes: 0, failed: true };
    let ranks = [
        // Rank 0's send is received; its receive from rank 1 fails.
        vec![(t, t, Body::Init), (t + 100, t + 200, send(1, false)), (t + 300, t + 5_300, recv(1, 2, true))],
        // Rank 1 takes it, then fails in a send to rank 0, then in a barrier.
        vec![
            (t, t, Body::Init),
            (t + 250, t + 400, recv(0, 1, false)),
            (t + 500, t + 900, send(0, true)),
            (t + 1_000, t + 6_000, barrier),
        ],
    ];
    for (rank, events) in ranks.iter().enumerate() {
        let header = plain_header(rank as u32, 2, "hand");
        write_events(&grappe_trace::file_for(&dir, rank as u32), &header, events).unwrap();
    }
    let (set, time) = open(&dir, &GlobalOptions::default());
    let report = check(CausalStream::open(&set, &time).unwrap(), &mut |_| {}).unwrap();
    assert!(report.problems().is_empty(), "{report}");
    assert_eq!((report.messages, report.unmatched_receives, report.unreceived_sends), (1, 0, 0), "{report}");
    assert_eq!(report.failed_calls, 3);
    let text = report.to_string();
    for line in [
        "3 calls failed (a peer died or the job was stopped; not a problem of the trace):",
        "  rank 0: recv from rank 1: called at 0.000300 ms from the run's start, failed 0.005 ms later",
        "  rank 1: send to rank 0: called at 0.000500 ms from the run's start, failed 0.000 ms later",
        "  rank 1: barrier: called at 0.001000 ms from the run's start, failed 0.005 ms later",
        "consistent: no tachyon, every message matched, every rank in order",
    ] {
        assert!(text.lines().any(|l| l == line), "no {line:?} in\n{text}");
    }

    let merged = dir.join("merged.gtrace");
    merge_to_file(&set, &time, &merged, &mut |_| {}).unwrap();
    let merged_set = TraceSet::open(&merged).unwrap();
    let merged_time = GlobalTime::estimate(&merged_set, &GlobalOptions::default()).unwrap();
    let again = check(CausalStream::open(&merged_set, &merged_time).unwrap(), &mut |_| {}).unwrap();
    assert_eq!((again.failed_calls, again.failed_examples.clone()), (3, report.failed_examples.clone()));
}

#[test]
fn a_merged_file_gives_the_clock_statistics_of_the_ranks_the_merge_estimated() {
    let dir = scratch("merged-clock");
    write_job(&dir, &distorted(4, 300)).unwrap();
    let (set, time) = open(&dir, &GlobalOptions::default());
    let merged = dir.join("merged.gtrace");
    merge_to_file(&set, &time, &merged, &mut |_| {}).unwrap();

    let (merged_set, merged_time) = open(&merged, &GlobalOptions::default());
    assert_eq!(merged_set.layout(), Layout::Merged);
    assert_eq!(merged_time.estimation, time.estimation);
    assert_eq!(merged_time.report.as_ref().map(ToString::to_string), time.report.as_ref().map(ToString::to_string));
    assert_eq!(merged_time.report.as_ref().map_or(0, |r| r.peers.len()), 3);
    let at_merge = Basis::Estimated { strategy: Strategy::SampleBeforeAfter }.describe();
    for r in 0..4u32 {
        let rank = merged_time.rank(r).unwrap_or_else(|| panic!("rank {r} has no time"));
        assert_eq!(rank.conversion(), None, "rank {r}: a merged file's dates are global already");
        let expected = if r == 0 { Basis::Reference.describe() } else { at_merge.clone() };
        assert_eq!(rank.basis, Basis::Global { at_merge: expected });
    }
    assert_eq!(merged_set.host_and_clock(2), set.host_and_clock(2));
    assert!(merged_time.notes.is_empty(), "{:?}", merged_time.notes);

    let mut other = GlobalOptions::default();
    other.fit.estimator = Estimator::Dunigan;
    let (_, recomputed) = open(&merged, &other);
    assert_eq!(recomputed.estimation, time.estimation, "the dates stay those of the merge");
    assert!(recomputed.notes.iter().any(|n| n.contains("computed again with")), "{:?}", recomputed.notes);
}

#[test]
fn a_cut_or_missing_rank_ends_the_stream_with_unmatched_messages_not_a_hang() {
    let dir = scratch("cut");
    let job = SyntheticJob { block_events: 256, ..SyntheticJob::new(4, 400) };
    write_job(&dir, &job).unwrap();
    let cut = grappe_trace::file_for(&dir, 2);
    let len = std::fs::metadata(&cut).unwrap().len();
    let file = std::fs::OpenOptions::new().write(true).open(&cut).unwrap();
    file.set_len(len / 2).unwrap();
    std::fs::remove_file(grappe_trace::file_for(&dir, 3)).unwrap();
    let (set, time) = open(&dir, &GlobalOptions::default());
    assert_eq!(set.missing_ranks(), vec![3]);
    let report = check(CausalStream::open(&set, &time).unwrap(), &mut |_| {}).unwrap();
    // Rank 3's messages have no other half, and are told apart; rank 2's
    // receives stop at the cut, leaving sends to it unreceived.
    assert!(report.receives_from_untraced > 0 && report.sends_to_untraced > 0, "{report}");
    assert!(report.unreceived_sends > 0, "{report}");
    assert!(report.problems().iter().any(|p| p.contains("sends never received")), "{report}");
    assert!(report.unfinished.iter().any(|u| u.contains("rank 2") && u.contains("cut at offset")), "{report}");
    assert!(report.events < job.events());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 24, ..Default::default() })]

    /// Whatever the clocks' errors left, the repaired stream has every
    /// message matched and none received sooner than the minimum latency
    /// after its send.
    #[test]
    fn the_repaired_stream_has_no_tachyon_whatever_the_clocks(
        offsets in proptest::collection::vec(-2_000_000i64..2_000_000, 2..5),
        iterations in 1u64..60,
        latency in 0u64..5_000,
    ) {
        let dir = scratch(&format!("clc-prop-{}-{iterations}-{latency}", offsets.len()));
        let mut job = SyntheticJob::new(offsets.len() as u32, iterations);
        job.one_host = false;
        job.clocks = offsets.iter().map(|&offset_ns| grappe_testkit::synthetic::SyntheticClock { offset_ns, drift_ppm: 0.0 }).collect();
        write_job(&dir, &job).unwrap();
        let (set, mut time) = local_dates(&dir);
        time.tachyon_repair = Some(latency);
        let report = check(CausalStream::open(&set, &time).unwrap(), &mut |_| {}).unwrap();
        proptest::prop_assert_eq!((report.tachyons, report.messages), (0, job.messages()), "{}", report);
        proptest::prop_assert!(report.min_gap_ns.is_none_or(|gap| gap >= latency as i64), "{}", report);
        proptest::prop_assert!(report.problems().is_empty(), "{}", report);
    }
}
