//! The profile of synthetic jobs, whose every call date is laid out in
//! `synthetic.rs`: per iteration `t`, a region `step` [t, t+16 us]; an
//! isend [t+100, t+300] of 64 bytes to the right neighbour, an irecv
//! [t+400, t+500], waits [t+5000, t+6000] (send) and [t+6000, t+7000]
//! (receive, its message sent at t+100); with the pair rank `r ^ 1`, even
//! ranks send [t+8000, t+8500] then receive [t+9000, t+11000] (the odd
//! rank's send starts at t+9200: 200 ns late), odd ranks receive
//! [t+7500, t+8800] (the even send starts at t+8000: 500 ns late) then send
//! [t+9200, t+9500], 1024 + 8 (i mod 16) bytes; every tenth iteration an
//! allreduce [t+12000, t+15000] of 8 bytes, entered by all at once.

use std::path::Path;

use grappe_analysis::profile::{Profile, Profiler, profile};
use grappe_analysis::{
    CausalStream, Channel, GlobalOptions, GlobalTime, Linked, Message, SendSide, TraceSet, merge_to_file,
};
use grappe_testkit::synthetic::{
    ITERATION_NS, SyntheticClock, SyntheticJob, plain_header, synthetic_site, write_events, write_job, write_killed,
};
use grappe_trace::{ANY, Body, CollectiveKind, Event, EventKind};
use proptest::prelude::*;

fn scratch(name: &str) -> grappe_testkit::Scratch {
    grappe_testkit::scratch(&format!("profile-{name}"))
}

fn profile_of(job: &SyntheticJob, name: &str) -> Profile {
    let dir = scratch(name);
    write_job(&dir, job).unwrap();
    let set = TraceSet::open(&dir).unwrap();
    let time = GlobalTime::estimate(&set, &GlobalOptions::default()).unwrap();
    let stream = CausalStream::open(&set, &time).unwrap();
    let mut last_progress = 0;
    let result = profile(stream, set.world_size(), &mut |n| last_progress = n).unwrap();
    assert_eq!(last_progress, job.events());
    result
}

/// (count, total ns, min, max, bytes) of a call type.
fn call(p: &Profile, name: &str) -> (u64, u64, u64, u64, u64) {
    let s = p.call(name).unwrap_or_else(|| panic!("no {name} row in\n{p}")).stats;
    (s.count, s.total_ns, s.min_ns, s.max_ns, s.bytes)
}

