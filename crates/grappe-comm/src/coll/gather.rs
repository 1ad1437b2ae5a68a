//! Gather and gatherv: every rank's block to the root, in rank order.
//!
//! | data (one block) | algorithm |
//! |---|---|
//! | all blocks ≤ [`SLOT_BYTES`] together, arena | one arena exchange |
//! | < [`LINEAR_MIN_BLOCK_BYTES`] | binomial tree |
//! | larger, and gatherv always | linear: the root receives every block in place at once |
//!
//! Gatherv is linear because only the root knows the counts (as in MPI),
//! so no other rank could forward a subtree's blocks.

use bytemuck::Pod;
use grappe_trace::CollectiveKind;

use super::arena::{SLOT_BYTES, Shape};
use super::binomial::{self, Tree};
use super::common::{Blocks, check_counts, check_root, concat_slots, expect_len};
use super::signature::Signature;
use super::tags;
use super::xfer::Channel;
use crate::{Buffer, BufferMut, Communicator, Result};

/// From this block size on, gather and scatter go linear: each block moves
/// once, straight between its rank and the root (single-copy rendezvous
/// above the eager limit), where a tree copies it through up to ⌈log2 n⌉
/// intermediate ranks. Below it per-message latency dominates and the
/// tree's ⌈log2 n⌉ rounds at the root win. The default eager limit.
pub(super) const LINEAR_MIN_BLOCK_BYTES: usize = 8 * 1024;

impl Communicator {
    /// Gathers every rank's `send` into `recv` at `root`: there `recv`
    /// holds `size() * send.len()` elements, rank `r`'s at block `r`.
    /// Elsewhere `recv` is not used (pass `&mut []`). Every rank sends the
    /// same number of elements.
    #[track_caller]
    pub fn gather<S, R>(&self, send: &S, recv: &mut R, root: usize) -> Result<()>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Elem = S::Elem> + ?Sized,
    {
        let bytes = std::mem::size_of_val(send.elems());
        self.traced(grappe_trace::CollectiveKind::Gather, Some(root), bytes, || {
            let mut ch = Channel::new(self, "gather", tags::GATHER)?;
            check_root(root, ch.size)?;
            let send = send.elems();
            let recv: &mut [S::Elem] = if ch.rank == root { recv.elems_mut() } else { &mut [] };
            if ch.rank == root {
                expect_len(ch.op(), "the receive buffer at the root", recv.len(), ch.size * send.len())?;
            }
            ch.run(Signature::rooted(CollectiveKind::Gather, bytes, root), |ch| gather_slices(ch, send, recv, root))
        })
    }

    /// Gathers blocks of different lengths at `root`: rank `r` sends
    /// `counts[r]` elements and the root's `recv` holds them all end to end
    /// in rank order. `counts` and `recv` matter at the root only (pass
    /// `&[]` and `&mut []` elsewhere; counts given elsewhere are checked
    /// against `send`).
    #[track_caller]
    pub fn gatherv<S, R>(&self, send: &S, recv: &mut R, counts: &[usize], root: usize) -> Result<()>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Elem = S::Elem> + ?Sized,
    {
        let bytes = std::mem::size_of_val(send.elems());
        self.traced(grappe_trace::CollectiveKind::Gatherv, Some(root), bytes, || {
            let mut ch = Channel::new(self, "gatherv", tags::GATHER)?;
            check_root(root, ch.size)?;
            let send = send.elems();
            let sig = Signature::per_rank_sizes(CollectiveKind::Gatherv, Some(root));
            if ch.rank != root && counts.is_empty() {
                return ch.run(sig, |ch| ch.send(send, root));
            }
            let blocks = check_counts(ch.op(), "counts", counts, ch.size)?;
            expect_len(ch.op(), "the send buffer", send.len(), counts[ch.rank])?;
            if ch.rank != root {
                return ch.run(sig, |ch| ch.send(send, root));
            }
            let recv = recv.elems_mut();
            expect_len(ch.op(), "the receive buffer at the root", recv.len(), blocks.total())?;
            ch.run(sig, |ch| linear(ch, send, recv, &blocks))
        })
    }
}

/// The gather of [`Communicator::gather`], on checked slices (`recv` is
/// empty except at the root).
pub(super) fn gather_slices<T: Pod>(ch: &Channel<'_>, send: &[T], recv: &mut [T], root: usize) -> Result<()> {
    let (n, k, bytes) = (ch.size, send.len(), size_of_val(send));
    if n == 1 {
        recv.copy_from_slice(send);
        return Ok(());
    }
    let blocks = Blocks::uniform(n, k);
    if let Some(arena) = ch.arena().filter(|_| n * bytes <= SLOT_BYTES) {
        let shape = Shape { slot: bytes, result: n * bytes };
        let in_bytes = blocks.in_bytes::<T>();
        return arena.exchange_parts(
            ch,
            bytemuck::cast_slice(send),
            shape,
            0,
            bytemuck::cast_slice_mut(recv),
            |slots, result| concat_slots(slots, result, &in_bytes),
        );
    }
    if bytes >= LINEAR_MIN_BLOCK_BYTES {
        return if ch.rank == root { linear(ch, send, recv, &blocks) } else { ch.send(send, root) };
    }
    let tree = Tree::new(n, ch.rank, root);
    if ch.rank == 0 && root == 0 {
        recv[..k].copy_from_slice(send);
        return binomial::gather(ch, &tree, &blocks, recv);
    }
    // Blocks in relative-rank order: block j is rank (j + root) mod n's.
    let mut tmp = vec![T::zeroed(); tree.subtree().len() * k];
    tmp[..k].copy_from_slice(send);
    binomial::gather(ch, &tree, &blocks, &mut tmp)?;
    if ch.rank == root {
        let wrap = (n - root) * k;
        recv[root * k..].copy_from_slice(&tmp[..wrap]);
        recv[..root * k].copy_from_slice(&tmp[wrap..]);
    }
    Ok(())
}

/// The root posts a receive for every other rank's block, in place.
fn linear<T: Pod>(ch: &Channel<'_>, send: &[T], recv: &mut [T], blocks: &Blocks) -> Result<()> {
    let mut parts: Vec<(usize, &mut [T])> = blocks.split_mut(recv).into_iter().enumerate().collect();
    let own = parts.remove(ch.rank);
    own.1.copy_from_slice(send);
    ch.post_all::<T>(&[], &mut parts)
}
