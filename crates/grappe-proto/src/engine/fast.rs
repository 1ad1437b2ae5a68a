//! The blocking receive's fast path.
//!
//! Most receives in tight loops name their source, find nothing else in
//! flight, and get an eager message. For those the engine skips the
//! request machinery (no request slot, no posted queue, no matching scan):
//! it watches the head of that one mailbox and copies the message straight
//! from the ring into the user's buffer. Anything unusual — a record that
//! does not match, other transfers in flight, a wait that outlasts the spin
//! phase — falls back to the general path, which gives the same result.

use grappe_sched::{Backoff, Snooze};

use super::Engine;
use super::dispatch::{finished, status};
use crate::request::RecvState;
use crate::wire::{Envelope, Kind};
use crate::{Completion, OwnedBytes, RecvTarget, Result, Started};

/// Polls of the fast path before falling back (about the spin phase).
const FAST_POLLS: u32 = 4096;

/// What the head of a mailbox holds for the fast path.
enum Head {
    Empty,
    Taken(Result<Completion>),
    Other,
}

impl Engine {
    /// Receives one message, blocking.
    ///
    /// # Safety
    /// As for [`Engine::irecv`]; the buffer only needs to live for the call.
    pub unsafe fn recv(
        &mut self,
        target: RecvTarget,
        src: Option<usize>,
        ctx: u32,
        tag: Option<i32>,
    ) -> Result<Completion> {
        if let Some(revoked) = self.book.revoked_error(ctx) {
            return Err(revoked);
        }
        if let Some(src) = src.filter(|_| self.nothing_in_flight()) {
            match self.take_head(src, ctx, tag, target) {
                Head::Taken(done) => return done.map(|c| Completion { arrived: true, ..c }),
                Head::Other => {}
                Head::Empty => {
                    if let Some(done) = self.poll_head(src, ctx, tag, target) {
                        return done;
                    }
                }
            }
        }
        // SAFETY: forwarded contract.
        match unsafe { self.irecv(target, src, ctx, tag) }? {
            Started::Done(done) => Ok(done),
            Started::Pending(id) => self.wait(id),
        }
    }

    /// Receives a message only if it is already at the head of `src`'s
    /// mailbox and nothing else is in flight (as the fast path of
    /// [`Engine::recv`]); `None` starts nothing. For callers that must not
    /// wait inside the engine (a library whose other threads need it
    /// meanwhile) and poll this between their own pauses instead.
    /// `first` says this is the receive's first look: its message was
    /// then here before the receive (the `arrived` flag).
    ///
    /// # Safety
    /// As for [`Engine::recv`].
    #[inline]
    pub unsafe fn recv_if_here(
        &mut self,
        target: RecvTarget,
        src: usize,
        ctx: u32,
        tag: Option<i32>,
        first: bool,
    ) -> Option<Result<Completion>> {
        if self.book.revoked_error(ctx).is_some() || !self.nothing_in_flight() {
            return None;
        }
        match self.take_head(src, ctx, tag, target) {
            Head::Taken(done) => Some(done.map(|c| Completion { arrived: first, ..c })),
            Head::Empty | Head::Other => None,
        }
    }

    /// Spins on the head of `src`'s mailbox; `None` to fall back.
    #[inline(never)]
    fn poll_head(&mut self, src: usize, ctx: u32, tag: Option<i32>, target: RecvTarget) -> Option<Result<Completion>> {
        let wait = self.wait;
        // SAFETY: the bell lives in `self.net.host`, alive as long as self.
        let mut backoff = Backoff::new(unsafe { &*self.bell }, &wait);
        for _ in 0..FAST_POLLS {
            if backoff.snooze() == Snooze::TimedOut {
                self.stats.sleeps_timed_out += 1;
            }
            match self.take_head(src, ctx, tag, target) {
                Head::Taken(done) => return Some(done),
                Head::Other => return None,
                Head::Empty => {}
            }
        }
        None
    }

    /// True if no request, queued send or unexpected message exists, no
    /// channel log is open and no network link holds bytes back: only then
    /// may a receive bypass the dispatch (the fast path flushes no link,
    /// and the message awaited may answer bytes still held).
    fn nothing_in_flight(&self) -> bool {
        let b = &self.book;
        b.reqs.is_empty()
            && b.unexpected.len() == 0
            && b.queued_total == 0
            && b.fins.is_empty()
            && b.pulls.is_empty()
            && b.retiring.is_empty()
            && b.log.is_none()
            && !self.net.backlogged()
    }

    /// Takes the record at the head of `src`'s mailbox if it is an eager
    /// message this receive matches.
    #[inline]
    fn take_head(&mut self, src: usize, ctx: u32, tag: Option<i32>, target: RecvTarget) -> Head {
        let record = match self.inbound[src].link.peek() {
            Ok(Some(record)) => record,
            Ok(None) => return Head::Empty,
            // The general path names the broken link.
            Err(_) => return Head::Other,
        };
        let env = match Envelope::decode(record.meta()) {
            Some(env) if env.kind == Kind::Eager && env.ctx == ctx && tag.is_none_or(|t| t == env.tag) => env,
            _ => return Head::Other,
        };
        let payload = record.payload();
        let status = status(&env, payload.len());
        let done = match target {
            RecvTarget::Buffer { ptr, cap } if payload.len() <= cap => {
                // SAFETY: the caller's buffer is valid for `cap` bytes.
                unsafe { grappe_fabric::copy::copy_bytes(payload.as_ptr(), ptr, payload.len()) };
                Ok(Completion { status, data: None, arrived: false })
            }
            RecvTarget::Buffer { ptr, cap } => {
                // SAFETY: as above, `cap` bytes only.
                unsafe { grappe_fabric::copy::copy_bytes(payload.as_ptr(), ptr, cap) };
                match finished(status, None, Some(cap)) {
                    RecvState::Failed(e) => Err(e),
                    _ => unreachable!("a truncated receive fails"),
                }
            }
            RecvTarget::Allocate { align } => {
                let mut owned = OwnedBytes::alloc(payload.len(), align);
                owned.as_mut_slice().copy_from_slice(payload);
                Ok(Completion { status, data: Some(owned), arrived: false })
            }
        };
        if record.consume() {
            self.net.ring(src); // it waits for mailbox space
        }
        Head::Taken(done)
    }
}
