//! Non-blocking collectives on intercommunicators
//! (`Communicator::start_inter_collective`, under MPI's `MPI_Ibcast`...
//! on an intercommunicator), as property tests: a world of 2 to 6 thread
//! ranks cut into two groups at random (any ranks, in any order), every
//! collective, size and root (`MPI_ROOT` in either group): each rank gets
//! the other group's data, reductions combined in the other group's rank
//! order; and a rank whose group waits for the other one before it
//! completes its call never holds that group up.

mod affine;

use std::sync::{Arc, Mutex};

use grappe::{Communicator, Deliver, InterCollective, InterRoot};
use proptest::prelude::*;

use affine::{compose_bytes, composed, maps};

/// The block of `len` bytes the rank whose id is `id` gives rank `to`.
fn block(id: usize, to: usize, len: usize) -> Vec<u8> {
    (0..len).map(|i| (id * 31 + to * 7 + i) as u8).collect()
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
}

const KINDS: [Kind; 9] = [
    Kind::Barrier,
    Kind::Bcast,
    Kind::Reduce,
    Kind::Allreduce,
    Kind::Gather,
    Kind::Scatter,
    Kind::Allgather,
    Kind::Alltoall,
    Kind::ReduceScatter,
];

/// A cut of the world into group A (world ranks in their group order) and
/// group B, with the root of the rooted collectives: in A or in B, and
/// its rank there.
#[derive(Debug, Clone)]
struct Cut {
    a: Vec<usize>,
    b: Vec<usize>,
    root_in_a: bool,
    root: usize,
}

fn cuts() -> impl Strategy<Value = Cut> {
    (2usize..=6)
        .prop_flat_map(|n| (Just((0..n).collect::<Vec<_>>()).prop_shuffle(), 1..n, any::<bool>(), 0usize..6))
        .prop_map(|(order, split, root_in_a, seed)| {
            let (a, b) = (order[..split].to_vec(), order[split..].to_vec());
            let root = seed % if root_in_a { a.len() } else { b.len() };
            Cut { a, b, root_in_a, root }
        })
}

/// One rank's view of the cut: its group, its rank there, the other group.
struct View<'c> {
    in_a: bool,
    me: usize,
    mine: &'c [usize],
    theirs: &'c [usize],
}

impl View<'_> {
    /// The id of rank `rank` of group A (`a`) or B: its data's seed.
    fn id(a: bool, rank: usize) -> usize {
        rank + if a { 0 } else { 16 }
    }
    fn my_id(&self) -> usize {
        View::id(self.in_a, self.me)
    }
    fn their_ids(&self) -> Vec<usize> {
        (0..self.theirs.len()).map(|r| View::id(!self.in_a, r)).collect()
    }
    fn root(&self, cut: &Cut) -> InterRoot {
        match (self.in_a == cut.root_in_a, self.me == cut.root) {
            (true, true) => InterRoot::Root,
            (true, false) => InterRoot::Idle,
            (false, _) => InterRoot::Remote(cut.root),
        }
    }
}

