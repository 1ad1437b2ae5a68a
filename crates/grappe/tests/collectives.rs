//! Every collective against a sequential reference computed from the same
//! inputs: random sizes (empty, within the shared-memory arena, eager,
//! rendezvous), roots, rank counts 1..=17, element types and operations
//! (a non-commutative one among them), on the world or on a part of a
//! random split, with or without the arena (so that both the shared-memory
//! and the message algorithms run at every size). Then oversubscription
//! (64 ranks on the machine's cores) and argument errors.

mod common;

use bytemuck::Pod;
use common::{Case, cases, cases_with, fold, same};
use grappe::{Communicator, Error, Operation, Sum};
use proptest::prelude::*;
use std::fmt::Debug;

/// Proptest cases per collective: each runs a job of up to 17 ranks.
const CASES: u32 = 48;

trait Elem: Pod + PartialEq + Debug + Send + Sync {}
impl<T: Pod + PartialEq + Debug + Send + Sync> Elem for T {}

/// The inputs of `group` for a collective: `len(i)` elements for member `i`.
fn inputs<T>(case: &Case, make: fn(u64) -> T, group: &[usize], len: impl Fn(usize) -> usize) -> Vec<Vec<T>> {
    group.iter().enumerate().map(|(i, &w)| case.input(make, w, 0, len(i))).collect()
}

fn check_bcast<T: Elem>(case: &Case, make: fn(u64) -> T) -> Result<(), TestCaseError> {
    let out = case.run(|p| {
        let root = case.root_in(p.comm.size());
        let mut buf = if p.comm.rank() == root {
            case.input(make, p.world_rank, 0, case.count)
        } else {
            vec![T::zeroed(); case.count]
        };
        p.comm.bcast(&mut buf[..], root).unwrap();
        buf
    });
    for (w, (group, got)) in out.iter().enumerate() {
        let root = group[case.root_in(group.len())];
        same(&format!("rank {w}"), got, &case.input(make, root, 0, case.count))?;
    }
    Ok(())
}

fn check_gather<T: Elem>(case: &Case, make: fn(u64) -> T) -> Result<(), TestCaseError> {
    let out = case.run(|p| {
        let (n, root) = (p.comm.size(), case.root_in(p.comm.size()));
        let send = case.input(make, p.world_rank, 0, case.count);
        if p.comm.rank() == root {
            let mut recv = vec![T::zeroed(); n * case.count];
            p.comm.gather(&send[..], &mut recv[..], root).unwrap();
            Some(recv)
        } else {
            p.comm.gather(&send[..], &mut [], root).unwrap();
            None
        }
    });
    for (w, (group, got)) in out.iter().enumerate() {
        if let Some(got) = got {
            same(&format!("root {w}"), got, &inputs(case, make, group, |_| case.count).concat())?;
        }
    }
    Ok(())
}

fn check_gatherv<T: Elem>(case: &Case, make: fn(u64) -> T) -> Result<(), TestCaseError> {
    let out = case.run(|p| {
        let root = case.root_in(p.comm.size());
        let group = case.group_of(p.world_rank);
        let counts: Vec<usize> = group.iter().map(|&w| case.count_for(w, 0)).collect();
        let send = case.input(make, p.world_rank, 0, counts[p.comm.rank()]);
        if p.comm.rank() == root {
            let mut recv = vec![T::zeroed(); counts.iter().sum()];
            p.comm.gatherv(&send[..], &mut recv[..], &counts, root).unwrap();
            Some(recv)
        } else {
            p.comm.gatherv(&send[..], &mut [], &[], root).unwrap();
            None
        }
    });
    for (w, (group, got)) in out.iter().enumerate() {
        if let Some(got) = got {
            same(&format!("root {w}"), got, &inputs(case, make, group, |i| case.count_for(group[i], 0)).concat())?;
        }
    }
    Ok(())
}

