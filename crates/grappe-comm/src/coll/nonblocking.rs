//! Non-blocking collectives (MPI's `MPI_Ibarrier`, `MPI_Iallreduce`...):
//! the algorithms, as schedules of rounds that the engine runs while the
//! rank does other things (see `grappe_proto::schedule`).
//!
//! They work on packed bytes and hand their result to a closure, which
//! suits an API whose buffers are the caller's memory described by
//! datatypes (the C library): the inputs are copied when the collective
//! starts, the result is delivered once, when it is whole, before the
//! request completes.
//!
//! Their messages travel on the communicator's third context, one tag per
//! call (calls are numbered per communicator, in the order every rank
//! makes them, as MPI requires), so that several may run at once and
//! never meet the blocking collectives' traffic.
//!
//! | collective | algorithm |
//! |---|---|
//! | barrier | dissemination, ⌈log₂ p⌉ rounds |
//! | bcast | binomial tree from the root |
//! | reduce | binomial tree to the root (non-commutative: to rank 0 in rank order, then to the root) |
//! | allreduce | reduce to rank 0, then bcast |
//! | gather, scatter | direct, one round |
//! | allgather, alltoall | direct, one round (p − 1 messages each way) |
//! | reduce-scatter | reduce to rank 0, then scatter |
//! | scan, exscan | a chain in rank order |
//!
//! The direct algorithms cost p − 1 messages per rank: right for the
//! sizes of communicators on one host, and what overlaps best with
//! computation (every transfer is posted at once).

use std::sync::Arc;

use grappe_proto::{BufferId, Schedule};

use crate::scope::{Request, Scope};
use crate::trace::BlockingCall;
use crate::{Communicator, Error, Result, SizeProblem};
use grappe_trace::CollectiveKind;

/// A reduction of packed elements: `inout = input ∘ inout`, `input`
/// holding the contribution of the lower ranks (the convention of MPI's
/// user functions).
pub type Combine = Arc<dyn Fn(&[u8], &mut [u8]) + Send + Sync>;

/// Takes the collective's result, packed in rank order, when it is whole
/// (an empty slice on the ranks that get no result).
pub type Deliver = Box<dyn FnOnce(&[u8]) + Send>;

/// A collective to start without blocking. Sizes are in bytes; per-rank
/// counts lay the blocks end to end in rank order. (Each variant's
/// documentation says what its fields are.)
#[allow(missing_docs)]
pub enum NonBlocking {
    /// Every rank waits for all.
    Barrier,
    /// The root's `data` to every rank; elsewhere, `data` is a buffer of
    /// the size expected.
    Bcast { root: usize, data: Vec<u8> },
    /// The ranks' `data` combined, at the root.
    Reduce { root: usize, data: Vec<u8>, combine: Combine, commutative: bool },
    /// The ranks' `data` combined, at every rank.
    Allreduce { data: Vec<u8>, combine: Combine, commutative: bool },
    /// Every rank's `data` at the root, which gives `counts` (one per rank).
    Gather { root: usize, data: Vec<u8>, counts: Vec<usize> },
    /// Block r of the root's `data` (cut by the root's `counts`) to rank
    /// r, which expects `mine` bytes.
    Scatter { root: usize, data: Vec<u8>, counts: Vec<usize>, mine: usize },
    /// Every rank's `data` at every rank; `counts` one per rank.
    Allgather { data: Vec<u8>, counts: Vec<usize> },
    /// Block r of `data` (cut by `send_counts`) to rank r; blocks arrive
    /// by `recv_counts`.
    Alltoall { data: Vec<u8>, send_counts: Vec<usize>, recv_counts: Vec<usize> },
    /// The ranks' `data` combined, then block r (cut by `counts`) to rank r.
    ReduceScatter { data: Vec<u8>, counts: Vec<usize>, combine: Combine },
    /// Rank r gets the combination of ranks 0..=r (`exclusive`: 0..r;
    /// rank 0 then gets nothing).
    Scan { data: Vec<u8>, combine: Combine, exclusive: bool },
    /// Blocks to and from some ranks (the neighbourhood collectives): each
    /// of `sends` is a rank and the bytes of `data` it gets; each of
    /// `recvs` a rank and where its block lands in a result of
    /// `result_len` bytes. Blocks between two ranks match in the order
    /// given on each side, as MPI's messages do.
    Neighbors {
        data: Vec<u8>,
        sends: Vec<(usize, std::ops::Range<usize>)>,
        recvs: Vec<(usize, std::ops::Range<usize>)>,
        result_len: usize,
    },
}

