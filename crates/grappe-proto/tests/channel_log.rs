//! The channel log of a non-blocking checkpoint wave, on real engines: it
//! holds exactly the messages that arrive from each source before that
//! source's marker, whether they were already waiting when the log began
//! or came later, and logging changes nothing that is delivered.

mod common;

use std::sync::Barrier;

use common::{modes, pattern, recv, run, send};
use grappe_proto::{Engine, InTransit, InTransitError, OwnedBytes, RecvTarget, Started};

/// Context and tag of the markers in these tests (the application uses
/// context 0).
const MARKER: (u32, i32) = (9, 1);

fn send_marker(e: &mut Engine, dest: usize) {
    let me = e.world_rank() as u32;
    let marker = [7u8; 8];
    // SAFETY: `marker` outlives the send, which completes below.
    match unsafe { e.isend(marker.as_ptr(), marker.len(), dest, MARKER.0, MARKER.1, me) }.unwrap() {
        Started::Done(_) => {}
        Started::Pending(id) => {
            e.wait(id).unwrap();
        }
    }
}

fn recv_marker(e: &mut Engine, src: usize) {
    let mut marker = [0u8; 8];
    let target = RecvTarget::Buffer { ptr: marker.as_mut_ptr(), cap: 8 };
    // SAFETY: `marker` outlives the receive, which completes below.
    match unsafe { e.irecv(target, Some(src), MARKER.0, Some(MARKER.1)) }.unwrap() {
        Started::Done(_) => {}
        Started::Pending(id) => {
            e.wait(id).unwrap();
        }
    }
    assert_eq!(marker, [7u8; 8]);
}

/// Progresses until every marker has arrived.
fn finished_log(e: &mut Engine) -> Result<Vec<InTransit>, InTransitError> {
    loop {
        if let Some(log) = e.take_channel_log() {
            return log;
        }
        e.progress().unwrap();
        std::thread::yield_now();
    }
}

fn summary(log: &[InTransit]) -> Vec<(u32, i32, Vec<u8>)> {
    log.iter().map(|m| (m.src_world, m.tag, m.payload.clone())).collect()
}

/// Rank 2 is past its checkpoint before rank 0 starts logging (its marker
/// and a later message are waiting); rank 1 sends one message before rank
/// 0 starts, then one more (`second_len` bytes) before its marker, then one
/// after it.
fn three_ranks(second_len: usize, expect_rendezvous: bool) {
    for settings in modes() {
        let (started, go) = (Barrier::new(3), Barrier::new(3));
        run(3, settings, |e| match e.world_rank() {
            0 => {
                started.wait();
                e.start_channel_log(MARKER.0, MARKER.1, &[]).unwrap();
                assert!(e.take_channel_log().is_none(), "rank 1's marker is still to come");
                go.wait();
                let log = finished_log(e);
                if expect_rendezvous && settings.single_copy {
                    let why = log.expect_err("a rendezvous cannot be logged");
                    assert_eq!(why, InTransitError::RendezvousCrossed { source_rank: 1, tag: 6 });
                    let said = why.to_string();
                    assert!(said.contains("rendezvous") && said.contains("rank 1"), "{said}");
                } else {
                    let log = log.unwrap();
                    assert_eq!(summary(&log), vec![(1, 5, pattern(1, 10)), (1, 6, pattern(2, second_len))]);
                    assert!(log.iter().all(|m| m.ctx == 0 && m.src_comm == 1));
                }
                assert!(e.take_channel_log().is_none(), "a log is taken once");
                // Everything is still delivered, in order.
                for (src, tag, seed, len) in [(1, 5, 1, 10), (1, 6, 2, second_len), (1, 7, 3, 4), (2, 8, 4, 12)] {
                    let mut buf = vec![0u8; len];
                    recv(e, &mut buf, Some(src), Some(tag)).unwrap();
                    assert_eq!(buf, pattern(seed, len), "message {tag} from rank {src}");
                }
                recv_marker(e, 1);
                recv_marker(e, 2);
            }
            1 => {
                send(e, &pattern(1, 10), 0, 5);
                started.wait();
                go.wait();
                send(e, &pattern(2, second_len), 0, 6);
                send_marker(e, 0);
                send(e, &pattern(3, 4), 0, 7);
            }
            _ => {
                send_marker(e, 0);
                send(e, &pattern(4, 12), 0, 8);
                started.wait();
                go.wait();
            }
        });
    }
}

