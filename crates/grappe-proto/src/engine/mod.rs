//! The per-rank progress engine: posts sends and receives, drains the
//! mailboxes, matches, and drives rendezvous copies.
//!
//! An engine belongs to one rank and is only ever used by that rank's
//! thread or coroutine, so it needs no locks. Everything shared with other
//! ranks (mailboxes, slots, doorbells) lives in the host segment and is
//! synchronised by the fabric's atomics.

mod channel_log;
mod dispatch;
mod fast;
mod net;
mod rdv;
mod revoke;
mod send;
mod staging;
mod stall;

use std::collections::VecDeque;
use std::sync::Arc;

use grappe_fabric::layout::{STATE_FAILED, STATE_FINALIZED};
use grappe_fabric::ring::Consumer;
use grappe_fabric::{Doorbell, HostMemory};
use grappe_sched::{Backoff, Snooze, WaitSettings};
use slab::Slab;

use crate::matching::{self, Unexpected};
use crate::request::{RecvReq, RecvState, Request, SendState};
use crate::{Completion, ProtoSettings, RecvTarget, RequestId, Result, Started, Status};

pub use net::announce;
pub(crate) use net::{Net, Peer};

/// One rank's view of the job and its requests in flight.
pub struct Engine {
    me: usize,
    inbound: Vec<Inbound>,
    net: Net,
    book: Book,
    settings: ProtoSettings,
    wait: WaitSettings,
    /// Our worker's doorbell, inside `net.host` (kept alive by the Arc).
    bell: *const Doorbell,
    stats: EngineStats,
}

/// Counters of one engine, for diagnostics and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EngineStats {
    /// Sleeps that ended by timeout rather than by a doorbell: each one is
    /// a wake-up nobody sent (a dead peer, or a lost wake-up).
    pub sleeps_timed_out: u64,
}

// SAFETY: the raw pointers point into the host segment, which the engine
// keeps alive through `net.host`; the engine is used by one rank at a time.
unsafe impl Send for Engine {}

/// A mailbox we read, and who writes it.
struct Inbound {
    src: usize,
    ring: Consumer,
}

/// A message that arrived and was not received yet, whole in this
/// rank's memory: what a checkpoint keeps of a channel's state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InTransit {
    /// Sender's world rank.
    pub src_world: u32,
    /// Sender's rank in the communicator.
    pub src_comm: u32,
    /// Context id of the communicator.
    pub ctx: u32,
    /// Its tag.
    pub tag: i32,
    /// Its bytes.
    pub payload: Vec<u8>,
}

/// The requests of one engine and the queues they sit in.
pub(crate) struct Book {
    reqs: Slab<Request>,
    /// Receives waiting for a message, in posting order.
    posted: VecDeque<usize>,
    unexpected: Unexpected,
    /// Sends not yet in the mailbox, per destination, in order.
    queued: Vec<VecDeque<usize>>,
    queued_total: usize,
    /// Sends whose RTS is out.
    offered: Vec<usize>,
    /// Receives copying a rendezvous message.
    copying: Vec<usize>,
    /// Where the next fragment from each source goes.
    staging_in: Vec<Option<StagingTarget>>,
    free_slots: Vec<u32>,
    /// Slots of completed sends, until the receiver releases them.
    retiring: Vec<u32>,
    /// FINs owed to senders of slot-less rendezvous: (sender, request).
    fins: Vec<(usize, u64)>,
    /// The channels' log of a non-blocking checkpoint wave, while open.
    log: Option<Box<channel_log::ChannelLog>>,
    /// Revoked contexts and why (see `revoke`); empty in a healthy run.
    revoked: Vec<(u32, crate::Mismatch)>,
    /// Requests nobody waits for (control records, receives that drop
    /// messages of a revoked context), forgotten once finished.
    detached: Vec<usize>,
    /// Boards of the collective contexts (see `CallBoard`).
    boards: Vec<(u32, Arc<dyn crate::CallBoard>)>,
    /// What dispatching left to send or do.
    owed: stall::Owed,
    /// Probes not answered yet.
    probing: stall::Outstanding,
}