impl NonBlocking {
    /// The root, for the collectives that have one.
    fn root(&self) -> Option<usize> {
        match self {
            NonBlocking::Bcast { root, .. }
            | NonBlocking::Reduce { root, .. }
            | NonBlocking::Gather { root, .. }
            | NonBlocking::Scatter { root, .. } => Some(*root),
            _ => None,
        }
    }

    /// The bytes a trace record of the collective counts: what this rank
    /// gives (a scatter: what it gets), as the blocking collectives count.
    fn bytes(&self) -> usize {
        match self {
            NonBlocking::Barrier => 0,
            NonBlocking::Scatter { mine, .. } => *mine,
            NonBlocking::Bcast { data, .. }
            | NonBlocking::Reduce { data, .. }
            | NonBlocking::Allreduce { data, .. }
            | NonBlocking::Gather { data, .. }
            | NonBlocking::Allgather { data, .. }
            | NonBlocking::Alltoall { data, .. }
            | NonBlocking::ReduceScatter { data, .. }
            | NonBlocking::Scan { data, .. }
            | NonBlocking::Neighbors { data, .. } => data.len(),
        }
    }

    /// MPI's name of the collective, for errors.
    fn name(&self) -> &'static str {
        match self {
            NonBlocking::Barrier => "MPI_Ibarrier",
            NonBlocking::Bcast { .. } => "MPI_Ibcast",
            NonBlocking::Reduce { .. } => "MPI_Ireduce",
            NonBlocking::Allreduce { .. } => "MPI_Iallreduce",
            NonBlocking::Gather { .. } => "MPI_Igather",
            NonBlocking::Scatter { .. } => "MPI_Iscatter",
            NonBlocking::Allgather { .. } => "MPI_Iallgather",
            NonBlocking::Alltoall { .. } => "MPI_Ialltoall",
            NonBlocking::ReduceScatter { .. } => "MPI_Ireduce_scatter",
            NonBlocking::Scan { exclusive: false, .. } => "MPI_Iscan",
            NonBlocking::Scan { exclusive: true, .. } => "MPI_Iexscan",
            NonBlocking::Neighbors { .. } => "a neighbourhood collective",
        }
    }
}

impl Communicator {
    /// Starts `what` on this communicator; `deliver` gets the result
    /// before the request completes. Every rank of the communicator must
    /// start the same collectives in the same order (blocking ones aside).
    pub fn start_collective<'scope>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        what: NonBlocking,
        deliver: Deliver,
    ) -> Result<Request<'scope>> {
        self.start_collective_for(Caller::NonBlocking, scope, what, deliver)
    }

    /// Starts `what` as [`start_collective`](Self::start_collective) does,
    /// for a blocking collective call that waits for the request itself
    /// (the MPI library does so under `MPI_THREAD_MULTIPLE`). Its tags are
    /// apart from those of non-blocking collectives, so that the two kinds
    /// need not come in the same order on every rank (MPI asks it of
    /// programs; MPICH, with different algorithms for each, lets it go).
    ///
    /// A traced rank records the request, once it completes, as the
    /// collective call `kind` (its blocking form's record).
    #[track_caller]
    pub fn start_blocking_collective<'scope>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        what: NonBlocking,
        deliver: Deliver,
        kind: CollectiveKind,
    ) -> Result<Request<'scope>> {
        let call = BlockingCall::collective(self, kind, what.root(), what.bytes());
        let request = self.start_collective_for(Caller::Blocking, scope, what, deliver);
        request.map(|request| request.record_as(call))
    }

    fn start_collective_for<'scope>(
        &self,
        caller: Caller,
        scope: &'scope Scope<'scope, '_>,
        what: NonBlocking,
        deliver: Deliver,
    ) -> Result<Request<'scope>> {
        let schedule = self.schedule_of(caller, what, deliver);
        self.run_schedule(scope, schedule)
    }

    /// Hands `schedule` to the engine, as a request of `scope`.
    pub(super) fn run_schedule<'scope>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        schedule: Result<Schedule>,
    ) -> Result<Request<'scope>> {
        let started = schedule.and_then(|schedule| {
            let mut engine = self.rank_context().engine();
            engine.start_collective(schedule).map_err(Error::from)
        });
        let request = started.map(|started| scope.track(Ok(started), 0, self.error_handler(), None));
        self.handled("a non-blocking collective", request)
    }

    fn schedule_of(&self, caller: Caller, what: NonBlocking, deliver: Deliver) -> Result<Schedule> {
        self.live()?;
        let tag = self.next_tag_of(caller);
        let schedule = Schedule::new(what.name(), self.nbc_ctx(), tag, self.rank());
        let group = &self.inner.group;
        let mut plan = Plan { group, s: schedule, p: group.len(), me: self.rank() };
        plan.build(what, deliver)?;
        Ok(plan.s)
    }
}

