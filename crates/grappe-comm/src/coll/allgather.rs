//! Allgather and allgatherv: every rank gets every rank's block, in rank
//! order.
//!
//! | data (all blocks together) | algorithm |
//! |---|---|
//! | ≤ [`SLOT_BYTES`], arena | one arena exchange |
//! | < [`RECURSIVE_DOUBLING_MAX_BYTES`], power-of-two ranks | recursive doubling |
//! | < [`BRUCK_MAX_BYTES`], other rank counts | Bruck |
//! | larger | ring |

use bytemuck::Pod;
use grappe_trace::CollectiveKind;

use super::arena::{SLOT_BYTES, Shape};
use super::common::{Blocks, check_counts, concat_slots, expect_len, read_write};
use super::signature::Signature;
use super::tags;
use super::xfer::Channel;
use crate::{Buffer, BufferMut, Communicator, Result};

/// Below this total, recursive doubling when the rank count is a power of
/// two: ⌈log2 n⌉ rounds instead of the ring's `n - 1`, for the same bytes.
/// MPICH's crossover (`MPIR_CVAR_ALLGATHER_LONG_MSG_SIZE`); above it the
/// ring's neighbour-only traffic wins.
pub(super) const RECURSIVE_DOUBLING_MAX_BYTES: usize = 512 * 1024;
/// Below this total, Bruck for other rank counts: ⌈log2 n⌉ rounds, at the
/// price of a rotated copy of everything. MPICH's crossover
/// (`MPIR_CVAR_ALLGATHER_SHORT_MSG_SIZE`).
pub(super) const BRUCK_MAX_BYTES: usize = 80 * 1024;

impl Communicator {
    /// Gathers every rank's `send` into `recv` on every rank: `recv` holds
    /// `size() * send.len()` elements, rank `r`'s at block `r`.
    #[track_caller]
    pub fn allgather<S, R>(&self, send: &S, recv: &mut R) -> Result<()>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Elem = S::Elem> + ?Sized,
    {
        let bytes = std::mem::size_of_val(send.elems());
        self.traced(grappe_trace::CollectiveKind::Allgather, None, bytes, || {
            let mut ch = Channel::new(self, "allgather", tags::ALLGATHER)?;
            let (send, recv) = (send.elems(), recv.elems_mut());
            expect_len(ch.op(), "the receive buffer", recv.len(), ch.size * send.len())?;
            let blocks = Blocks::uniform(ch.size, send.len());
            ch.run(Signature::sized(CollectiveKind::Allgather, bytes), |ch| allgather_blocks(ch, send, recv, &blocks))
        })
    }

    /// [`allgather`](Self::allgather) into a new vector: every rank's
    /// `send`, in rank order (one scalar each gives one element per rank).
    #[track_caller]
    pub fn allgather_vec<S: Buffer + ?Sized>(&self, send: &S) -> Result<Vec<S::Elem>> {
        let mut all = vec![<S::Elem as bytemuck::Zeroable>::zeroed(); self.size() * send.elems().len()];
        self.allgather(send, &mut all[..])?;
        Ok(all)
    }

    /// Gathers blocks of different lengths: rank `r` contributes
    /// `counts[r]` elements, and `recv` (on every rank) holds them all end
    /// to end in rank order. `counts` is the same on every rank.
    #[track_caller]
    pub fn allgatherv<S, R>(&self, send: &S, recv: &mut R, counts: &[usize]) -> Result<()>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Elem = S::Elem> + ?Sized,
    {
        let bytes = std::mem::size_of_val(send.elems());
        self.traced(grappe_trace::CollectiveKind::Allgatherv, None, bytes, || {
            let mut ch = Channel::new(self, "allgatherv", tags::ALLGATHER)?;
            let blocks = check_counts(ch.op(), "counts", counts, ch.size)?;
            let (send, recv) = (send.elems(), recv.elems_mut());
            expect_len(ch.op(), "the send buffer", send.len(), counts[ch.rank])?;
            expect_len(ch.op(), "the receive buffer", recv.len(), blocks.total())?;
            let sig = Signature::laid_out(CollectiveKind::Allgatherv, counts, size_of::<S::Elem>());
            ch.run(sig, |ch| allgather_blocks(ch, send, recv, &blocks))
        })
    }
}

