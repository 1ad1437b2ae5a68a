//! The Pajé trace format, as ViTE and pajeng (`pj_dump`) read it.
//!
//! Types: a `JOB` container holds one `RANK` container per rank (all
//! created at the start, in rank order, which is the viewers' order of
//! the lanes; destroyed at the end). A rank has two state
//! types, `CALL` (runtime calls, one value per call name: `send`, `wait`,
//! `allreduce`..., `init` and `finalize` too, declared with colours) and
//! `REGION` (user regions, pushed and popped, so they nest), an event type
//! `MARK` (user points and flush starts) and one variable type per counter
//! name. Marks and links are not declared values: ViTE warns of a value
//! declared on any type but a state's.
//! Each matched message is a `MSG` link on the job container, from the
//! send's start to the receive's end, keyed by the message id; a send
//! never received draws no link (pajeng rejects links with one end).
//!
//! A call that failed (a peer died, the job was stopped) is a state of
//! its own value, `recv_failed` (named `recv (failed)`, near black),
//! declared before its first use; it has no link.
//!
//! With [`write_paje_with_sites`], each call's state is pushed by a second
//! `PajePushState` definition (code 22) with one more field, `Site`: the
//! call's source location (`file:line:column`), which `pj_dump -u` prints
//! and ViTE lists with the state.
//!
//! A `sendrecv` (a send, then a receive marked as its second half with
//! the same dates) is one `sendrecv` state: each send's state waits for
//! the rank's next event to tell (its link does not wait), and holds back
//! the records dated after it meanwhile.
//!
//! Pajé wants the file in nondecreasing date order: records go through
//! the reorder buffer (`order`). Dates are seconds from the first event with
//! nine decimals. A rank's records are made nondecreasing in call order,
//! so the overlapping calls of a sendrecv are drawn one after the other
//! and the `CALL` stack never pops the wrong state. Names (regions,
//! points, counters) are quoted with their double quotes turned single:
//! the format has no escapes.

use std::collections::BTreeSet;
use std::io::Write;

use grappe_analysis::{CausalStream, Linked, Message, PerRank, Result};
use grappe_trace::{Body, Event, Site};
use rustc_hash::{FxHashMap, FxHashSet, FxHasher};

use crate::order::{Ordered, RankClocks, Reorder, run};
use crate::shape::{CALL_NAMES, FAILED_MARK, Names, OpenRegions, Shape, job_name, shape};
use crate::sink::{Cursor, RECORD_ROOM, Sink, text_room, with_sink};
use crate::summary::ExportSummary;

/// Seconds: nine decimals of nanoseconds.
const SECONDS: u32 = 9;

/// Writes `stream` to `out` in the Pajé format. `progress` gets the events
/// read so far, now and then and at the end.
pub fn write_paje(
    stream: CausalStream,
    out: &mut (dyn Write + Send),
    progress: &mut dyn FnMut(u64),
) -> Result<ExportSummary> {
    write_paje_as(stream, out, progress, false)
}

/// [`write_paje`], each call's state with its call site in field `Site`.
pub fn write_paje_with_sites(
    stream: CausalStream,
    out: &mut (dyn Write + Send),
    progress: &mut dyn FnMut(u64),
) -> Result<ExportSummary> {
    write_paje_as(stream, out, progress, true)
}

fn write_paje_as(
    stream: CausalStream,
    out: &mut (dyn Write + Send),
    progress: &mut dyn FnMut(u64),
    sites: bool,
) -> Result<ExportSummary> {
    with_sink(out, "paje trace output", |mut sink| {
        let mut paje = Paje { sites, ..Paje::default() };
        let job = job_name(&stream);
        let ranks: Vec<u32> = stream.traced_ranks().collect();
        let run = run(stream, &mut paje, &mut sink, progress, |paje, sink, origin| {
            paje.origin = origin;
            header(sink, &job, paje.sites);
            // Every rank's container at the start, in rank order: viewers
            // list containers in the order they are created (ViTE showed
            // the ranks in the order of their first events).
            for &rank in &ranks {
                paje.create(sink, rank, origin);
            }
        })?;
        let written_bytes = sink.finish()?;
        Ok(ExportSummary {
            events: run.events,
            messages: paje.links.drawn,
            written_bytes,
            late_records: run.late,
            blocks: Vec::new(),
            stream: run.summary,
        })
    })
}

