//! Chrome trace-event JSON, the JSON Object Format that Perfetto and
//! `chrome://tracing` open:
//!
//! ```text
//! {"traceEvents":[ ... ],"displayTimeUnit":"ns","otherData":{ ... }}
//! ```
//!
//! One process ("grappe job") with one thread lane per rank (tid =
//! rank, named and sorted by `M` metadata events); runtime calls as `X`
//! complete events with their attributes in `args`; regions as `B`/`E`;
//! counters as `C` (one series per rank: `id` = rank); user points and
//! runtime instants (init, finalize, flush start) as thread-scoped `i`.
//! Each matched message is a flow: `s` inside the send's slice, `f` with
//! `"bp":"e"` inside the receive's, both with the message id; when the
//! receive was posted before the send, the `f` binds to a `delivery`
//! instant inside the receive instead (Perfetto points a flow from the
//! slice that starts first, which would draw the arrow backwards). Dates are
//! microseconds from the first event with nanosecond decimals (`12.345`),
//! written by integer arithmetic so they read back exact.
//!
//! Fields a viewer fills in by default are left out, which makes the file
//! a sixth smaller, and quicker to write and to load:
//! - `pid`: Perfetto's JSON importer reads a missing pid as 0, and there
//!   is one process;
//! - an instant's scope `"s":"t"`: a thread, the default;
//! - a flow end's `name` and `cat`: Perfetto pairs the `s` and `f` of a
//!   flow by id, category and name (here id alone, as neither end has the
//!   others) and its flow table keeps no name. The delivery mark keeps its
//!   category: it is a slice one selects.
//!
//! With [`write_chrome_with_sites`], each call's `args` end with its
//! source location (`"site":"src/main.rs:12:9"`).
//!
//! The writer is on the hot path of `grappe trace export`: bytes go
//! straight into one buffer (see `sink`), no allocation per event.

use std::io::Write;

use grappe_trace::{ANY, Body, Completion, Event};

use super::sink::{Cursor, NUMBER_ROOM, RECORD_ROOM, Sink, text_room, with_sink};
use super::{ExportSummary, PROGRESS_EVERY, PerRank, Shape, shape};
use crate::error::Result;
use crate::matching::{Message, SendSide};
use crate::stream::{CausalStream, StreamSummary};

/// Microseconds: three decimals of nanoseconds.
const US: u32 = 3;

/// The head of an object of each phase, up to its thread id.
const PH_LEN: usize = 18;
const fn head_of(ph: u8) -> [u8; PH_LEN] {
    let mut head = *b",\n{\"ph\":\"?\",\"tid\":";
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
    sink: Sink,
    progress: &mut dyn FnMut(u64),
) -> Result<ExportSummary> {
    let mut w =
        Chrome { sink, origin: stream.pending_start_bound(), lanes: PerRank::default(), events: 0, messages: 0 };
    w.sink.bytes(b"{\"traceEvents\":[\n{\"ph\":\"M\",\"name\":\"process_name\",\"args\":{\"name\":\"grappe job\"}}");
    while let Some(linked) = stream.next_event()? {
        w.event::<SITES>(linked.event, linked.message);
        if w.events % PROGRESS_EVERY == 0 {
            progress(w.events);
        }
        w.sink.maybe_flush()?;
    }
    progress(w.events);
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
    events: u64,
    messages: u64,
}

/// A rank's lane.
#[derive(Default)]
struct Lane {
    named: bool,
    /// Regions open, so that a leave with no enter is left out.
    depth: u32,
}

