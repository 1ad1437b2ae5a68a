//! Records over a link: order and content under any interleaving of
//! pushes, flushes and reads, both ways, on plain and shaped links; the
//! backlog limit; sizes; what a broken or closing peer produces.

mod common;

use std::collections::VecDeque;
use std::io::Write;
use std::net::Shutdown;
use std::num::NonZeroU64;
use std::time::{Duration, Instant};

use common::{link_and_raw, link_pair, next_event, pattern};
use grappe_fabric_tcp::inbound::INBOUND_BYTES;
use grappe_fabric_tcp::{
    BACKLOG_LIMIT, Cut, FrameError, FrameHeader, HEADER_BYTES, Link, LinkError, MAX_PAYLOAD, Meta, Shaping,
    encode_header,
};
use proptest::prelude::*;

/// What one side pushed and the other has not read yet.
#[derive(Default)]
struct Expected {
    records: VecDeque<(Meta, u64, usize)>,
    next_seed: u64,
}

/// How a record's payload is handed to the link.
#[derive(Debug, Clone, Copy)]
enum Payload {
    Copied,
    Filled,
    /// In two parts, the first of `head` bytes (at most the payload's).
    Parts {
        head: usize,
    },
}

#[derive(Debug, Clone)]
enum Op {
    /// A record from side `from`, its payload handed over as `how` says.
    Push {
        from: usize,
        meta: Meta,
        len: usize,
        how: Payload,
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
        4 => 0..300 * 1024usize,
        // Records whose frame ends exactly at the inbound buffer's end, or
        // one byte before or after it.
        1 => Just(INBOUND_BYTES - HEADER_BYTES),
        1 => Just(INBOUND_BYTES - HEADER_BYTES - 1),
        1 => Just(INBOUND_BYTES - HEADER_BYTES + 1),
        1 => Just(INBOUND_BYTES / 2 - HEADER_BYTES),
        1 => Just(300 * 1024),
    ]
}

fn payload_way() -> impl Strategy<Value = Payload> {
    prop_oneof![
        Just(Payload::Copied),
        Just(Payload::Filled),
        prop_oneof![0..32usize, 0..300 * 1024usize].prop_map(|head| Payload::Parts { head }),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0..2usize, any::<Meta>(), payload_len(), payload_way())
            .prop_map(|(from, meta, len, how)| Op::Push { from, meta, len, how }),
        2 => (0..2usize).prop_map(|from| Op::Flush { from }),
        5 => (0..2usize, 1..8usize).prop_map(|(to, max)| Op::Read { to, max }),
        1 => (0..2usize).prop_map(|from| Op::Burst { from }),
    ]
}

