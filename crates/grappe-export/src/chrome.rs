//! Chrome trace-event JSON, the JSON Object Format that Perfetto and
//! `chrome://tracing` open:
//!
//! ```text
//! {"traceEvents":[ ... ],"displayTimeUnit":"ns","otherData":{ ... }}
//! ```
//!
//! A process per process of the job (pid = its number from 1, named after
//! the job, its host and its pid) with one thread lane per rank (tid =
//! rank + 1, named `rank N` and sorted by `M` metadata events): Perfetto
//! files pid 0 and tid 0 under the kernel's idle task. Runtime calls as `X`
//! complete events with their attributes in `args`; regions as `B`/`E`;
//! counters as `C` (one series per rank: `id` = rank); user points and
//! flush starts as thread-scoped `i`. Init and finalize are calls, as in
//! OTF2 (`MPI_Init`), since they take time (the clock sampling).
//! A send and the receive marked as its second half (`MPI_Sendrecv`) are
//! one `sendrecv` slice, as the profile, OTF2 and Pajé show them: each
//! send waits for its rank's next event to know.
//! Each matched message is a flow: `s` inside the send's slice, `f` with
//! `"bp":"e"` inside the receive's, both with the message id; when the
//! receive was posted before the send, the `f` binds to a `delivery`
//! instant inside the receive instead (Perfetto points a flow from the
//! slice that starts first, which would draw the arrow backwards). Dates are
//! microseconds from the first event with nanosecond decimals (`12.345`),
//! written by integer arithmetic so they read back exact.
//!
//! Fields a viewer fills in by default are left out, which makes the file
//! smaller, and quicker to write and to load:
//! - an instant's scope `"s":"t"`: a thread, the default;
//! - a flow end's `name` and `cat`: Perfetto pairs the `s` and `f` of a
//!   flow by id, category and name (here id alone, as neither end has the
//!   others) and its flow table keeps no name. The delivery mark keeps its
//!   category: it is a slice one selects.
//!
//! A call that failed (a peer died, the job was stopped) is named ` (failed)`
//! after its call (`recv (failed)`), its args say `"failed":true`, and it
//! has no flow: its message never matched.
//!
//! With [`write_chrome_with_sites`], each call's `args` end with its
//! source location (`"site":"src/main.rs:12:9"`).
//!
//! The writer is on the hot path of `grappe trace export`: bytes go
//! straight into one buffer (see `sink`), no allocation per event.

use std::io::Write;

use grappe_analysis::{CausalStream, Channel, Message, PerRank, Result, SendSide, StreamSummary};
use grappe_trace::{Body, Event};

use crate::places::{Places, Thread};
use crate::shape::{FAILED_MARK, OpenRegions, Shape, shape};
use crate::sink::{Cursor, NUMBER_ROOM, RECORD_ROOM, Sink, text_room, with_sink};
use crate::summary::{ExportSummary, PROGRESS_EVERY};

mod args;
use crate::args::{call_args, sendrecv_args};
use args::Json;

/// Microseconds: three decimals of nanoseconds.
const US: u32 = 3;

/// The head of an object of each phase, up to its process id.
const PH_LEN: usize = 18;
const fn head_of(ph: u8) -> [u8; PH_LEN] {
    let mut head = *b",\n{\"ph\":\"?\",\"pid\":";
    head[9] = ph;
    head
}
const PH_X: [u8; PH_LEN] = head_of(b'X');
const PH_B: [u8; PH_LEN] = head_of(b'B');
const PH_E: [u8; PH_LEN] = head_of(b'E');
const PH_C: [u8; PH_LEN] = head_of(b'C');
const PH_I: [u8; PH_LEN] = head_of(b'i');
const PH_S: [u8; PH_LEN] = head_of(b's');
const PH_F: [u8; PH_LEN] = head_of(b'f');