fn check_scatter<T: Elem>(case: &Case, make: fn(u64) -> T) -> Result<(), TestCaseError> {
    let out = case.run(|p| {
        let (n, root) = (p.comm.size(), case.root_in(p.comm.size()));
        let mut recv = vec![T::zeroed(); case.count];
        if p.comm.rank() == root {
            p.comm.scatter(&case.input(make, p.world_rank, 0, n * case.count)[..], &mut recv[..], root).unwrap();
        } else {
            p.comm.scatter(&[], &mut recv[..], root).unwrap();
        }
        recv
    });
    for (w, (group, got)) in out.iter().enumerate() {
        let (n, me) = (group.len(), group.iter().position(|&g| g == w).unwrap());
        let all = case.input(make, group[case.root_in(n)], 0, n * case.count);
        same(&format!("rank {w}"), got, &all[me * case.count..(me + 1) * case.count])?;
    }
    Ok(())
}

fn check_scatterv<T: Elem>(case: &Case, make: fn(u64) -> T) -> Result<(), TestCaseError> {
    let out = case.run(|p| {
        let root = case.root_in(p.comm.size());
        let group = case.group_of(p.world_rank);
        let counts: Vec<usize> = group.iter().map(|&w| case.count_for(w, 0)).collect();
        let mut recv = vec![T::zeroed(); counts[p.comm.rank()]];
        if p.comm.rank() == root {
            let send = case.input(make, p.world_rank, 0, counts.iter().sum());
            p.comm.scatterv(&send[..], &counts, &mut recv[..], root).unwrap();
        } else {
            p.comm.scatterv(&[], &[], &mut recv[..], root).unwrap();
        }
        recv
    });
    for (w, (group, got)) in out.iter().enumerate() {
        let me = group.iter().position(|&g| g == w).unwrap();
        let counts: Vec<usize> = group.iter().map(|&g| case.count_for(g, 0)).collect();
        let all = case.input(make, group[case.root_in(group.len())], 0, counts.iter().sum());
        let start: usize = counts[..me].iter().sum();
        same(&format!("rank {w}"), got, &all[start..start + counts[me]])?;
    }
    Ok(())
}

fn check_allgather<T: Elem>(case: &Case, make: fn(u64) -> T) -> Result<(), TestCaseError> {
    let out = case.run(|p| {
        let send = case.input(make, p.world_rank, 0, case.count);
        let mut recv = vec![T::zeroed(); p.comm.size() * case.count];
        p.comm.allgather(&send[..], &mut recv[..]).unwrap();
        recv
    });
    for (w, (group, got)) in out.iter().enumerate() {
        same(&format!("rank {w}"), got, &inputs(case, make, group, |_| case.count).concat())?;
    }
    Ok(())
}

fn check_allgatherv<T: Elem>(case: &Case, make: fn(u64) -> T) -> Result<(), TestCaseError> {
    let out = case.run(|p| {
        let counts: Vec<usize> = case.group_of(p.world_rank).iter().map(|&w| case.count_for(w, 0)).collect();
        let send = case.input(make, p.world_rank, 0, counts[p.comm.rank()]);
        let mut recv = vec![T::zeroed(); counts.iter().sum()];
        p.comm.allgatherv(&send[..], &mut recv[..], &counts).unwrap();
        recv
    });
    for (w, (group, got)) in out.iter().enumerate() {
        same(&format!("rank {w}"), got, &inputs(case, make, group, |i| case.count_for(group[i], 0)).concat())?;
    }
    Ok(())
}

fn check_alltoall<T: Elem>(case: &Case, make: fn(u64) -> T) -> Result<(), TestCaseError> {
    let out = case.run(|p| {
        let n = p.comm.size();
        let send = case.input(make, p.world_rank, 0, n * case.count);
        let mut recv = vec![T::zeroed(); n * case.count];
        p.comm.alltoall(&send[..], &mut recv[..]).unwrap();
        recv
    });
    for (w, (group, got)) in out.iter().enumerate() {
        let (n, me, k) = (group.len(), group.iter().position(|&g| g == w).unwrap(), case.count);
        let want: Vec<T> =
            group.iter().flat_map(|&src| case.input(make, src, 0, n * k)[me * k..(me + 1) * k].to_vec()).collect();
        same(&format!("rank {w}"), got, &want)?;
    }
    Ok(())
}

