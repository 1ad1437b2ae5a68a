//! Revoked contexts and probes of stalled collective waits, on real
//! engines: a revocation fails the receives waiting on the context, drops
//! what arrived on it (so that rendezvous and staged senders complete),
//! refuses new traffic on it and reaches the other ranks; a wait that
//! nobody wakes asks its peer where it stands and revokes when the answer
//! shows a call that cannot match, and only then.

mod common;

use std::borrow::Cow;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{modes, recv, run_waiting, send};
use grappe_proto::{CallBoard, Engine, Error, Mismatch, RecvTarget, Started};
use grappe_sched::WaitSettings;

/// The context revoked in these tests; context 0 carries their signals.
const COLL: u32 = 1;

/// Sleeps that time out quickly, so that stalled waits probe soon.
fn short_sleeps() -> WaitSettings {
    WaitSettings {
        spin_iters: 0,
        yield_for: Duration::from_millis(1),
        sleep_timeout: Duration::from_millis(10),
        ..WaitSettings::default()
    }
}

fn why(found_by: usize) -> Mismatch {
    Mismatch { op: "allreduce".into(), found_by, calls: Vec::new(), evidence: "a test".into() }
}

/// Posts a receive on `ctx` from `src` into `buf` and waits for it.
fn recv_on(e: &mut Engine, ctx: u32, buf: &mut [u8], src: usize) -> Result<usize, Error> {
    let target = RecvTarget::Buffer { ptr: buf.as_mut_ptr(), cap: buf.len() };
    // SAFETY: `buf` outlives the wait below.
    match unsafe { e.irecv(target, Some(src), ctx, None) }? {
        Started::Done(done) => Ok(done.status.bytes),
        Started::Pending(id) => e.wait(id).map(|done| done.status.bytes),
    }
}

/// Sends `data` on `ctx` to `dest` and waits until it is out.
fn send_on(e: &mut Engine, ctx: u32, data: &[u8], dest: usize) {
    let me = e.world_rank() as u32;
    // SAFETY: `data` outlives the wait below.
    if let Started::Pending(id) = unsafe { e.isend(data.as_ptr(), data.len(), dest, ctx, 3, me) }.unwrap() {
        e.wait(id).unwrap();
    }
}

fn revoked_by(result: Result<usize, Error>, rank: usize) -> bool {
    matches!(result, Err(Error::CollectiveMismatch(m)) if m.found_by == rank && m.evidence == "a test")
}

#[test]
fn a_revocation_releases_receivers_and_senders_and_reaches_every_rank() {
    for settings in modes() {
        let outcomes = run_waiting(3, settings, short_sleeps(), |e| match e.world_rank() {
            0 => {
                // Waits for a message rank 1 never sends.
                let released = revoked_by(recv_on(e, COLL, &mut [0u8; 8], 1), 2);
                send(e, b"done", 2, 0);
                released
            }
            1 => {
                // An eager and a large message that rank 2 never receives.
                let (small, large) = (vec![1u8; 100], vec![2u8; 1 << 20]);
                let mut pending = Vec::new();
                for data in [&small, &large] {
                    // SAFETY: both buffers outlive the waits below.
                    if let Started::Pending(id) = unsafe { e.isend(data.as_ptr(), data.len(), 2, COLL, 5, 1) }.unwrap()
                    {
                        pending.push(id);
                    }
                }
                send(e, b"sent", 2, 0);
                let sent = pending.into_iter().all(|id| e.wait(id).is_ok());
                sent && revoked_by(recv_on(e, COLL, &mut [0u8; 8], 0), 2)
            }
            _ => {
                // Once both messages are here (they precede "sent"), revoke.
                recv(e, &mut [0u8; 4], Some(1), Some(0)).unwrap();
                e.revoke(COLL, &why(2), &[0, 1, 2], 2);
                let dropped = e.in_transit(&[]).unwrap().iter().all(|m| m.ctx != COLL);
                let refused_recv = revoked_by(recv_on(e, COLL, &mut [0u8; 8], 0), 2);
                let mut buf = [0u8; 8];
                let target = RecvTarget::Buffer { ptr: buf.as_mut_ptr(), cap: buf.len() };
                // SAFETY: `buf` outlives the call, which fails at once.
                let blocking = unsafe { e.recv(target, Some(0), COLL, None) }.map(|done| done.status.bytes);
                let refused_blocking_recv = revoked_by(blocking, 2);
                // SAFETY: nothing is sent: the call fails.
                let refused_send = matches!(
                    unsafe { e.isend([0u8; 4].as_ptr(), 4, 0, COLL, 5, 2) },
                    Err(Error::CollectiveMismatch(_))
                );
                let others_work = recv(e, &mut [0u8; 4], Some(0), Some(0)).is_ok();
                dropped
                    && refused_recv
                    && refused_blocking_recv
                    && refused_send
                    && others_work
                    && e.revocation(COLL) == Some(&why(2))
            }
        });
        assert_eq!(outcomes, vec![true; 3], "single copy: {}", settings.single_copy);
    }
}

/// What a board was asked to judge: (peer, its answer, awaited).
type Judged = Vec<(usize, [u64; 4], bool)>;

