//! A job in which one rank fails mid-run, for fail-fast tests.
//!
//! `GRAPPE_FAULT` says how: `kill:R` (rank R sends itself SIGKILL),
//! `panic:R`, `exit:R:CODE` (exits without finalizing), or `none`. Before
//! failing, the victim prints `victim rank R fails at <unix seconds>`.
//! Meanwhile the other ranks wait for it: rank 0 in a receive, all in a
//! barrier. With `GRAPPE_FAULT_WAIT=calls`, ranks 1, 3 and 4 first wait
//! for it in other calls: a sendrecv of a rendezvous-sized message, the
//! wait of an irecv, a probe (for the traces of failed calls).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn main() {
    let fault = std::env::var("GRAPPE_FAULT").unwrap_or_else(|_| "none".into());
    let parts: Vec<&str> = fault.split(':').collect();
    let victim: Option<usize> = parts.get(1).and_then(|r| r.parse().ok());
    grappe::run(|world| -> grappe::Result<()> {
        world.barrier()?;
        if Some(world.rank()) == victim {
            // Some trace events (when traced) that flushed blocks must keep.
            for _ in 0..100 {
                world.trace_event("before failure");
            }
            std::thread::sleep(Duration::from_millis(300));
            let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs_f64();
            println!("victim rank {} fails at {now:.3}", world.rank());
            use std::io::Write;
            std::io::stdout().flush().ok();
            match parts[0] {
                // SAFETY: signalling our own process has no memory effects.
                "kill" => unsafe {
                    libc::kill(libc::getpid(), libc::SIGKILL);
                },
                "panic" => panic!("rank {} was told to panic", world.rank()),
                "exit" => std::process::exit(parts.get(2).and_then(|c| c.parse().ok()).unwrap_or(3)),
                _ => {}
            }
        }
        // Everyone else waits for a message the victim never sends.
        if let (0, Some(victim)) = (world.rank(), victim) {
            let mut x = 0u8;
            world.recv(&mut x, victim, 99)?;
        }
        if let (Some(victim), true) = (victim, std::env::var("GRAPPE_FAULT_WAIT").as_deref() == Ok("calls")) {
            wait_in_other_calls(world, victim)?;
        }
        world.barrier()?;
        Ok(())
    });
}

/// Ranks 1, 3 and 4 wait for `victim` in a sendrecv, a wait and a probe.
fn wait_in_other_calls(world: &grappe::Communicator, victim: usize) -> grappe::Result<()> {
    match world.rank() {
        1 => {
            // Past the eager size: the send waits for the victim too.
            let (out, mut back) = (vec![1u8; 1 << 16], vec![0u8; 1 << 16]);
            world.sendrecv(&out[..], victim, 98, &mut back[..], victim, 98)?;
        }
        3 => {
            let mut x = 0u8;
            world.scope(|s| world.irecv(s, &mut x, victim, 97)?.wait().map(|_| ()))?;
        }
        4 => _ = world.probe(victim, 96)?,
        _ => {}
    }
    Ok(())
}