#[test]
fn a_four_rank_job_gives_the_counts_times_and_bytes_of_its_layout() {
    let (n, iters) = (4u64, 300u64);
    let p = profile_of(&SyntheticJob::new(n as u32, iters), "four");
    let collectives = iters.div_ceil(10);
    let pair_bytes: u64 = (0..iters).map(|i| 1024 + 8 * (i % 16)).sum();
    assert_eq!(p.events, SyntheticJob::new(4, iters).events());
    assert_eq!(p.span_ns, iters * ITERATION_NS);
    assert_eq!(p.aggregate_ns, n * iters * ITERATION_NS);

    assert_eq!(call(&p, "isend"), (n * iters, n * iters * 200, 200, 200, n * iters * 64));
    assert_eq!(call(&p, "irecv"), (n * iters, n * iters * 100, 100, 100, 0));
    // Receive completions carry their 64 bytes, send completions none.
    assert_eq!(call(&p, "wait"), (2 * n * iters, 2 * n * iters * 1000, 1000, 1000, n * iters * 64));
    assert_eq!(call(&p, "send"), (n * iters, iters * 2 * (500 + 300), 300, 500, n * pair_bytes));
    assert_eq!(call(&p, "recv"), (n * iters, iters * 2 * (2000 + 1300), 1300, 2000, n * pair_bytes));
    assert_eq!(call(&p, "allreduce"), (n * collectives, n * collectives * 3000, 3000, 3000, n * collectives * 8));
    assert_eq!(p.calls.len(), 6, "{p}");
    assert_eq!(p.calls[0].call.name(), "wait", "longest total first");

    // Every call is inside `step`: one site per call type.
    assert_eq!(p.sites.len(), 6);
    for site in &p.sites {
        assert_eq!((site.region.as_deref(), site.location.as_deref()), (Some("step"), Some("synthetic.rs:1")));
        assert_eq!(site.stats, p.call(site.call.name()).unwrap().stats);
    }
    assert_eq!(p.regions.len(), 1);
    assert_eq!(
        (p.regions[0].count, p.regions[0].inclusive_ns, p.regions[0].unclosed),
        (n * iters, n * iters * 16_000, 0)
    );

    for r in &p.ranks {
        let even = r.rank % 2 == 0;
        let calls = iters * (200 + 100 + 2000 + if even { 500 + 2000 } else { 1300 + 300 }) + collectives * 3000;
        let waiting = iters * if even { 200 } else { 500 };
        assert_eq!(r.total_ns, iters * ITERATION_NS, "rank {}", r.rank);
        assert_eq!(r.calls_ns, calls, "rank {}", r.rank);
        assert_eq!(r.waiting_ns, waiting, "rank {}: late senders only, the allreduce is entered together", r.rank);
        assert_eq!(r.communication_ns, calls - waiting);
        assert_eq!(r.compute_ns, iters * ITERATION_NS - calls);
        assert_eq!(r.events, SyntheticJob::new(4, iters).events_of(r.rank));
    }

    // Ring to the right (64 bytes) and pairs 0-1, 2-3.
    assert_eq!(p.messages(0, 1), (2 * iters, iters * 64 + pair_bytes));
    assert_eq!(p.messages(1, 2), (iters, iters * 64));
    assert_eq!(p.messages(1, 0), (iters, pair_bytes));
    assert_eq!(p.messages(3, 0), (iters, iters * 64));
    assert_eq!(p.messages(0, 2), (0, 0));
    assert_eq!(p.matrix.len(), 6);

    let bins: Vec<_> = p.p2p_sizes.iter().map(|b| (b.min, b.max, b.count)).collect();
    assert_eq!(bins, vec![(64, 127, n * iters), (1024, 2047, n * iters)]);
    let bins: Vec<_> = p.collective_sizes.iter().map(|b| (b.min, b.max, b.count, b.bytes)).collect();
    assert_eq!(bins, vec![(8, 15, n * collectives, 8 * n * collectives)]);
    assert!(p.notes.is_empty(), "{:?}", p.notes);
}

#[test]
fn the_text_report_has_mpip_like_tables() {
    let p = profile_of(&SyntheticJob::new(3, 20), "text");
    let text = p.to_string();
    for title in [
        "Time per rank",
        "Calls by type",
        "Call sites: call type x source location of the call, in its innermost enclosing user region",
        "Message sizes: point-to-point",
        "Message sizes: collective",
        "Communication matrix",
        "User regions by inclusive time",
    ] {
        assert!(text.contains(title), "{title:?} missing from\n{text}");
    }
    // The longest site: the waits, at the synthetic program's wait line,
    // in region `step`.
    let wait_site = synthetic_site(EventKind::Wait).unwrap().to_string();
    let top = &p.sites[0];
    assert_eq!(
        (top.call.name(), top.site.as_deref(), top.region.as_deref()),
        ("wait", Some(&*wait_site), Some("step"))
    );
    assert!(text.contains(&format!("wait           {wait_site:<34} step")), "{text}");
    // One site per call type of the synthetic program, init and finalize
    // (recorded by the runtime itself) apart.
    assert!(p.sites.iter().all(|s| s.site.is_some() != matches!(s.call.name(), "init" | "finalize")), "{:?}", p.sites);
    // Rank 2 has no pair partner in a 3-rank job: ring messages only.
    assert_eq!(p.messages(2, 0), (20, 20 * 64));
    assert_eq!(p.rank(2).unwrap().waiting_ns, 0);
    let json = serde_json::to_value(&p).unwrap();
    assert_eq!(json["calls"][0]["call"], "wait");
    assert!(json["ranks"][0]["compute_ns"].is_u64());
}

