//! Master and workers: rank 0 hands out `TASKS` tasks of uneven cost,
//! one at a time to whichever worker replies first, receiving the replies
//! with `ANY_SOURCE`; workers receive with `ANY_TAG` (a task or the order
//! to stop). Which worker does which task depends on the schedule; the
//! checksum (the results folded in task order) does not. On one rank,
//! rank 0 does every task itself.
//!
//!     grappe run -n 4 target/release/examples/master_worker [TASKS] [WORK]
//!
//! A task `t` costs about `WORK × (1 + t mod 5)` rounds of integer mixing.
//! `grappe run --record-matches F` then `--replay-matches F` makes a
//! second run hand out the tasks exactly as the first did.

use grappe::{ANY_SOURCE, ANY_TAG, Communicator};

const TASK: i32 = 1;
const STOP: i32 = 2;
const RESULT: i32 = 3;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let tasks: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(2_000);
    let work: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(20_000);
    grappe::run(|world| -> grappe::Result<()> {
        if world.rank() == 0 {
            let (results, handed) = master(world, tasks, work)?;
            let checksum = results.iter().fold(0u64, |acc, &r| mix(acc, r));
            let shares: Vec<String> = handed.iter().map(u64::to_string).collect();
            println!(
                "master_worker ranks={} tasks={tasks} work={work} checksum={checksum:016x} tasks_per_worker={}",
                world.size(),
                shares.join(",")
            );
        } else {
            worker(world, work)?;
        }
        Ok(())
    });
}

/// Hands out the tasks; returns the results in task order and how many
/// tasks each worker did.
fn master(world: &Communicator, tasks: u64, work: u64) -> grappe::Result<(Vec<u64>, Vec<u64>)> {
    let size = world.size();
    let mut results = vec![0u64; tasks as usize];
    let mut handed = vec![0u64; size];
    if size == 1 {
        for t in 0..tasks {
            results[t as usize] = compute(t, work);
        }
        handed[0] = tasks;
        return Ok((results, handed));
    }
    let mut next = 0u64;
    let mut busy = 0usize;
    for (w, share) in handed.iter_mut().enumerate().skip(1) {
        if next < tasks {
            world.send(&next, w, TASK)?;
            *share += 1;
            next += 1;
            busy += 1;
        }
    }
    while busy > 0 {
        let mut reply = [0u64; 2];
        let status = world.recv(&mut reply, ANY_SOURCE, RESULT)?;
        results[reply[0] as usize] = reply[1];
        if next < tasks {
            world.send(&next, status.source, TASK)?;
            handed[status.source] += 1;
            next += 1;
        } else {
            busy -= 1;
        }
    }
    for w in 1..size {
        world.send(&0u64, w, STOP)?;
    }
    Ok((results, handed))
}

/// Does tasks until told to stop.
fn worker(world: &Communicator, work: u64) -> grappe::Result<()> {
    loop {
        let mut task = 0u64;
        let status = world.recv(&mut task, 0, ANY_TAG)?;
        if status.tag == STOP {
            return Ok(());
        }
        world.send(&[task, compute(task, work)], 0, RESULT)?;
    }
}

/// The result of task `t`: uneven integer work.
fn compute(t: u64, work: u64) -> u64 {
    let rounds = work * (1 + t % 5);
    (0..rounds).fold(t.wrapping_add(1), mix)
}

fn mix(a: u64, b: u64) -> u64 {
    (a ^ b).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29)
}
