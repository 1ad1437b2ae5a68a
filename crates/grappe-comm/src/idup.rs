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
//!
//! A split (MPI's `MPI_Comm_split`, and `MPI_Comm_create`, a split in
//! two) can agree the same way: each proposal then also carries the
//! member's color and key, so that when the agreement is over every
//! member knows its part. The MPI library splits so under
//! `MPI_THREAD_MULTIPLE`, where a blocking exchange held under its lock
//! would keep the process's other threads, whose creations the other
//! ranks may be waiting for, out of MPI.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};

use grappe_proto::{BufferId, Schedule};

use crate::communicator::{CTX_STRIDE, NO_ARENA, arena_of};
use crate::scope::{Request, Scope};
use crate::{Communicator, Error, Result};

/// Bytes of a member's proposal: the context, then the arena its group's
/// rank 0 claimed (or `NO_ARENA`).
const PROPOSAL: usize = 16;

/// Bytes of a member's proposal in a split: [`PROPOSAL`], then its color
/// and key (see [`SplitWish`]).
const SPLIT_PROPOSAL: usize = PROPOSAL + 8;

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
    /// Bytes of each member's proposal: [`PROPOSAL`] or [`SPLIT_PROPOSAL`].
    width: usize,
    /// This rank's color and key, in a split.
    wish: Option<SplitWish>,
    proposals: BufferId,
    claims: BufferId,
    /// The context agreed on and the arena, once the agreement is over.
    agreed: OnceLock<(u32, u64)>,
    /// Every member's color and key, in a split, once it is over.
    wishes: OnceLock<Vec<SplitWish>>,
}

/// Who agrees: the members' world ranks (in the order of the buffers),
/// this rank's index among them, the index of its group's leader, and the
/// tag of their messages on the communicator's non-blocking context.
struct Among {
    members: Vec<usize>,
    me: usize,
    leader: usize,
    tag: i32,
}

/// A member's color (`None`: `MPI_UNDEFINED`, no part) and key in a split.
#[derive(Clone, Copy, Debug, PartialEq)]
struct SplitWish {
    color: Option<u32>,
    key: i32,
}

impl SplitWish {
    fn to_word(self) -> u64 {
        ((self.color.unwrap_or(u32::MAX) as u64) << 32) | self.key as u32 as u64
    }

    fn from_word(word: u64) -> SplitWish {
        let color = (word >> 32) as u32;
        SplitWish { color: (color != u32::MAX).then_some(color), key: word as u32 as i32 }
    }
}

/// A duplicate whose agreement is under way: once its request completed,
/// [`finish`](Self::finish) makes the communicator.
pub struct PendingDup {
    parent: Communicator,
    copies: u32,
    agreement: Arc<Agreement>,
    token: u64,
}

