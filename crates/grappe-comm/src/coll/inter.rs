//! Non-blocking collectives on intercommunicators (MPI's `MPI_Ibcast`,
//! `MPI_Iallreduce`... on a communicator between two groups), as schedules
//! the engine runs while the rank does other things, like those of
//! [`super::nonblocking`].
//!
//! An intercommunicator's collective moves data from one group to the
//! other: a rooted one from the root (`MPI_ROOT`) to the other group or
//! back, the others from each group to the other. The steps inside a group
//! are the intracommunicator schedules' own (a binomial tree over the local
//! group), the steps between the groups go between their leaders (rank 0 of
//! each) or straight from rank to rank:
//!
//! | collective | algorithm |
//! |---|---|
//! | barrier | gather to the leader, leaders swap, leader releases its group |
//! | bcast | root to the other leader, binomial tree in the other group |
//! | reduce | binomial tree in the contributing group, its leader to the root |
//! | allreduce | a tree to each leader, leaders swap, trees from each leader |
//! | reduce-scatter | as allreduce, then each leader scatters its group's blocks |
//! | gather, scatter | rank to root, root to rank, one round |
//! | allgather, alltoall | every rank to every rank of the other group, one round |
//!
//! Every message travels on the intercommunicator's collective context,
//! the tag numbering the call as for an intracommunicator: both groups make
//! their collectives on it in the same order, as MPI requires. Messages
//! inside a group and between the groups cannot be confused, since a
//! receive names its sender's world rank.

use grappe_proto::{BufferId, Schedule};

use super::nonblocking::{Caller, Combine, Deliver, Plan};
use crate::scope::{Request, Scope};
use crate::{Communicator, Error, Result, SizeProblem};

/// Where a rank stands in a rooted collective on an intercommunicator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InterRoot {
    /// This rank is the root (MPI's `MPI_ROOT`).
    Root,
    /// Another rank of the root's group (`MPI_PROC_NULL`): no part in it.
    Idle,
    /// A rank of the other group; the root's rank in the remote group.
    Remote(usize),
}

/// A collective to start on an intercommunicator. Sizes are in bytes;
/// per-rank counts lay the blocks end to end in rank order, one per rank of
/// the *remote* group unless said otherwise. (Each variant's documentation
/// says what its fields are.)
#[allow(missing_docs)]
pub enum InterCollective {
    /// No rank leaves before every rank of the other group entered.
    Barrier,
    /// The root's `data` to every rank of the other group; there, `data` is
    /// a buffer of the size expected.
    Bcast { root: InterRoot, data: Vec<u8> },
    /// The other group's `data` combined, at the root, whose `data` is a
    /// buffer of the result's size.
    Reduce { root: InterRoot, data: Vec<u8>, combine: Combine, commutative: bool },
    /// Every rank gets the other group's `data` combined (of the same size).
    Allreduce { data: Vec<u8>, combine: Combine, commutative: bool },
    /// The other group's `data`, block r from its rank r, at the root,
    /// which gives `counts`.
    Gather { root: InterRoot, data: Vec<u8>, counts: Vec<usize> },
    /// Block r of the root's `data` (cut by `counts`) to rank r of the
    /// other group, which expects `mine` bytes.
    Scatter { root: InterRoot, data: Vec<u8>, counts: Vec<usize>, mine: usize },
    /// Every rank's `data` to every rank of the other group; `counts` are
    /// what each remote rank sends.
    Allgather { data: Vec<u8>, counts: Vec<usize> },
    /// Block r of `data` (cut by `send_counts`) to remote rank r; blocks
    /// arrive by `recv_counts`.
    Alltoall { data: Vec<u8>, send_counts: Vec<usize>, recv_counts: Vec<usize> },
    /// The other group's `data` combined, then block r (cut by `counts`,
    /// one per rank of the *local* group) to local rank r.
    ReduceScatter { data: Vec<u8>, counts: Vec<usize>, combine: Combine, commutative: bool },
}

