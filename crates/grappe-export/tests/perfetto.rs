//! The Perfetto protobuf export read back two ways, on jobs whose content
//! is known:
//! - by Perfetto's own definitions: its Python package's
//!   `perfetto_trace_pb2`, decoded by Google's `protobuf`
//!   (`perfetto_read.py`, installed by `scripts/install-deps`), which also
//!   says whether any field is unknown to upstream's `.proto` files;
//! - by the crate's prost definitions (`grappe_export::perfetto::proto`),
//!   fast enough for property tests over random jobs.
//!
//! Both replay the file as Perfetto's trace processor does: interned
//! strings resolved per packet, events in date order (ties in file
//! order), slices nested per track, each flow bound to the slice its event
//! begins or ends. Then the slices, counters and flows are checked
//! against the job's events and messages.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::Command;

use grappe_analysis::stream::Window;
use grappe_analysis::{CausalStream, GlobalOptions, GlobalTime, TraceSet};
use grappe_export::perfetto::proto::{self, Data, Trace};
use grappe_export::{ExportSummary, write_perfetto};
use grappe_testkit::synthetic::{
    ITERATION_NS, SyntheticJob, plain_header, sendrecv_exchange, synthetic_site, write_events, write_job,
};
use grappe_trace::{Body, Event};
use proptest::prelude::*;
use prost::Message;
use serde::Deserialize;
use serde_json::Value;

fn scratch(name: &str) -> grappe_testkit::Scratch {
    grappe_testkit::scratch(&format!("perfetto-{name}"))
}

fn stream(location: &Path) -> CausalStream {
    let set = TraceSet::open(location).unwrap();
    let time = GlobalTime::estimate(&set, &GlobalOptions::default()).unwrap();
    CausalStream::open(&set, &time).unwrap()
}

/// Exports `location`; the file's bytes and the summary.
fn export(location: &Path) -> (Vec<u8>, ExportSummary) {
    let mut out = Vec::new();
    let mut calls = 0;
    let summary = write_perfetto(stream(location), &mut out, &mut |_| calls += 1).unwrap();
    assert!(calls > 0, "progress is reported at least at the end");
    assert_eq!(summary.written_bytes, out.len() as u64);
    (out, summary)
}

// ---------------------------------------------------------------- readers

