//! The send side: eager pushes, rendezvous offers, hand-overs, and the
//! queue of sends waiting for mailbox space.

use grappe_fabric::put::RemoteRegion;

use super::Engine;
use crate::request::{Push, Request, SendReq, SendState};
use crate::wire::{Envelope, Handover, Kind, Rts, Words};
use crate::{OwnedBytes, Result, Started};

impl Engine {
    /// Starts a send of `len` bytes at `data`.
    ///
    /// # Safety
    /// `data` must stay valid and unmodified until the request completes.
    #[inline]
    pub unsafe fn isend(
        &mut self,
        data: *const u8,
        len: usize,
        dest: usize,
        ctx: u32,
        tag: i32,
        src_comm: u32,
    ) -> Result<Started> {
        let env = self.envelope(ctx, tag, src_comm)?;
        // The eager push written out here rather than shared with
        // `send_if_immediate`: shared, the compiler no longer inlines the
        // mailbox's push into this, the hottest send path.
        if len <= self.net.peers[dest].eager_max && self.book.queued[dest].is_empty() {
            // SAFETY: the caller guarantees `data` is valid for `len` bytes.
            let bytes = unsafe { std::slice::from_raw_parts(data, len) };
            if self.net.peers[dest].out.try_push(env.encode(), bytes) {
                self.net.ring(dest);
                return Ok(Started::Done(sent(&env, len)));
            }
        }
        let send = SendReq { dest, env, data, len, owned: None, state: SendState::Queued, sync: false };
        self.queue_send(send)
    }

    /// Sends `len` bytes at `data` only if the send completes at once (an
    /// eager message with room in `dest`'s mailbox and no send queued
    /// before it); `None` starts nothing. For callers that must not wait
    /// inside the engine (see [`Engine::recv_if_here`]).
    ///
    /// # Safety
    /// `data` must be valid for `len` bytes for the call.
    #[inline]
    pub unsafe fn send_if_immediate(
        &mut self,
        data: *const u8,
        len: usize,
        dest: usize,
        ctx: u32,
        tag: i32,
        src_comm: u32,
    ) -> Option<crate::Completion> {
        let env = self.envelope(ctx, tag, src_comm).ok()?;
        if len > self.net.peers[dest].eager_max || !self.book.queued[dest].is_empty() {
            return None;
        }
        // SAFETY: the caller guarantees `data` is valid for `len` bytes.
        let bytes = unsafe { std::slice::from_raw_parts(data, len) };
        if !self.net.peers[dest].out.try_push(env.encode(), bytes) {
            return None;
        }
        self.net.ring(dest);
        Some(sent(&env, len))
    }

    /// Starts a synchronous send (MPI's `MPI_Issend`) of `len` bytes at
    /// `data`: it completes once the receiver has matched it, since it goes
    /// by rendezvous whatever its size. To a rank it cannot offer a
    /// rendezvous (another host, or cross-memory attach refused) it goes as
    /// a message or fragments naming the request, and completes when the
    /// receiver's FIN says a receive (or a matched probe) took it.
    ///
    /// # Safety
    /// `data` must stay valid and unmodified until the request completes.
    pub unsafe fn issend(
        &mut self,
        data: *const u8,
        len: usize,
        dest: usize,
        ctx: u32,
        tag: i32,
        src_comm: u32,
    ) -> Result<Started> {
        let env = self.envelope(ctx, tag, src_comm)?;
        let send = SendReq { dest, env, data, len, owned: None, state: SendState::Queued, sync: true };
        self.queue_send(send)
    }

    /// The envelope of a program's message on context `ctx`, unless the
    /// context was revoked (a collective whose calls did not match).
    #[inline]
    fn envelope(&self, ctx: u32, tag: i32, src_comm: u32) -> Result<Envelope> {
        match self.book.revoked_error(ctx) {
            Some(revoked) => Err(revoked),
            None => Ok(Envelope { kind: Kind::Eager, ctx, tag, src: src_comm }),
        }
    }