impl InterCollective {
    /// MPI's name of the collective, for errors.
    fn name(&self) -> &'static str {
        match self {
            InterCollective::Barrier => "MPI_Ibarrier",
            InterCollective::Bcast { .. } => "MPI_Ibcast",
            InterCollective::Reduce { .. } => "MPI_Ireduce",
            InterCollective::Allreduce { .. } => "MPI_Iallreduce",
            InterCollective::Gather { .. } => "MPI_Igather",
            InterCollective::Scatter { .. } => "MPI_Iscatter",
            InterCollective::Allgather { .. } => "MPI_Iallgather",
            InterCollective::Alltoall { .. } => "MPI_Ialltoall",
            InterCollective::ReduceScatter { .. } => "MPI_Ireduce_scatter",
        }
    }
}

impl Communicator {
    /// Starts `what` on this intercommunicator; `deliver` gets the result
    /// (an empty slice on ranks that get none) before the request
    /// completes. Every rank of both groups must start the same collectives
    /// on it in the same order.
    #[track_caller]
    pub fn start_inter_collective<'scope>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        what: InterCollective,
        deliver: Deliver,
    ) -> Result<Request<'scope>> {
        let schedule = self.inter_schedule_of(what, deliver);
        self.run_schedule(scope, schedule)
    }

    fn inter_schedule_of(&self, what: InterCollective, deliver: Deliver) -> Result<Schedule> {
        let inner = self.live()?;
        let local = self.local_comm().ok_or(Error::NotIntercomm)?;
        let tag = self.next_tag_of(Caller::NonBlocking);
        let schedule = Schedule::new(what.name(), self.nbc_ctx(), tag, self.rank());
        let group = &local.inner.group;
        let local = Plan { group, s: schedule, p: group.len(), me: self.rank() };
        let mut plan = InterPlan { local, remote: &inner.group };
        plan.build(what, deliver)?;
        Ok(plan.local.s)
    }
}

/// A schedule being built for one rank of an intercommunicator: its own
/// group's plan, and the other group's members (world ranks).
struct InterPlan<'c> {
    local: Plan<'c>,
    remote: &'c [usize],
}