/// Destination of fragments of a staged message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StagingTarget {
    Request(usize),
    Unexpected,
}

impl Engine {
    /// Connects rank `me` to every rank of the job. `locals[w]` is the
    /// host-local index of world rank `w`. Every rank must have called
    /// [`announce`] before anyone connects.
    pub fn connect(
        host: Arc<HostMemory>,
        me: usize,
        locals: &[usize],
        settings: ProtoSettings,
        wait: WaitSettings,
    ) -> Result<Engine> {
        let net = Net::connect(host, me, locals, &settings)?;
        let inbound = (0..locals.len())
            .map(|src| {
                // SAFETY: only rank `me` builds the consumers of its rings, once.
                let ring = unsafe { net.host.consumer(locals[src], locals[me]) };
                Inbound { src, ring }
            })
            .collect();
        let bell =
            net.host.doorbell(net.host.control(locals[me]).bell.load(std::sync::atomic::Ordering::Acquire) as usize)
                as *const Doorbell;
        let slots = net.host.params().rdv_slots as u32;
        let book = Book {
            reqs: Slab::new(),
            posted: VecDeque::new(),
            unexpected: Unexpected::new(locals.len()),
            queued: (0..locals.len()).map(|_| VecDeque::new()).collect(),
            queued_total: 0,
            offered: Vec::new(),
            copying: Vec::new(),
            staging_in: vec![None; locals.len()],
            free_slots: (0..slots).rev().collect(),
            retiring: Vec::new(),
            fins: Vec::new(),
            log: None,
            revoked: Vec::new(),
            detached: Vec::new(),
            boards: Vec::new(),
            owed: stall::Owed::default(),
            probing: stall::Outstanding::default(),
        };
        Ok(Engine { me, inbound, net, book, settings, wait, bell, stats: EngineStats::default() })
    }

    /// The engine's counters.
    pub fn stats(&self) -> EngineStats {
        self.stats
    }

    /// After a sleep timed out: count it and look for dead peers.
    fn timed_out(&mut self) -> Result<()> {
        self.stats.sleeps_timed_out += 1;
        self.progress()?;
        self.check_peers()
    }

    /// After a wait gave way: a timed-out sleep looks for dead peers; any
    /// other wake-up fails only if the process was asked to stop (the
    /// signal's handler rings the doorbells, so sleepers see it at once).
    #[inline]
    fn snoozed(&mut self, snooze: Snooze) -> Result<()> {
        match snooze {
            Snooze::TimedOut => self.timed_out(),
            Snooze::Continue => match crate::stop::requested() {
                None => Ok(()),
                Some(signal) => Err(crate::Error::Stopped { signal }),
            },
        }
    }

    /// This rank's number in the world.
    pub fn world_rank(&self) -> usize {
        self.me
    }

    /// Number of ranks in the world.
    pub fn world_size(&self) -> usize {
        self.net.peers.len()
    }

    /// The protocol settings in force.
    pub fn settings(&self) -> &ProtoSettings {
        &self.settings
    }

    /// The host segment (for shared-memory collectives).
    pub fn host(&self) -> &Arc<HostMemory> {
        &self.net.host
    }

    /// Host-local index of world rank `world`.
    pub fn local_index(&self, world: usize) -> usize {
        self.net.peers[world].local
    }

    /// True if world rank `world` is a thread of this process.
    pub fn same_process(&self, world: usize) -> bool {
        self.net.peers[world].route == grappe_fabric::put::Route::SameProcess
    }

    /// Wakes world rank `world` if it sleeps (after publishing something
    /// it waits for outside the mailboxes).
    pub fn ring(&self, world: usize) {
        self.net.ring(world);
    }

