//! The text exports (Chrome JSON, Pajé, PICL) on jobs whose content is
//! known: synthetic jobs, and small hand-made traces for the corners
//! (a sendrecv's overlapping calls, odd region names, messages with one
//! end). Chrome output is read back by serde_json, Pajé output by the
//! real `pj_dump` (pajeng), PICL output by the grammar `grappe_export::picl`
//! documents.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use grappe_analysis::{CausalStream, GlobalOptions, GlobalTime, Result, TraceSet, merge_to_file};
use grappe_export::{
    ExportSummary, display_name, write_chrome, write_chrome_with_sites, write_paje, write_paje_with_sites, write_picl,
};
use grappe_testkit::synthetic::{SyntheticJob, plain_header, sendrecv_exchange, write_events, write_job};
use grappe_trace::format::FileHeader;
use grappe_trace::{Body, Completion, Event};
use proptest::prelude::*;
use serde_json::Value;

type Exporter = fn(CausalStream, &mut (dyn Write + Send), &mut dyn FnMut(u64)) -> Result<ExportSummary>;

fn scratch(name: &str) -> grappe_testkit::Scratch {
    grappe_testkit::scratch(&format!("export-{name}"))
}

fn stream(location: &Path) -> CausalStream {
    let set = TraceSet::open(location).unwrap();
    let time = GlobalTime::estimate(&set, &GlobalOptions::default()).unwrap();
    CausalStream::open(&set, &time).unwrap()
}

/// Exports `location` with `export`; the text and the summary.
fn export(location: &Path, export: Exporter) -> (String, ExportSummary) {
    let mut out = Vec::new();
    let mut calls = 0;
    let summary = export(stream(location), &mut out, &mut |_| calls += 1).unwrap();
    assert!(calls > 0, "progress is reported at least at the end");
    assert_eq!(summary.written_bytes, out.len() as u64);
    (String::from_utf8(out).unwrap(), summary)
}

/// What a rank of a synthetic job does, counted.
struct Expected {
    /// Runtime calls (init, sends, receives, waits, allreduces, finalize).
    calls: u64,
    /// Iterations: regions entered, counter samples.
    iterations: u64,
    ring: bool,
    paired: bool,
    allreduces: u64,
}

/// Init and finalize: calls, drawn with their duration as OTF2 does.
const INIT_AND_FINALIZE: u64 = 2;

fn expected(job: &SyntheticJob, rank: u32) -> Expected {
    let (ring, paired) = (job.ranks > 1, rank ^ 1 < job.ranks);
    let allreduces = job.iterations.div_ceil(10);
    let per_iteration = if ring { 4 } else { 0 } + if paired { 2 } else { 0 };
    Expected {
        calls: job.iterations * per_iteration + allreduces + INIT_AND_FINALIZE,
        iterations: job.iterations,
        ring,
        paired,
        allreduces,
    }
}

// ---------------------------------------------------------------- Chrome

fn chrome_events(text: &str) -> (Vec<Value>, Value) {
    let doc: Value = serde_json::from_str(text).expect("the Chrome export is valid JSON");
    assert_eq!(doc["displayTimeUnit"], "ns");
    let events = doc["traceEvents"].as_array().expect("a traceEvents array").clone();
    (events, doc["otherData"].clone())
}

/// The rank of an event's lane: its thread, numbered from 1 in a process
/// numbered from 1 (Perfetto files pid 0 and tid 0 under the kernel's idle
/// task).
fn rank_of(e: &Value) -> u64 {
    let (pid, tid) = (e["pid"].as_u64(), e["tid"].as_u64());
    assert!(pid.is_some_and(|p| p >= 1), "{e}: no process, or process 0");
    assert!(tid.is_some_and(|t| t >= 1), "{e}: no thread, or thread 0");
    tid.unwrap() - 1
}

/// Microseconds with three decimals, back to nanoseconds.
fn ns(us: &Value) -> i64 {
    (us.as_f64().unwrap() * 1000.0).round() as i64
}

#[test]
fn chrome_with_sites_gives_each_call_its_source_line_and_changes_nothing_else() {
    let dir = scratch("chrome-sites");
    let job = SyntheticJob::new(3, 40);
    write_job(&dir, &job).unwrap();
    let (plain, _) = export(&dir, write_chrome);
    let (sited, summary) = export(&dir, write_chrome_with_sites);
    assert_eq!((summary.events, summary.messages), (job.events(), job.messages()));
    let (plain, _) = chrome_events(&plain);
    let (sited, _) = chrome_events(&sited);
    assert_eq!(plain.len(), sited.len());
    let mut calls = 0;
    for (p, s) in plain.iter().zip(&sited) {
        let mut without = s.clone();
        let site = without.get_mut("args").and_then(|a| a.as_object_mut()).and_then(|a| a.remove("site"));
        assert_eq!(p, &without, "the export with sites differs beyond the site");
        if s["ph"] == "X" && s["name"] != "flush" {
            let expected = site_of_synthetic_call(s["name"].as_str().unwrap());
            assert_eq!(site.as_ref().and_then(Value::as_str), expected, "{s}");
            calls += u64::from(expected.is_some());
        } else {
            assert_eq!(site, None, "{s}");
        }
    }
    let without_site = (0..job.ranks).map(|rank| expected(&job, rank).calls - INIT_AND_FINALIZE);
    assert_eq!(calls, without_site.sum::<u64>());
}

/// Where the synthetic job makes call `name` (it names one line per kind
/// of call; collectives share one; init and finalize have none).
fn site_of_synthetic_call(name: &str) -> Option<&'static str> {
    let kind = grappe_trace::EventKind::ALL.iter().find(|k| k.name() == name).copied();
    let kind = kind.unwrap_or(grappe_trace::EventKind::Collective);
    let site = grappe_testkit::synthetic::synthetic_site(kind).map(|s| s.text());
    assert!(site.is_some() || matches!(name, "init" | "finalize"), "no site for {name}");
    site
}