/// Allgather of `send` into block `rank` of `data`, every block to all.
fn allgather_blocks<T: Pod>(ch: &Channel<'_>, send: &[T], data: &mut [T], blocks: &Blocks) -> Result<()> {
    let (n, rank) = (ch.size, ch.rank);
    let total_bytes = size_of_val(data);
    data[blocks.range(rank)].copy_from_slice(send);
    if n == 1 {
        return Ok(());
    }
    if let Some(arena) = ch.arena().filter(|_| total_bytes <= SLOT_BYTES) {
        let bytes = blocks.in_bytes::<T>();
        let shape = Shape { slot: bytes.max_len(), result: total_bytes };
        return arena.exchange_parts(
            ch,
            bytemuck::cast_slice(send),
            shape,
            0,
            bytemuck::cast_slice_mut(data),
            |slots, result| concat_slots(slots, result, &bytes),
        );
    }
    if n.is_power_of_two() && total_bytes < RECURSIVE_DOUBLING_MAX_BYTES {
        recursive_doubling(ch, data, blocks)
    } else if total_bytes < BRUCK_MAX_BYTES {
        bruck(ch, send, data, blocks)
    } else {
        ring(ch, data, blocks, rank, (rank + n - 1) % n, (rank + 1) % n)
    }
}

/// Power-of-two ranks: in step `k` partners differing in bit `k` swap the
/// `2^k` blocks each has gathered (aligned runs, so contiguous).
fn recursive_doubling<T: Pod>(ch: &Channel<'_>, data: &mut [T], blocks: &Blocks) -> Result<()> {
    let mut mask = 1;
    while mask < ch.size {
        let partner = ch.rank ^ mask;
        let (mine, theirs) = (ch.rank & !(mask - 1), partner & !(mask - 1));
        let (send, recv) = read_write(data, blocks.span(mine..mine + mask), blocks.span(theirs..theirs + mask));
        ch.sendrecv(send, partner, recv, partner)?;
        mask <<= 1;
    }
    Ok(())
}

/// Bruck: in a copy rotated so that our block comes first, step `k` sends
/// the first `min(2^k, n - 2^k)` blocks to rank `r - 2^k` and appends as
/// many from rank `r + 2^k`; then the copy is rotated back.
fn bruck<T: Pod>(ch: &Channel<'_>, send: &[T], data: &mut [T], blocks: &Blocks) -> Result<()> {
    let (n, rank) = (ch.size, ch.rank);
    let rotated = blocks.rotated(rank);
    let mut tmp = vec![T::zeroed(); blocks.total()];
    tmp[rotated.range(0)].copy_from_slice(send);
    let mut have = 1;
    while have < n {
        let count = have.min(n - have);
        let (out, into) = read_write(&mut tmp, rotated.span(0..count), rotated.span(have..have + count));
        ch.sendrecv(out, (rank + n - have) % n, into, (rank + have) % n)?;
        have *= 2;
    }
    for i in 0..n {
        data[blocks.range((rank + i) % n)].copy_from_slice(&tmp[rotated.range(i)]);
    }
    Ok(())
}

/// Ring over positions `0..n` (`pos` ours; `left` and `right` the ranks at
/// `pos - 1` and `pos + 1`): in step `i` pass block `pos - i` right and
/// take block `pos - i - 1` from the left. `data` holds block `pos`.
pub(super) fn ring<T: Pod>(
    ch: &Channel<'_>,
    data: &mut [T],
    blocks: &Blocks,
    pos: usize,
    left: usize,
    right: usize,
) -> Result<()> {
    let n = blocks.count();
    for i in 0..n.saturating_sub(1) {
        let (out, into) = ((pos + n - i) % n, (pos + 2 * n - i - 1) % n);
        let (send, recv) = read_write(data, blocks.range(out), blocks.range(into));
        ch.sendrecv(send, right, recv, left)?;
    }
    Ok(())
}