    /// Sends a heap buffer: handed over without copying to a thread of this
    /// process, copied to a rank of another process.
    pub fn isend_owned(
        &mut self,
        owned: OwnedBytes,
        dest: usize,
        ctx: u32,
        tag: i32,
        src_comm: u32,
    ) -> Result<Started> {
        let kind = if self.net.same_process(dest) { Kind::Handover } else { Kind::Eager };
        let env = Envelope { kind, ctx, tag, src: src_comm };
        let (data, len) = (owned.as_slice().as_ptr(), owned.len());
        let send = SendReq { dest, env, data, len, owned: Some(owned), state: SendState::Queued, sync: false };
        self.queue_send(send)
    }

    /// Sends a control record (revocation, probe, answer) of `env` with
    /// `payload` to world rank `dest`, behind what was sent there before.
    /// Nobody waits for it: once out, its request is forgotten.
    pub(super) fn send_control(&mut self, dest: usize, env: Envelope, payload: Vec<u8>) {
        let owned = OwnedBytes::from_vec(payload);
        let (data, len) = (owned.as_slice().as_ptr(), owned.len());
        let send = SendReq { dest, env, data, len, owned: Some(owned), state: SendState::Queued, sync: false };
        if let Ok(Started::Pending(id)) = self.queue_send(send) {
            self.book.detached.push(id.0);
        }
    }

    pub(super) fn queue_send(&mut self, send: SendReq) -> Result<Started> {
        let dest = send.dest;
        let key = self.book.reqs.insert(Request::Send(send));
        self.book.queued[dest].push_back(key);
        self.book.queued_total += 1;
        self.push_queued_to(dest);
        self.book.started(crate::RequestId(key))
    }

    /// Retries the queued sends of every destination.
    pub(super) fn push_queued(&mut self) -> Result<bool> {
        let mut moved = false;
        for dest in 0..self.book.queued.len() {
            if !self.book.queued[dest].is_empty() {
                moved |= self.push_queued_to(dest);
            }
        }
        Ok(moved)
    }

    /// Pushes queued sends to `dest` in order until one is blocked.
    fn push_queued_to(&mut self, dest: usize) -> bool {
        let mut moved = false;
        while let Some(&key) = self.book.queued[dest].front() {
            let push = self.try_push(key);
            let Request::Send(send) = &mut self.book.reqs[key] else { unreachable!("queued key is a send") };
            match push {
                Push::Blocked => return moved,
                Push::Broken(error) => {
                    send.state = SendState::Failed(error);
                    send.owned = None;
                }
                Push::Partial(sent) => {
                    send.state = SendState::Staging { sent };
                    return true;
                }
                Push::Finished => {
                    send.state = SendState::Done;
                    send.owned = None;
                }
                Push::Offered(slot) => {
                    send.state = SendState::Offered { slot };
                    self.book.offered.push(key);
                }
                Push::AwaitingAck => {
                    send.state = SendState::AwaitingAck;
                    send.owned = None;
                }
            }
            self.book.queued[dest].pop_front();
            self.book.queued_total -= 1;
            moved = true;
        }
        moved
    }

    fn try_push(&mut self, key: usize) -> Push {
        let pull_min = self.settings.net_pull_min;
        let Request::Send(send) = &mut self.book.reqs[key] else { unreachable!("queued key is a send") };
        if let Some(broken) = self.net.broken_link(send.dest) {
            return Push::Broken(broken);
        }
        let peer = &mut self.net.peers[send.dest];
        // A synchronous send to a rank it cannot offer a rendezvous goes
        // as a message naming its request, which the receiver's FIN ends.
        let ack = (send.sync && peer.staged).then_some(key as u64);
        let pushed = match (send.env.kind, &send.state) {
            (Kind::Handover, _) => push_handover(send, peer),
            (Kind::Revoke | Kind::Probe | Kind::ProbeReply | Kind::State, _) => push_record(send, peer),
            (_, SendState::Staging { sent }) => super::staging::push_fragments(send, peer, *sent, ack),
            _ if send.sync && !peer.staged => {
                offer(key, send, peer, &self.net.host, self.net.me_local, &mut self.book.free_slots)
            }
            _ if send.len <= peer.eager_max => match ack {
                Some(request) => push_sync_eager(send, peer, request),
                None => push_eager(send, peer),
            },
            // To another host, a large message waits for its receiver to
            // pull it (synchronous too: the pull says a receive took it).
            _ if send.len >= pull_min && peer.local().is_none() => super::pull::offer_to_pull(key, send, peer),
            _ if peer.staged => super::staging::push_fragments(send, peer, 0, ack),
            _ => offer(key, send, peer, &self.net.host, self.net.me_local, &mut self.book.free_slots),
        };
        if !matches!(pushed, Push::Blocked | Push::Broken(_)) {
            self.net.ring(send.dest);
        }
        pushed
    }
}