#[test]
fn chrome_has_every_call_region_counter_and_message_of_a_synthetic_job() {
    let dir = scratch("chrome");
    let job = SyntheticJob::new(5, 200);
    write_job(&dir, &job).unwrap();
    let (text, summary) = export(&dir, write_chrome);
    assert_eq!((summary.events, summary.messages), (job.events(), job.messages()));
    let (events, other) = chrome_events(&text);
    assert_eq!(other["events"], job.events());

    let mut count: BTreeMap<(u64, String), u64> = BTreeMap::new();
    let mut depth: HashMap<u64, i64> = HashMap::new();
    let mut processes: BTreeMap<(u64, String), u64> = BTreeMap::new();
    for e in &events {
        let ph = e["ph"].as_str().unwrap().to_owned();
        let pid = e["pid"].as_u64().unwrap_or_else(|| panic!("{e}: no process"));
        if ph == "M" && e["name"].as_str().unwrap().starts_with("process_") {
            // Each rank runs in a process of its own, in rank order.
            let rank = pid - 1;
            assert!(rank < job.ranks as u64 && e.get("tid").is_none(), "{e}");
            match e["name"].as_str().unwrap() {
                "process_name" => {
                    assert_eq!(e["args"]["name"], format!("grappe job synthetic: synthetic pid {}", 1000 + rank))
                }
                "process_sort_index" => assert_eq!(e["args"]["sort_index"], rank),
                other => panic!("unexpected metadata {other}"),
            }
            *processes.entry((pid, e["name"].as_str().unwrap().to_owned())).or_default() += 1;
            continue;
        }
        assert_eq!(pid, rank_of(e) + 1, "{e}: not in its rank's process");
        if ph == "i" && e["name"] == "delivery" {
            continue; // checked with the flows
        }
        *count.entry((rank_of(e), ph.clone())).or_default() += 1;
        match ph.as_str() {
            "X" => assert!(e["dur"].as_f64().unwrap() >= 0.0, "{e}"),
            "B" | "E" => {
                let d = depth.entry(rank_of(e)).or_default();
                *d += if ph == "B" { 1 } else { -1 };
                assert!(*d >= 0, "an E before its B on rank {}", rank_of(e));
            }
            "M" => match e["name"].as_str().unwrap() {
                "thread_name" => assert_eq!(e["args"]["name"], format!("rank {}", rank_of(e))),
                "thread_sort_index" => assert_eq!(e["args"]["sort_index"], rank_of(e)),
                other => panic!("unexpected metadata {other}"),
            },
            _ => {}
        }
    }
    for rank in 0..job.ranks {
        let r = rank as u64;
        let n = |ph: &str| count.get(&(r, ph.to_owned())).copied().unwrap_or(0);
        let x = expected(&job, rank);
        assert_eq!(n("X"), x.calls, "calls of rank {rank}");
        assert_eq!((n("B"), n("E")), (x.iterations, x.iterations), "regions of rank {rank}");
        assert_eq!(depth[&r], 0);
        assert_eq!(n("C"), x.iterations, "counter samples of rank {rank}");
        assert_eq!(n("i"), 0, "no instant on rank {rank}: init and finalize are slices");
        assert_eq!(n("M"), 2, "thread name and sort index of rank {rank}");
        for name in ["process_name", "process_sort_index"] {
            assert_eq!(processes.get(&(r + 1, name.to_owned())), Some(&1), "{name} of rank {rank}'s process");
        }
    }
    assert_eq!(processes.len() as u32, 2 * job.ranks, "a process per rank");
    check_flows(&events, job.messages());
}

/// Every message is one `s` inside a send slice and one `f` inside a
/// receiving slice, with the same id, bound the way Perfetto binds them (to
/// the latest slice begun on the lane) and pointing forward: Perfetto
/// orients a flow from the slice that starts first, so when a receive
/// started before its send the `f` must bind to a `delivery` mark begun
/// after the send.
fn check_flows(events: &[Value], messages: u64) {
    // Perfetto pairs the two ends of a flow by id, category and name.
    let perfetto_key = |e: &Value| (e["id"].as_u64(), e.get("cat").cloned(), e.get("name").cloned());
    // Per lane: (start, position in the file, end, name) of every slice
    // and delivery mark, in the order Perfetto reads them.
    let mut lanes: HashMap<u64, Vec<(i64, usize, i64, &str)>> = HashMap::new();
    for (at, e) in events.iter().enumerate() {
        let name = e["name"].as_str().unwrap_or("");
        let end = match e["ph"].as_str().unwrap() {
            "X" => ns(&e["ts"]) + ns(&e["dur"]),
            "i" if name == "delivery" => ns(&e["ts"]),
            _ => continue,
        };
        lanes.entry(rank_of(e)).or_default().push((ns(&e["ts"]), at, end, name));
    }
    for lane in lanes.values_mut() {
        lane.sort();
    }
    let bound_to = |e: &Value, at: usize| {
        let lane = &lanes[&rank_of(e)];
        let t = ns(&e["ts"]);
        let i = lane.partition_point(|s| (s.0, s.1) < (t, at));
        assert!(i > 0, "no slice before {e}");
        (lane[i - 1], &lane[..i - 1])
    };
    let (mut starts, mut ends, mut deliveries) = (HashMap::new(), HashSet::new(), 0);
    for (at, e) in events.iter().enumerate() {
        let t = || ns(&e["ts"]);
        match e["ph"].as_str().unwrap() {
            "s" => {
                let (slice, before) = bound_to(e, at);
                let t = t();
                // A sendrecv's receive starts with its send and is begun
                // after it: the flow then starts on the same call's receive.
                let is_send = |s: &&(i64, usize, i64, &str)| ["send", "isend", "sendrecv"].contains(&s.3);
                let send = std::iter::once(&slice)
                    .chain(before.iter().rev().take_while(|s| s.0 == slice.0))
                    .find(is_send)
                    .unwrap_or_else(|| panic!("{e} bound to {slice:?}, no send"));
                assert!(send.0 <= t && t <= send.2 && t <= slice.2, "{e} bound to {slice:?}");
                assert!(starts.insert(e["id"].as_u64().unwrap(), (t, slice.0, perfetto_key(e))).is_none());
            }
            "f" => {
                assert_eq!(e["bp"], "e");
                let id = e["id"].as_u64().unwrap();
                let (slice, before) = bound_to(e, at);
                let t = t();
                let receive = if slice.3 == "delivery" {
                    deliveries += 1;
                    assert_eq!(slice.0, t, "{e}: the delivery mark is at the flow's end");
                    *before.iter().rev().find(|s| s.3 != "delivery").expect("a receive holds the delivery")
                } else {
                    slice
                };
                let receiving = ["recv", "wait", "test", "sendrecv"].contains(&receive.3);
                assert!(receiving && receive.0 <= t && t <= receive.2, "{e}");
                let (s_date, send_start, ref key) = starts[&id];
                assert_eq!(&perfetto_key(e), key, "{e}: Perfetto would not pair this end with its start");
                // Viewers read in date order: an end before its start is dropped.
                assert!(t >= s_date, "flow {id} ends before it starts: {e}");
                // The flow points from the send: the end's slice starts no earlier.
                assert!(slice.0 >= send_start, "flow {id} would be drawn backwards: {e} bound to {slice:?}");
                assert!(ends.insert(id));
            }
            _ => {}
        }
    }
    assert_eq!(starts.len() as u64, messages);
    assert_eq!(starts.into_keys().collect::<HashSet<_>>(), ends);
    // The job's pair exchange posts half of its receives before the send.
    assert!(deliveries > 0, "no receive posted before its send: the case is not exercised");
}