/// Writes `stream` to `out` as Chrome trace-event JSON. `progress` gets
/// the events written so far, now and then and at the end.
pub fn write_chrome(
    stream: CausalStream,
    out: &mut (dyn Write + Send),
    progress: &mut dyn FnMut(u64),
) -> Result<ExportSummary> {
    with_sink(out, "chrome trace output", |sink| write_events::<false>(stream, sink, progress))
}

/// [`write_chrome`], each call's source location in its `args` as
/// `"site"` (what Perfetto shows when the slice is selected). An option:
/// it costs a fifth more instructions and a ninth more bytes.
pub fn write_chrome_with_sites(
    stream: CausalStream,
    out: &mut (dyn Write + Send),
    progress: &mut dyn FnMut(u64),
) -> Result<ExportSummary> {
    with_sink(out, "chrome trace output", |sink| write_events::<true>(stream, sink, progress))
}

/// The writer, with call sites (`SITES`) or without: two copies of the
/// loop, so that the one without pays nothing for the option.
fn write_events<const SITES: bool>(
    mut stream: CausalStream,
    mut sink: Sink,
    progress: &mut dyn FnMut(u64),
) -> Result<ExportSummary> {
    let places = Places::of(&stream);
    // The processes that run ranks are named up front (the first object,
    // with no comma before it); the job alone, for ranks no process runs,
    // when such a rank comes.
    let up_front = (places.count() - 1).max(1);
    let mut named = vec![false; places.count()];
    sink.bytes(b"{\"traceEvents\":[");
    for (process, named) in (0u32..).zip(&mut named[..up_front]) {
        name_process(&mut sink, &places, process, if process == 0 { b"\n" } else { b",\n" });
        *named = true;
    }
    let mut w =
        Chrome { sink, origin: stream.origin(), lanes: PerRank::default(), places, named, events: 0, messages: 0 };
    while let Some(linked) = stream.next_event()? {
        w.event::<SITES>(linked.event, linked.message);
        if w.events % PROGRESS_EVERY == 0 {
            progress(w.events);
        }
        w.sink.maybe_flush()?;
    }
    progress(w.events);
    w.release_held_sends::<SITES>();
    let summary = stream.summary();
    w.footer(&summary);
    let (events, messages) = (w.events, w.messages);
    let written_bytes = w.sink.finish()?;
    Ok(ExportSummary { events, messages, written_bytes, late_records: 0, blocks: Vec::new(), stream: summary })
}

struct Chrome<'a> {
    sink: Sink<'a>,
    /// Date 0 of the output (the earliest start, or the first event's).
    origin: Option<u64>,
    lanes: PerRank<Lane>,
    places: Places,
    /// Per process, whether its name was written.
    named: Vec<bool>,
    events: u64,
    messages: u64,
}

/// A rank's lane.
#[derive(Default)]
struct Lane {
    named: bool,
    /// Regions open, so that a leave with no enter is left out.
    regions: OpenRegions,
    /// The rank's last event when it is a send: written once the next
    /// event says whether it is a sendrecv's first half.
    held_send: Option<HeldSend>,
}

/// A send not written yet.
struct HeldSend {
    event: Event,
    message: Message,
    /// The flow of its message, when the receive came by meanwhile: it
    /// is written after the slice, so that no viewer reads the flow's
    /// start before the slice it starts in.
    flow: Option<Flow>,
    /// Where it is drawn.
    at: Thread,
}

/// The two ends of a matched message's arrow.
struct Flow {
    /// The sending rank.
    sender: u32,
    from: Thread,
    send: SendSide,
    to: Thread,
    recv: Span,
}

impl Flow {
    fn of(channel: &Channel, send: &SendSide, recv: &Event, places: &Places) -> Flow {
        Flow {
            sender: channel.src,
            from: places.thread(channel.src),
            send: *send,
            to: places.thread(recv.rank),
            recv: Span { start: recv.start, end: recv.end },
        }
    }
}

/// When a receive is drawn.
struct Span {
    start: u64,
    end: u64,
}

