//! Every collective, checked against the value each rank can compute by
//! itself, at sizes that take every path (shared-memory arena, eager
//! messages, rendezvous), then loops of barrier / allreduce / alltoall.
//! Meant for `grappe run` in process and hybrid modes, up to 64 ranks on
//! two cores.
//!
//!     grappe run -n 64 target/release/examples/collectives_check [LOOPS [SEED]]
//!
//! With a SEED it then checks random cases drawn from it (every rank draws
//! the same): the world split into one to four parts by random colours and
//! keys, and every collective on the part a rank is in, with a random root
//! and a random count (empty, arena-sized, eager, rendezvous). Across hosts
//! this puts the members of one communicator on hosts in every mix.

use grappe::{BitXor, Communicator, Max, Operation, Sum};

/// Elements per rank: arena-sized, eager-sized, rendezvous-sized.
const COUNTS: [usize; 3] = [3, 1500, 40_000];

/// Counts a random case draws from.
const CASE_COUNTS: [usize; 6] = [0, 1, 3, 100, 1500, 40_000];

/// Random cases a seed gives.
const CASES: u64 = 6;

fn main() {
    let loops: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(20);
    let seed: Option<u64> = std::env::args().nth(2).and_then(|a| a.parse().ok());
    grappe::run(|world| -> Result<(), String> {
        for count in COUNTS {
            check_all(world, count, world.size() / 2).map_err(|e| format!("{count} elements: {e}"))?;
        }
        let half = world.split(Some((world.rank() % 2) as u32), 0).map_err(|e| e.to_string())?.expect("a color");
        check_all(&half, 100, half.size() / 2).map_err(|e| format!("on a split: {e}"))?;
        if let Some(seed) = seed {
            (0..CASES).try_for_each(|case| random_case(world, seed, case))?;
        }
        loops_complete(world, loops)?;
        if world.rank() == 0 {
            let seeded = seed.map_or_else(String::new, |seed| format!(", {CASES} random cases of seed {seed}"));
            println!("collectives passed on {} ranks ({loops} loops{seeded})", world.size());
        }
        Ok(())
    });
}

/// A random split of the world and every collective on the part of it
/// this rank is in, all drawn from `seed` and `case` alone.
fn random_case(world: &Communicator, seed: u64, case: u64) -> Result<(), String> {
    let draw = |what: u64, of: u64| mix(mix(seed ^ mix(case + 1)) ^ mix(what + 1)) % of;
    let parts = 1 + draw(0, 4);
    let me = world.rank() as u64;
    let colour = draw(1000 + me, parts) as u32;
    let key = draw(2000 + me, 1 << 16) as i32;
    let part = world.split(Some(colour), key).map_err(|e| e.to_string())?.expect("a colour");
    let count = CASE_COUNTS[draw(3000 + u64::from(colour), CASE_COUNTS.len() as u64) as usize];
    let root = draw(4000 + u64::from(colour), part.size() as u64) as usize;
    check_all(&part, count, root).map_err(|e| {
        format!(
            "seed {seed} case {case} ({parts} parts, part {colour} of {} ranks, {count} elements, root {root}): {e}",
            part.size()
        )
    })
}

