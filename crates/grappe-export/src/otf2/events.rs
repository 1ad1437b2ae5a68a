//! grappe events as OTF2 events, the way Score-P records MPI: each call is
//! a region, Enter at its start and Leave at its end, with the message or
//! collective record inside (a send at the call, a receive at its
//! completion). The Enter of a call made by the program carries where it
//! was made: a `call site` attribute holding a source code location.
//!
//! Each event is written as soon as it is read, to its rank's location:
//! a rank's events come in their own order (a location at a time, or
//! interleaved by the causal stream), so a location needs no buffering
//! but one send. A `sendrecv` is recorded as a send and a
//! receive marked as its second half, with the same dates; each send waits
//! for the rank's next event to tell, and a pair becomes one `MPI_Sendrecv`
//! region with the send record at its enter and the receive record at its
//! leave, as Score-P writes it. OTF2 wants each location's timestamps
//! nondecreasing and its regions nested; a rank's calls may still overlap
//! (an unmarked pair from an older trace), so a call that starts before
//! the previous one ended is entered when that one is left.
//!
//! A call that failed because a peer died or the job was stopped keeps
//! its region, its Enter and Leave at its dates, without its message,
//! request or collective record, and holds a string parameter `call
//! failed` ("a peer died or the job was stopped") at its Leave.
//!
//! A receive whose send is outside the stream's window
//! ([`Message::SendOutside`]) keeps its call region but not its message
//! record: readers pair a channel's sends and receives in order, and a
//! receive with no send would pair every later one with the wrong send.
//!
//! Readers also follow a non-blocking call by its request, from the post
//! (`MpiIsend`, `MpiIrecvRequest`) to the completion. A wait or test whose
//! request the archive never posted (posted before the window, or its
//! record dropped by a full buffer) keeps its region without a request
//! record; if it completes a receive whose send is in the archive, its
//! receive record is a plain `MpiRecv`, so that the channel still pairs.

use grappe_analysis::{LinkedRef, Message};
use grappe_trace::{ANY, Body, Completion, Event};
use rustc_hash::FxHashSet;

use crate::otf2::archive::{EventPhase, EventWriter, GlobalDefs};
use crate::otf2::defs::{Call, Registry, collective_op};
use crate::otf2::error::Otf2Error;
use crate::otf2::ffi::{OTF2_CommRef, OTF2_ParameterRef, OTF2_RegionRef, OTF2_StringRef, OTF2_UNDEFINED_UINT32};

/// The string parameter a failed call holds, and its value.
const FAILED_PARAMETER: &str = "call failed";
use grappe_analysis::failed::WHY;

type Result<T, E = Otf2Error> = std::result::Result<T, E>;

/// The state of one rank's location being written.
#[derive(Default)]
struct Timeline {
    /// Latest timestamp written (OTF2 timestamps never go back).
    last: u64,
    first: Option<u64>,
    /// User regions entered and not left: (name, region), innermost last.
    open: Vec<(OTF2_StringRef, OTF2_RegionRef)>,
    /// A send not written yet: the first half of a sendrecv if the rank's
    /// next event is its receive.
    held_send: Option<Event>,
    /// Requests posted in the archive and not completed yet.
    posted: FxHashSet<u64>,
}

impl Timeline {
    /// The timestamp to write for date `t`: never before the last one.
    #[inline]
    fn at(&mut self, t: u64) -> u64 {
        self.last = self.last.max(t);
        self.first.get_or_insert(self.last);
        self.last
    }
}

/// What the export wrote.
pub(crate) struct Written {
    /// OTF2 events of each location (world rank).
    pub events: Vec<u64>,
    /// First timestamp and trace length, for the clock definition.
    pub clock: (u64, u64),
    /// Messages whose send and receive are both in the archive.
    pub messages: u64,
    /// User region leaves with no matching enter, skipped.
    pub unmatched_leaves: u64,
}

/// Writes the events of a causal stream into an archive's locations.
pub(crate) struct Exporter {
    phase: EventPhase,
    defs: Registry,
    timelines: Vec<Timeline>,
    messages: u64,
    unmatched_leaves: u64,
}

impl Exporter {
    /// An exporter into `phase`, whose locations are the job's world ranks.
    pub(crate) fn new(phase: EventPhase, world: u32) -> Self {
        let timelines = (0..world).map(|_| Timeline::default()).collect();
        Exporter { phase, defs: Registry::new(), timelines, messages: 0, unmatched_leaves: 0 }
    }

    /// Writes one event of the stream.
    #[inline]
    pub(crate) fn write(&mut self, linked: LinkedRef<'_>) -> Result<()> {
        if let Message::Received { .. } = linked.message {
            self.messages += 1;
        }
        let receive = !matches!(linked.message, Message::SendOutside { .. });
        self.write_event(linked.event, receive)
    }

