//! The protocols between thread ranks, checked end to end on real engines:
//! eager, rendezvous (cooperative single copy), staged fragments and
//! hand-over; ordering, wildcards, truncation, probe and cancel.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};

use common::{modes, pattern, recv, run, run_waiting, send};
use grappe_proto::{Error, OwnedBytes, ProtoSettings, RecvTarget, Started, Status};
use grappe_sched::WaitSettings;

#[test]
fn every_size_arrives_intact_both_ways_in_every_mode() {
    let sizes = [0usize, 1, 8, 100, 8192, 8193, 65536, 1 << 20, 5 << 20];
    for settings in modes() {
        run(2, settings, |e| {
            for (i, &len) in sizes.iter().enumerate() {
                let mut buf = vec![0u8; len];
                if e.world_rank() == 0 {
                    send(e, &pattern(i, len), 1, i as i32);
                    let status = recv(e, &mut buf, Some(1), Some(i as i32)).unwrap();
                    assert_eq!(status, Status { source: 1, tag: i as i32, bytes: len });
                    assert!(buf == pattern(i + 100, len), "echo of {len} bytes corrupted");
                } else {
                    recv(e, &mut buf, Some(0), Some(i as i32)).unwrap();
                    assert!(buf == pattern(i, len), "{len} bytes corrupted (single copy: {})", settings.single_copy);
                    send(e, &pattern(i + 100, len), 0, i as i32);
                }
            }
        });
    }
}

#[test]
fn messages_from_one_source_never_overtake_under_a_storm() {
    // 3000 messages of mixed sizes (eager, rendezvous, staged) on 4 tags,
    // received tag by tag in reverse: within each tag, sending order holds.
    for settings in modes() {
        run(2, settings, |e| {
            let count = 3000usize;
            let size_of = |i: usize| if i % 97 == 0 { 20_000 + i } else { 16 + i % 64 };
            if e.world_rank() == 0 {
                let mut reqs = Vec::new();
                let payloads: Vec<Vec<u8>> = (0..count)
                    .map(|i| {
                        let mut p = vec![0u8; size_of(i)];
                        p[..8].copy_from_slice(&(i as u64).to_le_bytes());
                        p
                    })
                    .collect();
                for (i, p) in payloads.iter().enumerate() {
                    if let Started::Pending(id) =
                        // SAFETY: `payloads` outlives the sends, which complete below.
                        unsafe { e.isend(p.as_ptr(), p.len(), 1, 0, (i % 4) as i32, 0) }.unwrap()
                    {
                        reqs.push(id);
                    }
                }
                for id in reqs {
                    e.wait(id).unwrap();
                }
            } else {
                for tag in (0..4).rev() {
                    let mut last = None;
                    for _ in 0..count / 4 {
                        let mut buf = vec![0u8; 30_000];
                        let status = recv(e, &mut buf, Some(0), Some(tag)).unwrap();
                        let seq = u64::from_le_bytes(buf[..8].try_into().unwrap()) as usize;
                        assert_eq!(seq % 4, tag as usize);
                        assert_eq!(status.bytes, size_of(seq));
                        assert!(last.is_none_or(|l| seq > l), "tag {tag}: message {seq} overtook {last:?}");
                        last = Some(seq);
                    }
                }
            }
        });
    }
}

#[test]
fn wildcard_receives_take_every_sender_in_per_sender_order() {
    run(5, ProtoSettings::for_ring(64 << 10), |e| {
        let me = e.world_rank();
        if me == 0 {
            let mut next = [0u64; 5];
            for _ in 0..4 * 200 {
                let mut buf = [0u8; 8];
                let status = recv(e, &mut buf, None, None).unwrap();
                let seq = u64::from_le_bytes(buf);
                assert_eq!(seq, next[status.source], "source {} out of order", status.source);
                assert_eq!(status.tag, (seq % 3) as i32);
                next[status.source] += 1;
            }
            assert_eq!(next, [0, 200, 200, 200, 200]);
        } else {
            for seq in 0..200u64 {
                send(e, &seq.to_le_bytes(), 0, (seq % 3) as i32);
            }
        }
    });
}

