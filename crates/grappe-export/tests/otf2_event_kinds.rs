//! Every kind of grappe event, including the awkward ones (a sendrecv's
//! overlapping halves, ill-nested user regions, a region left open, a
//! communicator whose ranks differ from world ranks), exported and read
//! back by `otf2-print`.

mod otf2_common;

use std::path::Path;

use grappe_testkit::synthetic::{plain_header, write_events};
use grappe_trace::format::{Calibration, FileHeader};
use grappe_trace::{ANY, Body, CollectiveKind, Completion, EventKind};
use otf2_common::*;

/// Comm context 2: world ranks [1, 0], so world rank 1 is its rank 0.
const SWAPPED: u32 = 2;

fn rank0() -> Vec<(u64, u64, Body)> {
    let region = |name: &str, location: &str| Body::RegionEnter { name: name.into(), location: location.into() };
    let leave = |name: &str| Body::RegionLeave { name: name.into() };
    let done = |is_recv, src| Completion { is_recv, src, tag: 8, bytes: 4, arrived: false };
    vec![
        (100, 100, Body::Init),
        (110, 110, region("outer", "src/main.rs:10:5")),
        (120, 120, Body::CommCreate { comm: SWAPPED, parent: 0, members: vec![1, 0].into() }),
        // A sendrecv: both halves start together, the send ends first.
        (130, 140, Body::Send { dest: 1, tag: 5, comm: SWAPPED, bytes: 8, seq: 0, failed: false, sync: false }),
        (
            130,
            160,
            Body::Recv {
                src: 1,
                tag: 6,
                comm: SWAPPED,
                bytes: 16,
                arrived: false,
                sendrecv: false,
                failed: false,
                any_source: false,
            },
        ),
        (170, 170, region("inner", "src/main.rs:20")),
        (175, 175, Body::Point { name: "checkpoint".into(), location: "src/main.rs:21".into() }),
        // Leaves "inner" too; then a leave of a region never entered.
        (180, 180, leave("outer")),
        (185, 185, leave("never")),
        (190, 190, Body::FlushBegin),
        (190, 250, Body::FlushEnd),
        (260, 300, Body::Collective { op: CollectiveKind::Bcast, comm: SWAPPED, root: 0, bytes: 8, failed: false }),
        (310, 320, Body::Isend { dest: 1, tag: 7, comm: 0, bytes: 4, seq: 0, request: 1 }),
        (330, 335, Body::Test { request: 1, comm: 0, completion: None, failed: false }),
        (340, 345, Body::Test { request: 1, comm: 0, completion: Some(done(false, 0)), failed: false }),
        (350, 351, Body::Iprobe { src: ANY, tag: ANY, comm: 0, found: None, failed: false }),
        (352, 360, Body::Probe { src: 1, tag: 8, comm: 0, found: Some(done(true, 1)), failed: false }),
        (365, 366, Body::Irecv { src: 1, tag: 8, comm: 0, request: 2 }),
        (370, 400, Body::Wait { request: 2, comm: 0, completion: done(true, 1), failed: false }),
        (410, 410, region("open at the end", "src/main.rs:30")),
        (415, 415, Body::Counter { name: "residual".into(), value: -7 }),
        (420, 420, Body::Finalize),
    ]
}

fn rank1() -> Vec<(u64, u64, Body)> {
    vec![
        (100, 100, Body::Init),
        (120, 120, Body::CommCreate { comm: SWAPPED, parent: 0, members: vec![1, 0].into() }),
        (
            125,
            145,
            Body::Recv {
                src: 0,
                tag: 5,
                comm: SWAPPED,
                bytes: 8,
                arrived: false,
                sendrecv: false,
                failed: false,
                any_source: false,
            },
        ),
        (150, 155, Body::Send { dest: 0, tag: 6, comm: SWAPPED, bytes: 16, seq: 0, failed: false, sync: false }),
        (255, 300, Body::Collective { op: CollectiveKind::Bcast, comm: SWAPPED, root: 0, bytes: 8, failed: false }),
        (
            300,
            330,
            Body::Recv {
                src: 0,
                tag: 7,
                comm: 0,
                bytes: 4,
                arrived: false,
                sendrecv: false,
                failed: false,
                any_source: false,
            },
        ),
        (350, 355, Body::Send { dest: 0, tag: 8, comm: 0, bytes: 4, seq: 0, failed: false, sync: false }),
        (420, 420, Body::Finalize),
    ]
}

