//! `GRAPPE_TRACE_EXTRA_COST_NS`: heavy instrumentation emulated by a busy
//! wait in the recording of every event, counted in its α, so that
//! probe-effect compensation can be tried on a cost far above noise.

use std::time::Instant;

use grappe_settings::Vars;
use grappe_trace::{EventKind, FlushPolicy, Identity, RawEvent, Recorder, RecorderConfig, TraceFile};

const EXTRA_NS: u32 = 300_000;

fn recorder(dir: &std::path::Path, extra_cost_ns: u32) -> Recorder {
    let config = RecorderConfig { dir: dir.to_owned(), policy: FlushPolicy::Full, buffer_events: 64, extra_cost_ns };
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