#[test]
fn truncation_names_both_sizes_and_the_channel_stays_usable() {
    for settings in modes() {
        run(2, settings, |e| {
            for len in [100usize, 100_000] {
                if e.world_rank() == 0 {
                    send(e, &pattern(1, len), 1, 7);
                    send(e, b"after", 1, 8);
                } else {
                    let mut small = vec![0u8; 10];
                    match recv(e, &mut small, Some(0), Some(7)) {
                        Err(Error::Truncated { source_rank: 0, tag: 7, message_bytes, buffer_bytes: 10 }) => {
                            assert_eq!(message_bytes, len)
                        }
                        other => panic!("expected truncation, got {other:?}"),
                    }
                    let mut buf = [0u8; 5];
                    recv(e, &mut buf, Some(0), Some(8)).unwrap();
                    assert_eq!(&buf, b"after");
                }
            }
        });
    }
}

#[test]
fn probe_reports_the_message_and_cancel_withdraws_a_receive() {
    run(2, ProtoSettings::for_ring(64 << 10), |e| {
        if e.world_rank() == 0 {
            send(e, &[9u8; 300], 1, 42);
        } else {
            let status = e.probe(None, 0, None).unwrap();
            assert_eq!(status, Status { source: 0, tag: 42, bytes: 300 });
            assert_eq!(e.iprobe(Some(0), 0, Some(41)).unwrap(), None);
            let mut never = [0u8; 4];
            let target = RecvTarget::Buffer { ptr: never.as_mut_ptr(), cap: 4 };
            // SAFETY: `never` outlives the receive, which is cancelled below.
            let Started::Pending(id) = unsafe { e.irecv(target, Some(0), 0, Some(41)) }.unwrap() else {
                panic!("nothing with tag 41 was sent")
            };
            assert!(e.cancel(id));
            let mut buf = [0u8; 300];
            assert_eq!(recv(e, &mut buf, Some(0), Some(42)).unwrap().bytes, 300);
        }
    });
}

/// Tape/PVM's `arrived` flag: a receive posted after its message reached
/// the mailbox says so, whether the message was still in the mailbox or
/// already set aside by a probe; a receive posted before its message
/// says it was not there. Eager, rendezvous and staged sizes, from a
/// named source and from any source.
#[test]
fn a_receive_says_whether_its_message_had_arrived() {
    let sent = std::sync::Barrier::new(2);
    for settings in modes() {
        for (len, src) in [(8, Some(1)), (8, None), (200_000, Some(1)), (200_000, None)] {
            let arrived = |e: &mut grappe_proto::Engine, buf: &mut [u8], tag| {
                let target = RecvTarget::Buffer { ptr: buf.as_mut_ptr(), cap: buf.len() };
                // SAFETY: the caller's `buf` outlives the receive, which completes here.
                let done = match unsafe { e.irecv(target, src, 0, Some(tag)) }.unwrap() {
                    Started::Done(done) => done,
                    Started::Pending(id) => e.wait(id).unwrap(),
                };
                assert_eq!(done.status, Status { source: 1, tag, bytes: len });
                done.arrived
            };
            let flags = run(2, settings, |e| {
                let mut buf = vec![0u8; len];
                if e.world_rank() == 1 {
                    let data = pattern(len, len);
                    for tag in [1, 2] {
                        // SAFETY: `data` outlives both sends, which complete below.
                        let started = unsafe { e.isend(data.as_ptr(), len, 0, 0, tag, 1) }.unwrap();
                        sent.wait(); // the message (or its head) is in rank 0's mailbox
                        if let Started::Pending(id) = started {
                            e.wait(id).unwrap();
                        }
                    }
                    sent.wait();
                    send(e, &data, 0, 3);
                    return Vec::new();
                }
                sent.wait();
                let in_mailbox = arrived(e, &mut buf, 1);
                sent.wait();
                e.probe(src, 0, Some(2)).unwrap();
                let set_aside = arrived(e, &mut buf, 2);
                let target = RecvTarget::Buffer { ptr: buf.as_mut_ptr(), cap: len };
                // SAFETY: `buf` outlives the receive, which completes below.
                let Started::Pending(id) = unsafe { e.irecv(target, src, 0, Some(3)) }.unwrap() else {
                    panic!("tag 3 is sent after the barrier")
                };
                sent.wait();
                let later = e.wait(id).unwrap();
                assert!(buf == pattern(len, len), "{len} bytes corrupted");
                vec![in_mailbox, set_aside, later.arrived]
            });
            let what = format!("{len} bytes from {src:?}, single copy {}", settings.single_copy);
            assert_eq!(flags[0], [true, true, false], "{what}: in the mailbox, set aside, posted first");
        }
    }
}