/// A split whose agreement is under way (see [`Communicator::start_split`]):
/// once its request completed, [`finish`](Self::finish) makes this rank's
/// part.
pub struct PendingSplit {
    agreed: PendingDup,
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
        let started = self.start_agreement(scope, copies.max(1), None);
        self.handled("idup", started)
    }

    /// Starts splitting this intracommunicator without blocking, as
    /// `MPI_Comm_split(color, key)` does (`None` is `MPI_UNDEFINED`):
    /// collective over it, in the order of its other collectives, and
    /// safe beside other agreements under way at its members. Wait for
    /// the request, then [`PendingSplit::finish`] gives this rank's part.
    /// The parts have no shared-memory arena: their collectives go by
    /// messages.
    pub fn start_split<'scope>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        color: Option<u32>,
        key: i32,
    ) -> Result<(Request<'scope>, PendingSplit)> {
        let started = match self.is_inter() {
            true => Err(Error::NotIntracomm),
            false => self.start_agreement(scope, 1, Some(SplitWish { color, key })),
        };
        let started = started.map(|(request, agreed)| (request, PendingSplit { agreed }));
        self.handled("split", started)
    }

    /// Starts merging this intercommunicator's two groups into an
    /// intracommunicator without blocking, as `MPI_Intercomm_merge(high)`
    /// does: collective over both groups, in the order of its other
    /// collectives. Wait for the request, then [`PendingMerge::finish`]
    /// gives the merged communicator (the group passing `high` false
    /// first; if both pass the same, the group whose leader has the lower
    /// world rank), which has no shared-memory arena.
    pub fn start_merge<'scope>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        high: bool,
    ) -> Result<(Request<'scope>, PendingMerge)> {
        let started = match self.is_inter() {
            false => Err(Error::NotIntercomm),
            // Each member's `high` travels as a split's color would.
            true => self.start_agreement(scope, 1, Some(SplitWish { color: Some(high as u32), key: 0 })),
        };
        let started = started.map(|(request, agreed)| (request, PendingMerge { agreed }));
        self.handled("merge", started)
    }

    /// Starts the agreement of a duplicate (`wish` is `None`) or of a
    /// split (this rank's color and key).
    fn start_agreement<'scope>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        copies: u32,
        wish: Option<SplitWish>,
    ) -> Result<(Request<'scope>, PendingDup)> {
        self.live()?;
        let (members, leader) = self.agreeing_members();
        let me =
            members.iter().position(|&w| w == self.my_world_rank()).expect("a rank is a member of its communicator");
        // A split's parts would need an arena each, which rank 0 can only
        // claim once it knows the colors: they go without.
        let arena = match me == leader && wish.is_none() {
            true => self.arena_source().claim_arenas(1)[0],
            false => NO_ARENA,
        };
        let among = Among { members, me, leader, tag: self.next_nbc_tag() };
        let blocks = copies * if self.is_inter() { 2 } else { 1 };
        let (request, agreement, token) = self.launch_agreement(scope, among, blocks, wish, arena)?;
        Ok((request, PendingDup { parent: self.clone(), copies, agreement, token }))
    }

    /// Starts making a communicator of `ranks` (ranks of this
    /// intracommunicator, in the new one's order) that only they create
    /// (`None` if this rank is not one of them), as `MPI_Comm_create_group(tag)` does,
    /// without blocking: the members agree on its context as an idup's
    /// do, apart from the agreements of other calls at other tags. Wait
    /// for the request, then [`PendingGroup::finish`] gives it. It has no
    /// shared-memory arena, as a blocking [`create_group`](Self::create_group)'s.
    pub fn start_create_group<'scope>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        ranks: &[usize],
        tag: i32,
    ) -> Result<Option<(Request<'scope>, PendingGroup)>> {
        let started = self.start_create_group_in(scope, ranks, tag);
        self.handled("create_group", started)
    }

    fn start_create_group_in<'scope>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        ranks: &[usize],
        tag: i32,
    ) -> Result<Option<(Request<'scope>, PendingGroup)>> {
        if self.is_inter() {
            return Err(Error::NotIntracomm);
        }
        if !(0..=crate::selectors::TAG_UB).contains(&tag) {
            return Err(Error::InvalidTag { tag, max: crate::selectors::TAG_UB });
        }
        let group = ranks.iter().map(|&r| self.world_rank_of(r)).collect::<Result<Vec<usize>>>()?;
        let Some(me) = ranks.iter().position(|&r| r == self.rank()) else { return Ok(None) };
        // The communicator's non-blocking collectives take every tag from
        // 0 up: the members' messages go on its context with a negative
        // tag, one per tag of the call (the engine knows no wildcard tag
        // value: a receive from any tag says so apart).
        let among = Among { members: group.clone(), me, leader: 0, tag: i32::MIN + tag };
        let (request, agreement, token) = self.launch_agreement(scope, among, 1, None, NO_ARENA)?;
        let agreed = PendingDup { parent: self.clone(), copies: 1, agreement, token };
        Ok(Some((request, PendingGroup { agreed, rank: me, group })))
    }

    /// Starts an agreement among `among`'s members on `blocks` context
    /// blocks: its request, the agreement, and the token of its
    /// registration with the rank.
    fn launch_agreement<'scope>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        among: Among,
        blocks: u32,
        wish: Option<SplitWish>,
        arena: u64,
    ) -> Result<(Request<'scope>, Arc<Agreement>, u64)> {
        let inner = self.live()?;
        let Among { members, me, leader, tag } = among;
        let width = if wish.is_some() { SPLIT_PROPOSAL } else { PROPOSAL };
        let mut schedule = Schedule::new("MPI_Comm_idup", self.nbc_ctx(), tag, me);
        let proposals = schedule.buffer(vec![0; width * members.len()]);
        let claims = schedule.buffer(vec![0; members.len()]);
        let next_ctx = inner.rank_ctx.ctx_counter();
        let agreement = Arc::new(Agreement {
            next_ctx,
            members,
            me,
            leader,
            blocks,
            width,
            wish,
            proposals,
            claims,
            agreed: OnceLock::new(),
            wishes: OnceLock::new(),
        });
        agreement.propose(schedule.buffers_mut(), arena, 0);
        agreement.clone().exchange(&mut schedule);
        let started = self.rank_context().engine().start_collective(schedule).map_err(Error::from)?;
        let token = match &started {
            grappe_proto::Started::Pending(id) => Some(inner.rank_ctx.agreement_started(*id)),
            grappe_proto::Started::Done(_) => None,
        };
        let request = scope.track(Ok(started), 0, self.error_handler(), None);
        Ok((request, agreement, token.unwrap_or(u64::MAX)))
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
        let mine = &mut buffers[self.proposals.index()][self.me * self.width..][..self.width];
        mine[..8].copy_from_slice(&ctx.to_ne_bytes());
        mine[8..16].copy_from_slice(&arena.to_ne_bytes());
        if let Some(wish) = self.wish {
            mine[PROPOSAL..].copy_from_slice(&wish.to_word().to_ne_bytes());
        }
    }

    /// Adds the rounds that exchange the proposals, then the claims.
    fn exchange(self: Arc<Self>, s: &mut Schedule) {
        self.all_to_all(s.round(), self.proposals, self.width);
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
            if self.wish.is_some() {
                let _ = self.wishes.set(self.wishes_of(buffers));
            }
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
        let ctx = table.chunks_exact(self.width).map(|p| u64::from_ne_bytes(p[..8].try_into().expect("8 bytes"))).max();
        (ctx.expect("an agreement has members") as u32, self.arena_of_leader(buffers))
    }

    /// The arena this rank's group leader claimed (only the leader's own
    /// proposal carries one).
    fn arena_of_leader(&self, buffers: &[Vec<u8>]) -> u64 {
        let leader = &buffers[self.proposals.index()][self.leader * self.width..][..self.width];
        u64::from_ne_bytes(leader[8..16].try_into().expect("8 bytes"))
    }

    /// Every member's color and key, from a split's proposals.
    fn wishes_of(&self, buffers: &[Vec<u8>]) -> Vec<SplitWish> {
        let table = &buffers[self.proposals.index()];
        let word = |p: &[u8]| u64::from_ne_bytes(p[PROPOSAL..].try_into().expect("8 bytes"));
        table.chunks_exact(self.width).map(|p| SplitWish::from_word(word(p))).collect()
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

/// A communicator of some ranks whose agreement is under way (see
/// [`Communicator::start_create_group`]): once its request completed,
/// [`finish`](Self::finish) makes it.
pub struct PendingGroup {
    agreed: PendingDup,
    /// This rank in the new communicator.
    rank: usize,
    /// Its members' world ranks.
    group: Vec<usize>,
}

impl PendingGroup {
    /// An intercommunicator of `local` (a communicator of this rank's
    /// group) and `remote` (the other group's world ranks) on the context
    /// agreed, once the request completed: the agreement ran among both
    /// groups' members, as `MPI_Intercomm_create` needs.
    pub fn finish_inter(self, local: Communicator, remote: Vec<usize>) -> Option<Communicator> {
        let (ctx, _) = *self.agreed.agreement.agreed.get()?;
        Some(Communicator::new_inter(local, ctx as u64, remote))
    }

    /// The communicator, once the request of
    /// [`Communicator::start_create_group`] completed successfully;
    /// `None` if the agreement is not over.
    pub fn finish(self) -> Option<Communicator> {
        let (ctx, _) = *self.agreed.agreement.agreed.get()?;
        let parent = &self.agreed.parent;
        let made = Communicator::new(parent.rank_context().clone(), ctx, self.rank, self.group.clone(), None);
        made.set_error_handler(parent.error_handler());
        parent.trace_comm_create(parent.span_without_site(), &made);
        Some(made)
    }
}

/// A merge whose agreement is under way (see [`Communicator::start_merge`]).
pub struct PendingMerge {
    agreed: PendingDup,
}

impl PendingMerge {
    /// The merged communicator, once the request of
    /// [`Communicator::start_merge`] completed successfully; `None` if the
    /// agreement is not over.
    pub fn finish(self) -> Option<Communicator> {
        let agreement = &self.agreed.agreement;
        let (ctx, _) = *agreement.agreed.get()?;
        let wishes = agreement.wishes.get()?;
        let inter = &self.agreed.parent;
        let local = inter.local_comm()?;
        let (mine, theirs) = (&local.inner.group, &inter.inner.group);
        // Members are both groups' world ranks, sorted.
        let high = |world: usize| agreement.members.binary_search(&world).ok().map(|i| wishes[i].color == Some(1));
        let local_first = match (high(mine[0])?, high(theirs[0])?) {
            (false, true) => true,
            (true, false) => false,
            _ => mine[0] < theirs[0],
        };
        let (group, rank) = match local_first {
            true => ([&mine[..], &theirs[..]].concat(), local.rank()),
            false => ([&theirs[..], &mine[..]].concat(), theirs.len() + local.rank()),
        };
        let merged = Communicator::new(inter.rank_context().clone(), ctx, rank, group, None);
        merged.set_error_handler(inter.error_handler());
        Some(merged)
    }
}

impl PendingSplit {
    /// This rank's part (`Some(None)` for a rank whose color was
    /// `MPI_UNDEFINED`), once the request of [`Communicator::start_split`]
    /// completed successfully; `None` if the agreement is not over.
    pub fn finish(self) -> Option<Option<Communicator>> {
        let agreement = &self.agreed.agreement;
        let (ctx, _) = *agreement.agreed.get()?;
        let wishes = agreement.wishes.get()?;
        let Some(color) = agreement.wish.and_then(|wish| wish.color) else { return Some(None) };
        let parent = &self.agreed.parent;
        // Members are the parent's ranks in order: a part is ordered by
        // key, then by the parent's rank.
        let mut part: Vec<(i32, usize)> = (wishes.iter().enumerate())
            .filter(|(_, wish)| wish.color == Some(color))
            .map(|(rank, wish)| (wish.key, rank))
            .collect();
        part.sort_unstable();
        let rank = part.iter().position(|&(_, r)| r == parent.rank()).expect("a rank is in its own color");
        let group = part.iter().map(|&(_, r)| parent.inner.group[r]).collect();
        let made = Communicator::new(parent.rank_context().clone(), ctx, rank, group, None);
        made.set_error_handler(parent.error_handler());
        parent.trace_comm_create(parent.span_without_site(), &made);
        Some(Some(made))
    }
}

impl Drop for PendingDup {
    fn drop(&mut self) {
        self.parent.rank_context().agreement_done(self.token);
    }
}
