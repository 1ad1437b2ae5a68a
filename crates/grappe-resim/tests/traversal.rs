//! The traversal on small hand-built traces: non-blocking receives and
//! the failed test that bounds their arrival, the conservative
//! approximation's warning, sendrecv pairs, prediction's transit.

use grappe_resim::{CostModel, EagerLimits, LinkCost, Mode, Network, Options, Placement, Program};
use grappe_trace::{ANY, Body, Completion, Event};

fn ev(rank: u32, start: i64, end: i64, alpha: u32, body: Body) -> Event {
    Event { rank, start: start as u64, end: end as u64, alpha_ns: alpha, site: None, body }
}

fn run(events: Vec<Event>, placement: Placement, model: CostModel) -> (Program, grappe_resim::Outcome) {
    let program = Program::link(events, placement).expect("linked");
    let outcome = grappe_resim::run(&program, &Options { model, eager: EagerLimits::default() }).expect("traversed");
    (program, outcome)
}

fn isend(rank: u32, at: i64, alpha: u32, dest: u32, seq: u64) -> Event {
    ev(rank, at, at + 100, alpha, Body::Isend { dest, tag: 5, comm: 0, bytes: 64, seq, request: seq })
}

fn completion(src: u32, arrived: bool) -> Completion {
    Completion { is_recv: true, src, tag: 5, bytes: 64, arrived }
}

/// A wait that completes an irecv follows the blocking receive's rule
/// with its own start as SR: here the receiver alone was perturbed (by a
/// costly event before the wait) and the message had arrived, so the
/// undecidable case evaluates the model; the transit is known from the
/// other message, which the receiver waited for.
#[test]
fn a_wait_completing_an_irecv_is_corrected_as_a_receive_starting_at_the_wait() {
    let events = vec![
        ev(0, 0, 1_000, 0, Body::Init),
        ev(1, 0, 1_000, 0, Body::Init),
        // Message 1, which rank 0 waits for: transit 500, copy 0.
        isend(1, 1_000, 0, 0, 1),
        ev(0, 1_000, 1_100, 0, Body::Irecv { src: 1, tag: 5, comm: 0, request: 1 }),
        ev(0, 1_100, 1_500, 0, Body::Wait { request: 1, comm: 0, completion: completion(1, false), failed: false }),
        // Message 2 sent at 2000; rank 0 costs 10 µs of recording, then waits at 13000.
        isend(1, 2_000, 0, 0, 2),
        ev(0, 1_500, 1_600, 10_000, Body::Irecv { src: 1, tag: 5, comm: 0, request: 2 }),
        ev(
            0,
            13_000,
            13_000,
            0,
            Body::Test { request: 2, comm: 0, completion: Some(completion(1, true)), failed: false },
        ),
        ev(0, 14_000, 14_000, 0, Body::Finalize),
        ev(1, 14_000, 14_000, 0, Body::Finalize),
    ];
    let (program, outcome) = run(events, Placement::one_host(2), CostModel::Correct(Mode::MinSim));
    let dates = &outcome.dates.of[0];
    // The first wait: nobody was perturbed before it, it is left as it is.
    assert_eq!(dates[2], (1_100, 1_500));
    // The test: SR = 13000 − 10000 = 3000; the message came at 2000 + 500
    // (the fitted transit), before: it ends after its measured duration 0.
    assert_eq!(dates[4], (3_000, 3_000));
    assert_eq!(outcome.summary.cases.get("minsim_arrived_model"), Some(&1));
    assert_eq!(outcome.summary.cases.get("minsim_waited_prop2"), Some(&1));
    // One message had arrived as measured, and still has after correction.
    assert_eq!((outcome.summary.arrived_measured, outcome.summary.arrived_after), (1, 1));
    assert!(outcome.summary.to_string().contains("NBCOM=2 NBCOMF=1 (50%) NBCOMFA=1 (50%) NBSIM=1 (50%)"));
    assert_eq!(outcome.summary.fits.transit.at(64), 500, "t(ER) − DĈ − t(S) of the waited message");
    assert_eq!(program.messages.len(), 2);
}

