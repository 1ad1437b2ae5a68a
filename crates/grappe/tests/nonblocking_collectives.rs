//! Non-blocking collectives (`Communicator::start_collective`, under
//! MPI's `MPI_Ibarrier`, `MPI_Iallreduce`...): right results for every
//! collective, size, root and communicator size; progress while the rank
//! waits in other calls; several at once; mismatched sizes reported.

mod affine;

use std::sync::{Arc, Mutex};

use grappe::{Communicator, Deliver, NonBlocking};
use proptest::prelude::*;

use affine::{compose_bytes, composed, maps};

/// Rank `rank`'s block of `len` bytes for rank `to`.
fn block(rank: usize, to: usize, len: usize) -> Vec<u8> {
    (0..len).map(|i| (rank * 31 + to * 7 + i) as u8).collect()
}

/// Starts `what` and waits for it; the bytes delivered.
fn run(world: &Communicator, what: NonBlocking) -> grappe::Result<Vec<u8>> {
    let (deliver, got) = catch();
    world.scope(|scope| -> grappe::Result<()> {
        world.start_collective(scope, what, deliver)?.wait()?;
        Ok(())
    })?;
    Ok(take(&got))
}

type Got = Arc<Mutex<Option<Vec<u8>>>>;

fn catch() -> (Deliver, Got) {
    let got: Got = Arc::new(Mutex::new(None));
    let into = got.clone();
    (Box::new(move |bytes: &[u8]| *into.lock().unwrap() = Some(bytes.to_vec())), got)
}

fn take(got: &Got) -> Vec<u8> {
    got.lock().unwrap().take().expect("the result was delivered before completion")
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Barrier,
    Bcast,
    Reduce,
    Allreduce,
    Gather,
    Scatter,
    Allgather,
    Alltoall,
    ReduceScatter,
    Scan,
    Exscan,
}

const KINDS: [Kind; 11] = [
    Kind::Barrier,
    Kind::Bcast,
    Kind::Reduce,
    Kind::Allreduce,
    Kind::Gather,
    Kind::Scatter,
    Kind::Allgather,
    Kind::Alltoall,
    Kind::ReduceScatter,
    Kind::Scan,
    Kind::Exscan,
];