/// A dated Pajé record, before it is written.
enum Record {
    Push {
        rank: u32,
        region: bool,
        value: Value,
        /// A call's site, in the export with sites.
        site: Option<Site>,
    },
    Pop {
        rank: u32,
        region: bool,
    },
    Mark {
        rank: u32,
        mark: Mark,
    },
    Counter {
        rank: u32,
        counter: u32,
        value: i64,
    },
    /// A message's start: written only if its receive came by then.
    LinkStart {
        rank: u32,
        id: u64,
    },
    LinkEnd {
        rank: u32,
        id: u64,
    },
}

/// What a `MARK` event shows: written as its name, never declared (see
/// [`Paje::mark`]).
#[derive(Clone, Copy)]
enum Mark {
    /// A runtime instant (the start of a flush).
    Runtime(&'static str),
    /// A user point, by number.
    Point(u32),
}

/// A state value: declared in the header, a failed call's (declared at
/// its first use), or a numbered name.
#[derive(Clone, Copy)]
enum Value {
    Declared(&'static str),
    /// A call that failed: `recv_failed`, shown as `recv (failed)`.
    Failed(&'static str),
    Region(u32),
}

#[derive(Default)]
struct Paje {
    /// Calls carry their site.
    sites: bool,
    origin: u64,
    clocks: RankClocks,
    lanes: PerRank<Lane>,
    regions: Names,
    points: Names,
    counters: Names,
    /// Names already declared in the file, by kind (0: regions, 1: failed
    /// calls, by their place in `CALL_NAMES`, 2: counters) and number.
    declared: FxHashSet<(u8, u32)>,
    links: Links,
}

#[derive(Default)]
struct Lane {
    /// Regions open (records generated).
    regions: OpenRegions,
    /// The container is in the file.
    created: bool,
    /// A send whose state is not recorded yet: a sendrecv's if the rank's
    /// next event is its receive.
    held_send: Option<HeldSend>,
}

/// A send and its dates on the rank's clock.
#[derive(Clone, Copy)]
struct HeldSend {
    event: Event,
    start: u64,
    end: u64,
}

/// Messages whose start is waiting for their receive.
#[derive(Default)]
struct Links {
    /// Message id → start date, for sends not yet received.
    in_flight: FxHashMap<u64, u64>,
    /// The same, by date, for the earliest.
    by_date: BTreeSet<(u64, u64)>,
    /// Received: their start is to be written.
    received: FxHashSet<u64>,
    drawn: u64,
}

impl Ordered for Paje {
    type Record = Record;

    fn event(&mut self, linked: Linked, records: &mut Reorder<Record>) {
        let e = &linked.event;
        let rank = e.rank;
        if self.lanes.get(rank).held_send.is_some() && self.ends_held_send(&linked, records) {
            return;
        }
        let start = self.clocks.at(rank, e.start);
        match shape(&e.body) {
            Shape::Call(_) if matches!(e.body, Body::Send { .. }) => {
                let end = self.clocks.at(rank, e.end);
                self.lanes.get(rank).held_send = Some(HeldSend { event: *e, start, end });
            }
            Shape::Call(name) => {
                let site = self.site_of(e);
                let value = call_value(name, e.body.failed());
                call_state(records, rank, value, start, self.clocks.at(rank, e.end), site);
            }
            Shape::Enter { name, .. } => {
                self.lanes.get(rank).regions.enter(name);
                let value = Value::Region(self.regions.id(name).0);
                records.push(start, Record::Push { rank, region: true, value, site: None });
            }
            Shape::Leave { name } => {
                for _ in 0..self.lanes.get(rank).regions.leave(name) {
                    records.push(start, Record::Pop { rank, region: true });
                }
            }
            Shape::Counter { name, value } => {
                records.push(start, Record::Counter { rank, counter: self.counters.id(name).0, value });
            }
            Shape::Point { name, .. } => {
                records.push(start, Record::Mark { rank, mark: Mark::Point(self.points.id(name).0) });
            }
            Shape::Mark(name) => records.push(start, Record::Mark { rank, mark: Mark::Runtime(name) }),
        }
        let end = self.clocks.at(rank, e.end);
        self.link(&linked.message, rank, start, end, records);
    }

    fn hold(&self) -> u64 {
        // A pass over the lanes every `RELEASE_EVERY` events costs less
        // than keeping the held sends sorted at every send.
        let held = self.lanes.iter().filter_map(|(_, lane)| lane.held_send.map(|send| send.start)).min();
        let link = self.links.by_date.first().map(|&(date, _)| date);
        held.into_iter().chain(link).min().unwrap_or(u64::MAX)
    }

    fn end_of_stream(&mut self, records: &mut Reorder<Record>) {
        let holding: Vec<u32> = self.lanes.iter().filter(|(_, l)| l.held_send.is_some()).map(|(r, _)| r).collect();
        for rank in holding {
            if let Some(send) = self.lanes.get(rank).held_send.take() {
                let site = self.site_of(&send.event);
                let value = call_value("send", send.event.body.failed());
                call_state(records, rank, value, send.start, send.end, site);
            }
        }
    }

    fn write(&mut self, s: &mut Sink, t: u64, record: Record) {
        match record {
            Record::Push { rank, region, value, site } => {
                self.create(s, rank, t);
                self.declare(s, value);
                let mut c = self.line(s, if site.is_some() { b"22 " } else { b"12 " }, t, rank);
                c.bytes(if region { b" REGION " } else { b" CALL " });
                value.write(&mut c);
                drop(c);
                if let Some(site) = site {
                    let text = site.text();
                    let mut c = s.record(1 + text_room(text));
                    c.byte(b' ');
                    c.quoted_plain(text);
                }
            }
            Record::Pop { rank, region } => {
                let mut c = self.line(s, b"14 ", t, rank);
                c.bytes(if region { b" REGION" } else { b" CALL" });
            }
            Record::Mark { rank, mark } => {
                self.create(s, rank, t);
                self.mark(s, t, rank, mark);
            }
            Record::Counter { rank, counter, value } => {
                self.create(s, rank, t);
                self.declare_counter(s, counter);
                let mut c = self.line(s, b"8 ", t, rank);
                c.bytes(b" v");
                c.uint(counter as u64);
                c.byte(b' ');
                c.int(value);
            }
            Record::LinkStart { rank, id } => {
                if !self.links.started(id) {
                    return;
                }
                self.create(s, rank, t);
                self.link_line(s, b"16 ", t, rank, id);
            }
            Record::LinkEnd { rank, id } => {
                self.create(s, rank, t);
                self.link_line(s, b"19 ", t, rank, id);
            }
        }
        s.bytes(b"\n");
    }

    fn finish(&mut self, s: &mut Sink, end: u64) {
        let lanes: Vec<(u32, usize)> =
            self.lanes.iter().filter(|(_, l)| l.created).map(|(r, l)| (r, l.regions.depth())).collect();
        for (rank, depth) in lanes {
            for _ in 0..depth {
                self.line(s, b"14 ", end, rank).bytes(b" REGION\n");
            }
            let mut c = s.record(RECORD_ROOM);
            c.bytes(b"7 ");
            c.date(end, self.origin, SECONDS);
            c.bytes(b" RANK r");
            c.uint(rank as u64);
            c.byte(b'\n');
        }
        let mut c = s.record(RECORD_ROOM);
        c.bytes(b"7 ");
        c.date(end, self.origin, SECONDS);
        c.bytes(b" JOB job\n");
    }
}

impl Paje {
    /// Records the state of the send `linked`'s rank holds: a sendrecv's
    /// if `linked` is its receive (then recorded too: `true`), a send's
    /// otherwise. Out of line: most events follow no send.
    #[inline(never)]
    fn ends_held_send(&mut self, linked: &Linked, records: &mut Reorder<Record>) -> bool {
        let e = &linked.event;
        let Some(send) = self.lanes.get(e.rank).held_send.take() else { return false };
        let site = self.site_of(&send.event);
        if e.ends_sendrecv_of(&send.event) {
            let value = call_value("sendrecv", send.event.body.failed() || e.body.failed());
            call_state(records, e.rank, value, send.start, send.end, site);
            let end = self.clocks.at(e.rank, e.end);
            self.link(&linked.message, e.rank, send.start, end, records);
            return true;
        }
        call_state(records, e.rank, call_value("send", send.event.body.failed()), send.start, send.end, site);
        false
    }

    /// The site to write with call `e`'s state.
    #[inline]
    fn site_of(&self, e: &Event) -> Option<Site> {
        if self.sites { e.site } else { None }
    }

    /// Records the link of a send or a matched receive.
    fn link(&mut self, message: &Message, rank: u32, start: u64, end: u64, records: &mut Reorder<Record>) {
        match *message {
            Message::Sent { id, .. } => {
                self.links.in_flight.insert(id, start);
                self.links.by_date.insert((start, id));
                records.push(start, Record::LinkStart { rank, id });
            }
            Message::Received { send, .. } => {
                if let Some(sent) = self.links.in_flight.remove(&send.id) {
                    self.links.by_date.remove(&(sent, send.id));
                    self.links.received.insert(send.id);
                    self.links.drawn += 1;
                    records.push(end.max(sent), Record::LinkEnd { rank, id: send.id });
                }
            }
            Message::None | Message::Unmatched { .. } | Message::SendOutside { .. } => {}
        }
    }

    /// A `MARK` event named as its value. ViTE takes entity values
    /// declared on state types only (it warns of any other, and of a link's
    /// too); both it and pajeng make an undeclared value on first use.
    fn mark(&self, s: &mut Sink, t: u64, rank: u32, mark: Mark) {
        let name = match mark {
            Mark::Runtime(name) => name,
            Mark::Point(id) => self.points.name(id),
        };
        let mut c = self.line_with_room(s, b"20 ", t, rank, text_room(name));
        c.bytes(b" MARK ");
        c.quoted_plain(name);
    }

    /// `CODE DATE rRANK`, the start of a line on a rank's container; the
    /// cursor has room for the rest of the line.
    fn line<'s>(&self, s: &'s mut Sink, code: &[u8], t: u64, rank: u32) -> Cursor<'s> {
        self.line_with_room(s, code, t, rank, 0)
    }

