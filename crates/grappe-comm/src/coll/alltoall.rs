//! Alltoall and alltoallv: block `d` of rank `s`'s send buffer goes to
//! block `s` of rank `d`'s receive buffer.
//!
//! | data | algorithm |
//! |---|---|
//! | every rank's send buffer ≤ [`SLOT_BYTES`] together, arena | one arena exchange (the last arriver transposes) |
//! | blocks ≤ [`POST_ALL_MAX_BLOCK_BYTES`], and alltoallv always | all receives and sends posted at once |
//! | larger | pairwise exchange: in step `i`, send to `r + i`, receive from `r - i` |
//!
//! Alltoallv always posts everything at once: each rank knows only its
//! own counts, so a choice by size could differ between ranks.

use bytemuck::Pod;
use grappe_trace::CollectiveKind;

use super::arena::{SLOT_BYTES, Shape, Slots};
use super::common::{Blocks, check_counts, expect_len};
use super::signature::Signature;
use super::tags;
use super::xfer::Channel;
use crate::{Buffer, BufferMut, Communicator, Error, Result, SizeProblem};

/// Up to this block size all messages are posted at once: they are eager
/// (this is the default eager limit), so they all fit in the mailboxes and
/// the `n - 1` exchanges overlap instead of waiting for each other. Larger
/// blocks go by rendezvous, where the pairwise schedule keeps one transfer
/// per rank in flight and no rank is the target of everyone at once.
pub(super) const POST_ALL_MAX_BLOCK_BYTES: usize = 8 * 1024;

/// How the `n - 1` exchanges of a rank are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Schedule {
    PostAll,
    Pairwise,
}

impl Communicator {
    /// All-to-all: `send` and `recv` hold `size()` blocks of equal length;
    /// block `d` of `send` goes to rank `d`, and block `s` of `recv` comes
    /// from rank `s`.
    #[track_caller]
    pub fn alltoall<S, R>(&self, send: &S, recv: &mut R) -> Result<()>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Elem = S::Elem> + ?Sized,
    {
        let bytes = std::mem::size_of_val(send.elems());
        self.traced(grappe_trace::CollectiveKind::Alltoall, None, bytes, || {
            let mut ch = Channel::new(self, "alltoall", tags::ALLTOALL)?;
            let (send, recv) = (send.elems(), recv.elems_mut());
            let n = ch.size;
            expect_len(ch.op(), "the receive buffer", recv.len(), send.len())?;
            if send.len() % n != 0 {
                let detail = SizeProblem::NotPerRank { buffer: "the send buffer", elements: send.len(), ranks: n };
                return Err(Error::BufferSize { op: ch.op(), detail });
            }
            ch.run(Signature::sized(CollectiveKind::Alltoall, bytes), |ch| alltoall_slices(ch, send, recv))
        })
    }

    /// All-to-all with blocks of different lengths: `send_counts[d]`
    /// elements go to rank `d`, `recv_counts[s]` come from rank `s`, blocks
    /// end to end in rank order in both buffers. `recv_counts[s]` must be
    /// what rank `s` sends us.
    #[track_caller]
    pub fn alltoallv<S, R>(&self, send: &S, send_counts: &[usize], recv: &mut R, recv_counts: &[usize]) -> Result<()>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Elem = S::Elem> + ?Sized,
    {
        let bytes = std::mem::size_of_val(send.elems());
        self.traced(grappe_trace::CollectiveKind::Alltoallv, None, bytes, || {
            let mut ch = Channel::new(self, "alltoallv", tags::ALLTOALL)?;
            let (send, recv) = (send.elems(), recv.elems_mut());
            let send_blocks = check_counts(ch.op(), "send counts", send_counts, ch.size)?;
            let recv_blocks = check_counts(ch.op(), "receive counts", recv_counts, ch.size)?;
            expect_len(ch.op(), "the send buffer", send.len(), send_blocks.total())?;
            expect_len(ch.op(), "the receive buffer", recv.len(), recv_blocks.total())?;
            let me = ch.rank;
            if send_counts[me] != recv_counts[me] {
                let detail = SizeProblem::SelfBlock { rank: me, sends: send_counts[me], expects: recv_counts[me] };
                return Err(Error::BufferSize { op: ch.op(), detail });
            }
            let sig = Signature::per_rank_sizes(CollectiveKind::Alltoallv, None);
            ch.run(sig, |ch| exchange(ch, send, &send_blocks, recv, &recv_blocks, Schedule::PostAll))
        })
    }
}

/// The alltoall of [`Communicator::alltoall`], on checked slices (`send`
/// holds a whole number of blocks).
fn alltoall_slices<T: Pod>(ch: &Channel<'_>, send: &[T], recv: &mut [T]) -> Result<()> {
    let n = ch.size;
    let blocks = Blocks::uniform(n, send.len() / n);
    let block_bytes = size_of_val(send) / n;
    if n == 1 {
        recv.copy_from_slice(send);
        return Ok(());
    }
    if let Some(arena) = ch.arena().filter(|_| n * size_of_val(send) <= SLOT_BYTES) {
        let shape = Shape { slot: n * block_bytes, result: n * n * block_bytes };
        let transpose = |slots: &Slots<'_>, result: &mut [u8]| transpose(slots, result, block_bytes);
        let out = bytemuck::cast_slice_mut(recv);
        return arena.exchange_parts(ch, bytemuck::cast_slice(send), shape, ch.rank * n * block_bytes, out, transpose);
    }
    let schedule = if block_bytes <= POST_ALL_MAX_BLOCK_BYTES { Schedule::PostAll } else { Schedule::Pairwise };
    exchange(ch, send, &blocks, recv, &blocks, schedule)
}

/// Arena combine: block `(d, s)` of the result (rank `d`'s block from
/// rank `s`) is block `d` of slot `s`.
fn transpose(slots: &Slots<'_>, result: &mut [u8], block_bytes: usize) {
    if block_bytes == 0 {
        return;
    }
    let n = slots.len();
    for (i, block) in result.chunks_exact_mut(block_bytes).enumerate() {
        let (dest, src) = (i / n, i % n);
        block.copy_from_slice(&slots.get(src)[dest * block_bytes..(dest + 1) * block_bytes]);
    }
}

/// Our own block is copied; the others travel by `schedule`.
fn exchange<T: Pod>(
    ch: &Channel<'_>,
    send: &[T],
    send_blocks: &Blocks,
    recv: &mut [T],
    recv_blocks: &Blocks,
    schedule: Schedule,
) -> Result<()> {
    let (n, me) = (ch.size, ch.rank);
    recv[recv_blocks.range(me)].copy_from_slice(&send[send_blocks.range(me)]);
    match schedule {
        Schedule::PostAll => {
            // Start with the next rank, so that ranks do not all send to
            // rank 0 first.
            let sends: Vec<(usize, &[T])> =
                (1..n).map(|i| (me + i) % n).map(|dest| (dest, &send[send_blocks.range(dest)])).collect();
            let mut recvs: Vec<(usize, &mut [T])> =
                recv_blocks.split_mut(recv).into_iter().enumerate().filter(|(src, _)| *src != me).collect();
            ch.post_all(&sends, &mut recvs)
        }
        Schedule::Pairwise => {
            for i in 1..n {
                let (dest, src) = ((me + i) % n, (me + n - i) % n);
                ch.sendrecv(&send[send_blocks.range(dest)], dest, &mut recv[recv_blocks.range(src)], src)?;
            }
            Ok(())
        }
    }
}
