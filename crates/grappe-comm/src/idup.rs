//! Duplicating a communicator without blocking (MPI's `MPI_Comm_idup`).
//!
//! A blocking duplicate agrees on its context in one exchange: every
//! member proposes the lowest context it never used, all take the
//! largest. Nothing else claims a context at a member between its
//! proposal and the creation, so the largest is free everywhere. A
//! duplicate that completes later loses that guarantee: while its
//! exchange is under way, its members create other communicators
//! (another `idup` may complete first, in a different order on each
//! rank), and the largest proposal may by then be taken at one of them.
//!
//! So the agreement runs as a schedule of the engine, moved on by any
//! progress of the rank, in rounds:
//!
//! 1. every member sends its proposal to every other (and the arena rank
//!    0 of each group claimed for it);
//! 2. each member takes the largest, `m`, and *claims* it: it succeeds if
//!    no context at or above `m` was used since (the counter of unused
//!    contexts is still at most `m`), and then marks `m`'s contexts used;
//!    every member sends whether its claim succeeded;
//! 3. if every claim succeeded, `m` is free at every member and now
//!    reserved: the agreement is over. Otherwise all start again from 1
//!    with fresh proposals (contexts claimed by the failed round stay
//!    unused: the space of contexts is large).
//!
//! Every member sees the same claims, so all decide alike. A blocking
//! creation first sees the rank's pending agreements through (see
//! `RankContext::next_ctx`), so no claim lands between its proposal and
//! its creation.
//!
//! An intercommunicator's duplicate agrees the same way over both groups
//! at once, on two contexts: the new intercommunicator's and its new
//! local group's.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};

use grappe_proto::{BufferId, Schedule};

use crate::communicator::{CTX_STRIDE, NO_ARENA, arena_of};
use crate::scope::{Request, Scope};
use crate::{Communicator, Error, Result};

/// Bytes of a member's proposal: the context, then the arena its group's
/// rank 0 claimed (or `NO_ARENA`).
const PROPOSAL: usize = 16;

/// What the rounds of one agreement share.
struct Agreement {
    /// The rank's counter of unused contexts.
    next_ctx: Arc<AtomicU32>,
    /// The members' world ranks, in the order of the buffers.
    members: Vec<usize>,
    /// This rank's index in `members`.
    me: usize,
    /// The index in `members` of this rank's group's rank 0, whose
    /// arena the new communicator takes.
    leader: usize,
    /// Contexts blocks (`CTX_STRIDE` contexts each) the agreement takes.
    blocks: u32,
    proposals: BufferId,
    claims: BufferId,
    /// The context agreed on and the arena, once the agreement is over.
    agreed: OnceLock<(u32, u64)>,
}

/// A duplicate whose agreement is under way: once its request completed,
/// [`finish`](Self::finish) makes the communicator.
pub struct PendingDup {
    parent: Communicator,
    copies: u32,
    agreement: Arc<Agreement>,
    token: u64,
}