#[test]
fn every_kind_of_event_is_written_in_order_and_nested() {
    let dir = scratch("kinds");
    write_rank(&dir.join("traces"), 0, &rank0());
    write_rank(&dir.join("traces"), 1, &rank1());
    let summary = export(&dir.join("traces"), &dir.join("out"), "kinds").unwrap();
    assert_eq!((summary.messages, summary.unmatched_leaves), (4, 1));

    let lines = events(&summary.anchor);
    let per_location = check_timelines(&lines);
    assert_eq!(defined_locations(&summary.anchor), per_location);
    let on = |location: u64, kind: &str| -> Vec<&Line> {
        lines.iter().filter(|l| l.location == location && l.kind == kind).collect()
    };
    // Message peers are ranks of the message's communicator.
    let send = on(0, "MPI_SEND");
    assert_eq!(send.len(), 1);
    assert!(send[0].attrs.starts_with("Receiver: 0 (\"rank 1"), "{:?}", send[0]);
    assert!(send[0].attrs.contains("Communicator: \"comm 2 (ranks 1, 0)\""), "{:?}", send[0]);
    assert!(on(1, "MPI_RECV")[0].attrs.starts_with("Sender: 1 (\"rank 0"), "{:?}", on(1, "MPI_RECV"));
    // The receive half of the sendrecv starts when the send half ends.
    let recv_enter = lines.iter().find(|l| l.location == 0 && l.kind == "ENTER" && l.attrs.contains("MPI_Recv"));
    assert_eq!(recv_enter.map(|l| l.time), Some(140));
    assert_eq!(on(0, "MPI_RECV")[0].time, 160);

    let end = on(0, "MPI_COLLECTIVE_END");
    assert!(end[0].attrs.contains("Operation: BCAST") && end[0].attrs.contains("Root: 0"), "{:?}", end[0]);
    assert_eq!(on(1, "MPI_COLLECTIVE_BEGIN").len(), 1);
    for kind in ["MPI_ISEND", "MPI_REQUEST_TEST", "MPI_ISEND_COMPLETE", "MPI_IRECV_REQUEST", "MPI_IRECV"] {
        assert_eq!(on(0, kind).len(), 1, "{kind}");
    }
    assert!(on(0, "MPI_IRECV")[0].attrs.contains("Request: 2"), "{:?}", on(0, "MPI_IRECV"));
    assert!(on(0, "PARAMETER_STRING")[0].attrs.contains("\"src/main.rs:21\""), "{:?}", on(0, "PARAMETER_STRING"));
    assert!(on(0, "METRIC")[0].attrs.contains("-7"), "{:?}", on(0, "METRIC"));
    let flush = on(0, "BUFFER_FLUSH");
    assert!(flush.len() == 1 && flush[0].time == 190 && flush[0].attrs.contains("250"), "{flush:?}");
    // "inner" is left with "outer", the region still open at the end at
    // the last timestamp.
    let left: Vec<(u64, &str)> =
        on(0, "LEAVE").iter().filter(|l| !l.attrs.contains("MPI_")).map(|l| (l.time, l.attrs.as_str())).collect();
    assert_eq!(left.len(), 3, "{left:?}");
    assert!(left[0].0 == 180 && left[0].1.contains("inner") && left[1].1.contains("outer"), "{left:?}");
    assert!(left[2].0 == 420 && left[2].1.contains("open at the end"), "{left:?}");

    let defs = otf2_print(&["-G"], &summary.anchor);
    let line = |kind: &str, name: &str| {
        let name = format!("Name: \"{name}\"");
        let found = defs.lines().find(|l| l.split_whitespace().next() == Some(kind) && l.contains(&name));
        found.unwrap_or_else(|| panic!("no {kind} {name}:\n{defs}"))
    };
    let comm = line("COMM", "comm 2 (ranks 1, 0)");
    assert!(comm.contains("Parent: \"MPI_COMM_WORLD\"") && comm.contains("Group: \"comm 2 (ranks 1, 0)\""), "{defs}");
    assert!(line("GROUP", "comm 2 (ranks 1, 0)").contains("2 Members: 1 (\"rank 1"), "{defs}");
    let outer = line("REGION", "outer");
    assert!(outer.contains("Paradigm: USER") && outer.contains("\"src/main.rs\"") && outer.contains("Begin: 10"));
    assert!(line("REGION", "MPI_Bcast").contains("Role: COLL_ONE2ALL"), "{defs}");
    line("PARAMETER", "checkpoint");
}