/// A failed test says the message had not arrived at its date: with the
/// sender unperturbed, it did not arrive before that date after
/// correction either, and the wait that found it waits for it.
#[test]
fn a_failed_test_before_the_wait_bounds_the_modelled_arrival() {
    let events = vec![
        ev(0, 0, 1_000, 0, Body::Init),
        ev(1, 0, 1_000, 0, Body::Init),
        ev(0, 1_000, 1_100, 0, Body::Irecv { src: 1, tag: 5, comm: 0, request: 1 }),
        // Rank 0 costs 5 µs of recording after posting.
        ev(0, 1_100, 1_100, 5_000, Body::Point { name: text(), location: text() }),
        // A test at 7000 (corrected 2000) finds nothing.
        ev(0, 7_000, 7_050, 0, Body::Test { request: 1, comm: 0, completion: None, failed: false }),
        isend(1, 1_500, 0, 0, 1),
        // The wait at 9000 (corrected 4000) finds it there.
        ev(0, 9_000, 9_100, 0, Body::Wait { request: 1, comm: 0, completion: completion(1, true), failed: false }),
        ev(0, 10_000, 10_000, 0, Body::Finalize),
        ev(1, 10_000, 10_000, 0, Body::Finalize),
    ];
    let (_, outcome) = run(events, Placement::one_host(2), CostModel::Correct(Mode::MinSim));
    // No transit is measured (0): the model alone puts B at 1500, the
    // failed test at 7000 or later; the wait starts at 4000 and ends a
    // copy after 7000.
    assert_eq!(outcome.dates.of[0][3], (2_000, 2_050));
    assert_eq!(outcome.dates.of[0][4], (4_000, 7_100));
    assert_eq!(outcome.summary.cases.get("minsim_arrived_model"), Some(&1));
}

fn text() -> grappe_trace::Text {
    grappe_trace::Text::of("x").expect("a name")
}

/// Two wildcard receives: the trace took rank 2's message first, but rank
/// 1's, delayed by its recording cost, would be there first once that is
/// taken out. The traced order is kept and one warning says so.
#[test]
fn a_wildcard_order_the_correction_would_change_is_kept_with_a_warning() {
    let mut events = vec![
        ev(0, 0, 1_000, 0, Body::Init),
        ev(1, 0, 1_000, 0, Body::Init),
        ev(2, 0, 1_000, 0, Body::Init),
        ev(0, 1_000, 1_010, 0, Body::Irecv { src: ANY, tag: ANY, comm: 0, request: 1 }),
        ev(0, 1_010, 1_020, 0, Body::Irecv { src: ANY, tag: ANY, comm: 0, request: 2 }),
        // Rank 1 records 50 µs of cost before its send at 51000.
        ev(1, 1_000, 1_000, 50_000, Body::Point { name: text(), location: text() }),
        isend(2, 20_000, 0, 0, 1),
        ev(0, 1_100, 20_600, 0, Body::Wait { request: 1, comm: 0, completion: completion(2, false), failed: false }),
        isend(1, 51_000, 0, 0, 1),
        ev(0, 20_700, 51_600, 0, Body::Wait { request: 2, comm: 0, completion: completion(1, false), failed: false }),
    ];
    for rank in 0..3 {
        events.push(ev(rank, 60_000, 60_000, 0, Body::Finalize));
    }
    let (_, outcome) = run(events, Placement::one_host(3), CostModel::Correct(Mode::MinSim));
    assert_eq!(outcome.summary.wildcard_orders_imposed, 1, "{:?}", outcome.warnings);
    assert!(
        outcome.warnings[0].contains("rank 0") && outcome.warnings[0].contains("rank 1"),
        "{}",
        outcome.warnings[0]
    );
    assert_eq!(outcome.summary.causality_violations_after, 0);
}

