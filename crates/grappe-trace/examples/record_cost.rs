//! The cost of recording one event in a tight loop, as a runtime call
//! records it (two clock reads, a 56-byte record, buffer flushes to the
//! file included), against the α the recorder calibrated and wrote in the
//! file header.
//!
//!     cargo run --release -p grappe-trace --example record_cost [EVENTS_PER_BATCH] [BATCHES]
//!
//! Prints one line per policy: median and quartiles over the batches, in
//! ns per event, and the calibrated α of a timed event (`send`).

use std::time::Instant;

use grappe_trace::{FlushPolicy, Identity, RawEvent, Recorder, RecorderConfig, TraceFile, file_for};

fn main() {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<usize>().expect("a number"));
    let per_batch = args.next().unwrap_or(1 << 20);
    let batches = args.next().unwrap_or(21);
    let dir = std::env::temp_dir().join(format!("grappe-record-cost-{}", std::process::id()));
    for (name, policy) in [("full", FlushPolicy::Full), ("thread", FlushPolicy::Thread), ("end", FlushPolicy::End)] {
        // Policy `end` keeps everything in memory: its buffer holds every
        // batch, so that no event is dropped (a drop costs less).
        let buffer_events = if policy == FlushPolicy::End { per_batch * batches } else { 65536 };
        let config = RecorderConfig { dir: dir.join(name), policy, buffer_events, extra_cost_ns: 0 };
        let who = Identity { rank: 0, world_size: 1, process_ranks: vec![0], job: "record-cost".into(), thread: None };
        let mut rec = Recorder::create(&config, who, None).expect("a recorder");
        let mut per_event: Vec<f64> = (0..batches).map(|_| batch(&mut rec, per_batch)).collect();
        rec.finish().expect("the trace completes");
        per_event.sort_by(f64::total_cmp);
        let q = |f: f64| per_event[((per_event.len() - 1) as f64 * f).round() as usize];
        let trace = TraceFile::open(&file_for(&config.dir, 0)).expect("the trace reads back");
        let alpha = trace.header().calibration.iter().find(|c| c.kind == "send").map_or(0, |c| c.alpha_ns);
        println!(
            "record_cost policy={name} events_per_batch={per_batch} batches={batches} median_ns={:.2} q1_ns={:.2} q3_ns={:.2} calibrated_alpha_ns={alpha}",
            q(0.5),
            q(0.25),
            q(0.75)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    floors(per_batch, batches);
}

/// What part of the cost is the clock: a loop of clock reads alone, and
/// of point events (one read and a record each), policy `end` with a
/// buffer that holds them all, as for the timed events: every one is
/// stored, none dropped.
fn floors(per_batch: usize, batches: usize) {
    let config = RecorderConfig {
        dir: std::env::temp_dir().join(format!("grappe-record-cost-floor-{}", std::process::id())),
        policy: FlushPolicy::End,
        buffer_events: per_batch * batches,
        extra_cost_ns: 0,
    };
    let who = Identity { rank: 0, world_size: 1, process_ranks: vec![0], job: "record-cost".into(), thread: None };
    let mut rec = Recorder::create(&config, who, None).expect("a recorder");
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let clock = median((0..batches).map(|_| clock_reads(&rec, per_batch)).collect());
    let point = median((0..batches).map(|_| points(&mut rec, per_batch)).collect());
    println!("record_cost clock_read_ns={clock:.2} point_event_ns={point:.2}");
    drop(rec);
    let _ = std::fs::remove_dir_all(&config.dir);
}

fn clock_reads(rec: &Recorder, n: usize) -> f64 {
    let t0 = Instant::now();
    let mut sum = 0u64;
    for _ in 0..n {
        sum = sum.wrapping_add(std::hint::black_box(rec.now()));
    }
    std::hint::black_box(sum);
    t0.elapsed().as_nanos() as f64 / n as f64
}

/// Point events, one clock read each.
fn points(rec: &mut Recorder, n: usize) -> f64 {
    let t0 = Instant::now();
    for i in 0..n {
        let start = rec.now();
        rec.record(RawEvent { start, end: start, kind: 3, a: 1, b: 7, c: 0, d: 8, e: i as u64, ..RawEvent::default() });
    }
    t0.elapsed().as_nanos() as f64 / n as f64
}

/// Records `n` timed events as fast as possible, each with its call site
/// as the runtime records one; ns per event.
fn batch(rec: &mut Recorder, n: usize) -> f64 {
    let t0 = Instant::now();
    for i in 0..n {
        let start = rec.now();
        let end = rec.now();
        let site = rec.site(std::panic::Location::caller());
        rec.record(RawEvent { start, end, kind: 3, a: 1, b: 7, c: 0, d: 8, e: i as u64, site, ..RawEvent::default() });
    }
    t0.elapsed().as_nanos() as f64 / n as f64
}