/// A marked sendrecv is one `MPI_Sendrecv` region holding its send and
/// receive records, as Score-P writes it; a send and a marked receive of
/// other dates stay two calls, and a send left last is still written.
#[test]
fn a_marked_sendrecv_is_one_region_with_its_send_at_the_enter_and_its_receive_at_the_leave() {
    let send = |dest, tag| Body::Send { dest, tag, comm: 0, bytes: 8, seq: 0, failed: false, sync: false };
    let recv = |src, tag, sendrecv| Body::Recv {
        src,
        tag,
        comm: 0,
        bytes: 16,
        arrived: false,
        sendrecv,
        failed: false,
        any_source: false,
    };
    let rank0 = vec![
        (100, 100, Body::Init),
        (130, 160, send(1, 5)),
        (130, 160, recv(1, 6, true)),
        (200, 210, send(1, 7)),
        (220, 230, recv(1, 8, true)),
        (300, 310, send(1, 9)),
        (400, 400, Body::Finalize),
    ];
    let rank1 = vec![
        (100, 100, Body::Init),
        (120, 150, recv(0, 5, false)),
        (150, 155, send(0, 6)),
        (205, 215, recv(0, 7, false)),
        (215, 218, send(0, 8)),
        (305, 315, recv(0, 9, false)),
        (350, 360, send(0, 10)),
    ];
    let dir = scratch("sendrecv");
    write_rank(&dir.join("traces"), 0, &rank0);
    write_rank(&dir.join("traces"), 1, &rank1);
    let summary = export(&dir.join("traces"), &dir.join("out"), "sendrecv").unwrap();
    assert_eq!(summary.messages, 5);
    let lines = events(&summary.anchor);
    check_timelines(&lines);
    let timeline = |location: u64| -> Vec<String> {
        let calls = lines.iter().filter(|l| l.location == location && !l.attrs.contains("MPI_Init"));
        let calls = calls.filter(|l| !l.attrs.contains("MPI_Finalize") && l.kind != "PROGRAM_END");
        calls.map(|l| format!("{} {} {}", l.time, l.kind, region_or_peer(&l.attrs))).collect()
    };
    assert_eq!(
        timeline(0),
        [
            "130 ENTER MPI_Sendrecv",
            "130 MPI_SEND Receiver: 1 Tag: 5",
            "160 MPI_RECV Sender: 1 Tag: 6",
            "160 LEAVE MPI_Sendrecv",
            "200 ENTER MPI_Send",
            "200 MPI_SEND Receiver: 1 Tag: 7",
            "210 LEAVE MPI_Send",
            "220 ENTER MPI_Recv",
            "230 MPI_RECV Sender: 1 Tag: 8",
            "230 LEAVE MPI_Recv",
            "300 ENTER MPI_Send",
            "300 MPI_SEND Receiver: 1 Tag: 9",
            "310 LEAVE MPI_Send",
        ]
    );
    // Rank 1's last event, a send, is written when the export ends.
    assert_eq!(timeline(1).last().map(String::as_str), Some("360 LEAVE MPI_Send"));
    assert!(timeline(1).contains(&"350 MPI_SEND Receiver: 0 Tag: 10".to_owned()), "{:?}", timeline(1));
    assert!(
        otf2_print(&["-G"], &summary.anchor).lines().any(|l| l.starts_with("REGION")
            && l.contains("Name: \"MPI_Sendrecv\"")
            && l.contains("Role: POINT2POINT"))
    );
}

/// `Region: "MPI_Send" <5>` as `MPI_Send`; a message record's peer and tag.
fn region_or_peer(attrs: &str) -> String {
    if let Some(rest) = attrs.strip_prefix("Region: \"") {
        return rest.split('"').next().unwrap_or_default().to_owned();
    }
    let words: Vec<&str> = attrs.split_whitespace().collect();
    let after = |key: &str| words.iter().position(|w| *w == key).and_then(|i| words.get(i + 1)).copied();
    let peer = if attrs.starts_with("Receiver") { "Receiver:" } else { "Sender:" };
    format!("{peer} {} Tag: {}", after(peer).unwrap_or("?"), after("Tag:").unwrap_or("?").trim_end_matches(','))
}

/// Writes a per-rank trace file of a two-rank job on one host.
fn write_rank(dir: &Path, rank: u32, events: &[(u64, u64, Body)]) {
    std::fs::create_dir_all(dir).unwrap();
    write_events(&grappe_trace::file_for(dir, rank), &header(rank), events).unwrap();
}

