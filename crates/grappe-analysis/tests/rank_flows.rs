//! A stream of per-rank files taken apart into its ranks
//! (`CausalStream::into_ranks`): each rank reads the very events the causal
//! stream gives of it, in the same order, and a tally of channels counts
//! the messages the matcher pairs. Other streams are given back whole.

use std::collections::BTreeMap;
use std::path::Path;

use grappe_analysis::stream::Window;
use grappe_analysis::{CausalStream, ChannelTally, GlobalOptions, GlobalTime, TraceSet, merge_to_file};
use grappe_testkit::synthetic::{SyntheticJob, write_job};
use grappe_trace::{Event, file_for};
use proptest::prelude::*;

fn stream(location: &Path) -> CausalStream {
    let set = TraceSet::open(location).unwrap();
    let time = GlobalTime::estimate(&set, &GlobalOptions::default()).unwrap();
    CausalStream::open(&set, &time).unwrap()
}

/// Each rank's events, as the causal stream gives them, and its summary.
fn through_the_stream(location: &Path) -> (BTreeMap<u32, Vec<Event>>, grappe_analysis::StreamSummary) {
    let mut stream = stream(location);
    let mut by_rank: BTreeMap<u32, Vec<Event>> = BTreeMap::new();
    while let Some(linked) = stream.next_event().unwrap() {
        by_rank.entry(linked.event.rank).or_default().push(*linked.event);
    }
    (by_rank, stream.summary())
}

/// Reads each rank of `traces` on its own, checks it against what the
/// causal stream gives of it, and the tally against the matcher's counts.
fn ranks_read_alone_agree_with_the_stream(traces: &Path, traced: &[u32]) {
    let (expected, summary) = through_the_stream(traces);
    let Ok(ranks) = stream(traces).into_ranks() else { panic!("a fresh stream of per-rank files") };
    assert_eq!(ranks.iter().map(|r| r.rank()).collect::<Vec<_>>(), traced);
    let mut tally = ChannelTally::default();
    for source in ranks {
        let mut rank = source.open().unwrap();
        let mut events = Vec::new();
        while let Some(event) = rank.next_event().unwrap() {
            tally.observe(event);
            events.push(*event);
        }
        assert!(rank.next_event().unwrap().is_none(), "rank {}: nothing after the end", rank.rank());
        assert_eq!(events, expected[&rank.rank()], "rank {}", rank.rank());
        let flow = summary.flows.iter().find(|f| f.rank == rank.rank()).unwrap();
        assert_eq!(rank.summary(), flow, "rank {}", rank.rank());
    }
    let counted = (tally.matched(), tally.unmatched_receives(), tally.unreceived_sends());
    assert_eq!(counted, (summary.matched, summary.unmatched_receives, summary.unreceived_sends));
}

#[test]
fn each_rank_reads_what_the_stream_gives_of_it_and_the_tally_counts_what_it_matches() {
    let dir = grappe_testkit::scratch("rank-flows");
    let traces = dir.join("traces");
    write_job(&traces, &SyntheticJob::distorted(5, 40)).unwrap();
    // Rank 3 untraced: its messages have no other half.
    std::fs::remove_file(file_for(&traces, 3)).unwrap();
    let summary = through_the_stream(&traces).1;
    assert!(summary.unmatched_receives > 0 && summary.unreceived_sends > 0, "{summary:?}");
    ranks_read_alone_agree_with_the_stream(&traces, &[0, 1, 2, 4]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// Any job size, block size and rank left untraced.
    #[test]
    fn ranks_read_alone_agree_with_the_stream_whatever_the_job(
        ranks in 2u32..7, iterations in 1u64..25, block_events in 1usize..300, missing in 0u32..8,
    ) {
        let dir = grappe_testkit::scratch("rank-flows-prop");
        let traces = dir.join("traces");
        write_job(&traces, &SyntheticJob { block_events, ..SyntheticJob::new(ranks, iterations) }).unwrap();
        // `missing` past the last rank: every rank traced.
        if missing < ranks && missing != 0 {
            std::fs::remove_file(file_for(&traces, missing)).unwrap();
        }
        let traced: Vec<u32> = (0..ranks).filter(|&r| r == 0 || r != missing).collect();
        ranks_read_alone_agree_with_the_stream(&traces, &traced);
    }
}

#[test]
fn a_merged_file_a_window_or_a_stream_begun_stays_a_stream() {
    let dir = grappe_testkit::scratch("rank-flows-refused");
    let traces = dir.join("traces");
    write_job(&traces, &SyntheticJob::new(3, 10)).unwrap();
    let set = TraceSet::open(&traces).unwrap();
    let time = GlobalTime::estimate(&set, &GlobalOptions::default()).unwrap();
    merge_to_file(&set, &time, &dir.join("merged.gtrace"), &mut |_| {}).unwrap();

    assert!(stream(&dir.join("merged.gtrace")).into_ranks().is_err(), "a merged file");
    let window = Window { from: 0, to: 1_000 };
    assert!(stream(&traces).windowed(window).into_ranks().is_err(), "a window");
    let mut begun = stream(&traces);
    let first = *begun.next_event().unwrap().unwrap().event;
    let Err(mut given_back) = begun.into_ranks() else { panic!("a stream begun") };
    assert_ne!(*given_back.next_event().unwrap().unwrap().event, first, "the stream goes on where it was");
}
