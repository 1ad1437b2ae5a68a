//! Records over a link between two endpoints of one process: order and
//! content under any interleaving of pushes, flushes and reads, both
//! ways, with tagged and with plain messages; fragments; the backlog
//! limit; what a closing peer produces.

mod common;

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use common::{config, endpoint, link_pair, next_event, pattern, variants};
use grappe_fabric_ofi::{BACKLOG_LIMIT, Config, Endpoint, Ends, Link, LinkError, MAX_PAYLOAD, Matching, Meta};
use proptest::prelude::*;

/// Fragments of the property test: small, so that records of a few
/// kilobytes already travel in several messages and credits run out.
const FRAGMENT: usize = 4096;
const DEPTH: usize = 4;

/// What one side pushed and the other has not read yet.
#[derive(Default)]
struct Expected {
    records: VecDeque<(Meta, u64, usize)>,
    next_seed: u64,
}

#[derive(Debug, Clone)]
enum Op {
    /// A record from side `from`, its payload copied or filled in place.
    Push {
        from: usize,
        meta: Meta,
        len: usize,
        fill: bool,
    },
    Flush {
        from: usize,
    },
    /// Side `to` reads at most `max` records.
    Read {
        to: usize,
        max: usize,
    },
    /// Side `from` pushes until the backlog limit refuses.
    Burst {
        from: usize,
    },
}

fn payload_len() -> impl Strategy<Value = usize> {
    prop_oneof![
        4 => 0..64usize,
        4 => 0..20 * FRAGMENT,
        1 => Just(FRAGMENT - 1),
        1 => Just(FRAGMENT),
        1 => Just(FRAGMENT + 1),
        1 => Just(3 * FRAGMENT),
        1 => Just(300 * 1024),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0..2usize, any::<Meta>(), payload_len(), any::<bool>())
            .prop_map(|(from, meta, len, fill)| Op::Push { from, meta, len, fill }),
        2 => (0..2usize).prop_map(|from| Op::Flush { from }),
        5 => (0..2usize, 1..8usize).prop_map(|(to, max)| Op::Read { to, max }),
        1 => (0..2usize).prop_map(|from| Op::Burst { from }),
    ]
}

/// Pushes one record; true if the link took it (and `expected` knows).
fn push(link: &mut Link, expected: &mut Expected, meta: Meta, len: usize, fill: bool) -> bool {
    let seed = expected.next_seed;
    let payload = pattern(seed, len);
    let taken = if fill {
        link.try_push_with(meta, len, |dst| dst.copy_from_slice(&payload)).unwrap()
    } else {
        link.try_push(meta, &payload).unwrap()
    };
    if taken {
        expected.records.push_back((meta, seed, len));
        expected.next_seed += 1;
    } else {
        assert!(link.backlog_bytes() >= BACKLOG_LIMIT, "refused with a backlog of {} bytes", link.backlog_bytes());
    }
    taken
}

/// Reads at most `max` records, checking each against what was pushed.
fn read(link: &mut Link, expected: &mut Expected, max: usize) {
    for _ in 0..max {
        let Some(record) = link.peek().unwrap() else { return };
        let (meta, seed, len) = expected.records.pop_front().expect("a record nobody pushed arrived");
        assert_eq!(record.meta(), meta);
        assert_eq!(record.len(), len);
        assert!(record.payload() == pattern(seed, len).as_slice(), "payload of record {seed} differs");
        link.consume();
    }
}

/// Flushes and reads both ways until everything pushed has arrived.
fn settle(links: &mut [Link; 2], expected: &mut [Expected; 2]) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !expected[0].records.is_empty() || !expected[1].records.is_empty() {
        for side in 0..2 {
            links[side].flush().unwrap();
            read(&mut links[1 - side], &mut expected[side], usize::MAX);
        }
        assert!(Instant::now() < deadline, "records still missing after 120 s");
    }
    while !(links[0].flush().unwrap() & links[1].flush().unwrap()) {
        assert!(Instant::now() < deadline, "sends still incomplete after 120 s");
    }
}