fn linked(rank: u32, start: u64, end: u64, body: Body, message: Message) -> Linked {
    Linked { event: Event { rank, start, end, alpha_ns: 0, site: None, body }, message }
}

/// A receive of rank `dst` from `src` whose send started at `send_start`.
fn received(src: u32, dst: u32, send_start: u64) -> Message {
    let channel = Channel { src, dst, comm: 0, tag: 0 };
    Message::Received { channel, send: SendSide { id: 0, start: send_start, end: send_start + 50, bytes: 8, seq: 0 } }
}

#[test]
fn collective_entry_waits_and_a_sendrecvs_late_sender_are_counted_exactly() {
    let region = |name: &str| Body::RegionEnter { name: name.into(), location: "app.rs:7".into() };
    let leave = |name: &str| Body::RegionLeave { name: name.into() };
    let allreduce = Body::Collective { op: CollectiveKind::Allreduce, comm: 0, root: ANY, bytes: 8, failed: false };
    let send = |dest| Body::Send { dest, tag: 0, comm: 0, bytes: 8, seq: 0, failed: false, sync: false };
    let recv = |src| Body::Recv {
        src,
        tag: 0,
        comm: 0,
        bytes: 8,
        arrived: false,
        sendrecv: false,
        failed: false,
        any_source: false,
    };
    let sent = |src, dst| Message::Sent { id: 0, channel: Channel { src, dst, comm: 0, tag: 0 } };
    let events = [
        linked(0, 0, 0, Body::Init, Message::None),
        linked(1, 0, 0, Body::Init, Message::None),
        linked(0, 50, 50, region("outer"), Message::None),
        linked(0, 60, 60, region("outer"), Message::None),
        // Rank 0 enters the allreduce at 100, rank 1 at 400: 300 ns lost.
        linked(0, 100, 1000, allreduce, Message::None),
        linked(1, 400, 1000, allreduce, Message::None),
        linked(0, 1050, 1050, leave("outer"), Message::None),
        // Rank 0's sendrecv: the send record covers the receive's wait for
        // rank 1's send, which starts 300 ns after it.
        linked(0, 1100, 1500, send(1), sent(0, 1)),
        linked(1, 1400, 1450, send(0), sent(1, 0)),
        linked(1, 1500, 1600, recv(0), received(0, 1, 1100)),
        linked(0, 1100, 1600, recv(1), received(1, 0, 1400)),
        linked(0, 1700, 1700, leave("outer"), Message::None),
        linked(0, 2000, 2000, Body::Finalize, Message::None),
        linked(1, 2000, 2000, Body::Finalize, Message::None),
    ];
    let mut profiler = Profiler::new(2);
    events.iter().for_each(|e| profiler.observe(e.as_ref()));
    let p = profiler.finish();
    let r0 = p.rank(0).unwrap();
    assert_eq!(
        (r0.total_ns, r0.calls_ns, r0.waiting_ns, r0.communication_ns, r0.compute_ns),
        (2000, 1400, 600, 800, 600)
    );
    let r1 = p.rank(1).unwrap();
    assert_eq!(
        (r1.total_ns, r1.calls_ns, r1.waiting_ns, r1.communication_ns, r1.compute_ns),
        (2000, 750, 0, 750, 1250)
    );
    // The recursive region counts twice but its time once; rank 0's calls
    // are all inside it, rank 1's outside any region.
    assert_eq!(p.regions.len(), 1);
    assert_eq!((p.regions[0].count, p.regions[0].inclusive_ns), (2, 1650));
    let site = |call: &str, region: Option<&str>| {
        p.sites.iter().find(|s| s.call.name() == call && s.region.as_deref() == region).map(|s| s.stats.count)
    };
    assert_eq!(site("allreduce", Some("outer")), Some(1));
    assert_eq!(site("allreduce", None), Some(1));
    assert_eq!(site("recv", Some("outer")), Some(1));
    assert_eq!(site("send", None), Some(1));
    assert_eq!(p.messages(0, 1), (1, 8));
    assert!(p.notes.is_empty(), "{:?}", p.notes);
}