/// `arrived_by_now`: a posted receive's message is not here before it is
/// sent, and is once it sits in the mailbox (eager) or announced
/// (rendezvous), before any progress took it.
#[test]
fn a_posted_receive_says_when_its_message_has_arrived() {
    let sent = std::sync::Barrier::new(2);
    for len in [8, 200_000] {
        let flags = run(2, ProtoSettings::for_ring(64 << 10), |e| {
            let data = pattern(len, len);
            if e.world_rank() == 1 {
                sent.wait();
                // SAFETY: `data` outlives the send, which completes below.
                let started = unsafe { e.isend(data.as_ptr(), len, 0, 0, 5, 1) }.unwrap();
                sent.wait();
                if let Started::Pending(id) = started {
                    e.wait(id).unwrap();
                }
                return Vec::new();
            }
            let mut buf = vec![0u8; len];
            let target = RecvTarget::Buffer { ptr: buf.as_mut_ptr(), cap: len };
            // SAFETY: `buf` outlives the receive, which completes below.
            let Started::Pending(id) = unsafe { e.irecv(target, Some(1), 0, Some(5)) }.unwrap() else {
                panic!("nothing was sent yet")
            };
            let before = e.arrived_by_now(id).unwrap();
            sent.wait();
            sent.wait();
            let after = e.arrived_by_now(id).unwrap();
            e.wait(id).unwrap();
            assert!(buf == data, "{len} bytes corrupted");
            vec![before, after]
        });
        assert_eq!(flags[0], [false, true], "{len} bytes: before and after the send");
    }
}

/// A receive from a world rank the job does not have matches nothing (the
/// communicator layer refuses it before): no panic, and it can be cancelled.
#[test]
fn a_receive_from_a_rank_out_of_range_stays_posted() {
    run(2, ProtoSettings::for_ring(64 << 10), |e| {
        let mut buf = [0u8; 4];
        let target = RecvTarget::Buffer { ptr: buf.as_mut_ptr(), cap: 4 };
        // SAFETY: `buf` outlives the receive, which is cancelled below.
        let Started::Pending(id) = unsafe { e.irecv(target, Some(7), 0, None) }.unwrap() else {
            panic!("rank 7 does not exist")
        };
        assert!(!e.arrived_by_now(id).unwrap());
        assert!(e.cancel(id));
    });
}

#[test]
fn a_vec_handed_to_a_thread_rank_moves_without_copy() {
    let address = AtomicUsize::new(0);
    run(2, ProtoSettings::for_ring(64 << 10), |e| {
        if e.world_rank() == 0 {
            let v: Vec<u64> = (0..1_000_000).collect();
            address.store(v.as_ptr() as usize, Ordering::SeqCst);
            match e.isend_owned(OwnedBytes::from_vec(v), 1, 0, 3, 0).unwrap() {
                Started::Done(_) => {}
                Started::Pending(id) => {
                    e.wait(id).unwrap();
                }
            }
        } else {
            // SAFETY: an allocated target has no buffer of ours to outlive.
            let done = match unsafe { e.irecv(RecvTarget::Allocate { align: 8 }, Some(0), 0, Some(3)) }.unwrap() {
                Started::Done(done) => done,
                Started::Pending(id) => e.wait(id).unwrap(),
            };
            let v: Vec<u64> = done.data.unwrap().into_vec().unwrap();
            assert_eq!(v.as_ptr() as usize, address.load(Ordering::SeqCst), "the allocation itself moved");
            assert_eq!(v.len(), 1_000_000);
            assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64));
        }
    });
}