/// The rank's call of `kind` with `n` elements, and the result it must get.
fn case(kind: Kind, cut: &Cut, v: &View, n: usize) -> (InterCollective, Vec<u8>) {
    let (g, o) = (v.mine.len(), v.theirs.len());
    let root = v.root(cut);
    let root_id = View::id(cut.root_in_a, cut.root);
    let theirs = v.their_ids();
    match kind {
        Kind::Barrier => (InterCollective::Barrier, Vec::new()),
        Kind::Bcast => match root {
            InterRoot::Root => (InterCollective::Bcast { root, data: block(root_id, 0, n) }, Vec::new()),
            InterRoot::Idle => (InterCollective::Bcast { root, data: Vec::new() }, Vec::new()),
            InterRoot::Remote(_) => (InterCollective::Bcast { root, data: vec![0; n] }, block(root_id, 0, n)),
        },
        Kind::Reduce => {
            let (data, expected) = match root {
                InterRoot::Root => (vec![0; 8 * n], composed(theirs.iter().copied(), n)),
                InterRoot::Idle => (Vec::new(), Vec::new()),
                InterRoot::Remote(_) => (maps(v.my_id(), n), Vec::new()),
            };
            (InterCollective::Reduce { root, data, combine: compose_bytes(), commutative: false }, expected)
        }
        Kind::Allreduce => {
            let what =
                InterCollective::Allreduce { data: maps(v.my_id(), n), combine: compose_bytes(), commutative: false };
            (what, composed(theirs.iter().copied(), n))
        }
        Kind::Gather => match root {
            InterRoot::Root => {
                let counts: Vec<usize> = (0..o).map(|r| n + r).collect();
                let all = theirs.iter().enumerate().flat_map(|(r, &id)| block(id, 0, n + r)).collect();
                (InterCollective::Gather { root, data: Vec::new(), counts }, all)
            }
            InterRoot::Idle => (InterCollective::Gather { root, data: Vec::new(), counts: Vec::new() }, Vec::new()),
            InterRoot::Remote(_) => {
                let data = block(v.my_id(), 0, n + v.me);
                (InterCollective::Gather { root, data, counts: Vec::new() }, Vec::new())
            }
        },
        Kind::Scatter => match root {
            InterRoot::Root => {
                let counts: Vec<usize> = (0..o).map(|r| n + r).collect();
                let data = (0..o).flat_map(|r| block(root_id, r, n + r)).collect();
                (InterCollective::Scatter { root, data, counts, mine: 0 }, Vec::new())
            }
            InterRoot::Idle => {
                (InterCollective::Scatter { root, data: Vec::new(), counts: Vec::new(), mine: 0 }, Vec::new())
            }
            InterRoot::Remote(_) => {
                let mine = n + v.me;
                (
                    InterCollective::Scatter { root, data: Vec::new(), counts: Vec::new(), mine },
                    block(root_id, v.me, mine),
                )
            }
        },
        Kind::Allgather => {
            let counts: Vec<usize> = (0..o).map(|r| n + r).collect();
            let all = theirs.iter().enumerate().flat_map(|(r, &id)| block(id, 0, n + r)).collect();
            (InterCollective::Allgather { data: block(v.my_id(), 0, n + v.me), counts }, all)
        }
        Kind::Alltoall => {
            // Rank r of a group sends n + r + t bytes to rank t of the other.
            let send_counts: Vec<usize> = (0..o).map(|t| n + v.me + t).collect();
            let recv_counts: Vec<usize> = (0..o).map(|r| n + r + v.me).collect();
            let data = (0..o).flat_map(|t| block(v.my_id(), t, send_counts[t])).collect();
            let expected = theirs.iter().enumerate().flat_map(|(r, &id)| block(id, v.me, recv_counts[r])).collect();
            (InterCollective::Alltoall { data, send_counts, recv_counts }, expected)
        }
        Kind::ReduceScatter => {
            // Both groups reduce `total` maps; each cuts them over its ranks.
            let total = n + 3;
            let counts: Vec<usize> = (0..g).map(|r| 8 * (total / g + usize::from(r < total % g))).collect();
            let start: usize = counts[..v.me].iter().sum();
            let expected = composed(theirs.iter().copied(), total)[start..start + counts[v.me]].to_vec();
            let what = InterCollective::ReduceScatter {
                data: maps(v.my_id(), total),
                counts,
                combine: compose_bytes(),
                commutative: false,
            };
            (what, expected)
        }
    }
}

type Got = Arc<Mutex<Option<Vec<u8>>>>;

fn catch() -> (Deliver, Got) {
    let got: Got = Arc::new(Mutex::new(None));
    let into = got.clone();
    (Box::new(move |bytes: &[u8]| *into.lock().unwrap() = Some(bytes.to_vec())), got)
}

/// The rank's group communicator and the intercommunicator of the cut
/// (leaders: rank 0 of each group).
fn join(cut: &Cut, world: &Communicator) -> grappe::Result<(Communicator, Communicator)> {
    let me = world.rank();
    let in_a = cut.a.contains(&me);
    let (mine, theirs) = if in_a { (&cut.a, &cut.b) } else { (&cut.b, &cut.a) };
    let key = mine.iter().position(|&w| w == me).expect("in its group") as i32;
    let local = world.split(Some(in_a as u32), key)?.expect("a color");
    let peer = (local.rank() == 0).then_some((world, theirs[0], 7));
    let inter = local.intercomm_create(0, peer)?;
    Ok((local, inter))
}