    /// [`Paje::line`] with `extra` bytes more room.
    fn line_with_room<'s>(&self, s: &'s mut Sink, code: &[u8], t: u64, rank: u32, extra: usize) -> Cursor<'s> {
        let mut c = s.record(RECORD_ROOM + extra);
        c.bytes(code);
        c.date(t, self.origin, SECONDS);
        c.bytes(b" r");
        c.uint(rank as u64);
        c
    }

    fn link_line(&self, s: &mut Sink, code: &[u8], t: u64, rank: u32, id: u64) {
        let mut c = s.record(RECORD_ROOM);
        c.bytes(code);
        c.date(t, self.origin, SECONDS);
        c.bytes(b" job MSG r");
        c.uint(rank as u64);
        // The value is undeclared, as a mark's (see `mark`).
        c.bytes(b" message m");
        c.uint(id);
    }

    /// Creates a rank's container before its first record.
    fn create(&mut self, s: &mut Sink, rank: u32, t: u64) {
        let lane = self.lanes.get(rank);
        if lane.created {
            return;
        }
        lane.created = true;
        let mut c = s.record(RECORD_ROOM);
        c.bytes(b"6 ");
        c.date(t, self.origin, SECONDS);
        c.bytes(b" r");
        c.uint(rank as u64);
        c.bytes(b" RANK job \"rank ");
        c.uint(rank as u64);
        c.bytes(b"\"\n");
    }

    /// Declares a region name, or a failed call's value, before its first
    /// use.
    fn declare(&mut self, s: &mut Sink, value: Value) {
        let id = match value {
            Value::Declared(_) => return,
            Value::Failed(name) => return self.declare_failed(s, name),
            Value::Region(id) => id,
        };
        if !self.declared.insert((0, id)) {
            return;
        }
        let name = self.regions.name(id);
        let mut c = s.record(RECORD_ROOM + text_room(name));
        c.bytes(b"5 ");
        value.write(&mut c);
        c.bytes(b" REGION ");
        c.quoted_plain(name);
        c.byte(b' ');
        colour(&mut c, name);
        c.byte(b'\n');
    }

    /// `5 recv_failed CALL "recv (failed)" COLOUR`, once: only traces
    /// of failed jobs have them.
    #[cold]
    fn declare_failed(&mut self, s: &mut Sink, name: &'static str) {
        let id = CALL_NAMES.iter().position(|&n| n == name).unwrap_or(CALL_NAMES.len());
        if !self.declared.insert((1, id as u32)) {
            return;
        }
        let mut c = s.record(RECORD_ROOM);
        c.bytes(b"5 ");
        Value::Failed(name).write(&mut c);
        c.bytes(b" CALL \"");
        c.bytes(name.as_bytes());
        c.bytes(FAILED_MARK.as_bytes());
        c.bytes(b"\" \"");
        c.bytes(FAILED_COLOUR.as_bytes());
        c.bytes(b"\"\n");
    }

    fn declare_counter(&mut self, s: &mut Sink, id: u32) {
        if !self.declared.insert((2, id)) {
            return;
        }
        let name = self.counters.name(id);
        let mut c = s.record(RECORD_ROOM + text_room(name));
        c.bytes(b"1 v");
        c.uint(id as u64);
        c.bytes(b" RANK ");
        c.quoted_plain(name);
        c.byte(b' ');
        colour(&mut c, name);
        c.byte(b'\n');
    }
}

