//! Tracing of the communication calls, and the user's trace API.
//!
//! Every public call reads the clock on entry when, and only when, the
//! rank records a trace ([`RankContext::tracing`], one predictable branch
//! otherwise), and records one event on return with both dates. Ranks in
//! events are world ranks; `comm` is the communicator's context id.
//!
//! A call that fails because a peer died or the job was stopped
//! ([`failed_call`]) is recorded too, marked failed, with the dates of its
//! wait: where each survivor of a failed rank was stuck, and for how long.
//! Other errors are the program's (a bad rank, tag or buffer) or the
//! runtime's, found before the call waited: not recorded. Failed posts
//! (`isend`, `irecv`, which do not wait), communicator creations, init
//! and finalize are not recorded either: the last three have no slot in
//! the format to say so.

use std::panic::Location;

use crate::{Error, Result};
use grappe_proto::{Completion, ErrorClass, Status};
use grappe_trace::alpha::{Recording, recording_of};
use grappe_trace::format::ClockSample;
use grappe_trace::raw::{ARRIVED, ASKED_ANY_SOURCE, FAILED, RECV_OF_SENDRECV, SEND_FAILED, SEND_SYNC};
use grappe_trace::{ANY, CollectiveKind, EventKind, RawEvent, Recorder};

use crate::Communicator;
use crate::selectors::{Source, Tag};

/// A traced call in progress, if tracing is on: its start date and the
/// program's call site (`None` for calls the runtime makes itself).
#[derive(Clone, Copy)]
pub(crate) struct Span(Option<(u64, Option<CallSite>)>);

/// Where the program made a traced call.
#[derive(Clone, Copy)]
pub(crate) enum CallSite {
    /// A Rust program's source location.
    Rust(&'static Location<'static>),
    /// The return address of a call into grappe's MPI library from another
    /// language (see [`set_foreign_caller`]).
    Code(usize),
}

impl CallSite {
    /// The site's string id in the trace.
    fn id(self, rec: &mut Recorder) -> u32 {
        match self {
            CallSite::Rust(location) => rec.site(location),
            CallSite::Code(address) => rec.code_site(address),
        }
    }
}