#[test]
fn chrome_dates_and_names_are_the_stream_s_exactly() {
    let dir = scratch("chrome-dates");
    let job = SyntheticJob::new(3, 50);
    write_job(&dir, &job).unwrap();
    let (text, _) = export(&dir, write_chrome);
    let (events, other) = chrome_events(&text);
    let origin = other["time_origin_ns"].as_u64().unwrap() as i64;
    let calls: Vec<Event> = stream(&dir)
        .map(|l| l.unwrap().event)
        .filter(|e| !matches!(e.body, Body::RegionEnter { .. } | Body::RegionLeave { .. } | Body::Counter { .. }))
        .filter(|e| !matches!(e.body, Body::Point { .. } | Body::FlushBegin))
        .collect();
    let slices: Vec<&Value> = events.iter().filter(|e| e["ph"] == "X").collect();
    assert_eq!(slices.len(), calls.len());
    // A send waits for its rank's next event, so the file keeps each
    // rank's order, not the stream's.
    for rank in 0..job.ranks {
        let slices = slices.iter().filter(|s| rank_of(s) == rank as u64);
        let calls: Vec<&Event> = calls.iter().filter(|c| c.rank == rank).collect();
        assert_eq!(slices.clone().count(), calls.len());
        for (slice, call) in slices.zip(calls) {
            assert_eq!(slice["name"], display_name(&call.body));
            assert_eq!(ns(&slice["ts"]), call.start as i64 - origin);
            assert_eq!(ns(&slice["dur"]), (call.end - call.start) as i64);
        }
    }
}

// ---------------------------------------------------------------- Pajé

/// Runs pajeng's `pj_dump` on `path`: its output lines, split on ", ".
fn pj_dump(path: &Path) -> Vec<Vec<String>> {
    pj_dump_with(&[], path)
}

/// `pj_dump` with options `args` (`-u`: user-defined fields too).
fn pj_dump_with(args: &[&str], path: &Path) -> Vec<Vec<String>> {
    let output = match Command::new("pj_dump").arg("-l").arg("9").args(args).arg(path).output() {
        Ok(output) => output,
        Err(e) => panic!("pj_dump (Debian package pajeng) cannot run ({e}): run scripts/install-deps"),
    };
    assert!(
        output.status.success(),
        "pj_dump rejected {}: {}\n{}",
        path.display(),
        String::from_utf8_lossy(&output.stderr),
        String::from_utf8_lossy(&output.stdout)
    );
    let text = String::from_utf8(output.stdout).unwrap();
    text.lines().map(|l| l.split(", ").map(str::to_owned).collect()).collect()
}

/// pj_dump's entities counted by (kind, container, type).
fn entities(rows: &[Vec<String>]) -> HashMap<(String, String, String), u64> {
    let mut count = HashMap::new();
    for row in rows {
        *count.entry((row[0].clone(), row[1].clone(), row[2].clone())).or_default() += 1;
    }
    count
}

fn write_text(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn paje_is_read_by_pj_dump_with_every_state_mark_and_link() {
    let dir = scratch("paje");
    let job = SyntheticJob::new(5, 120);
    write_job(&dir, &job).unwrap();
    let (text, summary) = export(&dir, write_paje);
    assert_eq!((summary.events, summary.messages, summary.late_records), (job.events(), job.messages(), 0));
    let rows = pj_dump(&write_text(&dir, "job.paje", &text));
    check_paje(&rows, &job);
}

fn check_paje(rows: &[Vec<String>], job: &SyntheticJob) {
    let count = entities(rows);
    let n = |kind: &str, rank: u32, ty: &str| {
        count.get(&(kind.to_owned(), format!("rank {rank}"), ty.to_owned())).copied().unwrap_or(0)
    };
    for rank in 0..job.ranks {
        let x = expected(job, rank);
        assert_eq!(n("State", rank, "call"), x.calls, "call states of rank {rank}");
        assert_eq!(n("State", rank, "region"), x.iterations, "region states of rank {rank}");
        assert_eq!(n("Event", rank, "mark"), 0, "no mark on rank {rank}: init and finalize are states");
        assert!(x.iterations == 0 || n("Variable", rank, "residual") > 0, "counter of rank {rank}");
    }
    let links: Vec<_> = rows.iter().filter(|r| r[0] == "Link").collect();
    assert_eq!(links.len() as u64, job.messages());
    for link in links {
        let duration: f64 = link[5].parse().unwrap();
        assert!(duration >= 0.0, "{link:?}");
    }
}

#[test]
fn paje_of_a_merged_file_is_the_same() {
    let dir = scratch("paje-merged");
    let job = SyntheticJob::new(4, 60);
    write_job(&dir, &job).unwrap();
    let set = TraceSet::open(&dir).unwrap();
    let time = GlobalTime::estimate(&set, &GlobalOptions::default()).unwrap();
    let merged = dir.join("merged.gtrace");
    merge_to_file(&set, &time, &merged, &mut |_| {}).unwrap();
    let (text, summary) = export(&merged, write_paje);
    assert_eq!((summary.events, summary.messages, summary.late_records), (job.events(), job.messages(), 0));
    check_paje(&pj_dump(&write_text(&dir, "merged.paje", &text)), &job);
    let (direct, _) = export(&dir, write_paje);
    assert_eq!(text, direct, "per-rank and merged inputs give the same file");
}

/// The viewer Pajé users open, ViTE, loads the export without error and
/// draws it: run headless (Qt's offscreen platform), it exports the
/// whole trace as SVG, with a lane per rank and an arrow per message.
#[test]
fn paje_opens_in_vite_and_is_drawn() {
    let dir = scratch("vite");
    let job = SyntheticJob::new(3, 20);
    write_job(&dir, &job).unwrap();
    let (text, _) = export(&dir, write_paje);
    let drawing = vite_drawing(&write_text(&dir, "job.paje", &text));
    for rank in 0..job.ranks {
        assert!(drawing.contains(&format!(">rank {rank}<")), "no lane for rank {rank}");
    }
    // States are rectangles; each message is a line and its arrow head.
    let rects = drawing.matches("<rect").count() as u64;
    let lines = drawing.matches("<line").count() as u64;
    assert!(rects > job.events() / 2, "{rects} rectangles for {} events", job.events());
    assert!(lines >= job.messages(), "{lines} lines for {} messages", job.messages());
}

/// The SVG drawing ViTE exports of `paje`, once it parsed it with no
/// error or warning.
fn vite_drawing(paje: &Path) -> String {
    let dir = paje.parent().unwrap();
    let svg = paje.with_extension("svg");
    let output = match Command::new("vite")
        .env("QT_QPA_PLATFORM", "offscreen")
        .env("XDG_RUNTIME_DIR", dir)
        .arg("-f")
        .arg(paje)
        .arg("-e")
        .arg(&svg)
        .output()
    {
        Ok(output) => output,
        Err(e) => panic!("vite (Debian package vite) cannot run ({e}): run scripts/install-deps"),
    };
    let said = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "vite failed on {}:\n{said}", paje.display());
    assert!(said.contains("0 errors and 0 warnings were found during parsing"), "{said}");
    // Its other complaints (a value declared on a type it does not take
    // values for) are lines ending in "!!!".
    assert!(!said.contains("!!!"), "{said}");
    std::fs::read_to_string(&svg).unwrap_or_else(|e| panic!("no SVG from vite ({e}):\n{said}"))
}