/// Rank `me`'s call of `kind` on `p` ranks with `n` elements (or bytes)
/// and root `root`, and the result it must get.
fn case(kind: Kind, p: usize, me: usize, n: usize, root: usize) -> (NonBlocking, Vec<u8>) {
    let sizes: Vec<usize> = (0..p).map(|r| n + r).collect();
    match kind {
        Kind::Barrier => (NonBlocking::Barrier, Vec::new()),
        Kind::Bcast => {
            let data = if me == root { block(root, 0, n) } else { vec![0; n] };
            (NonBlocking::Bcast { root, data }, block(root, 0, n))
        }
        Kind::Reduce => {
            let what = NonBlocking::Reduce { root, data: maps(me, n), combine: compose_bytes(), commutative: false };
            (what, if me == root { composed(0..p, n) } else { Vec::new() })
        }
        Kind::Allreduce => {
            let what = NonBlocking::Allreduce { data: maps(me, n), combine: compose_bytes(), commutative: false };
            (what, composed(0..p, n))
        }
        Kind::Gather => {
            let what = NonBlocking::Gather { root, data: block(me, root, sizes[me]), counts: sizes.clone() };
            let all = (0..p).flat_map(|r| block(r, root, sizes[r])).collect();
            (what, if me == root { all } else { Vec::new() })
        }
        Kind::Scatter => {
            let data = if me == root { (0..p).flat_map(|r| block(root, r, sizes[r])).collect() } else { Vec::new() };
            let counts = if me == root { sizes.clone() } else { Vec::new() };
            (NonBlocking::Scatter { root, data, counts, mine: sizes[me] }, block(root, me, sizes[me]))
        }
        Kind::Allgather => {
            let what = NonBlocking::Allgather { data: block(me, 0, sizes[me]), counts: sizes.clone() };
            (what, (0..p).flat_map(|r| block(r, 0, sizes[r])).collect())
        }
        Kind::Alltoall => {
            // Rank r sends n + r + to bytes to rank `to`.
            let send_counts: Vec<usize> = (0..p).map(|to| n + me + to).collect();
            let recv_counts: Vec<usize> = (0..p).map(|from| n + from + me).collect();
            let data = (0..p).flat_map(|to| block(me, to, send_counts[to])).collect();
            let expected = (0..p).flat_map(|from| block(from, me, recv_counts[from])).collect();
            (NonBlocking::Alltoall { data, send_counts, recv_counts }, expected)
        }
        Kind::ReduceScatter => {
            let counts: Vec<usize> = (0..p).map(|r| 8 * (n + r)).collect();
            let total: usize = counts.iter().sum::<usize>() / 8;
            let all = composed(0..p, total);
            let start: usize = counts[..me].iter().sum();
            let expected = all[start..start + counts[me]].to_vec();
            (NonBlocking::ReduceScatter { data: maps(me, total), counts, combine: compose_bytes() }, expected)
        }
        Kind::Scan => (
            NonBlocking::Scan { data: maps(me, n), combine: compose_bytes(), exclusive: false },
            composed(0..me + 1, n),
        ),
        Kind::Exscan => {
            let expected = if me == 0 { Vec::new() } else { composed(0..me, n) };
            (NonBlocking::Scan { data: maps(me, n), combine: compose_bytes(), exclusive: true }, expected)
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn every_collective_gives_every_rank_its_result(
        kind in proptest::sample::select(&KINDS[..]),
        p in 1usize..6,
        n in prop_oneof![0usize..4, 100usize..300, 9000usize..9100],
        root_seed in 0usize..16,
    ) {
        let root = root_seed % p;
        let outcomes = grappe::testing::threads(p, move |world| -> grappe::Result<(Vec<u8>, Vec<u8>)> {
            let (what, expected) = case(kind, p, world.rank(), n, root);
            Ok((run(world, what)?, expected))
        });
        for (rank, outcome) in outcomes.into_iter().enumerate() {
            let (got, expected) = outcome.expect("the collective succeeds");
            prop_assert!(got == expected, "{kind:?} on {p} ranks, {n} elements, root {root}: rank {rank} got {} bytes, expected {}", got.len(), expected.len());
        }
    }
}

#[test]
fn a_collective_moves_on_while_its_rank_waits_in_a_blocking_receive() {
    // Rank 0 starts a barrier, then waits to receive from every other
    // rank, which sends only once its own barrier is over: the
    // dissemination's later rounds need rank 0 to move its barrier on
    // from inside the receive.
    let results = grappe::testing::threads(5, |world| -> grappe::Result<u64> {
        world.scope(|scope| -> grappe::Result<u64> {
            let barrier = world.start_collective(scope, NonBlocking::Barrier, Box::new(|_| {}))?;
            if world.rank() == 0 {
                let mut sum = 0;
                for _ in 1..world.size() {
                    let mut got = [0u64];
                    world.recv(&mut got, grappe::ANY_SOURCE, 9)?;
                    sum += got[0];
                }
                barrier.wait()?;
                Ok(sum)
            } else {
                barrier.wait()?;
                world.send(&[world.rank() as u64], 0, 9)?;
                Ok(0)
            }
        })
    });
    assert_eq!(results[0].as_ref().expect("rank 0"), &(1 + 2 + 3 + 4));
}

#[test]
fn several_collectives_run_at_once_and_complete_in_any_order_beside_blocking_ones() {
    let results = grappe::testing::threads(4, |world| -> grappe::Result<Vec<Vec<u8>>> {
        let me = world.rank();
        let p = world.size();
        let mut catches = Vec::new();
        world.scope(|scope| -> grappe::Result<()> {
            let mut requests = Vec::new();
            for round in 0..3 {
                let (deliver, got) = catch();
                let data = maps(me, 5 + round);
                let what = NonBlocking::Allreduce { data, combine: compose_bytes(), commutative: false };
                requests.push(world.start_collective(scope, what, deliver)?);
                catches.push(got);
            }
            // A blocking collective meanwhile, on the same communicator.
            let mut total = [0u64];
            world.allreduce(&[me as u64], &mut total, grappe::Sum)?;
            assert_eq!(total[0], (0..p as u64).sum::<u64>());
            while let Some(request) = requests.pop() {
                request.wait()?;
            }
            Ok(())
        })?;
        Ok(catches.iter().map(take).collect())
    });
    for outcome in results {
        let got = outcome.expect("every rank");
        for (round, bytes) in got.iter().enumerate() {
            assert_eq!(bytes, &composed(0..4, 5 + round), "allreduce {round}");
        }
    }
}

#[test]
fn a_bcast_of_other_sizes_than_the_roots_is_a_mismatch_naming_both() {
    let results = grappe::testing::threads(2, |world| -> grappe::Result<Vec<u8>> {
        world.set_error_handler(grappe::ErrorHandler::Return);
        let len = if world.rank() == 0 { 8 } else { 16 };
        run(world, NonBlocking::Bcast { root: 0, data: vec![1; len] })
    });
    assert!(results[0].is_ok(), "the root's part completes: {:?}", results[0]);
    match &results[1] {
        Err(grappe::Error::CollectiveMismatch(m)) => {
            let text = m.to_string();
            assert!(text.contains("MPI_Ibcast") && text.contains("16") && text.contains("8"), "{text}");
        }
        other => panic!("rank 1 must report the mismatch, got {other:?}"),
    }
}

#[test]
fn a_root_out_of_range_is_refused_when_the_collective_starts() {
    let results = grappe::testing::threads(2, |world| -> grappe::Result<Vec<u8>> {
        world.set_error_handler(grappe::ErrorHandler::Return);
        run(world, NonBlocking::Bcast { root: 2, data: vec![0; 4] })
    });
    for outcome in results {
        assert!(matches!(outcome, Err(grappe::Error::InvalidRank { rank: 2, size: 2 })), "{outcome:?}");
    }
}