#[test]
fn a_sendrecv_is_one_call_timed_once() {
    // Ranks 0 and 1 swap 8 and 16 bytes with sendrecv: each a send and
    // the receive marked as its second half, with the same dates. Rank 0
    // then sends alone, and rank 1 receives alone.
    let send = |dest, bytes| Body::Send { dest, tag: 0, comm: 0, bytes, seq: 0, failed: false, sync: false };
    let recv = |src, bytes, sendrecv| Body::Recv {
        src,
        tag: 0,
        comm: 0,
        bytes,
        arrived: false,
        sendrecv,
        failed: false,
        any_source: false,
    };
    let sent = |src, dst| Message::Sent { id: 0, channel: Channel { src, dst, comm: 0, tag: 0 } };
    let events = [
        linked(0, 100, 500, send(1, 8), sent(0, 1)),
        linked(1, 300, 600, send(0, 16), sent(1, 0)),
        linked(0, 100, 500, recv(1, 16, true), received(1, 0, 300)),
        linked(1, 300, 600, recv(0, 8, true), received(0, 1, 100)),
        linked(0, 700, 800, send(1, 4), sent(0, 1)),
        linked(1, 750, 900, recv(0, 4, false), received(0, 1, 700)),
    ];
    let mut profiler = Profiler::new(2);
    events.iter().for_each(|e| profiler.observe(e.as_ref()));
    let p = profiler.finish();
    // (count, total, min, max, bytes): the pairs' sent bytes, their time once.
    assert_eq!(call(&p, "sendrecv"), (2, 700, 300, 400, 24));
    assert_eq!(call(&p, "send"), (1, 100, 100, 100, 4));
    assert_eq!(call(&p, "recv"), (1, 150, 150, 150, 4));
    // Rank 0 waited from 100 for rank 1's send, which started at 300.
    let r0 = p.rank(0).unwrap();
    assert_eq!((r0.calls_ns, r0.waiting_ns), (500, 200));
    // Sent messages, by pair: the sendrecvs' and the lone send.
    assert_eq!(
        p.matrix.iter().map(|c| (c.src, c.dst, c.messages, c.bytes)).collect::<Vec<_>>(),
        [(0, 1, 2, 12), (1, 0, 1, 16)]
    );
}

/// A call that failed (a peer died, the job was stopped) counts under its
/// type, its whole time as waiting, with no bytes, no message and no
/// collective instance; a sendrecv whose receive failed still sent its
/// message. A note names them.
#[test]
fn failed_calls_count_as_waiting_and_are_noted() {
    let send = |failed| Body::Send { dest: 1, tag: 0, comm: 0, bytes: 8, seq: 0, failed, sync: false };
    let recv = |sendrecv| Body::Recv {
        src: 2,
        tag: 5,
        comm: 0,
        bytes: 0,
        arrived: false,
        sendrecv,
        failed: true,
        any_source: false,
    };
    let barrier = Body::Collective { op: CollectiveKind::Barrier, comm: 0, root: ANY, bytes: 0, failed: true };
    let sent = Message::Sent { id: 0, channel: Channel { src: 0, dst: 1, comm: 0, tag: 0 } };
    let events = [
        linked(0, 0, 0, Body::Init, Message::None),
        linked(1, 0, 0, Body::Init, Message::None),
        // Rank 0: a sendrecv whose send went out and whose receive failed,
        // then a receive that failed.
        linked(0, 100, 400, send(false), sent),
        linked(0, 100, 400, recv(true), Message::None),
        linked(0, 500, 1500, recv(false), Message::None),
        // Rank 1: a failed send (named once the rank's next event says it
        // began no sendrecv), then a failed barrier.
        linked(1, 100, 300, send(true), Message::None),
        linked(1, 400, 1400, barrier, Message::None),
    ];
    let mut profiler = Profiler::new(3);
    events.iter().for_each(|e| profiler.observe(e.as_ref()));
    let p = profiler.finish();
    assert_eq!(call(&p, "sendrecv"), (1, 300, 300, 300, 8), "its send's bytes");
    assert_eq!(call(&p, "recv"), (1, 1000, 1000, 1000, 0));
    assert_eq!(call(&p, "send"), (1, 200, 200, 200, 0), "a failed send moved nothing");
    assert_eq!(call(&p, "barrier"), (1, 1000, 1000, 1000, 0));
    let (r0, r1) = (p.rank(0).unwrap(), p.rank(1).unwrap());
    assert_eq!((r0.calls_ns, r0.waiting_ns), (1300, 1300));
    assert_eq!((r1.calls_ns, r1.waiting_ns), (1200, 1200));
    assert_eq!(p.matrix.iter().map(|c| (c.src, c.dst, c.messages)).collect::<Vec<_>>(), [(0, 1, 1)]);
    assert!(p.collective_sizes.is_empty(), "a failed collective contributed nothing: {:?}", p.collective_sizes);
    let note = p.notes.iter().find(|n| n.contains("calls failed")).unwrap_or_else(|| panic!("{:?}", p.notes));
    assert_eq!(
        note,
        "4 calls failed (a peer died or the job was stopped), their time counted as waiting: \
         rank 0: sendrecv with rank 2 for 0.000 ms; rank 0: recv from rank 2 for 0.001 ms; \
         rank 1: send to rank 1 for 0.000 ms; rank 1: barrier for 0.001 ms"
    );
    assert!(!p.notes.iter().any(|n| n.contains("lacked a member")), "no instance was entered: {:?}", p.notes);
}