thread_local! {
    static FOREIGN_CALLER: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// For grappe's MPI library: the return address of the C (or Fortran,
/// Python...) call into it under way on this thread, 0 once it is over.
/// Traced calls made meanwhile record it as their site, in place of the
/// library's own Rust location; the trace tools turn it into the caller's
/// file and line.
pub fn set_foreign_caller(address: usize) {
    FOREIGN_CALLER.set(address);
}

impl Span {
    /// The span of a call made while tracing is off.
    pub(crate) const OFF: Span = Span(None);

    /// False for a call made while tracing is off: tested first where an
    /// untraced call would otherwise still build something (a copied
    /// status; a send's closure, 8 instructions per message).
    #[inline(always)]
    fn is_on(self) -> bool {
        self.0.is_some()
    }
}

impl Communicator {
    /// Starts a traced call made by the program. Every public call that
    /// starts one is `#[track_caller]`, down to here, so that the site is
    /// where the program called (what mpiP reports as a call site).
    #[inline(always)]
    #[track_caller]
    pub(crate) fn span(&self) -> Span {
        let location = Location::caller();
        let ctx = self.rank_context();
        if !ctx.tracing() {
            return Span::OFF;
        }
        let site = match FOREIGN_CALLER.get() {
            0 => CallSite::Rust(location),
            address => CallSite::Code(address),
        };
        Span(Some((ctx.trace_now(), Some(site))))
    }

    /// Starts a traced call the runtime makes on its own (init, finalize,
    /// the checkpointer's communicator).
    pub(crate) fn span_without_site(&self) -> Span {
        let ctx = self.rank_context();
        Span(if ctx.tracing() { Some((ctx.trace_now(), None)) } else { None })
    }

    /// Records the event of a call that started at `span`, built by `fill`.
    /// `fill` runs only when the call is traced: work out the record's
    /// fields in it, not before, or every untraced call pays for them.
    #[inline]
    pub(crate) fn trace_end(&self, span: Span, kind: EventKind, fill: impl FnOnce(&mut Recorder, &mut RawEvent)) {
        if let Span(Some((start, site))) = span {
            self.trace_record(start, site, kind, fill);
        }
    }

    #[cold]
    fn trace_record(
        &self,
        start: u64,
        site: Option<CallSite>,
        kind: EventKind,
        fill: impl FnOnce(&mut Recorder, &mut RawEvent),
    ) {
        // α of the kind is calibrated as this records it (two dates, a site).
        debug_assert_eq!(recording_of(kind), Recording::Call, "{kind:?} is recorded as a call");
        let mut rec = self.rank_context().recorder();
        let end = rec.now();
        let site = site.map_or(0, |site| site.id(&mut rec));
        let mut raw = RawEvent { start, end, kind: kind.id(), c: self.p2p_ctx(), site, ..RawEvent::default() };
        fill(&mut rec, &mut raw);
        rec.record(raw);
    }

    /// World rank of a communicator rank, for traces (`ANY` if unknown).
    pub(crate) fn trace_rank(&self, rank: usize) -> u32 {
        self.world_rank_of(rank).map_or(ANY, |w| w as u32)
    }

    /// A send that returned `sent`: recorded if it succeeded (`dest` is
    /// then a valid rank) or failed (see [`failed_call`]).
    #[inline(always)]
    pub(crate) fn trace_sent(&self, span: Span, dest: usize, tag: i32, bytes: usize, sync: bool, sent: &Result<()>) {
        // The test inlined, the recording not: untraced calls pay one branch.
        if span.is_on() {
            self.record_sent(span, dest, tag, bytes, sync, sent);
        }
    }

    #[inline(never)]
    fn record_sent(&self, span: Span, dest: usize, tag: i32, bytes: usize, sync: bool, sent: &Result<()>) {
        match sent {
            Ok(()) => self.trace_end(span, EventKind::Send, |rec, raw| {
                let world = self.trace_rank(dest);
                let seq = rec.next_send_seq(world) | if sync { SEND_SYNC } else { 0 };
                (raw.a, raw.b, raw.d, raw.e) = (world, tag as u32, bytes as u64, seq);
            }),
            Err(e) if failed_call(e) => self.trace_failed_send(span, dest, tag, bytes),
            Err(_) => {}
        }
    }

    /// A failed send: no sequence number, its message is not known to
    /// have left.
    #[cold]
    fn trace_failed_send(&self, span: Span, dest: usize, tag: i32, bytes: usize) {
        self.trace_end(span, EventKind::Send, |_, raw| {
            (raw.a, raw.b, raw.d, raw.e) = (self.trace_rank(dest), tag as u32, bytes as u64, SEND_FAILED);
        });
    }

    /// A sendrecv: its send and its receive, one record each with the
    /// call's dates, written together (no flush between them). `halves`:
    /// `Err` when it was refused before it started (not recorded), else
    /// how each half ended. A half that failed (see [`failed_call`]) is
    /// recorded failed; one that ended in another error leaves the call
    /// unrecorded.
    #[allow(clippy::too_many_arguments)] // MPI_Sendrecv's own
    pub(crate) fn trace_sendrecv(
        &self,
        span: Span,
        dest: usize,
        tag: i32,
        bytes: usize,
        src: Source,
        recv_tag: Tag,
        halves: &Result<(Result<()>, Result<Completion>)>,
    ) {
        let (Span(Some((start, site))), Ok((sent, done))) = (span, halves) else { return };
        let (Some(failed_send), Some((flags, a, b, d))) = (send_failed(sent), self.recv_slots(done, src, recv_tag))
        else {
            return;
        };
        let dest_world = self.trace_rank(dest);
        let mut rec = self.rank_context().recorder();
        let (end, c) = (rec.now(), self.p2p_ctx());
        let site = site.map_or(0, |site| site.id(&mut rec));
        let seq = if failed_send { SEND_FAILED } else { rec.next_send_seq(dest_world) };
        let send = RawEvent {
            start,
            end,
            kind: EventKind::Send.id(),
            c,
            a: dest_world,
            b: tag as u32,
            d: bytes as u64,
            e: seq,
            site,
            ..RawEvent::default()
        };
        // Marked as the second half of the pair, so that readers can tell
        // one sendrecv from a send and a receive.
        let recv = RawEvent {
            start,
            end,
            kind: EventKind::Recv.id(),
            flags: RECV_OF_SENDRECV | flags,
            c,
            a,
            b,
            d,
            site,
            ..RawEvent::default()
        };
        rec.record_pair(send, recv);
    }

    /// The slots (flags, a, b, d) of a receive that ended in `done`, from
    /// `src` with `tag` as asked: what it received, or for one that failed
    /// (see [`failed_call`]) what it asked for; `None` for other errors.
    fn recv_slots(&self, done: &Result<Completion>, src: Source, tag: Tag) -> Option<(u16, u32, u32, u64)> {
        match (received(done), done) {
            (Some((status, arrived)), _) => {
                let flags = if arrived { ARRIVED } else { 0 } | asked_any(src);
                Some((flags, self.trace_rank(status.source), status.tag as u32, status.bytes as u64))
            }
            (None, Err(e)) if failed_call(e) => Some((FAILED, selector_rank(self, src), selector_tag(tag), 0)),
            (None, _) => None,
        }
    }

    /// A blocking receive's completion, from `src` with `tag` as asked.
    #[inline(always)]
    pub(crate) fn trace_done(&self, span: Span, src: Source, tag: Tag, done: &Result<grappe_proto::Completion>) {
        // As in `trace_sent`.
        if span.is_on() {
            self.record_done(span, src, tag, done);
        }
    }

    #[inline(never)]
    fn record_done(&self, span: Span, src: Source, tag: Tag, done: &Result<grappe_proto::Completion>) {
        if let Some(slots) = self.recv_slots(done, src, tag) {
            self.trace_end(span, EventKind::Recv, |_, raw| (raw.flags, raw.a, raw.b, raw.d) = slots);
        }
    }

    pub(crate) fn trace_recv(&self, span: Span, src: Source, status: &Result<Status>, arrived: bool) {
        let Some(status) = delivered(status.as_ref()) else { return };
        self.trace_end(span, EventKind::Recv, |_, raw| {
            (raw.a, raw.b, raw.d) = (self.trace_rank(status.source), status.tag as u32, status.bytes as u64);
            raw.flags = if arrived { ARRIVED } else { 0 } | asked_any(src);
        });
    }

    /// A receive from `src` with `tag` that failed (see [`failed_call`]):
    /// recorded with what it asked for and no bytes.
    #[cold]
    pub(crate) fn trace_failed_recv(&self, span: Span, src: Source, tag: Tag) {
        self.trace_end(span, EventKind::Recv, |_, raw| {
            (raw.a, raw.b, raw.flags) = (selector_rank(self, src), selector_tag(tag), FAILED);
        });
    }

    /// Runs a collective's body and records it, if it succeeded or
    /// failed (see [`failed_call`]).
    #[track_caller]
    pub(crate) fn traced<T>(
        &self,
        op: CollectiveKind,
        root: Option<usize>,
        bytes: usize,
        body: impl FnOnce() -> Result<T>,
    ) -> Result<T> {
        let span = self.span();
        let result = body();
        match &result {
            Ok(_) => self.trace_collective(span, op, root, bytes, 0),
            Err(e) if failed_call(e) => self.trace_collective(span, op, root, bytes, FAILED),
            Err(_) => {}
        }
        self.handled(op.name(), result)
    }

    /// `failed`: [`FAILED`] or 0.
    pub(crate) fn trace_collective(
        &self,
        span: Span,
        op: CollectiveKind,
        root: Option<usize>,
        bytes: usize,
        failed: u16,
    ) {
        let root = root.map_or(ANY, |r| r as u32);
        self.trace_end(span, EventKind::Collective, |_, raw| {
            (raw.flags, raw.a, raw.d) = (op as u16 | failed, root, bytes as u64);
        });
    }

    /// A probe that returned `found` (`Ok(None)`: an iprobe that found
    /// nothing): recorded if it succeeded or failed (see [`failed_call`]).
    #[inline]
    pub(crate) fn trace_probed(
        &self,
        span: Span,
        kind: EventKind,
        src: Source,
        tag: Tag,
        found: std::result::Result<Option<Status>, &Error>,
    ) {
        match found {
            Ok(found) => self.trace_probe(span, kind, src, tag, found),
            Err(e) if failed_call(e) => self.trace_failed_probe(span, kind, src, tag),
            Err(_) => {}
        }
    }

    #[cold]
    fn trace_failed_probe(&self, span: Span, kind: EventKind, src: Source, tag: Tag) {
        self.trace_end(span, kind, |_, raw| {
            (raw.a, raw.b, raw.flags) = (selector_rank(self, src), selector_tag(tag), FAILED);
        });
    }

    pub(crate) fn trace_probe(&self, span: Span, kind: EventKind, src: Source, tag: Tag, found: Option<Status>) {
        self.trace_end(span, kind, |_, raw| {
            (raw.a, raw.b) = (selector_rank(self, src), selector_tag(tag));
            if let Some(status) = found {
                let world = self.trace_rank(status.source);
                let (flags, _, _, bytes) = grappe_trace::raw::pack_completion(Some(grappe_trace::Completion {
                    is_recv: true,
                    src: world,
                    tag: status.tag,
                    bytes: status.bytes as u64,
                    arrived: true,
                }));
                raw.flags = flags;
                raw.d = bytes;
                raw.e = (world as u64) << 32 | status.tag as u32 as u64;
            }
        });
    }

    /// Records the creation of `new` from this communicator.
    pub(crate) fn trace_comm_create(&self, span: Span, new: &Communicator) {
        self.trace_end(span, EventKind::CommCreate, |rec, raw| {
            let members: Vec<u32> = (0..new.size()).map(|r| new.trace_rank(r)).collect();
            (raw.a, raw.e) = (new.p2p_ctx(), rec.members(&members));
            raw.end = raw.start;
        });
    }

    /// Records that the rank joined (`true`) or is leaving (`false`) the
    /// job, as one call that holds `work`: the runtime's own work there
    /// (sampling clocks) is then the init's or the finalize's time, not
    /// the program's, as Score-P puts its clock synchronisation inside
    /// `MPI_Init` and `MPI_Finalize`.
    pub fn trace_lifecycle<T>(&self, joined: bool, work: impl FnOnce() -> Result<T>) -> Result<T> {
        let span = self.span_without_site();
        let done = work()?;
        let kind = if joined { EventKind::Init } else { EventKind::Finalize };
        self.trace_end(span, kind, |_, _| {});
        Ok(done)
    }

    // ---- the user's API ----

    /// Enters a named region of the program; it is left when the guard is
    /// dropped. Recorded with the caller's source location.
    #[track_caller]
    pub fn region(&self, name: &str) -> Region<'_> {
        let location = Location::caller();
        if self.rank_context().tracing() {
            let mut rec = self.rank_context().recorder();
            let (a, b) = rec.name_at(name, location);
            let now = rec.now();
            rec.record(RawEvent {
                start: now,
                end: now,
                kind: EventKind::RegionEnter.id(),
                a,
                b,
                ..RawEvent::default()
            });
            return Region { comm: self, name: Some(a) };
        }
        Region { comm: self, name: None }
    }

    /// Records a named point event at the caller's location.
    #[track_caller]
    pub fn trace_event(&self, name: &str) {
        let location = Location::caller();
        if self.rank_context().tracing() {
            let mut rec = self.rank_context().recorder();
            let (a, b) = rec.name_at(name, location);
            let now = rec.now();
            rec.record(RawEvent { start: now, end: now, kind: EventKind::Point.id(), a, b, ..RawEvent::default() });
        }
    }

    /// Records a sample of a named counter.
    #[track_caller]
    pub fn trace_counter(&self, name: &str, value: i64) {
        let location = Location::caller();
        if self.rank_context().tracing() {
            let mut rec = self.rank_context().recorder();
            let a = rec.counter_name_at(name, location);
            let now = rec.now();
            rec.record(RawEvent {
                start: now,
                end: now,
                kind: EventKind::Counter.id(),
                a,
                e: value as u64,
                ..RawEvent::default()
            });
        }
    }

    /// One phase of clock sampling for global time (Tape/PVM's SB/SBA):
    /// rank 0 ping-pongs every other rank, one at a time, `points` times,
    /// `spacing` apart; four dates per exchange; rank 0 writes the samples
    /// to its trace. Collective over the world; a no-op without tracing.
    ///
    /// Each sample is the quietest of a short burst of exchanges with the
    /// same peer, after a warm-up exchange that is discarded: a peer that
    /// waited through rank 0's pause (or through its exchanges with the
    /// other peers) may have gone to sleep in its receive, and the ping
    /// that wakes it takes the wake-up time one way only, which puts that
    /// exchange's midpoint off by half of it (tens to hundreds of µs for
    /// the first peer after each pause). The warm-up takes that delay; of
    /// the exchanges that follow, the one with the shortest time on the
    /// wire (round trip minus turnaround) is kept, as a busy host delays
    /// one of them now and then, one way.
    ///
    /// Dates are kept as read: a simulated clock's read noise may put a
    /// pong before its ping, which the estimator takes as noise.
    pub fn sample_clocks(&self, phase: u8, points: usize, spacing: std::time::Duration) -> Result<()> {
        if !self.rank_context().tracing() || self.size() < 2 {
            return Ok(());
        }
        let ctx = self.coll_ctx();
        let now = || self.rank_context().recorder().now_ns();
        let exchanges = points * EXCHANGES_PER_SAMPLE;
        if self.rank() != 0 {
            for _ in 0..exchanges {
                let mut ping = [0u64; 1];
                self.recv_bytes(ctx, bytemuck::cast_slice_mut(&mut ping), Source::Rank(0), Tag::Is(SYNC_TAG))?;
                let t_recv = now();
                let t_send = now();
                self.send_bytes(ctx, bytemuck::cast_slice(&[t_recv, t_send]), 0, SYNC_TAG)?;
            }
            return Ok(());
        }
        let mut samples = Vec::with_capacity(points * (self.size() - 1));
        for point in 0..points {
            if point > 0 {
                std::thread::sleep(spacing);
            }
            for peer in 1..self.size() {
                let exchange = || -> Result<ClockSample> {
                    let mut pong = [0u64; 2];
                    let t_send_ref = now();
                    self.send_bytes(ctx, bytemuck::cast_slice(&[point as u64]), peer, SYNC_TAG)?;
                    self.recv_bytes(ctx, bytemuck::cast_slice_mut(&mut pong), Source::Rank(peer), Tag::Is(SYNC_TAG))?;
                    let t_recv_ref = now();
                    let [t_recv_peer, t_send_peer] = pong;
                    Ok(ClockSample { peer: peer as u32, phase, t_send_ref, t_recv_peer, t_send_peer, t_recv_ref })
                };
                exchange()?;
                let mut best = exchange()?;
                for _ in 2..EXCHANGES_PER_SAMPLE {
                    let next = exchange()?;
                    if wire_time(&next) < wire_time(&best) {
                        best = next;
                    }
                }
                samples.push(best);
            }
        }
        let mut recorder = self.rank_context().recorder();
        let rank = recorder.rank() as usize;
        let action = "write clock samples into";
        recorder.write_samples(samples).map_err(|source| Error::Trace { rank, action, source })
    }
}

