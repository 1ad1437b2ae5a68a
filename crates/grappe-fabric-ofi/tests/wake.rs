//! Readiness: the endpoint's completion descriptor, watched by the TCP
//! links' epoll watcher, wakes it when a record arrives for a link nobody
//! polls; `try_wait` says when sleeping is safe.

mod common;

use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use common::{config, endpoint, pattern, providers};
use grappe_fabric_ofi::{Ends, Matching};
use grappe_fabric_tcp::{Interest, Watch};

/// A safety net against a hang; the tests wait for events, not for time.
const PATIENCE: Duration = Duration::from_secs(30);

fn watch() -> (Watch, Receiver<u64>) {
    let (tokens, received) = channel();
    (Watch::start(Box::new(move |token| tokens.send(token).unwrap())).unwrap(), received)
}

#[test]
fn a_record_wakes_the_watcher_of_an_idle_endpoint() {
    for provider in providers() {
        for matching in [Matching::Tagged, Matching::Messages] {
            let config = config(&provider, matching);
            let (a, b) = (endpoint(&config), endpoint(&config));
            // udp;ofi_rxd (libfabric 1.17) has no wait object: its owner
            // is never told it may sleep. The others have one.
            let without = provider.contains("ofi_rxd");
            assert_eq!(b.raw_fd().is_none(), without, "{provider}: a descriptor or not, not as expected");
            let Some(fd) = b.raw_fd() else {
                b.progress();
                assert!(!b.try_wait().unwrap(), "{provider}: safe to sleep without a descriptor");
                continue;
            };
            let mut near = a.link(b.name(), Ends { local: 0, remote: 1 }).unwrap();
            let (_, mut inbox) = b.link(a.name(), Ends { local: 1, remote: 0 }).unwrap().split();

            // A first record sets the provider's connection up: the wake
            // below is for a record, not for a connection request.
            assert!(near.try_push([1; 4], b"hello").unwrap());
            let deadline = Instant::now() + PATIENCE;
            loop {
                near.flush().unwrap();
                if let Some(record) = inbox.peek().unwrap() {
                    record.consume();
                    break;
                }
                assert!(Instant::now() < deadline, "{provider}: the first record never came");
            }
            while !near.flush().unwrap() {
                inbox.peek().unwrap();
                assert!(Instant::now() < deadline, "{provider}: the first record's send never completed");
            }
            let (out, _) = near.split();

            // Idle: once what set-up left is read, sleeping is safe.
            while !inbox.try_wait().unwrap() {
                assert!(inbox.peek().unwrap().is_none());
                assert!(Instant::now() < deadline, "{provider}: try_wait never allowed sleeping on an idle endpoint");
            }
            let (watch, tokens) = watch();
            watch.add_interest(fd, 7, Interest::ReadableOnce).unwrap();

            // The sender runs in its own thread; this one only waits.
            let sender = std::thread::spawn(move || {
                let mut out = out;
                assert!(out.try_push([42; 4], &pattern(1, 3000)));
                let deadline = Instant::now() + PATIENCE;
                while out.backlogged() {
                    out.flush();
                    assert!(Instant::now() < deadline, "the record never left");
                }
                out
            });
            let token = tokens.recv_timeout(PATIENCE).expect("the watcher never woke for the record");
            assert_eq!(token, 7);

            // Woken: the record is there (the provider may need a few
            // reads to finish moving it, but no more waiting).
            assert!(!inbox.try_wait().unwrap() || inbox.peek().unwrap().is_some());
            let deadline = Instant::now() + PATIENCE;
            let record = loop {
                if let Some(record) = inbox.peek().unwrap() {
                    break record;
                }
                assert!(Instant::now() < deadline, "woken, but no record came");
            };
            assert_eq!((record.meta(), record.payload()), ([42; 4], &pattern(1, 3000)[..]));
            record.consume();
            let _out = sender.join().unwrap();
        }
    }
}

#[test]
fn try_wait_refuses_while_a_record_waits_unread() {
    let config = config(&providers()[0], Matching::Tagged);
    let (a, b) = (endpoint(&config), endpoint(&config));
    let mut near = a.link(b.name(), Ends { local: 0, remote: 1 }).unwrap();
    let (_, mut inbox) = b.link(a.name(), Ends { local: 1, remote: 0 }).unwrap().split();
    assert!(near.try_push([1; 4], b"pending").unwrap());
    let deadline = Instant::now() + PATIENCE;
    // Progress b until the record is in (b.progress reads it but the
    // link's owner has not taken it).
    loop {
        near.flush().unwrap();
        b.progress();
        if !b.try_wait().unwrap() && !inbox.try_wait().unwrap() {
            if let Some(record) = inbox.peek().unwrap() {
                assert_eq!(record.payload(), b"pending");
                break;
            }
        }
        assert!(Instant::now() < deadline, "the record never arrived");
    }
    // Peeked and not consumed: still not safe to sleep.
    assert!(!inbox.try_wait().unwrap());
}

#[test]
fn the_arrival_hook_names_the_link_whose_records_another_caller_brought_in() {
    for matching in [Matching::Tagged, Matching::Messages] {
        let config = config(&providers()[0], matching);
        let (a, b) = (endpoint(&config), endpoint(&config));
        let (announced, heard) = channel();
        assert!(b.on_arrival(Box::new(move |ends| announced.send(ends).unwrap())));
        assert!(!b.on_arrival(Box::new(|_| {})), "a second hook was taken");
        let mut to_sleeper = a.link(b.name(), Ends { local: 0, remote: 1 }).unwrap();
        let mut to_busy = a.link(b.name(), Ends { local: 2, remote: 3 }).unwrap();
        // The sleeper's owner never calls its link; another thread's link
        // of the same endpoint does all the reading.
        let (_, mut sleeper) = b.link(a.name(), Ends { local: 1, remote: 0 }).unwrap().split();
        let (_, mut busy) = b.link(a.name(), Ends { local: 3, remote: 2 }).unwrap().split();
        assert!(to_busy.try_push([3; 4], b"for the busy one").unwrap());
        assert!(to_sleeper.try_push([1; 4], b"for the sleeper").unwrap());
        let sleeper_ends = Ends { local: 1, remote: 0 };
        let deadline = Instant::now() + PATIENCE;
        let mut for_busy = None;
        loop {
            to_sleeper.flush().unwrap();
            to_busy.flush().unwrap();
            if let Some(record) = busy.peek().unwrap() {
                for_busy = Some(record.payload().to_vec());
                record.consume();
            }
            if heard.try_iter().any(|ends| ends == sleeper_ends) {
                break;
            }
            assert!(Instant::now() < deadline, "{matching:?}: the sleeper's link was never announced");
        }
        // Announced: its record is there for it, without any progress of its own.
        let record = sleeper.peek().unwrap().expect("announced, but no record");
        assert_eq!(record.payload(), b"for the sleeper");
        record.consume();
        while for_busy.is_none() {
            if let Some(record) = busy.peek().unwrap() {
                for_busy = Some(record.payload().to_vec());
                record.consume();
            }
            assert!(Instant::now() < deadline, "the busy link's record never came");
        }
        assert_eq!(for_busy.as_deref(), Some(&b"for the busy one"[..]));
    }
}
