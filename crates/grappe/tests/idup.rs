//! Duplicates made without blocking (`Communicator::start_dup`, under
//! MPI's `MPI_Comm_idup`): several under way at once on overlapping
//! communicators, started and completed in a different order on every
//! rank, beside blocking creations; every rank's communicators keep
//! contexts of their own, and every member of a duplicate agrees on its.
//! Splits made the same way (`Communicator::start_split`, under the MPI
//! library's splits at `MPI_THREAD_MULTIPLE`) beside duplicates: the
//! same, and each part holds the ranks of its color in key order.

use grappe::{Communicator, PendingDup, PendingSplit, Request};
use proptest::prelude::*;

/// A permutation of `0..n` drawn from `seed` (the same seed, the same
/// order; ranks use their own seeds, so their orders differ).
fn order(n: usize, seed: u64) -> Vec<usize> {
    let mut keys: Vec<(u64, usize)> =
        (0..n).map(|i| ((i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ seed, i)).collect();
    keys.sort_unstable_by_key(|&(k, _)| k.wrapping_mul(0xbf58_476d_1ce4_e5b9));
    keys.into_iter().map(|(_, i)| i).collect()
}

/// The communicators this rank duplicates: the world, a copy of it, and
/// the pairs (i, i+1) it belongs to, by pair index (`None` where it is
/// not a member).
fn bases(world: &Communicator) -> grappe::Result<Vec<Option<Communicator>>> {
    let (me, p) = (world.rank(), world.size());
    let mut bases = vec![Some(world.clone()), Some(world.dup()?)];
    for i in 0..p {
        let member = me == i || me == (i + 1) % p;
        let pair = world.split(member.then_some(0), if me == i { 0 } else { 1 })?;
        bases.push(pair);
    }
    Ok(bases)
}

/// Every member of `comm` names the same context for it.
fn agreed(comm: &Communicator) -> grappe::Result<bool> {
    let mine = [comm.context_ids()[0] as u64];
    let mut all = vec![0u64; comm.size()];
    comm.allgather(&mine, &mut all[..])?;
    Ok(all.iter().all(|&c| c == mine[0]))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn overlapping_duplicates_in_any_order_get_contexts_of_their_own(
        p in 2usize..6,
        seed in any::<u64>(),
        blocking_between in any::<bool>(),
    ) {
        let outcomes = grappe::testing::threads(p, move |world| -> grappe::Result<(bool, bool)> {
            let me = world.rank();
            let bases = bases(world)?;
            let mut made: Vec<(usize, Communicator)> = Vec::new();
            world.scope(|scope| -> grappe::Result<()> {
                let mut pending: Vec<Option<(usize, Request<'_>, PendingDup)>> = Vec::new();
                // Start in this rank's own order: the pairs' two members
                // and the world's ranks start them in different orders.
                for i in order(bases.len(), seed ^ me as u64) {
                    if let Some(base) = &bases[i] {
                        let (request, dup) = base.start_dup(scope, 1)?;
                        pending.push(Some((i, request, dup)));
                    }
                }
                if blocking_between {
                    // A blocking creation while they are under way.
                    let split = world.split(Some((me % 2) as u32), 0)?.expect("a color");
                    made.push((usize::MAX, split));
                }
                // Complete them in yet another order.
                for k in order(pending.len(), seed.rotate_left(17) ^ me as u64) {
                    let (i, request, dup) = pending[k].take().expect("completed once");
                    request.wait()?;
                    let dup = dup.finish().expect("the agreement is over").remove(0);
                    made.push((i, dup));
                }
                Ok(())
            })?;
            made.sort_by_key(|(i, _)| *i);
            let mut all_agreed = true;
            for (_, comm) in &made {
                all_agreed &= agreed(comm)?;
            }
            let live = bases.iter().flatten().chain(made.iter().map(|(_, c)| c));
            let mut contexts: Vec<u32> = live.map(|c| c.context_ids()[0]).collect();
            let count = contexts.len();
            contexts.sort_unstable();
            contexts.dedup();
            Ok((all_agreed, contexts.len() == count))
        });
        for (rank, outcome) in outcomes.into_iter().enumerate() {
            let (agreed, distinct) = outcome.expect("every rank completes");
            prop_assert!(agreed, "rank {rank}: a duplicate's members disagree on its context");
            prop_assert!(distinct, "rank {rank}: two communicators share a context");
        }
    }
}

/// A creation under way: a duplicate or a split.
enum Pending {
    Dup(PendingDup),
    Split(PendingSplit),
}

/// The ranks of `base` (as world ranks) in the part of `color`, ordered
/// by key: keys are minus the base rank, so in reverse order.
fn part_of(base: &Communicator, world: &Communicator, color: u32) -> grappe::Result<Vec<u64>> {
    let mine = [world.rank() as u64, color as u64];
    let mut all = vec![0u64; 2 * base.size()];
    base.allgather(&mine, &mut all[..])?;
    let mut part: Vec<u64> = all.chunks(2).filter(|e| e[1] == color as u64).map(|e| e[0]).collect();
    part.reverse();
    Ok(part)
}

/// The world ranks of `comm`'s members, in its rank order.
fn members(comm: &Communicator, world: &Communicator) -> grappe::Result<Vec<u64>> {
    let mine = [world.rank() as u64];
    let mut all = vec![0u64; comm.size()];
    comm.allgather(&mine, &mut all[..])?;
    Ok(all)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn overlapping_splits_and_duplicates_in_any_order_get_contexts_of_their_own(
        p in 2usize..6,
        seed in any::<u64>(),
    ) {
        let outcomes = grappe::testing::threads(p, move |world| -> grappe::Result<(bool, bool, bool)> {
            let me = world.rank();
            let bases = bases(world)?;
            // Every other base is split, by a color that depends on the
            // base and the rank; some ranks take no part.
            let color_in = |i: usize| ((me + i) % 3 != 2).then_some(((me + i) % 3) as u32);
            let mut made: Vec<(usize, Option<u32>, Communicator)> = Vec::new();
            world.scope(|scope| -> grappe::Result<()> {
                let mut pending: Vec<Option<(usize, Request<'_>, Pending)>> = Vec::new();
                for i in order(bases.len(), seed ^ me as u64) {
                    let Some(base) = &bases[i] else { continue };
                    if i % 2 == 0 {
                        let (request, split) = base.start_split(scope, color_in(i), -(base.rank() as i32))?;
                        pending.push(Some((i, request, Pending::Split(split))));
                    } else {
                        let (request, dup) = base.start_dup(scope, 1)?;
                        pending.push(Some((i, request, Pending::Dup(dup))));
                    }
                }
                for k in order(pending.len(), seed.rotate_left(17) ^ me as u64) {
                    let (i, request, creation) = pending[k].take().expect("completed once");
                    request.wait()?;
                    match creation {
                        Pending::Dup(dup) => made.push((i, None, dup.finish().expect("the agreement is over").remove(0))),
                        Pending::Split(split) => {
                            if let Some(part) = split.finish().expect("the agreement is over") {
                                made.push((i, color_in(i), part));
                            }
                        }
                    }
                }
                Ok(())
            })?;
            // What each split should have made, gathered over the bases
            // in the same order on every rank (ranks of no part too).
            let mut expected: Vec<Option<Vec<u64>>> = vec![None; bases.len()];
            for (i, base) in bases.iter().enumerate() {
                if let Some(base) = base && i % 2 == 0 {
                    expected[i] = Some(part_of(base, world, color_in(i).unwrap_or(u32::MAX))?);
                }
            }
            made.sort_by_key(|(i, _, _)| *i);
            let (mut all_agreed, mut right_parts) = (true, true);
            for (i, color, comm) in &made {
                all_agreed &= agreed(comm)?;
                if color.is_some() {
                    right_parts &= Some(members(comm, world)?) == expected[*i];
                }
            }
            let live = bases.iter().flatten().chain(made.iter().map(|(_, _, c)| c));
            let mut contexts: Vec<u32> = live.map(|c| c.context_ids()[0]).collect();
            let count = contexts.len();
            contexts.sort_unstable();
            contexts.dedup();
            Ok((all_agreed, contexts.len() == count, right_parts))
        });
        for (rank, outcome) in outcomes.into_iter().enumerate() {
            let (agreed, distinct, right_parts) = outcome.expect("every rank completes");
            prop_assert!(agreed, "rank {rank}: a creation's members disagree on its context");
            prop_assert!(distinct, "rank {rank}: two communicators share a context");
            prop_assert!(right_parts, "rank {rank}: a split's part is not its color's ranks in key order");
        }
    }
}
