//! The space-time diagram's data: the calls, user regions and messages
//! of a window of the run, and an overview of the whole run.
//!
//! Selection, in one pass over the causal stream: calls and regions that
//! overlap the interval asked for ([`Window`], the whole run by default)
//! are kept in stream order until `max_events` are kept; the date of the
//! first one that does not fit ends the *window*, and the events that
//! start before it and come later in the stream (receives, which the
//! stream gives at their end) are still kept, up to a tenth more. So the
//! diagram shows everything from the start of the interval to the end of
//! the window. Regions entered before the interval are drawn if they are
//! still open when it starts. Arrows are the messages received in the
//! window, the first `max_arrows` of them. The overview, time bins per
//! rank whose width doubles as the run goes on, covers every call.
//!
//! Init and finalize are drawn as calls of their own colour: they hold the
//! clock sampling.
//!
//! A call that failed because a peer died or the job was stopped is a
//! kind of its own (`recv (failed)`), waiting all along, with no arrow.
//!
//! A send and the receive marked as its second half are one `sendrecv`
//! call, as the profile counts them: the send's call takes the pair's kind
//! and the receive's waiting, and the receive adds no call of its own.

use grappe_analysis::collectives::{Entry, Instances};
use grappe_analysis::{CallType, CausalStream, LinkedRef, Message, merge_date};
use grappe_trace::{ANY, Body, Event};
use rustc_hash::FxHashMap;
use serde::Serialize;

use super::lane::{Arrows, Call, Keep, Lane, LaneData, LastSend, Open};
use super::overview::{Overview, OverviewData};

/// Regions open at once on a rank that are drawn.
const MAX_DEPTH: usize = 64;
/// Distinct region names kept.
const MAX_NAMES: usize = 10_000;
/// Overview cells (ranks × bins), at most, roughly.
const OVERVIEW_CELLS: usize = 400_000;
/// Events between two expiries of collective instances.
const EXPIRE_EVERY: u64 = 1024;

/// The part of the run the diagram details, dated as exports date it
/// (from [`CausalStream::origin`]).
pub use grappe_analysis::stream::Window;

/// What was kept and what was left out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Selection {
    /// Calls and regions in the trace.
    pub intervals: u64,
    /// Of them, kept.
    pub kept: u64,
    /// Messages matched in the trace.
    pub messages: u64,
    /// Of them, drawn as arrows.
    pub arrows: u64,
    /// The window's end (global ns), if the trace did not fit.
    pub window_end: Option<u64>,
    /// The receive end (global ns) after which arrows were left out.
    pub arrows_end: Option<u64>,
    /// Calls and regions starting in the window but left out: the window
    /// had its tenth more already.
    pub window_dropped: u64,
    /// The start (global ns) of the interval asked for, if not the run's.
    pub window_start: Option<u64>,
    /// Whether the window ends where `max_events` ran out.
    pub full: bool,
}

/// The diagram being built.
pub(crate) struct Builder {
    max_events: u64,
    max_arrows: u64,
    lanes: Vec<Lane>,
    lane_of: FxHashMap<u32, usize>,
    kinds: Vec<Kind>,
    /// By name, and whether the calls of the kind failed.
    kind_of: FxHashMap<(&'static str, bool), u16>,
    names: Vec<(String, String)>,
    /// Region ids by name, then location.
    name_of: FxHashMap<String, Vec<(String, u32)>>,
    arrows: Vec<(usize, u32, u64, u64)>,
    overview: Overview,
    collectives: Instances,
    selection: Selection,
    overflow: u64,
    events: u64,
    asked: Window,
    /// The interval asked for in global ns, once the run's start is known.
    interval: Option<(u64, u64)>,
}

impl Builder {
    pub fn new(stream: &CausalStream, world_size: u32, max_events: usize, max_arrows: usize, asked: Window) -> Self {
        let ranks = stream.summary().flows.len().max(world_size as usize).max(1);
        let mut builder = Builder {
            max_events: max_events as u64,
            max_arrows: max_arrows as u64,
            lanes: Vec::new(),
            lane_of: FxHashMap::default(),
            kinds: Vec::new(),
            kind_of: FxHashMap::default(),
            names: Vec::new(),
            name_of: FxHashMap::default(),
            arrows: Vec::new(),
            overview: Overview::new((OVERVIEW_CELLS / ranks).clamp(16, 1000)),
            collectives: Instances::for_stream(stream, world_size),
            selection: Selection::default(),
            overflow: 0,
            events: 0,
            asked,
            interval: None,
        };
        if let Some(origin) = stream.origin() {
            builder.start_interval(origin);
        }
        builder
    }