fn run(config: &Config, ops: &[Op]) {
    let (a, b) = link_pair(config);
    let mut links = [a, b];
    let mut expected = [Expected::default(), Expected::default()];
    for op in ops {
        match *op {
            Op::Push { from, meta, len, fill } => {
                push(&mut links[from], &mut expected[from], meta, len, fill);
            }
            Op::Flush { from } => {
                links[from].flush().unwrap();
            }
            Op::Read { to, max } => read(&mut links[to], &mut expected[1 - to], max),
            Op::Burst { from } => {
                let mut pushes = 0;
                while push(&mut links[from], &mut expected[from], [from as u32; 4], 256 * 1024, false) {
                    pushes += 1;
                    assert!(pushes < 10_000, "the backlog limit never refused");
                }
            }
        }
    }
    settle(&mut links, &mut expected);
    // Drained: the limit lets records through again.
    for side in 0..2 {
        assert!(push(&mut links[side], &mut expected[side], [7; 4], 10, false));
    }
    settle(&mut links, &mut expected);
}

fn small(config: Config) -> Config {
    Config { fragment: FRAGMENT, depth: DEPTH, ..config }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// With the first provider only: udp;ofi_rxd moves a megabyte in
    /// seconds, too slow for the cases this takes.
    #[test]
    fn records_arrive_whole_and_in_order_both_ways(ops in proptest::collection::vec(op(), 1..50)) {
        for matching in [Matching::Tagged, Matching::Messages] {
            run(&small(config(&common::providers()[0], matching)), &ops);
        }
    }
}

#[test]
fn records_of_every_size_arrive_with_the_default_settings() {
    for config in variants() {
        let fragment = config.fragment;
        let sizes = [0, 1, fragment - 1, fragment, fragment + 1, 5 * fragment + 3, 1 << 20, 0, 7];
        let ops: Vec<Op> = sizes
            .iter()
            .enumerate()
            .flat_map(|(i, &len)| {
                let meta = [i as u32, len as u32, !0, 0x5eed];
                [
                    Op::Push { from: i % 2, meta, len, fill: i % 3 == 0 },
                    Op::Push { from: 1 - i % 2, meta, len, fill: true },
                ]
            })
            .collect();
        run(&config, &ops);
    }
}

#[test]
fn the_backlog_limit_refuses_until_the_reader_drains() {
    for config in variants() {
        let (mut writer, mut reader) = link_pair(&config);
        let mut expected = Expected::default();
        let mut pushed = 0;
        while push(&mut writer, &mut expected, [1, 2, 3, 4], 100_000, pushed % 2 == 0) {
            pushed += 1;
            assert!(pushed < 10_000, "the backlog limit never refused");
        }
        assert!(pushed as usize * 100_000 >= BACKLOG_LIMIT, "refused after {pushed} records");
        // Refused again while nobody reads, the backlog untouched by refusals.
        let backlog = writer.backlog_bytes();
        assert!(!writer.try_push([0; 4], b"x").unwrap());
        assert!(!writer.try_push_with([0; 4], 1, |_| panic!("fill called for a refused push")).unwrap());
        assert_eq!(writer.backlog_bytes(), backlog);

        let deadline = Instant::now() + Duration::from_secs(60);
        while !push(&mut writer, &mut expected, [5; 4], 10, false) {
            read(&mut reader, &mut expected, 1);
            assert!(Instant::now() < deadline, "the backlog never went under the limit");
        }
        let (mut links, mut all) = ([writer, reader], [expected, Expected::default()]);
        settle(&mut links, &mut all);
    }
}

#[test]
fn a_record_of_the_largest_payload_goes_through() {
    let config = config(&common::providers()[0], Matching::Tagged);
    let (writer, reader) = link_pair(&config);
    let (mut links, mut all) = ([writer, reader], [Expected::default(), Expected::default()]);
    assert!(push(&mut links[0], &mut all[0], [9; 4], MAX_PAYLOAD, true));
    assert!(!push(&mut links[0], &mut all[0], [10; 4], 5, false), "a backlog over the limit takes no more");
    settle(&mut links, &mut all);
    assert!(links[1].peek().unwrap().is_none());
}

#[test]
fn a_record_over_the_largest_payload_is_refused_on_push() {
    let config = config(&common::providers()[0], Matching::Tagged);
    let (mut link, _far) = link_pair(&config);
    let len = MAX_PAYLOAD + 1;
    let error = link.try_push_with([0; 4], len, |_| panic!("fill called for a refused record")).unwrap_err();
    assert!(matches!(error, LinkError::TooLarge { len: l, max: MAX_PAYLOAD, .. } if l == len), "{error:?}");
    assert!(error.to_string().contains(&len.to_string()), "{error}");
    assert_eq!(link.backlog_bytes(), 0);
}

