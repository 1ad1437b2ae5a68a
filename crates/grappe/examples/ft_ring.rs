//! A workload whose messages cross checkpoint points: at each iteration
//! every rank receives what its left neighbour sent at the iteration
//! before (so that message is in transit at the point between them), mixes
//! it into its state, and sends a message of pseudo-random length (1 to
//! 1000 bytes) to its right neighbour. A checkpoint must save those
//! messages with the states for a restarted run to end with the same
//! checksum.
//!
//!     grappe run -n 4 [--checkpoint-dir D --checkpoint-every 50ms] target/release/examples/ft_ring ITERATIONS

use grappe::{BitXor, Sum};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct State {
    iteration: u64,
    acc: u64,
}

fn mix(a: u64, b: u64) -> u64 {
    (a ^ b).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29)
}

fn main() {
    let iterations: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(20_000);
    grappe::ft::run(
        |world| State { iteration: 0, acc: world.rank() as u64 + 1 },
        |world, ft, state| -> Result<(), String> {
            let e = |e: &dyn std::fmt::Display| e.to_string();
            let (rank, size) = (world.rank(), world.size());
            let (left, right) = ((rank + size - 1) % size, (rank + 1) % size);
            while state.iteration < iterations {
                ft.point(state).map_err(|x| e(&x))?;
                if state.iteration > 0 {
                    let (bytes, _) = world.recv_vec::<u8>(left, 7).map_err(|x| e(&x))?;
                    state.acc = bytes.iter().fold(state.acc, |a, &b| mix(a, b as u64));
                }
                let len = 1 + mix(state.acc, state.iteration) % 1000;
                let message: Vec<u8> = (0..len).map(|i| mix(state.acc, i) as u8).collect();
                world.send(&message[..], right, 7).map_err(|x| e(&x))?;
                state.iteration += 1;
            }
            let (last, _) = world.recv_vec::<u8>(left, 7).map_err(|x| e(&x))?;
            state.acc = last.iter().fold(state.acc, |a, &b| mix(a, b as u64));
            let (mut checksum, mut saved) = (0u64, 0u64);
            world.allreduce(&state.acc, &mut checksum, BitXor).map_err(|x| e(&x))?;
            world.allreduce(&ft.stats().saved_messages, &mut saved, Sum).map_err(|x| e(&x))?;
            if rank == 0 {
                println!(
                    "ft_ring ranks={size} iterations={iterations} checksum={checksum:016x} saved_messages={saved}"
                );
            }
            Ok(())
        },
    );
}