/// The same with blocking receives that asked for any source (the trace's
/// `any_source` bit): the order is kept with a warning too.
#[test]
fn a_wildcard_order_of_blocking_receives_is_kept_with_a_warning() {
    let recv = |src| Body::Recv {
        src,
        tag: 5,
        comm: 0,
        bytes: 64,
        arrived: false,
        sendrecv: false,
        failed: false,
        any_source: true,
    };
    let mut events = vec![
        ev(0, 0, 1_000, 0, Body::Init),
        ev(1, 0, 1_000, 0, Body::Init),
        ev(2, 0, 1_000, 0, Body::Init),
        ev(1, 1_000, 1_000, 50_000, Body::Point { name: text(), location: text() }),
        isend(2, 20_000, 0, 0, 1),
        ev(0, 1_100, 20_600, 0, recv(2)),
        isend(1, 51_000, 0, 0, 1),
        ev(0, 20_700, 51_600, 0, recv(1)),
    ];
    for rank in 0..3 {
        events.push(ev(rank, 60_000, 60_000, 0, Body::Finalize));
    }
    let (_, outcome) = run(events, Placement::one_host(3), CostModel::Correct(Mode::MinSim));
    assert_eq!(outcome.summary.wildcard_orders_imposed, 1, "{:?}", outcome.warnings);
    assert_eq!(outcome.summary.causality_violations_after, 0);
}

/// A sendrecv exchange between two ranks: neither half waits for the
/// other rank's whole call, and the send half ends with the receive half.
#[test]
fn a_sendrecv_exchange_goes_through_and_its_halves_end_together() {
    let send =
        |_rank: u32, dest: u32| Body::Send { dest, tag: 0, comm: 0, bytes: 512, seq: 1, failed: false, sync: false };
    let recv = |src: u32, arrived| Body::Recv {
        src,
        tag: 0,
        comm: 0,
        bytes: 512,
        arrived,
        sendrecv: true,
        failed: false,
        any_source: false,
    };
    // Rank 1's message is there when rank 0, late by its 3 µs of
    // recording, starts; rank 1 waits for rank 0's (transit 700, copy 100).
    let events = vec![
        ev(0, 0, 1_000, 0, Body::Init),
        ev(1, 0, 1_000, 0, Body::Init),
        ev(0, 1_000, 1_000, 3_000, Body::Point { name: text(), location: text() }),
        ev(0, 4_000, 4_100, 0, send(0, 1)),
        ev(1, 1_000, 4_800, 0, send(1, 0)),
        ev(0, 4_000, 4_100, 0, recv(1, true)),
        ev(1, 1_000, 4_800, 0, recv(0, false)),
        ev(0, 5_000, 5_000, 0, Body::Finalize),
        ev(1, 5_000, 5_000, 0, Body::Finalize),
    ];
    let (_, outcome) = run(events, Placement::one_host(2), CostModel::Correct(Mode::MinSim));
    for (rank, send) in [(0, 2), (1, 1)] {
        let dates = &outcome.dates.of[rank];
        assert_eq!(dates[send], dates[send + 1], "rank {rank}: the halves start and end together: {dates:?}");
    }
    // Rank 0's 3 µs of recording is gone: its exchange runs from 1000 to
    // the modelled arrival of rank 1's message (1000 + 700) plus its copy,
    // and rank 1, which waited for rank 0's message, is released as early.
    assert_eq!(outcome.dates.of[0][2], (1_000, 1_800));
    assert_eq!(outcome.dates.of[1][1], (1_000, 1_800));
    assert_eq!(outcome.summary.causality_violations_after, 0);
}

/// A sendrecv's recording cost is one wait after both halves, which the
/// recorder measures once and shares between the two records: however
/// it is shared, the correction takes out the sum, after the exchange.
#[test]
fn a_sendrecv_s_cost_shared_between_its_halves_counts_whole() {
    let send = |dest: u32| Body::Send { dest, tag: 0, comm: 0, bytes: 512, seq: 1, failed: false, sync: false };
    let recv = |src: u32| Body::Recv {
        src,
        tag: 0,
        comm: 0,
        bytes: 512,
        arrived: false,
        sendrecv: true,
        failed: false,
        any_source: false,
    };
    let corrected = |share: u32| {
        // Both ranks exchange from 1000 to 1800, then wait 2000 ns of
        // recording: `share` of it in the send's record, the rest in the
        // receive's.
        let mut events = Vec::new();
        for rank in 0..2 {
            events.push(ev(rank, 0, 1_000, 0, Body::Init));
        }
        for rank in 0..2 {
            events.push(ev(rank, 1_000, 1_800, share, send(1 - rank)));
        }
        for rank in 0..2 {
            events.push(ev(rank, 1_000, 1_800, 2_000 - share, recv(1 - rank)));
            events.push(ev(rank, 3_800, 3_800, 0, Body::Point { name: text(), location: text() }));
            events.push(ev(rank, 3_800, 3_800, 0, Body::Finalize));
        }
        run(events, Placement::one_host(2), CostModel::Correct(Mode::MinSim)).1
    };
    let whole = corrected(2_000);
    for rank in 0..2 {
        assert_eq!(whole.dates.of[rank][3], (1_800, 1_800), "rank {rank}: the wait is gone: {:?}", whole.dates.of);
    }
    for share in [0, 1, 1_000, 1_999] {
        assert_eq!(corrected(share).dates, whole.dates, "{share} ns of 2000 in the send's record");
    }
}

