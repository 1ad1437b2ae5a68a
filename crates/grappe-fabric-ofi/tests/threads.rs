//! Several threads on the links of one endpoint at once: each half of
//! each link in its own thread, so that one thread's progress reads the
//! completions of the others' links.

mod common;

use std::time::{Duration, Instant};

use common::{config, endpoint, pattern, providers};
use grappe_fabric_ofi::{Config, Ends, LinkIn, LinkOut, Matching};

const LINKS: u32 = 3;
const RECORDS: usize = 300;

/// The length of record `i` of link `link`: sizes around the fragment.
fn length(link: u32, i: usize, fragment: usize) -> usize {
    match (i + link as usize) % 5 {
        0 => 0,
        1 => 17,
        2 => fragment,
        3 => fragment + 1,
        _ => 2 * fragment + i,
    }
}

fn seed(from: u32, i: usize) -> u64 {
    (u64::from(from) << 32) | i as u64
}

fn send(mut out: LinkOut, from: u32, fragment: usize) -> LinkOut {
    let deadline = Instant::now() + Duration::from_secs(120);
    for i in 0..RECORDS {
        let payload = pattern(seed(from, i), length(from / 2, i, fragment));
        while !out.try_push([from, i as u32, 0, 0], &payload) {
            assert!(out.failure().is_none(), "link {from}: {:?}", out.failure());
            out.flush();
            assert!(Instant::now() < deadline, "link {from}: record {i} refused for 120 s");
        }
    }
    while out.backlogged() {
        out.flush();
        assert!(Instant::now() < deadline, "link {from}: the last records never left");
    }
    out
}

fn receive(mut inbox: LinkIn, from: u32, fragment: usize) -> LinkIn {
    let deadline = Instant::now() + Duration::from_secs(120);
    for i in 0..RECORDS {
        loop {
            if let Some(record) = inbox.peek().unwrap() {
                assert_eq!(record.meta(), [from, i as u32, 0, 0], "a record out of order or astray");
                assert!(
                    record.payload() == pattern(seed(from, i), length(from / 2, i, fragment)),
                    "payload {i} differs"
                );
                record.consume();
                break;
            }
            assert!(Instant::now() < deadline, "link from {from}: record {i} missing after 120 s");
        }
    }
    inbox
}

fn run(config: &Config) {
    let (a, b) = (endpoint(config), endpoint(config));
    let fragment = config.fragment;
    let mut threads = Vec::new();
    for link in 0..LINKS {
        // a's end of link `link` is 2 * link, b's is 2 * link + 1.
        let (near, far) = (2 * link, 2 * link + 1);
        let (a_out, a_in) = a.link(b.name(), Ends { local: near, remote: far }).unwrap().split();
        let (b_out, b_in) = b.link(a.name(), Ends { local: far, remote: near }).unwrap().split();
        threads.push(std::thread::spawn(move || drop(send(a_out, near, fragment))));
        threads.push(std::thread::spawn(move || drop(send(b_out, far, fragment))));
        threads.push(std::thread::spawn(move || drop(receive(a_in, far, fragment))));
        threads.push(std::thread::spawn(move || drop(receive(b_in, near, fragment))));
    }
    for thread in threads {
        thread.join().unwrap();
    }
}

#[test]
fn threads_driving_the_links_of_one_endpoint_keep_every_record_in_order() {
    for matching in [Matching::Tagged, Matching::Messages] {
        let config = Config { fragment: 2048, depth: 4, ..config(&providers()[0], matching) };
        run(&config);
    }
}
