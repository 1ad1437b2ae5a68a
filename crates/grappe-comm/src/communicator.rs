//! Communicators: a group of ranks and a private matching context.
//!
//! Each communicator owns four contexts: `ctx` for point-to-point
//! traffic, `ctx + 1` for its collectives, `ctx + 2` for its
//! non-blocking collectives and `ctx + 3` for MPI's partitioned
//! communication, so a user's `recv(ANY_SOURCE, ANY_TAG)` can
//! never swallow a message of a broadcast, nor a blocking collective one
//! of a non-blocking collective still running, nor an ordinary receive a
//! partitioned send's message. A new
//! communicator's context is agreed on collectively: every member proposes
//! the lowest context it has never used and all take the maximum, which is
//! then unused by every member (the MPICH approach, with a max instead of
//! a bit mask).

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;

use crate::selectors::{Source, Tag};
use crate::{Error, Result};

use crate::RankContext;
use crate::coll::board::Board;

/// Context of the world communicator.
pub(crate) const WORLD_CTX: u32 = 0;
/// Contexts come in fours: point-to-point, collectives, non-blocking
/// collectives, partitioned point-to-point.
pub(crate) const CTX_STRIDE: u32 = 4;
/// First context free for new communicators.
pub(crate) const FIRST_FREE_CTX: u32 = WORLD_CTX + CTX_STRIDE;

/// A group of ranks that communicate, as seen by one of them.
///
/// Cheap to clone (clones share the same communicator). Not `Send`: it
/// belongs to its rank.
#[derive(Clone)]
pub struct Communicator {
    pub(crate) inner: Rc<Inner>,
}

pub(crate) struct Inner {
    pub rank_ctx: Rc<RankContext>,
    pub ctx: u32,
    pub rank: usize,
    /// Communicator rank -> world rank.
    pub group: Vec<usize>,
    /// The shared-memory arena of the communicator, if it has one (all
    /// members on this host and an arena was free when it was created).
    arena: Option<usize>,
    freed: Cell<bool>,
    /// What the calls do with their errors.
    pub errors: Cell<crate::ErrorHandler>,
    /// Collective calls this rank made on the communicator: the number of
    /// its last one (see `coll::arena`).
    coll_seq: Cell<u64>,
    /// Its latest collective call, for the peers that wait for it.
    board: Arc<Board>,
    /// The local group of an intercommunicator (whose `group` is then the
    /// remote one), see [`crate::intercomm`].
    pub local: Option<Communicator>,
    /// Non-blocking collectives this rank started on the communicator:
    /// the number of its last one (its tag, see `coll::nonblocking`).
    pub nbc_seq: Cell<u32>,
    /// The same, for blocking collectives run as requests.
    pub blocking_nbc_seq: Cell<u32>,
    /// Its ranks grouped by host, once a collective asked (see
    /// `coll::hosts`).
    pub hosts: std::cell::OnceCell<Option<crate::coll::hosts::HostGroups>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // A communicator dropped while the engine is busy (unwinding out of
        // a call) leaves its board: probes of it get an answer still.
        if let Some(mut engine) = self.rank_ctx.engine_if_free() {
            engine.unregister_board(self.ctx + 1);
        }
    }
}

/// "No arena" in the words exchanged when creating a communicator.
pub(crate) const NO_ARENA: u64 = u64::MAX;

impl std::fmt::Debug for Communicator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Communicator")
            .field("ctx", &self.inner.ctx)
            .field("rank", &self.inner.rank)
            .field("size", &self.inner.group.len())
            .finish()
    }
}

impl Communicator {
    /// The world communicator of a rank.
    pub fn world(rank_ctx: Rc<RankContext>) -> Communicator {
        let (rank, size, arena) = {
            let engine = rank_ctx.engine();
            let params = engine.host().params();
            let single_host = engine.world_size() == params.local_ranks;
            (engine.world_rank(), engine.world_size(), (single_host && params.arenas > 0).then_some(0))
        };
        Communicator::new(rank_ctx, WORLD_CTX, rank, (0..size).collect(), arena)
    }