    /// Takes the next event of the causal stream.
    pub fn observe(&mut self, linked: LinkedRef<'_>) {
        let event = linked.event;
        let date = merge_date(event);
        let lane = self.lane(event.rank, event.start);
        let (start, end) = (event.start, event.end.max(event.start));
        self.lanes[lane].last = self.lanes[lane].last.max(end);
        self.events += 1;
        if self.interval.is_none() {
            self.start_interval(start);
        }
        match &event.body {
            Body::RegionEnter { name, location } => self.enter(lane, name, location, start, date),
            Body::RegionLeave { name } => self.leave(lane, name, start),
            Body::CommCreate { .. } => self.collectives.observe_creation(event.rank, &event.body),
            _ => {}
        }
        // Only the rank's next event can be a sendrecv's second half.
        let first_half = self.lanes[lane].last_send.take().filter(|send| event.ends_sendrecv_of(&send.event));
        match (first_half, CallType::of(&event.body)) {
            (Some(send), _) => self.second_half(lane, send, event, linked.message),
            (None, Some(call)) => self.call(lane, call, event, linked.message, date),
            (None, None) => self.lifecycle(lane, event, date),
        }
        if self.events % EXPIRE_EVERY == 0 {
            let lanes = &mut self.lanes;
            self.collectives.expire(date, &mut |e, w| set_waiting(lanes, e, w));
        }
    }

    fn lane(&mut self, rank: u32, start: u64) -> usize {
        if let Some(&i) = self.lane_of.get(&rank) {
            self.lanes[i].first = self.lanes[i].first.min(start);
            return i;
        }
        let i = self.lanes.len();
        self.lanes.push(Lane::new(rank, start));
        self.lane_of.insert(rank, i);
        self.overview.lanes.push(Vec::new());
        i
    }

    /// Places the interval asked for, from the run's start.
    fn start_interval(&mut self, first: u64) {
        let (from, to) = (first.saturating_add(self.asked.from), first.saturating_add(self.asked.to));
        self.interval = Some((from, to));
        self.selection.window_start = (self.asked.from > 0).then_some(from);
    }

    /// Whether a call from `start` to `end` (`None`: a region entered),
    /// met at `date` in the stream, is kept (see the module documentation).
    fn admit(&mut self, start: u64, end: Option<u64>, date: u64) -> Keep {
        self.selection.intervals += 1;
        let (from, to) = self.interval.unwrap_or((0, u64::MAX));
        if start >= to || end.is_some_and(|end| end < from) {
            return Keep::No;
        }
        if end.is_none() && start < from {
            return Keep::IfOpenAt(from); // counted when it is left
        }
        if self.selection.window_end.is_none() && self.selection.kept >= self.max_events {
            self.selection.window_end = Some(date);
            self.selection.full = true;
        }
        let kept = match self.selection.window_end {
            None => true,
            Some(end) if start < end && self.overflow <= self.max_events / 10 => {
                self.overflow += 1;
                true
            }
            Some(end) => {
                self.selection.window_dropped += u64::from(start < end);
                false
            }
        };
        self.selection.kept += kept as u64;
        if kept { Keep::Yes } else { Keep::No }
    }

    /// Closes lane `lane`'s innermost region at `at`; counts it as kept
    /// if it was entered before the interval and is drawn.
    fn close_top(&mut self, lane: usize, at: u64) {
        if self.lanes[lane].close_top(at) {
            self.selection.kept += 1;
        }
    }

    fn call(&mut self, lane: usize, call: CallType, event: &Event, message: &Message, date: u64) {
        let (start, end) = (event.start, event.end.max(event.start));
        self.overview.add(lane, call, start, end);
        let kept = self.admit(start, Some(end), date) == Keep::Yes;
        let failed = event.body.failed();
        let kind = self.kind(call, category(&event.body), failed);
        let index = self.lanes[lane].calls.len() as u64;
        // A failed collective completed no instance: it waited all along.
        if let Body::Collective { comm, failed: false, .. } = &event.body {
            let k = {
                let k = self.lanes[lane].collectives.entry(*comm).or_default();
                *k += 1;
                *k - 1
            };
            let tag = if kept { (lane as u64) << 32 | index } else { u64::MAX };
            let entry = Entry { rank: event.rank, start, end, from: start, tag };
            let lanes = &mut self.lanes;
            self.collectives.enter(*comm, k, entry, &mut |e, w| set_waiting(lanes, e, w));
        }
        let waiting = if failed { end - start } else { self.received(lane, message, kept, start, end) };
        if kept {
            let (bytes, peer) = bytes_and_peer(&event.body);
            self.lanes[lane].calls.push(Call { start, end, kind, bytes, peer, waiting, received: None });
        }
        if matches!(event.body, Body::Send { .. }) {
            self.lanes[lane].last_send = Some(LastSend { event: *event, call: kept.then_some(index as usize) });
        }
    }