/// Exchanges with a peer for each sample kept: a warm-up, discarded, then
/// three of which the quietest is kept (see [`Communicator::sample_clocks`]).
const EXCHANGES_PER_SAMPLE: usize = 4;

/// Round trip minus turnaround, ns (signed: a simulated clock's read noise
/// can make it negative).
fn wire_time(s: &ClockSample) -> i128 {
    let (round_trip, hold) =
        (i128::from(s.t_recv_ref) - i128::from(s.t_send_ref), i128::from(s.t_send_peer) - i128::from(s.t_recv_peer));
    round_trip - hold
}

/// Tag of clock-sampling messages on the world's collective context.
const SYNC_TAG: i32 = crate::selectors::TAG_UB - 1;

/// [`ASKED_ANY_SOURCE`] for a receive that asked for any source.
fn asked_any(src: Source) -> u16 {
    match src {
        Source::Any => ASKED_ANY_SOURCE,
        Source::Rank(_) => 0,
    }
}

fn selector_rank(comm: &Communicator, src: Source) -> u32 {
    match src {
        Source::Rank(r) => comm.trace_rank(r),
        Source::Any => ANY,
    }
}

fn selector_tag(tag: Tag) -> u32 {
    match tag {
        Tag::Is(t) => t as u32,
        Tag::Any => ANY,
    }
}

