//! Correction against known answers: random message-passing programs are
//! run twice by a small simulator of the semantics the models assume (an
//! eager send is available a transit after its start and copied out in a
//! constant time; a rendezvous ends both calls together; a barrier
//! releases every member a fixed time after the last entry), once without
//! recording cost and once with a known α per event kind and flushes.
//! Correcting the second must give the first's dates.

use grappe_resim::{CostModel, EagerLimits, Mode, Options, Placement, Program};
use grappe_trace::{ANY, Body, CollectiveKind, Event, EventKind};
use proptest::prelude::*;

const TRANSIT: i64 = 900;
const COPY: i64 = 300;
const SEND_CALL: i64 = 200;
const BARRIER: i64 = 1_500;
const EAGER: u64 = 8192;

/// One round of the program: computing, then a pairing of the ranks.
#[derive(Debug, Clone)]
struct Round {
    compute: Vec<i64>,
    /// (sender, receiver, bytes).
    messages: Vec<(u32, u32, u64)>,
    barrier: bool,
    /// Ranks that flush their buffer after computing (for this long).
    flushes: Vec<(u32, i64)>,
}

fn rounds(ranks: u32) -> impl Strategy<Value = Vec<Round>> {
    let round = (
        prop::collection::vec(0i64..50_000, ranks as usize),
        Just((0..ranks).collect::<Vec<u32>>()).prop_shuffle(),
        prop::collection::vec(prop::bool::weighted(0.25), ranks as usize),
        prop::bool::weighted(0.2),
        prop::collection::vec((0..ranks, 10_000i64..200_000), 0..2),
    )
        .prop_map(|(compute, order, big, barrier, flushes)| {
            let messages = order
                .chunks_exact(2)
                .map(|pair| (pair[0], pair[1], if big[pair[0] as usize] { 4 * EAGER } else { 512 }))
                .collect();
            Round { compute, messages, barrier, flushes }
        });
    // Two first rounds: in the first every receive waits (the senders
    // compute long), in the second every message is there before its
    // receive (the receivers compute long), whatever the recording costs:
    // the trace then measures the transit and the copy MINSIM needs (with
    // no such receives, it has nothing to fit them on, and its dates are
    // off by as much).
    let pairs: Vec<(u32, u32, u64)> = (0..ranks / 2).map(|i| (2 * i, 2 * i + 1, 512)).collect();
    let waiting = Round {
        compute: (0..ranks).map(|r| if r % 2 == 0 { 200_000 } else { 0 }).collect(),
        messages: pairs.clone(),
        barrier: false,
        flushes: Vec::new(),
    };
    let arrived = Round {
        compute: (0..ranks).map(|r| if r % 2 == 1 { 200_000 } else { 0 }).collect(),
        messages: pairs,
        barrier: false,
        flushes: Vec::new(),
    };
    let calibration = [waiting, arrived];
    prop::collection::vec(round, 1..30).prop_map(move |rest| calibration.iter().cloned().chain(rest).collect())
}

/// The recording cost of each kind (the same for every rank), and a
/// part that differs from event to event, as the recorder measures it in
/// place (a busy wait that overshoots, or that the scheduler interrupts).
#[derive(Debug, Clone, Copy)]
struct Alphas {
    call: i64,
    point: i64,
    /// Each event costs up to this much more, drawn from `seed`.
    spread: i64,
    seed: u64,
}

impl Alphas {
    const NONE: Alphas = Alphas { call: 0, point: 0, spread: 0, seed: 0 };

    /// The α of the next event of base cost `base`.
    fn next(&mut self, base: i64) -> i64 {
        if self.spread == 0 {
            return base;
        }
        // splitmix64: a fixed draw per event.
        self.seed = self.seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        base + ((z ^ (z >> 31)) % self.spread as u64) as i64
    }
}