    /// Posts a receive.
    ///
    /// # Safety
    /// A [`RecvTarget::Buffer`] must stay valid and untouched by the
    /// caller until the request completes (or is cancelled).
    pub unsafe fn irecv(
        &mut self,
        target: RecvTarget,
        src: Option<usize>,
        ctx: u32,
        tag: Option<i32>,
    ) -> Result<Started> {
        if let Some(revoked) = self.book.revoked_error(ctx) {
            return Err(revoked);
        }
        let mut req = RecvReq { arrived: false, ctx, src, tag, target, state: RecvState::Posted };
        if let Some(slot) = self.book.unexpected.find(ctx, src, tag) {
            req.arrived = true;
            let key = self.book.reqs.insert(Request::Recv(req));
            self.book.take_unexpected(&self.net, key, slot, &self.settings);
            return self.book.started(RequestId(key));
        }
        let key = self.book.reqs.insert(Request::Recv(req));
        self.book.posted.push_back(key);
        // A matching message may be in a mailbox, not dispatched yet: it
        // arrived before this receive too. Dispatching the mailbox now
        // lets the receive take it straight from there and say so, for
        // Tape/PVM's `arrived` flag (probe-effect compensation tells
        // waiting from not waiting by it).
        if let Err(e) = self.dispatch_mailboxes(src) {
            self.cancel(RequestId(key));
            return Err(e);
        }
        self.book.mark_arrived_if_matched(key);
        self.book.started(RequestId(key))
    }

    /// Waits for a request and returns how it ended.
    pub fn wait(&mut self, id: RequestId) -> Result<Completion> {
        if let Some(done) = self.book.take_finished(id.0) {
            return done;
        }
        let wait = self.wait;
        // SAFETY: the bell lives in `self.net.host`, alive as long as self.
        let bell = unsafe { &*self.bell };
        let mut backoff = Backoff::new(bell, &wait);
        loop {
            self.progress()?;
            if let Some(done) = self.book.take_finished(id.0) {
                return done;
            }
            let snooze = backoff.snooze();
            if snooze == Snooze::TimedOut {
                self.probe_stalled_peers();
            }
            self.snoozed(snooze)?;
        }
    }

    /// Completes the request if it is finished; `Ok(None)` otherwise.
    pub fn test(&mut self, id: RequestId) -> Result<Option<Completion>> {
        self.progress()?;
        self.book.take_finished(id.0).transpose()
    }

    /// True if the message of receive `id` (or the announcement of a
    /// rendezvous) is here now: the receive matched it, or matches it in
    /// its source's mailbox, dispatched by this call. A request that is
    /// not a pending receive counts as arrived. For the `arrived` flag of
    /// a traced wait or test: did it begin with its message there?
    pub fn arrived_by_now(&mut self, id: RequestId) -> Result<bool> {
        let Some(src) = self.book.posted_source(id.0) else { return Ok(true) };
        self.dispatch_mailboxes(src)?;
        Ok(self.book.posted_source(id.0).is_none())
    }

    /// True if the request is finished (without completing it).
    pub fn is_finished(&self, id: RequestId) -> bool {
        self.book.is_finished(id.0)
    }

    /// Waits until one of `ids` finishes; returns its index and outcome.
    pub fn wait_any(&mut self, ids: &[RequestId]) -> Result<(usize, Result<Completion>)> {
        self.block_until(|engine| ids.iter().any(|id| engine.is_finished(*id)))?;
        let index = ids.iter().position(|id| self.is_finished(*id)).expect("a finished request");
        let done = self.book.take_finished(ids[index].0).expect("finished");
        Ok((index, done))
    }

    /// Cancels a receive that has not matched yet. True if cancelled; a
    /// request that already matched must be waited for.
    pub fn cancel(&mut self, id: RequestId) -> bool {
        let Some(pos) = self.book.posted.iter().position(|&k| k == id.0) else { return false };
        self.book.posted.remove(pos);
        self.book.reqs.remove(id.0);
        true
    }

