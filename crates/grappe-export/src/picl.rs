//! "New" PICL trace records, the input of ParaGraph.
//!
//! ParaGraph reads the PICL format of ORNL/TM-12125 (Worley, "A new PICL
//! trace file format"), which Tape/PVM's `t2np` wrote. That report is not
//! at hand; the records below follow the PICL generator of LANL's
//! coNCePTuaL (`codegen_picl.py`, whose user guide shows its output) and
//! the digest in `shared/reference/monitoring-cluster-programs-chapter.md`.
//! One ASCII line per record, sorted by date:
//!
//! ```text
//! RECORD EVENT DATE NODE 0 N [2 D1 .. DN]
//! ```
//!
//! `RECORD` is `-3` (an event begins) or `-4` (it ends); `DATE` is in
//! seconds from the first event, nine decimals; `NODE` is the rank; the
//! process field is 0; `N` counts the data fields, all integers (data type
//! `2`). Events:
//!
//! | event | what | data at `-3` | data at `-4` |
//! |---|---|---|---|
//! | `-901` | tracing of the rank (its first record … finalize's end) | — | — |
//! | `-21` | blocking send | bytes, tag, destination, communicator | — |
//! | `-27` | non-blocking send | bytes, tag, destination, communicator | request |
//! | `-52` | blocking receive | tag, source, communicator | bytes, tag, source, communicator |
//! | `-57` | non-blocking receive posted | tag, source, communicator | request |
//! | `-31` | wait (or test) completing a send | request | — |
//! | `-61` | wait (or test) completing a receive | request | bytes, tag, source, communicator |
//! | `-402` | barrier | subset | — |
//! | `-785` | broadcast | bytes, root, subset | bytes |
//! | `-790` | reduce | bytes, root, subset | bytes (−1 off the root) |
//! | `-782` | allreduce | bytes, subset | subset |
//! | `k > 0` | user block `k` | — | — |
//!
//! A wildcard source or tag is `-1`; a root is a world rank (a node). A
//! subset is `-1` for the world communicator, else a number for each
//! communicator, from 1 in the order they are created, defined once by a
//! `-202 -812 DATE -1 -1 N+1 2 NUMBER MEMBERS..` record when the first
//! member creates it: not the context id, which the disjoint parts of a
//! split share (see [`Comms`]). User regions, the other collectives, and
//! the calls PICL has no event for (init, finalize, probes, tests that
//! complete nothing, communicator creation, trace flushes) are user
//! blocks, numbered from 1 in first-use
//! order ([`ExportSummary::blocks`] names them). A call that failed (a
//! peer died, the job was stopped) is a block of its own, `recv (failed)`,
//! with no message: ParaGraph would pair it. Counters and points have
//! no PICL counterpart and are left out. ParaGraph derives busy, overhead
//! and idle time from these records itself.

use std::io::Write;

use grappe_analysis::{CausalStream, Comms, Linked, Message, PerRank, Result};
use grappe_trace::{ANY, Body, CollectiveKind, Event, Members};
use rustc_hash::FxHashMap;

use crate::order::{Ordered, RankClocks, Reorder, run};
use crate::shape::{FAILED_MARK, Shape, shape};
use crate::sink::{NUMBER_ROOM, RECORD_ROOM, Sink, with_sink};
use crate::summary::ExportSummary;

/// Seconds: nine decimals of nanoseconds.
const SECONDS: u32 = 9;

/// The world communicator's context id (subset -1: every task).
const WORLD: u32 = 0;

/// Writes `stream` to `out` as PICL records. `progress` gets the events
/// read so far, now and then and at the end.
pub fn write_picl(
    stream: CausalStream,
    out: &mut (dyn Write + Send),
    progress: &mut dyn FnMut(u64),
) -> Result<ExportSummary> {
    with_sink(out, "picl trace output", |mut sink| {
        let mut picl = Picl::default();
        let run = run(stream, &mut picl, &mut sink, progress, |picl, _, origin| picl.origin = origin)?;
        let written_bytes = sink.finish()?;
        Ok(ExportSummary {
            events: run.events,
            messages: picl.messages,
            written_bytes,
            late_records: run.late,
            blocks: picl.blocks.legend,
            stream: run.summary,
        })
    })
}

/// A dated PICL record, before it is written.
enum Record {
    /// `-3`/`-4 EVENT DATE NODE 0 N [2 DATA..]`.
    Event { begin: bool, event: i32, rank: u32, data: Data },
    /// A communicator's members.
    Subset { id: u32, members: Members },
}

/// Up to four integers.
#[derive(Clone, Copy, Default)]
struct Data {
    values: [i64; 4],
    len: u8,
}

impl Data {
    fn of(values: &[i64]) -> Data {
        let mut data = Data::default();
        for (slot, &v) in data.values.iter_mut().zip(values) {
            *slot = v;
            data.len += 1;
        }
        data
    }
}

#[derive(Default)]
struct Picl {
    origin: u64,
    clocks: RankClocks,
    lanes: PerRank<Lane>,
    blocks: Blocks,
    subsets: Subsets,
    messages: u64,
}

