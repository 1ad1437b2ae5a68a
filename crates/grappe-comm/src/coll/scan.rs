//! Scan (inclusive prefix reduction) and exscan (exclusive).
//!
//! | data | algorithm |
//! |---|---|
//! | every rank's prefix ≤ [`SLOT_BYTES`] together, arena | one arena exchange: the last arriver computes all prefixes |
//! | larger | recursive doubling |
//!
//! Recursive doubling: in step `k` ranks differing in bit `k` swap the
//! reduction of the aligned run of `2^k` ranks each stands in; the higher
//! one adds the lower run in front of its prefix. Runs stay adjacent, so
//! rank order holds and operations need only be associative.

use bytemuck::Pod;
use grappe_trace::CollectiveKind;

use super::arena::{SLOT_BYTES, Shape, Slots};
use super::common::{combine_ordered, expect_len};
use super::ops::Operation;
use super::signature::Signature;
use super::tags;
use super::xfer::Channel;
use crate::{Buffer, BufferMut, Communicator, Result};

/// Inclusive or exclusive prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Prefix {
    Inclusive,
    Exclusive,
}

impl Communicator {
    /// Inclusive prefix reduction: rank `r`'s `recv` gets
    /// `send(0) ⊕ send(1) ⊕ ... ⊕ send(r)`, combined in rank order.
    #[track_caller]
    pub fn scan<S, R, O>(&self, send: &S, recv: &mut R, op: O) -> Result<()>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Elem = S::Elem> + ?Sized,
        O: Operation<S::Elem>,
    {
        let bytes = std::mem::size_of_val(send.elems());
        self.traced(grappe_trace::CollectiveKind::Scan, None, bytes, || {
            let mut ch = Channel::new(self, "scan", tags::SCAN)?;
            let (send, recv) = (send.elems(), recv.elems_mut());
            expect_len(ch.op(), "the receive buffer", recv.len(), send.len())?;
            let sig = Signature::sized(CollectiveKind::Scan, bytes);
            ch.run(sig, |ch| scan_slices(ch, send, recv, &op, Prefix::Inclusive))
        })
    }

    /// Exclusive prefix reduction: rank `r > 0`'s `recv` gets
    /// `send(0) ⊕ ... ⊕ send(r - 1)`. Rank 0's `recv` is left untouched,
    /// as MPI leaves it undefined.
    #[track_caller]
    pub fn exscan<S, R, O>(&self, send: &S, recv: &mut R, op: O) -> Result<()>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Elem = S::Elem> + ?Sized,
        O: Operation<S::Elem>,
    {
        let bytes = std::mem::size_of_val(send.elems());
        self.traced(grappe_trace::CollectiveKind::Exscan, None, bytes, || {
            let mut ch = Channel::new(self, "exscan", tags::SCAN)?;
            let (send, recv) = (send.elems(), recv.elems_mut());
            expect_len(ch.op(), "the receive buffer", recv.len(), send.len())?;
            let sig = Signature::sized(CollectiveKind::Exscan, bytes);
            ch.run(sig, |ch| scan_slices(ch, send, recv, &op, Prefix::Exclusive))
        })
    }
}

fn scan_slices<T: Pod, O: Operation<T>>(
    ch: &Channel<'_>,
    send: &[T],
    recv: &mut [T],
    op: &O,
    prefix: Prefix,
) -> Result<()> {
    let (n, rank, bytes) = (ch.size, ch.rank, size_of_val(send));
    if n == 1 {
        if prefix == Prefix::Inclusive {
            recv.copy_from_slice(send);
        }
        return Ok(());
    }
    if let Some(arena) = ch.arena().filter(|_| n * bytes <= SLOT_BYTES) {
        let shape = Shape { slot: bytes, result: n * bytes };
        let prefixes = |slots: &Slots<'_>, result: &mut [u8]| all_prefixes::<T, O>(slots, result, op);
        let mine = bytemuck::cast_slice(send);
        return match prefix {
            Prefix::Inclusive => {
                arena.exchange_parts(ch, mine, shape, rank * bytes, bytemuck::cast_slice_mut(recv), prefixes)
            }
            Prefix::Exclusive if rank == 0 => arena.exchange_parts(ch, mine, shape, 0, &mut [], prefixes),
            Prefix::Exclusive => {
                arena.exchange_parts(ch, mine, shape, (rank - 1) * bytes, bytemuck::cast_slice_mut(recv), prefixes)
            }
        };
    }
    recursive_doubling(ch, send, recv, op, prefix)
}

/// Arena combine: block `r` of the result is the inclusive prefix of rank `r`.
fn all_prefixes<T: Pod, O: Operation<T>>(slots: &Slots<'_>, result: &mut [u8], op: &O) {
    let result: &mut [T] = bytemuck::cast_slice_mut(result);
    let k = result.len() / slots.len();
    result[..k].copy_from_slice(bytemuck::cast_slice(slots.get(0)));
    for rank in 1..slots.len() {
        let (done, rest) = result.split_at_mut(rank * k);
        let acc = &mut rest[..k];
        acc.copy_from_slice(&done[(rank - 1) * k..]);
        op.combine(acc, bytemuck::cast_slice(slots.get(rank)));
    }
}

/// `partial` is the reduction of our aligned run of ranks; `recv` that of
/// the ranks of the run up to us (inclusive or not).
fn recursive_doubling<T: Pod, O: Operation<T>>(
    ch: &Channel<'_>,
    send: &[T],
    recv: &mut [T],
    op: &O,
    prefix: Prefix,
) -> Result<()> {
    let (n, rank) = (ch.size, ch.rank);
    let mut partial = send.to_vec();
    let mut theirs = vec![T::zeroed(); send.len()];
    let mut scratch = Vec::new();
    // Whether `recv` holds something yet: the exclusive prefix starts empty.
    let mut started = prefix == Prefix::Inclusive;
    if started {
        recv.copy_from_slice(send);
    }
    let mut mask = 1;
    while mask < n {
        let partner = rank ^ mask;
        if partner < n {
            ch.sendrecv(&partial, partner, &mut theirs, partner)?;
            if partner < rank {
                // Their run comes first: recv = theirs ⊕ recv, partial = theirs ⊕ partial.
                if started {
                    scratch.clone_from(&theirs);
                    combine_ordered(op, recv, &mut scratch, true);
                } else {
                    recv.copy_from_slice(&theirs);
                    started = true;
                }
                op.combine(&mut theirs, &partial);
                std::mem::swap(&mut partial, &mut theirs);
            } else {
                op.combine(&mut partial, &theirs);
            }
        }
        mask <<= 1;
    }
    Ok(())
}
