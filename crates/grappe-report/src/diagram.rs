//! The space-time diagram's data: the calls, user regions and messages
//! drawn one by one, and the summary of the whole run.
//!
//! One pass over the causal stream. Every call goes into the
//! [`Summary`]. The calls and regions that overlap the detail windows
//! (planned from the first pass, see [`crate::census`]) are kept, and the
//! messages received by a call kept are kept as arrows. A region entered
//! outside the windows is kept if it overlaps one when it is left.
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

use super::census::Windows;
use super::lane::{Arrow, Arrows, Call, Keep, Lane, LaneData, LastSend, Open};
use super::summary::{FAILED, Summary, SummaryData, WAITING, state_of};

/// Regions open at once on a rank that are drawn.
const MAX_DEPTH: usize = 64;
/// Distinct region names kept.
const MAX_NAMES: usize = 10_000;
/// Events between two expiries of collective instances.
const EXPIRE_EVERY: u64 = 1024;
/// The index part of a collective entry's tag when its call is not kept.
const NOT_KEPT: u64 = 0xffff_ffff;

/// The part of the run the diagram details, dated as exports date it
/// (from [`CausalStream::origin`]).
pub use grappe_analysis::stream::Window;

/// What is drawn one by one, of what the trace has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Selection {
    /// Calls and regions in the trace.
    pub intervals: u64,
    /// Of them, drawn one by one.
    pub kept: u64,
    /// Messages matched in the trace.
    pub messages: u64,
    /// Of them, drawn as arrows.
    pub arrows: u64,
}

/// Whether `[start, end]` overlaps one of `windows`.
pub(crate) fn overlaps(windows: &Windows, start: u64, end: u64) -> bool {
    let i = windows.partition_point(|w| w.1 <= start);
    windows.get(i).is_some_and(|w| w.0 <= end)
}

/// The diagram being built.
pub(crate) struct Builder {
    lanes: Vec<Lane>,
    lane_of: FxHashMap<u32, usize>,
    kinds: Vec<Kind>,
    /// By name, and whether the calls of the kind failed.
    kind_of: FxHashMap<(&'static str, bool), u16>,
    names: Vec<(String, String)>,
    /// Region ids by name, then location.
    name_of: FxHashMap<String, Vec<(String, u32)>>,
    arrows: Vec<Arrow>,
    summary: Summary,
    windows: Windows,
    collectives: Instances,
    selection: Selection,
    events: u64,
}

impl Builder {
    /// A diagram that details `windows` (global ns) and sums everything
    /// in `summary`.
    pub fn new(stream: &CausalStream, world_size: u32, windows: Windows, summary: Summary) -> Self {
        Builder {
            lanes: Vec::new(),
            lane_of: FxHashMap::default(),
            kinds: Vec::new(),
            kind_of: FxHashMap::default(),
            names: Vec::new(),
            name_of: FxHashMap::default(),
            arrows: Vec::new(),
            summary,
            windows,
            collectives: Instances::for_stream(stream, world_size),
            selection: Selection::default(),
            events: 0,
        }
    }