/// With sites, each call state carries its source line in field `Site`,
/// which pj_dump reads as a user-defined field and ViTE accepts; the file
/// is otherwise the same.
#[test]
fn paje_with_sites_gives_each_call_its_source_line_and_changes_nothing_else() {
    let dir = scratch("paje-sites");
    let job = SyntheticJob::new(3, 40);
    write_job(&dir, &job).unwrap();
    let (plain, _) = export(&dir, write_paje);
    let (sited, summary) = export(&dir, write_paje_with_sites);
    assert_eq!((summary.events, summary.messages), (job.events(), job.messages()));
    let (plain, sited) = (write_text(&dir, "plain.paje", &plain), write_text(&dir, "sited.paje", &sited));
    assert_eq!(pj_dump(&plain), pj_dump(&sited), "the export with sites differs beyond the sites");
    let mut calls = 0;
    for row in pj_dump_with(&["-u"], &sited) {
        match (row[0].as_str(), row[2].as_str()) {
            ("State", "call") => {
                let expected = site_of_synthetic_call(&row[7]);
                assert_eq!(row.get(8).map(String::as_str).filter(|s| !s.is_empty()), expected, "{row:?}");
                calls += u64::from(expected.is_some());
            }
            _ => assert!(row.len() <= 8 || row[0] == "Link", "a field too many: {row:?}"),
        }
    }
    let without_site = (0..job.ranks).map(|rank| expected(&job, rank).calls - INIT_AND_FINALIZE);
    assert_eq!(calls, without_site.sum::<u64>());
    assert!(vite_drawing(&sited).contains(">rank 0<"));
}

// ---------------------------------------------------------------- PICL

/// A PICL record as `grappe_export::picl` documents it.
#[derive(Debug)]
struct PiclRecord {
    record: i64,
    event: i64,
    date: f64,
    node: i64,
    data: Vec<i64>,
}

fn parse_picl(text: &str) -> Vec<PiclRecord> {
    let mut last = f64::NEG_INFINITY;
    text.lines()
        .map(|line| {
            let f: Vec<&str> = line.split(' ').collect();
            assert!(f.len() >= 6, "short record: {line}");
            let int = |s: &str| s.parse::<i64>().unwrap_or_else(|_| panic!("not an integer: {s} in {line}"));
            let n = int(f[5]) as usize;
            let data: Vec<i64> = if n == 0 {
                assert_eq!(f.len(), 6, "{line}");
                Vec::new()
            } else {
                assert_eq!((f.len(), f[6]), (7 + n, "2"), "{line}");
                f[7..].iter().map(|s| int(s)).collect()
            };
            let date: f64 = f[2].parse().unwrap();
            assert!(date >= last, "record dated {date} after one at {last}: {line}");
            last = date;
            assert!(matches!(int(f[0]), -3 | -4 | -202), "{line}");
            PiclRecord { record: int(f[0]), event: int(f[1]), date, node: int(f[3]), data }
        })
        .collect()
}

#[test]
fn picl_records_are_sorted_balanced_and_counted() {
    let dir = scratch("picl");
    let job = SyntheticJob::new(5, 90);
    write_job(&dir, &job).unwrap();
    let (text, summary) = export(&dir, write_picl);
    assert_eq!((summary.events, summary.messages, summary.late_records), (job.events(), job.messages(), 0));
    assert_eq!(summary.blocks, ["init", "region step", "finalize"].map(str::to_owned));
    let records = parse_picl(&text);
    assert!(records.iter().all(|r| r.date >= 0.0));
    let mut count: HashMap<(i64, i64, i64), u64> = HashMap::new();
    for r in &records {
        *count.entry((r.record, r.event, r.node)).or_default() += 1;
    }
    for rank in 0..job.ranks {
        let x = expected(&job, rank);
        let n = |event: i64| {
            let begins = count.get(&(-3, event, rank as i64)).copied().unwrap_or(0);
            assert_eq!(begins, count.get(&(-4, event, rank as i64)).copied().unwrap_or(0), "event {event}");
            begins
        };
        let ring = if x.ring { job.iterations } else { 0 };
        let pair = if x.paired { job.iterations } else { 0 };
        assert_eq!(n(-901), 1);
        assert_eq!((n(-27), n(-57), n(-31), n(-61)), (ring, ring, ring, ring), "ring of rank {rank}");
        assert_eq!((n(-21), n(-52)), (pair, pair), "pair of rank {rank}");
        assert_eq!(n(-782), x.allreduces);
        assert_eq!((n(1), n(2), n(3)), (1, x.iterations, 1), "init, region and finalize blocks of rank {rank}");
    }
    check_picl_messages(&records, job.messages());
}

/// The messages sent (bytes, tag, to) are the messages received.
fn check_picl_messages(records: &[PiclRecord], messages: u64) {
    let mut sent = BTreeMap::new();
    let mut received = BTreeMap::new();
    for r in records {
        let (from, to, tag, bytes) = match (r.record, r.event) {
            (-3, -21 | -27) => (r.node, r.data[2], r.data[1], r.data[0]),
            (-4, -52 | -61) => (r.data[2], r.node, r.data[1], r.data[0]),
            _ => continue,
        };
        let side = if r.record == -3 { &mut sent } else { &mut received };
        *side.entry((from, to, tag, bytes)).or_insert(0u64) += 1;
    }
    assert_eq!(sent.values().sum::<u64>(), messages);
    assert_eq!(sent, received);
}

// ---------------------------------------------------------------- corners

#[test]
fn an_empty_job_exports_valid_files() {
    let dir = scratch("empty");
    let job = SyntheticJob::new(3, 0);
    write_job(&dir, &job).unwrap();
    let (text, summary) = export(&dir, write_chrome);
    assert_eq!((summary.events, summary.messages), (6, 0));
    let (events, _) = chrome_events(&text);
    assert_eq!(events.iter().filter(|e| e["ph"] == "X").count(), 6, "init and finalize slices");
    let (text, _) = export(&dir, write_paje);
    let pushes = text.lines().filter(|l| l.starts_with("12 ") && (l.ends_with(" init") || l.ends_with(" finalize")));
    assert_eq!(pushes.count(), 6, "init and finalize states");
    // (pj_dump lists one entity per date of a container that lasts no
    // time, so only its containers are counted here.)
    let rows = pj_dump(&write_text(&dir, "empty.paje", &text));
    assert_eq!(rows.iter().filter(|r| r[0] == "Container" && r[2] == "rank").count(), 3);
    let (text, _) = export(&dir, write_picl);
    let records = parse_picl(&text);
    assert_eq!(records.len(), 6 + 12, "tracing on and off, init and finalize begun and ended, for each rank");
}