/// Pushes one record; true if the link took it (and `expected` knows).
fn push(link: &mut Link, expected: &mut Expected, meta: Meta, len: usize, how: Payload) -> bool {
    let seed = expected.next_seed;
    let payload = pattern(seed, len);
    let taken = match how {
        Payload::Copied => link.try_push(meta, &payload).unwrap(),
        Payload::Filled => link.try_push_with(meta, len, |dst| dst.copy_from_slice(&payload)).unwrap(),
        Payload::Parts { head } => {
            let (head, body) = payload.split_at(head.min(len));
            link.try_push_parts(meta, head, body).unwrap()
        }
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
    let deadline = Instant::now() + Duration::from_secs(60);
    while !expected[0].records.is_empty() || !expected[1].records.is_empty() {
        for side in 0..2 {
            links[side].flush().unwrap();
            read(&mut links[1 - side], &mut expected[side], usize::MAX);
        }
        assert!(Instant::now() < deadline, "records still missing after 60 s");
    }
    assert!(links[0].flush().unwrap() && links[1].flush().unwrap());
}

/// Runs `ops` on a connected pair, both sides shaped by `shaping` if given.
fn run(ops: Vec<Op>, shaping: Option<Shaping>) {
    let (a, b) = link_pair();
    let mut links = [a, b];
    if let Some(shaping) = shaping {
        links.iter_mut().for_each(|link| link.shape(shaping).unwrap());
    }
    let mut expected = [Expected::default(), Expected::default()];
    for op in ops {
        match op {
            Op::Push { from, meta, len, how } => {
                push(&mut links[from], &mut expected[from], meta, len, how);
            }
            Op::Flush { from } => {
                let empty = links[from].flush().unwrap();
                assert_eq!(empty, links[from].backlog_bytes() == 0);
            }
            Op::Read { to, max } => read(&mut links[to], &mut expected[1 - to], max),
            Op::Burst { from } => {
                let mut pushes = 0;
                while push(&mut links[from], &mut expected[from], [from as u32; 4], 256 * 1024, Payload::Copied) {
                    pushes += 1;
                    assert!(pushes < 10_000, "the backlog limit never refused");
                }
            }
        }
    }
    settle(&mut links, &mut expected);
    // Drained: the limit lets records through again.
    for side in 0..2 {
        assert!(push(&mut links[side], &mut expected[side], [7; 4], 10, Payload::Parts { head: 3 }));
    }
    settle(&mut links, &mut expected);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn records_arrive_whole_and_in_order_both_ways(ops in proptest::collection::vec(op(), 1..60)) {
        run(ops, None);
    }

    /// Shaped links hold frames back, each by its turn on a slow line and
    /// a delay, but records still arrive whole and in order, and held
    /// frames count against the backlog limit.
    #[test]
    fn records_keep_their_order_on_shaped_links(ops in proptest::collection::vec(op(), 1..40), shaping in shaping()) {
        run(ops, Some(shaping));
    }
}

fn shaping() -> impl Strategy<Value = Shaping> {
    let rate = prop_oneof![Just(None), (50u64 << 20..1u64 << 30).prop_map(NonZeroU64::new)];
    (0..2000u64, rate).prop_map(|(delay_us, rate)| Shaping { delay: Duration::from_micros(delay_us), rate })
}

#[test]
fn the_backlog_limit_refuses_until_the_reader_drains() {
    let (mut writer, mut reader) = link_pair();
    let mut expected = Expected::default();
    let mut pushed = 0;
    while push(
        &mut writer,
        &mut expected,
        [1, 2, 3, 4],
        100_000,
        [Payload::Filled, Payload::Copied, Payload::Parts { head: 8 }][pushed % 3],
    ) {
        pushed += 1;
        assert!(pushed < 10_000, "the backlog limit never refused");
    }
    assert!(writer.backlog_bytes() >= BACKLOG_LIMIT);
    // Refused again while nobody reads, the backlog untouched by refusals.
    let backlog = writer.backlog_bytes();
    assert!(!writer.try_push([0; 4], b"x").unwrap());
    assert!(!writer.try_push_with([0; 4], 1, |_| panic!("fill called for a refused push")).unwrap());
    assert_eq!(writer.backlog_bytes(), backlog);

    let deadline = Instant::now() + Duration::from_secs(60);
    while !push(&mut writer, &mut expected, [5; 4], 10, Payload::Copied) {
        read(&mut reader, &mut expected, 1);
        assert!(Instant::now() < deadline, "the backlog never went under the limit");
    }
    let (mut links, mut all) = ([writer, reader], [expected, Expected::default()]);
    settle(&mut links, &mut all);
}

#[test]
fn a_record_of_the_largest_payload_goes_through() {
    let (writer, reader) = link_pair();
    let (mut links, mut all) = ([writer, reader], [Expected::default(), Expected::default()]);
    assert!(push(&mut links[0], &mut all[0], [9; 4], MAX_PAYLOAD, Payload::Filled));
    assert!(
        !push(&mut links[0], &mut all[0], [10; 4], 5, Payload::Parts { head: 2 }),
        "a backlog over the limit takes no more"
    );
    settle(&mut links, &mut all);
    assert!(links[1].peek().unwrap().is_none());
}

#[test]
fn a_record_over_the_largest_payload_is_refused_on_push() {
    let (mut link, _far) = link_pair();
    let len = MAX_PAYLOAD + 1;
    let error = link.try_push_with([0; 4], len, |_| panic!("fill called for a refused record")).unwrap_err();
    assert!(matches!(error, LinkError::TooLarge { len: l, max: MAX_PAYLOAD, .. } if l == len), "{error:?}");
    assert!(error.to_string().contains(&len.to_string()), "{error}");
    let error = link.try_push([0; 4], &vec![0; len]).unwrap_err();
    assert!(matches!(error, LinkError::TooLarge { .. }), "{error:?}");
    assert_eq!(link.backlog_bytes(), 0);
}

#[test]
fn a_frame_announcing_too_large_a_payload_is_refused_at_its_offset() {
    let (mut link, mut raw) = link_and_raw();
    let good = encode_header(&FrameHeader { len: 3, meta: [1; 4] });
    raw.write_all(&good).unwrap();
    raw.write_all(b"abc").unwrap();
    let len = MAX_PAYLOAD as u32 + 1;
    raw.write_all(&encode_header(&FrameHeader { len, meta: [2; 4] })).unwrap();
    assert_eq!(next_event(&mut link).unwrap(), ([1; 4], b"abc".to_vec()));
    let error = next_event(&mut link).unwrap_err();
    let offset = (HEADER_BYTES + 3) as u64;
    assert!(
        matches!(error, LinkError::Frame { offset: o, detail: FrameError::TooLarge { len: l, .. }, .. } if o == offset && l == len),
        "{error:?}"
    );
    assert!(error.to_string().contains("offset 27"), "{error}");
    // The error stays: the stream is not read past a bad frame.
    assert!(matches!(link.peek(), Err(LinkError::Frame { offset: 27, .. })));
}

#[test]
fn garbage_is_a_frame_error_not_a_panic() {
    let (mut link, mut raw) = link_and_raw();
    raw.write_all(b"GET / HTTP/1.1\r\nHost: grappe\r\n\r\n").unwrap();
    let error = next_event(&mut link).unwrap_err();
    assert!(matches!(error, LinkError::Frame { offset: 0, detail: FrameError::BadCheck { .. }, .. }), "{error:?}");
    assert!(error.to_string().contains(&raw.local_addr().unwrap().to_string()), "{error}");
}

#[test]
fn a_peer_closing_mid_record_says_what_is_missing() {
    let (mut link, mut raw) = link_and_raw();
    raw.write_all(&encode_header(&FrameHeader { len: 1000, meta: [3; 4] })).unwrap();
    raw.write_all(&[0xAB; 500]).unwrap();
    raw.shutdown(Shutdown::Write).unwrap();
    let error = next_event(&mut link).unwrap_err();
    let cut = Cut { offset: 0, announced: Some(1000), received: HEADER_BYTES + 500, missing: 500 };
    assert!(matches!(error, LinkError::Closed { cut: Some(c), .. } if c == cut), "{error:?}");
    assert!(error.to_string().contains("misses 500 bytes"), "{error}");
}

#[test]
fn a_peer_closing_mid_header_says_what_is_missing() {
    let (mut link, mut raw) = link_and_raw();
    raw.write_all(&encode_header(&FrameHeader { len: 1, meta: [3; 4] })[..10]).unwrap();
    drop(raw);
    let error = next_event(&mut link).unwrap_err();
    let cut = Cut { offset: 0, announced: None, received: 10, missing: HEADER_BYTES - 10 };
    assert!(matches!(error, LinkError::Closed { cut: Some(c), .. } if c == cut), "{error:?}");
}

#[test]
fn a_peer_closing_between_records_is_closed() {
    let (mut link, mut raw) = link_and_raw();
    raw.write_all(&encode_header(&FrameHeader { len: 2, meta: [4; 4] })).unwrap();
    raw.write_all(b"hi").unwrap();
    drop(raw);
    assert_eq!(next_event(&mut link).unwrap(), ([4; 4], b"hi".to_vec()));
    let error = next_event(&mut link).unwrap_err();
    assert!(matches!(error, LinkError::Closed { cut: None, .. }), "{error:?}");
}

#[test]
fn pushing_to_a_closed_peer_is_closed() {
    let (mut link, far) = link_pair();
    drop(far);
    let deadline = Instant::now() + Duration::from_secs(30);
    let error = loop {
        match link.try_push([0; 4], &[0; 1000]) {
            Err(error) => break error,
            Ok(_) => assert!(Instant::now() < deadline, "pushes to a closed peer kept succeeding"),
        }
        std::thread::yield_now();
    };
    assert!(matches!(error, LinkError::Closed { .. }), "{error:?}");
}