/// Runs `kind` on the cut; the result each rank got and the one it must get.
fn run_case(kind: Kind, cut: &Cut, n: usize, world: &Communicator) -> grappe::Result<(Vec<u8>, Vec<u8>)> {
    let (_local, inter) = join(cut, world)?;
    let in_a = cut.a.contains(&world.rank());
    let (mine, theirs) = if in_a { (&cut.a[..], &cut.b[..]) } else { (&cut.b[..], &cut.a[..]) };
    let view = View { in_a, me: inter.rank(), mine, theirs };
    let (what, expected) = case(kind, cut, &view, n);
    let (deliver, got) = catch();
    world.scope(|scope| inter.start_inter_collective(scope, what, deliver)?.wait())?;
    let got = got.lock().unwrap().take().expect("the result was delivered before completion");
    Ok((got, expected))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn every_intercommunicator_collective_gives_each_rank_the_other_groups_data(
        kind in proptest::sample::select(&KINDS[..]),
        cut in cuts(),
        n in prop_oneof![0usize..4, 100usize..300, 9000usize..9100],
    ) {
        let p = cut.a.len() + cut.b.len();
        let shared = cut.clone();
        let outcomes = grappe::testing::threads(p, move |world| run_case(kind, &shared, n, world));
        for (rank, outcome) in outcomes.into_iter().enumerate() {
            let (got, expected) = outcome.expect("the collective succeeds");
            prop_assert!(got == expected, "{kind:?} on {cut:?}, {n} elements: world rank {rank} got {} bytes, expected {}", got.len(), expected.len());
        }
    }
}

#[test]
fn a_group_that_waits_for_the_other_before_completing_does_not_hold_it_up() {
    // Group A starts an allreduce, then waits for a message group B sends
    // only once its own allreduce completed: A's call must have returned
    // and its schedule must move on inside A's blocking receive.
    let cut = Cut { a: vec![0, 2], b: vec![1, 3, 4], root_in_a: true, root: 0 };
    let results = grappe::testing::threads(5, move |world| -> grappe::Result<Vec<u8>> {
        let (local, inter) = join(&cut, world)?;
        let in_a = cut.a.contains(&world.rank());
        let data = maps(View::id(in_a, inter.rank()), 4);
        let what = InterCollective::Allreduce { data, combine: compose_bytes(), commutative: false };
        let (deliver, got) = catch();
        world.scope(|scope| -> grappe::Result<()> {
            let request = inter.start_inter_collective(scope, what, deliver)?;
            if in_a {
                let mut token = [0u64];
                inter.recv(&mut token, 0, 5)?;
                assert_eq!(token[0], 99, "B's token");
                request.wait()?;
            } else {
                request.wait()?;
                local.barrier()?;
                if inter.rank() == 0 {
                    for to in 0..inter.size() {
                        inter.send(&[99u64], to, 5)?;
                    }
                }
            }
            Ok(())
        })?;
        Ok(got.lock().unwrap().take().expect("delivered"))
    });
    for (rank, outcome) in results.into_iter().enumerate() {
        let in_a = [0, 2].contains(&rank);
        let other: Vec<usize> = if in_a { (16..19).collect() } else { vec![0, 1] };
        assert_eq!(outcome.expect("every rank completes"), composed(other.iter().copied(), 4), "world rank {rank}");
    }
}

#[test]
fn a_root_past_the_remote_group_is_refused_when_the_collective_starts() {
    let cut = Cut { a: vec![0], b: vec![1], root_in_a: true, root: 0 };
    let results = grappe::testing::threads(2, move |world| -> grappe::Result<()> {
        let (_local, inter) = join(&cut, world)?;
        inter.set_error_handler(grappe::ErrorHandler::Return);
        let what = InterCollective::Bcast { root: InterRoot::Remote(1), data: vec![0; 4] };
        world.scope(|scope| inter.start_inter_collective(scope, what, Box::new(|_| {}))?.wait().map(drop))
    });
    for outcome in results {
        assert!(matches!(outcome, Err(grappe::Error::InvalidRank { rank: 1, size: 1 })), "{outcome:?}");
    }
}
