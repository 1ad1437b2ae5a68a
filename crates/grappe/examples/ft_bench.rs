//! The cost of checkpointing: each rank holds MB megabytes of state and
//! runs ITERATIONS iterations of WORK steps of compute (about 1.3 ns each
//! here) and an allreduce, with a checkpoint point at the top of each.
//!
//!     grappe run -n 4 [--checkpoint-dir D --checkpoint-every 10s] target/release/examples/ft_bench MB ITERATIONS WORK
//!
//! Rank 0 prints the run time, the waves taken and committed, and the time
//! ranks spent stopped in waves (the largest over ranks), plus a checksum
//! of the final state, which a restarted run must reproduce.

use std::time::Instant;

use grappe::{Max, Sum};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct State {
    iteration: u64,
    data: Vec<u64>,
}

fn main() {
    let args: Vec<u64> = std::env::args().skip(1).map(|a| a.parse().expect("a number")).collect();
    let (mb, iterations, work) = (
        args.first().copied().unwrap_or(10),
        args.get(1).copied().unwrap_or(1000),
        args.get(2).copied().unwrap_or(1_000_000),
    );
    grappe::ft::run(
        |world| State { iteration: 0, data: (0..mb << 17).map(|i| i ^ world.rank() as u64).collect() },
        |world, ft, state| -> Result<(), String> {
            let start = Instant::now();
            let e = |e: &dyn std::fmt::Display| e.to_string();
            while state.iteration < iterations {
                ft.point(state).map_err(|x| e(&x))?;
                let at = (state.iteration as usize * 4099) % state.data.len().max(1);
                let mut x = state.data.get(at).copied().unwrap_or(1);
                // A fixed amount of work (a timed loop would make the
                // result depend on the clock).
                for _ in 0..work {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407));
                }
                let mut total = 0u64;
                world.allreduce(&(x >> 40), &mut total, Sum).map_err(|x| e(&x))?;
                if let Some(slot) = state.data.get_mut(at) {
                    *slot = total;
                }
                state.iteration += 1;
            }
            let seconds = start.elapsed().as_secs_f64();
            let checksum = state.data.iter().fold(0u64, |h, v| (h ^ v).wrapping_mul(0x0100_0000_01b3));
            let mut all = 0u64;
            world.allreduce(&checksum, &mut all, grappe::BitXor).map_err(|x| e(&x))?;
            let stats = ft.stats().clone();
            let mut stopped = 0.0f64;
            world.allreduce(&stats.wave_seconds, &mut stopped, Max).map_err(|x| e(&x))?;
            if world.rank() == 0 {
                println!(
                    "ft_bench mb={mb} ranks={} iterations={iterations} work={work} seconds={seconds:.3} waves={} committed={} stopped_seconds={stopped:.3} checksum={all:016x}",
                    world.size(),
                    stats.waves,
                    stats.committed
                );
            }
            Ok(())
        },
    );
}