    /// Copies of the messages that arrived and were not received, in
    /// arrival order, except those of the contexts in `skip`. `Err` names
    /// one that is not whole here (a rendezvous still in its sender's
    /// buffer, a staged message still coming): its sender has not finished
    /// sending it.
    pub fn in_transit(&self, skip: &[u32]) -> std::result::Result<Vec<InTransit>, String> {
        let mut messages = Vec::new();
        for (src, arrival) in self.book.unexpected.in_order() {
            if skip.contains(&arrival.ctx) {
                continue;
            }
            let payload = match arrival.body.held() {
                Some((data, total)) if data.len() == total => data.to_vec(),
                _ => {
                    return Err(format!(
                        "a {}-byte message from rank {src} (tag {}) is still being sent",
                        arrival.body.len(),
                        arrival.tag
                    ));
                }
            };
            let (ctx, tag, src_comm) = (arrival.ctx, arrival.tag, arrival.src_comm);
            messages.push(InTransit { src_world: src as u32, src_comm, ctx, tag, payload });
        }
        Ok(messages)
    }

    /// Puts saved messages back as arrived and not received (a restart),
    /// before any new message: they are received first, in their order.
    pub fn restore_in_transit(&mut self, messages: Vec<InTransit>) {
        for m in messages {
            let body = matching::Body::Eager(m.payload);
            self.book.unexpected.push(m.src_world as usize, m.ctx, m.tag, m.src_comm, body);
        }
    }

    /// Status of the first message matching (src, ctx, tag) that has
    /// arrived, without receiving it.
    pub fn iprobe(&mut self, src: Option<usize>, ctx: u32, tag: Option<i32>) -> Result<Option<Status>> {
        self.progress()?;
        Ok(self.book.unexpected.find(ctx, src, tag).map(|slot| {
            let arrival = self.book.unexpected.get(slot);
            Status { source: arrival.src_comm as usize, tag: arrival.tag, bytes: arrival.body.len() }
        }))
    }

    /// Blocks until a matching message has arrived; returns its status.
    pub fn probe(&mut self, src: Option<usize>, ctx: u32, tag: Option<i32>) -> Result<Status> {
        let mut found = None;
        self.block_until(|engine| {
            found = engine.book.unexpected.find(ctx, src, tag).map(|slot| {
                let arrival = engine.book.unexpected.get(slot);
                Status { source: arrival.src_comm as usize, tag: arrival.tag, bytes: arrival.body.len() }
            });
            found.is_some()
        })?;
        Ok(found.expect("probe condition held"))
    }

    /// Makes progress until `done(self)` holds, waiting politely.
    pub fn block_until(&mut self, mut done: impl FnMut(&mut Engine) -> bool) -> Result<()> {
        if done(self) {
            return Ok(());
        }
        let wait = self.wait;
        // SAFETY: as in `wait`.
        let bell = unsafe { &*self.bell };
        let mut backoff = Backoff::new(bell, &wait);
        loop {
            self.progress()?;
            if done(self) {
                return Ok(());
            }
            self.snoozed(backoff.snooze())?;
        }
    }

    /// Waits for a condition on shared memory that another rank will make
    /// true (a collective arena's generation, say). Unlike
    /// [`block_until`](Self::block_until), the mailboxes are polled only
    /// every few rounds: when ranks outnumber cores each round follows a
    /// context switch, and touching every mailbox after each switch costs
    /// more than the wait itself. Pending transfers still progress.
    ///
    /// `done(stale)` is asked after every round; `stale` is true after a
    /// sleep that timed out (nobody woke this rank for a while), when a
    /// costlier look at why the condition does not come is worth taking.
    /// The wait fails if context `watch` is revoked meanwhile (the
    /// condition then never comes).
    pub fn block_on_shared(&mut self, watch: u32, mut done: impl FnMut(bool) -> bool) -> Result<()> {
        const PROGRESS_EVERY: u32 = 16;
        if done(false) {
            return Ok(());
        }
        let wait = self.wait;
        // SAFETY: as in `wait`.
        let bell = unsafe { &*self.bell };
        let mut backoff = Backoff::new(bell, &wait);
        let mut stale = false;
        for round in 1u32.. {
            // After a long sleep, rounds are rare: progress at each.
            if round % PROGRESS_EVERY == 0 || stale {
                self.progress()?;
                if let Some(revoked) = self.book.revoked_error(watch) {
                    return Err(revoked);
                }
            }
            if done(stale) {
                return Ok(());
            }
            let snooze = backoff.snooze();
            stale = snooze == Snooze::TimedOut;
            self.snoozed(snooze)?;
        }
        unreachable!("the loop only ends by returning")
    }

