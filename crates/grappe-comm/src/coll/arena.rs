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
//!
//! **Calls that do not match.** The word that counts arrivals also sums a
//! 48-bit hash of each arriver's signature key, in the same atomic add
//! (so checking costs nothing more than arriving): the last arriver
//! compares the sum with `n` times its own hash. Equal keys always pass;
//! different ones pass only if their hashes happen to sum to that: odds
//! of 2^-48 for random hashes, 2^-33 at worst (when `n - 1` is a multiple
//! of 2^15 and the last arriver is the odd one). A rank whose
//! call takes another path (messages, for a size the others do not have)
//! never arrives; but every collective call on the communicator writes
//! its number and signature in its rank's header line first, so a rank
//! that waits in an exchange and was not woken for a sleep's length looks
//! at the headers and finds it. Either way the finder publishes its
//! report and sets the arena's abort word: the exchange and every later
//! one fail on every rank with that report, and the finder revokes the
//! communicator's collectives for the ranks that are not in the arena.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::{Error, Result};
use grappe_fabric::CACHE_LINE;
use grappe_proto::{Engine, Mismatch};

use super::signature::{Announcement, mismatch};
use super::xfer::Channel;
use crate::Communicator;

/// Arenas per host segment (communicators with a shared-memory fast path).
pub const ARENAS: usize = 64;
/// Largest contribution (and result) of one exchange, in bytes.
pub const SLOT_BYTES: usize = 1024;
/// A rank's part of the arena: its header line, then its slot.
const RANK_BYTES: usize = CACHE_LINE + SLOT_BYTES;

const _: () =
    assert!(2 + Mismatch::MAX_ENCODED <= SLOT_BYTES, "a report (after its length) must fit its finder's slot");

/// Bytes of one arena for a host of `local_ranks` ranks: the arrival and
/// generation lines, then a header and a slot per rank and for the result.
pub fn arena_bytes(local_ranks: usize) -> usize {
    2 * CACHE_LINE + (local_ranks + 1) * RANK_BYTES
}

/// The first line: the arrivals of the exchange, as one word: their
/// count in the low [`COUNT_BITS`] (a host has fewer ranks, so the count
/// never carries into the sum), the sum of their keys' 48-bit hashes
/// above (wrapping).
#[repr(C)]
struct Arrivals {
    word: AtomicU64,
}

const COUNT_BITS: u32 = 16;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;

/// What one arrival of a call of signature key `key` adds to the word.
fn arrival(key: u64) -> u64 {
    1 | key_hash(key) << COUNT_BITS
}

/// 48 well-mixed bits of a signature key.
fn key_hash(key: u64) -> u64 {
    (key ^ key >> 29).wrapping_mul(0xBF58_476D_1CE4_E5B9) >> COUNT_BITS
}

/// Whether the arrivals word `total` after the last of `n` arrivals, ours
/// adding `mine`, shows the same key hash everywhere: both sides wrap at
/// 2^48 alike, the sum and `n` times our hash.
fn keys_agree(total: u64, n: usize, mine: u64) -> bool {
    total >> COUNT_BITS == (n as u64).wrapping_mul(mine >> COUNT_BITS) << COUNT_BITS >> COUNT_BITS
}

/// The second line: what waiters poll.
#[repr(C)]
struct Progress {
    generation: AtomicU32,
    /// 0, or 1 + the rank whose report (in its slot) ended the arena.
    abort: AtomicU32,
}

/// A rank's header: the call it is in, written when the call starts.
#[repr(C)]
struct Header {
    /// The call's number among the communicator's collectives.
    seq: AtomicU64,
    key: AtomicU64,
    op_root: AtomicU64,
    bytes: AtomicU64,
}

const _: () = assert!(size_of::<Arrivals>() <= CACHE_LINE && size_of::<Header>() <= CACHE_LINE);

/// A communicator's arena, as one rank uses it.
pub(super) struct Arena<'a> {
    comm: &'a Communicator,
    base: *mut u8,
}