#[test]
fn senders_blocked_on_a_full_mailbox_are_woken_by_the_receiver() {
    // Every wait goes straight to sleep, with a timeout so long that a
    // lost wake-up shows in the counter: nothing may time out. The sender
    // overfills the mailbox (eager and staged messages) while the receiver
    // takes its time.
    let wait = WaitSettings {
        spin_iters: 0,
        yield_for: std::time::Duration::ZERO,
        sleep_timeout: std::time::Duration::from_secs(2),
        ..WaitSettings::default()
    };
    for settings in modes() {
        let timeouts = run_waiting(2, settings, wait, |e| {
            if e.world_rank() == 0 {
                for i in 0..300usize {
                    send(e, &pattern(i, if i % 10 == 0 { 50_000 } else { 3000 }), 1, 0);
                }
            } else {
                let mut buf = vec![0u8; 50_000];
                for i in 0..300usize {
                    if i % 50 == 0 {
                        std::thread::sleep(std::time::Duration::from_millis(5));
                    }
                    let status = recv(e, &mut buf, Some(0), Some(0)).unwrap();
                    assert!(buf[..status.bytes] == pattern(i, status.bytes)[..], "message {i}");
                }
            }
            e.stats().sleeps_timed_out
        });
        assert_eq!(
            timeouts,
            vec![0, 0],
            "sleeps ended by timeout instead of a doorbell (single copy: {})",
            settings.single_copy
        );
    }
}

#[test]
fn a_send_or_receive_that_must_not_wait_completes_at_once_or_starts_nothing() {
    // The calls a thread-safe library makes under its lock: a send too big
    // to go eager is refused and never sent; a small one completes at once;
    // the receiver takes it from its mailbox by polling, the `arrived` flag
    // telling whether the message was there at the first look.
    for settings in modes() {
        run(2, settings, |e| {
            let big = pattern(1, 1 << 20);
            if e.world_rank() == 0 {
                // SAFETY: the buffers outlive the calls, which start nothing
                // or complete.
                let refused = unsafe { e.send_if_immediate(big.as_ptr(), big.len(), 1, 0, 7, 0) };
                assert!(refused.is_none(), "a message above the eager limit must not go at once");
                let small = pattern(2, 8);
                let sent = unsafe { e.send_if_immediate(small.as_ptr(), small.len(), 1, 0, 1, 0) };
                assert_eq!(sent.map(|done| done.status), Some(Status { source: 0, tag: 1, bytes: 8 }));
                send(e, &pattern(3, 16), 1, 2);
            } else {
                let mut buf = [0u8; 8];
                let target = RecvTarget::Buffer { ptr: buf.as_mut_ptr(), cap: buf.len() };
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
                let done = loop {
                    // SAFETY: `buf` outlives the call, which completes or starts nothing.
                    if let Some(done) = unsafe { e.recv_if_here(target, 0, 0, Some(1), false) } {
                        break done.unwrap();
                    }
                    assert!(std::time::Instant::now() < deadline, "the small message never arrived");
                    std::thread::yield_now();
                };
                assert_eq!(done.status, Status { source: 0, tag: 1, bytes: 8 });
                assert!(!done.arrived, "a message found after the first look was not there before the receive");
                assert_eq!(buf.to_vec(), pattern(2, 8));
                // The next message from rank 0, whatever its tag, is the one
                // sent after: the refused one never left.
                let mut next = vec![0u8; 1 << 20];
                let status = recv(e, &mut next, Some(0), None).unwrap();
                assert_eq!(status, Status { source: 0, tag: 2, bytes: 16 });
                assert_eq!(next[..16], pattern(3, 16)[..]);
            }
        });
    }
}