impl Chrome<'_> {
    #[inline(always)]
    fn event<const SITES: bool>(&mut self, e: &Event, message: &Message) {
        self.events += 1;
        let origin = *self.origin.get_or_insert(e.start);
        let at = self.places.thread(e.rank);
        if !self.lanes.get(e.rank).named {
            self.name_lane(e.rank, at);
        }
        if self.lanes.get(e.rank).held_send.is_some() && self.ends_held_send::<SITES>(e, message, origin) {
            return;
        }
        match shape(&e.body) {
            Shape::Call(_) if matches!(e.body, Body::Send { .. }) => {
                self.lanes.get(e.rank).held_send = Some(HeldSend { event: *e, message: *message, flow: None, at });
            }
            Shape::Call(name) => {
                let members = if let Body::CommCreate { members, .. } = &e.body { members.len() } else { 0 };
                let site = if SITES { e.site.map(|site| site.text()) } else { None };
                // Room for the slice, the two ends of a flow and a delivery.
                let mut c = self.sink.record(3 * RECORD_ROOM + NUMBER_ROOM * members + site.map_or(0, text_room));
                call(&mut c, e, at, name, origin, message, site);
                if let Message::Received { channel, send } = message {
                    self.messages += 1;
                    let flow = Flow::of(channel, send, e, &self.places);
                    write_or_hold_flow(&mut c, &mut self.lanes, flow, origin);
                }
            }
            Shape::Enter { name, location } => {
                self.lanes.get(e.rank).regions.enter(name);
                let mut c = self.sink.record(RECORD_ROOM + text_room(name) + text_room(location));
                open(&mut c, &PH_B, at, e.start, origin);
                c.bytes(b",\"name\":");
                c.json_str(name);
                c.bytes(b",\"args\":{\"location\":");
                c.json_str(location);
                c.bytes(b"}}");
            }
            Shape::Leave { name } => {
                for _ in 0..self.lanes.get(e.rank).regions.leave(name) {
                    let mut c = self.sink.record(RECORD_ROOM);
                    open(&mut c, &PH_E, at, e.start, origin);
                    c.byte(b'}');
                }
            }
            Shape::Counter { name, value } => {
                let mut c = self.sink.record(RECORD_ROOM + text_room(name));
                open(&mut c, &PH_C, at, e.start, origin);
                c.bytes(b",\"name\":");
                c.json_str(name);
                c.bytes(b",\"id\":");
                c.uint(e.rank as u64);
                c.bytes(b",\"args\":{\"value\":");
                c.int(value);
                c.bytes(b"}}");
            }
            Shape::Point { name, location } => {
                let mut c = self.sink.record(RECORD_ROOM + text_room(name) + text_room(location));
                instant(&mut c, at, e.start, name, origin);
                c.bytes(b",\"args\":{\"location\":");
                c.json_str(location);
                c.bytes(b"}}");
            }
            Shape::Mark(name) => {
                let mut c = self.sink.record(RECORD_ROOM + text_room(name));
                instant(&mut c, at, e.start, name, origin);
                c.byte(b'}');
            }
        }
    }

    /// Writes the rank's held send: as a sendrecv with `e` if `e` is its
    /// second half (then `e` is written: true), or alone (false).
    #[inline(never)]
    fn ends_held_send<const SITES: bool>(&mut self, e: &Event, message: &Message, origin: u64) -> bool {
        let lane = self.lanes.get(e.rank);
        let Some(held) = &lane.held_send else { return false };
        if e.ends_sendrecv_of(&held.event) {
            if let Some(held) = lane.held_send.take() {
                self.sendrecv::<SITES>(held, e, message, origin);
            }
            return true;
        }
        // Written from where it is held: moving it out costs a copy.
        write_send::<SITES>(&mut self.sink, held, origin);
        lane.held_send = None;
        false
    }

    /// A held send and `recv`, its second half, as one slice; then the
    /// flows of both messages.
    #[inline(never)]
    fn sendrecv<const SITES: bool>(&mut self, held: HeldSend, recv: &Event, message: &Message, origin: u64) {
        let site = if SITES { held.event.site.map(|site| site.text()) } else { None };
        let mut c = self.sink.record(5 * RECORD_ROOM + site.map_or(0, text_room));
        sendrecv(&mut c, held.at, (&held.event, &held.message), (recv, message), origin, site);
        if let Some(flow) = held.flow {
            write_flow(&mut c, &flow, origin);
        }
        if let Message::Received { channel, send } = message {
            self.messages += 1;
            let flow = Flow::of(channel, send, recv, &self.places);
            write_or_hold_flow(&mut c, &mut self.lanes, flow, origin);
        }
    }

    /// At the end of the stream: the sends still waiting for a next event.
    fn release_held_sends<const SITES: bool>(&mut self) {
        let origin = self.origin.unwrap_or(0);
        let ranks: Vec<u32> = self.lanes.iter().filter(|(_, l)| l.held_send.is_some()).map(|(r, _)| r).collect();
        for rank in ranks {
            if let Some(held) = self.lanes.get(rank).held_send.take() {
                write_send::<SITES>(&mut self.sink, &held, origin);
            }
        }
    }

    fn footer(&mut self, summary: &StreamSummary) {
        let mut c = self.sink.record(RECORD_ROOM);
        c.bytes(b"\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"generator\":\"grappe\",\"time_origin_ns\":");
        c.uint(self.origin.unwrap_or(0));
        for (key, value) in [
            (&b",\"events\":"[..], self.events),
            (b",\"messages\":", self.messages),
            (b",\"deferred_receives\":", summary.deferred),
            (b",\"unmatched_receives\":", summary.unmatched_receives),
            (b",\"unreceived_sends\":", summary.unreceived_sends),
        ] {
            c.bytes(key);
            c.uint(value);
        }
        if let Some(window) = &summary.window {
            c.bytes(b",\"window_from_ns\":");
            c.uint(window.from_ns);
            if window.to_ns != u64::MAX {
                c.bytes(b",\"window_to_ns\":");
                c.uint(window.to_ns);
            }
        }
        c.bytes(b"}}\n");
    }
}

