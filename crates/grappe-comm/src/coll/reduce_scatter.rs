//! Reduce-scatter: the reduction of every rank's vector, cut in blocks,
//! block `r` to rank `r`.
//!
//! | data | algorithm |
//! |---|---|
//! | the vector ≤ [`SLOT_BYTES`], arena | one arena exchange |
//! | commutative operation | recursive halving, after folding to a power of two |
//! | other operations | reduce to rank 0 (in rank order), then a linear scatterv |
//!
//! The halving takes the bits of participant numbers highest first, so
//! participant `p` ends with the blocks of the ranks it stands for (see
//! `halving`); that interleaves runs of ranks, hence commutative
//! operations only.

use bytemuck::Pod;
use grappe_trace::CollectiveKind;

use super::arena::{SLOT_BYTES, Shape};
use super::common::{Blocks, check_counts, expect_len, reduce_in_rank_order};
use super::halving::{self, Fold, Masks};
use super::ops::Operation;
use super::reduce::reduce_slices;
use super::signature::Signature;
use super::tags;
use super::xfer::Channel;
use crate::{Buffer, BufferMut, Communicator, Error, Result, SizeProblem};

impl Communicator {
    /// Reduces `send` over all ranks with `op` and scatters the result:
    /// rank `r` gets `counts[r]` elements into `recv`, the blocks taken end
    /// to end in rank order (`send` holds their sum of elements, `counts`
    /// is the same on every rank). Like `MPI_Reduce_scatter`.
    #[track_caller]
    pub fn reduce_scatter<S, R, O>(&self, send: &S, recv: &mut R, counts: &[usize], op: O) -> Result<()>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Elem = S::Elem> + ?Sized,
        O: Operation<S::Elem>,
    {
        let bytes = std::mem::size_of_val(send.elems());
        self.traced(grappe_trace::CollectiveKind::ReduceScatter, None, bytes, || {
            let mut ch = Channel::new(self, "reduce_scatter", tags::REDUCE_SCATTER)?;
            let blocks = check_counts(ch.op(), "counts", counts, ch.size)?;
            let (send, recv) = (send.elems(), recv.elems_mut());
            expect_len(ch.op(), "the send buffer", send.len(), blocks.total())?;
            expect_len(ch.op(), "the receive buffer", recv.len(), counts[ch.rank])?;
            let sig = Signature::laid_out(CollectiveKind::ReduceScatter, counts, size_of::<S::Elem>());
            ch.run(sig, |ch| reduce_scatter_blocks(ch, send, recv, &blocks, &op))
        })
    }

    /// [`reduce_scatter`](Self::reduce_scatter) with blocks of
    /// `recv.len()` elements for every rank (`send` holds `size()` of
    /// them). Like `MPI_Reduce_scatter_block`.
    #[track_caller]
    pub fn reduce_scatter_block<S, R, O>(&self, send: &S, recv: &mut R, op: O) -> Result<()>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Elem = S::Elem> + ?Sized,
        O: Operation<S::Elem>,
    {
        let bytes = std::mem::size_of_val(send.elems());
        self.traced(grappe_trace::CollectiveKind::ReduceScatterBlock, None, bytes, || {
            let mut ch = Channel::new(self, "reduce_scatter_block", tags::REDUCE_SCATTER)?;
            let (send, recv) = (send.elems(), recv.elems_mut());
            if send.len() != ch.size * recv.len() {
                let (buffer, elements, ranks, block) = ("the send buffer", send.len(), ch.size, recv.len());
                return Err(Error::BufferSize {
                    op: ch.op(),
                    detail: SizeProblem::Blocks { buffer, elements, ranks, block },
                });
            }
            let (blocks, sig) =
                (Blocks::uniform(ch.size, recv.len()), Signature::sized(CollectiveKind::ReduceScatterBlock, bytes));
            ch.run(sig, |ch| reduce_scatter_blocks(ch, send, recv, &blocks, &op))
        })
    }
}

fn reduce_scatter_blocks<T: Pod, O: Operation<T>>(
    ch: &Channel<'_>,
    send: &[T],
    recv: &mut [T],
    blocks: &Blocks,
    op: &O,
) -> Result<()> {
    let (n, rank, bytes) = (ch.size, ch.rank, size_of_val(send));
    if n == 1 {
        recv.copy_from_slice(send);
        return Ok(());
    }
    if let Some(arena) = ch.arena().filter(|_| bytes <= SLOT_BYTES) {
        let shape = Shape { slot: bytes, result: bytes };
        let at = blocks.range(rank).start * size_of::<T>();
        return arena.exchange_parts(
            ch,
            bytemuck::cast_slice(send),
            shape,
            at,
            bytemuck::cast_slice_mut(recv),
            |slots, result| reduce_in_rank_order::<T, O>(slots, result, op),
        );
    }
    if op.is_commutative() {
        recursive_halving(ch, send, recv, blocks, op)
    } else {
        let mut total = if rank == 0 { send.to_vec() } else { Vec::new() };
        reduce_slices(ch, send, &mut total, 0, op)?;
        if rank == 0 { super::scatter::linear(ch, &total, recv, blocks) } else { ch.recv(recv, 0) }
    }
}

/// Participant `p` stands for a run of ranks whose blocks are contiguous:
/// halving over those runs leaves each with its run's blocks reduced; an
/// odd rank then hands its even neighbour its block.
fn recursive_halving<T: Pod, O: Operation<T>>(
    ch: &Channel<'_>,
    send: &[T],
    recv: &mut [T],
    blocks: &Blocks,
    op: &O,
) -> Result<()> {
    let (n, rank) = (ch.size, ch.rank);
    let fold = Fold::new(n, rank);
    let mut data = send.to_vec();
    fold.fold_in(ch, &mut data, op)?;
    let Some(me) = fold.participant() else {
        return ch.recv(recv, rank + 1);
    };
    let runs: Vec<usize> = (0..fold.pof2)
        .map(|p| {
            let end = if p + 1 < fold.pof2 { fold.first_rank_of(p + 1) } else { n };
            blocks.span(fold.first_rank_of(p)..end).len()
        })
        .collect();
    halving::halve(ch, &fold, me, &mut data, &Blocks::from_counts(&runs), op, Masks::HighFirst)?;
    if let Some(even) = fold.absorbed() {
        ch.send(&data[blocks.range(even)], even)?;
    }
    recv.copy_from_slice(&data[blocks.range(rank)]);
    Ok(())
}
