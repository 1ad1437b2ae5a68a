//! Loom models of a mailbox and the doorbells around it (`scripts/loom`).
//!
//! The ring, the head line and the doorbells run their real code, over
//! loom's atomics (see `crate::primitive`). Loom's atomics must be created
//! inside the model, so the ring's memory is built here as lines whose
//! first word is a real atomic stamp, and records are one line each
//! (payloads of at most 32 bytes, which a 4-line ring imposes anyway):
//! a payload never lies over a stamp here.
//!
//! Covered: the stamp and head publication under every interleaving loom
//! explores (a record is seen once, in order, never from a stale lap, and a
//! full ring refuses), the waiting flag that a blocked producer raises and
//! the consumer reports, and the doorbell hand-off in both directions (a
//! sleeping receiver woken by the sender's ring, a sender blocked on a
//! full mailbox woken by the receiver), with the futex modelled by a
//! condvar: a lost wake-up is a deadlock that loom reports.
//!
//! Not covered: multi-line records and padding (their payloads lie over
//! stamp words, which loom's atomics cannot share memory with), payload
//! bytes as data (loom does not track plain memory: Miri's race detector
//! checks those accesses, see `scripts/miri`), asymmetric fences
//! (membarrier), futex timeouts and spurious wake-ups.

use loom::sync::Arc;
use loom::thread;
use std::time::Duration;

use super::*;
use crate::Doorbell;

const CAPACITY: usize = 4 * CACHE_LINE;
/// One more record than the ring holds (three lines and the spare one), so
/// that the sender may find the mailbox full.
const RECORDS: u32 = 4;
/// Ignored by the loom futex: a sleep that nobody ends is a deadlock.
const FOREVER: Duration = Duration::from_secs(3600);

#[repr(C, align(64))]
struct Line {
    header: RawHeader,
    payload: [u8; CACHE_LINE - HEADER_BYTES],
}

/// A mailbox and the doorbells of both ends, shared by the two threads.
struct Mailbox {
    lines: Box<[Line]>,
    head: HeadLine,
    sender_bell: Doorbell,
    receiver_bell: Doorbell,
}

// SAFETY: the raw lines are written only through the producer and read only
// through the consumer, which order their accesses by the ring's protocol.
unsafe impl Sync for Mailbox {}
// SAFETY: as above.
unsafe impl Send for Mailbox {}

impl Mailbox {
    fn new() -> Arc<Mailbox> {
        let line = || Line {
            header: RawHeader { stamp: AtomicU64::new(0), len: 0, lines: 0, meta: [0; 4] },
            payload: [0; CACHE_LINE - HEADER_BYTES],
        };
        Arc::new(Mailbox {
            lines: (0..CAPACITY / CACHE_LINE).map(|_| line()).collect(),
            head: HeadLine::default(),
            sender_bell: Doorbell::default(),
            receiver_bell: Doorbell::default(),
        })
    }

    fn ends(&self) -> (Producer, Consumer) {
        let data = self.lines.as_ptr() as *mut u8;
        // SAFETY: `CAPACITY` bytes of zeroed, 64-byte aligned lines and a
        // head line, which the caller keeps alive (an `Arc`) with the ends;
        // one producer and one consumer.
        unsafe { (Producer::new(data, CAPACITY, &self.head), Consumer::new(data, CAPACITY, &self.head)) }
    }
}

fn payload(seq: u32) -> [u8; 8] {
    [seq as u8 + 1; 8]
}

/// The sender: pushes, and when the mailbox is full prepares to sleep,
/// tries once more, then sleeps until the receiver frees space.
fn send_all(mailbox: &Mailbox, mut tx: Producer) {
    for seq in 0..RECORDS {
        loop {
            if tx.try_push([seq, 0, 0, 0], &payload(seq)) {
                mailbox.receiver_bell.ring();
                break;
            }
            mailbox.sender_bell.prepare();
            if tx.try_push([seq, 0, 0, 0], &payload(seq)) {
                mailbox.sender_bell.cancel();
                mailbox.receiver_bell.ring();
                break;
            }
            let _ = mailbox.sender_bell.sleep(FOREVER);
        }
    }
}

/// The receiver: takes records in order, wakes the sender when it was
/// waiting for space, and sleeps when the mailbox is empty.
fn receive_all(mailbox: &Mailbox, mut rx: Consumer) {
    for seq in 0..RECORDS {
        loop {
            if let Some(record) = rx.peek() {
                assert_eq!(record.meta(), [seq, 0, 0, 0], "records out of order");
                assert_eq!(record.payload(), &payload(seq));
                if record.consume() {
                    mailbox.sender_bell.ring();
                }
                break;
            }
            mailbox.receiver_bell.prepare();
            if rx.has_record() {
                mailbox.receiver_bell.cancel();
                continue;
            }
            let _ = mailbox.receiver_bell.sleep(FOREVER);
        }
    }
    assert!(rx.peek().is_none(), "a record beyond the last one sent");
}

#[test]
fn records_cross_a_full_mailbox_in_order_and_no_wake_up_is_lost() {
    loom::model(|| {
        let mailbox = Mailbox::new();
        let (tx, rx) = mailbox.ends();
        let sender = {
            let mailbox = mailbox.clone();
            thread::spawn(move || send_all(&mailbox, tx))
        };
        receive_all(&mailbox, rx);
        sender.join().unwrap();
    });
}

#[test]
fn a_producer_refused_by_a_full_mailbox_is_always_reported() {
    // Without doorbells: the producer fills the ring, then one push races
    // one consume. The push may fail only if it raised the waiting flag
    // before seeing the head move, and then the consume must report it
    // (the fences on both sides): otherwise the producer would sleep with
    // nobody to wake it.
    loom::model(|| {
        let mailbox = Mailbox::new();
        let (mut tx, mut rx) = mailbox.ends();
        for seq in 0..RECORDS - 1 {
            assert!(tx.try_push([seq, 0, 0, 0], &payload(seq)), "room for three records");
        }
        let consumer = thread::spawn(move || rx.peek().expect("a published record").consume());
        let pushed = tx.try_push([9, 0, 0, 0], &payload(9));
        let reported = consumer.join().unwrap();
        assert!(pushed || reported, "the producer found the ring full and the consumer did not report it");
        // Once the consume is over (the join orders it), its line is free.
        assert!(pushed || tx.try_push([9, 0, 0, 0], &payload(9)), "space freed but the producer still refused");
    });
}
