//! Perfetto's own trace format: a protobuf `Trace` of `TracePacket`s
//! holding track events, which the Perfetto UI and `trace_processor`
//! load several times faster, and in far less memory, than the same trace
//! as JSON.
//!
//! The packets, in the order the causal stream gives the events:
//! - a track per process of the job (a `ProcessDescriptor`, pid = its
//!   number from 1, named after the job, its host and its pid) and a thread
//!   track per rank under it (a `ThreadDescriptor`, tid = rank + 1, named
//!   `rank N`), each described before its first event (see `places`:
//!   Perfetto keeps pid and tid 0 for the kernel's idle task, and sorts a
//!   process's threads by tid, so by rank);
//! - each runtime call as a slice, a `TYPE_SLICE_BEGIN` and a
//!   `TYPE_SLICE_END` on its rank's track, with its name (` (failed)`
//!   after it for a call that failed), a category (`point-to-point`,
//!   `request`, `collective`, `communicator`, `runtime`) and its attributes
//!   as debug annotations, the same keys as Chrome's `args` (peer, tag,
//!   bytes, communicator, message id..., and `site`, its source location).
//!   A send and the receive marked as its second half are one `sendrecv`
//!   slice, as in the other exports: a send waits for its rank's next
//!   event to know;
//! - user regions as slices (category `region`), user points and trace
//!   flush starts as `TYPE_INSTANT`s (`point`, `runtime`), with their
//!   source location as annotation `location`;
//! - counters as `TYPE_COUNTER` values on a counter track per rank and
//!   counter name, under the rank's track;
//! - each matched message as a flow: its id in the `flow_ids` of the
//!   send's slice begin and in the `terminating_flow_ids` of the receiving
//!   slice's end. Perfetto reads events in date order and binds a flow id
//!   to the slice the event begins or ends, so the arrow goes from the
//!   send to the receive whenever the send started before the receive
//!   ended (a tachyon, whose receive ends first, gets none, as in Chrome).
//!
//! Dates are the run's global time in nanoseconds (the packets'
//! `timestamp`, Perfetto's default clock). Within a rank they are made
//! nondecreasing in call order, so that its slices nest. Event names,
//! categories, annotation names and string values are interned on the
//! export's one packet sequence (see `sequence`): each string is written
//! once and then referred to by number.
//!
//! Like the Chrome export, it writes as the stream is read: the memory it
//! holds is a rank's open regions and held send, the counter tracks, and
//! at most 16 384 interned strings (`sequence::INTERNED_MAX`), whatever the
//! trace's length.

use std::borrow::Cow;
use std::io::Write;

use grappe_analysis::{CausalStream, Message, PerRank, Result};
use grappe_trace::{Body, Event};
use rustc_hash::FxHashMap;

use crate::args::{Args, LOCATION, call_args, sendrecv_args};
use crate::order::RankClocks;
use crate::places::Places;
use crate::shape::{FAILED_MARK, OpenRegions, Shape, shape};
use crate::sink::{Sink, with_sink};
use crate::summary::{ExportSummary, PROGRESS_EVERY};

mod annotations;
#[allow(missing_docs)] // Upstream's names, documented in Perfetto's .proto files.
pub mod proto;
mod sequence;

use annotations::Annotations;
use proto::{
    CounterDescriptor, Data, ProcessDescriptor, ThreadDescriptor, TracePacket, TrackDescriptor, TrackEvent, Type,
};
use sequence::{INTERNED_MAX, Sequence};

/// Writes `stream` to `out` as a Perfetto protobuf trace. `progress` gets
/// the events written so far, now and then and at the end.
pub fn write_perfetto(
    stream: CausalStream,
    out: &mut (dyn Write + Send),
    progress: &mut dyn FnMut(u64),
) -> Result<ExportSummary> {
    with_sink(out, "perfetto trace output", |sink| write_events(stream, sink, progress, INTERNED_MAX))
}