#[test]
fn the_log_holds_what_precedes_each_sources_marker() {
    three_ranks(100, false);
}

#[test]
fn staged_messages_are_logged_whole_and_rendezvous_ones_refuse_the_cut() {
    three_ranks(200 << 10, true);
}

#[test]
fn messages_a_rank_sent_itself_before_the_checkpoint_are_logged() {
    run(2, modes()[0], |e| {
        let me = e.world_rank();
        send(e, &pattern(me, 16), me, 3);
        e.start_channel_log(MARKER.0, MARKER.1, &[]).unwrap();
        send_marker(e, 1 - me);
        let log = finished_log(e).unwrap();
        assert_eq!(summary(&log), vec![(me as u32, 3, pattern(me, 16))]);
        let mut buf = [0u8; 16];
        recv(e, &mut buf, Some(me), Some(3)).unwrap();
        recv_marker(e, 1 - me);
    });
}

#[test]
fn skipped_contexts_and_hand_overs() {
    run(2, modes()[0], |e| {
        if e.world_rank() == 1 {
            let me = 1;
            let mut owned = OwnedBytes::alloc(5000, 8);
            owned.as_mut_slice().copy_from_slice(&pattern(9, 5000));
            match e.isend_owned(owned, 0, 0, 4, me).unwrap() {
                Started::Done(_) => {}
                Started::Pending(id) => {
                    e.wait(id).unwrap();
                }
            }
            let skipped = [1u8; 4];
            // SAFETY: a 4-byte eager send completes at once (asserted below).
            let eager = unsafe { e.isend(skipped.as_ptr(), 4, 0, 3, 2, me) }.unwrap();
            assert!(matches!(eager, Started::Done(_)), "4 bytes go eagerly");
            send_marker(e, 0);
        } else {
            e.start_channel_log(MARKER.0, MARKER.1, &[3]).unwrap();
            let log = finished_log(e).unwrap();
            assert_eq!(summary(&log), vec![(1, 4, pattern(9, 5000))], "context 3 is not logged");
            let mut buf = vec![0u8; 5000];
            recv(e, &mut buf, Some(1), Some(4)).unwrap();
            assert_eq!(buf, pattern(9, 5000));
            let target = RecvTarget::Buffer { ptr: buf.as_mut_ptr(), cap: 4 };
            // SAFETY: `buf` outlives the receive, which completes below.
            match unsafe { e.irecv(target, Some(1), 3, Some(2)) }.unwrap() {
                Started::Done(_) => {}
                Started::Pending(id) => {
                    e.wait(id).unwrap();
                }
            }
            recv_marker(e, 1);
        }
    });
}

/// A rendezvous message whose offer has arrived but whose bytes are still
/// in its sender's buffer cannot be saved: the copy of the messages in
/// transit names it, with its size.
#[test]
fn a_message_still_being_sent_is_named_with_its_size() {
    let offered = Barrier::new(2);
    run(2, modes()[0], |e| {
        let data = pattern(5, 100 << 10);
        if e.world_rank() == 1 {
            // SAFETY: `data` outlives the send, waited for below.
            let started = unsafe { e.isend(data.as_ptr(), data.len(), 0, 0, 4, 1) }.unwrap();
            offered.wait();
            if let Started::Pending(id) = started {
                e.wait(id).unwrap();
            }
            return;
        }
        offered.wait();
        while e.iprobe(Some(1), 0, Some(4)).unwrap().is_none() {}
        let why = e.in_transit(&[]).expect_err("a rendezvous is not whole here");
        assert_eq!(why, InTransitError::StillSending { source_rank: 1, tag: 4, bytes: 100 << 10 });
        let mut buf = vec![0u8; 100 << 10];
        recv(e, &mut buf, Some(1), Some(4)).unwrap();
        assert_eq!(buf, data);
    });
}
