//! The messages of one collective call: typed, of exact length, on the
//! communicator's collective context with the collective's own tag.
//!
//! Every rank calls collectives in the same order and messages between a
//! pair on one context do not overtake each other, so a collective's
//! receives name their source and need nothing more to match the right
//! message: they take any tag, and the tag carries the sender's
//! [`Signature`]. A message of another length than the receiver's buffers
//! call for, or sent for another signature, means the ranks' calls do not
//! match: the receiver reports [`Error::CollectiveMismatch`] and, once its
//! part of the call has stopped, revokes the communicator's collectives
//! so that no peer waits for it (see [`Channel::run`]).

use std::cell::Cell;

use crate::{Error, Result};
use bytemuck::Pod;
use grappe_proto::{Engine, Mismatch, RecvTarget, RequestId, Started, Status};

use super::arena::Arena;
use super::signature::{Signature, mismatch};
use crate::Communicator;
use crate::selectors::{Source, Tag};

/// Point-to-point for one collective call.
pub(super) struct Channel<'c> {
    comm: &'c Communicator,
    op: &'static str,
    ctx: u32,
    /// The collective's tag family (`tags`).
    family: i32,
    /// The tag of this call's messages, the family and the signature; 0
    /// until the call's first message (calls in the arena send none).
    tag: Cell<i32>,
    sig: Signature,
    /// Its key (see [`Signature::key`]).
    key: u64,
    /// The call's number among the communicator's collectives.
    seq: u64,
    /// The communicator's arena, if it has one.
    arena: Option<Arena<'c>>,
    /// This rank in the communicator.
    pub rank: usize,
    /// Ranks in the communicator.
    pub size: usize,
}

