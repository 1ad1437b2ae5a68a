//! Collectives called with counts that do not match across ranks: every
//! rank returns, within a bound that only a hang exceeds, with its right
//! data or a collective-mismatch error naming the ranks and sizes, and
//! the communicator is revoked (a barrier on it fails everywhere). Random
//! scenarios over every collective, size class (so every algorithm and
//! path: arena, eager, rendezvous, large-message algorithms), odd rank,
//! odd count and root, on thread ranks in-process; sweeps of them on
//! processes and hybrids under `grappe run`; and one test per way of
//! finding a mismatch.

#[path = "../examples/mismatch_check/checks.rs"]
mod checks;
mod util;

use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use checks::{ALL, Coll, Outcome, Scenario, Seen};
use grappe::{Communicator, Error, ErrorClass, Sum};
use proptest::prelude::*;

/// Longer than any of these jobs takes on a loaded machine: reaching it
/// means a rank hangs.
const LIMIT: Duration = Duration::from_secs(120);

/// Runs `body` on `n` thread ranks, failing the test if the job has not
/// ended within [`LIMIT`].
fn threads_within<R, F>(n: usize, what: &str, body: F) -> Vec<R>
where
    F: Fn(&Communicator) -> R + Sync + Send + 'static,
    R: Send + 'static,
{
    let (done, ended) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(grappe::testing::threads(n, body));
    });
    match ended.recv_timeout(LIMIT) {
        Ok(results) => results,
        Err(_) => panic!("{what}: some rank did not return within {LIMIT:?}"),
    }
}

fn scenarios() -> impl Strategy<Value = (usize, Scenario)> {
    (2usize..=9, 0..ALL.len(), 0usize..5, any::<u64>(), 0usize..20, any::<u64>(), 0usize..64, 0usize..64).prop_flat_map(
        |(ranks, coll, class, pick, how, seed, odd, root)| {
            let count = checks::count_in_class(class, pick);
            (any::<bool>(), any::<bool>()).prop_map(move |(arena, commutative)| {
                let scenario = Scenario {
                    coll: ALL[coll],
                    count,
                    odd_rank: odd % ranks,
                    odd_count: checks::odd_count(count, how, pick.rotate_left(17)),
                    root: root % ranks,
                    arena,
                    commutative,
                    seed,
                };
                (ranks, scenario)
            })
        },
    )
}

fn run_scenario(ranks: usize, scenario: &Scenario) -> Vec<Outcome> {
    let s = scenario.clone();
    threads_within(ranks, &format!("{scenario:?} on {ranks} ranks"), move |world| checks::run(&s, world))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, max_shrink_iters: 32, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn every_rank_returns_its_right_data_or_a_mismatch_error((ranks, scenario) in scenarios()) {
        let outcomes = run_scenario(ranks, &scenario);
        if let Err(e) = checks::judge(&scenario, ranks, &outcomes) {
            return Err(TestCaseError::fail(format!("{e}\n{outcomes:#?}")));
        }
    }
}

/// Every collective at every size class, the odd rank passing one element
/// more, on thread ranks: the grid the random scenarios sample.
#[test]
fn every_collective_and_size_class_on_five_thread_ranks() {
    for coll in ALL {
        for class in 0..5 {
            for arena in [true, false] {
                let count = checks::count_in_class(class, 7);
                let s = Scenario {
                    coll,
                    count,
                    odd_rank: 3,
                    odd_count: count + 1,
                    root: 1,
                    arena,
                    commutative: class % 2 == 0,
                    seed: 11,
                };
                let outcomes = run_scenario(5, &s);
                checks::judge(&s, 5, &outcomes).unwrap_or_else(|e| panic!("{e}\n{outcomes:#?}"));
            }
        }
    }
}

/// The calls an error names: (rank, bytes) for each.
fn named(e: &Error) -> Vec<(usize, Option<u64>)> {
    match e {
        Error::CollectiveMismatch(why) => why.calls.iter().map(|c| (c.rank, c.bytes)).collect(),
        other => panic!("expected a collective mismatch, got {other:?}"),
    }
}