    pub(crate) fn new(
        rank_ctx: Rc<RankContext>,
        ctx: u32,
        rank: usize,
        group: Vec<usize>,
        arena: Option<usize>,
    ) -> Communicator {
        Communicator::build(rank_ctx, ctx, rank, group, arena, None)
    }

    /// A communicator of context `ctx`: an intercommunicator if `local`
    /// is its local group (`group` being the remote one).
    pub(crate) fn build(
        rank_ctx: Rc<RankContext>,
        ctx: u32,
        rank: usize,
        group: Vec<usize>,
        arena: Option<usize>,
        local: Option<Communicator>,
    ) -> Communicator {
        rank_ctx.used_ctx(ctx);
        let board = Arc::new(Board::new(rank, group.clone()));
        rank_ctx.engine().register_board(ctx + 1, board.clone());
        let (freed, coll_seq) = (Cell::new(false), Cell::new(0));
        let errors = Cell::new(crate::ErrorHandler::default());
        let (nbc_seq, blocking_nbc_seq) = (Cell::new(0), Cell::new(0));
        let inner = Inner {
            rank_ctx,
            ctx,
            rank,
            group,
            arena,
            freed,
            errors,
            coll_seq,
            board,
            local,
            nbc_seq,
            blocking_nbc_seq,
            hosts: std::cell::OnceCell::new(),
        };
        Communicator { inner: Rc::new(inner) }
    }

    /// Numbers a new collective call on the communicator.
    pub(crate) fn next_coll_seq(&self) -> u64 {
        let seq = self.inner.coll_seq.get() + 1;
        self.inner.coll_seq.set(seq);
        seq
    }

    /// This rank's board of collective calls on the communicator.
    pub(crate) fn board(&self) -> &Board {
        &self.inner.board
    }

    /// The arena of the communicator, if it has a shared-memory fast path.
    pub(crate) fn arena_index(&self) -> Option<usize> {
        self.inner.arena
    }

    /// Rank 0's part in creating communicators: claim one arena per new
    /// group (when this communicator could have one), for `groups` groups.
    pub(crate) fn claim_arenas(&self, groups: usize) -> Vec<u64> {
        let engine = self.inner.rank_ctx.engine();
        (0..groups)
            .map(|_| match self.inner.arena {
                Some(_) => engine.host().claim_arena().map_or(NO_ARENA, |a| a as u64),
                None => NO_ARENA,
            })
            .collect()
    }

    /// This rank's number in the communicator.
    pub fn rank(&self) -> usize {
        self.inner.rank
    }

    /// Number of ranks in the communicator.
    pub fn size(&self) -> usize {
        self.inner.group.len()
    }

    /// The world rank of communicator rank `rank`.
    pub fn world_rank_of(&self, rank: usize) -> Result<usize> {
        // Built only on failure: an error made eagerly and dropped cost a call
        // per message.
        self.inner.group.get(rank).copied().ok_or_else(|| Error::InvalidRank { rank, size: self.size() })
    }

    /// Frees the communicator: every clone of this handle then fails with
    /// [`Error::CommFreed`]. (Dropping the last clone frees it too.)
    pub fn free(&self) {
        self.inner.freed.set(true);
    }

    /// The live communicator, or [`Error::CommFreed`].
    #[inline]
    pub(crate) fn live(&self) -> Result<&Inner> {
        if self.inner.freed.get() { Err(Error::CommFreed) } else { Ok(&self.inner) }
    }

    /// The per-rank state (engine) behind this communicator.
    pub fn rank_context(&self) -> &Rc<RankContext> {
        &self.inner.rank_ctx
    }

    /// The contexts of the communicator's traffic (point-to-point,
    /// collective, non-blocking collective), as the engine knows them: for
    /// tools that look at the engine's queues, like checkpointing.
    pub fn context_ids(&self) -> [u32; 3] {
        [self.p2p_ctx(), self.coll_ctx(), self.nbc_ctx()]
    }

    /// Context of the communicator's non-blocking collectives.
    pub(crate) fn nbc_ctx(&self) -> u32 {
        self.inner.ctx + 2
    }