impl<'c> Channel<'c> {
    /// The channel of collective `op` (its name in errors) in tag family
    /// `family` on `comm`, or [`Error::CommFreed`]. The call starts with
    /// [`run`](Self::run), once the rank's own arguments are checked.
    pub fn new(comm: &'c Communicator, op: &'static str, family: i32) -> Result<Channel<'c>> {
        comm.live()?;
        let (rank, size) = (comm.rank(), comm.size());
        let sig = Signature::per_rank_sizes(grappe_trace::CollectiveKind::Barrier, None);
        let arena = Arena::of(comm);
        let tag = Cell::new(0);
        Ok(Channel { comm, op, ctx: comm.coll_ctx(), family, tag, sig, key: 0, seq: 0, arena, rank, size })
    }

    /// Runs this rank's part of a call whose ranks must agree on `sig`.
    /// Fails at once if the communicator's collectives are revoked. If
    /// `body` finds that the ranks' calls do not match, this rank revokes
    /// them on every member before returning the error: the members that
    /// still wait for a message of this call, or will call another
    /// collective on the communicator, get the error instead of waiting.
    pub fn run<T>(&mut self, sig: Signature, body: impl FnOnce(&Channel<'c>) -> Result<T>) -> Result<T> {
        self.begin(sig)?;
        let outcome = body(self);
        if let Err(Error::CollectiveMismatch(why)) = &outcome {
            if why.found_by == self.rank {
                self.revoke(&mut self.comm.rank_context().engine(), why);
            }
        }
        outcome
    }

    /// Numbers the call, announces it in the arena (where a rank waiting
    /// in an exchange can see a call that went elsewhere), and checks that
    /// the collectives were not revoked.
    fn begin(&mut self, sig: Signature) -> Result<()> {
        (self.sig, self.key) = (sig, sig.key());
        self.seq = self.comm.next_coll_seq();
        let (call, board) = (sig.announcement(self.seq, self.key), self.comm.board());
        board.announce(&call);
        if let Some(arena) = &self.arena {
            arena.announce(self.rank, &call);
        }
        if board.is_revoked() {
            return Err(self.revoked());
        }
        Ok(())
    }

    /// The error of a call on revoked collectives.
    #[cold]
    fn revoked(&self) -> Error {
        let engine = self.comm.rank_context().engine();
        let why = engine.revocation(self.ctx).expect("the board says the engine revoked the context");
        Error::CollectiveMismatch(Box::new(why.clone()))
    }

    /// Revokes the communicator's collectives on every member, with `why`:
    /// in the arena for the ranks waiting there, by a record to every
    /// member's engine for the others. Done again, it changes nothing.
    fn revoke(&self, engine: &mut Engine, why: &Mismatch) {
        if let Some(arena) = &self.arena {
            arena.abort(self, why, engine);
        }
        // The engine revokes by itself when a peer's answer shows the
        // mismatch (see `board`); the others know then.
        if engine.revocation(self.ctx).is_none() {
            let members: Vec<usize> = (0..self.size).filter_map(|r| self.comm.world_rank_of(r).ok()).collect();
            engine.revoke(self.ctx, why, &members, self.rank as u32);
        }
    }

    /// Revokes at once if `outcome` is a mismatch this rank found: a peer
    /// that will never take a send of this call then drops it, and the
    /// wait for that send ends.
    fn revoke_if_found(&self, engine: &mut Engine, outcome: &Result<()>) {
        if let Err(Error::CollectiveMismatch(why)) = outcome {
            if why.found_by == self.rank {
                self.revoke(engine, why);
            }
        }
    }

    /// The communicator's shared-memory arena, if it has one.
    pub fn arena(&self) -> Option<&Arena<'c>> {
        self.arena.as_ref()
    }

    /// The communicator.
    pub fn comm(&self) -> &'c Communicator {
        self.comm
    }

    /// The collective's name, for errors.
    pub fn op(&self) -> &'static str {
        self.op
    }

    /// What the ranks must agree on in this call.
    pub fn signature(&self) -> &Signature {
        &self.sig
    }

    /// The key of the call's signature.
    pub fn key(&self) -> u64 {
        self.key
    }

    /// The tag of this call's messages.
    #[inline]
    fn tag(&self) -> i32 {
        match self.tag.get() {
            0 => {
                let tag = self.sig.tag(self.family);
                self.tag.set(tag);
                tag
            }
            tag => tag,
        }
    }

    /// The call's number among the communicator's collectives.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Sends `data` to `dest`.
    pub fn send<T: Pod>(&self, data: &[T], dest: usize) -> Result<()> {
        self.comm.send_bytes(self.ctx, bytemuck::cast_slice(data), dest, self.tag())
    }

    /// Receives exactly `buf.len()` elements from `src`.
    pub fn recv<T: Pod>(&self, buf: &mut [T], src: usize) -> Result<()> {
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(buf);
        let expected = bytes.len();
        let status = self.comm.recv_bytes(self.ctx, bytes, Source::Rank(src), Tag::Any);
        self.exact(status, src, expected)
    }

    /// Sends `send` to `dest` while receiving exactly `recv.len()` elements
    /// from `src`. The receive is waited for first: a mismatch it shows
    /// revokes at once, so that the send, if its receiver will never take
    /// it, is dropped and its wait ends.
    pub fn sendrecv<T: Pod>(&self, send: &[T], dest: usize, recv: &mut [T], src: usize) -> Result<()> {
        let (src_world, dest_world) = (self.comm.world_rank_of(src)?, self.comm.world_rank_of(dest)?);
        let (out, into): (&[u8], &mut [u8]) = (bytemuck::cast_slice(send), bytemuck::cast_slice_mut(recv));
        let (expected, tag) = (into.len(), self.tag());
        let target = RecvTarget::Buffer { ptr: into.as_mut_ptr(), cap: expected };
        let mut engine = self.comm.rank_context().engine();
        // SAFETY: both buffers are borrowed for this call, and both
        // requests end before it returns: the send is waited for even when
        // the receive failed.
        let received = unsafe { engine.irecv(target, Some(src_world), self.ctx, None) };
        // SAFETY: as above.
        let sent = unsafe { engine.isend(out.as_ptr(), out.len(), dest_world, self.ctx, tag, self.rank as u32) };
        let status = match received {
            Ok(Started::Done(done)) => Ok(done.status),
            Ok(Started::Pending(id)) => engine.wait(id).map(|done| done.status),
            Err(e) => Err(e),
        }
        .map_err(Error::from);
        let checked = self.exact(status, src, expected);
        self.revoke_if_found(&mut engine, &checked);
        let sent = match sent {
            Ok(Started::Done(_)) => Ok(()),
            Ok(Started::Pending(id)) => engine.wait(id).map(|_| ()),
            Err(e) => Err(e),
        };
        checked.and(sent.map_err(Error::from))
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
            let arrived = match unsafe { engine.irecv(target, Some(world), self.ctx, None) } {
                Ok(Started::Done(done)) => Ok(done.status),
                Ok(Started::Pending(id)) => {
                    pending.push((id, Some((*src, bytes.len()))));
                    continue;
                }
                // A message already here and too long: this receive is over,
                // the round goes on.
                Err(e @ grappe_proto::Error::Truncated { .. }) => Err(e.into()),
                Err(e) => {
                    keep_first(&mut first_error, Err(e.into()));
                    posting_failed = true;
                    break;
                }
            };
            let checked = self.exact(arrived, *src, bytes.len());
            self.revoke_if_found(&mut engine, &checked);
            keep_first(&mut first_error, checked);
        }
        if !posting_failed {
            for ((_, data), world) in sends.iter().zip(send_world) {
                let bytes: &[u8] = bytemuck::cast_slice(data);
                // SAFETY: as for the receives; `sends` is borrowed for the call.
                match unsafe {
                    engine.isend(bytes.as_ptr(), bytes.len(), world, self.ctx, self.tag(), self.rank as u32)
                } {
                    Ok(Started::Done(_)) => {}
                    Ok(Started::Pending(id)) => pending.push((id, None)),
                    Err(e) => {
                        keep_first(&mut first_error, Err(e.into()));
                        break;
                    }
                }
            }
        }
        for (id, recv) in pending {
            let status = engine.wait(id).map(|done| done.status).map_err(Error::from);
            let checked = match recv {
                Some((src, expected)) => self.exact(status, src, expected),
                None => status.map(|_| ()),
            };
            self.revoke_if_found(&mut engine, &checked);
            keep_first(&mut first_error, checked);
        }
        first_error.map_or(Ok(()), Err)
    }

    /// A received message must fill the buffer exactly and come from a
    /// call with this one's signature.
    #[inline]
    fn exact(&self, status: Result<Status>, src: usize, expected: usize) -> Result<()> {
        match status {
            Ok(status) if status.bytes == expected && status.tag == self.tag() => Ok(()),
            Ok(status) => Err(self.message_mismatch(src, status.tag, status.bytes, expected)),
            Err(Error::Truncated { message_bytes, tag, .. }) => {
                Err(self.message_mismatch(src, tag, message_bytes, expected))
            }
            Err(e) => Err(e),
        }
    }

    #[cold]
    fn message_mismatch(&self, src: usize, tag: i32, got: usize, expected: usize) -> Error {
        let calls = vec![self.sig.call(self.rank), self.sig.call_from_tag(src, tag, self.family)];
        let evidence = if got == expected {
            format!("rank {} received a {got}-byte message from rank {src} sent for another call", self.rank)
        } else {
            format!(
                "rank {} received a {got}-byte message from rank {src} where its own call expects {expected} bytes",
                self.rank
            )
        };
        Error::CollectiveMismatch(Box::new(mismatch(self.op, self.rank, calls, evidence)))
    }
}

fn keep_first(first: &mut Option<Error>, outcome: Result<()>) {
    if let (true, Err(e)) = (first.is_none(), outcome) {
        *first = Some(e);
    }
}