#[test]
fn distorted_clocks_left_uncorrected_still_give_valid_ordered_files() {
    let dir = scratch("raw-clocks");
    let mut job = SyntheticJob::new(4, 100);
    job.one_host = false;
    job.clocks = (0..4)
        .map(|r| grappe_testkit::synthetic::SyntheticClock {
            offset_ns: [0, 30_000, -12_000, 4_500][r],
            drift_ppm: 0.0,
        })
        .collect();
    write_job(&dir, &job).unwrap();
    let set = TraceSet::open(&dir).unwrap();
    let mut time = GlobalTime::estimate(&set, &GlobalOptions::default()).unwrap();
    for rank in time.ranks.iter_mut().flatten() {
        rank.model = grappe_clock::ClockModel::identity();
    }
    let raw = || CausalStream::open(&set, &time).unwrap();
    let mut paje = Vec::new();
    let summary = write_paje(raw(), &mut paje, &mut |_| {}).unwrap();
    assert!(summary.stream.deferred > 0, "the offsets make receives wait for their sends");
    let rows = pj_dump(&write_text(&dir, "raw.paje", std::str::from_utf8(&paje).unwrap()));
    assert_eq!(rows.iter().filter(|r| r[0] == "Link").count() as u64, job.messages());
    let mut picl = Vec::new();
    write_picl(raw(), &mut picl, &mut |_| {}).unwrap();
    parse_picl(std::str::from_utf8(&picl).unwrap());
}

/// Writes hand-made per-rank traces: each rank's events as (start, end,
/// body), dates in ns on one shared clock.
fn write_handmade(dir: &Path, ranks: &[Vec<(u64, u64, Body)>]) {
    for (rank, events) in ranks.iter().enumerate() {
        let rank = rank as u32;
        let path = grappe_trace::file_for(dir, rank);
        write_events(&path, &handmade_header(rank, ranks.len() as u32), events).unwrap();
    }
}

fn handmade_header(rank: u32, world_size: u32) -> FileHeader {
    FileHeader { pid: 100 + rank, flush_policy: "end".into(), ..plain_header(rank, world_size, "hand") }
}

const T: u64 = 5_000_000_000;

/// Rank 0 and 1 swap messages with sendrecv (a send and a receive with
/// the same start); rank 0 also sends one message nobody receives and
/// leaves a region it never entered, rank 1 receives one nobody sent.
fn corners() -> Vec<Vec<(u64, u64, Body)>> {
    let send = |dest| Body::Send { dest, tag: 3, comm: 0, bytes: 8, seq: 0, failed: false, sync: false };
    let recv = |src| Body::Recv {
        src,
        tag: 3,
        comm: 0,
        bytes: 8,
        arrived: false,
        sendrecv: false,
        failed: false,
        any_source: false,
    };
    let region = |enter: bool| {
        let name: grappe_trace::Text = "odd \"region\"\n".into();
        if enter { Body::RegionEnter { name, location: "here".into() } } else { Body::RegionLeave { name } }
    };
    vec![
        vec![
            (T, T, Body::Init),
            (T + 5, T + 5, region(false)),
            (T + 10, T + 10, region(true)),
            (T + 100, T + 300, send(1)),
            (T + 100, T + 900, recv(1)),
            (
                T + 1_000,
                T + 1_200,
                Body::Send { dest: 1, tag: 9, comm: 0, bytes: 1, seq: 1, failed: false, sync: false },
            ),
            (T + 1_500, T + 1_500, Body::Point { name: "checkpoint".into(), location: "here".into() }),
            (T + 2_000, T + 2_000, Body::Finalize),
        ],
        vec![
            (T, T, Body::Init),
            (T + 200, T + 700, send(0)),
            (T + 200, T + 800, recv(0)),
            (
                T + 900,
                T + 1_900,
                Body::Recv {
                    src: 0,
                    tag: 4,
                    comm: 0,
                    bytes: 2,
                    arrived: false,
                    sendrecv: false,
                    failed: false,
                    any_source: false,
                },
            ),
            (T + 1_950, T + 1_950, Body::Counter { name: "depth".into(), value: -3 }),
        ],
    ]
}

#[test]
fn corners_give_files_every_reader_accepts() {
    let dir = scratch("corners");
    write_handmade(&dir, &corners());
    let (text, summary) = export(&dir, write_chrome);
    assert_eq!((summary.events, summary.messages), (13, 2));
    let (events, _) = chrome_events(&text);
    check_flows(&events, 2);
    let begins: Vec<_> = events.iter().filter(|e| e["ph"] == "B").collect();
    assert_eq!(begins.len(), 1);
    assert_eq!(begins[0]["name"], "odd \"region\"\n");
    assert_eq!(events.iter().filter(|e| e["ph"] == "E").count(), 0, "the leave with no enter is left out");

    let (text, summary) = export(&dir, write_paje);
    assert_eq!(summary.messages, 2);
    let corners = write_text(&dir, "corners.paje", &text);
    assert!(vite_drawing(&corners).contains(">rank 1<"), "ViTE takes the user point and the links");
    let rows = pj_dump(&corners);
    let count = entities(&rows);
    let n = |kind: &str, c: &str, ty: &str| count.get(&(kind.into(), c.into(), ty.into())).copied().unwrap_or(0);
    // Rank 1, cut before finalize, has only its init more.
    assert_eq!((n("State", "rank 0", "call"), n("State", "rank 1", "call")), (5, 4));
    assert_eq!(n("State", "rank 0", "region"), 1, "the region open at the end is closed");
    assert_eq!(n("Link", "grappe job synthetic", "message"), 2, "only the two received messages are drawn");
    // The sendrecv's receive is drawn from the end of its send on.
    let recv0 = rows.iter().find(|r| r[0] == "State" && r[1] == "rank 0" && r[7] == "recv").unwrap();
    assert_eq!((recv0[3].as_str(), recv0[4].as_str()), ("0.000000300", "0.000000900"));

    let (text, summary) = export(&dir, write_picl);
    assert_eq!(summary.blocks, ["init", "region odd \"region\"\n", "finalize"].map(str::to_owned));
    let records = parse_picl(&text);
    let closes = records.iter().filter(|r| r.record == -4 && r.event == -901).count();
    assert_eq!(closes, 2, "rank 1, cut before finalize, is closed at the end");
}