fn header(rank: u32) -> FileHeader {
    FileHeader {
        pid: 4000 + rank,
        calibration: EventKind::ALL.iter().map(|k| Calibration { kind: k.name().into(), alpha_ns: 0 }).collect(),
        buffer_events: 64,
        ..plain_header(rank, 2, "node-a")
    }
}

/// Calls that failed (a peer died, the job was stopped) keep their region
/// and hold the `call failed` parameter, without the records of what they
/// never completed: rank 0's sendrecv sends the message rank 1 receives
/// (a pair for Vampir) but receives nothing, its wait completes no
/// request; rank 1's sendrecv neither sends nor receives, its barrier
/// completes no collective.
#[test]
fn failed_calls_keep_their_region_and_none_of_their_records() {
    let dir = scratch("failed");
    let waited_for = Completion { is_recv: true, src: 1, tag: 9, bytes: 0, arrived: false };
    let barrier = |failed| Body::Collective { op: CollectiveKind::Barrier, comm: 0, root: ANY, bytes: 0, failed };
    let rank0 = [
        (100, 100, Body::Init),
        (110, 150, Body::Send { dest: 1, tag: 5, comm: 0, bytes: 8, seq: 1, failed: false, sync: false }),
        (
            110,
            150,
            Body::Recv {
                src: 1,
                tag: 6,
                comm: 0,
                bytes: 0,
                arrived: false,
                sendrecv: true,
                failed: true,
                any_source: false,
            },
        ),
        (160, 165, Body::Irecv { src: 1, tag: 9, comm: 0, request: 3 }),
        (170, 400, Body::Wait { request: 3, comm: 0, completion: waited_for, failed: true }),
    ];
    let rank1 = [
        (100, 100, Body::Init),
        (
            120,
            130,
            Body::Recv {
                src: 0,
                tag: 5,
                comm: 0,
                bytes: 8,
                arrived: false,
                sendrecv: false,
                failed: false,
                any_source: false,
            },
        ),
        // A sendrecv whose two halves failed.
        (131, 135, Body::Send { dest: 0, tag: 7, comm: 0, bytes: 8, seq: 0, failed: true, sync: false }),
        (
            131,
            135,
            Body::Recv {
                src: 0,
                tag: 7,
                comm: 0,
                bytes: 0,
                arrived: false,
                sendrecv: true,
                failed: true,
                any_source: false,
            },
        ),
        (140, 390, barrier(true)),
    ];
    write_rank(&dir.join("traces"), 0, &rank0);
    write_rank(&dir.join("traces"), 1, &rank1);
    let summary = export(&dir.join("traces"), &dir.join("out"), "failed").unwrap();
    assert_eq!(summary.messages, 1);
    let lines = events(&summary.anchor);
    check_timelines(&lines);
    let on = |location: u64, kind: &str| -> Vec<&Line> {
        lines.iter().filter(|l| l.location == location && l.kind == kind).collect()
    };
    assert_eq!((on(0, "MPI_SEND").len(), on(1, "MPI_RECV").len()), (1, 1), "the message that went out");
    assert!(on(1, "MPI_SEND").is_empty(), "a failed send has no record");
    for kind in ["MPI_RECV", "MPI_IRECV", "MPI_COLLECTIVE_BEGIN", "MPI_COLLECTIVE_END"] {
        assert!(on(0, kind).is_empty() && on(1, kind).len() == usize::from(kind == "MPI_RECV"), "{kind}");
    }
    assert_eq!(on(0, "MPI_IRECV_REQUEST").len(), 1, "the post stays");
    // One parameter per failed call, inside its region, at its leave.
    let failed = [(0, "MPI_Sendrecv", 150), (0, "MPI_Wait", 400), (1, "MPI_Sendrecv", 135), (1, "MPI_Barrier", 390)];
    for (location, region, leave) in failed {
        let left = on(location, "LEAVE").into_iter().find(|l| l.attrs.contains(region));
        assert_eq!(left.map(|l| l.time), Some(leave), "{region}");
        let said = on(location, "PARAMETER_STRING").into_iter().find(|l| l.time == leave);
        let said = said.unwrap_or_else(|| panic!("no parameter in {region}"));
        assert!(said.attrs.contains("\"call failed\"") && said.attrs.contains("a peer died or the job was stopped"));
    }
}