    /// Context of the communicator's collective traffic.
    pub(crate) fn coll_ctx(&self) -> u32 {
        self.inner.ctx + 1
    }

    /// Context of the communicator's point-to-point traffic.
    pub(crate) fn p2p_ctx(&self) -> u32 {
        self.inner.ctx
    }

    /// Context of the communicator's partitioned point-to-point traffic.
    pub(crate) fn partitioned_ctx(&self) -> u32 {
        self.inner.ctx + 3
    }

    /// A new communicator with the same ranks and a new context, like
    /// `MPI_Comm_dup`. Collective over this communicator.
    #[track_caller]
    pub fn dup(&self) -> Result<Communicator> {
        let dup = self.dup_from(self.span());
        self.handled("dup", dup)
    }

    /// [`dup`](Self::dup) for the runtime's own traffic (the checkpointer's
    /// control communicator): traced like init and finalize, with no call
    /// site, so that profiles do not show a line of the runtime as the
    /// program's.
    pub fn dup_for_runtime(&self) -> Result<Communicator> {
        let dup = self.dup_from(self.span_without_site());
        self.handled("dup", dup)
    }

    pub(crate) fn dup_from(&self, span: crate::trace::Span) -> Result<Communicator> {
        if self.is_inter() {
            return self.dup_inter();
        }
        let inner = self.live()?;
        let next = inner.rank_ctx.next_ctx()? as u64;
        let table = crate::internal::allgather_words(self, &[next, NO_ARENA], |table| {
            let arena = self.claim_arenas(1)[0];
            table.iter_mut().for_each(|entry| entry[1] = arena);
        })?;
        let ctx = table.iter().map(|w| w[0] as u32).max().expect("a communicator has members");
        let arena = table[0][1];
        let new = Communicator::new(inner.rank_ctx.clone(), ctx, inner.rank, inner.group.clone(), arena_of(arena));
        new.set_error_handler(self.error_handler());
        self.trace_comm_create(span, &new);
        Ok(new)
    }

    /// Splits the communicator by `color`, ordering each part by `key` and
    /// then by rank, like `MPI_Comm_split`. `None` is `MPI_UNDEFINED`: the
    /// rank takes part but gets no communicator. Collective.
    #[track_caller]
    pub fn split(&self, color: Option<u32>, key: i32) -> Result<Option<Communicator>> {
        let span = self.span();
        let split = self.split_from(span, color, key);
        self.handled("split", split)
    }

    /// [`split`](Self::split) for the runtime's own communicators (the MPI
    /// library's `MPI_COMM_SELF`): traced with no call site, as
    /// [`dup_for_runtime`](Self::dup_for_runtime).
    pub fn split_for_runtime(&self, color: Option<u32>, key: i32) -> Result<Option<Communicator>> {
        let split = self.split_from(self.span_without_site(), color, key);
        self.handled("split", split)
    }

    /// The largest of every rank's `value`, untraced: an agreement the
    /// runtime makes for itself (the MPI library's thread levels).
    /// Collective.
    pub fn max_for_runtime(&self, value: u64) -> Result<u64> {
        self.live()?;
        let table = crate::internal::allgather_words(self, &[value], |_| {});
        let max = table.map(|table| table.iter().map(|words| words[0]).max().unwrap_or(value));
        self.handled("max_for_runtime", max)
    }

    fn split_from(&self, span: crate::trace::Span, color: Option<u32>, key: i32) -> Result<Option<Communicator>> {
        let inner = self.live()?;
        let next = inner.rank_ctx.next_ctx()?;
        let mine = SplitEntry { color: color.map_or(u32::MAX, |c| c), key, next_ctx: next, arena: NO_ARENA };
        let all = crate::internal::allgather_words(self, &mine.words(), |table| self.assign_split_arenas(table))?;
        let entries: Vec<SplitEntry> = all.iter().map(|w| SplitEntry::from_words(w)).collect();
        let ctx = entries.iter().map(|e| e.next_ctx).max().expect("a communicator has members");
        inner.rank_ctx.used_ctx(ctx);
        let Some(color) = color else { return Ok(None) };
        let mut members: Vec<(i32, usize)> =
            entries.iter().enumerate().filter(|(_, e)| e.color == color).map(|(rank, e)| (e.key, rank)).collect();
        members.sort_unstable();
        let group: Vec<usize> = members.iter().map(|&(_, rank)| inner.group[rank]).collect();
        let rank = members.iter().position(|&(_, r)| r == inner.rank).expect("we are in our color");
        let arena = arena_of(entries[inner.rank].arena);
        let new = Communicator::new(inner.rank_ctx.clone(), ctx, rank, group, arena);
        new.set_error_handler(self.error_handler());
        self.trace_comm_create(span, &new);
        Ok(Some(new))
    }

