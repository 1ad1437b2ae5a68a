//! Pairwise algorithms over a power of two of ranks: folding the extra
//! ranks in, recursive halving (a reduce-scatter) and recursive doubling
//! (an allgather or a gather back), the pieces of Rabenseifner's
//! reductions.
//!
//! **Folding.** With `p` the largest power of two not above `n` and
//! `rem = n - p`, ranks below `2 rem` pair up: the even rank hands its
//! vector to the odd one, which combines them (even first) and stands for
//! both; the other ranks stand for themselves. The `p` participants,
//! numbered in rank order, each stand for a run of consecutive ranks.
//!
//! **Halving.** The vector is cut in `p` blocks. In each step a
//! participant pairs with the one whose number differs in one bit, keeps
//! half of its current window of blocks, sends the other half and combines
//! what it receives into the half it keeps. Taking the bits lowest first
//! ([`Masks::LowFirst`]), the partners always stand for adjacent runs of
//! ranks, and combining the lower run first keeps rank order: the
//! reduction is right for operations that are associative only. Taking
//! them highest first ([`Masks::HighFirst`]) participant `i` ends with
//! block `i`, which a reduce-scatter needs, but runs are interleaved: for
//! commutative operations only. Either way every element of the result is
//! computed once, by one rank, so every rank that receives it gets the
//! same bits.

use std::ops::Range;

use crate::Result;
use bytemuck::Pod;

use super::common::{Blocks, combine_ordered, floor_pow2, read_write};
use super::ops::Operation;
use super::xfer::Channel;

/// How the ranks of a communicator, or some of them, fold onto a power of
/// two. Below, a "rank" is a position among the ranks that take part: the
/// communicator's rank, or an index into the list given to [`Fold::among`].
pub(super) struct Fold<'m> {
    rank: usize,
    /// Participants: the largest power of two not above the size.
    pub pof2: usize,
    /// Ranks beyond `pof2`; ranks below `2 * rem` pair up.
    rem: usize,
    /// The communicator ranks of the positions, if not all ranks take part.
    members: Option<&'m [usize]>,
}

impl<'m> Fold<'m> {
    pub fn new(n: usize, rank: usize) -> Fold<'static> {
        let pof2 = floor_pow2(n);
        Fold { rank, pof2, rem: n - pof2, members: None }
    }

    /// The fold of `members` (communicator ranks, ascending), seen from
    /// the one at position `me`.
    pub fn among(members: &'m [usize], me: usize) -> Fold<'m> {
        Fold { members: Some(members), ..Fold::new(members.len(), me) }
    }

    /// The communicator rank at position `position`.
    fn comm_rank(&self, position: usize) -> usize {
        self.members.map_or(position, |members| members[position])
    }

    /// The participant that stands for rank `rank`.
    pub fn stand_in(&self, rank: usize) -> usize {
        if rank < 2 * self.rem { rank / 2 } else { rank - self.rem }
    }

    /// This rank's participant number, or `None` if it folded into its
    /// odd neighbour.
    pub fn participant(&self) -> Option<usize> {
        (self.rank >= 2 * self.rem || self.rank % 2 == 1).then(|| self.stand_in(self.rank))
    }

    /// The even rank folded into this one, if any.
    pub fn absorbed(&self) -> Option<usize> {
        (self.rank < 2 * self.rem && self.rank % 2 == 1).then(|| self.rank - 1)
    }

    /// The communicator rank of participant `p`.
    pub fn rank_of(&self, p: usize) -> usize {
        self.comm_rank(if p < self.rem { 2 * p + 1 } else { p + self.rem })
    }

    /// The first rank that participant `p` stands for.
    pub fn first_rank_of(&self, p: usize) -> usize {
        if p < self.rem { 2 * p } else { p + self.rem }
    }

    /// Pairs below `2 rem` combine: the even rank sends `data`, the odd
    /// one sets `data = theirs ⊕ data`.
    pub fn fold_in<T: Pod, O: Operation<T>>(&self, ch: &Channel<'_>, data: &mut [T], op: &O) -> Result<()> {
        if self.rank >= 2 * self.rem {
            return Ok(());
        }
        if self.rank % 2 == 0 {
            ch.send(data, self.comm_rank(self.rank + 1))
        } else {
            let mut theirs = data.to_vec();
            ch.recv(&mut theirs, self.comm_rank(self.rank - 1))?;
            combine_ordered(op, data, &mut theirs, true);
            Ok(())
        }
    }

    /// The odd ranks below `2 rem` hand the whole result back to their even
    /// neighbour.
    pub fn fold_out<T: Pod>(&self, ch: &Channel<'_>, data: &mut [T]) -> Result<()> {
        if self.rank >= 2 * self.rem {
            Ok(())
        } else if self.rank % 2 == 0 {
            ch.recv(data, self.comm_rank(self.rank + 1))
        } else {
            ch.send(data, self.comm_rank(self.rank - 1))
        }
    }
}