/// What a traced non-blocking request remembers for its completion: its
/// peer (the destination, or the source asked for) and tag, for a wait
/// that fails.
pub(crate) struct Traced {
    comm: Communicator,
    id: u64,
    is_recv: bool,
    peer: u32,
    tag: u32,
}

impl Traced {
    pub(crate) fn is_recv(&self) -> bool {
        self.is_recv
    }
}

impl Communicator {
    /// Records the posting of a non-blocking send; `Some` when tracing.
    pub(crate) fn trace_isend(&self, span: Span, dest: usize, tag: i32, bytes: usize) -> Option<Box<Traced>> {
        let Span(Some(_)) = span else { return None };
        let world = self.trace_rank(dest);
        let mut id = 0;
        self.trace_end(span, EventKind::Isend, |rec, raw| {
            id = rec.next_request();
            let seq = rec.next_send_seq(world);
            (raw.a, raw.b, raw.d, raw.e) = (world, tag as u32, bytes as u64, seq << 32 | (id & 0xffff_ffff));
        });
        Some(Box::new(Traced { comm: self.clone(), id, is_recv: false, peer: world, tag: tag as u32 }))
    }

    /// Records the posting of a non-blocking receive; `Some` when tracing.
    pub(crate) fn trace_irecv(&self, span: Span, src: Source, tag: Tag) -> Option<Box<Traced>> {
        let Span(Some(_)) = span else { return None };
        let (src, tag) = (selector_rank(self, src), selector_tag(tag));
        let mut id = 0;
        self.trace_end(span, EventKind::Irecv, |rec, raw| {
            id = rec.next_request();
            (raw.a, raw.b, raw.e) = (src, tag, id);
        });
        Some(Box::new(Traced { comm: self.clone(), id, is_recv: true, peer: src, tag }))
    }
}