#[test]
fn unbalanced_regions_and_a_collective_missing_a_rank_are_noted_not_fatal() {
    let mut profiler = Profiler::new(3);
    let allreduce = Body::Collective { op: CollectiveKind::Barrier, comm: 0, root: ANY, bytes: 0, failed: false };
    profiler.observe(
        linked(0, 10, 10, Body::RegionEnter { name: "a".into(), location: "x".into() }, Message::None).as_ref(),
    );
    profiler.observe(linked(0, 20, 20, Body::RegionLeave { name: "b".into() }, Message::None).as_ref());
    profiler.observe(linked(0, 30, 90, allreduce, Message::None).as_ref());
    profiler.observe(linked(1, 50, 90, allreduce, Message::None).as_ref());
    // A record dated before the previous one is moved to it.
    profiler.observe(linked(1, 40, 45, Body::Finalize, Message::None).as_ref());
    let p = profiler.finish();
    assert_eq!(p.rank(0).unwrap().waiting_ns, 20);
    assert_eq!(p.rank(1).unwrap().total_ns, 40);
    assert_eq!((p.regions[0].count, p.regions[0].unclosed, p.regions[0].inclusive_ns), (1, 1, 80));
    assert_eq!(p.notes.len(), 3, "{:?}", p.notes);
}

fn clocks() -> impl Strategy<Value = Vec<SyntheticClock>> {
    let clock = (-2_000_000i64..2_000_000, -100.0f64..100.0)
        .prop_map(|(offset_ns, drift_ppm)| SyntheticClock { offset_ns, drift_ppm });
    proptest::collection::vec(clock, 0..6)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Whatever the job and its clocks, each rank's time splits exactly.
    #[test]
    fn compute_communication_and_waiting_add_up_to_each_ranks_total(
        ranks in 1u32..6,
        iterations in 1u64..40,
        distorted in any::<bool>(),
        clocks in clocks(),
    ) {
        let mut job = SyntheticJob::new(ranks, iterations);
        if distorted {
            job.one_host = false;
            job.clocks = clocks;
        }
        let p = profile_of(&job, &format!("prop-{ranks}-{iterations}-{distorted}"));
        prop_assert_eq!(p.ranks.len(), ranks as usize);
        for r in &p.ranks {
            prop_assert_eq!(r.compute_ns + r.communication_ns + r.waiting_ns, r.total_ns, "{:?}", r);
            prop_assert!(r.waiting_ns <= r.calls_ns && r.calls_ns <= r.total_ns, "{:?}", r);
            prop_assert!(r.total_ns > 0);
        }
        let calls: u64 = p.calls.iter().map(|c| c.stats.count).sum();
        let per_rank = if ranks > 1 { 4 } else { 0 };
        let pairs = (ranks - ranks % 2) as u64;
        let expected = iterations * (ranks as u64 * per_rank + 2 * pairs) + ranks as u64 * iterations.div_ceil(10);
        prop_assert_eq!(calls, expected);
    }
}