    /// One pass of progress: queued sends, mailboxes, rendezvous copies.
    /// True if anything moved.
    pub fn progress(&mut self) -> Result<bool> {
        let mut moved = false;
        if self.book.queued_total > 0 {
            moved |= self.push_queued()?;
        }
        moved |= self.dispatch_mailboxes(None)?;
        if !(self.book.offered.is_empty()
            && self.book.copying.is_empty()
            && self.book.retiring.is_empty()
            && self.book.fins.is_empty())
        {
            moved |= self.advance_rendezvous();
        }
        // Detached requests finish only when something moved: an idle poll
        // pays one branch.
        if moved && !self.book.detached.is_empty() {
            self.book.reap_detached();
        }
        Ok(moved)
    }

    /// Dispatches every record waiting in the mailbox of world rank `src`
    /// (`None`: in every mailbox). True if there was any.
    fn dispatch_mailboxes(&mut self, src: Option<usize>) -> Result<bool> {
        // `inbound[w]` is world rank w's mailbox (a source out of range
        // has none: its receive matches nothing).
        let mailboxes = match src {
            Some(src) => src.min(self.inbound.len())..(src + 1).min(self.inbound.len()),
            None => 0..self.inbound.len(),
        };
        let mut moved = false;
        for inbound in &mut self.inbound[mailboxes] {
            while let Some(record) = inbound.ring.peek() {
                self.book.dispatch(&self.net, inbound.src, record, &self.settings)?;
                moved = true;
            }
        }
        // Only dispatched records owe anything.
        if moved && !self.book.owed.is_empty() {
            self.settle_owed();
        }
        Ok(moved)
    }

    /// Fails with [`Error::PeerDied`] if a rank of another process died.
    pub fn check_peers(&self) -> Result<()> {
        self.net.check_peers()
    }

    /// Marks this rank finalized (peers stop watching it) and reports
    /// messages that were sent to it but never received.
    pub fn finalize(&mut self) -> Result<()> {
        self.progress()?;
        let control = self.net.host.control(self.net.me_local);
        control.state.store(STATE_FINALIZED, std::sync::atomic::Ordering::Release);
        let leftover = self.book.unexpected.len();
        if leftover > 0 {
            eprintln!("grappe: warning: rank {} finalized with {leftover} message(s) never received", self.me);
        }
        Ok(())
    }

    /// Marks this rank failed, so that peers stop waiting for it.
    pub fn mark_failed(&self) {
        let control = self.net.host.control(self.net.me_local);
        control.state.store(STATE_FAILED, std::sync::atomic::Ordering::Release);
    }
}

impl Book {
    /// Turns a request that finished on the spot into `Started::Done`.
    fn started(&mut self, id: RequestId) -> Result<Started> {
        match self.take_finished(id.0) {
            Some(done) => done.map(Started::Done),
            None => Ok(Started::Pending(id)),
        }
    }

    fn is_finished(&self, key: usize) -> bool {
        match self.reqs.get(key) {
            Some(Request::Send(s)) => matches!(s.state, SendState::Done | SendState::Failed(_)),
            Some(Request::Recv(r)) => matches!(r.state, RecvState::Done { .. } | RecvState::Failed(_)),
            None => false,
        }
    }

    /// Removes and returns a finished request.
    fn take_finished(&mut self, key: usize) -> Option<Result<Completion>> {
        if !self.is_finished(key) {
            return None;
        }
        Some(match self.reqs.remove(key) {
            Request::Send(send) => match send.state {
                SendState::Failed(e) => Err(e),
                _ => Ok(Completion {
                    status: Status { source: send.env.src as usize, tag: send.env.tag, bytes: send.len },
                    data: None,
                    arrived: false,
                }),
            },
            Request::Recv(recv) => match recv.state {
                RecvState::Done { status, data } => Ok(Completion { status, data, arrived: recv.arrived }),
                RecvState::Failed(e) => Err(e),
                _ => unreachable!("checked finished"),
            },
        })
    }
}
