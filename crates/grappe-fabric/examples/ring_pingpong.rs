//! Floor of the mailbox: two threads ping-pong 8-byte records through two
//! rings, no protocol on top. Compare with shared/bench/cacheline.c.

use grappe_fabric::ring::HeadLine;
use std::time::Instant;

use grappe_fabric::ring::{Consumer, Producer};
use grappe_fabric::{CACHE_LINE, Segment};

fn pair(seg: &Segment, offset: usize, capacity: usize) -> (Producer, Consumer) {
    // SAFETY: disjoint, zeroed, aligned areas of a live segment.
    unsafe {
        let data = seg.base().add(offset);
        let head = data.add(capacity) as *const HeadLine;
        (Producer::new(data, capacity, head), Consumer::new(data, capacity, head))
    }
}

fn main() {
    let capacity = 64 << 10;
    let seg = Segment::anonymous(2 * (capacity + CACHE_LINE)).unwrap();
    let (mut ping_tx, mut ping_rx) = pair(&seg, 0, capacity);
    let (mut pong_tx, mut pong_rx) = pair(&seg, capacity + CACHE_LINE, capacity);
    let iters = 2_000_000u64;
    std::thread::scope(|s| {
        s.spawn(move || {
            for i in 0..iters {
                loop {
                    if let Some(rec) = ping_rx.peek() {
                        assert_eq!(rec.payload(), &i.to_le_bytes());
                        let _ = rec.consume();
                        break;
                    }
                }
                while !pong_tx.try_push([0; 4], &i.to_le_bytes()) {}
            }
        });
        let start = Instant::now();
        for i in 0..iters {
            while !ping_tx.try_push([0; 4], &i.to_le_bytes()) {}
            loop {
                if let Some(rec) = pong_rx.peek() {
                    let _ = rec.consume();
                    break;
                }
            }
        }
        let ns = start.elapsed().as_nanos() as f64 / iters as f64 / 2.0;
        println!("ring ping-pong half round trip: {ns:.1} ns");
    });
}