#[test]
fn records_pushed_before_the_peer_makes_its_link_arrive() {
    for config in variants() {
        let (a, b) = (endpoint(&config), endpoint(&config));
        // Another link of b's posts receive buffers: plain messages for the
        // link not made yet land in them, and wait aside for it.
        let _other = b.link(a.name(), Ends { local: 8, remote: 9 }).unwrap();
        let mut near = a.link(b.name(), Ends { local: 3, remote: 4 }).unwrap();
        let mut expected = Expected::default();
        for len in [5, 3 * config.fragment + 1, 0] {
            assert!(push(&mut near, &mut expected, [len as u32; 4], len, false));
        }
        // The messages leave a, and b reads what has come of them (the
        // large record's fragments cannot all go before b's link posts
        // its buffers with tagged messages: the provider waits for them).
        let until = Instant::now() + Duration::from_millis(300);
        while Instant::now() < until {
            near.flush().unwrap();
            b.progress();
        }
        let far = b.link(a.name(), Ends { local: 4, remote: 3 }).unwrap();
        let (mut links, mut all) = ([near, far], [expected, Expected::default()]);
        settle(&mut links, &mut all);
        assert!(links[1].peek().unwrap().is_none());
    }
}

#[test]
fn links_of_one_endpoint_pair_keep_their_records_apart() {
    for config in variants() {
        let (a, b) = (endpoint(&config), endpoint(&config));
        let pairs: Vec<(Link, Link)> = (0..3u32)
            .map(|i| {
                let near = a.link(b.name(), Ends { local: 2 * i, remote: 2 * i + 1 }).unwrap();
                let far = b.link(a.name(), Ends { local: 2 * i + 1, remote: 2 * i }).unwrap();
                (near, far)
            })
            .collect();
        for (i, (mut near, mut far)) in pairs.into_iter().enumerate() {
            let mut expected = Expected { next_seed: 1000 * i as u64, ..Expected::default() };
            for len in [1, config.fragment * 2, 17] {
                assert!(push(&mut near, &mut expected, [i as u32; 4], len, true));
            }
            let (mut links, mut all) = ([near, far], [expected, Expected::default()]);
            settle(&mut links, &mut all);
            [near, far] = links;
            assert!(far.peek().unwrap().is_none(), "link {i} got more than its records");
            drop(near);
        }
    }
}

