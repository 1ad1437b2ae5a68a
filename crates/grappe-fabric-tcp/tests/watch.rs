//! The readiness watcher: callbacks with the right token when a peer
//! writes or hangs up, none once removed, and a thread joined on drop.

mod common;

use std::sync::Arc;
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use common::link_pair;
use grappe_fabric_tcp::{Interest, LinkError, STOP_TOKEN, Watch};

/// A safety net against a hang; the tests wait for events, not for time.
const PATIENCE: Duration = Duration::from_secs(30);

fn watch() -> (Watch, Receiver<u64>) {
    let (tokens, received) = channel();
    (Watch::start(Box::new(move |token| tokens.send(token).unwrap())).unwrap(), received)
}

/// Waits for `token`; returns the tokens that came before it.
fn wait_for(tokens: &Receiver<u64>, token: u64) -> Vec<u64> {
    let mut before = Vec::new();
    loop {
        match tokens.recv_timeout(PATIENCE) {
            Ok(got) if got == token => return before,
            Ok(other) => before.push(other),
            Err(e) => panic!("token {token} never came ({e}); got {before:?}"),
        }
    }
}

#[test]
fn a_peer_writing_or_hanging_up_fires_the_token() {
    let (watch, tokens) = watch();
    let (mut writer, reader) = link_pair();
    watch.add(reader.raw_fd(), 7).unwrap();
    // Writable at once: the first edge.
    assert_eq!(wait_for(&tokens, 7), Vec::<u64>::new());
    assert!(writer.try_push([1; 4], b"wake up").unwrap());
    assert_eq!(wait_for(&tokens, 7), Vec::<u64>::new());
    drop(writer);
    assert_eq!(wait_for(&tokens, 7), Vec::<u64>::new());
}

#[test]
fn a_removed_socket_fires_no_more() {
    let (watch, tokens) = watch();
    let (mut writer, reader) = link_pair();
    let (mut other_writer, sentinel) = link_pair();
    watch.add(reader.raw_fd(), 7).unwrap();
    wait_for(&tokens, 7);
    watch.remove(reader.raw_fd());
    // The sentinel's first edge comes in a wait that began after the
    // removal: every callback of an earlier wait has run by then.
    watch.add(sentinel.raw_fd(), 9).unwrap();
    wait_for(&tokens, 9);
    while tokens.try_recv().is_ok() {}

    // Data for the removed socket, then for the sentinel: had the first
    // still been watched, its token would come before the sentinel's.
    assert!(writer.try_push([1; 4], b"unseen").unwrap());
    assert!(other_writer.try_push([2; 4], b"seen").unwrap());
    assert_eq!(wait_for(&tokens, 9), Vec::<u64>::new());
}

#[test]
fn dropping_the_watch_joins_its_thread_and_drops_the_callback() {
    let alive = Arc::new(());
    let held = Arc::clone(&alive);
    let watch = Watch::start(Box::new(move |_| {
        let _ = &held;
    }))
    .unwrap();
    let (_writer, reader) = link_pair();
    watch.add(reader.raw_fd(), 1).unwrap();
    assert_eq!(Arc::strong_count(&alive), 2);
    drop(watch);
    assert_eq!(Arc::strong_count(&alive), 1, "the callback outlived the watch");
}

#[test]
fn the_stop_token_is_refused() {
    let (watch, _tokens) = watch();
    let (_writer, reader) = link_pair();
    let error = watch.add(reader.raw_fd(), STOP_TOKEN).unwrap_err();
    assert!(matches!(error, LinkError::Watch { .. }), "{error:?}");
}

#[test]
fn a_socket_watched_readable_once_fires_once_until_armed_again() {
    let (watch, tokens) = watch();
    let (mut writer, reader) = link_pair();
    let (mut other_writer, sentinel) = link_pair();
    watch.add_interest(reader.raw_fd(), 7, Interest::ReadableOnce).unwrap();
    watch.add_interest(sentinel.raw_fd(), 9, Interest::ReadableOnce).unwrap();
    // Not readable yet: no event (a writable socket is not reported).
    assert!(writer.try_push([1; 4], b"first").unwrap());
    assert_eq!(wait_for(&tokens, 7), Vec::<u64>::new());
    // Disarmed: more data brings nothing, which the sentinel's event,
    // coming after it, shows.
    assert!(writer.try_push([1; 4], b"second").unwrap());
    assert!(other_writer.try_push([2; 4], b"sentinel").unwrap());
    assert_eq!(wait_for(&tokens, 9), Vec::<u64>::new());
    assert!(tokens.try_recv().is_err());
    // Armed again with data unread: reported at once.
    watch.rearm(reader.raw_fd(), 7).unwrap();
    assert_eq!(wait_for(&tokens, 7), Vec::<u64>::new());
}
