//! Intercommunicators, as property tests: a world of 2 to 6 thread ranks
//! cut into two groups at random (any ranks, in any order, any leaders),
//! joined by `intercomm_create`. Point-to-point ranks name the other
//! group and statuses name the sender by its rank in its own group; a
//! duplicate's traffic stays apart; `merge` puts the group that passes
//! `high = false` first, and a merged communicator works as any other.

use grappe::{ANY_SOURCE, Communicator};
use proptest::prelude::*;

/// A cut of the world: group A's world ranks in their group order, group
/// B's, and each group's leader (a rank of its group).
#[derive(Debug, Clone)]
struct Cut {
    a: Vec<usize>,
    b: Vec<usize>,
    leader_a: usize,
    leader_b: usize,
}

fn cuts() -> impl Strategy<Value = Cut> {
    (2usize..=6)
        .prop_flat_map(|n| (Just(n), Just((0..n).collect::<Vec<_>>()).prop_shuffle(), 1..n))
        .prop_flat_map(|(_, order, split)| {
            let (a, b) = (order[..split].to_vec(), order[split..].to_vec());
            let (na, nb) = (a.len(), b.len());
            (Just(a), Just(b), 0..na, 0..nb)
        })
        .prop_map(|(a, b, leader_a, leader_b)| Cut { a, b, leader_a, leader_b })
}

/// What one rank saw: its group (true for A), its local rank, the remote
/// size, the (status source, payload) of every message from the other
/// group, and its rank in the two merged communicators.
type Seen = (bool, usize, usize, Vec<(usize, u64)>, usize, usize);

fn run_cut(cut: &Cut, world: &Communicator) -> grappe::Result<Seen> {
    let me = world.rank();
    let in_a = cut.a.contains(&me);
    let (mine, theirs, leader, remote_leader) = match in_a {
        true => (&cut.a, &cut.b, cut.leader_a, cut.b[cut.leader_b]),
        false => (&cut.b, &cut.a, cut.leader_b, cut.a[cut.leader_a]),
    };
    // The group's own communicator, in the cut's order.
    let local = world.split(Some(in_a as u32), mine.iter().position(|&w| w == me).unwrap() as i32)?.expect("a color");
    let peer = (local.rank() == leader).then_some((world, remote_leader, 42));
    let inter = local.intercomm_create(leader, peer)?;
    assert!(inter.is_inter());
    assert_eq!(inter.size(), theirs.len(), "an intercommunicator's size is the remote group's");
    let dup = inter.dup()?;
    // Every rank sends its tag to every remote rank, on the duplicate
    // first so that a receive on the original would take the wrong one.
    let payload = |from: usize, to: usize| (from * 100 + to) as u64 + if in_a { 0 } else { 10_000 };
    for to in 0..inter.size() {
        dup.send(&[u64::MAX], to, 3)?;
        inter.send(&[payload(inter.rank(), to)], to, 3)?;
    }
    let mut seen = Vec::new();
    for _ in 0..inter.size() {
        let mut got = [0u64];
        let status = inter.recv(&mut got[..], ANY_SOURCE, 3)?;
        seen.push((status.source, got[0]));
        let mut other = [0u64];
        dup.recv(&mut other[..], status.source, 3)?;
        assert_eq!(other[0], u64::MAX, "the duplicate's message");
    }
    seen.sort_unstable();
    let merged = inter.merge(!in_a)?;
    assert_eq!(merged.size(), world.size());
    let mut total = [0u64];
    merged.allreduce(&[me as u64], &mut total[..], grappe::Sum)?;
    assert_eq!(total[0], (0..world.size() as u64).sum::<u64>());
    let same = inter.merge(false)?;
    Ok((in_a, inter.rank(), inter.size(), seen, merged.rank(), same.rank()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn groups_cut_at_random_talk_across_and_merge(cut in cuts()) {
        let n = cut.a.len() + cut.b.len();
        let results = grappe::testing::threads(n, |world| run_cut(&cut, world));
        let mut a_first = None;
        for (world_rank, result) in results.into_iter().enumerate() {
            let (in_a, lrank, rsize, seen, merged, same) = result.expect("the rank ran");
            let (mine, theirs) = if in_a { (&cut.a, &cut.b) } else { (&cut.b, &cut.a) };
            prop_assert_eq!(mine[lrank], world_rank, "local rank in the cut's order");
            prop_assert_eq!(rsize, theirs.len());
            let expected: Vec<(usize, u64)> = (0..theirs.len())
                .map(|from| (from, (from * 100 + lrank) as u64 + if in_a { 10_000 } else { 0 }))
                .collect();
            prop_assert_eq!(seen, expected, "one message from each remote rank, named by its rank in its group");
            let low = if in_a { 0 } else { cut.a.len() };
            prop_assert_eq!(merged, low + lrank, "merge puts the high = false group (A) first");
            // Both pass false: one group first, the same for every rank.
            let first = same == lrank;
            let this_a_first = if in_a { first } else { !first };
            prop_assert!(same == lrank || same == theirs.len() + lrank);
            prop_assert_eq!(*a_first.get_or_insert(this_a_first), this_a_first);
        }
    }
}

#[test]
fn merge_is_refused_on_an_intracommunicator() {
    let results = grappe::testing::threads(1, |world| world.merge(false).map(|_| ()));
    let error = results.into_iter().next().unwrap().expect_err("merge needs an intercommunicator");
    assert!(error.to_string().contains("not an intercommunicator"), "{error}");
}
