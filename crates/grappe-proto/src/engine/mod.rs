//! The per-rank progress engine: posts sends and receives, drains the
//! mailboxes, matches, and drives rendezvous copies.
//!
//! An engine belongs to one rank and is only ever used by that rank's
//! thread or coroutine, so it needs no locks. Everything shared with other
//! ranks (mailboxes, slots, doorbells) lives in the host segment and is
//! synchronised by the fabric's atomics.

mod channel_log;
mod collective;
mod dispatch;
mod fast;
mod net;
mod outside;
mod pull;
mod rdv;
mod revoke;
mod send;
mod staging;
mod stall;

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use grappe_fabric::layout::{STATE_FAILED, STATE_FINALIZED, STATE_RUNNING, STATE_STOPPED};
use grappe_fabric::link::Inbox;
use grappe_fabric::{Doorbell, HostMemory};
use grappe_sched::{Backoff, Snooze, WaitSettings};
use slab::Slab;

use crate::matching::{self, Unexpected};
use crate::request::{RecvReq, RecvState, Request, SendState};
use crate::schedule::CollectiveState;
use crate::{Completion, ProtoSettings, RecvTarget, RequestId, Result, Started, Status};

pub use channel_log::InTransitError;
pub use net::RemoteLink;
pub(crate) use net::{Net, Peer};
pub use net::{announce, mark_stopped};
pub use outside::RankBell;

/// The context of messages claimed by a matched probe ([`Engine::claim`]): no
/// communicator has it, so they match only the receive that names their claim.
pub const CLAIMED_CTX: u32 = u32::MAX;

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
    /// Looks for dead peers during waits and polling loops that never
    /// sleep long enough to time out.
    watch: PeerWatch,
    /// Set once the rank is marked failed: where its failure stands.
    failure: Option<Failure>,
}

/// Where a rank's failure stands among the job's failures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// No other failure was visible to the rank: its failure is the job's
    /// first (two ranks failing at once may both be first).
    First,
    /// Another rank had failed, or the job was being stopped, when the
    /// rank failed: it stopped because of that, which this says.
    After(String),
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
    link: Inbox,
}

/// When this rank last looked for dead peers, and the polls since.
#[derive(Debug, Default)]
struct PeerWatch {
    polls: u32,
    checked: Option<std::time::Instant>,
}

impl PeerWatch {
    /// Polls between two reads of the clock: a clock read costs about as
    /// much as a poll.
    const POLLS: u32 = 1024;

    /// Counts one poll in vain; true when the peers are due for a look.
    #[inline]
    fn due(&mut self, every: std::time::Duration) -> bool {
        self.polls = self.polls.wrapping_add(1);
        if self.polls % Self::POLLS != 0 {
            return false;
        }
        let now = std::time::Instant::now();
        let checked = *self.checked.get_or_insert(now);
        if now.duration_since(checked) < every {
            return false;
        }
        self.checked = Some(now);
        true
    }
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
    /// Sends pulled by their receiver on another host, their bytes going
    /// out (see `pull`).
    pulled: Vec<usize>,
    /// Pulls owed to senders on other hosts: (sender, its request, our
    /// receive's key, the bytes that came with the offer).
    pulls: Vec<(usize, u64, u64, u64)>,
    /// Receives whose bytes a sender on another host pushes: (key, sender).
    pulling: Vec<(usize, usize)>,
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
    /// Requests nobody waits for, forgotten once finished: requests their
    /// poster gave up ([`Engine::abandon`]) that still run on memory of
    /// their own, control records, receives that drop messages of a
    /// revoked context.
    detached: Vec<usize>,
    /// Boards of the collective contexts (see `CallBoard`).
    boards: Vec<(u32, Arc<dyn crate::CallBoard>)>,
    /// What dispatching left to send or do.
    owed: stall::Owed,
    /// Probes not answered yet.
    probing: stall::Outstanding,
    /// Schedules of the non-blocking collectives that run, by request key.
    collectives: Vec<(usize, Box<crate::schedule::Schedule>)>,
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
    /// [`announce`] before anyone connects. A rank that has ended since
    /// (a rank that starts late, its worker busy with other ranks, may find
    /// one failed) makes the connection fail with
    /// [`Error::PeerDied`](crate::Error::PeerDied).
    pub fn connect(
        host: Arc<HostMemory>,
        me: usize,
        locals: &[usize],
        settings: ProtoSettings,
        wait: WaitSettings,
    ) -> Result<Engine> {
        let locals: Vec<Option<usize>> = locals.iter().copied().map(Some).collect();
        let remote = (0..locals.len()).map(|_| None).collect();
        Engine::connect_links(host, me, &locals, remote, settings, wait)
    }