/// What a trace processor makes of a file's track events.
#[derive(Debug, Deserialize, PartialEq)]
struct Read {
    /// Process names by pid.
    processes: BTreeMap<u64, String>,
    /// (pid, name) by tid.
    threads: BTreeMap<u64, (u64, String)>,
    /// Slices and instants, in date order.
    slices: Vec<Slice>,
    /// (tid, counter name, date, value), in date order.
    counters: Vec<(u64, String, u64, i64)>,
    /// Flows: (slice index, slice index).
    flows: Vec<(usize, usize)>,
    /// Flows begun and never ended.
    unterminated_flows: usize,
    /// What a reader could not make sense of.
    problems: Vec<String>,
    packets: usize,
    /// Times the sequence's interned strings were cleared.
    resets: usize,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
struct Slice {
    tid: u64,
    name: String,
    category: Vec<String>,
    ts: u64,
    /// `None` for a slice that never ends.
    dur: Option<u64>,
    depth: usize,
    instant: bool,
    args: BTreeMap<String, Value>,
}

/// Reads `bytes` with Perfetto's own definitions (`perfetto_read.py`).
fn read_with_perfetto_definitions(dir: &Path, bytes: &[u8]) -> Read {
    let path = dir.join("trace.pftrace");
    std::fs::write(&path, bytes).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/perfetto_read.py");
    let out = Command::new("python3").arg(&script).arg(&path).output().unwrap_or_else(|e| {
        panic!("python3 {}: {e} (scripts/install-deps installs Python's protobuf and perfetto)", script.display())
    });
    assert!(
        out.status.success(),
        "{} failed (scripts/install-deps installs the Python packages `protobuf` and `perfetto` it needs):\n{}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Reads `bytes` with the crate's prost definitions, the way
/// `perfetto_read.py` does.
fn read_with_prost(bytes: &[u8]) -> Read {
    let trace = Trace::decode(bytes).expect("a Trace");
    let mut read = Read {
        processes: BTreeMap::new(),
        threads: BTreeMap::new(),
        slices: Vec::new(),
        counters: Vec::new(),
        flows: Vec::new(),
        unterminated_flows: 0,
        problems: Vec::new(),
        packets: trace.packet.len(),
        resets: 0,
    };
    let mut tracks: HashMap<u64, proto::TrackDescriptor> = HashMap::new();
    let mut tables: Option<Tables> = None;
    let mut events = Vec::new();
    for (index, packet) in trace.packet.into_iter().enumerate() {
        if packet.trusted_packet_sequence_id != Some(1) {
            read.problems.push(format!("packet {index} on sequence {:?}", packet.trusted_packet_sequence_id));
        }
        let flags = packet.sequence_flags.unwrap_or(0);
        if flags & proto::SEQ_INCREMENTAL_STATE_CLEARED != 0 {
            tables = Some(Tables::default());
            read.resets += 1;
        }
        if let Some(data) = &packet.interned_data {
            match &mut tables {
                Some(tables) => tables.add(data),
                None => read.problems.push(format!("packet {index}: interned data before the state was cleared")),
            }
        }
        match packet.data {
            Some(Data::TrackDescriptor(d)) => {
                tracks.insert(d.uuid.unwrap(), d);
            }
            Some(Data::TrackEvent(e)) => {
                let Some(tables) = &tables else {
                    read.problems.push(format!("packet {index} needs the state before it was cleared"));
                    continue;
                };
                events.push(tables.resolve(packet.timestamp.unwrap(), index, e));
            }
            None => read.problems.push(format!("packet {index} holds nothing")),
        }
    }
    for d in tracks.values() {
        if let Some(p) = &d.process {
            read.processes.insert(p.pid.unwrap() as u64, p.process_name.clone().unwrap());
        }
        if let Some(t) = &d.thread {
            read.threads.insert(t.tid.unwrap() as u64, (t.pid.unwrap() as u64, t.thread_name.clone().unwrap()));
        }
    }
    events.sort_by_key(|e| (e.ts, e.index));
    replay(&mut read, &tracks, events);
    read
}

/// The sequence's interned strings.
#[derive(Default)]
struct Tables {
    names: HashMap<u64, String>,
    categories: HashMap<u64, String>,
    annotation_names: HashMap<u64, String>,
    strings: HashMap<u64, String>,
}

impl Tables {
    fn add(&mut self, data: &proto::InternedData) {
        for e in &data.event_names {
            self.names.insert(e.iid.unwrap(), e.name.clone().unwrap());
        }
        for e in &data.event_categories {
            self.categories.insert(e.iid.unwrap(), e.name.clone().unwrap());
        }
        for e in &data.debug_annotation_names {
            self.annotation_names.insert(e.iid.unwrap(), e.name.clone().unwrap());
        }
        for e in &data.debug_annotation_string_values {
            self.strings.insert(e.iid.unwrap(), String::from_utf8(e.str.clone().unwrap()).unwrap());
        }
    }

    fn resolve(&self, ts: u64, index: usize, e: proto::TrackEvent) -> Resolved {
        let args =
            e.debug_annotations.iter().map(|a| (self.annotation_names[&a.name_iid.unwrap()].clone(), self.value(a)));
        Resolved {
            ts,
            index,
            kind: e.r#type.unwrap(),
            track: e.track_uuid.unwrap(),
            name: e.name_iid.map(|iid| self.names[&iid].clone()),
            categories: e.category_iids.iter().map(|iid| self.categories[iid].clone()).collect(),
            args: args.collect(),
            flow_ids: e.flow_ids,
            terminating: e.terminating_flow_ids,
            value: e.counter_value,
        }
    }

    fn value(&self, a: &proto::DebugAnnotation) -> Value {
        if let Some(iid) = a.string_value_iid {
            return Value::from(self.strings[&iid].clone());
        }
        if !a.array_values.is_empty() {
            return Value::Array(a.array_values.iter().map(|v| self.value(v)).collect());
        }
        a.uint_value
            .map(Value::from)
            .or(a.int_value.map(Value::from))
            .or(a.bool_value.map(Value::from))
            .unwrap_or_else(|| panic!("an annotation with no value: {a:?}"))
    }
}

/// A track event, its strings resolved.
struct Resolved {
    ts: u64,
    index: usize,
    kind: i32,
    track: u64,
    name: Option<String>,
    categories: Vec<String>,
    args: BTreeMap<String, Value>,
    flow_ids: Vec<u64>,
    terminating: Vec<u64>,
    value: Option<i64>,
}

/// Slices, counters and flows from the events in date order.
fn replay(read: &mut Read, tracks: &HashMap<u64, proto::TrackDescriptor>, events: Vec<Resolved>) {
    let mut stacks: HashMap<u64, Vec<usize>> = HashMap::new();
    let mut active: HashMap<u64, usize> = HashMap::new();
    let thread_of = |uuid: u64, problems: &mut Vec<String>| match tracks.get(&uuid).and_then(|d| d.thread.as_ref()) {
        Some(t) => t.tid.unwrap() as u64,
        None => {
            problems.push(format!("event on track {uuid}, not a described thread track"));
            0
        }
    };
    for e in events {
        if e.kind == proto::Type::Counter as i32 {
            let Some(d) = tracks.get(&e.track).filter(|d| d.counter.is_some()) else {
                read.problems.push(format!("counter value on track {}, not a counter track", e.track));
                continue;
            };
            let tid = thread_of(d.parent_uuid.unwrap(), &mut read.problems);
            read.counters.push((tid, d.name.clone().unwrap(), e.ts, e.value.unwrap()));
            continue;
        }
        let tid = thread_of(e.track, &mut read.problems);
        let stack = stacks.entry(e.track).or_default();
        let index = if e.kind == proto::Type::SliceEnd as i32 {
            let Some(i) = stack.pop() else {
                read.problems.push(format!("slice end with no slice open on thread {tid} at {}", e.ts));
                continue;
            };
            read.slices[i].dur = Some(e.ts - read.slices[i].ts);
            i
        } else {
            let instant = e.kind == proto::Type::Instant as i32;
            read.slices.push(Slice {
                tid,
                name: e.name.unwrap(),
                category: e.categories,
                ts: e.ts,
                dur: instant.then_some(0),
                depth: stack.len(),
                instant,
                args: e.args,
            });
            if !instant {
                stack.push(read.slices.len() - 1);
            }
            read.slices.len() - 1
        };
        for f in e.flow_ids {
            if let Some(from) = active.insert(f, index) {
                read.flows.push((from, index));
            }
        }
        for f in e.terminating {
            match active.remove(&f) {
                Some(from) => read.flows.push((from, index)),
                None => read.problems.push(format!("flow {f} ends before it starts (at {})", e.ts)),
            }
        }
    }
    for stack in stacks.values() {
        for &i in stack {
            read.problems.push(format!("slice {} on thread {} never ends", read.slices[i].name, read.slices[i].tid));
        }
    }
    read.unterminated_flows = active.len();
}

// ---------------------------------------------------------------- checks

/// The runtime calls of a synthetic rank, by name.
fn expected_calls(job: &SyntheticJob, rank: u32) -> BTreeMap<String, u64> {
    let mut calls = BTreeMap::from([("init".to_owned(), 1), ("finalize".to_owned(), 1)]);
    let mut add = |name: &str, n: u64| {
        if n > 0 {
            *calls.entry(name.to_owned()).or_default() += n;
        }
    };
    if job.ranks > 1 {
        add("isend", job.iterations);
        add("irecv", job.iterations);
        add("wait", 2 * job.iterations);
    }
    if rank ^ 1 < job.ranks {
        add("send", job.iterations);
        add("recv", job.iterations);
    }
    add("allreduce", job.iterations.div_ceil(10));
    calls
}

/// Everything of a synthetic job is in `read`: a process and a thread per
/// rank, every call as a slice inside its iteration's region with its
/// attributes and source line, every counter sample, every message as a
/// flow from its send to its receive, and nothing a reader would drop.
fn check_synthetic(read: &Read, job: &SyntheticJob) {
    assert_eq!(read.problems, Vec::<String>::new());
    for rank in 0..job.ranks as u64 {
        let host = if job.one_host { "synthetic".to_owned() } else { format!("synthetic-{rank}") };
        assert_eq!(read.processes[&(rank + 1)], format!("grappe job synthetic: {host} pid {}", 1000 + rank));
        assert_eq!(read.threads[&(rank + 1)], (rank + 1, format!("rank {rank}")));
    }
    assert_eq!((read.processes.len(), read.threads.len()), (job.ranks as usize, job.ranks as usize));
    for rank in 0..job.ranks {
        let tid = rank as u64 + 1;
        let mine = || read.slices.iter().filter(move |s| s.tid == tid);
        assert!(mine().all(|s| !s.instant && s.dur.is_some()), "no instant on rank {rank}");
        let regions: Vec<&Slice> = mine().filter(|s| s.category == ["region"]).collect();
        assert_eq!(regions.len() as u64, job.iterations, "regions of rank {rank}");
        assert!(regions.iter().all(|r| r.name == "step" && r.depth == 0 && r.args["location"] == "synthetic.rs:1"));
        let mut calls: BTreeMap<String, u64> = BTreeMap::new();
        for call in mine().filter(|s| s.category != ["region"]) {
            *calls.entry(call.name.clone()).or_default() += 1;
            let runtime = call.name == "init" || call.name == "finalize";
            assert_eq!(call.depth, usize::from(!runtime), "{call:?}: inside its iteration's region");
            assert_eq!(call.category, [category_of(&call.name)], "{call:?}");
            let site = site_of_synthetic_call(&call.name);
            assert_eq!(call.args.get("site").and_then(Value::as_str), site, "{call:?}");
            if !runtime {
                assert_eq!(call.args["comm"], 0, "{call:?}");
            }
        }
        assert_eq!(calls, expected_calls(job, rank), "calls of rank {rank}");
        let samples: Vec<i64> = read.counters.iter().filter(|c| c.0 == tid && c.1 == "residual").map(|c| c.3).collect();
        let expected: Vec<i64> = (0..job.iterations).map(|i| (1000 / (i + 1)) as i64).collect();
        assert_eq!(samples, expected, "counter samples of rank {rank}");
    }
    assert_eq!(read.counters.len() as u64, job.ranks as u64 * job.iterations);
    check_flows(read, job.messages(), 0);
}

/// Each message is one flow, from the slice of its send to the slice that
/// received it, both naming it (`msg`), the send begun before the receive
/// ended; `unreceived` sends begin a flow that nothing ends.
fn check_flows(read: &Read, messages: u64, unreceived: usize) {
    assert_eq!(read.flows.len() as u64, messages);
    assert_eq!(read.unterminated_flows, unreceived);
    let mut ids = std::collections::HashSet::new();
    for &(from, to) in &read.flows {
        let (send, receive) = (&read.slices[from], &read.slices[to]);
        assert!(["send", "isend", "sendrecv"].contains(&send.name.as_str()), "flow from {send:?}");
        assert!(["recv", "wait", "test", "sendrecv"].contains(&receive.name.as_str()), "flow to {receive:?}");
        let id = if send.name == "sendrecv" { &send.args["send_msg"] } else { &send.args["msg"] };
        let received = if receive.name == "sendrecv" { &receive.args["recv_msg"] } else { &receive.args["msg"] };
        assert_eq!(id, received, "{send:?} -> {receive:?}");
        assert!(ids.insert(id.as_u64().unwrap()), "message {id} drawn twice");
        assert!(send.ts <= receive.ts + receive.dur.unwrap(), "{send:?} -> {receive:?}");
    }
}

fn category_of(name: &str) -> &'static str {
    match name {
        "send" | "recv" | "isend" | "irecv" | "sendrecv" | "probe" | "iprobe" => "point-to-point",
        "wait" | "test" => "request",
        "comm_create" => "communicator",
        "init" | "finalize" | "flush" => "runtime",
        _ => "collective",
    }
}

/// Where the synthetic job makes call `name` (see `synthetic_site`).
fn site_of_synthetic_call(name: &str) -> Option<&'static str> {
    let kind = grappe_trace::EventKind::ALL.iter().find(|k| k.name() == name).copied();
    synthetic_site(kind.unwrap_or(grappe_trace::EventKind::Collective)).map(|s| s.text())
}

// ---------------------------------------------------------------- tests

#[test]
fn perfetto_s_own_definitions_read_every_call_region_counter_and_message_of_a_synthetic_job() {
    let dir = scratch("python");
    let job = SyntheticJob::new(5, 60);
    write_job(&dir, &job).unwrap();
    let (bytes, summary) = export(&dir);
    assert_eq!((summary.events, summary.messages), (job.events(), job.messages()));
    let read = read_with_perfetto_definitions(&dir, &bytes);
    check_synthetic(&read, &job);
    assert_eq!(read.resets, 1, "the strings are numbered once");
    // The two readers agree on everything.
    assert_eq!(read_with_prost(&bytes), read);
}

#[test]
fn dates_are_the_run_s_global_nanoseconds_and_names_the_stream_s() {
    let dir = scratch("dates");
    let job = SyntheticJob::distorted(3, 40);
    write_job(&dir, &job).unwrap();
    let (bytes, _) = export(&dir);
    let read = read_with_prost(&bytes);
    check_synthetic(&read, &job);
    let calls: Vec<Event> = stream(&dir)
        .map(|l| l.unwrap().event)
        .filter(|e| !matches!(e.body, Body::RegionEnter { .. } | Body::RegionLeave { .. } | Body::Counter { .. }))
        .collect();
    for rank in 0..job.ranks {
        let mut slices: Vec<&Slice> =
            read.slices.iter().filter(|s| s.tid == rank as u64 + 1 && s.category != ["region"]).collect();
        slices.sort_by_key(|s| s.ts);
        let calls: Vec<&Event> = calls.iter().filter(|c| c.rank == rank).collect();
        assert_eq!(slices.len(), calls.len());
        for (slice, call) in slices.iter().zip(calls) {
            assert_eq!(slice.name, grappe_export::display_name(&call.body));
            assert_eq!((slice.ts, slice.dur), (call.start, Some(call.end - call.start)), "{slice:?}");
        }
    }
}

#[test]
fn a_marked_sendrecv_is_one_slice_with_both_flows() {
    // Its corners: see `sendrecv_exchange`.
    const T0: u64 = 5_000_000_000;
    let dir = scratch("sendrecv");
    for (rank, events) in (0..).zip(sendrecv_exchange(T0)) {
        write_events(&grappe_trace::file_for(&dir, rank), &plain_header(rank, 2, "hand"), &events).unwrap();
    }
    let (bytes, summary) = export(&dir);
    assert_eq!((summary.events, summary.messages), (12, 4));
    let read = read_with_perfetto_definitions(&dir, &bytes);
    assert_eq!(read.problems, Vec::<String>::new());
    assert_eq!(read_with_prost(&bytes), read);
    check_flows(&read, 4, 1);
    let rank0: Vec<(&str, u64, Option<u64>)> =
        read.slices.iter().filter(|s| s.tid == 1).map(|s| (s.name.as_str(), s.ts - T0, s.dur)).collect();
    let expected =
        [("init", 0, Some(0)), ("sendrecv", 100, Some(300)), ("send", 500, Some(0)), ("recv", 700, Some(100))];
    assert_eq!(rank0[..4], expected);
    let pair = read.slices.iter().find(|s| s.name == "sendrecv").unwrap();
    for (key, value) in [("comm", 0), ("dest", 1), ("sendtag", 1), ("sendbytes", 8), ("source", 1), ("recvtag", 2)] {
        assert_eq!(pair.args[key], value, "{key} of {pair:?}");
    }
    // A send left last is written; nobody receives it.
    let last = read.slices.iter().rfind(|s| s.tid == 2).unwrap();
    assert_eq!((last.name.as_str(), last.ts - T0, last.dur), ("send", 900, Some(50)));
}

/// A receive that ends the very nanosecond its send starts, while the send
/// still waits for its rank's next event (so is written after the
/// receive): Perfetto reads events of one date in file order, so the
/// receive's end is drawn a nanosecond later, and the flow kept.
#[test]
fn a_receive_ending_as_its_waiting_send_starts_keeps_its_flow() {
    let dir = scratch("tie");
    let ranks = [
        vec![
            (10, 10, Body::Init),
            (100, 200, Body::Send { dest: 1, tag: 3, comm: 0, bytes: 8, seq: 0, failed: false, sync: false }),
            (5_000, 5_000, Body::Finalize),
        ],
        vec![
            (10, 10, Body::Init),
            (
                50,
                100,
                Body::Recv {
                    src: 0,
                    tag: 3,
                    comm: 0,
                    bytes: 8,
                    arrived: false,
                    sendrecv: false,
                    failed: false,
                    any_source: false,
                },
            ),
            (
                100,
                150,
                Body::Collective {
                    op: grappe_trace::CollectiveKind::Barrier,
                    comm: 0,
                    root: grappe_trace::ANY,
                    bytes: 0,
                    failed: false,
                },
            ),
        ],
    ];
    for (rank, events) in (0..).zip(ranks) {
        write_events(&grappe_trace::file_for(&dir, rank), &plain_header(rank, 2, "hand"), &events).unwrap();
    }
    let (bytes, summary) = export(&dir);
    assert_eq!(summary.messages, 1);
    let read = read_with_perfetto_definitions(&dir, &bytes);
    assert_eq!(read.problems, Vec::<String>::new());
    check_flows(&read, 1, 0);
    let on_rank1: Vec<(&str, u64, Option<u64>)> =
        read.slices.iter().filter(|s| s.tid == 2).map(|s| (s.name.as_str(), s.ts, s.dur)).collect();
    // The receive ends at 101, and the barrier after it starts no earlier.
    assert_eq!(on_rank1, [("init", 10, Some(0)), ("recv", 50, Some(51)), ("barrier", 101, Some(49))]);
}

#[test]
fn failed_calls_are_named_failed_and_have_no_flow() {
    let dir = scratch("failed");
    let recv = |src, tag, bytes, failed| Body::Recv {
        src,
        tag,
        comm: 0,
        bytes,
        arrived: false,
        sendrecv: false,
        failed,
        any_source: false,
    };
    let ranks = [
        vec![
            (10, 10, Body::Init),
            (100, 200, Body::Send { dest: 1, tag: 3, comm: 0, bytes: 8, seq: 0, failed: false, sync: false }),
            (300, 900, Body::Send { dest: 1, tag: 4, comm: 0, bytes: 8, seq: 1, failed: true, sync: false }),
        ],
        vec![
            (10, 10, Body::Init),
            (150, 250, recv(0, 3, 8, false)),
            (400, 3_000, recv(grappe_trace::ANY, -1, 0, true)),
        ],
    ];
    for (rank, events) in (0..).zip(ranks) {
        write_events(&grappe_trace::file_for(&dir, rank), &plain_header(rank, 2, "hand"), &events).unwrap();
    }
    let (bytes, summary) = export(&dir);
    assert_eq!(summary.messages, 1);
    let read = read_with_perfetto_definitions(&dir, &bytes);
    assert_eq!(read.problems, Vec::<String>::new());
    check_flows(&read, 1, 0);
    let slice = |name: &str| read.slices.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("no {name}"));
    assert_eq!(slice("send (failed)").args["failed"], true);
    let failed_recv = slice("recv (failed)");
    assert_eq!(
        (failed_recv.dur, &failed_recv.args["peer"], &failed_recv.args["tag"]),
        (Some(2_600), &Value::from("any"), &Value::from("any"))
    );
    assert!(!failed_recv.args.contains_key("msg"));
}