/// Runs the program; returns its events in causal order.
#[allow(clippy::needless_range_loop)] // ranks index several tables
fn simulate(ranks: u32, program: &[Round], alpha: Option<Alphas>) -> Vec<Event> {
    let mut a = alpha.unwrap_or(Alphas::NONE);
    let mut now = vec![0i64; ranks as usize];
    let mut events = Vec::new();
    let mut seq = vec![0u64; ranks as usize];
    let ev = |rank: u32, start: i64, end: i64, alpha: i64, body: Body| Event {
        rank,
        start: start as u64,
        end: end as u64,
        alpha_ns: alpha as u32,
        site: None,
        body,
    };
    for r in 0..ranks {
        let cost = a.next(a.call);
        events.push(ev(r, 0, 1_000, cost, Body::Init));
        now[r as usize] = 1_000 + cost;
    }
    for round in program {
        for r in 0..ranks as usize {
            now[r] += round.compute[r];
            let text = grappe_trace::Text::of("compute").expect("a name");
            let point = Body::Point { name: text, location: text };
            let cost = a.next(a.point);
            events.push(ev(r as u32, now[r], now[r], cost, point));
            now[r] += cost;
        }
        if alpha.is_some() {
            for &(r, length) in &round.flushes {
                let t = now[r as usize];
                events.push(ev(r, t, t, 0, Body::FlushBegin));
                events.push(ev(r, t, t + length, length, Body::FlushEnd));
                now[r as usize] = t + length;
            }
        }
        let mut receives = Vec::new();
        for &(s, d, bytes) in &round.messages {
            let (t_s, t_r) = (now[s as usize], now[d as usize]);
            seq[s as usize] += 1;
            let send = Body::Send { dest: d, tag: 0, comm: 0, bytes, seq: seq[s as usize], failed: false, sync: false };
            let (send_end, recv_end, arrived) = if bytes > EAGER {
                let end = t_s.max(t_r) + TRANSIT + COPY;
                (end, end, false)
            } else {
                let available = t_s + TRANSIT;
                (t_s + SEND_CALL, t_r.max(available) + COPY, available <= t_r)
            };
            let cost = a.next(a.call);
            events.push(ev(s, t_s, send_end, cost, send));
            now[s as usize] = send_end + cost;
            let recv = Body::Recv {
                src: s,
                tag: 0,
                comm: 0,
                bytes,
                arrived,
                sendrecv: false,
                failed: false,
                any_source: false,
            };
            let cost = a.next(a.call);
            receives.push(ev(d, t_r, recv_end, cost, recv));
            now[d as usize] = recv_end + cost;
        }
        events.extend(receives);
        if round.barrier {
            let last = *now.iter().max().unwrap();
            for r in 0..ranks as usize {
                let body =
                    Body::Collective { op: CollectiveKind::Barrier, comm: 0, root: ANY, bytes: 0, failed: false };
                let cost = a.next(a.call);
                events.push(ev(r as u32, now[r], last + BARRIER, cost, body));
                now[r] = last + BARRIER + cost;
            }
        }
    }
    for r in 0..ranks as usize {
        let cost = a.next(a.call);
        events.push(ev(r as u32, now[r], now[r] + 1_000, cost, Body::Finalize));
    }
    events
}

fn correct(ranks: u32, events: Vec<Event>, mode: Mode) -> (Program, grappe_resim::Outcome) {
    let program = Program::link(events, Placement::one_host(ranks)).expect("a linked program");
    let options = Options {
        model: CostModel::Correct(mode),
        eager: EagerLimits { between_processes: EAGER, between_threads: EAGER },
    };
    let outcome = grappe_resim::run(&program, &options).expect("a traversal");
    (program, outcome)
}

