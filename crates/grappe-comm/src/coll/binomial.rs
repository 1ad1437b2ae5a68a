//! Binomial trees over ranks numbered relative to a root.
//!
//! With `rel = (rank - root) mod n`, node `rel > 0` hangs under
//! `rel - lowbit(rel)` and heads the subtree `rel .. rel + lowbit(rel)`
//! (cut at `n`); the root heads all ranks. A subtree is a run of
//! consecutive relative ranks, so its blocks are contiguous in a buffer
//! ordered by relative rank, and a reduction up the tree combines runs of
//! ranks in order. ⌈log2 n⌉ rounds, the root busy in each: the shape for
//! small messages, where latency dominates.

use std::ops::Range;

use crate::Result;
use bytemuck::Pod;

use super::common::Blocks;
use super::ops::Operation;
use super::xfer::Channel;

/// One rank's place in the binomial tree rooted at `root`.
pub(super) struct Tree {
    n: usize,
    root: usize,
    /// This rank, relative to the root.
    rel: usize,
}

impl Tree {
    pub fn new(n: usize, rank: usize, root: usize) -> Tree {
        Tree { n, root, rel: (rank + n - root) % n }
    }

    /// The actual rank of relative rank `rel`.
    pub fn rank_of(&self, rel: usize) -> usize {
        (rel + self.root) % self.n
    }

    /// The bit at which this node hangs under its parent; at the root, the
    /// first power of two not below `n`.
    fn span_bit(&self) -> usize {
        if self.rel == 0 { self.n.next_power_of_two() } else { 1 << self.rel.trailing_zeros() }
    }

    /// The relative ranks this node heads.
    pub fn subtree(&self) -> Range<usize> {
        self.rel..(self.rel + self.span_bit()).min(self.n)
    }

    /// The parent's actual rank; `None` at the root.
    pub fn parent(&self) -> Option<usize> {
        (self.rel != 0).then(|| self.rank_of(self.rel - self.span_bit()))
    }

    /// The subtrees of the children (relative ranks), largest first.
    pub fn children(&self) -> Vec<Range<usize>> {
        let (rel, n) = (self.rel, self.n);
        std::iter::successors(Some(self.span_bit() / 2), |&m| Some(m / 2))
            .take_while(|&m| m > 0)
            .filter(|&m| rel + m < n)
            .map(|m| rel + m..(rel + 2 * m).min(n))
            .collect()
    }
}

/// Broadcast of `data` from the root.
pub(super) fn bcast<T: Pod>(ch: &Channel<'_>, tree: &Tree, data: &mut [T]) -> Result<()> {
    if let Some(parent) = tree.parent() {
        ch.recv(data, parent)?;
    }
    for child in tree.children() {
        ch.send(data, tree.rank_of(child.start))?;
    }
    Ok(())
}

/// Scatter down the tree. `blocks` are indexed by relative rank; `data`
/// holds the blocks of this node's subtree (filled at the root, received
/// from the parent elsewhere), and each child gets its subtree's part.
pub(super) fn scatter<T: Pod>(ch: &Channel<'_>, tree: &Tree, blocks: &Blocks, data: &mut [T]) -> Result<()> {
    let base = blocks.span(tree.subtree()).start;
    if let Some(parent) = tree.parent() {
        ch.recv(data, parent)?;
    }
    for child in tree.children() {
        let part = blocks.span(child.clone());
        ch.send(&data[part.start - base..part.end - base], tree.rank_of(child.start))?;
    }
    Ok(())
}

/// Gather up the tree, the reverse of [`scatter`]: `data` holds this
/// node's own block first, the children's subtrees arrive behind it, and
/// the whole goes to the parent.
pub(super) fn gather<T: Pod>(ch: &Channel<'_>, tree: &Tree, blocks: &Blocks, data: &mut [T]) -> Result<()> {
    let base = blocks.span(tree.subtree()).start;
    for child in tree.children().into_iter().rev() {
        let part = blocks.span(child.clone());
        ch.recv(&mut data[part.start - base..part.end - base], tree.rank_of(child.start))?;
    }
    if let Some(parent) = tree.parent() {
        ch.send(data, parent)?;
    }
    Ok(())
}

/// Reduction up the tree: each node absorbs its children's partial
/// results, nearest (smallest) subtree first, so that `data` always covers
/// a run of relative ranks starting at its own, then sends it up. The root
/// ends with the reduction over relative ranks `0, 1, ..., n - 1`: rank
/// order when the root is rank 0.
pub(super) fn reduce<T: Pod, O: Operation<T>>(ch: &Channel<'_>, tree: &Tree, data: &mut [T], op: &O) -> Result<()> {
    let children = tree.children();
    if !children.is_empty() {
        let mut theirs = vec![T::zeroed(); data.len()];
        for child in children.into_iter().rev() {
            ch.recv(&mut theirs, tree.rank_of(child.start))?;
            op.combine(data, &theirs);
        }
    }
    if let Some(parent) = tree.parent() {
        ch.send(data, parent)?;
    }
    Ok(())
}
