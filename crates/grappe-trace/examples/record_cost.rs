//! The cost of recording one event in a tight loop, as a runtime call
//! records it (two clock reads, a 48-byte record, buffer flushes to the
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
        let config = RecorderConfig { dir: dir.join(name), policy, buffer_events: 65536 };
        let who = Identity { rank: 0, world_size: 1, process_ranks: vec![0] };
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
}

/// Records `n` timed events as fast as possible; ns per event.
fn batch(rec: &mut Recorder, n: usize) -> f64 {
    let t0 = Instant::now();
    for i in 0..n {
        let start = rec.now();
        let end = rec.now();
        rec.record(RawEvent { start, end, kind: 3, a: 1, b: 7, c: 0, d: 8, e: i as u64, ..RawEvent::default() });
    }
    t0.elapsed().as_nanos() as f64 / n as f64
}
