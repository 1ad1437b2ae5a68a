//! A job in which one rank fails mid-run, for fail-fast tests.
//!
//! `GRAPPE_FAULT` says how: `kill:R` (rank R sends itself SIGKILL),
//! `panic:R`, `exit:R:CODE` (exits without finalizing), `truncate:R` or
//! `unwrap:R` (inside a scope holding an isend that nobody will receive,
//! a receive truncates and the rank returns the error with `?`, or
//! unwraps it), `early:R:M:L` (rank R panics as it starts, see
//! `fail_early`),
//! or `none`. Before failing, the victim prints `victim rank R fails at
//! <unix seconds>`.
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
        if std::env::var("GRAPPE_FAULT_ERRORS").as_deref() == Ok("fatal") {
            world.set_error_handler(grappe::ErrorHandler::Fatal);
        }
        if let (true, Some(victim)) = (parts[0] == "early", victim) {
            fail_early(world, victim, &parts)?;
        }
        world.barrier()?;
        if Some(world.rank()) == victim {
            // Some trace events (when traced) that flushed blocks must keep.
            for _ in 0..100 {
                world.trace_event("before failure");
            }
            std::thread::sleep(Duration::from_millis(300));
            say_victim_fails(world.rank());
            match parts[0] {
                "kill" => {
                    let _ = nix::sys::signal::kill(nix::unistd::getpid(), nix::sys::signal::Signal::SIGKILL);
                }
                "panic" => panic!("rank {} was told to panic", world.rank()),
                "exit" => std::process::exit(parts.get(2).and_then(|c| c.parse().ok()).unwrap_or(3)),
                how @ ("truncate" | "unwrap") => fail_in_scope(world, how)?,
                "abort" => world.abort(parts.get(2).and_then(|c| c.parse().ok()).unwrap_or(3)),
                "fatal" => {
                    world.set_error_handler(grappe::ErrorHandler::Fatal);
                    world.send(&0u8, world.size(), 0)?;
                }
                _ => {}
            }
        }
        if let (true, Some(victim)) = (parts[0] == "truncate" || parts[0] == "unwrap", victim) {
            if world.rank() == (victim + 1) % world.size() {
                // Longer than the victim's buffer; the victim's own message
                // to this rank is never received.
                world.send(&[5u8; 2227][..], victim, 94)?;
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

/// `early:R:M:L`: rank R fails as it starts, once it has heard from rank
/// M, of its process but on another worker, which then computes for 2 s:
/// the process outlives the failure by its grace period. Rank L, in
/// another process, computes until R has failed (R creates the file
/// `GRAPPE_FAULT_MARK` first), so that the rank after it on its worker
/// starts after the failure.
fn fail_early(world: &grappe::Communicator, victim: usize, roles: &[&str]) -> grappe::Result<()> {
    let role = |i: usize| roles.get(i).and_then(|r| r.parse::<usize>().ok());
    let mark = std::env::var_os("GRAPPE_FAULT_MARK").map(std::path::PathBuf::from);
    if world.rank() == victim {
        world.recv(&mut 0u8, role(2).unwrap_or(0), 93)?;
        if let Some(mark) = &mark {
            std::fs::write(mark, b"failed").expect("GRAPPE_FAULT_MARK is writable");
        }
        say_victim_fails(victim);
        panic!("rank {victim} was told to panic");
    } else if Some(world.rank()) == role(2) {
        world.send(&1u8, victim, 93)?;
        std::thread::sleep(Duration::from_secs(2));
    } else if let (true, Some(mark)) = (Some(world.rank()) == role(3), &mark) {
        let began = std::time::Instant::now();
        while !mark.exists() && began.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    Ok(())
}

/// The line the tests date the failure by.
fn say_victim_fails(rank: usize) {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs_f64();
    println!("victim rank {rank} fails at {now:.3}");
    use std::io::Write;
    std::io::stdout().flush().ok();
}

/// The victim's failure inside a scope: its isend to the next rank, past
/// the eager size, stays pending (that rank never receives it), and the
/// message it receives from that rank is longer than its buffer.
fn fail_in_scope(world: &grappe::Communicator, how: &str) -> grappe::Result<()> {
    let next = (world.rank() + 1) % world.size();
    let (unreceived, mut short) = (vec![1u8; 1 << 16], [0u8; 264]);
    world.scope(|s| -> grappe::Result<()> {
        let _pending = world.isend(s, &unreceived[..], next, 95)?;
        let received = world.recv(&mut short[..], next, 94);
        match how {
            "unwrap" => _ = received.unwrap(),
            _ => _ = received?,
        }
        Ok(())
    })
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
