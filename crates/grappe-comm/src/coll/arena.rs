//! Shared-memory collectives for communicators whose ranks share a host.
//!
//! Each such communicator owns an arena in the host segment: one slot per
//! rank and a result slot. A collective is one *exchange*: every rank
//! writes its contribution to its slot and arrives; the last to arrive
//! combines the slots (in rank order, so non-commutative reductions and
//! floating-point sums give the same bits on every rank, run after run)
//! into the result, opens the next generation and rings the others, who
//! then copy the result out. One cache-line hand-off per rank and no
//! message at all: for small data this beats any tree of messages, and
//! when ranks outnumber cores it needs each rank to run only once.
//!
//! Reuse is safe without further synchronisation: the result of exchange
//! k is overwritten only by the last arriver of exchange k + 1, which
//! arrives after every rank read result k; a slot is rewritten only by its
//! owner, after exchange k completed.

use std::sync::atomic::{AtomicU32, Ordering};

use grappe_fabric::CACHE_LINE;
use grappe_proto::Result;

use crate::Communicator;

/// Arenas per host segment (communicators with a shared-memory fast path).
pub const ARENAS: usize = 64;
/// Largest contribution (and result) of one exchange, in bytes.
pub const SLOT_BYTES: usize = 1024;

/// Bytes of one arena for a host of `local_ranks` ranks.
pub fn arena_bytes(local_ranks: usize) -> usize {
    2 * CACHE_LINE + (local_ranks + 1) * SLOT_BYTES
}

/// A communicator's arena, as one rank uses it.
pub(crate) struct Arena<'a> {
    comm: &'a Communicator,
    base: *mut u8,
}

impl<'a> Arena<'a> {
    /// The arena of `comm`, if it has one.
    pub(crate) fn of(comm: &'a Communicator) -> Option<Arena<'a>> {
        let index = comm.arena_index()?;
        let base = comm.rank_context().engine().host().arena(index);
        Some(Arena { comm, base })
    }

    fn arrived(&self) -> &AtomicU32 {
        // SAFETY: the first line of the arena, zero-initialised, aligned.
        unsafe { &*(self.base as *const AtomicU32) }
    }

    fn generation(&self) -> &AtomicU32 {
        // SAFETY: the second line of the arena.
        unsafe { &*(self.base.add(CACHE_LINE) as *const AtomicU32) }
    }

    fn slot_ptr(&self, rank: usize) -> *mut u8 {
        // SAFETY: rank <= comm size <= local ranks: inside the arena.
        unsafe { self.base.add(2 * CACHE_LINE + rank * SLOT_BYTES) }
    }

    /// One exchange. Every rank contributes `mine` (at most [`SLOT_BYTES`]);
    /// the last to arrive calls `combine(slots, result)` with every rank's
    /// contribution, by rank; every rank then receives the first
    /// `out.len()` bytes of the result. All ranks pass the same sizes.
    pub(crate) fn exchange(
        &self,
        mine: &[u8],
        out: &mut [u8],
        combine: impl FnOnce(&Slots<'_>, &mut [u8]),
    ) -> Result<()> {
        self.exchange_parts(mine, Shape { slot: mine.len(), result: out.len() }, 0, out, combine)
    }

    /// An exchange in which ranks contribute and read different parts:
    /// every rank writes `mine` (at most `shape.slot` bytes; a root alone
    /// may contribute, the others pass nothing); the last to arrive calls
    /// `combine` with slots of `shape.slot` bytes and a result of
    /// `shape.result` bytes; every rank then copies `out.len()` bytes from
    /// offset `out_at` of the result (a rank that needs nothing passes an
    /// empty `out`). All ranks pass the same `shape`; slot bytes past what
    /// a rank wrote are stale, and `combine` must not read them.
    pub(crate) fn exchange_parts(
        &self,
        mine: &[u8],
        shape: Shape,
        out_at: usize,
        out: &mut [u8],
        combine: impl FnOnce(&Slots<'_>, &mut [u8]),
    ) -> Result<()> {
        assert!(
            mine.len() <= shape.slot && shape.slot <= SLOT_BYTES && shape.result <= SLOT_BYTES,
            "arena exchange of {} bytes in slots of {} and a result of {} (at most {SLOT_BYTES})",
            mine.len(),
            shape.slot,
            shape.result
        );
        assert!(
            out_at + out.len() <= shape.result,
            "reading {}..{} of a {}-byte result",
            out_at,
            out_at + out.len(),
            shape.result
        );
        let n = self.comm.size();
        let generation = self.generation().load(Ordering::Acquire);
        // SAFETY: our own slot; nobody reads it until we arrive (release).
        unsafe { std::ptr::copy_nonoverlapping(mine.as_ptr(), self.slot_ptr(self.comm.rank()), mine.len()) };
        if self.arrived().fetch_add(1, Ordering::AcqRel) as usize + 1 == n {
            self.finish(shape.slot, shape.result, combine);
            self.generation().store(generation.wrapping_add(1), Ordering::Release);
            self.ring_others();
        } else {
            let mut engine = self.comm.rank_context().engine();
            engine.block_on_shared(|| self.generation().load(Ordering::Acquire) != generation)?;
        }
        // SAFETY: the result was published by the release above and is not
        // rewritten before we arrive at the next exchange; `out_at +
        // out.len()` is inside the result slot (checked above).
        unsafe { std::ptr::copy_nonoverlapping(self.slot_ptr(n).add(out_at), out.as_mut_ptr(), out.len()) };
        Ok(())
    }

    /// The last arriver: combine all slots into the result slot.
    fn finish(&self, slot_len: usize, result_len: usize, combine: impl FnOnce(&Slots<'_>, &mut [u8])) {
        let n = self.comm.size();
        let slots = Slots { arena: self, ranks: n, bytes: slot_len };
        // SAFETY: every rank arrived (acquire on `arrived`), so nobody
        // writes the result until we open the next generation.
        let result = unsafe { std::slice::from_raw_parts_mut(self.slot_ptr(n), result_len) };
        combine(&slots, result);
        self.arrived().store(0, Ordering::Relaxed);
    }

    fn ring_others(&self) {
        let engine = self.comm.rank_context().engine();
        for rank in 0..self.comm.size() {
            if rank != self.comm.rank() {
                engine.ring(self.comm.world_rank_of(rank).expect("member rank"));
            }
        }
    }
}

/// The sizes of an exchange, the same on every rank.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shape {
    /// Bytes of each slot that `combine` sees.
    pub slot: usize,
    /// Bytes of the result.
    pub result: usize,
}

/// Every rank's contribution to an exchange, seen by the last arriver.
pub(crate) struct Slots<'a> {
    arena: &'a Arena<'a>,
    ranks: usize,
    bytes: usize,
}

impl Slots<'_> {
    /// Number of contributions (the communicator size).
    pub(crate) fn len(&self) -> usize {
        self.ranks
    }

    /// Rank `rank`'s contribution; 64-byte aligned.
    pub(crate) fn get(&self, rank: usize) -> &[u8] {
        assert!(rank < self.ranks, "slot {rank} of {}", self.ranks);
        // SAFETY: every rank arrived (acquire on `arrived`), so its slot is
        // written and stays untouched until the next generation opens.
        unsafe { std::slice::from_raw_parts(self.arena.slot_ptr(rank) as *const u8, self.bytes) }
    }
}
