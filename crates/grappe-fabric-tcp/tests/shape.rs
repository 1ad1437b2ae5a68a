//! A worse network emulated inside the links: a shaped link delivers no
//! frame before its delay and no faster than its rate, and its release
//! timer wakes a watcher when a held frame is due; a cut link fails on
//! both sides, its owner told that the cut was on purpose.
//!
//! The times asserted are lower bounds only: a loaded machine makes
//! everything later, never earlier.

mod common;

use std::num::NonZeroU64;
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use common::{link_pair, next_event, pattern};
use grappe_fabric_tcp::{HEADER_BYTES, Interest, Link, LinkError, Shaping, Watch};

/// A safety net against a hang; the tests wait for events, not for time.
const PATIENCE: Duration = Duration::from_secs(30);

fn delayed(delay: Duration) -> Shaping {
    Shaping { delay, rate: None }
}

/// Flushes `writer` and peeks `reader` until a record arrives; returns it
/// and when it arrived.
fn flush_until_record(writer: &mut Link, reader: &mut Link) -> (Vec<u8>, Instant) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        writer.flush().unwrap();
        if let Some(record) = reader.peek().unwrap() {
            let got = (record.payload().to_vec(), Instant::now());
            reader.consume();
            return got;
        }
        assert!(Instant::now() < deadline, "no record in {PATIENCE:?}");
        std::thread::yield_now();
    }
}

#[test]
fn a_frame_is_not_readable_before_its_delay() {
    let delay = Duration::from_millis(20);
    let (mut writer, mut reader) = link_pair();
    writer.shape(delayed(delay)).unwrap();
    for seed in 0..3 {
        let pushed_at = Instant::now();
        assert!(writer.try_push([seed as u32; 4], &pattern(seed, 1000)).unwrap());
        // Held, not lost: it counts as waiting for the socket.
        assert_eq!(writer.backlog_bytes(), HEADER_BYTES + 1000);
        let (payload, arrived_at) = flush_until_record(&mut writer, &mut reader);
        assert!(payload == pattern(seed, 1000), "record {seed} differs");
        let took = arrived_at - pushed_at;
        assert!(took >= delay, "record {seed} arrived {took:?} after its push, before the {delay:?} delay");
    }
    assert_eq!(writer.backlog_bytes(), 0);
}

#[test]
fn a_rate_cap_makes_bytes_take_their_time() {
    // 4 MB/s: 1 MiB of payload takes at least 262 ms, however the frames
    // are cut and however fast the machine.
    let rate = 4_000_000u64;
    let (mut writer, mut reader) = link_pair();
    writer.shape(Shaping { delay: Duration::ZERO, rate: NonZeroU64::new(rate) }).unwrap();
    let (frames, len) = (16, 64 << 10);
    let started = Instant::now();
    for seed in 0..frames {
        assert!(writer.try_push([1; 4], &pattern(seed, len)).unwrap());
    }
    let mut last = started;
    for seed in 0..frames {
        let (payload, arrived_at) = flush_until_record(&mut writer, &mut reader);
        assert!(payload == pattern(seed, len), "record {seed} differs");
        last = arrived_at;
    }
    let bytes = frames as usize * len;
    let least = Duration::from_secs_f64(bytes as f64 / rate as f64);
    let took = last - started;
    assert!(took >= least, "{bytes} bytes took {took:?} at {rate} B/s, less than {least:?}");
}

fn watch() -> (Watch, Receiver<u64>) {
    let (tokens, received) = channel();
    (Watch::start(Box::new(move |token| tokens.send(token).unwrap())).unwrap(), received)
}

#[test]
fn the_release_timer_wakes_a_watcher_for_every_held_frame() {
    // The owner of a shaped link sleeps until the watcher calls, arming
    // it before each sleep: it must be called again as long as frames are
    // held, each release setting the timer for the next frame, and only
    // when a frame is due.
    let delay = Duration::from_millis(10);
    let (mut writer, mut reader) = link_pair();
    writer.shape(delayed(delay)).unwrap();
    let timer = writer.release_timer_fd().unwrap();
    let (watch, tokens) = watch();
    watch.add_interest(timer, 5, Interest::ReadableOnce).unwrap();
    let pushed_at = Instant::now();
    for seed in 0..4 {
        assert!(writer.try_push([2; 4], &pattern(seed, 100)).unwrap());
        std::thread::sleep(Duration::from_millis(3));
    }
    let mut first_call = None;
    while writer.backlog_bytes() > 0 {
        let token = tokens.recv_timeout(PATIENCE).expect("frames held and the watcher never called");
        assert_eq!(token, 5);
        first_call.get_or_insert_with(Instant::now);
        // Called only when a frame is due: the flush releases one at least.
        let held = writer.backlog_bytes();
        writer.flush().unwrap();
        assert!(writer.backlog_bytes() < held, "called with {held} bytes held and none due");
        watch.rearm(timer, 5).unwrap();
    }
    let first_call = first_call.expect("the frames left without a call");
    assert!(first_call - pushed_at >= delay, "called {:?} after the first push", first_call - pushed_at);
    for seed in 0..4 {
        assert_eq!(next_event(&mut reader).unwrap(), ([2; 4], pattern(seed, 100)));
    }
}