impl Communicator {
    /// Starts making `copies` duplicates of this communicator without
    /// blocking, like `MPI_Comm_idup` (a library may want a private one
    /// beside the program's): collective over it (over both groups of an
    /// intercommunicator), in the order of its other collectives. Wait
    /// for the request, then [`PendingDup::finish`] gives the duplicates.
    pub fn start_dup<'scope>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        copies: u32,
    ) -> Result<(Request<'scope>, PendingDup)> {
        let started = self.start_dup_in(scope, copies.max(1));
        self.handled("idup", started)
    }

    fn start_dup_in<'scope>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        copies: u32,
    ) -> Result<(Request<'scope>, PendingDup)> {
        let inner = self.live()?;
        let (members, leader) = self.agreeing_members();
        let me =
            members.iter().position(|&w| w == self.my_world_rank()).expect("a rank is a member of its communicator");
        let blocks = copies * if self.is_inter() { 2 } else { 1 };
        let mut schedule = Schedule::new("MPI_Comm_idup", self.nbc_ctx(), self.next_nbc_tag(), me);
        let proposals = schedule.buffer(vec![0; PROPOSAL * members.len()]);
        let claims = schedule.buffer(vec![0; members.len()]);
        let next_ctx = inner.rank_ctx.ctx_counter();
        let arena = match me == leader {
            true => self.arena_source().claim_arenas(1)[0],
            false => NO_ARENA,
        };
        let agreement =
            Arc::new(Agreement { next_ctx, members, me, leader, blocks, proposals, claims, agreed: OnceLock::new() });
        agreement.propose(schedule.buffers_mut(), arena, 0);
        agreement.clone().exchange(&mut schedule);
        let started = self.rank_context().engine().start_collective(schedule).map_err(Error::from)?;
        let token = match &started {
            grappe_proto::Started::Pending(id) => Some(inner.rank_ctx.agreement_started(*id)),
            grappe_proto::Started::Done(_) => None,
        };
        let request = scope.track(Ok(started), 0, self.error_handler(), None);
        let pending = PendingDup { parent: self.clone(), copies, agreement, token: token.unwrap_or(u64::MAX) };
        Ok((request, pending))
    }

    /// The members of an agreement on this communicator's duplicate (both
    /// groups of an intercommunicator, in world rank order, so that both
    /// see the same order) and the index of this rank's group leader.
    fn agreeing_members(&self) -> (Vec<usize>, usize) {
        match self.local_comm() {
            None => (self.inner.group.clone(), 0),
            Some(local) => {
                let mut members: Vec<usize> = local.inner.group.iter().chain(&self.inner.group).copied().collect();
                members.sort_unstable();
                let leader = members.binary_search(&local.inner.group[0]).expect("the leader is a member");
                (members, leader)
            }
        }
    }

    /// The communicator whose arena setting the duplicate's local group
    /// follows: the local group of an intercommunicator.
    fn arena_source(&self) -> &Communicator {
        self.local_comm().unwrap_or(self)
    }

    fn my_world_rank(&self) -> usize {
        self.arena_source().inner.group[self.arena_source().rank()]
    }
}

impl Agreement {
    /// Writes this rank's proposal: the lowest context it never used,
    /// `skip` blocks further.
    fn propose(&self, buffers: &mut [Vec<u8>], arena: u64, skip: u32) {
        let ctx = (self.next_ctx.load(Ordering::Relaxed) + skip * CTX_STRIDE) as u64;
        let mine = &mut buffers[self.proposals.index()][self.me * PROPOSAL..][..PROPOSAL];
        mine[..8].copy_from_slice(&ctx.to_ne_bytes());
        mine[8..].copy_from_slice(&arena.to_ne_bytes());
    }

    /// Adds the rounds that exchange the proposals, then the claims.
    fn exchange(self: Arc<Self>, s: &mut Schedule) {
        self.all_to_all(s.round(), self.proposals, PROPOSAL);
        let agreement = self.clone();
        s.round().extend(move |s| agreement.claim(s));
    }

    /// Sends this rank's block of `buf` to every member and receives
    /// theirs.
    fn all_to_all(&self, s: &mut Schedule, buf: BufferId, block: usize) {
        for (i, &member) in self.members.iter().enumerate().filter(|&(i, _)| i != self.me) {
            s.send(member, buf, self.me * block..(self.me + 1) * block);
            s.recv(member, i, buf, i * block..(i + 1) * block);
        }
    }

