//! The messages of one collective call: typed, of exact length, on the
//! communicator's collective context with the collective's own tag.
//!
//! Every rank calls collectives in the same order and messages between a
//! pair on one context do not overtake each other, so a collective's
//! receives name their source and need nothing more to match the right
//! message. A message of another length than the receiver's buffers call
//! for means the ranks passed different sizes: that is reported as
//! [`Error::BufferSize`] with the numbers.

use bytemuck::Pod;
use grappe_proto::{Error, RecvTarget, RequestId, Result, Started, Status};

use crate::Communicator;
use crate::selectors::{Source, Tag};

/// Point-to-point for one collective call.
pub(super) struct Channel<'c> {
    comm: &'c Communicator,
    op: &'static str,
    ctx: u32,
    tag: i32,
    /// This rank in the communicator.
    pub rank: usize,
    /// Ranks in the communicator.
    pub size: usize,
}

impl<'c> Channel<'c> {
    /// The channel of collective `op` (its name in errors) on `comm`, or
    /// [`Error::CommFreed`].
    pub fn new(comm: &'c Communicator, op: &'static str, tag: i32) -> Result<Channel<'c>> {
        comm.live()?;
        Ok(Channel { comm, op, ctx: comm.coll_ctx(), tag, rank: comm.rank(), size: comm.size() })
    }

    /// The collective's name, for errors.
    pub fn op(&self) -> &'static str {
        self.op
    }

    /// The communicator.
    pub fn comm(&self) -> &'c Communicator {
        self.comm
    }

    /// Sends `data` to `dest`.
    pub fn send<T: Pod>(&self, data: &[T], dest: usize) -> Result<()> {
        self.comm.send_bytes(self.ctx, bytemuck::cast_slice(data), dest, self.tag)
    }

    /// Receives exactly `buf.len()` elements from `src`.
    pub fn recv<T: Pod>(&self, buf: &mut [T], src: usize) -> Result<()> {
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(buf);
        let expected = bytes.len();
        let status = self.comm.recv_bytes(self.ctx, bytes, Source::Rank(src), Tag::Is(self.tag));
        self.exact(status, src, expected)
    }

    /// Sends `send` to `dest` while receiving exactly `recv.len()` elements
    /// from `src`.
    pub fn sendrecv<T: Pod>(&self, send: &[T], dest: usize, recv: &mut [T], src: usize) -> Result<()> {
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(recv);
        let expected = bytes.len();
        let status = self.comm.sendrecv_bytes(
            self.ctx,
            bytemuck::cast_slice(send),
            dest,
            self.tag,
            bytes,
            Source::Rank(src),
            Tag::Is(self.tag),
        );
        self.exact(status.map(|done| done.status), src, expected)
    }

    /// Posts every receive, then every send, and waits for all of them:
    /// one round in which each rank talks to many peers without ordering
    /// them. `recvs` are `(source, buffer)`, `sends` are `(destination,
    /// data)`; receives must get exactly their buffer's length.
    ///
    /// Returns the first error after every posted request has ended (a
    /// failure of the engine itself, such as a dead peer, can leave
    /// requests behind: the job is failing then).
    pub fn post_all<T: Pod>(&self, sends: &[(usize, &[T])], recvs: &mut [(usize, &mut [T])]) -> Result<()> {
        let recv_world: Vec<usize> =
            recvs.iter().map(|(src, _)| self.comm.world_rank_of(*src)).collect::<Result<_>>()?;
        let send_world: Vec<usize> =
            sends.iter().map(|(dest, _)| self.comm.world_rank_of(*dest)).collect::<Result<_>>()?;
        let mut engine = self.comm.rank_context().engine();
        // Requests to wait for; receives with their source and length.
        let mut pending: Vec<(RequestId, Option<(usize, usize)>)> = Vec::with_capacity(recvs.len() + sends.len());
        // A message of the wrong size is noted and the round goes on, so
        // that peers are not left waiting; a failure to post stops it.
        let mut first_error = None;
        let mut posting_failed = false;
        for ((src, buf), world) in recvs.iter_mut().zip(recv_world) {
            let bytes: &mut [u8] = bytemuck::cast_slice_mut(buf);
            let target = RecvTarget::Buffer { ptr: bytes.as_mut_ptr(), cap: bytes.len() };
            // SAFETY: the buffer is borrowed through `recvs` for this whole
            // call and nothing else touches it: every request posted here
            // is waited for below before we return, also after an error.
            match unsafe { engine.irecv(target, Some(world), self.ctx, Some(self.tag)) } {
                Ok(Started::Done(done)) => keep_first(&mut first_error, self.exact(Ok(done.status), *src, bytes.len())),
                Ok(Started::Pending(id)) => pending.push((id, Some((*src, bytes.len())))),
                Err(e) => {
                    keep_first(&mut first_error, Err(e));
                    posting_failed = true;
                    break;
                }
            }
        }
        if !posting_failed {
            for ((_, data), world) in sends.iter().zip(send_world) {
                let bytes: &[u8] = bytemuck::cast_slice(data);
                // SAFETY: as for the receives; `sends` is borrowed for the call.
                match unsafe { engine.isend(bytes.as_ptr(), bytes.len(), world, self.ctx, self.tag, self.rank as u32) }
                {
                    Ok(Started::Done(_)) => {}
                    Ok(Started::Pending(id)) => pending.push((id, None)),
                    Err(e) => {
                        keep_first(&mut first_error, Err(e));
                        break;
                    }
                }
            }
        }
        for (id, recv) in pending {
            let status = engine.wait(id).map(|done| done.status);
            let checked = match recv {
                Some((src, expected)) => self.exact(status, src, expected),
                None => status.map(|_| ()),
            };
            keep_first(&mut first_error, checked);
        }
        first_error.map_or(Ok(()), Err)
    }

    /// A received message must fill the buffer exactly.
    fn exact(&self, status: Result<Status>, src: usize, expected: usize) -> Result<()> {
        match status {
            Ok(status) if status.bytes == expected => Ok(()),
            Ok(status) => Err(self.length_error(src, status.bytes, expected)),
            Err(Error::Truncated { message_bytes, .. }) => Err(self.length_error(src, message_bytes, expected)),
            Err(e) => Err(e),
        }
    }

    fn length_error(&self, src: usize, got: usize, expected: usize) -> Error {
        Error::BufferSize {
            op: self.op,
            detail: format!(
                "rank {} received {got} bytes from rank {src} where its arguments call for {expected}: \
                 the ranks passed inconsistent sizes",
                self.rank
            ),
        }
    }
}

fn keep_first(first: &mut Option<Error>, outcome: Result<()>) {
    if let (true, Err(e)) = (first.is_none(), outcome) {
        *first = Some(e);
    }
}