#[test]
fn the_release_timer_is_readable_exactly_while_a_held_frame_is_due() {
    // A rank arms the watcher only when it goes to sleep: a frame that
    // fell due while it ran must still wake it, and a timer with nothing
    // held must not, or the rank would never sleep.
    let (mut writer, _reader) = link_pair();
    writer.shape(delayed(Duration::from_millis(2))).unwrap();
    let timer = writer.release_timer_fd().unwrap();
    let (mut other_writer, sentinel) = link_pair();
    let (watch, tokens) = watch();
    assert!(writer.try_push([1; 4], b"due soon").unwrap());
    std::thread::sleep(Duration::from_millis(20));
    // Due for a while, nobody watching: armed now, the watcher calls.
    watch.add_interest(timer, 5, Interest::ReadableOnce).unwrap();
    assert_eq!(tokens.recv_timeout(PATIENCE).unwrap(), 5);
    assert!(writer.flush().unwrap(), "the due frame was not released");
    // Nothing held: armed again, the timer stays quiet, which the
    // sentinel's event, coming after the arming, shows.
    watch.rearm(timer, 5).unwrap();
    watch.add_interest(sentinel.raw_fd(), 9, Interest::ReadableOnce).unwrap();
    assert!(other_writer.try_push([2; 4], b"sentinel").unwrap());
    assert_eq!(tokens.recv_timeout(PATIENCE).unwrap(), 9, "a timer with nothing held called");
}

#[test]
fn an_unshaped_link_has_no_release_timer() {
    let (link, _far) = link_pair();
    assert_eq!(link.release_timer_fd(), None);
}

#[test]
fn a_cut_link_fails_on_both_sides_and_says_it_was_cut() {
    let (mut near, mut far) = link_pair();
    let cutter = near.cutter();
    assert!(near.try_push([3; 4], b"before the cut").unwrap());
    assert_eq!(next_event(&mut far).unwrap(), ([3; 4], b"before the cut".to_vec()));
    let (near_out, mut near_in) = near.split().unwrap();
    let (watch, tokens) = watch();
    watch.add_interest(near_in.raw_fd().unwrap(), 8, Interest::ReadableOnce).unwrap();

    cutter.cut().unwrap();
    // A sleeper watching the receiving side wakes.
    assert_eq!(tokens.recv_timeout(PATIENCE).unwrap(), 8);
    let error = near_in.peek().unwrap_err();
    assert!(matches!(error, LinkError::Severed { peer } if peer == cutter.peer_addr()), "{error:?}");
    assert!(error.to_string().contains("cut by fault injection"), "{error}");
    let mut near_out = near_out;
    assert!(!near_out.try_push([4; 4], b"after the cut"));
    assert!(matches!(near_out.failure(), Some(LinkError::Severed { .. })), "{:?}", near_out.failure());
    // The peer reads the end of the stream, as from a peer that closed.
    let error = next_event(&mut far).unwrap_err();
    assert!(matches!(error, LinkError::Closed { cut: None, .. }), "{error:?}");
    // Cutting again does nothing more.
    cutter.cut().unwrap();
}

#[test]
fn a_cutter_does_not_keep_a_dropped_link_open() {
    // A rank that ends closes its connections as usual, even while a cut
    // is still planned for them: its peer reads the end of the stream.
    let (mut near, mut far) = link_pair();
    let cutter = near.cutter();
    let (near_out, near_in) = near.split().unwrap();
    drop((near_out, near_in));
    let error = next_event(&mut far).unwrap_err();
    assert!(matches!(error, LinkError::Closed { cut: None, .. }), "{error:?}");
    cutter.cut().unwrap();
}