/// The writer; `interned_max` strings held at most.
fn write_events(
    mut stream: CausalStream,
    sink: Sink,
    progress: &mut dyn FnMut(u64),
    interned_max: usize,
) -> Result<ExportSummary> {
    let places = Places::of(&stream);
    let mut w = Perfetto {
        sink,
        sequence: Sequence::new(interned_max),
        described: vec![false; places.count()],
        places,
        lanes: PerRank::default(),
        clocks: RankClocks::default(),
        counters: FxHashMap::default(),
        packet: TracePacket::default(),
        events: 0,
        messages: 0,
    };
    while let Some(linked) = stream.next_event()? {
        w.event(linked.event, linked.message);
        if w.events % PROGRESS_EVERY == 0 {
            progress(w.events);
        }
        w.sink.maybe_flush()?;
    }
    progress(w.events);
    w.release_held_sends();
    let (events, messages) = (w.events, w.messages);
    let written_bytes = w.sink.finish()?;
    let stream = stream.summary();
    Ok(ExportSummary { events, messages, written_bytes, late_records: 0, blocks: Vec::new(), stream })
}

/// Track uuids: a rank's thread track is its rank + 1 (0 is Perfetto's
/// default track), processes and counters above every rank.
fn thread_track(rank: u32) -> u64 {
    rank as u64 + 1
}

fn process_track(process: u32) -> u64 {
    (1 << 32) + process as u64
}

fn counter_track(number: usize) -> u64 {
    (2 << 32) + number as u64
}

struct Perfetto<'a> {
    sink: Sink<'a>,
    sequence: Sequence,
    places: Places,
    /// Per process, whether its track was described.
    described: Vec<bool>,
    lanes: PerRank<Lane>,
    clocks: RankClocks,
    /// Counter tracks by rank and counter name (names are interned:
    /// their address and length name them, see `OpenRegions`).
    counters: FxHashMap<(u32, usize, usize), u64>,
    /// The packet being written, kept for its buffers.
    packet: TracePacket,
    events: u64,
    messages: u64,
}

/// A rank's track.
#[derive(Default)]
struct Lane {
    described: bool,
    regions: OpenRegions,
    /// The rank's last event when it is a send: written once the next
    /// event says whether it is a sendrecv's first half.
    held_send: Option<(Event, Message)>,
}

/// A slice as it is written: its rank, dates, name and category, and the
/// flows it starts and ends.
struct Slice<'a> {
    rank: u32,
    start: u64,
    end: u64,
    name: &'a str,
    category: &'static str,
    flow_out: Option<u64>,
    flow_in: Option<u64>,
}