impl Chrome<'_> {
    /// The metadata of a rank's lane: its name and place, after its
    /// process's name if it is the first of its process.
    #[cold]
    fn name_lane(&mut self, rank: u32, at: Thread) {
        self.lanes.get(rank).named = true;
        let process = self.places.process(rank);
        if !std::mem::replace(&mut self.named[process as usize], true) {
            name_process(&mut self.sink, &self.places, process, b",\n");
        }
        let mut c = self.sink.record(RECORD_ROOM);
        c.bytes(b",\n");
        metadata(&mut c, at, b"thread_name");
        c.bytes(b"{\"name\":\"rank ");
        c.uint(rank as u64);
        c.bytes(b"\"}},\n");
        metadata(&mut c, at, b"thread_sort_index");
        c.bytes(b"{\"sort_index\":");
        c.uint(rank as u64);
        c.bytes(b"}}");
    }
}

/// A process's name and place, after `lead`:
/// `{..process_name..},\n{..process_sort_index..}`.
fn name_process(sink: &mut Sink, places: &Places, process: u32, lead: &[u8]) {
    let (name, at) = (places.name(process), Thread { pid: process + 1, tid: 0 });
    let mut c = sink.record(2 * RECORD_ROOM + text_room(name));
    c.bytes(lead);
    metadata(&mut c, at, b"process_name");
    c.bytes(b"{\"name\":");
    c.json_str(name);
    c.bytes(b"}},\n");
    metadata(&mut c, at, b"process_sort_index");
    c.bytes(b"{\"sort_index\":");
    c.uint(process as u64);
    c.bytes(b"}}");
}

/// `{"ph":"M","pid":P[,"tid":T],"name":NAME,"args":` — a process's
/// metadata has no thread (`tid` 0).
fn metadata(c: &mut Cursor, at: Thread, name: &[u8]) {
    c.bytes(b"{\"ph\":\"M\",\"pid\":");
    c.uint(at.pid as u64);
    if at.tid != 0 {
        c.bytes(b",\"tid\":");
        c.uint(at.tid as u64);
    }
    c.bytes(b",\"name\":\"");
    c.bytes(name);
    c.bytes(b"\",\"args\":");
}