/// A span starting now on the request's communicator.
#[track_caller]
pub(crate) fn traced_span(traced: &Traced) -> Span {
    traced.comm.span()
}

/// Records a wait (`kind` Wait) or test (`kind` Test) of a traced request;
/// `arrived`: a receive's message was there when the call began.
pub(crate) fn trace_completion(traced: &Traced, span: Span, kind: EventKind, status: Option<Status>, arrived: bool) {
    let completion = status.map(|s| grappe_trace::Completion {
        is_recv: traced.is_recv,
        src: if traced.is_recv { traced.comm.trace_rank(s.source) } else { 0 },
        tag: s.tag,
        bytes: s.bytes as u64,
        arrived,
    });
    traced.comm.trace_end(span, kind, |_, raw| {
        (raw.flags, raw.a, raw.b, raw.d) = grappe_trace::raw::pack_completion(completion);
        raw.e = traced.id;
    });
}

/// Records a wait (`kind` Wait) or test (`kind` Test) of a traced request
/// that failed (see [`failed_call`]): a wait holds what it waited for
/// (see `grappe_trace::Body::Wait`), a test nothing.
#[cold]
pub(crate) fn trace_failed_completion(traced: &Traced, span: Span, kind: EventKind) {
    let waited_for = grappe_trace::Completion {
        is_recv: traced.is_recv,
        src: traced.peer,
        tag: traced.tag as i32,
        bytes: 0,
        arrived: false,
    };
    let completion = (kind == EventKind::Wait).then_some(waited_for);
    traced.comm.trace_end(span, kind, |_, raw| {
        (raw.flags, raw.a, raw.b, raw.d) = grappe_trace::raw::pack_completion(completion);
        raw.flags |= FAILED;
        raw.e = traced.id;
    });
}