/// SplitMix64's finaliser: a well-mixed function of `x`.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Rank r's element i (small enough that sums over 64 ranks never overflow).
fn value(rank: usize, i: usize) -> u64 {
    ((rank as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ i as u64) >> 20
}

fn check(ok: bool, what: &str) -> Result<(), String> {
    if ok { Ok(()) } else { Err(format!("{what} gave a wrong result")) }
}

fn check_all(comm: &Communicator, count: usize, root: usize) -> Result<(), String> {
    let e = |e: grappe::Error| e.to_string();
    let (n, me) = (comm.size(), comm.rank());
    let mine: Vec<u64> = (0..count).map(|i| value(me, i)).collect();
    let everyone = |i: usize| (0..n).map(move |r| value(r, i));

    let mut buf = if me == root { mine.clone() } else { vec![0; count] };
    comm.bcast(&mut buf[..], root).map_err(e)?;
    check(buf == (0..count).map(|i| value(root, i)).collect::<Vec<_>>(), "bcast")?;

    let mut out = vec![0u64; count];
    comm.allreduce(&mine[..], &mut out[..], BitXor).map_err(e)?;
    check(out.iter().enumerate().all(|(i, &x)| x == everyone(i).fold(0, |a, b| a ^ b)), "allreduce")?;

    let maps: Vec<[u64; 2]> = (0..count).map(|i| affine(me, i)).collect();
    let mut composed = vec![[0u64; 2]; count];
    comm.allreduce(&maps[..], &mut composed[..], Compose).map_err(e)?;
    let in_rank_order = |i: usize| (1..n).fold(affine(0, i), |acc, r| compose(acc, affine(r, i)));
    check(composed.iter().enumerate().all(|(i, &m)| m == in_rank_order(i)), "allreduce of a non-commutative op")?;

    let shares: Vec<f64> = (0..count).map(|i| 1.0 / (me * count + i + 3) as f64).collect();
    let mut total = vec![0f64; count];
    comm.allreduce(&shares[..], &mut total[..], Sum).map_err(e)?;
    let bits: Vec<u64> = total.iter().map(|x| x.to_bits()).collect();
    let mut everyones = vec![0u64; count * n];
    comm.allgather(&bits[..], &mut everyones[..]).map_err(e)?;
    check(everyones.chunks(count.max(1)).all(|c| count == 0 || c == &bits[..]), "allreduce bits alike on all ranks")?;

    let mut out = if me == root { vec![0u64; count] } else { Vec::new() };
    comm.reduce(&mine[..], &mut out[..], root, Max).map_err(e)?;
    check(me != root || out.iter().enumerate().all(|(i, &x)| Some(x) == everyone(i).max()), "reduce")?;

    let mut all = vec![0u64; count * n];
    comm.allgather(&mine[..], &mut all[..]).map_err(e)?;
    check(all.chunks(count.max(1)).enumerate().all(|(r, c)| count == 0 || c[0] == value(r, 0)), "allgather")?;

    let mut gathered = if me == root { vec![0u64; count * n] } else { Vec::new() };
    comm.gather(&mine[..], &mut gathered[..], root).map_err(e)?;
    check(me != root || gathered == all, "gather")?;

    let mut part = vec![0u64; count];
    comm.scatter(&gathered[..], &mut part[..], root).map_err(e)?;
    check(part == (0..count).map(|i| value(me, i)).collect::<Vec<_>>(), "scatter")?;

    let block = count.div_ceil(n).max(1);
    let outgoing: Vec<u64> = (0..n * block).map(|j| value(me, j)).collect();
    let mut incoming = vec![0u64; n * block];
    comm.alltoall(&outgoing[..], &mut incoming[..]).map_err(e)?;
    check((0..n).all(|r| incoming[r * block..(r + 1) * block] == outgoing_of(r, me, block)), "alltoall")?;

    let mut prefix = vec![0u64; count];
    comm.scan(&mine[..], &mut prefix[..], Sum).map_err(e)?;
    let expect_scan = |i: usize, upto: usize| (0..=upto).map(|r| value(r, i)).sum::<u64>();
    check(prefix.iter().enumerate().all(|(i, &x)| x == expect_scan(i, me)), "scan")?;

    let big: Vec<u64> = (0..block * n).map(|j| value(me, j)).collect();
    let mut mine_of_sum = vec![0u64; block];
    comm.reduce_scatter_block(&big[..], &mut mine_of_sum[..], Sum).map_err(e)?;
    let expect_rs = |j: usize| (0..n).map(|r| value(r, me * block + j)).sum::<u64>();
    check(mine_of_sum.iter().enumerate().all(|(j, &x)| x == expect_rs(j)), "reduce_scatter_block")
}

/// Rank r's element i for the non-commutative check: the affine map
/// x -> a x + b (mod 2^64) as [a, b].
fn affine(rank: usize, i: usize) -> [u64; 2] {
    [value(rank, i) | 1, value(rank, i + 7)]
}

/// Applying `first` then `then`: associative, not commutative.
fn compose(first: [u64; 2], then: [u64; 2]) -> [u64; 2] {
    [first[0].wrapping_mul(then[0]), first[1].wrapping_mul(then[0]).wrapping_add(then[1])]
}

/// The composition of affine maps in rank order.
struct Compose;

impl Operation<[u64; 2]> for Compose {
    fn combine(&self, acc: &mut [[u64; 2]], later: &[[u64; 2]]) {
        acc.iter_mut().zip(later).for_each(|(a, &l)| *a = compose(*a, l));
    }

    fn is_commutative(&self) -> bool {
        false
    }
}

/// What rank `from` sends to rank `to` in the alltoall above.
fn outgoing_of(from: usize, to: usize, block: usize) -> Vec<u64> {
    (to * block..(to + 1) * block).map(|j| value(from, j)).collect()
}

/// Barrier, allreduce and alltoall in a loop: with ranks outnumbering
/// cores every iteration needs every rank to be scheduled.
fn loops_complete(world: &Communicator, loops: usize) -> Result<(), String> {
    let e = |e: grappe::Error| e.to_string();
    let n = world.size();
    for round in 0..loops {
        world.barrier().map_err(e)?;
        let mut total = 0u64;
        world.allreduce(&(world.rank() as u64 + round as u64), &mut total, Sum).map_err(e)?;
        check(total == (n * (n - 1) / 2 + n * round) as u64, "looped allreduce")?;
        let send: Vec<u64> = (0..n).map(|to| (world.rank() * n + to) as u64).collect();
        let mut recv = vec![0u64; n];
        world.alltoall(&send[..], &mut recv[..]).map_err(e)?;
        check(recv.iter().enumerate().all(|(from, &x)| x == (from * n + world.rank()) as u64), "looped alltoall")?;
    }
    Ok(())
}
