//! Reduce: the reduction of every rank's vector, at the root.
//!
//! | data | algorithm |
//! |---|---|
//! | ≤ [`SLOT_BYTES`], arena | one arena exchange |
//! | ≤ [`BINOMIAL_MAX_BYTES`], or fewer elements than the power of two of ranks | binomial tree |
//! | larger | Rabenseifner: recursive halving, then the pieces gathered to the root |
//!
//! Non-commutative operations combine contributions in rank order in
//! every algorithm: the binomial tree is then rooted at rank 0 (whose tree
//! combines runs of ranks in order) and the result sent to the root, and
//! the halving keeps rank order (see `halving`). Commutative operations
//! use the tree rooted at the root, which combines in rank order starting
//! from the root: a fixed order, so results are the same run after run.

use bytemuck::Pod;
use grappe_trace::CollectiveKind;

use super::arena::{SLOT_BYTES, Shape};
use super::binomial::{self, Tree};
use super::common::{Blocks, check_root, expect_len, reduce_in_rank_order};
use super::halving::{self, Fold, Masks};
use super::ops::Operation;
use super::signature::Signature;
use super::tags;
use super::xfer::Channel;
use crate::{Buffer, BufferMut, Communicator, Result};

/// Up to this many bytes, a binomial tree: ⌈log2 n⌉ rounds of the whole
/// vector, against Rabenseifner's 2 ⌈log2 n⌉ rounds of shrinking pieces
/// that only pay once bandwidth dominates. MPICH's crossover
/// (`MPIR_CVAR_REDUCE_SHORT_MSG_SIZE`).
pub(super) const BINOMIAL_MAX_BYTES: usize = 2048;

impl Communicator {
    /// Reduces `send` over all ranks with `op` into the root's `recv`
    /// (as long as `send`). Elsewhere `recv` is not used: pass `&mut []`.
    /// Operations declared non-commutative combine contributions in rank
    /// order, so they need only be associative.
    ///
    /// ```no_run
    /// # fn f(world: &grappe_comm::Communicator) -> grappe_comm::Result<()> {
    /// let mine = [world.rank() as f64; 4];
    /// let mut total = [0.0; 4];
    /// world.reduce(&mine, &mut total, 0, grappe_comm::Sum)?; // recv used at rank 0 only
    /// world.reduce(&mine, &mut [], 0, grappe_comm::Sum)?; // as good on ranks other than 0
    /// # Ok(()) }
    /// ```
    #[track_caller]
    pub fn reduce<S, R, O>(&self, send: &S, recv: &mut R, root: usize, op: O) -> Result<()>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Elem = S::Elem> + ?Sized,
        O: Operation<S::Elem>,
    {
        let bytes = std::mem::size_of_val(send.elems());
        self.traced(grappe_trace::CollectiveKind::Reduce, Some(root), bytes, || {
            let mut ch = Channel::new(self, "reduce", tags::REDUCE)?;
            check_root(root, ch.size)?;
            let send = send.elems();
            let recv: &mut [S::Elem] = if ch.rank == root { recv.elems_mut() } else { &mut [] };
            if ch.rank == root {
                expect_len(ch.op(), "the receive buffer at the root", recv.len(), send.len())?;
            }
            ch.run(Signature::rooted(CollectiveKind::Reduce, bytes, root), |ch| {
                reduce_slices(ch, send, recv, root, &op)
            })
        })
    }
}

/// The reduce of [`Communicator::reduce`], on checked slices (`recv` is
/// empty except at the root).
pub(super) fn reduce_slices<T: Pod, O: Operation<T>>(
    ch: &Channel<'_>,
    send: &[T],
    recv: &mut [T],
    root: usize,
    op: &O,
) -> Result<()> {
    let bytes = size_of_val(send);
    if ch.size == 1 {
        recv.copy_from_slice(send);
        return Ok(());
    }
    if let Some(arena) = ch.arena().filter(|_| bytes <= SLOT_BYTES) {
        let shape = Shape { slot: bytes, result: bytes };
        return arena.exchange_parts(
            ch,
            bytemuck::cast_slice(send),
            shape,
            0,
            bytemuck::cast_slice_mut(recv),
            |slots, result| reduce_in_rank_order::<T, O>(slots, result, op),
        );
    }
    let fold = Fold::new(ch.size, ch.rank);
    if bytes <= BINOMIAL_MAX_BYTES || send.len() < fold.pof2 {
        binomial_reduce(ch, send, recv, root, op)
    } else {
        rabenseifner(ch, &fold, send, recv, root, op)
    }
}

fn binomial_reduce<T: Pod, O: Operation<T>>(
    ch: &Channel<'_>,
    send: &[T],
    recv: &mut [T],
    root: usize,
    op: &O,
) -> Result<()> {
    let tree_root = if op.is_commutative() { root } else { 0 };
    let tree = Tree::new(ch.size, ch.rank, tree_root);
    let mut scratch = Vec::new();
    let acc: &mut [T] = if ch.rank == root && root == tree_root {
        recv.copy_from_slice(send);
        &mut *recv
    } else {
        scratch.extend_from_slice(send);
        &mut scratch
    };
    binomial::reduce(ch, &tree, acc, op)?;
    if ch.rank == tree_root && tree_root != root {
        ch.send(acc, root)?;
    } else if ch.rank == root && tree_root != root {
        ch.recv(recv, tree_root)?;
    }
    Ok(())
}

/// Recursive halving leaves each participant with a reduced piece; the
/// pieces go back up the halving steps to the root's stand-in, which
/// hands the whole to the root if the root folded into it.
fn rabenseifner<T: Pod, O: Operation<T>>(
    ch: &Channel<'_>,
    fold: &Fold,
    send: &[T],
    recv: &mut [T],
    root: usize,
    op: &O,
) -> Result<()> {
    let mut scratch = Vec::new();
    let data: &mut [T] = if ch.rank == root {
        recv.copy_from_slice(send);
        recv
    } else {
        scratch.extend_from_slice(send);
        &mut scratch
    };
    fold.fold_in(ch, data, op)?;
    let target = fold.stand_in(root);
    match fold.participant() {
        Some(me) => {
            let blocks = Blocks::balanced(fold.pof2, data.len());
            let steps = halving::halve(ch, fold, me, data, &blocks, op, Masks::LowFirst)?;
            halving::gather_to(ch, me, target, data, &blocks, &steps)?;
            if me == target && ch.rank != root {
                ch.send(data, root)?;
            }
        }
        None if ch.rank == root => ch.recv(data, ch.rank + 1)?,
        None => {}
    }
    Ok(())
}