/// The dates of each rank's events but its flushes, as (start, end).
fn dates_without_flushes(program: &Program, dates: impl Fn(usize, usize) -> (i64, i64)) -> Vec<Vec<(i64, i64)>> {
    program
        .flows
        .iter()
        .enumerate()
        .map(|(rank, steps)| {
            steps
                .iter()
                .enumerate()
                .filter(|(_, s)| !matches!(s.event.body.kind(), EventKind::FlushBegin | EventKind::FlushEnd))
                .map(|(index, _)| dates(rank, index))
                .collect()
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// MINSIM recovers the dates of the run without recording cost, and
    /// leaves no receive before its send, whether α is the same for every
    /// event of a kind or measured event by event.
    #[test]
    fn minsim_recovers_the_uninstrumented_dates(
        (ranks, program_rounds) in (2u32..6).prop_flat_map(|n| (Just(n), rounds(n))),
        call in 0i64..20_000,
        point in 0i64..5_000,
        spread in prop::sample::select(vec![0i64, 1, 3_000, 40_000]),
        seed in any::<u64>(),
    ) {
        let truth_events = simulate(ranks, &program_rounds, None);
        let traced = simulate(ranks, &program_rounds, Some(Alphas { call, point, spread, seed }));
        let (truth, truth_outcome) = correct(ranks, truth_events, Mode::MinSim);
        let (program, outcome) = correct(ranks, traced, Mode::MinSim);
        let want = dates_without_flushes(&truth, |r, i| {
            let e = &truth.flows[r][i].event;
            (e.start as i64, e.end as i64)
        });
        let got = dates_without_flushes(&program, |r, i| outcome.dates.of[r][i]);
        for (rank, (w, g)) in want.iter().zip(&got).enumerate() {
            prop_assert_eq!(w.len(), g.len());
            for (index, (w, g)) in w.iter().zip(g).enumerate() {
                let error = (w.0 - g.0).abs().max((w.1 - g.1).abs());
                prop_assert!(error <= 2, "rank {} event {}: want {:?}, got {:?}", rank, index, w, g);
            }
        }
        prop_assert_eq!(outcome.summary.causality_violations_after, 0);
        let (traced_time, corrected) = (outcome.summary.traced_run_time_s.unwrap(), outcome.summary.new_run_time_s.unwrap());
        let untraced = truth_outcome.summary.traced_run_time_s.unwrap();
        prop_assert!(call + point + spread <= 1 || traced_time > untraced);
        prop_assert!((corrected - untraced).abs() <= 4e-9, "corrected {} untraced {} traced {}", corrected, untraced, traced_time);
        // Rank by rank too; the untraced run recorded no α.
        prop_assert_eq!(outcome.summary.ranks.len(), ranks as usize);
        for (want, got) in truth_outcome.summary.ranks.iter().zip(&outcome.summary.ranks) {
            prop_assert_eq!((want.rank, want.alpha_s), (got.rank, 0.0));
            prop_assert!((got.new_s - want.traced_s).abs() <= 4e-9, "rank {}: {:?} against {:?}", got.rank, got, want);
            prop_assert!(call + point == 0 || got.alpha_s > 0.0, "{:?}", got);
        }
    }

    /// With no recording cost, correction changes nothing, whichever model.
    #[test]
    fn a_trace_without_recording_cost_is_left_as_it_is(
        (ranks, program_rounds) in (2u32..6).prop_flat_map(|n| (Just(n), rounds(n))),
    ) {
        let events = simulate(ranks, &program_rounds, None);
        let (program, outcome) = correct(ranks, events, Mode::MinSim);
        prop_assert_eq!(outcome.summary.events_corrected, 0);
        for (rank, steps) in program.flows.iter().enumerate() {
            for (index, step) in steps.iter().enumerate() {
                prop_assert_eq!(outcome.dates.of[rank][index], (step.event.start as i64, step.event.end as i64));
            }
        }
        prop_assert_eq!(outcome.summary.traced_run_time_s, outcome.summary.new_run_time_s);
        for rank in &outcome.summary.ranks {
            prop_assert_eq!((rank.traced_s, rank.alpha_s), (rank.new_s, 0.0));
        }
    }

    /// FULLSIM and Sarukkai–Malony leave no receive before its send either.
    #[test]
    fn every_model_keeps_causality(
        program_rounds in rounds(4),
        call in 0i64..20_000,
        mode in prop::sample::select(vec![Mode::MinSim, Mode::FullSim, Mode::SarukkaiMalony]),
    ) {
        let traced = simulate(4, &program_rounds, Some(Alphas { call, point: call / 2, spread: call / 4 + 1, seed: call as u64 }));
        let (program, outcome) = correct(4, traced, mode);
        prop_assert_eq!(outcome.summary.causality_violations_after, 0);
        for info in &program.messages {
            let Some(recv) = info.recv else { continue };
            let sent = outcome.dates.of[info.send.0 as usize][info.send.1].0;
            let received = outcome.dates.of[recv.0 as usize][recv.1].1;
            prop_assert!(received >= sent, "{:?}: received at {} before sent at {}", info, received, sent);
        }
        for dates in &outcome.dates.of {
            for pair in dates.windows(2) {
                prop_assert!(pair[1].0 >= pair[0].1, "a rank goes back in time: {:?}", pair);
            }
        }
    }
}