    /// Writes one event of a rank; `receive`: a message it receives is
    /// recorded as such (its send is in the archive, or was never traced).
    #[inline]
    pub(crate) fn write_event(&mut self, event: &Event, receive: bool) -> Result<()> {
        let Some(timeline) = self.timelines.get_mut(event.rank as usize) else {
            return Err(Otf2Error::RankOutOfRange { rank: event.rank, world: self.timelines.len() });
        };
        let mut writer = self.phase.location(event.rank)?;
        if (Out { defs: &mut self.defs, t: timeline, w: &mut writer, receive }).next(event)? {
            self.unmatched_leaves += 1;
        }
        Ok(())
    }

    /// Ends the location of `rank`, whose events are all written: its
    /// held send and open regions, then its writer, which hands its
    /// chunk back (the next location takes it).
    pub(crate) fn finish_location(&mut self, rank: u32) -> Result<()> {
        self.end_timeline(rank)?;
        if let Some(t) = self.timelines.get_mut(rank as usize) {
            t.posted = FxHashSet::default();
        }
        self.phase.close_location(rank)
    }

    /// Writes what a rank's location still holds: a send waiting for its
    /// next event, and the leaves of the user regions still open, at its
    /// last timestamp (a rank that died inside one).
    fn end_timeline(&mut self, rank: u32) -> Result<()> {
        let Some(t) = self.timelines.get_mut(rank as usize) else {
            return Err(Otf2Error::RankOutOfRange { rank, world: self.timelines.len() });
        };
        if let Some(send) = t.held_send.take() {
            let mut writer = self.phase.location(rank)?;
            (Out { defs: &mut self.defs, t: &mut *t, w: &mut writer, receive: true }).event(&send)?;
        }
        if !t.open.is_empty() {
            let mut writer = self.phase.location(rank)?;
            while let Some((_, region)) = t.open.pop() {
                writer.leave(t.last, region)?;
            }
        }
        Ok(())
    }

    /// Ends every location (see [`Exporter::finish_location`]), then
    /// closes the event writers: the definitions come next.
    pub(crate) fn finish(mut self) -> Result<(Registry, Written, GlobalDefs)> {
        let (mut first, mut last) = (u64::MAX, 0);
        for rank in 0..self.timelines.len() as u32 {
            self.end_timeline(rank)?;
            let t = &self.timelines[rank as usize];
            first = first.min(t.first.unwrap_or(u64::MAX));
            last = last.max(t.last);
        }
        let clock = if first == u64::MAX { (0, 0) } else { (first, last - first) };
        let (events, out) = self.phase.into_definitions()?;
        let written = Written { events, clock, messages: self.messages, unmatched_leaves: self.unmatched_leaves };
        Ok((self.defs, written, out))
    }
}

/// The region of a call that failed, if `body` is one.
#[inline]
fn failed_region(body: &Body) -> Option<Call> {
    match *body {
        Body::Send { failed: true, .. } => Some(Call::Send),
        Body::Recv { failed: true, .. } => Some(Call::Recv),
        Body::Wait { failed: true, .. } => Some(Call::Wait),
        Body::Test { failed: true, .. } => Some(Call::Test),
        Body::Probe { failed: true, .. } => Some(Call::Probe),
        Body::Iprobe { failed: true, .. } => Some(Call::Iprobe),
        Body::Collective { op, failed: true, .. } => Some(Call::Collective(op)),
        _ => None,
    }
}

/// OTF2 request ids: grappe records a non-blocking send's request in 32
/// bits, its completion in 64; both are cut to 32 so that they pair.
#[inline]
fn request_id(request: u64) -> u64 {
    request & 0xffff_ffff
}

/// One event being written: the definitions, and the location's state
/// and writer.
struct Out<'a, 'w> {
    defs: &'a mut Registry,
    t: &'a mut Timeline,
    w: &'a mut EventWriter<'w>,
    /// Whether the event's receive record is written (not when its send
    /// is outside the window).
    receive: bool,
}

impl Out<'_, '_> {
    /// Writes the rank's next event `e`, and first the send held before
    /// it; a send is held until then. `true` for a region leave with no
    /// enter, skipped.
    fn next(&mut self, e: &Event) -> Result<bool> {
        if let Some(send) = self.t.held_send.take() {
            if e.ends_sendrecv_of(&send) {
                return self.sendrecv(&send, e);
            }
            self.event(&send)?;
        }
        if let Body::Send { .. } = e.body {
            self.t.held_send = Some(*e);
            return Ok(false);
        }
        self.event(e)
    }