    /// Round 2: claims the largest proposal and tells the others.
    fn claim(self: Arc<Self>, s: &mut Schedule) {
        let (ctx, _) = self.largest(s.buffers_mut());
        let claimed = self
            .next_ctx
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |next| {
                (ctx >= next).then_some(ctx + self.blocks * CTX_STRIDE)
            })
            .is_ok();
        s.buffers_mut()[self.claims.index()][self.me] = claimed as u8;
        self.all_to_all(s.round(), self.claims, 1);
        let agreement = self.clone();
        s.round().extend(move |s| agreement.decide(s));
    }

    /// Round 3: done if every claim succeeded, else over again.
    fn decide(self: Arc<Self>, s: &mut Schedule) {
        let buffers = s.buffers_mut();
        if buffers[self.claims.index()].iter().all(|&c| c == 1) {
            let (ctx, arena) = self.largest(buffers);
            let _ = self.agreed.set((ctx, arena));
            return;
        }
        let arena = self.arena_of_leader(buffers);
        self.propose(buffers, arena, random_skip());
        self.exchange(s);
    }

    /// The largest proposal and the arena of this rank's group.
    fn largest(&self, buffers: &mut [Vec<u8>]) -> (u32, u64) {
        let table = &buffers[self.proposals.index()];
        let ctx = table.chunks_exact(PROPOSAL).map(|p| u64::from_ne_bytes(p[..8].try_into().expect("8 bytes"))).max();
        (ctx.expect("an agreement has members") as u32, self.arena_of_leader(buffers))
    }

    /// The arena this rank's group leader claimed (only the leader's own
    /// proposal carries one).
    fn arena_of_leader(&self, buffers: &[Vec<u8>]) -> u64 {
        let leader = &buffers[self.proposals.index()][self.leader * PROPOSAL..][..PROPOSAL];
        u64::from_ne_bytes(leader[8..].try_into().expect("8 bytes"))
    }
}

/// A random number of context blocks, below `MAX_SKIP`, that a rank adds
/// to its proposal when an agreement starts over. Two agreements under
/// way at the same ranks, whose claims the ranks make in opposite orders
/// (each rank claims for the one whose proposals reached it first), fail
/// together when they agreed on the same context; starting over from the
/// same proposals would fail again, every round. Different contexts let
/// one of them through. (Randomness is all it takes: std's per-instance
/// hash keys give it without a crate.)
fn random_skip() -> u32 {
    use std::hash::BuildHasher;
    (std::collections::hash_map::RandomState::new().hash_one(0u8) % MAX_SKIP as u64) as u32
}

/// Bound of [`random_skip`]: the contexts it leaves unused stay few.
const MAX_SKIP: u32 = 16;

impl PendingDup {
    /// The duplicates, once the request of [`Communicator::start_dup`]
    /// completed successfully; `None` if the agreement is not over (the
    /// request failed or was not waited for).
    pub fn finish(self) -> Option<Vec<Communicator>> {
        let (first, arena) = *self.agreement.agreed.get()?;
        let parent = &self.parent;
        let per_copy = self.agreement.blocks / self.copies;
        (0..self.copies)
            .map(|copy| {
                let ctx = first + copy * per_copy * CTX_STRIDE;
                // The leader claimed one arena: the first copy's.
                let arena = if copy == 0 { arena_of(arena) } else { None };
                self.make(ctx, arena)
            })
            .inspect(|dup| dup.set_error_handler(parent.error_handler()))
            .collect::<Vec<_>>()
            .into()
    }

    /// A duplicate on context `ctx`, recorded as a blocking duplicate is
    /// (traces name the members of every communicator their messages use).
    fn make(&self, ctx: u32, arena: Option<usize>) -> Communicator {
        let parent = &self.parent;
        let rank_ctx = parent.rank_context().clone();
        match parent.local_comm() {
            None => {
                let dup = Communicator::new(rank_ctx, ctx, parent.rank(), parent.inner.group.clone(), arena);
                parent.trace_comm_create(parent.span_without_site(), &dup);
                dup
            }
            Some(local) => {
                let group = local.inner.group.clone();
                let local_dup = Communicator::new(rank_ctx, ctx + CTX_STRIDE, local.rank(), group, arena);
                local_dup.set_error_handler(local.error_handler());
                local.trace_comm_create(local.span_without_site(), &local_dup);
                Communicator::new_inter(local_dup, ctx as u64, parent.inner.group.clone())
            }
        }
    }
}

impl Drop for PendingDup {
    fn drop(&mut self) {
        self.parent.rank_context().agreement_done(self.token);
    }
}
