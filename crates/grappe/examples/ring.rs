//! A token travels around the ranks: each hop mixes it `WORK` times with
//! the hop's number (real integer work) and sends it on to the next rank.
//! The job makes `HOPS` hops in all, whatever the number of ranks, so the
//! checksum (the final token) is the same on 1, 2 or 4 ranks, traced or
//! not.
//!
//!     grappe run -n 4 target/release/examples/ring [HOPS] [WORK]

use grappe::Communicator;

const TAG: i32 = 11;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let hops: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let work: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(5_000);
    grappe::run(|world| -> grappe::Result<()> {
        let token = circulate(world, hops, work)?;
        if world.rank() == 0 {
            println!("ring ranks={} hops={hops} work={work} checksum={token:016x}", world.size());
        }
        Ok(())
    });
}

/// Runs the hops; every rank returns the final token.
fn circulate(world: &Communicator, hops: u64, work: u64) -> grappe::Result<u64> {
    let (rank, size) = (world.rank(), world.size());
    let (left, right) = ((rank + size - 1) % size, (rank + 1) % size);
    let mut token = 0x243f_6a88_85a3_08d3u64;
    // Hop h is made by rank h % size: it receives the token from the left
    // (except the very first hop), works, and passes it on.
    let mut hop = rank as u64;
    while hop < hops {
        if hop > 0 {
            world.recv(&mut token, left, TAG)?;
        }
        token = mix_many(token, hop, work);
        world.send(&token, right, TAG)?;
        hop += size as u64;
    }
    // The last hop's rank sent the token on: its right neighbour ends the ring.
    let last = (hops + size as u64 - 1) % size as u64;
    if hops > 0 && (last as usize + 1) % size == rank {
        world.recv(&mut token, left, TAG)?;
    }
    let holder = if hops == 0 { 0 } else { (last as usize + 1) % size };
    world.bcast(&mut token, holder)?;
    Ok(token)
}

/// `rounds` rounds of an integer mix of the token with the hop number.
fn mix_many(mut token: u64, hop: u64, rounds: u64) -> u64 {
    for round in 0..rounds {
        token = (token ^ hop.wrapping_add(round)).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(31);
    }
    token
}