    /// A sendrecv as Score-P records it: one region, the send record at
    /// its enter, the receive record at its leave; a half that failed has
    /// no record, and the region says the call failed.
    fn sendrecv(&mut self, send: &Event, recv: &Event) -> Result<bool> {
        let (
            Body::Send { dest, tag: sent_tag, comm: sent_comm, bytes: sent, failed: send_failed, .. },
            Body::Recv { src, tag, comm, bytes, failed: recv_failed, .. },
        ) = (send.body, recv.body)
        else {
            // Not a pair after all: each half as it is.
            self.event(send)?;
            return self.event(recv);
        };
        let (sent_comm, to) = self.peer(send.rank, sent_comm, dest)?;
        let (comm, from) = self.peer(recv.rank, comm, src)?;
        let receive = self.receive && !recv_failed;
        let failed = self.failure(send_failed || recv_failed)?;
        self.call(Call::Sendrecv, recv, |w, start, end| {
            if !send_failed {
                w.mpi_send(start, to, sent_comm, sent_tag as u32, sent)?;
            }
            if receive {
                w.mpi_recv(end, from, comm, tag as u32, bytes)?;
            }
            failed.map_or(Ok(()), |(parameter, why)| w.parameter_string(end, parameter, why))
        })
    }

    /// Writes event `e`; `true` for a region leave with no enter, skipped.
    fn event(&mut self, e: &Event) -> Result<bool> {
        if let Some(call) = failed_region(&e.body) {
            return self.failed_call(call, e);
        }
        match &e.body {
            Body::Init => self.call(Call::Init, e, |_, _, _| Ok(())),
            Body::Finalize => self.call(Call::Finalize, e, |_, _, _| Ok(())),
            Body::Send { dest, tag, comm, bytes, .. } => {
                let (comm, to) = self.peer(e.rank, *comm, *dest)?;
                self.call(Call::Send, e, |w, start, _| w.mpi_send(start, to, comm, *tag as u32, *bytes))
            }
            Body::Recv { .. } if !self.receive => self.call(Call::Recv, e, |_, _, _| Ok(())),
            Body::Recv { src, tag, comm, bytes, .. } => {
                let (comm, from) = self.peer(e.rank, *comm, *src)?;
                self.call(Call::Recv, e, |w, _, end| w.mpi_recv(end, from, comm, *tag as u32, *bytes))
            }
            Body::Isend { dest, tag, comm, bytes, request, .. } => {
                let (comm, to) = self.peer(e.rank, *comm, *dest)?;
                let request = request_id(*request);
                self.t.posted.insert(request);
                self.call(Call::Isend, e, |w, start, _| w.mpi_isend(start, to, comm, *tag as u32, *bytes, request))
            }
            Body::Irecv { request, .. } => {
                let request = request_id(*request);
                self.t.posted.insert(request);
                self.call(Call::Irecv, e, |w, start, _| w.mpi_irecv_request(start, request))
            }
            Body::Wait { request, comm, completion, .. } => {
                self.completed(Call::Wait, e, *request, *comm, Some(completion))
            }
            Body::Test { request, comm, completion, .. } => {
                self.completed(Call::Test, e, *request, *comm, completion.as_ref())
            }
            Body::Probe { .. } => self.call(Call::Probe, e, |_, _, _| Ok(())),
            Body::Iprobe { .. } => self.call(Call::Iprobe, e, |_, _, _| Ok(())),
            Body::Collective { op, comm, root, bytes, .. } => {
                let comm = self.defs.comm(e.rank, *comm)?;
                // grappe records the root as a rank of the communicator, as
                // OTF2 wants it, and only this rank's contribution in bytes,
                // given as both the bytes sent and received.
                let root = if *root == ANY { OTF2_UNDEFINED_UINT32 } else { *root };
                let op_id = collective_op(*op);
                self.call(Call::Collective(*op), e, |w, start, end| {
                    w.mpi_collective_begin(start)?;
                    w.mpi_collective_end(end, op_id, comm, root, *bytes, *bytes)
                })
            }
            // A definition only: OTF2's CommCreate event needs a communicator
            // flagged for creation events and a CREATE_HANDLE collective.
            Body::CommCreate { comm, parent, members } => {
                self.defs.comm_created(e.rank, *comm, *parent, *members).map(|_| false)
            }
            Body::RegionEnter { name, location } => {
                let (name, region) = self.defs.user_region(name, location)?;
                let at = self.t.at(e.start);
                self.w.enter(at, region)?;
                self.t.open.push((name, region));
                Ok(false)
            }
            Body::RegionLeave { name } => self.leave_region(name, e.start),
            // A point is a named string parameter whose value is where it
            // was recorded; Vampir shows parameters on the timeline.
            Body::Point { name, location } => {
                let parameter = self.defs.parameter(name)?;
                let value = self.defs.string(location)?;
                let at = self.t.at(e.start);
                self.w.parameter_string(at, parameter, value).map(|_| false)
            }
            Body::Counter { name, value } => {
                let metric = self.defs.metric(name)?;
                let at = self.t.at(e.start);
                self.w.metric_i64(at, metric, *value).map(|_| false)
            }
            // The end record carries both dates of the recorder's flush,
            // which OTF2 has a record for; the begin record adds nothing.
            Body::FlushBegin => Ok(false),
            Body::FlushEnd => {
                let at = self.t.at(e.start);
                self.w.buffer_flush(at, e.end.max(at)).map(|_| false)
            }
        }
    }