/// The order in which halving takes the bits of participant numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Masks {
    /// Partners stand for adjacent runs of ranks: keeps rank order.
    LowFirst,
    /// Participant `i` ends with block `i`: commutative operations only.
    HighFirst,
}

/// One step of halving, to be undone by doubling.
#[derive(Debug, Clone)]
pub(super) struct Step {
    /// The partner's rank.
    partner: usize,
    /// The bit in which the participants' numbers differ.
    mask: usize,
    /// Blocks this rank kept.
    kept: Range<usize>,
    /// Blocks it gave to the partner.
    given: Range<usize>,
}

/// Recursive halving by participant `me` (see the module doc) over
/// `data`, cut in `fold.pof2` blocks. Returns the steps; the blocks this
/// rank ends with hold the reduction over all ranks.
pub(super) fn halve<T: Pod, O: Operation<T>>(
    ch: &Channel<'_>,
    fold: &Fold,
    me: usize,
    data: &mut [T],
    blocks: &Blocks,
    op: &O,
    masks: Masks,
) -> Result<Vec<Step>> {
    let bits = fold.pof2.trailing_zeros();
    let mut steps = Vec::with_capacity(bits as usize);
    let mut window = 0..fold.pof2;
    let mut theirs = Vec::new();
    for i in 0..bits {
        let mask = match masks {
            Masks::LowFirst => 1 << i,
            Masks::HighFirst => fold.pof2 >> (i + 1),
        };
        let mid = (window.start + window.end) / 2;
        let (kept, given) =
            if me & mask == 0 { (window.start..mid, mid..window.end) } else { (mid..window.end, window.start..mid) };
        let partner = fold.rank_of(me ^ mask);
        let (kept_elems, given_elems) = (blocks.span(kept.clone()), blocks.span(given.clone()));
        theirs.resize(kept_elems.len(), T::zeroed());
        ch.sendrecv(&data[given_elems], partner, &mut theirs, partner)?;
        combine_ordered(op, &mut data[kept_elems], &mut theirs, me & mask != 0);
        window = kept.clone();
        steps.push(Step { partner, mask, kept, given });
    }
    Ok(steps)
}

/// Recursive doubling that undoes `steps`: partners swap what they kept,
/// and every rank ends with all blocks.
pub(super) fn double<T: Pod>(ch: &Channel<'_>, data: &mut [T], blocks: &Blocks, steps: &[Step]) -> Result<()> {
    for step in steps.iter().rev() {
        let (mine, theirs) = read_write(data, blocks.span(step.kept.clone()), blocks.span(step.given.clone()));
        ch.sendrecv(mine, step.partner, theirs, step.partner)?;
    }
    Ok(())
}

/// Undoes `steps` towards one participant, `target`: of each pair, the one
/// that agrees with `target` on the pair's bit receives its partner's
/// blocks and goes on, the other sends and stops. `target` ends with all
/// blocks.
pub(super) fn gather_to<T: Pod>(
    ch: &Channel<'_>,
    me: usize,
    target: usize,
    data: &mut [T],
    blocks: &Blocks,
    steps: &[Step],
) -> Result<()> {
    for step in steps.iter().rev() {
        if me & step.mask == target & step.mask {
            ch.recv(&mut data[blocks.span(step.given.clone())], step.partner)?;
        } else {
            return ch.send(&data[blocks.span(step.kept.clone())], step.partner);
        }
    }
    Ok(())
}
