//! Latency of allreduce and bcast on every path they take: the
//! shared-memory arena (world), and messages (a communicator without an
//! arena) from 8 B to 256 KiB, where the algorithms change with the size.
//!
//!     grappe run -n 4 --threads target/release/examples/coll_latency
//!     grappe run -n 4 target/release/examples/coll_latency
//!
//! Prints one line per (collective, path, size) with the median over
//! `COLL_ROUNDS` (default 5) rounds of timed loops, in µs per call.

use std::time::Instant;

use grappe::{Communicator, Sum};

const SIZES: [usize; 5] = [8, 1024, 4096, 16384, 262144];
/// The largest collective the arena takes (`grappe_comm::coll::SLOT_BYTES`).
const ARENA_MAX_BYTES: usize = 1024;

fn main() {
    grappe::run(|world| -> grappe::Result<()> {
        let rounds: usize = std::env::var("COLL_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(5);
        let messages = without_arena(world)?;
        for (path, comm) in [("arena", world), ("messages", &messages)] {
            for bytes in SIZES {
                if path == "arena" && bytes > ARENA_MAX_BYTES {
                    continue;
                }
                let allreduce = median(rounds, || allreduce_time(comm, bytes))?;
                let bcast = median(rounds, || bcast_time(comm, bytes))?;
                if world.rank() == 0 {
                    println!("coll op=allreduce path={path} bytes={bytes} us={:.3}", allreduce * 1e6);
                    println!("coll op=bcast path={path} bytes={bytes} us={:.3}", bcast * 1e6);
                }
            }
        }
        Ok(())
    });
}

/// A duplicate of `world` whose collectives use messages only: duplicates
/// are made until the host's arenas run out.
fn without_arena(world: &Communicator) -> grappe::Result<Communicator> {
    loop {
        let comm = world.dup()?;
        if !comm.has_shared_arena() {
            return Ok(comm);
        }
    }
}

fn median(rounds: usize, mut timed: impl FnMut() -> grappe::Result<f64>) -> grappe::Result<f64> {
    let mut times = (0..rounds.max(1)).map(|_| timed()).collect::<grappe::Result<Vec<f64>>>()?;
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// Calls per timed loop: about the same bytes moved at every size.
fn iterations(bytes: usize) -> usize {
    (4_000_000 / bytes.max(1024)).clamp(50, 4000)
}

/// Seconds per allreduce of `bytes` bytes of doubles.
fn allreduce_time(comm: &Communicator, bytes: usize) -> grappe::Result<f64> {
    let send = vec![comm.rank() as f64; bytes / 8];
    let mut recv = vec![0.0; bytes / 8];
    let iters = iterations(bytes);
    for _ in 0..iters / 10 {
        comm.allreduce(&send[..], &mut recv[..], Sum)?;
    }
    comm.barrier()?;
    let start = Instant::now();
    for _ in 0..iters {
        comm.allreduce(&send[..], &mut recv[..], Sum)?;
    }
    Ok(start.elapsed().as_secs_f64() / iters as f64)
}

/// Seconds per bcast of `bytes` bytes from rank 0.
fn bcast_time(comm: &Communicator, bytes: usize) -> grappe::Result<f64> {
    let mut buf = vec![1u8; bytes];
    let iters = iterations(bytes);
    for _ in 0..iters / 10 {
        comm.bcast(&mut buf[..], 0)?;
    }
    comm.barrier()?;
    let start = Instant::now();
    for _ in 0..iters {
        comm.bcast(&mut buf[..], 0)?;
    }
    comm.barrier()?;
    Ok(start.elapsed().as_secs_f64() / iters as f64)
}
