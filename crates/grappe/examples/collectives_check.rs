//! Every collective, checked against the value each rank can compute by
//! itself, at sizes that take every path (shared-memory arena, eager
//! messages, rendezvous), then loops of barrier / allreduce / alltoall.
//! Meant for `grappe run` in process and hybrid modes, up to 64 ranks on
//! two cores.
//!
//!     grappe run -n 64 target/release/examples/collectives_check [LOOPS]

use grappe::{BitXor, Communicator, Max, Sum};

/// Elements per rank: arena-sized, eager-sized, rendezvous-sized.
const COUNTS: [usize; 3] = [3, 1500, 40_000];

fn main() {
    let loops: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(20);
    grappe::run(|world| -> Result<(), String> {
        for count in COUNTS {
            check_all(world, count).map_err(|e| format!("{count} elements: {e}"))?;
        }
        let half = world.split(Some((world.rank() % 2) as u32), 0).map_err(|e| e.to_string())?.expect("a color");
        check_all(&half, 100).map_err(|e| format!("on a split: {e}"))?;
        loops_complete(world, loops)?;
        if world.rank() == 0 {
            println!("collectives passed on {} ranks ({loops} loops)", world.size());
        }
        Ok(())
    });
}

/// Rank r's element i (small enough that sums over 64 ranks never overflow).
fn value(rank: usize, i: usize) -> u64 {
    ((rank as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ i as u64) >> 20
}

fn check(ok: bool, what: &str) -> Result<(), String> {
    if ok { Ok(()) } else { Err(format!("{what} gave a wrong result")) }
}

fn check_all(comm: &Communicator, count: usize) -> Result<(), String> {
    let e = |e: grappe::Error| e.to_string();
    let (n, me) = (comm.size(), comm.rank());
    let mine: Vec<u64> = (0..count).map(|i| value(me, i)).collect();
    let everyone = |i: usize| (0..n).map(move |r| value(r, i));
    let root = n / 2;

    let mut buf = if me == root { mine.clone() } else { vec![0; count] };
    comm.bcast(&mut buf[..], root).map_err(e)?;
    check(buf == (0..count).map(|i| value(root, i)).collect::<Vec<_>>(), "bcast")?;

    let mut out = vec![0u64; count];
    comm.allreduce(&mine[..], &mut out[..], BitXor).map_err(e)?;
    check(out.iter().enumerate().all(|(i, &x)| x == everyone(i).fold(0, |a, b| a ^ b)), "allreduce")?;

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