/// A trace naming more strings than the sequence holds: the numbering
/// starts anew (the readers drop every string at the reset), and every
/// name still reads back right.
#[test]
fn strings_past_the_interning_limit_start_the_numbering_anew_and_read_back() {
    let dir = scratch("many-names");
    let regions = 20_000u64;
    let mut events = vec![(0, 0, Body::Init)];
    for i in 0..regions {
        let name: grappe_trace::Text = format!("region {i}").as_str().into();
        events.push((10 * i + 1, 10 * i + 1, Body::RegionEnter { name, location: "here".into() }));
        events.push((10 * i + 5, 10 * i + 5, Body::RegionLeave { name }));
    }
    events.push((10 * regions, 10 * regions, Body::Finalize));
    write_events(&grappe_trace::file_for(&dir, 0), &plain_header(0, 1, "hand"), &events).unwrap();
    let (bytes, _) = export(&dir);
    let read = read_with_perfetto_definitions(&dir, &bytes);
    assert_eq!(read.problems, Vec::<String>::new());
    assert!(read.resets >= 2, "{} resets", read.resets);
    let names: Vec<&str> = read.slices.iter().filter(|s| s.category == ["region"]).map(|s| s.name.as_str()).collect();
    let expected: Vec<String> = (0..regions).map(|i| format!("region {i}")).collect();
    assert_eq!(names, expected);
    assert!(read.slices.iter().filter(|s| s.category == ["region"]).all(|s| s.args["location"] == "here"));
    assert_eq!(read_with_prost(&bytes), read);
}

