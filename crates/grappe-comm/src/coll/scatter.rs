//! Scatter and scatterv: block `r` of the root's buffer to rank `r`.
//!
//! | data (one block) | algorithm |
//! |---|---|
//! | all blocks ≤ [`SLOT_BYTES`] together, arena | one arena exchange |
//! | < [`LINEAR_MIN_BLOCK_BYTES`] | binomial tree |
//! | larger, and scatterv always | linear: the root sends every block at once |
//!
//! Scatterv is linear because only the root knows the counts (as in MPI).

use bytemuck::Pod;
use grappe_trace::CollectiveKind;

use super::arena::{SLOT_BYTES, Shape, Slots};
use super::binomial::{self, Tree};
use super::common::{Blocks, check_counts, check_root, expect_len};
use super::gather::LINEAR_MIN_BLOCK_BYTES;
use super::signature::Signature;
use super::tags;
use super::xfer::Channel;
use crate::{Buffer, BufferMut, Communicator, Result};

impl Communicator {
    /// Scatters the root's `send` (`size() * recv.len()` elements) in
    /// blocks: rank `r` receives block `r` into `recv`. `send` is not used
    /// elsewhere (pass `&[]`). Every rank receives the same number of
    /// elements.
    #[track_caller]
    pub fn scatter<S, R>(&self, send: &S, recv: &mut R, root: usize) -> Result<()>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Elem = S::Elem> + ?Sized,
    {
        let bytes = std::mem::size_of_val(recv.elems());
        self.traced(grappe_trace::CollectiveKind::Scatter, Some(root), bytes, || {
            let mut ch = Channel::new(self, "scatter", tags::SCATTER)?;
            check_root(root, ch.size)?;
            let recv = recv.elems_mut();
            let send: &[S::Elem] = if ch.rank == root { send.elems() } else { &[] };
            if ch.rank == root {
                expect_len(ch.op(), "the send buffer at the root", send.len(), ch.size * recv.len())?;
            }
            ch.run(Signature::rooted(CollectiveKind::Scatter, bytes, root), |ch| scatter_slices(ch, send, recv, root))
        })
    }

    /// Scatters blocks of different lengths from `root`: rank `r` receives
    /// `counts[r]` elements, taken end to end from the root's `send` in
    /// rank order. `send` and `counts` matter at the root only (pass `&[]`
    /// elsewhere; counts given elsewhere are checked against `recv`).
    #[track_caller]
    pub fn scatterv<S, R>(&self, send: &S, counts: &[usize], recv: &mut R, root: usize) -> Result<()>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Elem = S::Elem> + ?Sized,
    {
        let bytes = std::mem::size_of_val(recv.elems());
        self.traced(grappe_trace::CollectiveKind::Scatterv, Some(root), bytes, || {
            let mut ch = Channel::new(self, "scatterv", tags::SCATTER)?;
            check_root(root, ch.size)?;
            let recv = recv.elems_mut();
            let sig = Signature::per_rank_sizes(CollectiveKind::Scatterv, Some(root));
            if ch.rank != root && counts.is_empty() {
                return ch.run(sig, |ch| ch.recv(recv, root));
            }
            let blocks = check_counts(ch.op(), "counts", counts, ch.size)?;
            expect_len(ch.op(), "the receive buffer", recv.len(), counts[ch.rank])?;
            if ch.rank != root {
                return ch.run(sig, |ch| ch.recv(recv, root));
            }
            let send = send.elems();
            expect_len(ch.op(), "the send buffer at the root", send.len(), blocks.total())?;
            ch.run(sig, |ch| linear(ch, send, recv, &blocks))
        })
    }
}

/// The scatter of [`Communicator::scatter`], on checked slices (`send` is
/// empty except at the root).
fn scatter_slices<T: Pod>(ch: &Channel<'_>, send: &[T], recv: &mut [T], root: usize) -> Result<()> {
    let (n, k, bytes) = (ch.size, recv.len(), size_of_val(recv));
    if n == 1 {
        recv.copy_from_slice(send);
        return Ok(());
    }
    if let Some(arena) = ch.arena().filter(|_| n * bytes <= SLOT_BYTES) {
        let shape = Shape { slot: n * bytes, result: n * bytes };
        let copy_root = |slots: &Slots<'_>, result: &mut [u8]| result.copy_from_slice(slots.get(root));
        let out = bytemuck::cast_slice_mut(recv);
        return arena.exchange_parts(ch, bytemuck::cast_slice(send), shape, ch.rank * bytes, out, copy_root);
    }
    let blocks = Blocks::uniform(n, k);
    if bytes >= LINEAR_MIN_BLOCK_BYTES {
        return if ch.rank == root { linear(ch, send, recv, &blocks) } else { ch.recv(recv, root) };
    }
    let tree = Tree::new(n, ch.rank, root);
    if ch.rank == root {
        // Blocks in relative-rank order: block j goes to rank (j + root) mod n.
        let mut rotated = Vec::with_capacity(send.len());
        rotated.extend_from_slice(&send[root * k..]);
        rotated.extend_from_slice(&send[..root * k]);
        binomial::scatter(ch, &tree, &blocks, &mut rotated)?;
        recv.copy_from_slice(&rotated[..k]);
    } else if tree.subtree().len() == 1 {
        binomial::scatter(ch, &tree, &blocks, recv)?;
    } else {
        let mut tmp = vec![T::zeroed(); tree.subtree().len() * k];
        binomial::scatter(ch, &tree, &blocks, &mut tmp)?;
        recv.copy_from_slice(&tmp[..k]);
    }
    Ok(())
}

/// The root sends every other rank its block at once.
pub(super) fn linear<T: Pod>(ch: &Channel<'_>, send: &[T], recv: &mut [T], blocks: &Blocks) -> Result<()> {
    recv.copy_from_slice(&send[blocks.range(ch.rank)]);
    let sends: Vec<(usize, &[T])> =
        (0..ch.size).filter(|&r| r != ch.rank).map(|r| (r, &send[blocks.range(r)])).collect();
    ch.post_all(&sends, &mut [])
}