    /// A call that failed (a peer died, the job was stopped): its region,
    /// without the message, request or collective record it never
    /// completed (a receive with no send would shift the pairs of its
    /// channel; a collective end would claim it ended), and holding the
    /// `call failed` parameter, which Vampir shows on the timeline.
    #[cold]
    fn failed_call(&mut self, call: Call, e: &Event) -> Result<bool> {
        let failed = self.failure(true)?;
        self.call(call, e, |w, _, end| {
            failed.map_or(Ok(()), |(parameter, why)| w.parameter_string(end, parameter, why))
        })
    }

    /// The parameter a failed call holds and its value, if it failed.
    fn failure(&mut self, failed: bool) -> Result<Option<(OTF2_ParameterRef, OTF2_StringRef)>> {
        if !failed {
            return Ok(None);
        }
        Ok(Some((self.defs.parameter(FAILED_PARAMETER)?, self.defs.string(WHY)?)))
    }

    /// The communicator `rank` sent or received a message on, and the
    /// peer's rank in it.
    #[inline]
    fn peer(&mut self, rank: u32, comm: u32, world_rank: u32) -> Result<(OTF2_CommRef, u32)> {
        let comm = self.defs.comm(rank, comm)?;
        Ok((comm, self.defs.comm_rank(comm, world_rank)))
    }

    /// Enter, what `inside` writes (given the enter and leave
    /// timestamps), Leave.
    #[inline]
    fn call(
        &mut self,
        call: Call,
        e: &Event,
        inside: impl FnOnce(&mut EventWriter, u64, u64) -> Result<()>,
    ) -> Result<bool> {
        let region = self.defs.call(call)?;
        let start = self.t.at(e.start);
        let end = self.t.at(e.end);
        match e.site {
            Some(site) => {
                let (attribute, location) = self.defs.call_site(site)?;
                self.w.enter_at(start, region, attribute, location)?;
            }
            None => self.w.enter(start, region)?,
        }
        inside(self.w, start, end)?;
        self.w.leave(end, region)?;
        Ok(false)
    }

    /// A wait or test: the completion of a non-blocking receive is the
    /// receive record (OTF2's MpiIrecv), that of a send an IsendComplete;
    /// a test that completed nothing is a RequestTest. A request the
    /// archive never posted gets no request record (see the module's doc).
    fn completed(&mut self, kind: Call, e: &Event, request: u64, comm: u32, done: Option<&Completion>) -> Result<bool> {
        let request = request_id(request);
        let posted = match done {
            Some(_) => self.t.posted.remove(&request),
            None => self.t.posted.contains(&request),
        };
        match done {
            Some(c) if c.is_recv && !self.receive => self.call(kind, e, |_, _, _| Ok(())),
            Some(c) if c.is_recv => {
                let (comm, from) = self.peer(e.rank, comm, c.src)?;
                let (tag, bytes) = (c.tag as u32, c.bytes);
                self.call(kind, e, |w, _, end| match posted {
                    true => w.mpi_irecv(end, from, comm, tag, bytes, request),
                    false => w.mpi_recv(end, from, comm, tag, bytes),
                })
            }
            _ if !posted => self.call(kind, e, |_, _, _| Ok(())),
            Some(_) => self.call(kind, e, |w, _, end| w.mpi_isend_complete(end, request)),
            None => self.call(kind, e, |w, _, end| w.mpi_request_test(end, request)),
        }
    }

    /// Leaves the innermost open user region named `name`, and first those
    /// opened inside it and not left (OTF2 regions must nest). A leave
    /// with no open region of that name is skipped.
    fn leave_region(&mut self, name: &str, date: u64) -> Result<bool> {
        let open = &self.t.open;
        let found = self.defs.known_string(name).and_then(|name| open.iter().rposition(|&(n, _)| n == name));
        let Some(depth) = found else { return Ok(true) };
        let at = self.t.at(date);
        while self.t.open.len() > depth {
            let Some((_, region)) = self.t.open.pop() else { break };
            self.w.leave(at, region)?;
        }
        Ok(false)
    }
}