impl Perfetto<'_> {
    fn event(&mut self, e: &Event, message: &Message) {
        self.events += 1;
        if !self.lanes.get(e.rank).described {
            self.describe_rank(e.rank);
        }
        if self.lanes.get(e.rank).held_send.is_some() && self.ends_held_send(e, message) {
            return;
        }
        match shape(&e.body) {
            Shape::Call(_) if matches!(e.body, Body::Send { .. }) => {
                self.lanes.get(e.rank).held_send = Some((*e, *message));
            }
            Shape::Call(name) => self.call(e, name, message),
            Shape::Enter { name, location } => {
                self.lanes.get(e.rank).regions.enter(name);
                let t = self.clocks.at(e.rank, e.start);
                self.begin_with_location(Type::SliceBegin, e.rank, t, name, "region", location);
            }
            Shape::Leave { name } => {
                let t = self.clocks.at(e.rank, e.start);
                for _ in 0..self.lanes.get(e.rank).regions.leave(name) {
                    self.end(e.rank, t, None);
                }
            }
            Shape::Counter { name, value } => self.counter(e, name, value),
            Shape::Point { name, location } => {
                let t = self.clocks.at(e.rank, e.start);
                self.begin_with_location(Type::Instant, e.rank, t, name, "point", location);
            }
            Shape::Mark(name) => {
                let t = self.clocks.at(e.rank, e.start);
                let event = self.track_event(Type::Instant, e.rank, name, "runtime");
                self.write_event(t, event, true);
            }
        }
    }

    /// Writes the rank's held send: as a sendrecv with `e` if `e` is its
    /// second half (then `e` is written: true), or alone (false).
    fn ends_held_send(&mut self, e: &Event, message: &Message) -> bool {
        let Some((send, sent)) = self.lanes.get(e.rank).held_send.take() else { return false };
        if !e.ends_sendrecv_of(&send) {
            self.call(&send, "send", &sent);
            return false;
        }
        let failed = send.body.failed() || e.body.failed();
        let name = if failed { failed_name("sendrecv") } else { Cow::Borrowed("sendrecv") };
        let slice = Slice {
            rank: e.rank,
            start: send.start,
            end: self.receive_end(e, message),
            name: &name,
            category: "point-to-point",
            flow_out: flow_out(&sent),
            flow_in: self.flow_in(message),
        };
        self.slice(slice, |a| sendrecv_args(a, (&send, &sent), (e, message), site(&send)));
        true
    }

    /// At the end of the stream: the sends still waiting for a next event.
    fn release_held_sends(&mut self) {
        let ranks: Vec<u32> = self.lanes.iter().filter(|(_, l)| l.held_send.is_some()).map(|(r, _)| r).collect();
        for rank in ranks {
            if let Some((send, sent)) = self.lanes.get(rank).held_send.take() {
                self.call(&send, "send", &sent);
            }
        }
    }

    /// A runtime call's slice, its attributes and flows.
    fn call(&mut self, e: &Event, name: &str, message: &Message) {
        let name = if e.body.failed() { failed_name(name) } else { Cow::Borrowed(name) };
        let slice = Slice {
            rank: e.rank,
            start: e.start,
            end: self.receive_end(e, message),
            name: &name,
            category: category(&e.body),
            flow_out: flow_out(message),
            flow_in: self.flow_in(message),
        };
        self.slice(slice, |a| call_args(a, &e.body, message, site(e)));
    }

    /// The message id a receive ends the flow of, counted.
    fn flow_in(&mut self, message: &Message) -> Option<u64> {
        let Message::Received { send, .. } = message else { return None };
        self.messages += 1;
        Some(send.id)
    }

    /// When a slice ends: its end, or for a receive that ends as its send
    /// starts while that send still waits for its rank's next event (so
    /// is written after it), a nanosecond later. Perfetto reads events of
    /// one date in file order, and would meet the flow's end before its
    /// start.
    fn receive_end(&mut self, e: &Event, message: &Message) -> u64 {
        let Message::Received { channel, send } = message else { return e.end };
        let held = &self.lanes.get(channel.src).held_send;
        let waits = matches!(held, Some((_, Message::Sent { id, .. })) if *id == send.id);
        if waits && e.end == send.start { e.end + 1 } else { e.end }
    }

    /// Writes a slice: its begin with its name, category, `args` and the
    /// flow it starts, its end with the flow it ends.
    fn slice(&mut self, s: Slice, args: impl FnOnce(&mut Annotations<'_>)) {
        let (start, end) = (self.clocks.at(s.rank, s.start), self.clocks.at(s.rank, s.end));
        let mut begin = self.track_event(Type::SliceBegin, s.rank, s.name, s.category);
        args(&mut Annotations { sequence: &mut self.sequence, out: &mut begin.debug_annotations });
        begin.flow_ids.extend(s.flow_out);
        self.write_event(start, begin, true);
        self.end(s.rank, end, s.flow_in);
    }

    /// A slice's end on `rank`'s track, ending flow `flow_in` if any.
    fn end(&mut self, rank: u32, t: u64, flow_in: Option<u64>) {
        let mut end = self.bare_event(Type::SliceEnd, thread_track(rank));
        end.terminating_flow_ids.extend(flow_in);
        self.write_event(t, end, false);
    }

    /// A region's begin or a point, with its source location.
    fn begin_with_location(&mut self, kind: Type, rank: u32, t: u64, name: &str, category: &str, location: &str) {
        let mut event = self.track_event(kind, rank, name, category);
        Annotations { sequence: &mut self.sequence, out: &mut event.debug_annotations }.text(LOCATION, location);
        self.write_event(t, event, true);
    }

    /// A counter's value on its track (described at its first value).
    fn counter(&mut self, e: &Event, name: &str, value: i64) {
        let key = (e.rank, name.as_ptr() as usize, name.len());
        let uuid = match self.counters.get(&key) {
            Some(&uuid) => uuid,
            None => {
                let uuid = counter_track(self.counters.len());
                self.counters.insert(key, uuid);
                self.describe(TrackDescriptor {
                    uuid: Some(uuid),
                    name: Some(name.to_owned()),
                    parent_uuid: Some(thread_track(e.rank)),
                    counter: Some(CounterDescriptor {}),
                    ..TrackDescriptor::default()
                });
                uuid
            }
        };
        let t = self.clocks.at(e.rank, e.start);
        let mut event = self.bare_event(Type::Counter, uuid);
        event.counter_value = Some(value);
        self.write_event(t, event, false);
    }

    /// An event on `rank`'s track with its name and category numbered.
    fn track_event(&mut self, kind: Type, rank: u32, name: &str, category: &str) -> TrackEvent {
        let mut event = self.bare_event(kind, thread_track(rank));
        self.sequence.make_room();
        event.name_iid = Some(self.sequence.name(name));
        event.category_iids.push(self.sequence.category(category));
        event
    }

    /// An event of `kind` on track `uuid`, in the packet's spare buffers.
    fn bare_event(&mut self, kind: Type, uuid: u64) -> TrackEvent {
        let mut event = match self.packet.data.take() {
            Some(Data::TrackEvent(event)) => event,
            _ => TrackEvent::default(),
        };
        event.category_iids.clear();
        event.debug_annotations.clear();
        event.flow_ids.clear();
        event.terminating_flow_ids.clear();
        event.name_iid = None;
        event.counter_value = None;
        event.r#type = Some(kind as i32);
        event.track_uuid = Some(uuid);
        event
    }

    fn write_event(&mut self, t: u64, event: TrackEvent, interned: bool) {
        self.packet.timestamp = Some(t);
        self.packet.data = Some(Data::TrackEvent(event));
        self.sequence.write(&mut self.sink, &mut self.packet, interned);
    }

    /// Describes the rank's track, after its process's if it is the
    /// process's first rank.
    #[cold]
    fn describe_rank(&mut self, rank: u32) {
        self.lanes.get(rank).described = true;
        let process = self.places.process(rank);
        let at = self.places.thread(rank);
        if !std::mem::replace(&mut self.described[process as usize], true) {
            self.describe(TrackDescriptor {
                uuid: Some(process_track(process)),
                process: Some(ProcessDescriptor {
                    pid: Some(at.pid as i32),
                    process_name: Some(self.places.name(process).to_owned()),
                }),
                ..TrackDescriptor::default()
            });
        }
        self.describe(TrackDescriptor {
            uuid: Some(thread_track(rank)),
            parent_uuid: Some(process_track(process)),
            thread: Some(ThreadDescriptor {
                pid: Some(at.pid as i32),
                tid: Some(at.tid as i64),
                thread_name: Some(format!("rank {rank}")),
            }),
            ..TrackDescriptor::default()
        });
    }

    fn describe(&mut self, track: TrackDescriptor) {
        let mut packet = TracePacket { data: Some(Data::TrackDescriptor(track)), ..TracePacket::default() };
        self.sequence.write(&mut self.sink, &mut packet, false);
    }
}

/// The flow a send starts: its message's id.
fn flow_out(message: &Message) -> Option<u64> {
    match message {
        Message::Sent { id, .. } => Some(*id),
        _ => None,
    }
}

/// The name of a call that failed: ` (failed)` after it.
#[cold]
fn failed_name(name: &str) -> Cow<'static, str> {
    Cow::Owned(format!("{name}{FAILED_MARK}"))
}

/// An event's source location, if it has one.
fn site(e: &Event) -> Option<&'static str> {
    e.site.map(|site| site.text())
}

/// The category of a call.
fn category(body: &Body) -> &'static str {
    match body {
        Body::Send { .. }
        | Body::Recv { .. }
        | Body::Isend { .. }
        | Body::Irecv { .. }
        | Body::Probe { .. }
        | Body::Iprobe { .. } => "point-to-point",
        Body::Wait { .. } | Body::Test { .. } => "request",
        Body::Collective { .. } => "collective",
        Body::CommCreate { .. } => "communicator",
        _ => "runtime",
    }
}