impl Communicator {
    /// The tag of the next non-blocking collective on the communicator
    /// (see the module's documentation).
    pub(crate) fn next_nbc_tag(&self) -> i32 {
        self.next_tag_of(Caller::NonBlocking)
    }

    pub(super) fn next_tag_of(&self, caller: Caller) -> i32 {
        let counter = match caller {
            Caller::NonBlocking => &self.inner.nbc_seq,
            Caller::Blocking => &self.inner.blocking_nbc_seq,
        };
        let seq = counter.get().wrapping_add(1);
        counter.set(seq);
        caller as i32 | (seq & TAG_SEQ_MASK) as i32
    }
}

/// The calls a collective run as a request comes from, as the top bit of
/// its tag (tags are non-negative: 31 bits).
#[derive(Clone, Copy)]
#[repr(i32)]
pub(super) enum Caller {
    NonBlocking = 0,
    Blocking = 1 << 30,
}

/// A local step of a schedule, chosen at run time.
type LocalStep = Box<dyn FnMut(&mut [Vec<u8>]) + Send>;

/// The bits of a tag that number the collective.
const TAG_SEQ_MASK: u32 = (1 << 30) - 1;

/// A schedule being built for one rank of a group (a communicator's, or
/// one group of an intercommunicator, see [`super::inter`]).
pub(super) struct Plan<'c> {
    /// The group's members, world ranks in rank order.
    pub(super) group: &'c [usize],
    pub(super) s: Schedule,
    pub(super) p: usize,
    /// This rank in the group.
    pub(super) me: usize,
}

