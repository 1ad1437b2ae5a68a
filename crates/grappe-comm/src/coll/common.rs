//! What the collectives share: argument checks, block layouts, and
//! combining in rank order.

use std::ops::Range;

use crate::{Error, Result, SizeProblem};
use bytemuck::Pod;

use super::arena::Slots;
use super::ops::Operation;

/// A root rank must be a member.
pub(super) fn check_root(root: usize, size: usize) -> Result<()> {
    if root < size { Ok(()) } else { Err(Error::InvalidRank { rank: root, size }) }
}

/// `what` must hold `expected` elements.
pub(super) fn expect_len(op: &'static str, what: &'static str, actual: usize, expected: usize) -> Result<()> {
    if actual == expected {
        return Ok(());
    }
    Err(Error::BufferSize { op, detail: SizeProblem::Length { buffer: what, elements: actual, expected } })
}

/// Per-rank counts must name every rank of the communicator.
pub(super) fn check_counts(op: &'static str, what: &'static str, counts: &[usize], size: usize) -> Result<Blocks> {
    if counts.len() != size {
        let detail = SizeProblem::Counts { counts: what, entries: counts.len(), ranks: size };
        return Err(Error::BufferSize { op, detail });
    }
    Ok(Blocks::from_counts(counts))
}

/// The blocks of a buffer, laid end to end: block `i` is
/// `offsets[i]..offsets[i + 1]`. The variable-size collectives take counts
/// only: their displacements are these, implied contiguous.
#[derive(Debug, Clone)]
pub(super) struct Blocks {
    offsets: Vec<usize>,
}

impl Blocks {
    /// `n` blocks of `len` elements.
    pub fn uniform(n: usize, len: usize) -> Blocks {
        Blocks { offsets: (0..=n).map(|i| i * len).collect() }
    }

    /// `total` elements cut in `n` blocks whose lengths differ by at most one.
    pub fn balanced(n: usize, total: usize) -> Blocks {
        let (base, extra) = (total / n, total % n);
        Blocks { offsets: (0..=n).map(|i| i * base + i.min(extra)).collect() }
    }

    /// Blocks of the given lengths.
    pub fn from_counts(counts: &[usize]) -> Blocks {
        let mut offsets = Vec::with_capacity(counts.len() + 1);
        offsets.push(0);
        let mut at = 0;
        for &c in counts {
            at += c;
            offsets.push(at);
        }
        Blocks { offsets }
    }

    /// The same blocks, starting with block `first` (rotated left).
    pub fn rotated(&self, first: usize) -> Blocks {
        let n = self.count();
        let counts: Vec<usize> = (0..n).map(|i| self.len((first + i) % n)).collect();
        Blocks::from_counts(&counts)
    }

    /// The same blocks measured in bytes, for elements of `T`.
    pub fn in_bytes<T>(&self) -> Blocks {
        Blocks { offsets: self.offsets.iter().map(|o| o * size_of::<T>()).collect() }
    }

    /// Number of blocks.
    pub fn count(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Length of block `i`.
    pub fn len(&self, i: usize) -> usize {
        self.offsets[i + 1] - self.offsets[i]
    }

    /// Elements of block `i`.
    pub fn range(&self, i: usize) -> Range<usize> {
        self.offsets[i]..self.offsets[i + 1]
    }

    /// Elements of blocks `blocks.start..blocks.end`, which are contiguous.
    pub fn span(&self, blocks: Range<usize>) -> Range<usize> {
        self.offsets[blocks.start]..self.offsets[blocks.end]
    }

    /// Elements of all blocks.
    pub fn total(&self) -> usize {
        self.offsets[self.count()]
    }

    /// Length of the longest block.
    pub fn max_len(&self) -> usize {
        (0..self.count()).map(|i| self.len(i)).max().unwrap_or(0)
    }

    /// `buf` cut into its blocks (`buf` holds `total()` elements).
    pub fn split_mut<'a, T>(&self, mut buf: &'a mut [T]) -> Vec<&'a mut [T]> {
        let mut parts = Vec::with_capacity(self.count());
        for i in 0..self.count() {
            let (head, tail) = std::mem::take(&mut buf).split_at_mut(self.len(i));
            parts.push(head);
            buf = tail;
        }
        parts
    }
}

/// Two disjoint ranges of one buffer: one to read (send), one to write
/// (receive).
pub(super) fn read_write<T>(buf: &mut [T], read: Range<usize>, write: Range<usize>) -> (&[T], &mut [T]) {
    if read.start >= write.end {
        let (low, high) = buf.split_at_mut(read.start);
        (&high[..read.len()], &mut low[write])
    } else {
        assert!(read.end <= write.start, "overlapping ranges {read:?} and {write:?}");
        let (low, high) = buf.split_at_mut(write.start);
        (&low[read], &mut high[..write.len()])
    }
}

/// `mine = theirs ⊕ mine` if `theirs_first`, else `mine = mine ⊕ theirs`:
/// how a rank holding the partial result of one run of ranks absorbs the
/// neighbouring run it received, keeping rank order. `theirs` is scratch.
pub(super) fn combine_ordered<T: Pod, O: Operation<T>>(op: &O, mine: &mut [T], theirs: &mut [T], theirs_first: bool) {
    if theirs_first {
        op.combine(theirs, mine);
        mine.copy_from_slice(theirs);
    } else {
        op.combine(mine, theirs);
    }
}

/// Arena combine: `result = slot[0] ⊕ slot[1] ⊕ ...` over slots holding
/// `T` elements. Arena slots are 64-byte aligned, so they are read in
/// place as `[T]`.
pub(super) fn reduce_in_rank_order<T: Pod, O: Operation<T>>(slots: &Slots<'_>, result: &mut [u8], op: &O) {
    let acc: &mut [T] = bytemuck::cast_slice_mut(result);
    acc.copy_from_slice(bytemuck::cast_slice(slots.get(0)));
    for rank in 1..slots.len() {
        op.combine(acc, bytemuck::cast_slice(slots.get(rank)));
    }
}

/// Arena combine: the slots, each holding block `r` of `blocks` (in
/// bytes) at its start, laid end to end.
pub(super) fn concat_slots(slots: &Slots<'_>, result: &mut [u8], blocks: &Blocks) {
    for rank in 0..slots.len() {
        result[blocks.range(rank)].copy_from_slice(&slots.get(rank)[..blocks.len(rank)]);
    }
}

/// The largest power of two not above `n` (`n > 0`).
pub(super) fn floor_pow2(n: usize) -> usize {
    1 << n.ilog2()
}
