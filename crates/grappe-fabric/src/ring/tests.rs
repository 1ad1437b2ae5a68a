use super::*;
use crate::Segment;
use crate::ring::HeadLine;
use proptest::prelude::*;
use std::collections::VecDeque;

/// A ring over fresh anonymous memory: data first, head word on the next line.
fn ring(capacity: usize) -> (Segment, Producer, Consumer) {
    let seg = Segment::anonymous(capacity + CACHE_LINE).unwrap();
    let data = seg.base();
    // SAFETY: the segment is zeroed, aligned (mmap), large enough and
    // outlives the handles within each test.
    unsafe {
        let head = data.add(capacity) as *const HeadLine;
        (seg, Producer::new(data, capacity, head), Consumer::new(data, capacity, head))
    }
}

fn payload_for(seq: u64, len: usize) -> Vec<u8> {
    (0..len).map(|i| (seq as usize * 31 + i) as u8).collect()
}

#[test]
fn one_record_round_trip() {
    let (_seg, mut tx, mut rx) = ring(4096);
    assert!(rx.peek().is_none());
    assert!(tx.try_push([1, 2, 3, 4], b"hello"));
    let rec = rx.peek().expect("record published");
    assert_eq!(rec.meta(), [1, 2, 3, 4]);
    assert_eq!(rec.payload(), b"hello");
    let _ = rec.consume();
    assert!(rx.peek().is_none());
}

#[test]
fn empty_payload_is_a_record() {
    let (_seg, mut tx, mut rx) = ring(4096);
    assert!(tx.try_push([9, 0, 0, 0], &[]));
    let rec = rx.peek().unwrap();
    assert!(rec.is_empty());
    assert_eq!(rec.meta()[0], 9);
    let _ = rec.consume();
}

#[test]
fn full_ring_refuses_then_accepts_after_consume() {
    let (_seg, mut tx, mut rx) = ring(1024);
    let mut pushed = 0;
    while tx.try_push([pushed, 0, 0, 0], &[7; 40]) {
        pushed += 1;
    }
    // 1024 bytes, 2 lines per record, one spare line: 7 records.
    assert_eq!(pushed, 7);
    let _ = rx.peek().unwrap().consume();
    assert!(tx.try_push([99, 0, 0, 0], &[7; 40]));
}

#[test]
fn a_producer_blocked_on_a_full_ring_is_reported_once_space_frees() {
    let (_seg, mut tx, mut rx) = ring(1024);
    assert!(tx.try_push([1, 0, 0, 0], &[0; 40]));
    assert!(!rx.peek().unwrap().consume(), "nobody waits yet");
    while tx.try_push([2, 0, 0, 0], &[0; 40]) {}
    // The producer found the ring full: the next consume must say so, once.
    assert!(rx.peek().unwrap().consume(), "the waiting producer must be reported");
    assert!(!rx.peek().unwrap().consume(), "reported only once");
}

#[test]
fn payload_bytes_that_look_like_stamps_never_make_phantom_records() {
    // Payloads full of small counters: exactly the values that stamps of
    // the next lap would take, were the ring to poll stale payload bytes.
    let (_seg, mut tx, mut rx) = ring(1024);
    // Each round is 1 to 6 lines: 200 rounds make some 37 laps of the
    // 16-line ring, Miri's 40 some 7.
    let rounds: u64 = if cfg!(miri) { 40 } else { 200 };
    for round in 0..rounds {
        let words: Vec<u8> = (0..48u64).flat_map(|i| (round * 64 + i * 8 + 1).to_le_bytes()).collect();
        let len = 8 * (1 + (round as usize % 40));
        assert!(tx.try_push([round as u32, 0, 0, 0], &words[..len]));
        let rec = rx.peek().unwrap();
        assert_eq!(rec.meta()[0], round as u32);
        assert_eq!(rec.payload(), &words[..len]);
        let _ = rec.consume();
        assert!(rx.peek().is_none(), "phantom record after round {round}");
    }
}

proptest! {
    /// Any interleaving of pushes and pops behaves like a FIFO queue that
    /// refuses pushes only when the bytes in flight leave no room.
    #[test]
    fn ring_behaves_like_a_bounded_fifo(ops in proptest::collection::vec((any::<bool>(), 0usize..400), 1..400)) {
        let capacity = 2048;
        let (_seg, mut tx, mut rx) = ring(capacity);
        let mut model: VecDeque<(u64, usize)> = VecDeque::new();
        let mut seq = 0u64;
        for (push, len) in ops {
            if push {
                let len = len.min(max_payload(capacity));
                if tx.try_push([seq as u32, len as u32, 0, 0], &payload_for(seq, len)) {
                    model.push_back((seq, len));
                    seq += 1;
                } else {
                    // Refusal is only allowed when the ring holds data.
                    prop_assert!(!model.is_empty(), "refused a {len}-byte push into an empty ring");
                }
            } else {
                match (rx.peek(), model.pop_front()) {
                    (None, None) => {}
                    (Some(rec), Some((s, len))) => {
                        prop_assert_eq!(rec.meta(), [s as u32, len as u32, 0, 0]);
                        prop_assert_eq!(rec.payload(), &payload_for(s, len)[..]);
                        let _ = rec.consume();
                    }
                    (got, want) => prop_assert!(false, "ring returned {:?}, model {:?}", got.map(|r| r.meta()), want),
                }
            }
        }
    }
}

/// Records the concurrent test streams: enough for many laps of the ring,
/// with padding records, full-ring waits and wake-up reports. Miri
/// interprets every instruction, so it gets a few laps only.
const CONCURRENT_RECORDS: u64 = if cfg!(miri) { 300 } else { 200_000 };

#[test]
fn concurrent_producer_and_consumer_keep_order_and_content() {
    let (seg, mut tx, mut rx) = ring(8192);
    let count = CONCURRENT_RECORDS;
    std::thread::scope(|s| {
        s.spawn(move || {
            for seq in 0..count {
                let len = (seq % 300) as usize;
                let payload = payload_for(seq, len);
                while !tx.try_push([seq as u32, (seq >> 32) as u32, len as u32, 0], &payload) {
                    std::hint::spin_loop();
                }
            }
        });
        let mut expected = 0u64;
        while expected < count {
            let Some(rec) = rx.peek() else {
                std::hint::spin_loop();
                continue;
            };
            let meta = rec.meta();
            assert_eq!(meta[0] as u64 | (meta[1] as u64) << 32, expected);
            assert_eq!(rec.payload(), &payload_for(expected, meta[2] as usize)[..]);
            let _ = rec.consume();
            expected += 1;
        }
    });
    drop(seg);
}