#[test]
fn an_empty_job_gives_a_valid_trace_of_init_and_finalize() {
    let dir = scratch("empty");
    let job = SyntheticJob::new(3, 0);
    write_job(&dir, &job).unwrap();
    let (bytes, _) = export(&dir);
    let read = read_with_perfetto_definitions(&dir, &bytes);
    check_synthetic(&read, &job);
    assert_eq!(read.slices.len(), 6);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Any interval of a run: its slices all end, no flow ends before it
    /// starts (a receive whose send is before the interval has none), and
    /// its flows are messages received in it.
    #[test]
    fn any_interval_reads_back_with_nothing_left_dangling(
        from in 0u64..40 * ITERATION_NS,
        length in 1u64..20 * ITERATION_NS,
    ) {
        let dir = scratch("window");
        write_job(&dir, &SyntheticJob::distorted(4, 40)).unwrap();
        let mut bytes = Vec::new();
        let window = Window { from, to: from + length };
        let summary = write_perfetto(stream(&dir).windowed(window), &mut bytes, &mut |_| {}).unwrap();
        let read = read_with_prost(&bytes);
        prop_assert_eq!(&read.problems, &Vec::<String>::new());
        prop_assert_eq!(read.flows.len() as u64, summary.messages);
        check_flows(&read, summary.messages, read.unterminated_flows);
    }

    /// Any synthetic job, on one host or on distorted clocks, in blocks of
    /// any size: every rank, call, region, counter sample and message
    /// reads back, and nothing is left for a reader to drop.
    #[test]
    fn any_synthetic_job_reads_back_whole(
        ranks in 1u32..7,
        iterations in 0u64..30,
        distorted in any::<bool>(),
        block_events in 1usize..300,
    ) {
        let dir = scratch("prop");
        let job = if distorted { SyntheticJob::distorted(ranks, iterations) } else { SyntheticJob::new(ranks, iterations) };
        let job = SyntheticJob { block_events, ..job };
        write_job(&dir, &job).unwrap();
        let (bytes, summary) = export(&dir);
        prop_assert_eq!((summary.events, summary.messages), (job.events(), job.messages()));
        check_synthetic(&read_with_prost(&bytes), &job);
    }
}