/// A marked sendrecv is one `sendrecv` slice in Chrome JSON, with the
/// arguments of both halves and both flows bound to it; a send and a
/// marked receive of other dates stay two slices. A send of no length
/// (a coarse clock) is received while it waits for its rank's next event:
/// its flow still starts in it, so the flow is written after the slice
/// (a reader binds an `s` to the latest slice begun at its date).
#[test]
fn chrome_draws_a_marked_sendrecv_as_one_slice() {
    // Its corners: see `sendrecv_exchange`.
    let ranks = sendrecv_exchange(T);
    let dir = scratch("chrome-sendrecv");
    write_handmade(&dir, &ranks);
    let (text, summary) = export(&dir, write_chrome);
    assert_eq!((summary.events, summary.messages), (12, 4));
    let (events, _) = chrome_events(&text);
    check_flows(&events, 4);
    let slices = |rank: u64| -> Vec<(String, i64, i64)> {
        let slices = events.iter().filter(|e| e["ph"] == "X" && rank_of(e) == rank);
        slices.map(|e| (e["name"].as_str().unwrap().to_owned(), ns(&e["ts"]), ns(&e["dur"]))).collect()
    };
    let slice = |name: &str, ts: i64, dur: i64| (name.to_owned(), ts, dur);
    let init_and_finalize = |between: &[_]| [&[slice("init", 0, 0)], between, &[slice("finalize", 2000, 0)]].concat();
    let between = [slice("sendrecv", 100, 300), slice("send", 500, 0), slice("recv", 700, 100)];
    assert_eq!(slices(0), init_and_finalize(&between));
    assert_eq!(slices(1).last(), Some(&slice("send", 900, 50)), "a send left last is written");

    let pair = events.iter().find(|e| e["name"] == "sendrecv").unwrap();
    let args = &pair["args"];
    for (key, value) in [("comm", 0), ("dest", 1), ("sendtag", 1), ("sendbytes", 8), ("source", 1), ("recvtag", 2)] {
        assert_eq!(args[key], value, "{key} of {pair}");
    }
    assert_eq!((args["recvbytes"].as_u64(), args["arrived"].as_bool()), (Some(8), Some(false)));
    // Its message out starts in it, its message in ends in it.
    let flow_end = |ph: &str, id: &Value| events.iter().find(|e| e["ph"] == ph && e["id"] == *id).unwrap();
    let (out, into) = (flow_end("s", &args["send_msg"]), flow_end("f", &args["recv_msg"]));
    assert_eq!((rank_of(out), rank_of(into)), (0, 0));
    assert!((100..=400).contains(&ns(&out["ts"])) && (100..=400).contains(&ns(&into["ts"])), "{out} {into}");
    assert_eq!(rank_of(flow_end("s", &args["recv_msg"])), 1, "the message in comes from rank 1");
}

/// A marked sendrecv is one `sendrecv` state in Pajé, its two messages
/// still drawn; a send and a marked receive of other dates stay two
/// states, and a send left last keeps its state.
#[test]
fn paje_draws_a_marked_sendrecv_as_one_state() {
    let ranks = sendrecv_exchange(T);
    let dir = scratch("paje-sendrecv");
    write_handmade(&dir, &ranks);
    let (text, summary) = export(&dir, write_paje);
    assert_eq!((summary.messages, summary.late_records), (4, 0));
    let rows = pj_dump(&write_text(&dir, "sendrecv.paje", &text));
    let states = |rank: &str| -> Vec<(String, String, String)> {
        let rows = rows.iter().filter(|r| r[0] == "State" && r[1] == rank && r[2] == "call");
        rows.map(|r| (r[7].clone(), r[3].clone(), r[4].clone())).collect()
    };
    let state = |name: &str, start: &str, end: &str| (name.to_owned(), start.to_owned(), end.to_owned());
    assert_eq!(
        states("rank 0"),
        [
            state("init", "0.000000000", "0.000000000"),
            state("sendrecv", "0.000000100", "0.000000400"),
            state("send", "0.000000500", "0.000000500"),
            state("recv", "0.000000700", "0.000000800"),
            state("finalize", "0.000002000", "0.000002000"),
        ]
    );
    assert_eq!(states("rank 1").last(), Some(&state("send", "0.000000900", "0.000000950")));
    assert_eq!(rows.iter().filter(|r| r[0] == "Link").count(), 4);
}

/// A send's state waits for the rank's next call, which may come long
/// after the message was received: meanwhile no later record goes out
/// (it would leave the send's state late, moved past its date).
#[test]
fn paje_holds_later_records_while_a_send_waits_for_the_next_call() {
    let counters = (0..3_000).map(|i| (T + 1_000 + i, T + 1_000 + i, Body::Counter { name: "c".into(), value: 1 }));
    let ranks = vec![
        vec![
            (T, T, Body::Init),
            (T + 100, T + 200, Body::Send { dest: 1, tag: 1, comm: 0, bytes: 8, seq: 0, failed: false, sync: false }),
            (T + 10_000, T + 10_000, Body::Finalize),
        ],
        std::iter::once((T, T, Body::Init))
            .chain([(
                T + 150,
                T + 250,
                Body::Recv {
                    src: 0,
                    tag: 1,
                    comm: 0,
                    bytes: 8,
                    arrived: false,
                    sendrecv: false,
                    failed: false,
                    any_source: false,
                },
            )])
            .chain(counters)
            .collect(),
    ];
    let dir = scratch("paje-held");
    write_handmade(&dir, &ranks);
    let (text, summary) = export(&dir, write_paje);
    assert_eq!((summary.messages, summary.late_records), (1, 0));
    let rows = pj_dump(&write_text(&dir, "held.paje", &text));
    let send = rows.iter().find(|r| r[0] == "State" && r[1] == "rank 0" && r[7] == "send").expect("the send's state");
    assert_eq!((send[3].as_str(), send[4].as_str()), ("0.000000100", "0.000000200"));
}

/// The text of a number field of a one-line JSON object.
fn field<'a>(line: &'a str, key: &str) -> &'a str {
    let rest = &line[line.find(key).unwrap() + key.len()..];
    &rest[..rest.find([',', '}']).unwrap()]
}