impl<'a> Arena<'a> {
    /// The arena of `comm`, if it has one (and fewer ranks than the
    /// arrival count holds).
    pub(super) fn of(comm: &'a Communicator) -> Option<Arena<'a>> {
        let index = comm.arena_index().filter(|_| (comm.size() as u64) < COUNT_MASK)?;
        let base = comm.rank_context().engine().host().arena(index);
        Some(Arena { comm, base })
    }

    fn arrivals(&self) -> &Arrivals {
        // SAFETY: the first line of the arena, zero-initialised, aligned;
        // only atomics.
        unsafe { &*(self.base as *const Arrivals) }
    }

    fn progress(&self) -> &Progress {
        // SAFETY: the second line of the arena, likewise.
        unsafe { &*(self.base.add(CACHE_LINE) as *const Progress) }
    }

    fn header(&self, rank: usize) -> &Header {
        // SAFETY: rank < comm size <= local ranks: the header line of a
        // rank's part, inside the arena; only atomics.
        unsafe { &*(self.base.add(2 * CACHE_LINE + rank * RANK_BYTES) as *const Header) }
    }

    fn slot_ptr(&self, rank: usize) -> *mut u8 {
        // SAFETY: rank <= comm size <= local ranks: inside the arena.
        unsafe { self.base.add(2 * CACHE_LINE + rank * RANK_BYTES + CACHE_LINE) }
    }

    /// Writes `call` into the header of `rank`, read by waiters looking
    /// for a call that went elsewhere. (An aborted arena fails the call at
    /// its exchange; a call that goes by messages fails by the revocation
    /// that always comes with the abort.)
    pub(super) fn announce(&self, rank: usize, call: &Announcement) {
        let header = self.header(rank);
        header.key.store(call.key, Ordering::Relaxed);
        header.op_root.store(call.op_root, Ordering::Relaxed);
        header.bytes.store(call.bytes, Ordering::Relaxed);
        header.seq.store(call.seq, Ordering::Release);
    }

    #[inline]
    fn check_abort(&self) -> Result<()> {
        match self.progress().abort.load(Ordering::Acquire) {
            0 => Ok(()),
            finder => Err(self.report_of(finder as usize - 1)),
        }
    }

    /// The report that rank `finder` left in its slot.
    #[cold]
    fn report_of(&self, finder: usize) -> Error {
        // SAFETY: the finder wrote its slot before publishing the abort
        // (release, read with acquire) and never writes it again: every
        // exchange checks the abort word before writing a slot.
        let bytes = unsafe { std::slice::from_raw_parts(self.slot_ptr(finder) as *const u8, SLOT_BYTES) };
        let len = u16::from_le_bytes([bytes[0], bytes[1]]) as usize;
        let why = bytes.get(2..2 + len).and_then(Mismatch::decode).unwrap_or_else(|| Mismatch {
            op: "collective".into(),
            found_by: finder,
            calls: Vec::new(),
            evidence: "its report in the shared-memory arena is unreadable".into(),
        });
        Error::CollectiveMismatch(Box::new(why))
    }

    /// Ends the arena with `why`, found by this rank in call `ch`, unless
    /// another rank's report ended it first; wakes every member (`engine`
    /// is this rank's).
    pub(super) fn abort(&self, ch: &Channel<'_>, why: &Mismatch, engine: &Engine) {
        let report = why.encode();
        let len = report.len() as u16;
        // SAFETY: our own slot, which nobody reads now: no exchange can
        // complete while the call we found wrong holds its ranks (see the
        // module doc), and readers of the report wait for the abort word.
        unsafe {
            let slot = self.slot_ptr(ch.rank);
            std::ptr::copy_nonoverlapping(len.to_le_bytes().as_ptr(), slot, 2);
            std::ptr::copy_nonoverlapping(report.as_ptr(), slot.add(2), report.len());
        }
        let first = self.progress().abort.compare_exchange(0, ch.rank as u32 + 1, Ordering::AcqRel, Ordering::Acquire);
        if first.is_ok() {
            self.ring_others(engine);
        }
    }

    /// One exchange. Every rank contributes `mine` (at most [`SLOT_BYTES`]);
    /// the last to arrive calls `combine(slots, result)` with every rank's
    /// contribution, by rank; every rank then receives the first
    /// `out.len()` bytes of the result. All ranks pass the same sizes.
    pub(super) fn exchange(
        &self,
        ch: &Channel<'_>,
        mine: &[u8],
        out: &mut [u8],
        combine: impl FnOnce(&Slots<'_>, &mut [u8]),
    ) -> Result<()> {
        self.exchange_parts(ch, mine, Shape { slot: mine.len(), result: out.len() }, 0, out, combine)
    }

    /// An exchange in which ranks contribute and read different parts:
    /// every rank writes `mine` (at most `shape.slot` bytes; a root alone
    /// may contribute, the others pass nothing); the last to arrive calls
    /// `combine` with slots of `shape.slot` bytes and a result of
    /// `shape.result` bytes; every rank then copies `out.len()` bytes from
    /// offset `out_at` of the result (a rank that needs nothing passes an
    /// empty `out`). All ranks pass the same `shape` when their calls
    /// match (which the exchange checks); slot bytes past what a rank
    /// wrote are stale, and `combine` must not read them.
    pub(super) fn exchange_parts(
        &self,
        ch: &Channel<'_>,
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
        let generation = self.progress().generation.load(Ordering::Acquire);
        self.check_abort()?;
        // SAFETY: our own slot; nobody reads it until we arrive (release).
        unsafe { std::ptr::copy_nonoverlapping(mine.as_ptr(), self.slot_ptr(ch.rank), mine.len()) };
        let mine = arrival(ch.key());
        let before = self.arrivals().word.fetch_add(mine, Ordering::AcqRel);
        if (before & COUNT_MASK) as usize + 1 == n {
            if !keys_agree(before.wrapping_add(mine), n, mine) {
                return Err(self.calls_differ(ch));
            }
            self.finish(shape.slot, shape.result, combine);
            self.progress().generation.store(generation.wrapping_add(1), Ordering::Release);
            self.ring_others(&self.comm.rank_context().engine());
        } else {
            self.wait_for_result(ch, generation)?;
        }
        // SAFETY: the result was published by the release above and is not
        // rewritten before we arrive at the next exchange; `out_at +
        // out.len()` is inside the result slot (checked above).
        unsafe { std::ptr::copy_nonoverlapping(self.slot_ptr(n).add(out_at), out.as_mut_ptr(), out.len()) };
        Ok(())
    }

    /// Waits until the exchange of `generation` completes; fails if the
    /// arena is aborted meanwhile, or if, after a sleep that nobody cut
    /// short, the headers show a member whose call went elsewhere.
    fn wait_for_result(&self, ch: &Channel<'_>, generation: u32) -> Result<()> {
        let progress = self.progress();
        let unchanged =
            || progress.generation.load(Ordering::Acquire) == generation && progress.abort.load(Ordering::Acquire) == 0;
        let mut strayed = None;
        let mut engine = self.comm.rank_context().engine();
        engine.block_on_shared(self.comm.coll_ctx(), |stale| {
            if !unchanged() {
                return true;
            }
            // The headers are read before the generation again: a call
            // numbered past ours was announced after this exchange
            // completed, and then the generation has moved.
            strayed = if stale { self.strayed_call(ch).filter(|_| unchanged()) } else { None };
            strayed.is_some()
        })?;
        drop(engine);
        if let Some(why) = strayed {
            return Err(Error::CollectiveMismatch(Box::new(why)));
        }
        if progress.generation.load(Ordering::Acquire) != generation {
            return Ok(());
        }
        self.check_abort()
    }

    /// A member whose header shows that it will not arrive at this
    /// exchange: it is at a later call (it skipped ours), or at ours with
    /// another signature (it took another path).
    fn strayed_call(&self, ch: &Channel<'_>) -> Option<Mismatch> {
        let (seq, sig) = (ch.seq(), ch.signature());
        (0..self.comm.size()).filter(|&r| r != ch.rank).find_map(|r| {
            let header = self.header(r);
            let theirs = header.seq.load(Ordering::Acquire);
            let calls = if theirs > seq {
                let evidence = format!(
                    "rank {} waited in the shared-memory exchange of collective call {seq} of the communicator \
                     while rank {r} went on to call {theirs}",
                    ch.rank
                );
                return Some(mismatch(ch.op(), ch.rank, vec![sig.call(ch.rank), unknown_call(r)], evidence));
            } else if theirs == seq && header.key.load(Ordering::Relaxed) != ch.key() {
                let op_root = header.op_root.load(Ordering::Relaxed);
                vec![sig.call(ch.rank), sig.call_from_header(r, op_root, header.bytes.load(Ordering::Relaxed))]
            } else {
                return None;
            };
            let evidence =
                format!("rank {} waited in the shared-memory exchange; rank {r}'s call took another path", ch.rank);
            Some(mismatch(ch.op(), ch.rank, calls, evidence))
        })
    }

    /// The last arriver of an exchange whose keys differ: the calls, from
    /// the headers (every member's holds this call), ours first, then
    /// those that differ from ours.
    #[cold]
    fn calls_differ(&self, ch: &Channel<'_>) -> Error {
        let sig = ch.signature();
        let mut calls = vec![sig.call(ch.rank)];
        for r in (0..self.comm.size()).filter(|&r| r != ch.rank) {
            let header = self.header(r);
            if header.key.load(Ordering::Relaxed) != ch.key() {
                let (op_root, bytes) = (header.op_root.load(Ordering::Relaxed), header.bytes.load(Ordering::Relaxed));
                calls.push(sig.call_from_header(r, op_root, bytes));
            }
        }
        let evidence = format!(
            "rank {} arrived last in the shared-memory exchange of {} ranks and compared their calls",
            ch.rank,
            self.comm.size()
        );
        Error::CollectiveMismatch(Box::new(mismatch(ch.op(), ch.rank, calls, evidence)))
    }

    /// The last arriver: combine all slots into the result slot.
    fn finish(&self, slot_len: usize, result_len: usize, combine: impl FnOnce(&Slots<'_>, &mut [u8])) {
        let n = self.comm.size();
        let slots = Slots { arena: self, ranks: n, bytes: slot_len };
        // SAFETY: every rank arrived (acquire on the arrivals), so nobody
        // writes the result until we open the next generation.
        let result = unsafe { std::slice::from_raw_parts_mut(self.slot_ptr(n), result_len) };
        combine(&slots, result);
        self.arrivals().word.store(0, Ordering::Relaxed);
    }

    fn ring_others(&self, engine: &Engine) {
        for rank in 0..self.comm.size() {
            if rank != self.comm.rank() {
                engine.ring(self.comm.world_rank_of(rank).expect("member rank"));
            }
        }
    }
}

/// A member known only to be elsewhere.
fn unknown_call(rank: usize) -> grappe_proto::Call {
    grappe_proto::Call { rank, op: None, bytes: None, root: None }
}

/// The sizes of an exchange, the same on every rank.
#[derive(Debug, Clone, Copy)]
pub(super) struct Shape {
    /// Bytes of each slot that `combine` sees.
    pub slot: usize,
    /// Bytes of the result.
    pub result: usize,
}

/// Every rank's contribution to an exchange, seen by the last arriver.
pub(super) struct Slots<'a> {
    arena: &'a Arena<'a>,
    ranks: usize,
    bytes: usize,
}

impl Slots<'_> {
    /// Number of contributions (the communicator size).
    pub(super) fn len(&self) -> usize {
        self.ranks
    }

    /// Rank `rank`'s contribution; 64-byte aligned.
    pub(super) fn get(&self, rank: usize) -> &[u8] {
        assert!(rank < self.ranks, "slot {rank} of {}", self.ranks);
        // SAFETY: every rank arrived (acquire on the arrivals), so its slot is
        // written and stays untouched until the next generation opens.
        unsafe { std::slice::from_raw_parts(self.arena.slot_ptr(rank) as *const u8, self.bytes) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The arrivals word after every rank's arrival, in any order.
    fn arrivals(keys: &[u64]) -> u64 {
        keys.iter().fold(0u64, |word, &key| word.wrapping_add(arrival(key)))
    }

    proptest! {
        #[test]
        fn the_count_and_the_check_of_equal_keys_are_exact(key in any::<u64>(), n in 1usize..4096) {
            let total = arrivals(&vec![key; n]);
            prop_assert_eq!((total & COUNT_MASK) as usize, n);
            prop_assert!(keys_agree(total, n, arrival(key)));
        }

        #[test]
        fn one_other_key_is_seen_by_every_last_arriver(
            key in any::<u64>(), other in any::<u64>(), n in 2usize..4096, odd in any::<usize>(),
        ) {
            prop_assume!(key != other);
            let mut keys = vec![key; n];
            keys[odd % n] = other;
            let total = arrivals(&keys);
            prop_assert_eq!((total & COUNT_MASK) as usize, n);
            for &last in &keys {
                prop_assert!(!keys_agree(total, n, arrival(last)));
            }
        }
    }
}