fn push_eager(send: &SendReq, peer: &mut super::Peer) -> Push {
    push_as(Envelope { kind: Kind::Eager, ..send.env }, send, peer)
}

/// A synchronous send's whole message behind its request id.
fn push_sync_eager(send: &SendReq, peer: &mut super::Peer, request: u64) -> Push {
    // SAFETY: the poster keeps `data` valid until completion.
    let bytes = unsafe { std::slice::from_raw_parts(send.data, send.len) };
    let env = Envelope { kind: Kind::SyncEager, ..send.env };
    let pushed = peer.out.try_push_with(env.encode(), 8 + bytes.len(), |out| {
        out[..8].copy_from_slice(&request.to_le_bytes());
        out[8..].copy_from_slice(bytes);
    });
    if pushed { Push::AwaitingAck } else { Push::Blocked }
}

/// A control record (revocation, probe, answer): its payload whole in
/// the mailbox.
fn push_record(send: &SendReq, peer: &mut super::Peer) -> Push {
    push_as(send.env, send, peer)
}

fn push_as(env: Envelope, send: &SendReq, peer: &mut super::Peer) -> Push {
    // SAFETY: the poster keeps `data` valid until completion.
    let bytes = unsafe { std::slice::from_raw_parts(send.data, send.len) };
    if peer.out.try_push(env.encode(), bytes) { Push::Finished } else { Push::Blocked }
}

fn push_handover(send: &mut SendReq, peer: &mut super::Peer) -> Push {
    let (ptr, len, cap, align) = send.owned.as_ref().expect("hand-over owns its buffer").parts();
    let h = Handover { ptr: ptr as u64, len: len as u64, cap: cap as u64, align: align as u64, type_hash: 0 };
    if !peer.out.try_push_with(send.env.encode(), Handover::BYTES, |out| h.write(out)) {
        return Push::Blocked;
    }
    // The receiver owns the allocation now.
    let _ = send.owned.take().expect("checked above").into_raw_parts();
    Push::Finished
}

/// Describes the message in a free slot (for a cooperative copy) and sends
/// the RTS. With no slot free the RTS goes anyway: the receiver then copies
/// alone and answers with a FIN, so a receiver that takes messages out of
/// order can never starve the sender of slots.
fn offer(
    key: usize,
    send: &SendReq,
    peer: &mut super::Peer,
    host: &grappe_fabric::HostMemory,
    me_local: usize,
    free: &mut Vec<u32>,
) -> Push {
    // SAFETY: the poster keeps `data` valid until completion.
    let region = RemoteRegion::of(unsafe { std::slice::from_raw_parts(send.data, send.len) });
    let slot_index = free.pop();
    // SAFETY: our own slot, in the host segment that outlives the call.
    let slot = slot_index.map(|i| unsafe { crate::rendezvous::Slot::at(host.rdv_slot(me_local, i as usize)) });
    if let Some(slot) = slot {
        slot.offer();
    }
    let slot_index = slot_index.unwrap_or(Rts::NO_SLOT);
    let rts = Rts { slot: slot_index, len: region.len, addr: region.addr, request: key as u64 };
    let env = Envelope { kind: Kind::Rts, ..send.env };
    if peer.out.try_push_with(env.encode(), Rts::BYTES, |out| rts.write(out)) {
        return Push::Offered(slot_index);
    }
    if let Some(slot) = slot {
        slot.withdraw();
        free.push(slot_index);
    }
    Push::Blocked
}

fn sent(env: &Envelope, len: usize) -> crate::Completion {
    crate::Completion {
        status: crate::Status { source: env.src as usize, tag: env.tag, bytes: len },
        data: None,
        arrived: false,
    }
}