#[derive(Default)]
struct Lane {
    opened: bool,
    closed: bool,
    /// Region blocks open.
    regions: Vec<i32>,
}

/// User block numbers, by region name and by call name.
#[derive(Default)]
struct Blocks {
    regions: FxHashMap<String, i32>,
    /// By call name and whether the call failed.
    calls: FxHashMap<(&'static str, bool), i32>,
    legend: Vec<String>,
}

impl Blocks {
    fn region(&mut self, name: &str) -> i32 {
        if let Some(&k) = self.regions.get(name) {
            return k;
        }
        let k = self.next(format!("region {name}"));
        self.regions.insert(name.to_owned(), k);
        k
    }

    /// The block of call `name`, or of its failed calls (`recv (failed)`).
    fn call(&mut self, name: &'static str, failed: bool) -> i32 {
        if let Some(&k) = self.calls.get(&(name, failed)) {
            return k;
        }
        let k = self.next(if failed { format!("{name}{FAILED_MARK}") } else { name.to_owned() });
        self.calls.insert((name, failed), k);
        k
    }

    fn next(&mut self, label: String) -> i32 {
        self.legend.push(label);
        self.legend.len() as i32
    }
}

impl Ordered for Picl {
    type Record = Record;

    fn event(&mut self, linked: Linked, records: &mut Reorder<Record>) {
        let e = &linked.event;
        let rank = e.rank;
        let (start, end) = (self.clocks.at(rank, e.start), self.clocks.at(rank, e.end));
        let lane = self.lanes.get(rank);
        if !lane.opened {
            lane.opened = true;
            records.push(start, Record::Event { begin: true, event: -901, rank, data: Data::default() });
        }
        if matches!(linked.message, Message::Received { .. }) {
            self.messages += 1;
        }
        let mut span = |event: i32, at_begin: &[i64], at_end: &[i64]| {
            records.push(start, Record::Event { begin: true, event, rank, data: Data::of(at_begin) });
            records.push(end, Record::Event { begin: false, event, rank, data: Data::of(at_end) });
        };
        match shape(&e.body) {
            // A receive whose send is outside the window is a plain block:
            // ParaGraph pairs a channel's messages in order, and a receive
            // with no send would pair every later one with the wrong send.
            Shape::Call(name) if matches!(linked.message, Message::SendOutside { .. }) => {
                span(self.blocks.call(name, false), &[], &[])
            }
            // A failed call, likewise, and so that ParaGraph never pairs
            // it: a user block of its own, `recv (failed)`.
            Shape::Call(name) if e.body.failed() => span(self.blocks.call(name, true), &[], &[]),
            Shape::Call(name) => match call(e, &self.subsets) {
                Some((event, at_begin, at_end)) => span(event, at_begin.slice(), at_end.slice()),
                None => span(self.blocks.call(name, false), &[], &[]),
            },
            Shape::Enter { name, .. } => {
                let k = self.blocks.region(name);
                self.lanes.get(rank).regions.push(k);
                records.push(start, Record::Event { begin: true, event: k, rank, data: Data::default() });
            }
            Shape::Leave { name } => {
                // As every export closes regions (see `OpenRegions`): the
                // innermost of this name, and those entered inside it.
                let regions = &mut self.lanes.get(rank).regions;
                let open = self.blocks.regions.get(name).and_then(|k| regions.iter().rposition(|r| r == k));
                if let Some(i) = open {
                    for &k in regions[i..].iter().rev() {
                        records.push(start, Record::Event { begin: false, event: k, rank, data: Data::default() });
                    }
                    regions.truncate(i);
                }
            }
            Shape::Counter { .. } | Shape::Point { .. } | Shape::Mark(_) => {}
        }
        if matches!(e.body, Body::Finalize) {
            self.close_lane(rank, end, records);
        }
        if let Some((id, members)) = self.subsets.observe(rank, &e.body) {
            records.push(start, Record::Subset { id, members });
        }
    }

    fn write(&mut self, s: &mut Sink, t: u64, record: Record) {
        match record {
            Record::Event { begin, event, rank, data } => {
                let mut c = s.record(RECORD_ROOM);
                c.bytes(if begin { b"-3 " } else { b"-4 " });
                c.int(event as i64);
                c.byte(b' ');
                c.date(t, self.origin, SECONDS);
                c.byte(b' ');
                c.uint(rank as u64);
                c.bytes(b" 0 ");
                c.uint(data.len as u64);
                if data.len > 0 {
                    c.bytes(b" 2");
                    for &v in data.slice() {
                        c.byte(b' ');
                        c.int(v);
                    }
                }
                c.byte(b'\n');
            }
            Record::Subset { id, members } => {
                let mut c = s.record(RECORD_ROOM + NUMBER_ROOM * members.len());
                c.bytes(b"-202 -812 ");
                c.date(t, self.origin, SECONDS);
                c.bytes(b" -1 -1 ");
                c.uint(members.len() as u64 + 1);
                c.bytes(b" 2 ");
                c.uint(id as u64);
                for &m in members.iter() {
                    c.byte(b' ');
                    c.uint(m as u64);
                }
                c.byte(b'\n');
            }
        }
    }

