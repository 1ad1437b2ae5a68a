//! Broadcast: the root's buffer to every rank.
//!
//! | data | algorithm |
//! |---|---|
//! | ≤ [`SLOT_BYTES`], arena | one arena exchange |
//! | < [`SCATTER_ALLGATHER_MIN_BYTES`], or < [`SCATTER_ALLGATHER_MIN_RANKS`] ranks | binomial tree |
//! | larger | van de Geijn: binomial scatter of `n` pieces, then a ring allgather |

use bytemuck::Pod;
use grappe_trace::CollectiveKind;

use super::allgather::ring;
use super::arena::{SLOT_BYTES, Shape};
use super::binomial::{self, Tree};
use super::common::{Blocks, check_root};
use super::signature::Signature;
use super::tags;
use super::xfer::Channel;
use crate::{BufferMut, Communicator, Result};

/// From this many bytes, scatter + allgather: the binomial tree moves the
/// whole buffer ⌈log2 n⌉ times over the root's links, the scatter and ring
/// about twice in total, which wins once bandwidth dominates. MPICH's
/// crossover (`MPIR_CVAR_BCAST_SHORT_MSG_SIZE`).
pub(super) const SCATTER_ALLGATHER_MIN_BYTES: usize = 12 * 1024;
/// With fewer ranks the tree is shallow and the ring's `n - 1` rounds do
/// not pay (MPICH's `MPIR_CVAR_BCAST_MIN_PROCS`).
pub(super) const SCATTER_ALLGATHER_MIN_RANKS: usize = 8;

impl Communicator {
    /// Broadcasts `buf` from `root`: afterwards every rank's `buf` holds
    /// the root's. Every rank passes a buffer of the same length.
    #[track_caller]
    pub fn bcast<B: BufferMut + ?Sized>(&self, buf: &mut B, root: usize) -> Result<()> {
        let bytes = std::mem::size_of_val(buf.elems());
        self.traced(grappe_trace::CollectiveKind::Bcast, Some(root), bytes, || {
            let mut ch = Channel::new(self, "bcast", tags::BCAST)?;
            check_root(root, ch.size)?;
            ch.run(Signature::rooted(CollectiveKind::Bcast, bytes, root), |ch| bcast_slice(ch, buf.elems_mut(), root))
        })
    }
}

/// The broadcast of [`Communicator::bcast`] on a slice.
pub(super) fn bcast_slice<T: Pod>(ch: &Channel<'_>, data: &mut [T], root: usize) -> Result<()> {
    let bytes = size_of_val(data);
    if ch.size == 1 {
        return Ok(());
    }
    if let Some(arena) = ch.arena().filter(|_| bytes <= SLOT_BYTES) {
        let shape = Shape { slot: bytes, result: bytes };
        let copy_root = |slots: &super::arena::Slots<'_>, result: &mut [u8]| result.copy_from_slice(slots.get(root));
        return if ch.rank == root {
            arena.exchange_parts(ch, bytemuck::cast_slice(data), shape, 0, &mut [], copy_root)
        } else {
            arena.exchange_parts(ch, &[], shape, 0, bytemuck::cast_slice_mut(data), copy_root)
        };
    }
    let tree = Tree::new(ch.size, ch.rank, root);
    if bytes < SCATTER_ALLGATHER_MIN_BYTES || ch.size < SCATTER_ALLGATHER_MIN_RANKS || data.len() < ch.size {
        binomial::bcast(ch, &tree, data)
    } else {
        scatter_allgather(ch, &tree, root, data)
    }
}

/// Piece `r` of the buffer belongs to relative rank `r`: a binomial
/// scatter hands each rank its piece (a subtree's pieces are contiguous),
/// then a ring over relative ranks passes every piece around.
fn scatter_allgather<T: Pod>(ch: &Channel<'_>, tree: &Tree, root: usize, data: &mut [T]) -> Result<()> {
    let n = ch.size;
    let pieces = Blocks::balanced(n, data.len());
    binomial::scatter(ch, tree, &pieces, &mut data[pieces.span(tree.subtree())])?;
    let rel = (ch.rank + n - root) % n;
    ring(ch, data, &pieces, rel, tree.rank_of((rel + n - 1) % n), tree.rank_of((rel + 1) % n))
}