    /// As [`Engine::connect`], for a job across hosts: `locals[w]` is the
    /// host-local index of world rank `w`, or `None` for a rank of another
    /// host, reached through `remote[w]`.
    pub fn connect_links(
        host: Arc<HostMemory>,
        me: usize,
        locals: &[Option<usize>],
        remote: Vec<Option<RemoteLink>>,
        settings: ProtoSettings,
        wait: WaitSettings,
    ) -> Result<Engine> {
        let mut inboxes = Vec::with_capacity(remote.len());
        let mut outs = Vec::with_capacity(remote.len());
        for link in remote {
            let (inbox, out) = link.map(|l| (l.inbox, (l.out, l.host, l.host_index))).unzip();
            inboxes.push(inbox);
            outs.push(out);
        }
        let net = Net::connect(host, me, locals, &mut outs, &settings)?;
        let me_local = net.me_local;
        let inbound = inboxes
            .into_iter()
            .enumerate()
            .map(|(src, inbox)| {
                let link = inbox.unwrap_or_else(|| {
                    let local = net.peers[src].local().expect("a rank without a network link is on this host");
                    // SAFETY: only rank `me` builds the consumers of its rings, once.
                    Inbox::Ring(unsafe { net.host.consumer(local, me_local) })
                });
                Inbound { src, link }
            })
            .collect();
        let bell =
            net.host.doorbell(net.host.control(me_local).bell.load(Ordering::Acquire) as usize) as *const Doorbell;
        let slots = net.host.params().rdv_slots as u32;
        let book = Book {
            reqs: Slab::new(),
            posted: VecDeque::new(),
            unexpected: Unexpected::new(locals.len()),
            queued: (0..locals.len()).map(|_| VecDeque::new()).collect(),
            queued_total: 0,
            offered: Vec::new(),
            copying: Vec::new(),
            pulled: Vec::new(),
            pulls: Vec::new(),
            pulling: Vec::new(),
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
            collectives: Vec::new(),
        };
        Ok(Engine {
            me,
            inbound,
            net,
            book,
            settings,
            wait,
            bell,
            stats: EngineStats::default(),
            failure: None,
            watch: PeerWatch::default(),
        })
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
                None => self.polled_in_vain(),
                Some(signal) => Err(crate::Error::Stopped { signal }),
            },
        }
    }

    /// After a poll that found nothing to finish: a rank that never sleeps
    /// until a timeout (a `test` or `iprobe` loop, or a wait woken again and
    /// again by live peers, or sharing its worker with busy ranks) still
    /// looks for dead peers, once every sleep timeout. The clock is read
    /// every [`PeerWatch::POLLS`] polls only.
    #[inline]
    fn polled_in_vain(&mut self) -> Result<()> {
        if self.watch.due(self.wait.sleep_timeout) { self.check_peers() } else { Ok(()) }
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

    /// Host-local index of world rank `world`; `None` for a rank of
    /// another host.
    pub fn local_index(&self, world: usize) -> Option<usize> {
        self.net.peers[world].local()
    }

    /// The host of world rank `world` as a number shared by every rank:
    /// `None` for this rank's own host, `Some(i)` for host `i` of the job.
    /// Ranks with equal answers share a host, which is all collectives
    /// need to group them.
    pub fn host_of(&self, world: usize) -> Option<usize> {
        match &self.net.peers[world].place {
            net::Place::Host(_) => None,
            net::Place::Remote(remote) => Some(remote.host_index),
        }
    }

    /// True if world rank `world` is a thread of this process.
    pub fn same_process(&self, world: usize) -> bool {
        self.net.same_process(world)
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
    ///
    /// If the wait itself fails before the request ends (a peer died, the
    /// job is being stopped, a record was corrupt), the request is
    /// abandoned ([`Engine::abandon`]): its buffer is free when this
    /// returns, and the request no longer exists.
    pub fn wait(&mut self, id: RequestId) -> Result<Completion> {
        let outcome = self.wait_for(id);
        if outcome.is_err() && self.book.reqs.contains(id.0) {
            self.abandon(id);
        }
        outcome
    }

    fn wait_for(&mut self, id: RequestId) -> Result<Completion> {
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

    /// Makes progress until request `id` has finished (or no longer
    /// exists), leaving its completion for whoever waits for it: a rank
    /// that must see one of its operations through before starting
    /// another (the context agreement of a pending `MPI_Comm_idup`
    /// before a blocking communicator creation).
    pub fn settle(&mut self, id: RequestId) -> Result<()> {
        let wait = self.wait;
        // SAFETY: the bell lives in `self.net.host`, alive as long as self.
        let bell = unsafe { &*self.bell };
        let mut backoff = Backoff::new(bell, &wait);
        loop {
            if !self.book.reqs.contains(id.0) || self.book.is_finished(id.0) {
                return Ok(());
            }
            self.progress()?;
            if !self.book.reqs.contains(id.0) || self.book.is_finished(id.0) {
                return Ok(());
            }
            let snooze = backoff.snooze();
            if snooze == Snooze::TimedOut {
                self.probe_stalled_peers();
            }
            self.snoozed(snooze)?;
        }
    }

    /// Gives up request `id` without waiting for its peer: on return,
    /// neither this engine nor any peer reads or writes its buffer again,
    /// and the request no longer exists for its poster. What the peer sees:
    ///
    /// - a receive that has not matched is cancelled; one whose message is
    ///   being copied is finished by this rank alone (it copies what is
    ///   left, then waits for the chunk the sender may be copying); one
    ///   collecting fragments lets the rest of them go nowhere;
    /// - a send not yet in the mailbox, or whose fragments are going out,
    ///   is copied and still goes out; one whose receiver is copying it is
    ///   finished by this rank alone;
    /// - a send offered to a receiver that has not matched it yet cannot
    ///   be taken back, since the receiver may read it at any time: the
    ///   rank gives up all its memory at once, marking itself failed
    ///   ([`Engine::mark_failed`]), so that its peers refuse to copy from
    ///   it (their receives of it fail with [`Error::PeerDied`]).
    ///
    /// [`Error::PeerDied`]: crate::Error::PeerDied
    pub fn abandon(&mut self, id: RequestId) {
        let key = id.0;
        if !self.book.reqs.contains(key) {
            return;
        }
        if self.book.is_finished(key) {
            self.book.reqs.remove(key);
            return;
        }
        match &self.book.reqs[key] {
            Request::Recv(_) => self.abandon_recv(key),
            Request::Send(_) => self.abandon_send(key),
            Request::Collective(_) => self.abandon_collective(key),
        }
    }

    fn abandon_recv(&mut self, key: usize) {
        let Request::Recv(recv) = &mut self.book.reqs[key] else { unreachable!("a receive") };
        match recv.state {
            RecvState::Posted => {
                self.book.posted.retain(|&k| k != key);
                self.book.reqs.remove(key);
            }
            RecvState::Copying(_) => {
                self.finish_receive_alone(key);
                self.book.reqs.remove(key);
            }
            RecvState::Staging { .. } => {
                if let RecvTarget::Buffer { .. } = recv.target {
                    // The remaining fragments are still read out of the
                    // mailbox, into no buffer.
                    recv.target = RecvTarget::Buffer { ptr: std::ptr::NonNull::dangling().as_ptr(), cap: 0 };
                }
                self.book.detached.push(key);
            }
            RecvState::Done { .. } | RecvState::Failed(_) => unreachable!("finished requests are removed"),
        }
    }

    fn abandon_send(&mut self, key: usize) {
        let Request::Send(send) = &mut self.book.reqs[key] else { unreachable!("a send") };
        match send.state {
            SendState::Queued | SendState::Staging { .. } => {
                send.own_data();
                self.book.detached.push(key);
            }
            // Offered to, or pulled by, a rank of another host: its bytes
            // go when that rank pulls them, from a copy now.
            SendState::Offered { slot: crate::wire::Rts::NO_SLOT } | SendState::Pulled { .. }
                if self.net.peers[send.dest].local().is_none() =>
            {
                send.own_data();
                self.book.detached.push(key);
            }
            SendState::Offered { slot } => {
                if self.finish_send_alone(key) {
                    self.book.reqs.remove(key);
                    return;
                }
                self.withdraw();
                if let Request::Send(send) = &mut self.book.reqs[key] {
                    send.state = SendState::Withdrawn { slot };
                }
                self.book.detached.push(key);
            }
            // Its bytes are out: only the FIN is to come, which finds it.
            SendState::AwaitingAck => self.book.detached.push(key),
            SendState::Pulled { .. } => unreachable!("only a rank of another host pulls"),
            SendState::Withdrawn { .. } | SendState::Done | SendState::Failed(_) => {
                unreachable!("withdrawn sends are detached already, finished ones removed")
            }
        }
    }

    /// Gives up every buffer of this rank: marks it failed, after which
    /// peers refuse to copy to or from its memory, then waits for the
    /// copies already under way.
    fn withdraw(&mut self) {
        let control = self.net.host.control(self.net.me_local);
        if control.state.load(Ordering::Acquire) == STATE_RUNNING {
            self.mark_failed();
        }
        self.net.wait_for_accessors();
    }

    /// Completes the request if it is finished; `Ok(None)` otherwise.
    pub fn test(&mut self, id: RequestId) -> Result<Option<Completion>> {
        self.progress()?;
        let finished = self.book.take_finished(id.0).transpose()?;
        if finished.is_none() {
            self.polled_in_vain()?;
        }
        Ok(finished)
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

    /// True while request `id` exists: posted, and neither completed by a
    /// wait or test nor abandoned.
    pub fn knows(&self, id: RequestId) -> bool {
        self.book.reqs.contains(id.0)
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
    pub fn in_transit(&self, skip: &[u32]) -> std::result::Result<Vec<InTransit>, InTransitError> {
        let mut messages = Vec::new();
        for (src, arrival) in self.book.unexpected.in_order() {
            if skip.contains(&arrival.ctx) {
                continue;
            }
            let payload = match arrival.body.held() {
                Some((data, total)) if data.len() == total => data.to_vec(),
                _ => {
                    let (tag, bytes) = (arrival.tag, arrival.body.len());
                    return Err(InTransitError::StillSending { source_rank: src, tag, bytes });
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
        let found = self.book.unexpected.find(ctx, src, tag).map(|slot| {
            let arrival = self.book.unexpected.get(slot);
            Status { source: arrival.src_comm as usize, tag: arrival.tag, bytes: arrival.body.len() }
        });
        if found.is_none() {
            self.polled_in_vain()?;
        }
        Ok(found)
    }

    /// Claims the first message matching (src, ctx, tag) that has arrived
    /// (MPI's matched probe, `MPI_Improbe`): from then on it matches only
    /// a receive posted on [`CLAIMED_CTX`] with tag `claim`, which the
    /// caller chooses unique among its claims. Its status as it arrived.
    pub fn claim(&mut self, src: Option<usize>, ctx: u32, tag: Option<i32>, claim: i32) -> Result<Option<Status>> {
        self.progress()?;
        let found = self.claim_now(src, ctx, tag, claim);
        if found.is_none() {
            self.polled_in_vain()?;
        }
        Ok(found)
    }

    /// Blocks until a matching message has arrived, and claims it (MPI's
    /// `MPI_Mprobe`; see [`claim`](Self::claim)).
    pub fn claim_blocking(&mut self, src: Option<usize>, ctx: u32, tag: Option<i32>, claim: i32) -> Result<Status> {
        let mut found = None;
        self.block_until(|engine| {
            found = engine.claim_now(src, ctx, tag, claim);
            found.is_some()
        })?;
        Ok(found.expect("claim condition held"))
    }

    fn claim_now(&mut self, src: Option<usize>, ctx: u32, tag: Option<i32>, claim: i32) -> Option<Status> {
        let slot = self.book.unexpected.find(ctx, src, tag)?;
        let arrival = self.book.unexpected.get(slot);
        let status = Status { source: arrival.src_comm as usize, tag: arrival.tag, bytes: arrival.body.len() };
        if let Some(request) = self.book.unexpected.relabel(slot, CLAIMED_CTX, claim) {
            self.book.fins.push((slot.src, request));
        }
        Some(status)
    }

    /// The status of the first message matching (src, ctx, tag) that has
    /// arrived, without receiving it or making progress.
    pub fn first_arrived(&self, src: Option<usize>, ctx: u32, tag: Option<i32>) -> Option<Status> {
        self.book.unexpected.find(ctx, src, tag).map(|slot| {
            let arrival = self.book.unexpected.get(slot);
            Status { source: arrival.src_comm as usize, tag: arrival.tag, bytes: arrival.body.len() }
        })
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
        if !self.net.remote.is_empty() {
            moved |= self.net.flush_links();
        }
        if self.book.queued_total > 0 {
            moved |= self.push_queued()?;
        }
        moved |= self.dispatch_mailboxes(None)?;
        if !(self.book.offered.is_empty()
            && self.book.copying.is_empty()
            && self.book.retiring.is_empty()
            && self.book.fins.is_empty()
            && self.book.pulled.is_empty()
            && self.book.pulls.is_empty())
        {
            moved |= self.advance_rendezvous();
        }
        if !self.book.collectives.is_empty() {
            moved |= self.advance_collectives();
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
            loop {
                let record = match inbound.link.peek() {
                    Ok(Some(record)) => record,
                    Ok(None) => break,
                    Err(e) => match self.net.link_error(inbound.src, e) {
                        None => break,
                        Some(error) => return Err(error),
                    },
                };
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

    /// Fails with [`Error::PeerDied`](crate::Error::PeerDied) if a peer
    /// failed or stopped, or if a rank of another process died.
    pub fn check_peers(&self) -> Result<()> {
        self.net.check_peers()
    }

    /// Marks this rank finalized (peers stop watching it) and reports
    /// messages that were sent to it but never received. A rank marked
    /// failed stays so.
    pub fn finalize(&mut self) -> Result<()> {
        self.progress()?;
        let control = self.net.host.control(self.net.me_local);
        let _ = control.state.compare_exchange(STATE_RUNNING, STATE_FINALIZED, Ordering::AcqRel, Ordering::Acquire);
        self.announce_state(control.state.load(Ordering::Acquire));
        self.drain_links()?;
        let leftover = self.book.unexpected.len();
        if leftover > 0 {
            let line =
                format!("grappe: warning: rank {} finalized with {leftover} message(s) never received\n", self.me);
            // One write: lines of several ranks stay whole.
            let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), line.as_bytes());
        }
        Ok(())
    }

    /// Marks this rank failed, so that peers stop waiting for it and no
    /// longer touch its memory, and says where its failure stands: the
    /// job's first, or a consequence of an earlier failure (or of the job
    /// being stopped), in which case the rank is marked stopped, and peers
    /// that look for the cause of their own failure name the earlier one.
    /// Marking again keeps the first verdict.
    pub fn mark_failed(&mut self) -> Failure {
        if let Some(failure) = &self.failure {
            return failure.clone();
        }
        let failure = match self.net.check_peers() {
            Ok(()) => Failure::First,
            Err(earlier) => Failure::After(earlier.to_string()),
        };
        let state = match failure {
            Failure::First => STATE_FAILED,
            Failure::After(_) => STATE_STOPPED,
        };
        // Sequentially consistent: see `Net::touching`.
        self.net.host.control(self.net.me_local).state.store(state, Ordering::SeqCst);
        self.announce_state(state);
        let _ = self.net.flush_links();
        self.failure = Some(failure.clone());
        failure
    }
}

impl Engine {
    /// Tells the ranks of other hosts that this rank is now in `state`
    /// (ranks of this host read it in the segment). A rank that finalizes
    /// says so only over the links it has: a link made on demand that was
    /// never made carried nothing, and its peer waits for nothing from it.
    /// A failure is said to every rank, connecting if need be, lest one
    /// wait for this rank for ever.
    fn announce_state(&mut self, state: u32) {
        for dest in self.net.remote.clone() {
            if state == STATE_FINALIZED && !self.net.peers[dest].out.is_connected() {
                continue;
            }
            let env = crate::wire::Envelope { kind: crate::wire::Kind::State, ctx: 0, tag: 0, src: 0 };
            self.send_control(dest, env, state.to_le_bytes().to_vec());
        }
    }

    /// Pushes every queued send and flushes the network links, so that a
    /// rank that finalizes leaves nothing unsent behind it; fails if a
    /// peer stops reading for longer than the sleep timeout allows.
    fn drain_links(&mut self) -> Result<()> {
        if self.net.remote.is_empty() {
            return Ok(());
        }
        let wait = self.wait;
        // SAFETY: the bell lives in `self.net.host`, alive as long as self.
        let mut backoff = Backoff::new(unsafe { &*self.bell }, &wait);
        while self.book.queued_total > 0 || self.net.backlogged() {
            self.progress()?;
            let snooze = backoff.snooze();
            self.snoozed(snooze)?;
        }
        Ok(())
    }
}

impl Drop for Engine {
    /// Requests still in flight may be read or written by peers, in
    /// buffers of their posters or of the engine itself: the rank gives
    /// them all up before they go. They will never complete, so the rank
    /// counts as failed for its peers even if it finalized, lest a peer
    /// wait for one of them forever.
    fn drop(&mut self) {
        if self.book.reqs.is_empty() {
            return;
        }
        let control = self.net.host.control(self.net.me_local);
        if control.state.load(Ordering::Acquire) == STATE_FINALIZED {
            control.state.store(STATE_RUNNING, Ordering::SeqCst);
        }
        self.withdraw();
    }
}

impl Book {
    /// Drops the detached requests that have ended.
    fn reap_detached(&mut self) {
        let mut i = 0;
        while i < self.detached.len() {
            let key = self.detached[i];
            if self.is_finished(key) {
                self.reqs.remove(key);
                self.detached.swap_remove(i);
            } else {
                i += 1;
            }
        }
    }

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
            Some(Request::Collective(c)) => !matches!(c, CollectiveState::Running),
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
            Request::Collective(state) => collective::completion(state),
        })
    }
}