impl Value {
    fn write(self, c: &mut Cursor) {
        match self {
            Value::Declared(name) => c.bytes(name.as_bytes()),
            Value::Failed(name) => {
                c.bytes(name.as_bytes());
                c.bytes(b"_failed");
            }
            Value::Region(id) => {
                c.byte(b'g');
                c.uint(id as u64);
            }
        }
    }
}

impl Links {
    /// Whether the start of message `id`, due now, is to be written: yes if
    /// its receive came; if not, it never will be drawn.
    fn started(&mut self, id: u64) -> bool {
        if self.received.remove(&id) {
            return true;
        }
        if let Some(sent) = self.in_flight.remove(&id) {
            self.by_date.remove(&(sent, id));
        }
        false
    }
}

/// A colour for a user name ("r g b", each in 0.30..=0.99), the same for
/// the same name in every export.
fn colour(c: &mut Cursor, name: &str) {
    use std::hash::Hasher;
    let mut h = FxHasher::default();
    h.write(name.as_bytes());
    let bits = h.finish();
    c.byte(b'"');
    for i in 0..3 {
        if i > 0 {
            c.byte(b' ');
        }
        c.fixed(30 + (bits >> (16 * i)) % 70, 2);
    }
    c.byte(b'"');
}

/// The records of a call's state.
fn call_state(records: &mut Reorder<Record>, rank: u32, value: Value, start: u64, end: u64, site: Option<Site>) {
    records.push(start, Record::Push { rank, region: false, value, site });
    records.push(end, Record::Pop { rank, region: false });
}