#[test]
fn a_peer_closing_its_link_ends_the_stream_after_its_records() {
    for config in variants() {
        let (mut a, mut b) = link_pair(&config);
        for i in 0..3u32 {
            assert!(a.try_push([i; 4], &pattern(i as u64, 10_000)).unwrap());
        }
        while !a.flush().unwrap() {
            b.flush().unwrap();
        }
        drop(a);
        for i in 0..3u32 {
            let (meta, payload) = next_event(&mut b).unwrap();
            assert_eq!((meta, payload), ([i; 4], pattern(i as u64, 10_000)));
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        let error = loop {
            assert!(Instant::now() < deadline, "the peer's close never came");
            match b.peek() {
                Ok(None) => std::thread::yield_now(),
                Ok(Some(_)) => panic!("a record after the last"),
                Err(error) => break error,
            }
        };
        assert!(matches!(error, LinkError::Closed { records: 3, .. }), "{error:?}");
        assert!(error.is_clean_close());
        assert!(error.to_string().contains("127.0.0.1"), "{error}");
        // The end comes once; the sending half refuses from then on.
        assert!(b.peek().unwrap().is_none());
        let pushed = b.try_push([1; 4], b"late");
        assert!(matches!(pushed, Err(LinkError::Closed { .. })), "{pushed:?}");
    }
}

#[test]
fn credits_bound_the_messages_in_flight_to_the_receive_buffers_posted() {
    for config in variants() {
        let config = small(config);
        let (mut writer, mut reader) = link_pair(&config);
        let records = 3 * DEPTH;
        for i in 0..records {
            assert!(writer.try_push([i as u32; 4], &pattern(i as u64, FRAGMENT)).unwrap());
        }
        // The reader takes records in and consumes none: only DEPTH
        // messages may go, one per receive buffer it posted.
        let deadline = Instant::now() + Duration::from_secs(60);
        let held = (records - DEPTH) * FRAGMENT;
        while writer.backlog_bytes() > held {
            writer.flush().unwrap();
            assert!(reader.peek().unwrap().is_some() || Instant::now() < deadline, "nothing went");
        }
        for _ in 0..200 {
            writer.flush().unwrap();
            reader.peek().unwrap();
            assert_eq!(writer.backlog_bytes(), held, "more messages went than the reader has buffers");
        }
        // Each record read gives its buffer back; the credits go back once
        // half the depth is owed, and as many messages follow.
        let mut read = 0;
        for round in 1..=records / (DEPTH / 2) - 2 {
            while read < round * (DEPTH / 2) {
                writer.flush().unwrap();
                if let Some(record) = reader.peek().unwrap() {
                    assert_eq!(record.payload(), &pattern(read as u64, FRAGMENT)[..]);
                    reader.consume();
                    read += 1;
                }
                assert!(Instant::now() < deadline, "record {read} never came");
            }
            let expected = (records - DEPTH - round * (DEPTH / 2)) * FRAGMENT;
            while writer.backlog_bytes() > expected {
                writer.flush().unwrap();
                reader.peek().unwrap();
                assert!(Instant::now() < deadline, "the credits of round {round} never came back");
            }
            assert_eq!(writer.backlog_bytes(), expected, "round {round}");
        }
    }
}

#[test]
fn peers_whose_links_cannot_agree_are_refused_when_the_link_is_made() {
    for config in variants() {
        let a = endpoint(&config);
        let other_fragment = endpoint(&Config { fragment: 4096, ..config.clone() });
        let other_matching = match config.matching {
            Matching::Tagged => Matching::Messages,
            _ => Matching::Tagged,
        };
        let other_kind = endpoint(&Config { matching: other_matching, ..config.clone() });
        let fragment = config.fragment.to_string();
        for (b, named) in [(&other_fragment, ["4096 bytes", &fragment]), (&other_kind, ["tagged", "plain"])] {
            for (from, to) in [(&a, b), (b, &a)] {
                let error = from.link(to.name(), Ends { local: 0, remote: 1 }).unwrap_err();
                assert!(matches!(error, LinkError::Setup { .. }), "{error:?}");
                for what in named {
                    assert!(error.to_string().contains(what), "{config:?}: {error}");
                }
            }
        }
        let error = a.link(b"not a name", Ends { local: 0, remote: 1 }).unwrap_err();
        assert!(error.to_string().contains("10 bytes that are not an endpoint name"), "{error}");
    }
}

#[test]
fn peers_of_different_depths_give_each_other_their_own_credits() {
    for config in variants() {
        let (deep, shallow) = (Config { depth: 32, ..small(config.clone()) }, Config { depth: 2, ..small(config) });
        let (a, b) = (endpoint(&deep), endpoint(&shallow));
        let near = a.link(b.name(), Ends { local: 0, remote: 1 }).unwrap();
        let far = b.link(a.name(), Ends { local: 1, remote: 0 }).unwrap();
        let (mut links, mut all) = ([near, far], [Expected::default(), Expected::default()]);
        for side in 0..2 {
            for i in 0..40 {
                assert!(push(&mut links[side], &mut all[side], [i; 4], (i as usize % 3) * FRAGMENT + 5, i % 2 == 0));
            }
        }
        settle(&mut links, &mut all);
    }
}

#[test]
fn an_unknown_provider_is_named_in_the_error() {
    let error = Endpoint::open(&Config::new("no-such-provider", "127.0.0.1")).unwrap_err();
    assert!(matches!(error, LinkError::NoProvider { .. }), "{error:?}");
    let text = error.to_string();
    assert!(text.contains("\"no-such-provider\"") && text.contains("on 127.0.0.1"), "{text}");
    assert!(text.contains("No data available"), "libfabric's own words are missing: {text}");
}

#[test]
fn a_name_whose_address_the_provider_refuses_is_a_setup_error_with_its_words() {
    for config in variants() {
        let (a, b) = (endpoint(&config), endpoint(&config));
        let mut name = b.name().to_vec();
        // The settings stay valid; the address is no address.
        for byte in &mut name[grappe_fabric_ofi::NAME_PREFIX_BYTES..] {
            *byte = 0xff;
        }
        let error = a.link(&name, Ends { local: 0, remote: 1 }).unwrap_err();
        assert!(matches!(error, LinkError::Setup { .. }), "{error:?}");
        // libfabric's words for the refusal (FI_SYNC_ERR's code), not ours.
        let LinkError::Setup { detail, .. } = &error else { unreachable!() };
        let words = detail.strip_prefix("fi_av_insert: ").unwrap_or_else(|| panic!("{error}"));
        assert!(!words.is_empty() && !words.contains("not inserted"), "{error}");
    }
}