/// Prediction: a message between hosts takes the given latency plus its
/// size over the bandwidth after its corrected send; ranks of one host
/// keep what was measured.
#[test]
fn prediction_gives_messages_between_hosts_the_network_s_transit() {
    let events = vec![
        ev(0, 0, 1_000, 0, Body::Init),
        ev(1, 0, 1_000, 0, Body::Init),
        ev(2, 0, 1_000, 0, Body::Init),
        ev(
            0,
            1_000,
            1_200,
            0,
            Body::Send { dest: 1, tag: 0, comm: 0, bytes: 1_000, seq: 1, failed: false, sync: false },
        ),
        ev(
            0,
            1_200,
            1_400,
            0,
            Body::Send { dest: 2, tag: 0, comm: 0, bytes: 1_000, seq: 1, failed: false, sync: false },
        ),
        ev(
            1,
            1_000,
            2_000,
            0,
            Body::Recv {
                src: 0,
                tag: 0,
                comm: 0,
                bytes: 1_000,
                arrived: false,
                sendrecv: false,
                failed: false,
                any_source: false,
            },
        ),
        ev(
            2,
            1_000,
            2_000,
            0,
            Body::Recv {
                src: 0,
                tag: 0,
                comm: 0,
                bytes: 1_000,
                arrived: false,
                sendrecv: false,
                failed: false,
                any_source: false,
            },
        ),
        ev(0, 3_000, 3_000, 0, Body::Finalize),
        ev(1, 3_000, 3_000, 0, Body::Finalize),
        ev(2, 3_000, 3_000, 0, Body::Finalize),
    ];
    let placement = Placement { host: vec!["a".into(), "a".into(), "b".into()], process: vec![1, 2, 3] };
    // 10 µs + 1000 B at 100 MB/s (10 µs).
    let network = Network { between_hosts: LinkCost::new(10_000.0, 1e8), within_host: None };
    let (_, outcome) = run(events.clone(), placement.clone(), CostModel::Predict(network));
    assert_eq!(outcome.dates.of[1][1], (1_000, 2_000), "one host: as measured");
    assert_eq!(outcome.dates.of[2][1].1, 1_200 + 20_000 + outcome.summary.fits.copy.at(1_000).min(1_000));
    assert_eq!(outcome.dates.of[2][2].0, 3_000 - 2_000 + outcome.dates.of[2][1].1, "later events move as much");
    assert_eq!(outcome.summary.cases.get("predict_network"), Some(&1));
    // Within the host too when asked: 1 ms.
    let network = Network { within_host: Some(LinkCost::new(1e6, 1e9)), ..network };
    let (_, outcome) = run(events, placement, CostModel::Predict(network));
    assert!(outcome.dates.of[1][1].1 >= 1_000 + 1_000_000);
    assert!(outcome.summary.new_run_time_s.unwrap() > outcome.summary.traced_run_time_s.unwrap() + 0.0009);
}