    /// Takes the next event of the causal stream.
    pub fn observe(&mut self, linked: LinkedRef<'_>) {
        let event = linked.event;
        let date = merge_date(event);
        let lane = self.lane(event.rank, event.start);
        let (start, end) = (event.start, event.end.max(event.start));
        self.lanes[lane].last = self.lanes[lane].last.max(end);
        self.events += 1;
        match &event.body {
            Body::RegionEnter { name, location } => self.enter(lane, name, location, start),
            Body::RegionLeave { name } => self.leave(lane, name, start),
            Body::CommCreate { .. } => self.collectives.observe_creation(event.rank, &event.body),
            _ => {}
        }
        // Only the rank's next event can be a sendrecv's second half.
        let first_half = self.lanes[lane].last_send.take().filter(|send| event.ends_sendrecv_of(&send.event));
        match (first_half, CallType::of(&event.body)) {
            (Some(send), _) => self.second_half(lane, send, event, linked.message),
            (None, Some(call)) => self.call(lane, call, event, linked.message),
            (None, None) => self.lifecycle(lane, event),
        }
        if self.events % EXPIRE_EVERY == 0 {
            let (lanes, summary) = (&mut self.lanes, &mut self.summary);
            self.collectives.expire(date, &mut |e, w| set_waiting(lanes, summary, e, w));
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
        i
    }

    /// Whether a call from `start` to `end` (`None`: a region entered) is
    /// kept: if it overlaps a window (a region entered outside them is
    /// decided when it is left).
    fn admit(&mut self, start: u64, end: Option<u64>) -> Keep {
        self.selection.intervals += 1;
        let keep = match end {
            Some(end) if overlaps(&self.windows, start, end) => Keep::Yes,
            Some(_) => Keep::No,
            None if overlaps(&self.windows, start, start) => Keep::Yes,
            None => Keep::AtLeave,
        };
        self.selection.kept += (keep == Keep::Yes) as u64;
        keep
    }

    /// Closes lane `lane`'s innermost region at `at`; counts it as kept
    /// if it was decided only now and is.
    fn close_top(&mut self, lane: usize, at: u64) {
        let windows = &self.windows;
        if self.lanes[lane].close_top(at, &|start, end| overlaps(windows, start, end)) {
            self.selection.kept += 1;
        }
    }

    fn call(&mut self, lane: usize, call: CallType, event: &Event, message: &Message) {
        let (start, end) = (event.start, event.end.max(event.start));
        let failed = event.body.failed();
        let category = category(&event.body);
        let state = if failed { FAILED } else { state_of(category) };
        self.summary.add(event.rank, state, start, end);
        let kept = self.admit(start, Some(end)) == Keep::Yes;
        let kind = self.kind(call, category, failed);
        let index = self.lanes[lane].calls.len() as u64;
        // A failed collective completed no instance: it waited all along.
        if let Body::Collective { comm, failed: false, .. } = &event.body {
            let k = {
                let k = self.lanes[lane].collectives.entry(*comm).or_default();
                *k += 1;
                *k - 1
            };
            let tag = (lane as u64) << 32 | if kept { index } else { NOT_KEPT };
            let entry = Entry { rank: event.rank, start, end, from: start, tag };
            let (lanes, summary) = (&mut self.lanes, &mut self.summary);
            self.collectives.enter(*comm, k, entry, &mut |e, w| set_waiting(lanes, summary, e, w));
        }
        let waiting = match failed {
            true => end - start,
            false => {
                let waiting = self.received(lane, message, kept, start, end);
                self.summary.change(event.rank, state, WAITING, start, start + waiting);
                waiting
            }
        };
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
    fn lifecycle(&mut self, lane: usize, event: &Event) {
        let name = match event.body {
            Body::Init => "init",
            Body::Finalize => "finalize",
            _ => return,
        };
        let (start, end) = (event.start, event.end.max(event.start));
        self.summary.add(event.rank, state_of("runtime"), start, end);
        if self.admit(start, Some(end)) == Keep::Yes {
            let kind = self.kind_named(name, "runtime", false);
            self.lanes[lane].calls.push(Call { start, end, kind, bytes: 0, peer: ANY, waiting: 0, received: None });
        }
    }

    /// The receive that ends the sendrecv `send` began: its message, and
    /// the send's call made the pair's (in the summary too).
    fn second_half(&mut self, lane: usize, send: LastSend, recv: &Event, message: &Message) {
        let failed = send.event.body.failed() || recv.body.failed();
        let kind = self.kind(CallType::Sendrecv, "sendrecv", failed);
        let (start, end) = (recv.start, recv.end.max(recv.start));
        let mut waiting = self.received(lane, message, send.call.is_some(), start, end);
        if failed {
            waiting = end - start;
        }
        let (s0, e0) = (send.event.start, send.event.end.max(send.event.start));
        let was = if send.event.body.failed() { FAILED } else { state_of("send") };
        let now = if failed { FAILED } else { state_of("sendrecv") };
        self.summary.change(recv.rank, was, now, s0, e0);
        if !failed {
            self.summary.change(recv.rank, now, WAITING, s0, s0 + waiting.min(e0 - s0));
        }
        if let Some(call) = send.call.and_then(|i| self.lanes[lane].calls.get_mut(i)) {
            call.kind = kind;
            call.waiting = waiting;
            let (bytes, source) = bytes_and_peer(&recv.body);
            call.received = (source != call.peer || bytes != call.bytes).then_some((source, bytes));
        }
    }

    /// Counts a received message and keeps its arrow if its receive is
    /// kept; the receive's wait for its sender.
    fn received(&mut self, lane: usize, message: &Message, kept: bool, start: u64, end: u64) -> u64 {
        let Message::Received { channel, send } = message else { return 0 };
        self.selection.messages += 1;
        if kept {
            self.selection.arrows += 1;
            self.arrows.push(Arrow {
                lane,
                src: channel.src,
                send_start: send.start,
                recv_start: start,
                recv_end: end,
            });
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

    fn enter(&mut self, lane: usize, name: &str, location: &str, start: u64) {
        if self.lanes[lane].stack.len() >= MAX_DEPTH {
            return;
        }
        let kept = self.admit(start, None);
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

    /// What is drawn one by one, and the summary.
    pub fn finish(mut self) -> (Detail, Summary) {
        let (lanes, summary) = (&mut self.lanes, &mut self.summary);
        self.collectives.drain(&mut |e, w| set_waiting(lanes, summary, e, w));
        for lane in 0..self.lanes.len() {
            let last = self.lanes[lane].last;
            while !self.lanes[lane].stack.is_empty() {
                self.close_top(lane, last);
            }
        }
        let mut order: Vec<usize> = (0..self.lanes.len()).collect();
        order.sort_by_key(|&i| self.lanes[i].rank);
        let mut position = vec![0usize; self.lanes.len()];
        for (p, &i) in order.iter().enumerate() {
            position[i] = p;
        }
        for arrow in &mut self.arrows {
            arrow.lane = position[arrow.lane];
        }
        self.arrows.sort_by_key(|a| a.recv_end);
        let mut lanes: Vec<Option<Lane>> = self.lanes.into_iter().map(Some).collect();
        let mut lanes: Vec<Lane> = order.iter().filter_map(|&i| lanes[i].take()).collect();
        for lane in &mut lanes {
            lane.sort();
        }
        let detail = Detail {
            kinds: self.kinds,
            regions: self.names.iter().map(|(n, l)| format!("{n} ({l})")).collect(),
            lanes,
            arrows: self.arrows,
            windows: self.windows,
            selection: self.selection,
        };
        (detail, self.summary)
    }
}

/// What is drawn one by one: the calls, regions and arrows of the detail
/// windows, lanes in rank order.
pub(crate) struct Detail {
    kinds: Vec<Kind>,
    regions: Vec<String>,
    lanes: Vec<Lane>,
    arrows: Vec<Arrow>,
    pub(crate) windows: Windows,
    pub(crate) selection: Selection,
}

impl Detail {
    /// Keeps only what overlaps `windows`, windows within the present ones.
    pub(crate) fn keep_only(&mut self, windows: Windows) {
        let inside = |start: u64, end: u64| overlaps(&windows, start, end);
        let mut kept = 0u64;
        for lane in &mut self.lanes {
            lane.keep_only(&inside);
            kept += (lane.calls.len() + lane.regions.len()) as u64;
        }
        self.arrows.retain(|a| inside(a.recv_start, a.recv_end));
        self.selection.kept = kept;
        self.selection.arrows = self.arrows.len() as u64;
        self.windows = windows;
    }

    /// The calls and regions drawn in the lane that has the most.
    pub(crate) fn busiest_lane(&self) -> u64 {
        self.lanes.iter().map(|l| (l.calls.len() + l.regions.len()) as u64).max().unwrap_or(0)
    }

    /// The diagram as the page gets it: dates from `origin` (global ns);
    /// `interval` is the one asked for (relative, `None`: to the end).
    /// `bare`: without what is drawn one by one (to weigh the rest).
    pub(crate) fn data<'a>(
        &'a self,
        origin: u64,
        interval: (u64, Option<u64>),
        summary: &'a SummaryData,
        bare: bool,
    ) -> Diagram<'a> {
        let end = self.lanes.iter().map(|l| l.last).max().unwrap_or(origin);
        let relative = |w: &(u64, u64)| (w.0.saturating_sub(origin), w.1.saturating_sub(origin));
        Diagram {
            origin_ns: origin,
            end: end.saturating_sub(origin),
            interval,
            detail: if bare { Vec::new() } else { self.windows.iter().map(relative).collect() },
            kinds: &self.kinds,
            regions: &self.regions,
            lanes: self.lanes.iter().map(|l| LaneData::of(l, origin, bare)).collect(),
            arrows: Arrows::of(if bare { &[] } else { &self.arrows }, &self.lanes, origin),
            summary,
            selection: self.selection,
        }
    }
}

/// A collective entry's waiting, known once the last rank entered: on
/// its call if kept, and in the summary.
fn set_waiting(lanes: &mut [Lane], summary: &mut Summary, entry: &Entry, waiting: u64) {
    let (lane, index) = ((entry.tag >> 32) as usize, entry.tag & NOT_KEPT);
    summary.change(entry.rank, state_of("collective"), WAITING, entry.from, entry.from + waiting);
    if index == NOT_KEPT {
        return;
    }
    if let Some(call) = lanes.get_mut(lane).and_then(|l| l.calls.get_mut(index as usize)) {
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
pub(crate) struct Diagram<'a> {
    /// Global date of the diagram's 0, ns: the run's first event.
    pub origin_ns: u64,
    /// Last date, relative.
    pub end: u64,
    /// The interval asked for (relative; `None`: to the run's end).
    interval: (u64, Option<u64>),
    /// The windows drawn call by call (relative, `[start, end)`).
    detail: Vec<(u64, u64)>,
    kinds: &'a [Kind],
    regions: &'a [String],
    lanes: Vec<LaneData>,
    arrows: Arrows,
    summary: &'a SummaryData,
    selection: Selection,
}