    fn finish(&mut self, s: &mut Sink, end: u64) {
        let open: Vec<(u32, Vec<i32>)> =
            self.lanes.iter().filter(|(_, l)| l.opened && !l.closed).map(|(r, l)| (r, l.regions.clone())).collect();
        for (rank, regions) in open {
            for &k in regions.iter().rev() {
                self.write(s, end, Record::Event { begin: false, event: k, rank, data: Data::default() });
            }
            self.write(s, end, Record::Event { begin: false, event: -901, rank, data: Data::default() });
        }
    }
}

impl Picl {
    /// The end of `rank`'s tracing, after its finalize: the regions still
    /// open close there.
    fn close_lane(&mut self, rank: u32, at: u64, records: &mut Reorder<Record>) {
        let lane = self.lanes.get(rank);
        lane.closed = true;
        for k in lane.regions.drain(..).rev() {
            records.push(at, Record::Event { begin: false, event: k, rank, data: Data::default() });
        }
        records.push(at, Record::Event { begin: false, event: -901, rank, data: Data::default() });
    }
}

/// Subset numbers of the communicators created, by [`Comms`] number.
#[derive(Default)]
struct Subsets {
    comms: Comms,
    numbers: Vec<Option<u32>>,
    defined: u32,
}

impl Subsets {
    /// A communicator `rank` created: its subset number and members, if
    /// that is the first creation of this communicator.
    fn observe(&mut self, rank: u32, body: &Body) -> Option<(u32, Members)> {
        let c = self.comms.observe(rank, body)? as usize;
        let comm = self.comms.get(c as u32)?;
        if comm.id == WORLD || self.numbers.get(c).is_some_and(Option::is_some) {
            return None;
        }
        self.numbers.resize(self.numbers.len().max(c + 1), None);
        self.defined += 1;
        self.numbers[c] = Some(self.defined);
        Some((self.defined, comm.members?))
    }

    /// The subset of `rank`'s communicator `id` (`-1`: the world's, or one
    /// not defined) and its `root` as a world rank (`-1`: none).
    fn of(&self, rank: u32, id: u32, root: u32) -> (i64, i64) {
        let c = if id == WORLD { None } else { self.comms.find(rank, id) };
        let subset = c.and_then(|c| self.numbers.get(c as usize).copied().flatten());
        let root = match (root, c) {
            (ANY, _) => -1,
            (_, Some(c)) => self.comms.world_rank(c, root).map_or(-1, |w| w as i64),
            (_, None) => root as i64,
        };
        (subset.map_or(-1, |s| s as i64), root)
    }
}

impl Data {
    fn slice(&self) -> &[i64] {
        &self.values[..self.len as usize]
    }
}

/// The PICL event of a call and its data at begin and end, if PICL has
/// one.
fn call(e: &Event, subsets: &Subsets) -> Option<(i32, Data, Data)> {
    let sel = |v: u32| if v == ANY { -1 } else { v as i64 };
    let none = Data::default();
    Some(match e.body {
        Body::Send { dest, tag, comm, bytes, .. } => {
            (-21, Data::of(&[bytes as i64, tag as i64, dest as i64, comm as i64]), none)
        }
        Body::Isend { dest, tag, comm, bytes, request, .. } => {
            (-27, Data::of(&[bytes as i64, tag as i64, dest as i64, comm as i64]), Data::of(&[request as i64]))
        }
        Body::Recv { src, tag, comm, bytes, .. } => (
            -52,
            Data::of(&[tag as i64, sel(src), comm as i64]),
            Data::of(&[bytes as i64, tag as i64, sel(src), comm as i64]),
        ),
        Body::Irecv { src, tag, comm, request } => {
            (-57, Data::of(&[sel(tag), sel(src), comm as i64]), Data::of(&[request as i64]))
        }
        Body::Wait { request, comm, completion, .. }
        | Body::Test { request, comm, completion: Some(completion), .. } => {
            if completion.is_recv {
                let got = [completion.bytes as i64, completion.tag as i64, sel(completion.src), comm as i64];
                (-61, Data::of(&[request as i64]), Data::of(&got))
            } else {
                (-31, Data::of(&[request as i64]), none)
            }
        }
        Body::Collective { op, comm, root, bytes, .. } => {
            let (subset, root) = subsets.of(e.rank, comm, root);
            let bytes = bytes as i64;
            match op {
                CollectiveKind::Barrier => (-402, Data::of(&[subset]), none),
                CollectiveKind::Bcast => (-785, Data::of(&[bytes, root, subset]), Data::of(&[bytes])),
                CollectiveKind::Reduce => {
                    let got = if root == e.rank as i64 { bytes } else { -1 };
                    (-790, Data::of(&[bytes, root, subset]), Data::of(&[got]))
                }
                CollectiveKind::Allreduce => (-782, Data::of(&[bytes, subset]), Data::of(&[subset])),
                _ => return None,
            }
        }
        _ => return None,
    })
}
