//! The ping-pong benchmark of `shared/bench/pingpong.c`, line for line:
//! half round-trip time and bandwidth between ranks 0 and 1 for 8 B to
//! 16 MiB, then the time of an 8-byte allreduce over all ranks.
//!
//!     grappe run -n 2 --threads target/release/examples/pingpong
//!     grappe run -n 2 target/release/examples/pingpong
//!     grappe run -n 8 target/release/examples/pingpong      # allreduce over 8 ranks
//!
//! `PINGPONG_SIZES=2048,4096,...` replaces the list of sizes and skips the
//! allreduce (for sweeps of the eager threshold, or profiling one size).
//! `PINGPONG_ITERS=N` times N round trips of every size instead of 20000
//! to 50 by size (for slow links, such as `GRAPPE_NET_DELAY_US`'s).

use std::time::Instant;

use grappe::Communicator;

const SIZES: [usize; 5] = [8, 1024, 65536, 1 << 20, 16 << 20];

fn main() {
    grappe::run(|world| -> grappe::Result<()> {
        let mut buf = vec![1u8; 16 << 20];
        let chosen: Option<Vec<usize>> =
            std::env::var("PINGPONG_SIZES").ok().map(|v| v.split(',').filter_map(|s| s.trim().parse().ok()).collect());
        let sizes = chosen.clone().unwrap_or(SIZES.to_vec());
        let iters: Option<usize> = std::env::var("PINGPONG_ITERS").ok().and_then(|v| v.trim().parse().ok());
        if sizes.iter().any(|&n| n > buf.len()) {
            buf.resize(sizes.iter().copied().max().unwrap_or(0), 1);
        }
        for n in sizes {
            let half_rtt = ping_pong(world, &mut buf[..n], iters)?;
            if world.rank() == 0 {
                println!(
                    "pingpong bytes={n} half_rtt_us={:.3} bandwidth_MBps={:.1}",
                    half_rtt * 1e6,
                    n as f64 / half_rtt / 1e6
                );
            }
        }
        if chosen.is_some() {
            return Ok(());
        }
        let us = allreduce_time(world)? * 1e6;
        if world.rank() == 0 {
            println!("allreduce ranks={} doubles=1 us={us:.3}", world.size());
        }
        Ok(())
    });
}

/// Seconds per half round trip of `buf` between ranks 0 and 1, over
/// `iters` round trips (by default, fewer for larger sizes).
fn ping_pong(world: &Communicator, buf: &mut [u8], iters: Option<usize>) -> grappe::Result<f64> {
    let n = buf.len();
    let iters = iters.unwrap_or(if n <= 65536 {
        20000
    } else if n <= 1 << 20 {
        500
    } else {
        50
    });
    let warm = iters / 10;
    let mut start = Instant::now();
    for i in 0..iters + warm {
        if i == warm {
            world.barrier()?;
            start = Instant::now();
        }
        match world.rank() {
            0 => {
                world.send(&*buf, 1, 0)?;
                world.recv(&mut *buf, 1, 0)?;
            }
            1 => {
                world.recv(&mut *buf, 0, 0)?;
                world.send(&*buf, 0, 0)?;
            }
            _ => {}
        }
    }
    Ok(start.elapsed().as_secs_f64() / iters as f64 / 2.0)
}

/// Seconds per allreduce of one double, after 1000 warm-up calls.
fn allreduce_time(world: &Communicator) -> grappe::Result<f64> {
    let x = world.rank() as f64;
    let mut y = 0.0;
    for _ in 0..1000 {
        world.allreduce(&x, &mut y, grappe::Sum)?;
    }
    let iters = 20000;
    let start = Instant::now();
    for _ in 0..iters {
        world.allreduce(&x, &mut y, grappe::Sum)?;
    }
    Ok(start.elapsed().as_secs_f64() / iters as f64)
}