/// A board whose call is set by the test; it judges answers as the
/// communicators do, and records what it was asked.
struct TestBoard {
    rank: usize,
    members: Vec<usize>,
    call: [u64; 4],
    answered: AtomicUsize,
    judged: Mutex<Judged>,
}

impl TestBoard {
    fn new(rank: usize, seq: u64, key: u64) -> TestBoard {
        TestBoard {
            rank,
            members: vec![0, 1],
            call: [seq, key, 0, 0],
            answered: AtomicUsize::new(0),
            judged: Mutex::default(),
        }
    }
}

impl CallBoard for TestBoard {
    fn current(&self) -> [u64; 4] {
        self.answered.fetch_add(1, Ordering::Relaxed);
        self.call
    }

    fn stray(&self, peer: usize, theirs: [u64; 4], awaited: bool) -> Option<Mismatch> {
        self.judged.lock().unwrap().push((peer, theirs, awaited));
        let [seq, key, ..] = self.call;
        let stray = (theirs[0] == seq && theirs[1] != key) || (theirs[0] > seq && awaited);
        stray.then(|| Mismatch {
            op: Cow::Borrowed("test"),
            found_by: self.rank,
            calls: Vec::new(),
            evidence: format!("{theirs:?}"),
        })
    }

    fn members(&self) -> &[usize] {
        &self.members
    }

    fn rank(&self) -> usize {
        self.rank
    }

    fn revoked(&self) {}
}

/// Rank 0 waits on `COLL` for a message of rank 1, whose board says
/// `(seq, key)`; rank 0's says `(1, 10)`. Rank 1 waits on context 0 until
/// rank 0 releases it, or, if `sends_when_asked`, sends the awaited
/// message once it has answered a probe. Returns rank 0's outcome, what
/// its board judged, and whether rank 1's context was revoked.
fn stalled_wait(seq: u64, key: u64, sends_when_asked: bool) -> (Result<usize, String>, Judged, bool) {
    let outcomes = run_waiting(2, modes()[0], short_sleeps(), |e| {
        let me = e.world_rank();
        let board = std::sync::Arc::new(if me == 0 { TestBoard::new(0, 1, 10) } else { TestBoard::new(1, seq, key) });
        e.register_board(COLL, board.clone());
        if me == 0 {
            let outcome = recv_on(e, COLL, &mut [0u8; 8], 1).map_err(|e| e.to_string());
            send(e, b"go", 1, 0);
            let judged = board.judged.lock().unwrap().clone();
            (outcome, judged, false)
        } else {
            if sends_when_asked {
                e.block_until(|_| board.answered.load(Ordering::Relaxed) > 0).unwrap();
                send_on(e, COLL, &[7u8; 8], 0);
            }
            recv(e, &mut [0u8; 2], Some(0), Some(0)).unwrap();
            (Ok(0), Vec::new(), e.revocation(COLL).is_some())
        }
    });
    let mut outcomes = outcomes.into_iter();
    let (outcome, judged, _) = outcomes.next().unwrap();
    let (_, _, revoked) = outcomes.next().unwrap();
    (outcome, judged, revoked)
}

#[test]
fn a_peer_at_the_same_call_with_another_signature_is_found_by_asking_it() {
    let (outcome, judged, revoked) = stalled_wait(1, 11, false);
    let error = outcome.expect_err("rank 1's call cannot match");
    assert!(error.contains("[1, 11, 0, 0]"), "{error}");
    assert_eq!(judged[0], (1, [1, 11, 0, 0], true));
    assert!(revoked, "the revocation reached rank 1");
}

#[test]
fn a_peer_that_went_past_the_call_without_sending_is_found_by_asking_it() {
    let (outcome, judged, revoked) = stalled_wait(2, 12, false);
    assert!(outcome.expect_err("rank 1 passed the call").contains("[2, 12, 0, 0]"));
    assert_eq!(judged[0], (1, [2, 12, 0, 0], true));
    assert!(revoked);
}

#[test]
fn a_peer_behind_is_waited_for() {
    let (outcome, judged, revoked) = stalled_wait(0, 0, true);
    assert_eq!(outcome, Ok(8), "the message came once rank 1 answered");
    assert!(judged.iter().all(|&(peer, theirs, awaited)| peer == 1 && theirs == [0, 0, 0, 0] && awaited), "{judged:?}");
    assert!(!judged.is_empty() && !revoked);
}

/// A peer busy outside the runtime gets one probe from a stalled waiter,
/// however many sleeps the waiter goes through: the next waits for the
/// answer.
#[test]
fn a_busy_peer_is_probed_once_until_it_answers() {
    let outcomes = run_waiting(2, modes()[0], short_sleeps(), |e| {
        let me = e.world_rank();
        let board = std::sync::Arc::new(TestBoard::new(me, 0, 0));
        e.register_board(COLL, board.clone());
        if me == 0 {
            recv_on(e, COLL, &mut [0u8; 8], 1).unwrap();
            0
        } else {
            // About 30 of rank 0's sleeps.
            std::thread::sleep(Duration::from_millis(300));
            e.block_until(|_| board.answered.load(Ordering::Relaxed) > 0).unwrap();
            e.progress().unwrap();
            let answered = board.answered.load(Ordering::Relaxed);
            send_on(e, COLL, &[7u8; 8], 0);
            answered
        }
    });
    assert_eq!(outcomes[1], 1, "probes answered by the busy rank");
}