impl Chrome<'_> {
    #[inline(always)]
    fn event<const SITES: bool>(&mut self, e: &Event, message: &Message) {
        self.events += 1;
        let origin = *self.origin.get_or_insert(e.start);
        let lane = self.lanes.get(e.rank);
        if !lane.named {
            lane.named = true;
            name_lane(&mut self.sink, e.rank);
        }
        match shape(&e.body) {
            Shape::Call(name) => {
                let members = if let Body::CommCreate { members, .. } = &e.body { members.len() } else { 0 };
                let site = if SITES { e.site.map(|site| site.text()) } else { None };
                // Room for the slice, the two ends of a flow and a delivery.
                let mut c = self.sink.record(3 * RECORD_ROOM + NUMBER_ROOM * members + site.map_or(0, text_room));
                call(&mut c, e, name, origin, message, site);
                if let Message::Received { channel, send } = message {
                    self.messages += 1;
                    flow(&mut c, channel.src, send, e, origin);
                }
            }
            Shape::Enter { name, location } => {
                self.lanes.get(e.rank).depth += 1;
                let mut c = self.sink.record(RECORD_ROOM + text_room(name) + text_room(location));
                open(&mut c, &PH_B, e.rank, e.start, origin);
                c.bytes(b",\"name\":");
                c.json_str(name);
                c.bytes(b",\"args\":{\"location\":");
                c.json_str(location);
                c.bytes(b"}}");
            }
            Shape::Leave { .. } => {
                let lane = self.lanes.get(e.rank);
                if lane.depth > 0 {
                    lane.depth -= 1;
                    let mut c = self.sink.record(RECORD_ROOM);
                    open(&mut c, &PH_E, e.rank, e.start, origin);
                    c.byte(b'}');
                }
            }
            Shape::Counter { name, value } => {
                let mut c = self.sink.record(RECORD_ROOM + text_room(name));
                open(&mut c, &PH_C, e.rank, e.start, origin);
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
                instant(&mut c, e, name, origin);
                c.bytes(b",\"args\":{\"location\":");
                c.json_str(location);
                c.bytes(b"}}");
            }
            Shape::Mark(name) => {
                let mut c = self.sink.record(RECORD_ROOM + text_room(name));
                instant(&mut c, e, name, origin);
                c.byte(b'}');
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
        c.bytes(b"}}\n");
    }
}

/// The metadata of a rank's lane: its name and place.
fn name_lane(sink: &mut Sink, rank: u32) {
    let mut c = sink.record(RECORD_ROOM);
    c.bytes(b",\n{\"ph\":\"M\",\"tid\":");
    c.uint(rank as u64);
    c.bytes(b",\"name\":\"thread_name\",\"args\":{\"name\":\"rank ");
    c.uint(rank as u64);
    c.bytes(b"\"}},\n{\"ph\":\"M\",\"tid\":");
    c.uint(rank as u64);
    c.bytes(b",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":");
    c.uint(rank as u64);
    c.bytes(b"}}");
}

/// `,\n{"ph":PH,"tid":RANK,"ts":T` — the object is left open.
/// `ph` is the `PH_*` head of the phase.
#[inline(always)]
fn open(c: &mut Cursor, ph: &[u8; PH_LEN], rank: u32, t: u64, origin: u64) {
    c.bytes(ph);
    c.uint(rank as u64);
    c.bytes(b",\"ts\":");
    c.date(t, origin, US);
}

#[inline(always)]
fn instant(c: &mut Cursor, e: &Event, name: &str, origin: u64) {
    open(c, &PH_I, e.rank, e.start, origin);
    c.bytes(b",\"name\":");
    c.json_str(name);
}

#[inline(always)]
fn call(c: &mut Cursor, e: &Event, name: &'static str, origin: u64, message: &Message, site: Option<&str>) {
    open(c, &PH_X, e.rank, e.start, origin);
    c.bytes(b",\"dur\":");
    c.fixed(e.end.saturating_sub(e.start), US);
    c.bytes(b",\"name\":\"");
    c.bytes(name.as_bytes());
    c.byte(b'"');
    args(c, &e.body, message, site);
    c.byte(b'}');
}

/// The arrow of a matched message, written with its receive (so no flow
/// is left without its end): `s` in the send's slice, `f` in the
/// receive's.
#[inline(always)]
fn flow(c: &mut Cursor, sender: u32, send: &SendSide, recv: &Event, origin: u64) {
    let (at_send, at_recv) = flow_dates(send, recv);
    open(c, &PH_S, sender, at_send, origin);
    flow_tail(c, send.id);
    if recv.start < send.start {
        // Perfetto binds an `f` to the latest slice begun on its lane and
        // points the flow from whichever of its two slices starts first:
        // here the receive's. A mark at the delivery, begun after the send,
        // takes the flow's end instead, and the arrow goes forward in time.
        open(c, &PH_I, recv.rank, at_recv, origin);
        c.bytes(b",\"name\":\"delivery\",\"cat\":\"message\"}");
    }
    open(c, &PH_F, recv.rank, at_recv, origin);
    c.bytes(b",\"bp\":\"e\"");
    flow_tail(c, send.id);
}

/// The dates of a flow's two ends: each inside its slice (its middle when
/// it can be), and the end no earlier than the start. Perfetto reads
/// events in date order and drops a flow whose `f` comes before its `s`,
/// which the middles alone give for a receive posted before its send.
/// Only a tachyon (send started after the receive ended) leaves them out
/// of order.
fn flow_dates(send: &SendSide, recv: &Event) -> (u64, u64) {
    let last_in_recv = recv.end.saturating_sub(1).max(recv.start);
    let at_send = middle(send.start, send.end).min(last_in_recv).max(send.start);
    let at_recv = middle(recv.start, recv.end).max(at_send).min(last_in_recv);
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

/// `,"args":{...}` of a call, its site last if given (no args for a
/// flush).
#[inline(always)]
fn args(c: &mut Cursor, body: &Body, message: &Message, site: Option<&str>) {
    match *body {
        Body::Send { dest, tag, comm, bytes, .. } | Body::Isend { dest, tag, comm, bytes, .. } => {
            head(c, comm);
            peer(c, dest);
            int(c, b",\"tag\":", tag as i64);
            uint(c, b",\"bytes\":", bytes);
            if let Body::Isend { request, .. } = *body {
                uint(c, b",\"request\":", request);
            }
        }
        Body::Recv { src, tag, comm, bytes, arrived, sendrecv } => {
            head(c, comm);
            peer(c, src);
            int(c, b",\"tag\":", tag as i64);
            uint(c, b",\"bytes\":", bytes);
            flag(c, b",\"arrived\":", arrived);
            if sendrecv {
                c.bytes(b",\"sendrecv\":true");
            }
        }
        Body::Irecv { src, tag, comm, request } => {
            head(c, comm);
            peer(c, src);
            selector(c, b",\"tag\":", tag);
            uint(c, b",\"request\":", request);
        }
        Body::Wait { request, comm, completion } => {
            head(c, comm);
            uint(c, b",\"request\":", request);
            completed(c, &completion);
        }
        Body::Test { request, comm, completion } => {
            head(c, comm);
            uint(c, b",\"request\":", request);
            match completion {
                Some(done) => completed(c, &done),
                None => c.bytes(b",\"completed\":false"),
            }
        }
        Body::Probe { src, tag, comm, found } | Body::Iprobe { src, tag, comm, found } => {
            head(c, comm);
            peer(c, src);
            selector(c, b",\"tag\":", tag);
            match found {
                Some(done) => completed(c, &done),
                None => c.bytes(b",\"found\":false"),
            }
        }
        Body::Collective { comm, root, bytes, .. } => {
            head(c, comm);
            if root != ANY {
                uint(c, b",\"root\":", root as u64);
            }
            uint(c, b",\"bytes\":", bytes);
        }
        Body::CommCreate { comm, parent, ref members } => {
            head(c, comm);
            uint(c, b",\"parent\":", parent as u64);
            c.bytes(b",\"members\":[");
            for (i, &m) in members.iter().enumerate() {
                if i > 0 {
                    c.byte(b',');
                }
                c.uint(m as u64);
            }
            c.byte(b']');
        }
        _ => return,
    }
    match message {
        Message::Sent { id, .. } | Message::Received { send: SendSide { id, .. }, .. } => uint(c, b",\"msg\":", *id),
        _ => {}
    }
    if let Some(site) = site {
        c.bytes(b",\"site\":");
        c.json_str(site);
    }
    c.byte(b'}');
}

#[inline(always)]
fn head(c: &mut Cursor, comm: u32) {
    c.bytes(b",\"args\":{\"comm\":");
    c.uint(comm as u64);
}

#[inline(always)]
fn uint(c: &mut Cursor, key: &[u8], v: u64) {
    c.bytes(key);
    c.uint(v);
}

#[inline(always)]
fn int(c: &mut Cursor, key: &[u8], v: i64) {
    c.bytes(key);
    c.int(v);
}

#[inline(always)]
fn flag(c: &mut Cursor, key: &[u8], v: bool) {
    c.bytes(key);
    if v { c.bytes(b"true") } else { c.bytes(b"false") }
}

/// A source or tag selector: a number, or "any".
#[inline(always)]
fn selector(c: &mut Cursor, key: &[u8], v: u32) {
    c.bytes(key);
    if v == ANY { c.bytes(b"\"any\"") } else { c.uint(v as u64) }
}

#[inline(always)]
fn peer(c: &mut Cursor, rank: u32) {
    selector(c, b",\"peer\":", rank);
}

/// What a wait, test or probe completed: for a receive, the message.
#[inline(always)]
fn completed(c: &mut Cursor, done: &Completion) {
    if !done.is_recv {
        c.bytes(b",\"completed\":\"send\"");
        return;
    }
    c.bytes(b",\"completed\":\"recv\"");
    peer(c, done.src);
    int(c, b",\"tag\":", done.tag as i64);
    uint(c, b",\"bytes\":", done.bytes);
    flag(c, b",\"arrived\":", done.arrived);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn recv_at(start: u64, end: u64) -> Event {
        Event { rank: 1, start, end, alpha_ns: 0, site: None, body: Body::Init }
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