/// How a send that returned `sent` is recorded: `Some(false)` sent,
/// `Some(true)` failed (see [`failed_call`]), `None` not at all.
fn send_failed(sent: &Result<()>) -> Option<bool> {
    match sent {
        Ok(()) => Some(false),
        Err(e) if failed_call(e) => Some(true),
        Err(_) => None,
    }
}

/// Whether a call that ended in `error` is recorded, as failed: a peer
/// died or the job was stopped while the call waited (MPI's class
/// `MPI_ERR_PROC_FAILED`). The survivors of a failed rank end in such
/// errors, and their traces then show where each one was stuck.
#[inline]
pub(crate) fn failed_call(error: &Error) -> bool {
    error.class() == ErrorClass::ProcFailed
}

/// A region being traced; leaving it is recorded on drop.
#[must_use = "the region ends when this guard is dropped"]
pub struct Region<'a> {
    comm: &'a Communicator,
    name: Option<u32>,
}

impl Drop for Region<'_> {
    fn drop(&mut self) {
        if let (Some(a), true) = (self.name, self.comm.rank_context().tracing()) {
            let mut rec = self.comm.rank_context().recorder();
            let now = rec.now();
            rec.record(RawEvent { start: now, end: now, kind: EventKind::RegionLeave.id(), a, ..RawEvent::default() });
        }
    }
}