impl InterPlan<'_> {
    fn build(&mut self, what: InterCollective, deliver: Deliver) -> Result<()> {
        let op = what.name();
        let result = match what {
            InterCollective::Barrier => {
                self.barrier();
                None
            }
            InterCollective::Bcast { root, data } => self.bcast(root, data)?,
            InterCollective::Reduce { root, data, combine, commutative } => {
                self.reduce(root, data, &combine, commutative)?
            }
            InterCollective::Allreduce { data, combine, commutative } => {
                Some(self.allreduce(data, &combine, commutative))
            }
            InterCollective::Gather { root, data, counts } => self.gather(op, root, data, counts)?,
            InterCollective::Scatter { root, data, counts, mine } => self.scatter(op, root, data, counts, mine)?,
            InterCollective::Allgather { data, counts } => {
                let recvs = self.remote_counts(op, "counts", counts)?;
                let sends = vec![0..data.len(); self.remote.len()];
                Some(self.exchange(data, &sends, &recvs))
            }
            InterCollective::Alltoall { data, send_counts, recv_counts } => {
                let sends = self.remote_counts(op, "send counts", send_counts)?;
                let recvs = self.remote_counts(op, "receive counts", recv_counts)?;
                let total = sends.last().map_or(0, |b| b.end);
                if total != data.len() {
                    let detail = SizeProblem::Length { buffer: "the send data", elements: data.len(), expected: total };
                    return Err(Error::BufferSize { op, detail });
                }
                Some(self.exchange(data, &sends, &recvs))
            }
            InterCollective::ReduceScatter { data, counts, combine, commutative } => {
                let blocks = self.local.counts(op, "counts", counts, None)?;
                let total = blocks.last().map_or(0, |b| b.end);
                if total != data.len() {
                    let detail = SizeProblem::Length { buffer: "the send data", elements: data.len(), expected: total };
                    return Err(Error::BufferSize { op, detail });
                }
                let theirs = self.swapped_reduction(data, &combine, commutative);
                Some(self.local.scatter_from_zero(theirs, &blocks))
            }
        };
        let mut deliver = Some(deliver);
        self.local.s.round().local(move |buffers| {
            let deliver = deliver.take().expect("a schedule runs each step once");
            deliver(result.map_or(&[][..], |buf| &buffers[buf.index()]));
        });
        Ok(())
    }

    fn leads(&self) -> bool {
        self.local.me == 0
    }

    /// The world rank of rank `rank` of the remote group.
    fn remote_world(&self, rank: usize) -> usize {
        self.remote[rank]
    }

    /// `root` checked against the remote group's size.
    fn checked(&self, root: InterRoot) -> Result<InterRoot> {
        if let InterRoot::Remote(rank) = root {
            super::common::check_root(rank, self.remote.len())?;
        }
        Ok(root)
    }

    /// Byte ranges of blocks of `counts`, one per remote rank.
    fn remote_counts(
        &self,
        op: &'static str,
        what: &'static str,
        counts: Vec<usize>,
    ) -> Result<Vec<std::ops::Range<usize>>> {
        if counts.len() != self.remote.len() {
            let detail = SizeProblem::Counts { counts: what, entries: counts.len(), ranks: self.remote.len() };
            return Err(Error::BufferSize { op, detail });
        }
        Ok(end_to_end(&counts))
    }

    /// The group's ranks gather at the leader, the leaders swap a token,
    /// each leader releases its group: no rank leaves before every rank of
    /// the other group entered.
    fn barrier(&mut self) {
        let token = self.local.s.buffer(Vec::new());
        self.gathered_at_leader(token, |plan| {
            let other = plan.remote_world(0);
            plan.local.s.round().send(other, token, 0..0).recv(other, 0, token, 0..0);
        });
    }

    /// Runs `between` (the leaders' exchange) at the leader after every
    /// rank of the group reached it, and releases the group after it.
    fn gathered_at_leader(&mut self, token: BufferId, between: impl FnOnce(&mut Self)) {
        let p = self.local.p;
        if self.leads() {
            self.local.s.round();
            for rank in 1..p {
                let world = self.local.world(rank);
                self.local.s.recv(world, rank, token, 0..0);
            }
            between(self);
            self.local.s.round();
            for rank in 1..p {
                let world = self.local.world(rank);
                self.local.s.send(world, token, 0..0);
            }
        } else {
            let leader = self.local.world(0);
            self.local.s.round().send(leader, token, 0..0);
            self.local.s.round().recv(leader, 0, token, 0..0);
        }
    }

    /// The root to the other group's leader, which broadcasts it there.
    fn bcast(&mut self, root: InterRoot, data: Vec<u8>) -> Result<Option<BufferId>> {
        let n = data.len();
        let buf = self.local.s.buffer(data);
        match self.checked(root)? {
            InterRoot::Root => {
                let leader = self.remote_world(0);
                self.local.s.round().send(leader, buf, 0..n);
                Ok(None)
            }
            InterRoot::Idle => Ok(None),
            InterRoot::Remote(root) => {
                if self.leads() {
                    let world = self.remote_world(root);
                    self.local.s.round().recv(world, root, buf, 0..n);
                }
                self.local.bcast(buf, 0);
                Ok(Some(buf))
            }
        }
    }

    /// A tree to the contributing group's leader, which sends the result
    /// to the root.
    fn reduce(
        &mut self,
        root: InterRoot,
        data: Vec<u8>,
        combine: &Combine,
        commutative: bool,
    ) -> Result<Option<BufferId>> {
        match self.checked(root)? {
            InterRoot::Root => {
                let n = data.len();
                let result = self.local.s.buffer(data);
                let leader = self.remote_world(0);
                self.local.s.round().recv(leader, 0, result, 0..n);
                Ok(Some(result))
            }
            InterRoot::Idle => Ok(None),
            InterRoot::Remote(root) => {
                let n = data.len();
                let acc = self.local.reduce(data, combine, 0, commutative);
                if self.leads() {
                    let world = self.remote_world(root);
                    self.local.s.round().send(world, acc, 0..n);
                }
                Ok(None)
            }
        }
    }

    /// The group's `data` reduced to its leader, which swaps it with the
    /// other leader's: the buffer holding the other group's reduction at
    /// the leader (of `data`'s size everywhere).
    fn swapped_reduction(&mut self, data: Vec<u8>, combine: &Combine, commutative: bool) -> BufferId {
        let n = data.len();
        let acc = self.local.reduce(data, combine, 0, commutative);
        let theirs = self.local.s.buffer(vec![0; n]);
        if self.leads() {
            let other = self.remote_world(0);
            self.local.s.round().send(other, acc, 0..n).recv(other, 0, theirs, 0..n);
        }
        theirs
    }

    /// Each leader gets the other group's reduction and broadcasts it.
    fn allreduce(&mut self, data: Vec<u8>, combine: &Combine, commutative: bool) -> BufferId {
        let theirs = self.swapped_reduction(data, combine, commutative);
        self.local.bcast(theirs, 0);
        theirs
    }

    /// Every remote rank sends its block straight to the root.
    fn gather(
        &mut self,
        op: &'static str,
        root: InterRoot,
        data: Vec<u8>,
        counts: Vec<usize>,
    ) -> Result<Option<BufferId>> {
        match self.checked(root)? {
            InterRoot::Root => {
                let blocks = self.remote_counts(op, "counts", counts)?;
                let result = self.local.s.buffer(vec![0; blocks.last().map_or(0, |b| b.end)]);
                self.local.s.round();
                for (rank, block) in blocks.into_iter().enumerate() {
                    let world = self.remote_world(rank);
                    self.local.s.recv(world, rank, result, block);
                }
                Ok(Some(result))
            }
            InterRoot::Idle => Ok(None),
            InterRoot::Remote(root) => {
                let n = data.len();
                let send = self.local.s.buffer(data);
                let world = self.remote_world(root);
                self.local.s.round().send(world, send, 0..n);
                Ok(None)
            }
        }
    }

    /// The root sends every remote rank its block.
    fn scatter(
        &mut self,
        op: &'static str,
        root: InterRoot,
        data: Vec<u8>,
        counts: Vec<usize>,
        mine: usize,
    ) -> Result<Option<BufferId>> {
        match self.checked(root)? {
            InterRoot::Root => {
                let blocks = self.remote_counts(op, "counts", counts)?;
                let total = blocks.last().map_or(0, |b| b.end);
                if total != data.len() {
                    let detail =
                        SizeProblem::Length { buffer: "the root's data", elements: data.len(), expected: total };
                    return Err(Error::BufferSize { op, detail });
                }
                let send = self.local.s.buffer(data);
                self.local.s.round();
                for (rank, block) in blocks.into_iter().enumerate() {
                    let world = self.remote_world(rank);
                    self.local.s.send(world, send, block);
                }
                Ok(None)
            }
            InterRoot::Idle => Ok(None),
            InterRoot::Remote(root) => {
                let result = self.local.s.buffer(vec![0; mine]);
                let world = self.remote_world(root);
                self.local.s.round().recv(world, root, result, 0..mine);
                Ok(Some(result))
            }
        }
    }

    /// Block `sends[r]` of `data` to remote rank r and block `recvs[r]` of
    /// the result from it, all in one round.
    fn exchange(
        &mut self,
        data: Vec<u8>,
        sends: &[std::ops::Range<usize>],
        recvs: &[std::ops::Range<usize>],
    ) -> BufferId {
        let send = self.local.s.buffer(data);
        let result = self.local.s.buffer(vec![0; recvs.last().map_or(0, |b| b.end)]);
        self.local.s.round();
        for (rank, (to, from)) in sends.iter().zip(recvs).enumerate() {
            let world = self.remote_world(rank);
            self.local.s.send(world, send, to.clone()).recv(world, rank, result, from.clone());
        }
        result
    }
}

/// Byte ranges of blocks of `counts`, end to end.
fn end_to_end(counts: &[usize]) -> Vec<std::ops::Range<usize>> {
    let mut at = 0;
    counts
        .iter()
        .map(|&n| {
            at += n;
            at - n..at
        })
        .collect()
}