/// A one-rank trace of regions with the given names and dates.
fn regions_trace(dir: &Path, spans: &[(String, u64, u64)]) {
    let mut events = vec![(T, T, Body::Init)];
    let mut t = T;
    for (name, gap, length) in spans {
        t += gap;
        events.push((t, t, Body::RegionEnter { name: name.as_str().into(), location: name.as_str().into() }));
        events.push((
            t,
            t + length,
            Body::Collective {
                op: grappe_trace::CollectiveKind::Barrier,
                comm: 0,
                root: u32::MAX,
                bytes: 0,
                failed: false,
            },
        ));
        t += length;
        events.push((t, t, Body::RegionLeave { name: name.as_str().into() }));
    }
    write_handmade(dir, &[events]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn chrome_names_and_dates_read_back_exactly(
        spans in prop::collection::vec((any::<String>(), 0u64..5_000_000_000, 0u64..3_000_000), 1..6)
    ) {
        let dir = scratch("prop-chrome");
        regions_trace(&dir, &spans);
        let (text, _) = export(&dir, write_chrome);
        let (events, other) = chrome_events(&text);
        let origin = other["time_origin_ns"].as_u64().unwrap();
        prop_assert_eq!(origin, T);
        let begins: Vec<_> = events.iter().filter(|e| e["ph"] == "B").collect();
        // One event a line: the dates of the slices as written.
        // The barriers' slices, after the init's.
        let slices: Vec<(&str, &str)> = text
            .lines()
            .filter(|l| l.contains("\"ph\":\"X\"") && l.contains("\"barrier\""))
            .map(|l| (field(l, "\"ts\":"), field(l, "\"dur\":")))
            .collect();
        prop_assert_eq!(begins.len(), spans.len());
        prop_assert_eq!(slices.len(), spans.len());
        let mut t = 0u64;
        for ((name, gap, length), (begin, (ts, dur))) in spans.iter().zip(begins.iter().zip(&slices)) {
            t += gap;
            prop_assert_eq!(begin["name"].as_str().unwrap(), name.as_str());
            prop_assert_eq!(begin["args"]["location"].as_str().unwrap(), name.as_str());
            prop_assert_eq!(ns(&begin["ts"]), t as i64);
            prop_assert_eq!(*ts, format!("{}.{:03}", t / 1000, t % 1000));
            prop_assert_eq!(*dur, format!("{}.{:03}", length / 1000, length % 1000));
            t += length;
        }
    }
}

#[test]
fn pj_dump_accepts_names_with_quotes_and_spaces() {
    let dir = scratch("paje-names");
    let spans: Vec<(String, u64, u64)> =
        ["a \"quoted\" name", "tab\there", "ünï cödé", ""].iter().map(|n| (n.to_string(), 10, 100)).collect();
    regions_trace(&dir, &spans);
    let (text, _) = export(&dir, write_paje);
    let rows = pj_dump(&write_text(&dir, "names.paje", &text));
    let regions: Vec<&str> =
        rows.iter().filter(|r| r[0] == "State" && r[2] == "region").map(|r| r[7].as_str()).collect();
    assert_eq!(regions, vec!["a 'quoted' name", "tab here", "ünï cödé", "(unnamed)"]);
}

#[test]
fn a_wait_for_a_receive_carries_the_message_in_every_format() {
    let dir = scratch("wait");
    let done = Completion { is_recv: true, src: 0, tag: 5, bytes: 64, arrived: true };
    write_handmade(
        &dir,
        &[
            vec![
                (T, T, Body::Init),
                (T + 10, T + 20, Body::Isend { dest: 1, tag: 5, comm: 0, bytes: 64, seq: 0, request: 0 }),
            ],
            vec![
                (T, T, Body::Init),
                (T + 5, T + 6, Body::Irecv { src: u32::MAX, tag: u32::MAX, comm: 0, request: 7 }),
                (T + 30, T + 40, Body::Wait { request: 7, comm: 0, completion: done, failed: false }),
            ],
        ],
    );
    let (text, _) = export(&dir, write_chrome);
    let (events, _) = chrome_events(&text);
    let irecv = events.iter().find(|e| e["name"] == "irecv").unwrap();
    assert_eq!((&irecv["args"]["peer"], &irecv["args"]["tag"]), (&Value::from("any"), &Value::from("any")));
    let wait = events.iter().find(|e| e["name"] == "wait").unwrap();
    assert_eq!(wait["args"]["completed"], "recv");
    assert_eq!(
        (&wait["args"]["peer"], &wait["args"]["bytes"], &wait["args"]["msg"]),
        (&Value::from(0), &Value::from(64), &Value::from(0))
    );
    let (text, _) = export(&dir, write_picl);
    let records = parse_picl(&text);
    let posted = records.iter().find(|r| r.record == -3 && r.event == -57).unwrap();
    assert_eq!(posted.data, vec![-1, -1, 0]);
    let got = records.iter().find(|r| r.record == -4 && r.event == -61).unwrap();
    assert_eq!(got.data, vec![64, 5, 0, 0]);
}

/// Calls that failed (a peer died, the job was stopped) are drawn with
/// their duration, named failed, and carry no message in any format; the
/// half of a sendrecv that did not fail keeps its message. Rank 0: a
/// sendrecv whose send rank 1 received and whose receive failed, then a
/// failed wait; rank 1: that receive, then a failed receive from any rank.
#[test]
fn failed_calls_are_drawn_failed_with_no_message_in_every_text_format() {
    let dir = scratch("failed");
    let send = Body::Send { dest: 1, tag: 3, comm: 0, bytes: 8, seq: 1, failed: false, sync: false };
    let recv = |src, tag, bytes, sendrecv, failed| Body::Recv {
        src,
        tag,
        comm: 0,
        bytes,
        arrived: false,
        sendrecv,
        failed,
        any_source: false,
    };
    let waited_for = Completion { is_recv: true, src: 1, tag: 5, bytes: 0, arrived: false };
    write_handmade(
        &dir,
        &[
            vec![
                (T, T, Body::Init),
                (T + 100, T + 900, send),
                (T + 100, T + 900, recv(1, 4, 0, true, true)),
                (T + 950, T + 960, Body::Irecv { src: 1, tag: 5, comm: 0, request: 7 }),
                (T + 1_000, T + 3_000, Body::Wait { request: 7, comm: 0, completion: waited_for, failed: true }),
            ],
            vec![
                (T, T, Body::Init),
                (T + 200, T + 300, recv(0, 3, 8, false, false)),
                (T + 400, T + 3_000, recv(grappe_trace::ANY, -1, 0, false, true)),
            ],
        ],
    );
    let (text, summary) = export(&dir, write_chrome);
    assert_eq!(summary.messages, 1, "the sendrecv's send, received");
    let (events, _) = chrome_events(&text);
    let flow_ends = |ph: &str| events.iter().filter(|e| e["ph"] == ph).map(rank_of).collect::<Vec<_>>();
    assert_eq!((flow_ends("s"), flow_ends("f")), (vec![0], vec![1]), "one arrow, from the sendrecv's send");
    let slice =
        |name: &str| events.iter().find(|e| e["ph"] == "X" && e["name"] == name).unwrap_or_else(|| panic!("{name}"));
    let pair = &slice("sendrecv (failed)")["args"];
    assert_eq!(
        (&pair["recv_failed"], &pair["send_msg"], &pair["recvtag"]),
        (&Value::from(true), &Value::from(0), &Value::from(4))
    );
    assert!(
        pair.get("send_failed").is_none() && pair.get("recv_msg").is_none() && pair.get("arrived").is_none(),
        "{pair}"
    );
    let wait = &slice("wait (failed)")["args"];
    assert_eq!(
        (&wait["failed"], &wait["waited_for"], &wait["peer"], &wait["tag"]),
        (&Value::from(true), &Value::from("recv"), &Value::from(1), &Value::from(5))
    );
    let failed_recv = slice("recv (failed)");
    assert_eq!((rank_of(failed_recv), ns(&failed_recv["dur"])), (1, 2_600), "drawn with its duration");
    let args = &failed_recv["args"];
    assert_eq!(
        (&args["peer"], &args["tag"], &args["bytes"], &args["failed"]),
        (&Value::from("any"), &Value::from("any"), &Value::from(0), &Value::from(true))
    );
    assert!(args.get("msg").is_none(), "{args}");

    let (text, summary) = export(&dir, write_paje);
    assert_eq!(summary.messages, 1);
    let rows = pj_dump(&write_text(&dir, "failed.paje", &text));
    let states = |rank: &str| -> Vec<String> {
        rows.iter().filter(|r| r[0] == "State" && r[1] == rank && r[2] == "call").map(|r| r[7].clone()).collect()
    };
    assert_eq!(states("rank 0"), ["init", "sendrecv (failed)", "irecv", "wait (failed)"]);
    assert_eq!(states("rank 1"), ["init", "recv", "recv (failed)"]);
    assert_eq!(rows.iter().filter(|r| r[0] == "Link").count(), 1);

    let (text, summary) = export(&dir, write_picl);
    assert_eq!(summary.blocks, ["init", "recv (failed)", "wait (failed)"].map(str::to_owned));
    let records = parse_picl(&text);
    let count = |event: i64| records.iter().filter(|r| r.record == -3 && r.event == event).count();
    // The send and the receive that took it; the failed calls are blocks.
    assert_eq!((count(-21), count(-52), count(-61), count(2), count(3)), (1, 1, 0, 2, 1));
    check_picl_messages(&records, 1);
}

/// A program that leaves its regions out of order (`outer` left while
/// `inner` is open): every export closes them as OTF2 and the profile do,
/// `outer` and the regions entered inside it at `outer`'s leave, and
/// ignores the later leave of `inner`. A viewer popping its latest region
/// would otherwise end `inner` first and draw the barrier inside `outer`.
#[test]
fn regions_left_out_of_order_end_alike_in_every_export() {
    let region = |name: &str, enter: bool| match enter {
        true => Body::RegionEnter { name: name.into(), location: "here".into() },
        false => Body::RegionLeave { name: name.into() },
    };
    let barrier = Body::Collective {
        op: grappe_trace::CollectiveKind::Barrier,
        comm: 0,
        root: u32::MAX,
        bytes: 0,
        failed: false,
    };
    let rank = vec![
        (T, T, Body::Init),
        (T + 10, T + 10, region("outer", true)),
        (T + 20, T + 20, region("inner", true)),
        (T + 30, T + 30, region("outer", false)),
        (T + 40, T + 50, barrier),
        (T + 60, T + 60, region("inner", false)),
        (T + 100, T + 100, Body::Finalize),
    ];
    let dir = scratch("out-of-order");
    write_handmade(&dir, &[rank]);

    let (text, _) = export(&dir, write_chrome);
    let (events, _) = chrome_events(&text);
    let mut open = Vec::new();
    let mut spans = Vec::new();
    for e in events.iter().filter(|e| e["ph"] == "B" || e["ph"] == "E") {
        match e["ph"].as_str() {
            Some("B") => open.push((e["name"].as_str().unwrap().to_owned(), ns(&e["ts"]))),
            _ => spans.push((open.pop().expect("an E with no B"), ns(&e["ts"]))),
        }
    }
    let expected = [(("inner".to_owned(), 20), 30), (("outer".to_owned(), 10), 30)];
    assert_eq!((spans.as_slice(), open.len()), (&expected[..], 0), "Chrome");

    let (text, _) = export(&dir, write_paje);
    let rows = pj_dump(&write_text(&dir, "regions.paje", &text));
    let mut states: Vec<(&str, &str, &str)> = rows
        .iter()
        .filter(|r| r[0] == "State" && r[2] == "region")
        .map(|r| (r[7].as_str(), r[3].as_str(), r[4].as_str()))
        .collect();
    states.sort();
    assert_eq!(states, [("inner", "0.000000020", "0.000000030"), ("outer", "0.000000010", "0.000000030")], "Pajé");

    let (text, summary) = export(&dir, write_picl);
    let block = |name: &str| summary.blocks.iter().position(|b| b == &format!("region {name}")).unwrap() as i64 + 1;
    let ends: Vec<(i64, i64)> = parse_picl(&text)
        .iter()
        .filter(|r| r.record == -4 && [block("outer"), block("inner")].contains(&r.event))
        .map(|r| (r.event, (r.date * 1e9).round() as i64))
        .collect();
    assert_eq!(ends, [(block("inner"), 30), (block("outer"), 30)], "PICL");
}

/// Ranks whose first events come in another order than their numbers
/// (3, 0, 1, 2) are still drawn in rank order: every rank's container
/// is created at the start, in rank order, which is the order ViTE
/// draws their lanes in.
#[test]
fn paje_lists_the_ranks_in_rank_order_whatever_their_first_event() {
    let dir = scratch("rank-order");
    let first_at = [T + 100, T + 200, T + 300, T];
    let ranks: Vec<Vec<(u64, u64, Body)>> =
        first_at.iter().map(|&t| vec![(t, t + 10, Body::Init), (T + 1_000, T + 1_010, Body::Finalize)]).collect();
    write_handmade(&dir, &ranks);
    let (text, _) = export(&dir, write_paje);
    let created: Vec<&str> = text.lines().filter(|l| l.starts_with("6 ") && l.contains(" RANK job ")).collect();
    let expected: Vec<String> = (0..4).map(|r| format!("6 0.000000000 r{r} RANK job \"rank {r}\"")).collect();
    assert_eq!(created, expected);
    let paje = write_text(&dir, "order.paje", &text);
    // pj_dump reads it (it lists containers by name, whatever their order).
    let rows = pj_dump(&paje);
    assert_eq!(rows.iter().filter(|r| r[0] == "Container" && r[2] == "rank").count(), 4);
    // ViTE draws the lanes top down in the order of their creation.
    let drawing = vite_drawing(&paje);
    let lane_y = |rank: u32| -> f64 {
        let label = drawing.lines().find(|l| l.ends_with(&format!(">rank {rank}</text>"))).expect("a lane per rank");
        label.split(" y=\"").nth(1).and_then(|rest| rest.split('"').next()).unwrap().parse().unwrap()
    };
    let heights: Vec<f64> = (0..4).map(lane_y).collect();
    assert!(heights.is_sorted(), "ViTE's lanes top down in rank order: {heights:?}");
}