/// An allreduce of 2 elements on rank 0 and 3 on the others: the
/// shared-memory exchange's last arriver sees it, and every rank gets the
/// error naming rank 0's 16 bytes against the others' 24 (this returned
/// `Ok` everywhere, with stale bytes in the results).
#[test]
fn arena_allreduce_of_two_elements_against_three() {
    let results = threads_within(4, "arena allreduce", |world| {
        let comm = world.dup().unwrap();
        assert!(comm.has_shared_arena());
        let mine = vec![1u64; if world.rank() == 0 { 2 } else { 3 }];
        let mut sum = vec![0u64; mine.len()];
        (comm.allreduce(&mine[..], &mut sum[..], Sum), sum)
    });
    for (rank, (result, sum)) in results.into_iter().enumerate() {
        let e = result.expect_err(&format!("rank {rank} returned {sum:?}"));
        assert_eq!(e.class(), ErrorClass::Truncate);
        let calls = named(&e);
        assert!(calls.contains(&(0, Some(16))) && calls.iter().any(|&(r, b)| r > 0 && b == Some(24)), "{e}");
        let text = e.to_string();
        assert!(text.starts_with("allreduce: ") && text.contains("rank 0 called with 16 bytes"), "{text}");
        assert!(text.contains("revoked"), "{text}");
    }
}

/// The same on messages (recursive doubling): ranks 0 and 1 see the
/// lengths differ; ranks 2 and 3, which then wait for them, are released
/// by the revocation (they hung).
#[test]
fn message_allreduce_of_two_elements_against_three() {
    let s = Scenario {
        coll: Coll::Allreduce,
        count: 3,
        odd_rank: 0,
        odd_count: 2,
        root: 0,
        arena: false,
        commutative: true,
        seed: 1,
    };
    let outcomes = run_scenario(4, &s);
    checks::judge(&s, 4, &outcomes).unwrap_or_else(|e| panic!("{e}\n{outcomes:#?}"));
    assert!(outcomes.iter().all(|o| matches!(o.call, Seen::Mismatch(_))), "{outcomes:#?}");
}

/// One rank's allreduce is too large for the arena and goes by messages
/// while the others wait in the arena: a waiter finds the odd call in the
/// arena's headers after a sleep nobody cut short, and every rank fails
/// (they all hung).
#[test]
fn a_call_that_leaves_the_arena_is_found_by_the_waiters() {
    let s = Scenario {
        coll: Coll::Allreduce,
        count: 2,
        odd_rank: 2,
        odd_count: 300,
        root: 0,
        arena: true,
        commutative: true,
        seed: 2,
    };
    let outcomes = run_scenario(4, &s);
    checks::judge(&s, 4, &outcomes).unwrap_or_else(|e| panic!("{e}\n{outcomes:#?}"));
}

/// A gather whose odd rank passes one element (binomial tree: it sends to
/// its parent, rank 2) while the others pass blocks past the linear
/// threshold (each sends straight to the root, and rank 2 receives
/// nothing): no rank ever receives a message of the wrong size, and the
/// root waits for rank 3 (it hung). After a sleep nobody cut short the
/// root asks rank 3 where it stands, learns that it made this call with
/// another size, and revokes.
#[test]
fn a_peer_that_sent_elsewhere_is_found_by_asking_it() {
    let s = Scenario {
        coll: Coll::Gather,
        count: 1811,
        odd_rank: 3,
        odd_count: 1,
        root: 0,
        arena: false,
        commutative: true,
        seed: 4,
    };
    let outcomes = run_scenario(8, &s);
    checks::judge(&s, 8, &outcomes).unwrap_or_else(|e| panic!("{e}\n{outcomes:#?}"));
    match &outcomes[0].call {
        Seen::Mismatch(report) => assert_eq!(report.found_by, 0, "{report:?}"),
        other => panic!("the root saw {other:?}"),
    }
}

/// A reduce whose root alone passes a vector past the binomial threshold
/// (Rabenseifner: it swaps halves with rank 1) while the others send
/// their vectors (too large for the arena) up the binomial tree and go on
/// to wait in the arena: the root's receive from rank 1 gets rank 1's
/// whole vector, and its rendezvous send to rank 1 waits for a receive
/// that rank 1 will never post (it hung). The root revokes as soon as its
/// receive shows the mismatch; rank 1 then drops the send, and every rank
/// returns.
#[test]
fn a_sender_whose_receiver_moved_on_is_released() {
    let s = Scenario {
        coll: Coll::Reduce,
        count: 200,
        odd_rank: 2,
        odd_count: 1668,
        root: 2,
        arena: true,
        commutative: true,
        seed: 6,
    };
    let outcomes = run_scenario(3, &s);
    checks::judge(&s, 3, &outcomes).unwrap_or_else(|e| panic!("{e}\n{outcomes:#?}"));
}