/// `,\n{"ph":PH,"pid":P,"tid":T,"ts":T` — the object is left open.
/// `ph` is the `PH_*` head of the phase.
#[inline(always)]
fn open(c: &mut Cursor, ph: &[u8; PH_LEN], at: Thread, t: u64, origin: u64) {
    c.bytes(ph);
    c.uint(at.pid as u64);
    c.bytes(b",\"tid\":");
    c.uint(at.tid as u64);
    c.bytes(b",\"ts\":");
    c.date(t, origin, US);
}

#[inline(always)]
fn instant(c: &mut Cursor, at: Thread, t: u64, name: &str, origin: u64) {
    open(c, &PH_I, at, t, origin);
    c.bytes(b",\"name\":");
    c.json_str(name);
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn call(c: &mut Cursor, e: &Event, at: Thread, name: &'static str, origin: u64, message: &Message, site: Option<&str>) {
    open(c, &PH_X, at, e.start, origin);
    c.bytes(b",\"dur\":");
    c.fixed(e.end.saturating_sub(e.start), US);
    c.bytes(b",\"name\":\"");
    c.bytes(name.as_bytes());
    failed_mark(c, e.body.failed());
    c.byte(b'"');
    call_args(&mut Json(c), &e.body, message, site);
    c.byte(b'}');
}

/// ` (failed)` after the name of a call that failed (a peer died, the job
/// was stopped), where the timeline shows it; its args say `"failed":true`.
#[inline(always)]
fn failed_mark(c: &mut Cursor, failed: bool) {
    if failed {
        c.bytes(FAILED_MARK.as_bytes());
    }
}

/// A held send alone, then its flow if the receive came by.
#[inline(always)]
fn write_send<const SITES: bool>(sink: &mut Sink, held: &HeldSend, origin: u64) {
    let site = if SITES { held.event.site.map(|site| site.text()) } else { None };
    // Room for the slice, the two ends of a flow and a delivery.
    let mut c = sink.record(3 * RECORD_ROOM + site.map_or(0, text_room));
    call(&mut c, &held.event, held.at, "send", origin, &held.message, site);
    if let Some(flow) = &held.flow {
        write_flow(&mut c, flow, origin);
    }
}

/// One slice for a send and the receive that is its second half, with the
/// arguments of both.
fn sendrecv(
    c: &mut Cursor,
    at: Thread,
    send: (&Event, &Message),
    recv: (&Event, &Message),
    origin: u64,
    site: Option<&str>,
) {
    let s = send.0;
    open(c, &PH_X, at, s.start, origin);
    c.bytes(b",\"dur\":");
    c.fixed(s.end.saturating_sub(s.start), US);
    c.bytes(b",\"name\":\"sendrecv");
    failed_mark(c, s.body.failed() || recv.0.body.failed());
    c.byte(b'"');
    sendrecv_args(&mut Json(c), send, recv, site);
    c.byte(b'}');
}

/// Writes a message's arrow with its receive, or, if its send is still
/// held, gives it to the send to write after its slice.
#[inline(always)]
fn write_or_hold_flow(c: &mut Cursor, lanes: &mut PerRank<Lane>, flow: Flow, origin: u64) {
    let sender = lanes.get(flow.sender);
    match &mut sender.held_send {
        Some(held) if matches!(held.message, Message::Sent { id, .. } if id == flow.send.id) => held.flow = Some(flow),
        _ => write_flow(c, &flow, origin),
    }
}

/// The arrow of a matched message, written once both its slices are (so
/// no flow is left without its end): `s` in the send's slice, `f` in the
/// receive's.
#[inline(always)]
fn write_flow(c: &mut Cursor, flow: &Flow, origin: u64) {
    let Flow { from, ref send, to, ref recv, .. } = *flow;
    let (at_send, at_recv) = flow_dates(send, recv);
    open(c, &PH_S, from, at_send, origin);
    flow_tail(c, send.id);
    if recv.start < send.start {
        // Perfetto binds an `f` to the latest slice begun on its lane and
        // points the flow from whichever of its two slices starts first:
        // here the receive's. A mark at the delivery, begun after the send,
        // takes the flow's end instead, and the arrow goes forward in time.
        open(c, &PH_I, to, at_recv, origin);
        c.bytes(b",\"name\":\"delivery\",\"cat\":\"message\"}");
    }
    open(c, &PH_F, to, at_recv, origin);
    c.bytes(b",\"bp\":\"e\"");
    flow_tail(c, send.id);
}

/// The dates of a flow's two ends: each inside its slice (its middle when
/// it can be), and the end no earlier than the start. Perfetto reads
/// events in date order and drops a flow whose `f` comes before its `s`,
/// which the middles alone give for a receive posted before its send.
/// Only a tachyon (send started after the receive ended) leaves them out
/// of order.
///
/// A receive posted before its send ends its flow at a delivery mark, one
/// nanosecond past its middle: a sendrecv's send, which has the same
/// dates, starts its own arrow at the middle, and an arrow begun at the
/// mark's date would start from the mark.
fn flow_dates(send: &SendSide, recv: &Span) -> (u64, u64) {
    let last_in_recv = recv.end.saturating_sub(1).max(recv.start);
    let at_send = middle(send.start, send.end).min(last_in_recv).max(send.start);
    let past_middle = u64::from(recv.start < send.start);
    let at_recv = (middle(recv.start, recv.end) + past_middle).max(at_send).min(last_in_recv);
    (at_send, at_recv)
}

#[inline(always)]
fn flow_tail(c: &mut Cursor, id: u64) {
    c.bytes(b",\"id\":");
    c.uint(id);
    c.byte(b'}');
}

/// A date strictly inside `[start, end]` when it lasts 2 ns or more, so
/// that viewers bind a flow to that slice and not a neighbour.
fn middle(start: u64, end: u64) -> u64 {
    start + end.saturating_sub(start) / 2
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn recv_at(start: u64, end: u64) -> Span {
        Span { start, end }
    }

    fn send_at(start: u64, end: u64) -> SendSide {
        SendSide { id: 0, start, end, bytes: 8, seq: 0 }
    }

    #[test]
    fn a_receive_posted_before_its_send_ends_its_flow_after_the_start() {
        // The middles alone would put the end (8150) before the start (8250).
        assert_eq!(flow_dates(&send_at(8_000, 8_500), &recv_at(7_500, 8_800)), (8_250, 8_250));
        // A send ending after the receive: its start moves into the receive.
        assert_eq!(flow_dates(&send_at(100, 1_000), &recv_at(0, 200)), (199, 199));
        // The usual case keeps both middles.
        assert_eq!(flow_dates(&send_at(0, 100), &recv_at(500, 700)), (50, 600));
    }

    proptest! {
        #[test]
        fn flow_ends_are_inside_their_slices_and_in_order(
            ss in 0u64..1_000, send_len in 0u64..1_000, rs in 0u64..1_000, recv_len in 0u64..1_000,
        ) {
            let (se, re) = (ss + send_len, rs + recv_len);
            let (at_send, at_recv) = flow_dates(&send_at(ss, se), &recv_at(rs, re));
            // Inside: from the start, before the end (at the start for an empty slice).
            prop_assert!(ss <= at_send && (at_send < se || at_send == ss), "{at_send} not in [{ss}, {se})");
            prop_assert!(rs <= at_recv && (at_recv < re || at_recv == rs), "{at_recv} not in [{rs}, {re})");
            // In order whenever the message is causal (sent before the receive ended).
            if ss < re || (ss == re && rs == re) {
                prop_assert!(at_send <= at_recv, "{at_send} > {at_recv}");
            }
        }
    }
}
