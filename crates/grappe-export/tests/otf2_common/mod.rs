//! Exports read back by the real `otf2-print` (Debian `otf2-tools`), and
//! what every archive must satisfy whatever it holds.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

pub use grappe_analysis::stream::Window;
use grappe_analysis::{CausalStream, GlobalOptions, GlobalTime, TraceSet};
use grappe_export::otf2::{OPEN_LOCATIONS, Otf2Error, Otf2Summary, write_otf2, write_otf2_open_at_most};

/// A fresh directory for one test.
pub fn scratch(name: &str) -> grappe_testkit::Scratch {
    grappe_testkit::scratch(&format!("otf2-{name}"))
}

/// Exports the traces in `traces` as `out/name.otf2`.
pub fn export(traces: &Path, out: &Path, name: &str) -> Result<Otf2Summary, Otf2Error> {
    export_open_at_most(traces, out, name, OPEN_LOCATIONS)
}

/// [`export`], a merged file read once per group of `open_locations` ranks.
pub fn export_open_at_most(
    traces: &Path,
    out: &Path,
    name: &str,
    open_locations: u32,
) -> Result<Otf2Summary, Otf2Error> {
    let set = TraceSet::open(traces).unwrap();
    let time = GlobalTime::estimate(&set, &GlobalOptions::default()).unwrap();
    write_otf2_open_at_most(&set, &|| CausalStream::open(&set, &time), out, name, open_locations, &mut |_| {})
}

/// [`export`] of an interval of the run.
pub fn export_window(traces: &Path, out: &Path, name: &str, window: Window) -> Result<Otf2Summary, Otf2Error> {
    let set = TraceSet::open(traces).unwrap();
    let time = GlobalTime::estimate(&set, &GlobalOptions::default()).unwrap();
    write_otf2(&set, &|| Ok(CausalStream::open(&set, &time)?.windowed(window)), out, name, &mut |_| {})
}

/// `otf2-print ARGS ANCHOR`'s output; fails the test if it fails.
pub fn otf2_print(args: &[&str], anchor: &Path) -> String {
    let out = match Command::new("otf2-print").args(args).arg(anchor).output() {
        Ok(out) => out,
        Err(e) => panic!(
            "cannot run otf2-print ({e}): the OTF2 export is checked by the real reader; \
             run scripts/install-deps (Debian package otf2-tools)"
        ),
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "otf2-print {args:?} {} failed ({}):\n{stderr}", anchor.display(), out.status);
    assert!(stderr.trim().is_empty(), "otf2-print {args:?} warned:\n{stderr}");
    String::from_utf8(out.stdout).expect("otf2-print prints UTF-8 here")
}

/// One event line of `otf2-print`.
#[derive(Debug, Clone)]
pub struct Line {
    pub kind: String,
    pub location: u64,
    pub time: u64,
    /// The rest of the line (`Region: "MPI_Send" <5>`...).
    pub attrs: String,
}

/// The events of an archive, as `otf2-print -Werror` reads them (after
/// a first reading with the local definitions and their mappings, which
/// the plain event print does not open).
pub fn events(anchor: &Path) -> Vec<Line> {
    otf2_print(&["-Werror", "-M", "--silent"], anchor);
    otf2_print(&["-Werror"], anchor)
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let kind = it.next()?.to_owned();
            let location = it.next()?.parse().ok()?;
            let time = it.next()?.parse().ok()?;
            let attrs = it.collect::<Vec<_>>().join(" ");
            Some(Line { kind, location, time, attrs })
        })
        .collect()
}

/// Lines of each kind.
pub fn kinds(lines: &[Line]) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for l in lines {
        *counts.entry(l.kind.clone()).or_insert(0) += 1;
    }
    counts
}

/// What OTF2 readers rely on, per location: timestamps never go back,
/// every Leave closes the innermost open region, nothing is left open.
/// Returns the events of each location.
pub fn check_timelines(lines: &[Line]) -> BTreeMap<u64, u64> {
    let mut last: BTreeMap<u64, u64> = BTreeMap::new();
    let mut open: BTreeMap<u64, Vec<&str>> = BTreeMap::new();
    let mut counts = BTreeMap::new();
    for l in lines {
        *counts.entry(l.location).or_insert(0) += 1;
        let prev = last.insert(l.location, l.time).unwrap_or(0);
        assert!(l.time >= prev, "location {}: {} at {} after an event at {prev}", l.location, l.kind, l.time);
        let stack = open.entry(l.location).or_default();
        match l.kind.as_str() {
            "ENTER" => stack.push(&l.attrs),
            "LEAVE" => {
                let entered = stack.pop();
                assert_eq!(entered, Some(l.attrs.as_str()), "location {}: leave at {} not nested", l.location, l.time);
            }
            _ => {}
        }
    }
    for (location, stack) in open {
        assert!(stack.is_empty(), "location {location}: regions left open: {stack:?}");
    }
    counts
}

/// The `# Events` of each LOCATION definition (`otf2-print -G`).
pub fn defined_locations(anchor: &Path) -> BTreeMap<u64, u64> {
    otf2_print(&["-G"], anchor)
        .lines()
        .filter(|l| l.starts_with("LOCATION "))
        .map(|l| {
            let id = l.split_whitespace().nth(1).and_then(|s| s.parse().ok()).expect("a location id");
            let events = l.split("# Events: ").nth(1).and_then(|s| s.split(',').next()).and_then(|s| s.parse().ok());
            (id, events.expect("an event count"))
        })
        .collect()
}