/// A bcast whose root alone passes a vector too large for the arena: it
/// sends eager messages, returns, and waits for the others' word on
/// another communicator; nobody waits for a message of the bcast and the
/// root calls nothing more on its communicator. The others wait in the
/// arena, where one of them finds the root's call in its header (they
/// hung); the revocation reaches the root too.
#[test]
fn a_call_that_left_the_arena_and_returned_is_found_in_its_header() {
    let results = threads_within(4, "bcast out of the arena", |world| {
        let comm = world.dup().unwrap();
        let mut buf = vec![world.rank() as u64; if world.rank() == 0 { 200 } else { 2 }];
        let outcome = comm.bcast(&mut buf[..], 0);
        if world.rank() == 0 {
            for src in 1..world.size() {
                world.recv(&mut [0u8; 1][..], src, 9).unwrap();
            }
        } else {
            world.send(&[1u8][..], 0, 9).unwrap();
        }
        (outcome, comm.barrier())
    });
    let (root, after) = &results[0];
    assert!(root.is_ok() && matches!(after, Err(Error::CollectiveMismatch(_))), "root: {root:?}, {after:?}");
    for (rank, (outcome, after)) in results.iter().enumerate().skip(1) {
        let e = outcome.as_ref().expect_err(&format!("rank {rank}"));
        assert!(named(e).contains(&(0, Some(1600))), "{e}");
        assert!(matches!(after, Err(Error::CollectiveMismatch(_))), "rank {rank}: {after:?}");
    }
}

/// An allgatherv in which rank 2 believes counts [3, 2, 2, 2] and the
/// others [2, 3, 2, 2]: every message has the length its receiver expects
/// (recursive doubling on 4 ranks), so only the signature in the tags
/// shows that rank 2 lays its blocks out otherwise (it returned `Ok` with
/// rank 0's and rank 1's elements in the wrong places). The same in the
/// arena, whose exchange compares the signatures.
#[test]
fn counts_that_differ_only_in_layout_are_found() {
    for arena in [false, true] {
        let results = threads_within(4, "allgatherv layouts", move |world| {
            let comm = if arena { world.dup().unwrap() } else { checks::without_arena(world) };
            let counts: &[usize] = if world.rank() == 2 { &[3, 2, 2, 2] } else { &[2, 3, 2, 2] };
            let mine = vec![world.rank() as u64; counts[world.rank()]];
            let mut all = vec![0u64; 9];
            let result = comm.allgatherv(&mine[..], &mut all[..], counts);
            (result, all)
        });
        for (rank, (result, all)) in results.into_iter().enumerate() {
            let e = result.expect_err(&format!("arena {arena}: rank {rank} returned {all:?}"));
            assert!(matches!(e, Error::CollectiveMismatch(_)), "{e}");
        }
    }
}

/// A bcast whose root passes no element while the others expect five:
/// the root still sends (empty messages), so the others see the lengths
/// differ (the root returned at once and they hung).
#[test]
fn an_empty_root_still_takes_part() {
    for arena in [false, true] {
        let s = Scenario {
            coll: Coll::Bcast,
            count: 5,
            odd_rank: 1,
            odd_count: 0,
            root: 1,
            arena,
            commutative: true,
            seed: 3,
        };
        let outcomes = run_scenario(5, &s);
        checks::judge(&s, 5, &outcomes).unwrap_or_else(|e| panic!("{e}\n{outcomes:#?}"));
    }
}

/// Ranks that name different roots in the arena: the exchange compares
/// them too.
#[test]
fn different_roots_are_found_in_the_arena() {
    let results = threads_within(3, "roots", |world| {
        let comm = world.dup().unwrap();
        let root = if world.rank() == 2 { 1 } else { 0 };
        let mut buf = [world.rank() as u64; 2];
        comm.bcast(&mut buf[..], root)
    });
    for result in results {
        let e = result.expect_err("a bcast with two roots");
        assert!(e.to_string().contains("root 1") && e.to_string().contains("root 0"), "{e}");
    }
}

fn sweep_passes(args: &[&str], ranks: usize, seed: u64, cases: usize) {
    let mut cmd = Command::new(util::grappe());
    cmd.arg("run").args(args).arg(util::example("mismatch_check"));
    cmd.args(["sweep", &seed.to_string(), &cases.to_string()]);
    let output = util::run_bounded(cmd, Duration::from_secs(300));
    assert!(output.status.success(), "grappe run {args:?}: {}", util::describe(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let outcomes = Outcome::read_all(&stdout, cases).unwrap_or_else(|e| panic!("{e}\n{}", util::describe(&output)));
    for (scenario, outcomes) in checks::sweep(seed, ranks, cases).iter().zip(&outcomes) {
        checks::judge(scenario, ranks, outcomes).unwrap_or_else(|e| panic!("grappe run {args:?}: {e}\n{outcomes:#?}"));
    }
}

#[test]
fn sweep_on_five_processes() {
    sweep_passes(&["-n", "5"], 5, 41, 60);
}

#[test]
fn sweep_on_three_processes_of_two_thread_ranks() {
    sweep_passes(&["-n", "6", "--threads-per-process", "2"], 6, 42, 60);
}