    /// Init and finalize, drawn as calls: they hold the clock sampling
    /// (tens of ms), which would otherwise look like the program's compute.
    /// They are not in the overview, which is the time in communication.
    fn lifecycle(&mut self, lane: usize, event: &Event, date: u64) {
        let name = match event.body {
            Body::Init => "init",
            Body::Finalize => "finalize",
            _ => return,
        };
        let (start, end) = (event.start, event.end.max(event.start));
        if self.admit(start, Some(end), date) == Keep::Yes {
            let kind = self.kind_named(name, "runtime", false);
            self.lanes[lane].calls.push(Call { start, end, kind, bytes: 0, peer: ANY, waiting: 0, received: None });
        }
    }

    /// The receive that ends the sendrecv `send` began: its message, and
    /// the send's call made the pair's.
    fn second_half(&mut self, lane: usize, send: LastSend, recv: &Event, message: &Message) {
        let failed = send.event.body.failed() || recv.body.failed();
        let kind = self.kind(CallType::Sendrecv, "sendrecv", failed);
        let (start, end) = (recv.start, recv.end.max(recv.start));
        let mut waiting = self.received(lane, message, send.call.is_some(), start, end);
        if failed {
            waiting = end - start;
        }
        if let Some(call) = send.call.and_then(|i| self.lanes[lane].calls.get_mut(i)) {
            call.kind = kind;
            call.waiting = waiting;
            let (bytes, source) = bytes_and_peer(&recv.body);
            call.received = (source != call.peer || bytes != call.bytes).then_some((source, bytes));
        }
    }

    /// Counts a received message and draws its arrow if its receive is
    /// kept; the receive's wait for its sender.
    fn received(&mut self, lane: usize, message: &Message, kept: bool, start: u64, end: u64) -> u64 {
        let Message::Received { channel, send } = message else { return 0 };
        self.selection.messages += 1;
        if kept && self.selection.arrows < self.max_arrows {
            self.selection.arrows += 1;
            self.arrows.push((lane, channel.src, send.start, end));
        } else if kept {
            self.selection.arrows_end.get_or_insert(end);
        }
        end.min(send.start).saturating_sub(start)
    }

    fn kind(&mut self, call: CallType, category: &'static str, failed: bool) -> u16 {
        self.kind_named(call.name(), category, failed)
    }

    fn kind_named(&mut self, name: &'static str, category: &'static str, failed: bool) -> u16 {
        if let Some(&k) = self.kind_of.get(&(name, failed)) {
            return k;
        }
        let k = self.kinds.len() as u16;
        self.kinds.push(Kind { name, category, failed });
        self.kind_of.insert((name, failed), k);
        k
    }

    fn enter(&mut self, lane: usize, name: &str, location: &str, start: u64, date: u64) {
        if self.lanes[lane].stack.len() >= MAX_DEPTH {
            return;
        }
        let kept = self.admit(start, None, date);
        let name = self.name(name, location);
        self.lanes[lane].stack.push(Open { name, start, kept });
    }

    fn leave(&mut self, lane: usize, name: &str, at: u64) {
        let names = &self.names;
        let named = |o: &Open| names.get(o.name as usize).is_some_and(|(n, _)| n == name);
        if let Some(i) = self.lanes[lane].stack.iter().rposition(named) {
            while self.lanes[lane].stack.len() > i {
                self.close_top(lane, at);
            }
        }
    }

    fn name(&mut self, name: &str, location: &str) -> u32 {
        let known = self.name_of.get(name).and_then(|v| v.iter().find(|(l, _)| l == location));
        if let Some((_, id)) = known {
            return *id;
        }
        if self.names.len() >= MAX_NAMES {
            return u32::MAX;
        }
        let id = self.names.len() as u32;
        self.names.push((name.to_owned(), location.to_owned()));
        self.name_of.entry(name.to_owned()).or_default().push((location.to_owned(), id));
        id
    }