impl Plan<'_> {
    fn build(&mut self, what: NonBlocking, deliver: Deliver) -> Result<()> {
        let op = what.name();
        let result = match what {
            NonBlocking::Barrier => {
                self.barrier();
                None
            }
            NonBlocking::Bcast { root, data } => {
                self.check_root(root)?;
                let buf = self.s.buffer(data);
                self.bcast(buf, root);
                Some(buf)
            }
            NonBlocking::Reduce { root, data, combine, commutative } => {
                self.check_root(root)?;
                let acc = self.reduce(data, &combine, root, commutative);
                (self.me == root).then_some(acc)
            }
            NonBlocking::Allreduce { data, combine, commutative: _ } if self.p.is_power_of_two() => {
                Some(self.allreduce_doubling(data, &combine))
            }
            NonBlocking::Allreduce { data, combine, commutative: _ } => {
                let acc = self.reduce(data, &combine, 0, false);
                self.bcast(acc, 0);
                Some(acc)
            }
            NonBlocking::Gather { root, data, counts } => {
                self.check_root(root)?;
                Some(self.gather(op, root, data, counts)?)
            }
            NonBlocking::Scatter { root, data, counts, mine } => {
                self.check_root(root)?;
                Some(self.scatter(op, root, data, counts, mine)?)
            }
            NonBlocking::Allgather { data, counts } => {
                let counts = self.counts(op, "counts", counts, Some(data.len()))?;
                let send = self.s.buffer(data);
                Some(self.exchange(send, &vec![0..self.s.len_of(send); self.p], &counts))
            }
            NonBlocking::Alltoall { data, send_counts, recv_counts } => {
                let sends = self.counts(op, "send counts", send_counts, None)?;
                let recvs = self.counts(op, "receive counts", recv_counts, None)?;
                let total: usize = sends.iter().map(|r| r.len()).sum();
                if total != data.len() {
                    let detail = SizeProblem::Length { buffer: "the send data", elements: data.len(), expected: total };
                    return Err(Error::BufferSize { op, detail });
                }
                let send = self.s.buffer(data);
                Some(self.exchange(send, &sends, &recvs))
            }
            NonBlocking::ReduceScatter { data, counts, combine } => {
                let counts = self.counts(op, "counts", counts, None)?;
                let acc = self.reduce(data, &combine, 0, false);
                Some(self.scatter_from_zero(acc, &counts))
            }
            NonBlocking::Scan { data, combine, exclusive } => self.scan(data, &combine, exclusive),
            NonBlocking::Neighbors { data, sends, recvs, result_len } => {
                Some(self.neighbors(op, data, &sends, &recvs, result_len)?)
            }
        };
        let mut deliver = Some(deliver);
        self.s.round().local(move |buffers| {
            let deliver = deliver.take().expect("a schedule runs each step once");
            deliver(result.map_or(&[][..], |buf| &buffers[buf.index()]));
        });
        Ok(())
    }

    pub(super) fn world(&self, rank: usize) -> usize {
        self.group[rank]
    }

    fn check_root(&self, root: usize) -> Result<()> {
        super::common::check_root(root, self.p)
    }

    /// Byte ranges of blocks of `counts`, end to end; `mine` (if given)
    /// must be this rank's count.
    pub(super) fn counts(
        &self,
        op: &'static str,
        what: &'static str,
        counts: Vec<usize>,
        mine: Option<usize>,
    ) -> Result<Vec<std::ops::Range<usize>>> {
        if counts.len() != self.p {
            let detail = SizeProblem::Counts { counts: what, entries: counts.len(), ranks: self.p };
            return Err(Error::BufferSize { op, detail });
        }
        if let Some(mine) = mine.filter(|&mine| mine != counts[self.me]) {
            let detail = SizeProblem::Length { buffer: "this rank's data", elements: mine, expected: counts[self.me] };
            return Err(Error::BufferSize { op, detail });
        }
        let mut at = 0;
        Ok(counts
            .iter()
            .map(|&n| {
                at += n;
                at - n..at
            })
            .collect())
    }

    /// Dissemination: in round k, to rank + 2^k and from rank − 2^k.
    fn barrier(&mut self) {
        let token = self.s.buffer(Vec::new());
        let (p, me) = (self.p, self.me);
        let mut step = 1;
        while step < p {
            let (to, from) = ((me + step) % p, (me + p - step) % p);
            let (to_world, from_world) = (self.world(to), self.world(from));
            self.s.round().send(to_world, token, 0..0).recv(from_world, from, token, 0..0);
            step <<= 1;
        }
    }

    /// Binomial tree from `root`: receive from the parent, then send to
    /// every child at once.
    pub(super) fn bcast(&mut self, buf: BufferId, root: usize) {
        let (p, n) = (self.p, self.s.len_of(buf));
        let vrank = (self.me + p - root) % p;
        let mut mask = 1;
        while mask < p {
            if vrank & mask != 0 {
                let parent = (vrank - mask + root) % p;
                let world = self.world(parent);
                self.s.round().recv(world, parent, buf, 0..n);
                break;
            }
            mask <<= 1;
        }
        self.s.round();
        mask >>= 1;
        while mask > 0 {
            if vrank + mask < p {
                let child = (vrank + mask + root) % p;
                let world = self.world(child);
                self.s.send(world, buf, 0..n);
            }
            mask >>= 1;
        }
    }

    /// Binomial tree to `root` (rank 0 if the operation does not commute,
    /// so that every combination keeps rank order, then a hop to the
    /// root): the buffer that holds the result at the root.
    pub(super) fn reduce(&mut self, data: Vec<u8>, combine: &Combine, root: usize, commutative: bool) -> BufferId {
        let tree_root = if commutative { root } else { 0 };
        let (p, n) = (self.p, data.len());
        let acc = self.s.buffer(data);
        let incoming = self.s.buffer(vec![0; n]);
        let vrank = (self.me + p - tree_root) % p;
        let mut mask = 1;
        while mask < p {
            if vrank & mask != 0 {
                let parent = (vrank - mask + tree_root) % p;
                let world = self.world(parent);
                self.s.round().send(world, acc, 0..n);
                break;
            }
            let child = vrank | mask;
            if child < p {
                let child = (child + tree_root) % p;
                let world = self.world(child);
                self.s.round().recv(world, child, incoming, 0..n);
                self.s.round().local(combine_into(combine.clone(), acc, incoming));
            }
            mask <<= 1;
        }
        if tree_root != root {
            if self.me == tree_root {
                let world = self.world(root);
                self.s.round().send(world, acc, 0..n);
            } else if self.me == root {
                let world = self.world(tree_root);
                self.s.round().recv(world, tree_root, acc, 0..n);
            }
        }
        acc
    }

    /// Recursive doubling, for a power-of-two number of ranks: in round k
    /// each rank swaps what it holds with rank ^ 2^k and combines the two,
    /// the lower ranks' first. Both partners so combine the same operands
    /// in the same order: every rank ends with the same bits, in rank order
    /// (an operation that does not commute is still applied in rank
    /// order), in log₂ p rounds where a reduce and a broadcast take twice
    /// as many.
    fn allreduce_doubling(&mut self, data: Vec<u8>, combine: &Combine) -> BufferId {
        let n = data.len();
        let acc = self.s.buffer(data);
        let incoming = self.s.buffer(vec![0; n]);
        // Each round combines what the last one brought, then swaps.
        let mut combining: Option<LocalStep> = None;
        let mut mask = 1;
        while mask < self.p {
            let partner = self.me ^ mask;
            let world = self.world(partner);
            let round = self.s.round();
            if let Some(step) = combining.take() {
                round.local(step);
            }
            round.send(world, acc, 0..n).recv(world, partner, incoming, 0..n);
            let step: LocalStep = if partner < self.me {
                let combine = combine.clone();
                Box::new(move |buffers: &mut [Vec<u8>]| {
                    let earlier = std::mem::take(&mut buffers[incoming.index()]);
                    combine(&earlier, &mut buffers[acc.index()]);
                    buffers[incoming.index()] = earlier;
                })
            } else {
                Box::new(combine_into(combine.clone(), acc, incoming))
            };
            combining = Some(step);
            mask <<= 1;
        }
        if let Some(step) = combining {
            self.s.round().local(step);
        }
        acc
    }

    /// The root receives every block; the others send theirs.
    fn gather(&mut self, op: &'static str, root: usize, data: Vec<u8>, counts: Vec<usize>) -> Result<BufferId> {
        if self.me != root {
            let n = data.len();
            let send = self.s.buffer(data);
            let world = self.world(root);
            self.s.round().send(world, send, 0..n);
            return Ok(self.s.buffer(Vec::new()));
        }
        let blocks = self.counts(op, "counts", counts, Some(data.len()))?;
        let mut all = vec![0; blocks.last().map_or(0, |b| b.end)];
        all[blocks[root].clone()].copy_from_slice(&data);
        let result = self.s.buffer(all);
        self.s.round();
        for (rank, block) in blocks.into_iter().enumerate().filter(|&(r, _)| r != root) {
            let world = self.world(rank);
            self.s.recv(world, rank, result, block);
        }
        Ok(result)
    }

    /// The root sends every block; the others receive theirs.
    fn scatter(
        &mut self,
        op: &'static str,
        root: usize,
        data: Vec<u8>,
        counts: Vec<usize>,
        mine: usize,
    ) -> Result<BufferId> {
        if self.me != root {
            let result = self.s.buffer(vec![0; mine]);
            let world = self.world(root);
            self.s.round().recv(world, root, result, 0..mine);
            return Ok(result);
        }
        let blocks = self.counts(op, "counts", counts, None)?;
        let total = blocks.last().map_or(0, |b| b.end);
        if total != data.len() {
            let detail = SizeProblem::Length { buffer: "the root's data", elements: data.len(), expected: total };
            return Err(Error::BufferSize { op, detail });
        }
        let result = self.s.buffer(data[blocks[root].clone()].to_vec());
        let send = self.s.buffer(data);
        self.s.round();
        for (rank, block) in blocks.into_iter().enumerate().filter(|&(r, _)| r != root) {
            let world = self.world(rank);
            self.s.send(world, send, block);
        }
        Ok(result)
    }

    /// Rank 0 sends block r of `acc` to rank r: the buffer of this rank's block.
    pub(super) fn scatter_from_zero(&mut self, acc: BufferId, blocks: &[std::ops::Range<usize>]) -> BufferId {
        let mine = blocks[self.me].clone();
        let result = self.s.buffer(vec![0; mine.len()]);
        self.s.round();
        if self.me == 0 {
            for (rank, block) in blocks.iter().enumerate().skip(1) {
                let world = self.world(rank);
                self.s.send(world, acc, block.clone());
            }
            self.s.local(move |buffers| {
                let own = buffers[acc.index()][mine.clone()].to_vec();
                buffers[result.index()].copy_from_slice(&own);
            });
        } else {
            let world = self.world(0);
            self.s.recv(world, 0, result, 0..mine.len());
        }
        result
    }

    /// Block `sends[r]` of `send` to every other rank r, block
    /// `recvs[r]` of the result from it; this rank's own block copied.
    fn exchange(
        &mut self,
        send: BufferId,
        sends: &[std::ops::Range<usize>],
        recvs: &[std::ops::Range<usize>],
    ) -> BufferId {
        let me = self.me;
        let result = self.s.buffer(vec![0; recvs.last().map_or(0, |b| b.end)]);
        let (own_from, own_to) = (sends[me].clone(), recvs[me].clone());
        self.s.round().local(move |buffers| {
            let n = own_from.len().min(own_to.len());
            let own = buffers[send.index()][own_from.start..own_from.start + n].to_vec();
            buffers[result.index()][own_to.start..own_to.start + n].copy_from_slice(&own);
        });
        for rank in (0..self.p).filter(|&r| r != me) {
            let world = self.world(rank);
            self.s.send(world, send, sends[rank].clone());
            self.s.recv(world, rank, result, recvs[rank].clone());
        }
        result
    }

    /// One round: every receive posted, then every send, each in the
    /// order given (see [`NonBlocking::Neighbors`]).
    fn neighbors(
        &mut self,
        op: &'static str,
        data: Vec<u8>,
        sends: &[(usize, std::ops::Range<usize>)],
        recvs: &[(usize, std::ops::Range<usize>)],
        result_len: usize,
    ) -> Result<BufferId> {
        for (rank, range) in sends.iter().chain(recvs) {
            super::common::check_root(*rank, self.p)?;
            debug_assert!(range.start <= range.end, "a block's bytes are a range");
        }
        let past =
            |blocks: &[(usize, std::ops::Range<usize>)], len: usize| blocks.iter().find(|(_, r)| r.end > len).cloned();
        if let Some((_, block)) = past(sends, data.len()) {
            let detail = SizeProblem::Length { buffer: "the send data", elements: data.len(), expected: block.end };
            return Err(Error::BufferSize { op, detail });
        }
        if let Some((_, block)) = past(recvs, result_len) {
            let detail = SizeProblem::Length { buffer: "the result", elements: result_len, expected: block.end };
            return Err(Error::BufferSize { op, detail });
        }
        let send = self.s.buffer(data);
        let result = self.s.buffer(vec![0; result_len]);
        self.s.round();
        for (rank, range) in recvs {
            self.s.recv(self.world(*rank), *rank, result, range.clone());
        }
        for (rank, range) in sends {
            self.s.send(self.world(*rank), send, range.clone());
        }
        Ok(result)
    }

    /// A chain in rank order: rank r combines what rank r − 1 passes on
    /// with its own data and passes that on.
    fn scan(&mut self, data: Vec<u8>, combine: &Combine, exclusive: bool) -> Option<BufferId> {
        let (p, me, n) = (self.p, self.me, data.len());
        let own = self.s.buffer(data);
        let before = self.s.buffer(vec![0; n]);
        let result = if exclusive { self.s.buffer(vec![0; n]) } else { own };
        if me > 0 {
            let world = self.world(me - 1);
            self.s.round().recv(world, me - 1, before, 0..n);
            let combine = combine.clone();
            self.s.round().local(move |buffers| {
                if exclusive {
                    let earlier = buffers[before.index()].clone();
                    buffers[result.index()].copy_from_slice(&earlier);
                }
                let earlier = std::mem::take(&mut buffers[before.index()]);
                combine(&earlier, &mut buffers[own.index()]);
                buffers[before.index()] = earlier;
            });
        }
        if me + 1 < p {
            let world = self.world(me + 1);
            self.s.round().send(world, own, 0..n);
        }
        (!exclusive || me > 0).then_some(result)
    }
}

/// The local step `acc = acc ∘ incoming` (acc holds the lower ranks).
fn combine_into(combine: Combine, acc: BufferId, incoming: BufferId) -> impl FnMut(&mut [Vec<u8>]) + Send {
    move |buffers| {
        let lower = std::mem::take(&mut buffers[acc.index()]);
        combine(&lower, &mut buffers[incoming.index()]);
        buffers[acc.index()] = lower;
        buffers.swap(acc.index(), incoming.index());
    }
}