/// Prediction of collectives between hosts: an all-to-all, whose
/// recorded bytes are the whole send buffer, costs P − 1 pairwise rounds
/// of one block; a broadcast ⌈log₂ P⌉ rounds of the whole message.
#[test]
fn prediction_gives_an_all_to_all_one_block_per_peer_and_a_bcast_the_whole_message() {
    let collective = |op, root| Body::Collective { op, comm: 0, root, bytes: 200_000, failed: false };
    let exit_of = |op, root| {
        let mut events = Vec::new();
        for rank in 0..4 {
            events.push(ev(rank, 0, 1_000, 0, Body::Init));
            events.push(ev(rank, 1_000, 2_000, 0, collective(op, root)));
            events.push(ev(rank, 3_000, 3_000, 0, Body::Finalize));
        }
        let placement = Placement { host: (0..4).map(|h| format!("h{h}")).collect(), process: vec![1, 2, 3, 4] };
        // 10 µs + 1 ns a byte (1 GB/s).
        let network = Network { between_hosts: LinkCost::new(10_000.0, 1e9), within_host: None };
        let (_, outcome) = run(events, placement, CostModel::Predict(network));
        outcome.dates.of[0][1].1
    };
    let alltoall = grappe_trace::CollectiveKind::Alltoall;
    // 3 rounds of 10 µs + 50 000 B: 180 µs after the measured exit.
    assert_eq!(exit_of(alltoall, 0), 2_000 + 3 * (10_000 + 50_000));
    // 2 rounds of 10 µs + 200 000 B.
    assert_eq!(exit_of(grappe_trace::CollectiveKind::Bcast, 0), 2_000 + 2 * (10_000 + 200_000));
}

/// A synchronous send (`ssend`) of 8 bytes waits for its receive: the
/// rendezvous model dates it, where a standard send of the same size is
/// an asynchronous one.
#[test]
fn a_small_synchronous_send_is_a_rendezvous() {
    let cases = |sync| {
        let events = vec![
            ev(0, 0, 1_000, 0, Body::Init),
            ev(1, 0, 1_000, 0, Body::Init),
            ev(0, 1_000, 5_000, 0, Body::Send { dest: 1, tag: 0, comm: 0, bytes: 8, seq: 1, failed: false, sync }),
            ev(
                1,
                4_000,
                5_000,
                0,
                Body::Recv {
                    src: 0,
                    tag: 0,
                    comm: 0,
                    bytes: 8,
                    arrived: true,
                    sendrecv: false,
                    failed: false,
                    any_source: false,
                },
            ),
            ev(0, 6_000, 6_000, 0, Body::Finalize),
            ev(1, 6_000, 6_000, 0, Body::Finalize),
        ];
        let (_, outcome) = run(events, Placement::one_host(2), CostModel::Correct(Mode::MinSim));
        outcome.summary.cases.get("rendezvous").copied()
    };
    assert_eq!(cases(true), Some(1), "ssend: the rendezvous model");
    assert_eq!(cases(false), None, "a standard send of 8 bytes is eager");
}

/// Two blocking rendezvous sends towards each other before their
/// receives: no real run ends like that (each waits for the other's
/// receive). The traversal says which ranks wait for what instead of
/// looping.
#[test]
fn ranks_waiting_for_each_other_in_a_cycle_are_an_error_that_names_them() {
    let big = 1 << 20;
    let events = vec![
        ev(0, 0, 1_000, 0, Body::Init),
        ev(1, 0, 1_000, 0, Body::Init),
        ev(0, 1_000, 2_000, 0, Body::Send { dest: 1, tag: 0, comm: 0, bytes: big, seq: 1, failed: false, sync: false }),
        ev(1, 1_000, 2_000, 0, Body::Send { dest: 0, tag: 0, comm: 0, bytes: big, seq: 1, failed: false, sync: false }),
        ev(
            0,
            2_000,
            3_000,
            0,
            Body::Recv {
                src: 1,
                tag: 0,
                comm: 0,
                bytes: big,
                arrived: false,
                sendrecv: false,
                failed: false,
                any_source: false,
            },
        ),
        ev(
            1,
            2_000,
            3_000,
            0,
            Body::Recv {
                src: 0,
                tag: 0,
                comm: 0,
                bytes: big,
                arrived: false,
                sendrecv: false,
                failed: false,
                any_source: false,
            },
        ),
    ];
    let program = Program::link(events, Placement::one_host(2)).expect("linked");
    let options = Options { model: CostModel::Correct(Mode::MinSim), eager: EagerLimits::default() };
    let error = grappe_resim::run(&program, &options).expect_err("a cycle").to_string();
    assert!(error.contains("rank 0 at event 1 (send)") && error.contains("rank 1 at event 1 (send)"), "{error}");
}