fn check_alltoallv<T: Elem>(case: &Case, make: fn(u64) -> T) -> Result<(), TestCaseError> {
    // Rank s sends count_for(s, d) elements to rank d (world numbers).
    let out = case.run(|p| {
        let group = case.group_of(p.world_rank);
        let send_counts: Vec<usize> = group.iter().map(|&d| case.count_for(p.world_rank, d)).collect();
        let recv_counts: Vec<usize> = group.iter().map(|&s| case.count_for(s, p.world_rank)).collect();
        let send = case.input(make, p.world_rank, 0, send_counts.iter().sum());
        let mut recv = vec![T::zeroed(); recv_counts.iter().sum()];
        p.comm.alltoallv(&send[..], &send_counts, &mut recv[..], &recv_counts).unwrap();
        recv
    });
    for (w, (group, got)) in out.iter().enumerate() {
        let mut want = Vec::new();
        for &src in group {
            let counts: Vec<usize> = group.iter().map(|&d| case.count_for(src, d)).collect();
            let all = case.input(make, src, 0, counts.iter().sum());
            let me = group.iter().position(|&g| g == w).unwrap();
            let start: usize = counts[..me].iter().sum();
            want.extend_from_slice(&all[start..start + counts[me]]);
        }
        same(&format!("rank {w}"), got, &want)?;
    }
    Ok(())
}

fn check_reduce<T: Elem, O: Operation<T>>(case: &Case, make: fn(u64) -> T, op: O) -> Result<(), TestCaseError> {
    let out = case.run(|p| {
        let root = case.root_in(p.comm.size());
        let send = case.input(make, p.world_rank, 0, case.count);
        if p.comm.rank() == root {
            let mut recv = vec![T::zeroed(); case.count];
            p.comm.reduce(&send[..], &mut recv[..], root, &op).unwrap();
            Some(recv)
        } else {
            p.comm.reduce(&send[..], &mut [], root, &op).unwrap();
            None
        }
    });
    for (w, (group, got)) in out.iter().enumerate() {
        if let Some(got) = got {
            same(&format!("root {w}"), got, &fold(&op, inputs(case, make, group, |_| case.count)))?;
        }
    }
    Ok(())
}

fn check_allreduce<T: Elem, O: Operation<T>>(case: &Case, make: fn(u64) -> T, op: O) -> Result<(), TestCaseError> {
    let out = case.run(|p| {
        let send = case.input(make, p.world_rank, 0, case.count);
        let mut recv = vec![T::zeroed(); case.count];
        p.comm.allreduce(&send[..], &mut recv[..], &op).unwrap();
        recv
    });
    for (w, (group, got)) in out.iter().enumerate() {
        same(&format!("rank {w}"), got, &fold(&op, inputs(case, make, group, |_| case.count)))?;
    }
    Ok(())
}

/// Inclusive (`exclusive == false`) or exclusive scan; rank 0's buffer of
/// an exscan must stay as it was.
fn check_scan<T: Elem, O: Operation<T>>(
    case: &Case,
    make: fn(u64) -> T,
    op: O,
    exclusive: bool,
) -> Result<(), TestCaseError> {
    let untouched = |w: usize| case.input(make, w, 1, case.count);
    let out = case.run(|p| {
        let send = case.input(make, p.world_rank, 0, case.count);
        let mut recv = untouched(p.world_rank);
        if exclusive {
            p.comm.exscan(&send[..], &mut recv[..], &op).unwrap();
        } else {
            p.comm.scan(&send[..], &mut recv[..], &op).unwrap();
        }
        recv
    });
    for (w, (group, got)) in out.iter().enumerate() {
        let me = group.iter().position(|&g| g == w).unwrap();
        let upto = if exclusive { me } else { me + 1 };
        let want = if upto == 0 { untouched(w) } else { fold(&op, inputs(case, make, &group[..upto], |_| case.count)) };
        same(&format!("rank {w} (rank {me} of {})", group.len()), got, &want)?;
    }
    Ok(())
}

fn check_scan_inclusive<T: Elem, O: Operation<T>>(case: &Case, make: fn(u64) -> T, op: O) -> Result<(), TestCaseError> {
    check_scan(case, make, op, false)
}

fn check_exscan<T: Elem, O: Operation<T>>(case: &Case, make: fn(u64) -> T, op: O) -> Result<(), TestCaseError> {
    check_scan(case, make, op, true)
}

