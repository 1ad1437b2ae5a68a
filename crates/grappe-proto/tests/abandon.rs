//! Requests given up by their poster (`Engine::abandon`, and every wait
//! that fails): once that returns, nobody reads or writes the request's
//! buffer again, whatever the transfer was doing, and the peer gets the
//! message whole or a clear error, never a mix.
//!
//! Each case gives the request up after a different number of progress
//! passes, so that it lands in every state a transfer goes through:
//! posted or queued, offered, being copied by one side or both, staged.

mod common;

use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, Ordering};

use common::{modes, pattern, recv, run};
use grappe_proto::{Engine, Error, RecvTarget, Started};

/// Eager, rendezvous (a few chunks), rendezvous (many chunks).
const SIZES: [usize; 3] = [100, 200_000, 3 << 20];

/// Progress passes before giving up.
const DELAYS: [usize; 9] = [0, 1, 2, 3, 5, 8, 13, 40, 200];

/// What the poster writes into its buffer right after giving it up: any
/// later read or write by the runtime shows.
const POISON: u8 = 0xAB;

#[test]
fn an_abandoned_receive_is_never_written_again() {
    for settings in modes() {
        for len in SIZES {
            for delay in DELAYS {
                let posted = Barrier::new(2);
                let sent = AtomicBool::new(false);
                run(2, settings, |e| match e.world_rank() {
                    1 => send_to_0(e, len, &posted, &sent),
                    _ => {
                        let mut buf = vec![0u8; len];
                        let target = RecvTarget::Buffer { ptr: buf.as_mut_ptr(), cap: len };
                        let Started::Pending(id) = (unsafe { e.irecv(target, Some(1), 0, Some(7)) }).unwrap() else {
                            panic!("nothing was sent yet")
                        };
                        posted.wait();
                        for _ in 0..delay {
                            e.progress().unwrap();
                        }
                        e.abandon(id);
                        buf.fill(POISON);
                        take_unreceived(e, len, &sent);
                        let what = format!("{len} bytes, {delay} passes, single copy {}", settings.single_copy);
                        assert!(buf.iter().all(|&b| b == POISON), "{what}: written after it was given up");
                    }
                });
            }
        }
    }
}

/// Rank 1's side: one message of `len` bytes to rank 0, tag 7, sent once
/// rank 0 has posted its receive.
fn send_to_0(e: &mut Engine, len: usize, posted: &Barrier, sent: &AtomicBool) {
    let data = pattern(len, len);
    posted.wait();
    if let Started::Pending(id) = (unsafe { e.isend(data.as_ptr(), len, 0, 0, 7, 1) }).unwrap() {
        e.wait(id).unwrap();
    }
    sent.store(true, Ordering::Release);
}

/// Rank 0, its receive given up: a message its cancelled receive left
/// unexpected is taken elsewhere, so that the sender finishes.
fn take_unreceived(e: &mut Engine, len: usize, sent: &AtomicBool) {
    let mut elsewhere = vec![0u8; len];
    while !sent.load(Ordering::Acquire) {
        if e.iprobe(Some(1), 0, Some(7)).unwrap().is_some() {
            recv(e, &mut elsewhere, Some(1), Some(7)).unwrap();
        }
        std::thread::yield_now();
    }
}

#[test]
fn an_abandoned_send_is_never_read_again_and_arrives_whole_or_not_at_all() {
    for settings in modes() {
        for len in SIZES {
            for delay in DELAYS {
                // With every rendezvous slot taken, the message goes
                // without one: the receiver then copies it alone.
                for slots_taken in [false, true] {
                    let received = AtomicBool::new(false);
                    let outcomes = run(2, settings, |e| match e.world_rank() {
                        0 => {
                            abandon_a_send(e, len, delay, slots_taken, &received);
                            None
                        }
                        _ => {
                            let outcome = receive_from_0(e, len, slots_taken);
                            received.store(true, Ordering::Release);
                            Some(outcome)
                        }
                    });
                    let what = format!(
                        "{len} bytes, {delay} passes, single copy {}, slots taken {slots_taken}",
                        settings.single_copy
                    );
                    match &outcomes[1] {
                        Some(Ok(())) => {}
                        Some(Err(Error::PeerDied { rank: 0, cause, .. })) => {
                            assert!(len > 8192, "{what}: an eager send is never taken back ({cause})")
                        }
                        other => panic!("{what}: {other:?}"),
                    }
                }
            }
        }
    }
}

/// Filler messages that hold every rendezvous slot of the test harness.
const FILLERS: usize = 8;

/// Rank 0's side. A send given up goes on from a copy, if it can, while
/// the rank makes progress: it does until the receiver is done.
fn abandon_a_send(e: &mut Engine, len: usize, delay: usize, slots_taken: bool, received: &AtomicBool) {
    let filler = vec![1u8; 100_000];
    let mut fillers = Vec::new();
    for _ in 0..if slots_taken { FILLERS } else { 0 } {
        if let Started::Pending(id) = (unsafe { e.isend(filler.as_ptr(), filler.len(), 1, 0, 1, 0) }).unwrap() {
            fillers.push(id);
        }
    }
    let mut data = pattern(len, len);
    let started = (unsafe { e.isend(data.as_ptr(), len, 1, 0, 7, 0) }).unwrap();
    for _ in 0..delay {
        e.progress().unwrap();
    }
    if let Started::Pending(id) = started {
        e.abandon(id);
    }
    data.fill(POISON);
    // Refused by the receiver if this rank gave up its memory.
    for id in fillers {
        let _ = e.wait(id);
    }
    while !received.load(Ordering::Acquire) {
        e.progress().unwrap();
        std::thread::yield_now();
    }
}

/// Rank 1's side: the message, whole, or the error that says its sender
/// took it back.
fn receive_from_0(e: &mut Engine, len: usize, slots_taken: bool) -> Result<(), Error> {
    let mut buf = vec![0u8; len];
    let outcome = recv(e, &mut buf, Some(0), Some(7)).map(|status| {
        assert_eq!(status.bytes, len);
        assert!(buf == pattern(len, len), "{len} bytes arrived mixed with what the sender wrote after giving up");
    });
    let mut filler = vec![0u8; 100_000];
    for _ in 0..if slots_taken { FILLERS } else { 0 } {
        let _ = recv(e, &mut filler, Some(0), Some(1));
    }
    outcome
}