/// Long region names and deep paths widen their columns: every row of a
/// table keeps its numbers under their heading, and a region's location
/// is cut to its last two components as a call site's is.
#[test]
fn long_names_and_paths_widen_their_columns_instead_of_breaking_the_rows() {
    let long_name = "a region whose name is longer than the column";
    let enter = |name: &str, location: &str| Body::RegionEnter { name: name.into(), location: location.into() };
    let leave = |name: &str| Body::RegionLeave { name: name.into() };
    let barrier = Body::Collective { op: CollectiveKind::Barrier, comm: 0, root: ANY, bytes: 0, failed: false };
    let deep = "crates/some_crate_with_a_long_name/examples/a_long_example_file_name.rs";
    let site = grappe_trace::Site::of(&format!("{deep}:120:32"));
    let events = [
        linked(0, 0, 0, enter(long_name, &format!("{deep}:7:5")), Message::None),
        Linked {
            event: Event { rank: 0, start: 10, end: 20, alpha_ns: 0, site, body: barrier },
            message: Message::None,
        },
        linked(0, 30, 30, leave(long_name), Message::None),
        linked(0, 40, 40, enter("short", "app.rs:9:1"), Message::None),
        linked(0, 50, 50, leave("short"), Message::None),
    ];
    let mut profiler = Profiler::new(1);
    events.iter().for_each(|e| profiler.observe(e.as_ref()));
    let text = profiler.finish().to_string();
    let table = |heading: &str| -> Vec<&str> {
        let at = text.find(heading).unwrap_or_else(|| panic!("no {heading:?} in\n{text}"));
        text[at..].trim_start().lines().take_while(|l| !l.starts_with("---") && !l.starts_with('@')).collect()
    };
    let regions = table("\nRegion ");
    assert_eq!(regions.len(), 3, "{text}");
    assert!(regions[1].starts_with(&format!("{long_name} examples/a_long_example_file_name.rs:7:5 ")), "{text}");
    let sites = table("Site Call");
    assert_eq!(sites.len(), 2, "{text}");
    assert!(sites[1].contains(&format!(" examples/a_long_example_file_name.rs:120:32 {long_name} ")), "{text}");
    for rows in [regions, sites] {
        let end_of_count = rows[0].find("Count").unwrap() + "Count".len();
        for row in &rows[1..] {
            let under_count = &row.as_bytes()[end_of_count - 1..=end_of_count];
            assert_eq!(under_count, b"1 ", "the count is not under its heading:\n{}\n{row}", rows[0]);
        }
    }
}

/// A rank's time is its application's, as mpiP's AppTime: from the end
/// of its init to the start of its finalize. Both hold the runtime's
/// start-up, teardown and clock sampling, which were counted as compute.
#[test]
fn init_and_finalize_are_outside_the_ranks_time() {
    let barrier = Body::Collective { op: CollectiveKind::Barrier, comm: 0, root: ANY, bytes: 0, failed: false };
    let events = [
        linked(0, 0, 20_000, Body::Init, Message::None),
        linked(0, 21_000, 22_000, barrier, Message::None),
        linked(0, 25_000, 50_000, Body::Finalize, Message::None),
    ];
    let mut profiler = Profiler::new(1);
    events.iter().for_each(|e| profiler.observe(e.as_ref()));
    let p = profiler.finish();
    let r = p.rank(0).unwrap();
    assert_eq!((r.total_ns, r.calls_ns, r.compute_ns), (5_000, 1_000, 4_000));
    assert_eq!((p.start_ns, p.span_ns), (20_000, 5_000));
}

/// The profile of a set's files on global time.
fn profile_of_set(location: &Path) -> Profile {
    let set = TraceSet::open(location).unwrap();
    let time = GlobalTime::estimate(&set, &GlobalOptions::default()).unwrap();
    profile(CausalStream::open(&set, &time).unwrap(), set.world_size(), &mut |_| {}).unwrap()
}