fn check_reduce_scatter<T: Elem, O: Operation<T>>(case: &Case, make: fn(u64) -> T, op: O) -> Result<(), TestCaseError> {
    let out = case.run(|p| {
        let counts: Vec<usize> = case.group_of(p.world_rank).iter().map(|&w| case.count_for(w, 0)).collect();
        let send = case.input(make, p.world_rank, 0, counts.iter().sum());
        let mut recv = vec![T::zeroed(); counts[p.comm.rank()]];
        p.comm.reduce_scatter(&send[..], &mut recv[..], &counts, &op).unwrap();
        recv
    });
    for (w, (group, got)) in out.iter().enumerate() {
        let counts: Vec<usize> = group.iter().map(|&g| case.count_for(g, 0)).collect();
        let total = fold(&op, inputs(case, make, group, |_| counts.iter().sum()));
        let me = group.iter().position(|&g| g == w).unwrap();
        let start: usize = counts[..me].iter().sum();
        same(&format!("rank {w}"), got, &total[start..start + counts[me]])?;
    }
    Ok(())
}

fn check_reduce_scatter_block<T: Elem, O: Operation<T>>(
    case: &Case,
    make: fn(u64) -> T,
    op: O,
) -> Result<(), TestCaseError> {
    let out = case.run(|p| {
        let send = case.input(make, p.world_rank, 0, p.comm.size() * case.count);
        let mut recv = vec![T::zeroed(); case.count];
        p.comm.reduce_scatter_block(&send[..], &mut recv[..], &op).unwrap();
        recv
    });
    for (w, (group, got)) in out.iter().enumerate() {
        let (n, k) = (group.len(), case.count);
        let total = fold(&op, inputs(case, make, group, |_| n * k));
        let me = group.iter().position(|&g| g == w).unwrap();
        same(&format!("rank {w}"), got, &total[me * k..(me + 1) * k])?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn bcast(case in cases(2)) { with_element!(&case, check_bcast)?; }
    #[test]
    fn gather(case in cases(2)) { with_element!(&case, check_gather)?; }
    #[test]
    fn gatherv(case in cases(2)) { with_element!(&case, check_gatherv)?; }
    #[test]
    fn scatter(case in cases(2)) { with_element!(&case, check_scatter)?; }
    #[test]
    fn scatterv(case in cases(2)) { with_element!(&case, check_scatterv)?; }
    #[test]
    fn allgather(case in cases(2)) { with_element!(&case, check_allgather)?; }
    #[test]
    fn allgatherv(case in cases(2)) { with_element!(&case, check_allgatherv)?; }
    #[test]
    fn alltoall(case in cases_with(2, common::block_counts())) { with_element!(&case, check_alltoall)?; }
    #[test]
    fn alltoallv(case in cases_with(2, common::block_counts())) { with_element!(&case, check_alltoallv)?; }
    #[test]
    fn reduce(case in cases(6)) { with_reduction!(&case, check_reduce)?; }
    #[test]
    fn allreduce(case in cases(6)) { with_reduction!(&case, check_allreduce)?; }
    #[test]
    fn scan(case in cases(6)) { with_reduction!(&case, check_scan_inclusive)?; }
    #[test]
    fn exscan(case in cases(6)) { with_reduction!(&case, check_exscan)?; }
    #[test]
    fn reduce_scatter(case in cases(6)) { with_reduction!(&case, check_reduce_scatter)?; }
    #[test]
    fn reduce_scatter_block(case in cases(6)) { with_reduction!(&case, check_reduce_scatter_block)?; }

    /// Floating-point sums depend on the order of the additions: every
    /// rank must still get the same bits, close to the sequential sum.
    #[test]
    fn allreduce_f64_sum_is_bit_identical(case in cases(1)) {
        let out = case.run(|p| {
            let send = case.input(common::real, p.world_rank, 0, case.count);
            let mut recv = vec![0.0f64; case.count];
            p.comm.allreduce(&send[..], &mut recv[..], Sum).unwrap();
            recv.iter().map(|x| x.to_bits()).collect::<Vec<u64>>()
        });
        for (w, (group, got)) in out.iter().enumerate() {
            let first = &out[group[0]].1;
            same(&format!("rank {w} against rank {}", group[0]), got, first)?;
            let inputs = inputs(&case, common::real, group, |_| case.count);
            for (i, bits) in got.iter().enumerate() {
                let exact: f64 = inputs.iter().map(|v| v[i]).sum();
                let scale: f64 = inputs.iter().map(|v| v[i].abs()).sum();
                prop_assert!((f64::from_bits(*bits) - exact).abs() <= 1e-12 * scale.max(1.0), "element {i}");
            }
        }
    }
}

/// 64 ranks on the machine's cores (coroutines): loops of barrier,
/// allreduce (arena and messages) and alltoall complete, with right
/// results.
#[test]
fn oversubscribed_loops() {
    const RANKS: usize = 64;
    const ROUNDS: u64 = 200;
    let ok = grappe::testing::threads(RANKS, |world| {
        let messages = common::without_arena(world);
        let (me, n) = (world.rank() as u64, RANKS as u64);
        for round in 0..ROUNDS {
            world.barrier().unwrap();
            for comm in [world, &messages] {
                let mut sum = 0u64;
                comm.allreduce(&(me + round), &mut sum, Sum).unwrap();
                assert_eq!(sum, n * (n - 1) / 2 + n * round, "allreduce in round {round}");
            }
            let send: Vec<u64> = (0..n).map(|dest| me * 1000 + dest + round).collect();
            let mut recv = vec![0u64; RANKS];
            world.alltoall(&send[..], &mut recv[..]).unwrap();
            assert!(
                recv.iter().enumerate().all(|(src, &v)| v == src as u64 * 1000 + me + round),
                "alltoall in round {round}"
            );
        }
        true
    });
    assert!(ok.into_iter().all(|ok| ok));
}

/// The errors a rank can see on its own.
#[test]
fn argument_errors() {
    grappe::testing::threads(4, |world| {
        let (a, mut b) = ([1u64; 3], [0u64; 4]);
        let detail = |e: Error| match e {
            Error::BufferSize { op, detail } => format!("{op}: {detail}"),
            other => panic!("expected a buffer size error, got {other:?}"),
        };
        let msg = detail(world.allreduce(&a[..], &mut b[..], Sum).unwrap_err());
        assert!(msg.starts_with("allreduce") && msg.contains('3') && msg.contains('4'), "{msg}");
        let msg = detail(world.allgather(&a[..], &mut b[..]).unwrap_err());
        assert!(msg.contains("4 elements, expected 12"), "{msg}");
        let msg = detail(world.alltoall(&a[..], &mut [0u64; 3][..]).unwrap_err());
        assert!(msg.contains("3 elements, not a multiple of the 4 ranks"), "{msg}");
        let msg = detail(world.gatherv(&a[..], &mut b[..], &[3, 1], 0).unwrap_err());
        assert!(msg.contains("2 entries for a communicator of 4 ranks"), "{msg}");
        let msg = detail(world.reduce_scatter(&a[..], &mut b[..], &[1, 1, 1, 1], Sum).unwrap_err());
        assert!(msg.contains("3 elements, expected 4"), "{msg}");
        let msg = detail(world.reduce_scatter_block(&a[..], &mut b[..], Sum).unwrap_err());
        assert!(msg.contains("3 elements, expected 4 ranks × 4"), "{msg}");

        let root_error = |e: Error| matches!(e, Error::InvalidRank { rank: 4, size: 4 });
        assert!(root_error(world.bcast(&mut b[..], 4).unwrap_err()));
        assert!(root_error(world.reduce(&a[..], &mut b[..], 4, Sum).unwrap_err()));
        assert!(root_error(world.gather(&a[..], &mut b[..], 4).unwrap_err()));
        assert!(root_error(world.scatter(&a[..], &mut b[..], 4).unwrap_err()));
        assert!(root_error(world.gatherv(&a[..], &mut b[..], &[], 4).unwrap_err()));
        assert!(root_error(world.scatterv(&a[..], &[], &mut b[..], 4).unwrap_err()));

        let freed = world.dup().unwrap();
        freed.free();
        let gone = |r: grappe::Result<()>| matches!(r, Err(Error::CommFreed));
        assert!(gone(freed.bcast(&mut b[..], 0)));
        assert!(gone(freed.allreduce(&a[..], &mut [0u64; 3][..], Sum)));
        assert!(gone(freed.reduce(&a[..], &mut [0u64; 3][..], 0, Sum)));
        assert!(gone(freed.allgather(&a[..], &mut [0u64; 12][..])));
        assert!(gone(freed.alltoall(&b[..], &mut [0u64; 4][..])));
        assert!(gone(freed.scan(&a[..], &mut [0u64; 3][..], Sum)));
        assert!(gone(freed.exscan(&a[..], &mut [0u64; 3][..], Sum)));
        assert!(gone(freed.gather(&a[..], &mut [0u64; 12][..], 0)));
        assert!(gone(freed.scatter(&[0u64; 12][..], &mut [0u64; 3][..], 0)));
        assert!(gone(freed.reduce_scatter_block(&b[..], &mut [0u64; 1][..], Sum)));
        assert!(gone(freed.barrier()));
    });
}

/// Ranks that pass different sizes are told so with the numbers, when
/// messages carry the data.
#[test]
fn inconsistent_sizes_are_reported() {
    let results = grappe::testing::threads(2, |world| {
        let comm = common::without_arena(world);
        let mut buf = vec![7u64; if comm.rank() == 0 { 10 } else { 12 }];
        comm.bcast(&mut buf[..], 0).map_err(|e| e.to_string())
    });
    assert!(results[0].is_ok());
    let msg = results[1].as_ref().unwrap_err();
    assert!(msg.contains("80 bytes") && msg.contains("96"), "{msg}");
}

/// Size-1 communicators, a root's scalar convenience, and a non-commutative
/// user operation lent by reference to several calls.
#[test]
fn small_conveniences() {
    let out = grappe::testing::threads(3, |world| {
        let all = world.allgather_vec(&(world.rank() as u32 * 10)).unwrap();
        let alone = world.split(Some(world.rank() as u32), 0).unwrap().unwrap();
        let mut one = [0i64; 2];
        alone.allreduce(&[5i64, 6][..], &mut one[..], Sum).unwrap();
        let mut gathered = [0i64; 2];
        alone.gather(&[1i64, 2][..], &mut gathered[..], 0).unwrap();
        (all, one, gathered)
    });
    for (all, one, gathered) in out {
        assert_eq!(all, vec![0, 10, 20]);
        assert_eq!(one, [5, 6]);
        assert_eq!(gathered, [1, 2]);
    }
}

#[allow(dead_code)]
fn assert_api_shapes(world: &Communicator) -> grappe::Result<()> {
    // Scalars and arrays as buffers, operations by value or by reference.
    let mut x = 0.0f64;
    world.allreduce(&1.0f64, &mut x, Sum)?;
    world.reduce(&[1u8; 4], &mut [], 0, &Sum)?;
    Ok(())
}

/// More large messages in flight at once than a rank has rendezvous
/// slots: a scatterv and an alltoallv whose every block is past the eager
/// limit, posted all at once, on 33 ranks.
#[test]
fn many_rendezvous_at_once() {
    const RANKS: usize = 33;
    const BLOCK: usize = 3000;
    let ok = grappe::testing::threads(RANKS, |world| {
        let me = world.rank();
        let value = |src: usize, dest: usize, i: usize| (src * 1_000_000 + dest * 10_000 + i) as u64;
        let counts = vec![BLOCK; RANKS];
        let send: Vec<u64> = (0..RANKS).flat_map(|dest| (0..BLOCK).map(move |i| value(me, dest, i))).collect();
        let mut recv = vec![0u64; RANKS * BLOCK];
        world.alltoallv(&send[..], &counts, &mut recv[..], &counts).unwrap();
        let alltoallv_ok =
            recv.chunks(BLOCK).enumerate().all(|(src, b)| b.iter().enumerate().all(|(i, &v)| v == value(src, me, i)));
        let mut mine = vec![0u64; BLOCK];
        let root_send: &[u64] = if me == 0 { &send } else { &[] };
        world.scatterv(root_send, if me == 0 { &counts } else { &[] }, &mut mine[..], 0).unwrap();
        let scatterv_ok = mine.iter().enumerate().all(|(i, &v)| v == value(0, me, i));
        alltoallv_ok && scatterv_ok
    });
    assert!(ok.into_iter().all(|ok| ok));
}
