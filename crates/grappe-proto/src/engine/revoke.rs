//! Revoked contexts, for collectives whose ranks' calls do not match
//! (ULFM's `MPI_Comm_revoke`, for one reason).
//!
//! A rank that finds a mismatch stops where it is; its peers may be
//! waiting for messages it will never send, or sending it messages it
//! will never receive. So it revokes the communicator's collective
//! context on every member: a `Revoke` record goes to each, and each
//! engine that sees one (or revokes itself) then
//! - fails the receives posted on that context, so that no rank waits for
//!   a peer that gave up;
//! - refuses new sends and receives on it;
//! - drops the messages that arrived or arrive on it, through a receive
//!   of capacity 0 that completes them as the protocol completes any
//!   receive (a rendezvous sender gets its FIN or its slot back, so no
//!   sender waits for a receiver that gave up either).
//!
//! Receives already copying their message finish: their data is coming,
//! and their sender may still be reading from its buffer. The context
//! stays revoked for the rest of the run.

use std::ptr::NonNull;

use super::{Book, Engine, Net};
use crate::request::{RecvReq, RecvState, Request};
use crate::wire::{Envelope, Kind};
use crate::{Error, Mismatch, ProtoSettings, RecvTarget};

impl Engine {
    /// Revokes context `ctx` here (see the module doc) and sends a revoke
    /// record to each of `peers` (world ranks; this rank is skipped), in
    /// which `src_comm` is this rank's number in the communicator. The
    /// records leave with the mailboxes' order, after what was sent before.
    pub fn revoke(&mut self, ctx: u32, why: &Mismatch, peers: &[usize], src_comm: u32) {
        self.book.revoke_here(&self.net, ctx, why, &self.settings);
        let (payload, me) = (why.encode(), self.me);
        for &dest in peers.iter().filter(|&&dest| dest != me) {
            let env = Envelope { kind: Kind::Revoke, ctx, tag: 0, src: src_comm };
            self.send_control(dest, env, payload.clone());
        }
    }

    /// Why context `ctx` was revoked, if it was.
    #[inline]
    pub fn revocation(&self, ctx: u32) -> Option<&Mismatch> {
        self.book.revocation(ctx)
    }
}

impl Book {
    #[inline]
    pub(super) fn revocation(&self, ctx: u32) -> Option<&Mismatch> {
        if self.revoked.is_empty() {
            return None;
        }
        self.revoked.iter().find(|(c, _)| *c == ctx).map(|(_, why)| why)
    }

    /// The error of an operation on a revoked context, if `ctx` is one.
    #[inline]
    pub(super) fn revoked_error(&self, ctx: u32) -> Option<Error> {
        self.revocation(ctx).map(|why| Error::CollectiveMismatch(Box::new(why.clone())))
    }

    /// Revokes `ctx` on this rank, if it was not already.
    pub(super) fn revoke_here(&mut self, net: &Net, ctx: u32, why: &Mismatch, settings: &ProtoSettings) {
        if self.revocation(ctx).is_some() {
            return;
        }
        self.revoked.push((ctx, why.clone()));
        if let Some(board) = self.board(ctx) {
            board.revoked();
        }
        let reqs = &mut self.reqs;
        self.posted.retain(|&key| match &mut reqs[key] {
            Request::Recv(recv) if recv.ctx == ctx => {
                recv.state = RecvState::Failed(Error::CollectiveMismatch(Box::new(why.clone())));
                false
            }
            _ => true,
        });
        while let Some(slot) = self.unexpected.find(ctx, None, None) {
            let key = self.discard_request(ctx, slot.src);
            self.take_unexpected(net, key, slot, settings);
        }
    }

    /// A receive that takes one message from world rank `src` on `ctx`
    /// and keeps none of it; reaped once complete.
    pub(super) fn discard_request(&mut self, ctx: u32, src: usize) -> usize {
        let target = RecvTarget::Buffer { ptr: NonNull::<u8>::dangling().as_ptr(), cap: 0 };
        let recv = RecvReq { arrived: true, ctx, src: Some(src), tag: None, target, state: RecvState::Posted };
        let key = self.reqs.insert(Request::Recv(recv));
        self.detached.push(key);
        key
    }
}
