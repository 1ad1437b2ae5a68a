//! `GRAPPE_TRACE_EXTRA_COST_NS`: heavy instrumentation emulated by a busy
//! wait in the recording of every event, counted in its α, so that
//! probe-effect compensation can be tried on a cost far above noise.

use std::time::Instant;

use grappe_settings::Vars;
use grappe_trace::{EventKind, FlushPolicy, Identity, RawEvent, Recorder, RecorderConfig, TraceFile};

const EXTRA_NS: u32 = 300_000;

fn recorder(dir: &std::path::Path, extra_cost_ns: u32) -> Recorder {
    recorder_with(dir, extra_cost_ns, FlushPolicy::Full)
}

fn recorder_with(dir: &std::path::Path, extra_cost_ns: u32, policy: FlushPolicy) -> Recorder {
    let config = RecorderConfig { dir: dir.to_owned(), policy, buffer_events: 64, extra_cost_ns };
    let who = Identity { rank: 0, world_size: 1, process_ranks: vec![0], job: "extra".into(), thread: None };
    Recorder::create(&config, who, None).unwrap()
}

#[test]
fn every_event_costs_the_extra_time_and_its_alpha_says_so() {
    let dir = grappe_testkit::scratch("extra-cost");
    let mut rec = recorder(&dir, EXTRA_NS);
    let started = Instant::now();
    let (name, site) = (rec.intern("step"), rec.intern("here:1"));
    for _ in 0..10 {
        let now = rec.now();
        rec.record(RawEvent {
            kind: EventKind::Point.id(),
            start: now,
            end: now,
            a: name,
            b: site,
            ..RawEvent::default()
        });
    }
    let spent = started.elapsed();
    assert!(spent.as_nanos() >= 10 * u128::from(EXTRA_NS), "10 events took {spent:?}");
    rec.finish().unwrap();

    let trace = TraceFile::open(&grappe_trace::file_for(&dir, 0)).unwrap();
    for calibration in &trace.header().calibration {
        let flush = calibration.kind.starts_with("flush");
        let counted = calibration.alpha_ns >= EXTRA_NS;
        assert!(counted != flush, "{}: α {} ns", calibration.kind, calibration.alpha_ns);
    }
    let events = trace.events().collect::<Result<Vec<_>, _>>().unwrap();
    let points: Vec<_> = events.iter().filter(|e| matches!(e.body, grappe_trace::Body::Point { .. })).collect();
    assert_eq!(points.len(), 10);
    assert!(points.iter().all(|e| e.alpha_ns >= EXTRA_NS), "{points:?}");
    for pair in points.windows(2) {
        assert!(pair[1].start - pair[0].start >= u64::from(EXTRA_NS), "events closer than their cost: {pair:?}");
    }
}

/// The α of an event counts what its busy wait really took, measured as
/// it ran, not its nominal length: at least the length, and no more than
/// the time between the event's end and the next event's start, in which
/// the wait ran (a wait that overshoots, or that the scheduler interrupts,
/// is counted whole; the header keeps the nominal figure). The buffer
/// is written several times, in place or by the writer thread: each
/// event keeps its own wait's figure through the flushes.
#[test]
fn each_event_s_alpha_is_its_wait_as_measured_in_place() {
    for policy in [FlushPolicy::Full, FlushPolicy::Thread] {
        waits_are_measured_with(policy);
    }
}

fn waits_are_measured_with(policy: FlushPolicy) {
    const EXTRA: u32 = 20_000;
    let dir = grappe_testkit::scratch(&format!("extra-cost-measured-{policy:?}"));
    let mut rec = recorder_with(&dir, EXTRA, policy);
    let (name, site) = (rec.intern("step"), rec.intern("here:1"));
    let point = |rec: &Recorder| {
        let now = rec.now();
        RawEvent { kind: EventKind::Point.id(), start: now, end: now, a: name, b: site, ..RawEvent::default() }
    };
    for i in 0..200 {
        let event = point(&rec);
        rec.record(event);
        if i % 2 == 0 {
            // Time the program spends between events: not the wait's.
            let until = Instant::now() + std::time::Duration::from_micros(30);
            while Instant::now() < until {}
        }
    }
    rec.finish().unwrap();

    let trace = TraceFile::open(&grappe_trace::file_for(&dir, 0)).unwrap();
    let nominal = trace.header().calibration.iter().find(|c| c.kind == "point").expect("a point's α").alpha_ns;
    let recording = u64::from(nominal - EXTRA);
    let events = trace.events().collect::<Result<Vec<_>, _>>().unwrap();
    let points: Vec<_> = events.iter().filter(|e| matches!(e.body, grappe_trace::Body::Point { .. })).collect();
    assert_eq!(points.len(), 200, "{policy:?}");
    let flushes = events.iter().filter(|e| e.body.kind() == EventKind::FlushEnd).count();
    assert!(flushes >= 2, "{policy:?}: the buffer was written {flushes} times during the run");
    for pair in points.windows(2) {
        let waited = u64::from(pair[0].alpha_ns) - recording;
        assert!(waited >= u64::from(EXTRA), "a wait counted shorter than its length: {pair:?}");
        assert!(waited <= pair[1].start - pair[0].end, "a wait counted longer than it could have run: {pair:?}");
    }
}

#[test]
fn the_setting_is_read_and_nonsense_is_refused() {
    let lookup = |value: &'static str| {
        move |name: &str| match name {
            "GRAPPE_TRACE" => Some("/tmp/t".into()),
            "GRAPPE_TRACE_EXTRA_COST_NS" => Some(value.into()),
            _ => None,
        }
    };
    let read = |value: &'static str| RecorderConfig::from_vars(Vars::from_lookup(&lookup(value)));
    assert_eq!(read("2500").unwrap().unwrap().extra_cost_ns, 2500);
    for bad in ["-1", "lots", "2000000000"] {
        let error = read(bad).unwrap_err().to_string();
        assert!(error.contains("GRAPPE_TRACE_EXTRA_COST_NS") && error.contains(bad), "{error}");
    }
}