    /// The diagram's data and what was selected.
    pub fn finish(mut self) -> (Diagram, Selection) {
        let lanes = &mut self.lanes;
        self.collectives.drain(&mut |e, w| set_waiting(lanes, e, w));
        for lane in 0..self.lanes.len() {
            let last = self.lanes[lane].last;
            while !self.lanes[lane].stack.is_empty() {
                self.close_top(lane, last);
            }
        }
        let origin = self.lanes.iter().map(|l| l.first).min().unwrap_or(0);
        let end = self.lanes.iter().map(|l| l.last).max().unwrap_or(origin);
        let mut order: Vec<usize> = (0..self.lanes.len()).collect();
        order.sort_by_key(|&i| self.lanes[i].rank);
        let position: FxHashMap<u32, u32> = order.iter().zip(0u32..).map(|(&i, p)| (self.lanes[i].rank, p)).collect();
        let to = self.interval.map_or(u64::MAX, |(_, to)| to);
        if to < end && self.selection.window_end.is_none_or(|w| w > to) {
            (self.selection.window_end, self.selection.full) = (Some(to), false);
        }
        let selection = self.selection;
        let diagram = Diagram {
            origin_ns: origin,
            end: end - origin,
            window_start: selection.window_start.map_or(0, |w| w.saturating_sub(origin)),
            window_end: selection.window_end.map(|w| w.saturating_sub(origin)),
            kinds: std::mem::take(&mut self.kinds),
            regions: self.names.iter().map(|(n, l)| format!("{n} ({l})")).collect(),
            lanes: order.iter().map(|&i| LaneData::of(&mut self.lanes[i], origin)).collect(),
            arrows: Arrows::of(&mut self.arrows, &self.lanes, &position, origin),
            overview: self.overview.data(&order, origin, end),
            selection,
        };
        (diagram, selection)
    }
}

fn set_waiting(lanes: &mut [Lane], entry: &Entry, waiting: u64) {
    let (lane, index) = ((entry.tag >> 32) as usize, (entry.tag & 0xffff_ffff) as usize);
    if let Some(call) = lanes.get_mut(lane).and_then(|l| l.calls.get_mut(index)) {
        call.waiting = waiting;
    }
}

/// The drawing category of a call (its colour).
fn category(body: &Body) -> &'static str {
    match body {
        Body::Send { .. } => "send",
        Body::Isend { .. } => "isend",
        Body::Recv { .. } => "recv",
        Body::Irecv { .. } => "irecv",
        Body::Wait { .. } => "wait",
        Body::Test { .. } => "test",
        Body::Probe { .. } | Body::Iprobe { .. } => "probe",
        Body::Collective { .. } => "collective",
        _ => "other",
    }
}

/// Bytes and the peer (destination, source, root) of a call.
fn bytes_and_peer(body: &Body) -> (u64, u32) {
    match body {
        Body::Send { dest, bytes, .. } | Body::Isend { dest, bytes, .. } => (*bytes, *dest),
        Body::Recv { src, bytes, .. } => (*bytes, *src),
        Body::Irecv { src, .. } => (0, *src),
        Body::Wait { completion: c, .. } | Body::Test { completion: Some(c), .. } if c.is_recv => (c.bytes, c.src),
        Body::Probe { found: Some(c), .. } | Body::Iprobe { found: Some(c), .. } => (c.bytes, c.src),
        Body::Collective { root, bytes, .. } => (*bytes, *root),
        _ => (0, ANY),
    }
}

/// A call kind of the diagram: its name and drawing category, and
/// whether its calls failed (a peer died, the job was stopped: drawn
/// apart, named `recv (failed)`).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Kind {
    name: &'static str,
    category: &'static str,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    failed: bool,
}

/// Everything the page draws the diagram from.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Diagram {
    /// Global date of the diagram's 0, ns.
    pub origin_ns: u64,
    /// Last date, relative.
    pub end: u64,
    /// Start of the window of detailed events, relative (0: the run's).
    window_start: u64,
    /// End of the window of detailed events, relative, if the trace did
    /// not fit or a shorter interval was asked for.
    window_end: Option<u64>,
    kinds: Vec<Kind>,
    regions: Vec<String>,
    lanes: Vec<LaneData>,
    arrows: Arrows,
    overview: OverviewData,
    selection: Selection,
}