/// The state value of call `name`, or of its failed calls.
#[inline]
fn call_value(name: &'static str, failed: bool) -> Value {
    if failed { Value::Failed(name) } else { Value::Declared(name) }
}

/// The colour of every failed call: near black, the run stopped there.
const FAILED_COLOUR: &str = "0.15 0.15 0.15";

/// The colour of a call: point-to-point sends blue, receives red, the two
/// together (sendrecv) purple, waits
/// and tests orange, probes yellow, collectives green, the rest grey.
fn call_colour(name: &str) -> &'static str {
    match name {
        "send" | "isend" => "0.20 0.40 0.90",
        "recv" | "irecv" => "0.90 0.25 0.20",
        "sendrecv" => "0.60 0.30 0.75",
        "wait" | "test" => "1.00 0.60 0.10",
        "probe" | "iprobe" => "0.95 0.90 0.20",
        "comm_create" | "flush" => "0.60 0.60 0.60",
        "init" | "finalize" => "0.45 0.45 0.55",
        _ => "0.20 0.75 0.30",
    }
}

/// Event definitions (field order as pajeng's examples; with `sites`, the
/// push with a site), types, the declared values, and the job container
/// (named `job`).
fn header(s: &mut Sink, job: &str, sites: bool) {
    s.bytes(EVENT_DEFINITIONS.as_bytes());
    if sites {
        s.bytes(PUSH_WITH_SITE.as_bytes());
    }
    s.bytes(
        b"0 JOB 0 \"job\"\n0 RANK JOB \"rank\"\n2 CALL RANK \"call\"\n2 REGION RANK \"region\"\n\
          3 MARK RANK \"mark\"\n4 MSG JOB RANK RANK \"message\"\n",
    );
    for name in CALL_NAMES {
        s.bytes(b"5 ");
        s.bytes(name.as_bytes());
        s.bytes(b" CALL \"");
        s.bytes(name.as_bytes());
        s.bytes(b"\" \"");
        s.bytes(call_colour(name).as_bytes());
        s.bytes(b"\"\n");
    }
    s.bytes(b"6 0.000000000 job JOB 0 ");
    s.record(text_room(job)).quoted_plain(job);
    s.bytes(b"\n");
}

