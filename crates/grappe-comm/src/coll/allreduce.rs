//! Allreduce: every rank gets the reduction of every rank's vector.
//!
//! | data | algorithm |
//! |---|---|
//! | ≤ [`SLOT_BYTES`], arena | one arena exchange |
//! | ≤ [`RECURSIVE_DOUBLING_MAX_BYTES`], ranks on several hosts, some sharing one | by host: to each host's leader, recursive doubling between leaders, back |
//! | ≤ [`RECURSIVE_DOUBLING_MAX_BYTES`], or fewer elements than the power of two of ranks | recursive doubling |
//! | larger | Rabenseifner: recursive halving, then recursive doubling of the pieces |
//!
//! Every algorithm combines contributions in rank order (grouped as a
//! tree) and computes each element of the result in exactly one way that
//! every rank shares, so all ranks get the same bits, run after run, and
//! non-commutative operations are right. The reduction by host keeps rank
//! order when every host's ranks are consecutive; otherwise it is taken
//! for commutative operations only.

use bytemuck::Pod;
use grappe_trace::CollectiveKind;

use super::arena::SLOT_BYTES;
use super::common::{Blocks, combine_ordered, expect_len, reduce_in_rank_order};
use super::halving::{self, Fold, Masks};
use super::hosts::HostGroups;
use super::ops::Operation;
use super::signature::Signature;
use super::tags;
use super::xfer::Channel;
use crate::{Buffer, BufferMut, Communicator, Result};

/// Up to this many bytes, recursive doubling: ⌈log2 n⌉ rounds carrying the
/// whole vector beat Rabenseifner's twice as many rounds of halves while
/// latency dominates. MPICH's crossover
/// (`MPIR_CVAR_ALLREDUCE_SHORT_MSG_SIZE`).
pub(super) const RECURSIVE_DOUBLING_MAX_BYTES: usize = 2048;

impl Communicator {
    /// Reduces `send` over all ranks with `op` into `recv` on every rank.
    /// Contributions combine in rank order, so operations need only be
    /// associative, and every rank gets the same bits, run after run.
    #[track_caller]
    pub fn allreduce<S, R, O>(&self, send: &S, recv: &mut R, op: O) -> Result<()>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Elem = S::Elem> + ?Sized,
        O: Operation<S::Elem>,
    {
        let bytes = std::mem::size_of_val(send.elems());
        self.traced(grappe_trace::CollectiveKind::Allreduce, None, bytes, || {
            let mut ch = Channel::new(self, "allreduce", tags::ALLREDUCE)?;
            let (send, recv) = (send.elems(), recv.elems_mut());
            expect_len(ch.op(), "the receive buffer", recv.len(), send.len())?;
            ch.run(Signature::sized(CollectiveKind::Allreduce, bytes), |ch| allreduce_slices(ch, send, recv, &op))
        })
    }
}

/// The allreduce of [`Communicator::allreduce`], on checked slices.
pub(super) fn allreduce_slices<T: Pod, O: Operation<T>>(
    ch: &Channel<'_>,
    send: &[T],
    recv: &mut [T],
    op: &O,
) -> Result<()> {
    let bytes = size_of_val(send);
    if ch.size == 1 {
        recv.copy_from_slice(send);
        return Ok(());
    }
    if let Some(arena) = ch.arena().filter(|_| bytes <= SLOT_BYTES) {
        return arena.exchange(ch, bytemuck::cast_slice(send), bytemuck::cast_slice_mut(recv), |slots, result| {
            reduce_in_rank_order::<T, O>(slots, result, op)
        });
    }
    recv.copy_from_slice(send);
    if bytes <= RECURSIVE_DOUBLING_MAX_BYTES {
        if let Some(groups) = ch.comm().host_groups().filter(|g| g.in_runs || op.is_commutative()) {
            return by_host(ch, groups, recv, op);
        }
    }
    let fold = Fold::new(ch.size, ch.rank);
    if bytes <= RECURSIVE_DOUBLING_MAX_BYTES || recv.len() < fold.pof2 {
        recursive_doubling(ch, &fold, recv, op)
    } else {
        rabenseifner(ch, &fold, recv, op)
    }
}

/// After folding, participants swap their whole partial results with the
/// participant differing in bit 0, 1, 2...; both compute lower ⊕ higher.
fn recursive_doubling<T: Pod, O: Operation<T>>(ch: &Channel<'_>, fold: &Fold, data: &mut [T], op: &O) -> Result<()> {
    fold.fold_in(ch, data, op)?;
    if let Some(me) = fold.participant() {
        let mut theirs = data.to_vec();
        let mut mask = 1;
        while mask < fold.pof2 {
            let partner = fold.rank_of(me ^ mask);
            ch.sendrecv(data, partner, &mut theirs, partner)?;
            combine_ordered(op, data, &mut theirs, me & mask != 0);
            mask <<= 1;
        }
    }
    fold.fold_out(ch, data)
}

/// Each host's ranks hand their vectors to its leader, which combines
/// them in rank order; the leaders run recursive doubling among
/// themselves and hand the result back. Every rank gets its leader's
/// bits, and every leader the same.
fn by_host<T: Pod, O: Operation<T>>(ch: &Channel<'_>, groups: &HostGroups, data: &mut [T], op: &O) -> Result<()> {
    let Some(position) = groups.leader_position(ch.rank) else {
        ch.send(data, groups.leader())?;
        return ch.recv(data, groups.leader());
    };
    let mut theirs = data.to_vec();
    for &member in &groups.local[1..] {
        ch.recv(&mut theirs, member)?;
        op.combine(data, &theirs);
    }
    recursive_doubling(ch, &Fold::among(&groups.leaders, position), data, op)?;
    groups.local[1..].iter().try_for_each(|&member| ch.send(data, member))
}

/// Recursive halving leaves each participant with one reduced block;
/// recursive doubling brings all blocks to all.
fn rabenseifner<T: Pod, O: Operation<T>>(ch: &Channel<'_>, fold: &Fold, data: &mut [T], op: &O) -> Result<()> {
    fold.fold_in(ch, data, op)?;
    if let Some(me) = fold.participant() {
        let blocks = Blocks::balanced(fold.pof2, data.len());
        let steps = halving::halve(ch, fold, me, data, &blocks, op, Masks::LowFirst)?;
        halving::double(ch, data, &blocks, &steps)?;
    }
    fold.fold_out(ch, data)
}