/// What a receive delivered, if it consumed a message: its status, or, if
/// the message was longer than the buffer, its source and tag with the
/// bytes the buffer took. A truncated receive still took its message off
/// the channel (MPI semantics), so it is recorded: left out, every later
/// message of the channel would pair with the wrong send, and `check`
/// shows the truncation as a size mismatch. `None` for other failures.
pub(crate) fn delivered(result: std::result::Result<&Status, &Error>) -> Option<Status> {
    match result {
        Ok(status) => Some(*status),
        Err(&Error::Truncated { source_rank, tag, buffer_bytes, .. }) => {
            Some(Status { source: source_rank, tag, bytes: buffer_bytes })
        }
        Err(_) => None,
    }
}

/// [`delivered`] of a completion, with its `arrived` flag (a truncated
/// receive's is not known: false).
fn received(done: &Result<Completion>) -> Option<(Status, bool)> {
    match done {
        Ok(done) => Some((done.status, done.arrived)),
        Err(e) => delivered(Err(e)).map(|status| (status, false)),
    }
}

/// A request that stands for a blocking call (grappe's MPI library runs
/// blocking calls as requests under `MPI_THREAD_MULTIPLE`): recorded as
/// the call it is, from its start to its completion, once it completes.
pub(crate) struct BlockingCall {
    comm: Communicator,
    span: Span,
    what: Blocking,
}

enum Blocking {
    Collective {
        kind: CollectiveKind,
        root: Option<usize>,
        bytes: usize,
    },
    /// `seq`: the send's number towards `world`, taken as it was posted.
    Send {
        world: u32,
        tag: i32,
        bytes: usize,
        seq: u64,
    },
    Recv {
        src: Source,
        tag: Tag,
        arrived: bool,
    },
}

impl BlockingCall {
    /// A collective call that starts now; `None` when the rank records no trace.
    #[track_caller]
    pub(crate) fn collective(
        comm: &Communicator,
        kind: CollectiveKind,
        root: Option<usize>,
        bytes: usize,
    ) -> Option<Box<BlockingCall>> {
        let span = comm.span();
        BlockingCall::new(comm, span, Blocking::Collective { kind, root, bytes })
    }

    /// A send of `bytes` to `dest`, posted just now, in the call that
    /// started at `span`.
    pub(crate) fn send(
        comm: &Communicator,
        span: Span,
        dest: usize,
        tag: i32,
        bytes: usize,
    ) -> Option<Box<BlockingCall>> {
        if !span.is_on() {
            return None;
        }
        let world = comm.trace_rank(dest);
        let seq = comm.rank_context().recorder().next_send_seq(world);
        BlockingCall::new(comm, span, Blocking::Send { world, tag, bytes, seq })
    }

    /// A receive posted just now, in the call that started at `span`.
    pub(crate) fn recv(
        comm: &Communicator,
        span: Span,
        src: Source,
        tag: Tag,
        arrived: bool,
    ) -> Option<Box<BlockingCall>> {
        BlockingCall::new(comm, span, Blocking::Recv { src, tag, arrived })
    }

    fn new(comm: &Communicator, span: Span, what: Blocking) -> Option<Box<BlockingCall>> {
        span.is_on().then(|| Box::new(BlockingCall { comm: comm.clone(), span, what }))
    }

    /// Records the call, which ended as `outcome` (an error that is not a
    /// failed call, see [`failed_call`], leaves it unrecorded, as it
    /// leaves the blocking calls' records).
    pub(crate) fn ended(self, outcome: &Result<Status>) {
        let (comm, span) = (&self.comm, self.span);
        match self.what {
            Blocking::Collective { kind, root, bytes } => match outcome {
                Ok(_) => comm.trace_collective(span, kind, root, bytes, 0),
                Err(e) if failed_call(e) => comm.trace_collective(span, kind, root, bytes, FAILED),
                Err(_) => {}
            },
            Blocking::Send { world, tag, bytes, seq } => {
                let seq = match outcome {
                    Ok(_) => seq,
                    Err(e) if failed_call(e) => SEND_FAILED,
                    Err(_) => return,
                };
                comm.trace_end(span, EventKind::Send, |_, raw| {
                    (raw.a, raw.b, raw.d, raw.e) = (world, tag as u32, bytes as u64, seq);
                });
            }
            Blocking::Recv { src, tag, arrived } => match outcome {
                Err(e) if delivered(Err(e)).is_none() && failed_call(e) => comm.trace_failed_recv(span, src, tag),
                _ => comm.trace_recv(span, src, outcome, arrived),
            },
        }
    }
}