/// A job whose two last ranks were killed: rank 2, started late, after
/// the first of two barriers; rank 3 before its first flush (its file
/// has a header and nothing else). Ranks 0 and 1 record 10 000 points
/// before the first barrier: the merged file's first block holds only
/// their events. Its profile must be that of the per-rank files, where
/// every instance lacked rank 3 and the second also rank 2 — not one in
/// which the ranks read first were the only ones expected.
#[test]
fn a_merged_file_of_a_job_with_killed_ranks_profiles_as_its_per_rank_files() {
    let dir = scratch("killed");
    let traces = dir.join("trace");
    std::fs::create_dir_all(&traces).unwrap();
    let barrier = || Body::Collective { op: CollectiveKind::Barrier, comm: 0, root: ANY, bytes: 0, failed: false };
    let point = |t| (t, t, Body::Point { name: "busy".into(), location: "app.rs:3".into() });
    let mut rank0 = vec![(0, 0, Body::Init)];
    rank0.extend((0..10_000).map(|i| point(10 + 10 * i)));
    rank0.extend([(200_000, 201_000, barrier()), (300_000, 301_000, barrier()), (400_000, 400_000, Body::Finalize)]);
    let rank1 = vec![
        (0, 0, Body::Init),
        (200_100, 201_000, barrier()),
        (300_200, 301_000, barrier()),
        (400_000, 400_000, Body::Finalize),
    ];
    let rank2 = vec![(150_000, 150_000, Body::Init), (200_400, 201_000, barrier())];
    let file = |rank: u32| (grappe_trace::file_for(&traces, rank), plain_header(rank, 4, "hand"));
    for (rank, events) in [(0, rank0), (1, rank1)] {
        write_events(&file(rank).0, &file(rank).1, &events).unwrap();
    }
    write_killed(&file(2).0, &file(2).1, &rank2).unwrap();
    write_killed(&file(3).0, &file(3).1, &[]).unwrap();
    let merged = dir.join("merged.gtrace");
    let set = TraceSet::open(&traces).unwrap();
    merge_to_file(&set, &GlobalTime::estimate(&set, &GlobalOptions::default()).unwrap(), &merged, &mut |_| {}).unwrap();

    let (per_rank, merged) = (profile_of_set(&traces), profile_of_set(&merged));
    let lacked = "2 collective instances lacked a member (a rank's trace is cut or absent)";
    assert!(per_rank.notes.iter().any(|n| n.starts_with(lacked)), "{:?}", per_rank.notes);
    // Each says its figures are partial, and why, in its own words: the
    // per-rank files are unfinished, the merged file was made from them.
    let partial = |p: &Profile, rank: u32| {
        let own =
            [format!("partial trace: rank {rank}: no footer"), format!("from rank {rank}'s file, with no footer")];
        p.notes.iter().any(|n| n.starts_with("partial trace: ") && own.iter().any(|o| n.contains(o.as_str())))
    };
    for (p, rank) in [(&per_rank, 2), (&per_rank, 3), (&merged, 2), (&merged, 3)] {
        assert!(partial(p, rank), "no partial-trace note for rank {rank}: {:?}", p.notes);
    }
    let whole = |p: &Profile| p.notes.iter().filter(|n| !n.starts_with("partial trace: ")).cloned().collect::<Vec<_>>();
    assert_eq!(whole(&merged), whole(&per_rank));
    let times = |p: &Profile| -> Vec<(u32, u64, u64, u64)> {
        p.ranks.iter().map(|r| (r.rank, r.calls_ns, r.waiting_ns, r.communication_ns)).collect()
    };
    // Rank 0 waits 400 ns for rank 2 in the first barrier, 200 ns for
    // rank 1 in the second; rank 1 waits 300 ns in the first.
    let waiting: Vec<(u32, u64)> = times(&per_rank).iter().map(|t| (t.0, t.2)).collect();
    assert_eq!(waiting, [(0, 600), (1, 300), (2, 0)]);
    assert_eq!(times(&merged), times(&per_rank));
}