/// A second definition of `PajePushState`, with the call's site.
const PUSH_WITH_SITE: &str = "\
%EventDef PajePushState 22
%       Time date
%       Container string
%       Type string
%       Value string
%       Site string
%EndEventDef
";

const EVENT_DEFINITIONS: &str = "\
%EventDef PajeDefineContainerType 0
%       Alias string
%       Type string
%       Name string
%EndEventDef
%EventDef PajeDefineVariableType 1
%       Alias string
%       Type string
%       Name string
%       Color color
%EndEventDef
%EventDef PajeDefineStateType 2
%       Alias string
%       Type string
%       Name string
%EndEventDef
%EventDef PajeDefineEventType 3
%       Alias string
%       Type string
%       Name string
%EndEventDef
%EventDef PajeDefineLinkType 4
%       Alias string
%       Type string
%       StartContainerType string
%       EndContainerType string
%       Name string
%EndEventDef
%EventDef PajeDefineEntityValue 5
%       Alias string
%       Type string
%       Name string
%       Color color
%EndEventDef
%EventDef PajeCreateContainer 6
%       Time date
%       Alias string
%       Type string
%       Container string
%       Name string
%EndEventDef
%EventDef PajeDestroyContainer 7
%       Time date
%       Type string
%       Name string
%EndEventDef
%EventDef PajeSetVariable 8
%       Time date
%       Container string
%       Type string
%       Value double
%EndEventDef
%EventDef PajePushState 12
%       Time date
%       Container string
%       Type string
%       Value string
%EndEventDef
%EventDef PajePopState 14
%       Time date
%       Container string
%       Type string
%EndEventDef
%EventDef PajeStartLink 16
%       Time date
%       Container string
%       Type string
%       StartContainer string
%       Value string
%       Key string
%EndEventDef
%EventDef PajeEndLink 19
%       Time date
%       Container string
%       Type string
%       EndContainer string
%       Value string
%       Key string
%EndEventDef
%EventDef PajeNewEvent 20
%       Time date
%       Container string
%       Type string
%       Value string
%EndEventDef
";