    /// A communicator of `members` (ranks of this communicator, in the
    /// new one's order) that only they create (MPI's
    /// `MPI_Comm_create_group`): the other ranks do not take part. `None`
    /// if this rank is not a member. Collective over the members, who
    /// agree on its context through the first of them.
    #[track_caller]
    pub fn create_group(&self, members: &[usize]) -> Result<Option<Communicator>> {
        let span = self.span();
        let created = self.create_group_from(span, members);
        self.handled("create_group", created)
    }

    fn create_group_from(&self, span: crate::trace::Span, members: &[usize]) -> Result<Option<Communicator>> {
        let inner = self.live()?;
        let group = members.iter().map(|&m| self.world_rank_of(m)).collect::<Result<Vec<usize>>>()?;
        let Some(rank) = members.iter().position(|&m| m == inner.rank) else { return Ok(None) };
        let (ctx, tag) = (self.coll_ctx(), crate::internal::MANAGEMENT_TAG);
        let mut word = (inner.rank_ctx.next_ctx()? as u64).to_ne_bytes();
        if rank == 0 {
            let mut agreed = u64::from_ne_bytes(word);
            for &member in &members[1..] {
                self.recv_bytes(ctx, &mut word, Source::Rank(member), Tag::Is(tag))?;
                agreed = agreed.max(u64::from_ne_bytes(word));
            }
            word = agreed.to_ne_bytes();
            for &member in &members[1..] {
                self.send_bytes(ctx, &word, member, tag)?;
            }
        } else {
            self.send_bytes(ctx, &word, members[0], tag)?;
            self.recv_bytes(ctx, &mut word, Source::Rank(members[0]), Tag::Is(tag))?;
        }
        let new_ctx = u64::from_ne_bytes(word) as u32;
        let new = Communicator::new(inner.rank_ctx.clone(), new_ctx, rank, group, None);
        new.set_error_handler(self.error_handler());
        self.trace_comm_create(span, &new);
        Ok(Some(new))
    }

    /// Rank 0, during a split: one arena per color, written into every
    /// member's entry.
    fn assign_split_arenas(&self, table: &mut [Vec<u64>]) {
        let mut colors: Vec<u32> =
            table.iter().map(|w| SplitEntry::from_words(w).color).filter(|&c| c != u32::MAX).collect();
        colors.sort_unstable();
        colors.dedup();
        let arenas = self.claim_arenas(colors.len());
        for entry in table.iter_mut() {
            let color = SplitEntry::from_words(entry).color;
            if let Ok(i) = colors.binary_search(&color) {
                entry[2] = arenas[i];
            }
        }
    }
}

pub(crate) fn arena_of(word: u64) -> Option<usize> {
    (word != NO_ARENA).then_some(word as usize)
}

/// One rank's contribution to a split (the arena is filled in by rank 0).
struct SplitEntry {
    color: u32,
    key: i32,
    next_ctx: u32,
    arena: u64,
}

impl SplitEntry {
    fn words(&self) -> [u64; 3] {
        [(self.color as u64) << 32 | self.key as u32 as u64, self.next_ctx as u64, self.arena]
    }

    fn from_words(w: &[u64]) -> SplitEntry {
        SplitEntry { color: (w[0] >> 32) as u32, key: w[0] as u32 as i32, next_ctx: w[1] as u32, arena: w[2] }
    }
}
