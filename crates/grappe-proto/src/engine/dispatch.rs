//! The receive side: what to do with a record, or with an unexpected
//! message once a receive claims it.

use grappe_fabric::link::Incoming;
use grappe_fabric::put::RemoteRegion;

use super::{Book, Net, StagingTarget};
use crate::matching::{self, Body};
use crate::request::{Copying, RecvReq, RecvState, Request, SendState};
use crate::wire::{Envelope, Handover, Kind, Rts, Words};
use crate::{Error, Mismatch, OwnedBytes, ProtoSettings, RecvTarget, Result, Status};

impl Book {
    /// Handles one record from the mailbox of world rank `src`.
    pub(super) fn dispatch(
        &mut self,
        net: &Net,
        src: usize,
        record: Incoming<'_>,
        settings: &ProtoSettings,
    ) -> Result<()> {
        let env = Envelope::decode(record.meta())
            .ok_or_else(|| corrupt(src, format!("unknown record metadata {:?}", record.meta())))?;
        // A synchronous send's record is its plain kind's behind the
        // sender's request id, which a FIN gives back once a receive takes it.
        let (env, payload, sync) = match env.kind {
            Kind::SyncEager | Kind::SyncFragFirst => {
                let (request, rest) = record
                    .payload()
                    .split_first_chunk::<8>()
                    .ok_or_else(|| corrupt(src, "synchronous record shorter than its request id".into()))?;
                let kind = if env.kind == Kind::SyncEager { Kind::Eager } else { Kind::FragFirst };
                (Envelope { kind, ..env }, rest, Some(u64::from_le_bytes(*request)))
            }
            _ => (env, record.payload(), None),
        };
        if env.kind != Kind::Handover {
            self.log_record(src, &env, payload);
        }
        match env.kind {
            Kind::Eager => match self.take_posted(env.ctx, src, env.tag) {
                Some(key) => {
                    self.deliver(key, status(&env, payload.len()), payload);
                    self.fins.extend(sync.map(|request| (src, request)));
                }
                None => {
                    let body = Body::Eager(payload.to_vec());
                    self.unexpected.push_sync(src, env.ctx, env.tag, env.src, body, sync);
                }
            },
            Kind::Rts if net.peers[src].local().is_none() => {
                let (rts, first) = super::pull::read_offer(src, payload)?;
                match self.take_posted(env.ctx, src, env.tag) {
                    Some(key) => self.pull(key, src, &env, rts, first),
                    None => {
                        let body = Body::Pull { rts, first: first.to_vec() };
                        self.unexpected.push(src, env.ctx, env.tag, env.src, body);
                    }
                }
            }
            Kind::Rts => {
                let rts = Rts::read(payload).ok_or_else(|| corrupt(src, "short RTS".into()))?;
                match self.take_posted(env.ctx, src, env.tag) {
                    Some(key) => self.accept_rendezvous(net, key, src, &env, rts, settings),
                    None => self.unexpected.push(src, env.ctx, env.tag, env.src, Body::Rts(rts)),
                }
            }
            Kind::Handover => {
                let h = Handover::read(payload).ok_or_else(|| corrupt(src, "short hand-over".into()))?;
                // SAFETY: a hand-over record comes from a thread of this
                // process that gave up the allocation when it pushed it.
                let owned = unsafe {
                    OwnedBytes::from_raw_parts(h.ptr as *mut u8, h.len as usize, h.cap as usize, h.align as usize)
                };
                self.log_record(src, &env, owned.as_slice());
                match self.take_posted(env.ctx, src, env.tag) {
                    Some(key) => self.deliver_owned(key, status(&env, owned.len()), owned),
                    None => self.unexpected.push(src, env.ctx, env.tag, env.src, Body::Handover(owned)),
                }
            }
            Kind::FragFirst => self.first_fragment(src, &env, payload, sync)?,
            Kind::Frag => self.next_fragment(src, payload)?,
            Kind::Fin => self.finish_offered_send(src, payload)?,
            Kind::Pull => self.pull_requested(src, payload)?,
            Kind::PullData => self.pulled_data(src, payload)?,
            Kind::Revoke => {
                let why = Mismatch::decode(payload).ok_or_else(|| corrupt(src, "unreadable revoke record".into()))?;
                self.revoke_here(net, env.ctx, &why, settings);
            }
            Kind::Probe => self.probed(src, env.ctx),
            Kind::ProbeReply => self.answered(net, src, env.src, env.ctx, payload)?,
            Kind::State => net.remote_state(src, payload)?,
            Kind::SyncEager | Kind::SyncFragFirst => unreachable!("taken as their plain kinds above"),
        }
        if record.consume() {
            net.ring(src); // it waits for mailbox space
        }
        Ok(())
    }

    /// Removes and returns the first posted receive matching the message;
    /// on a revoked context, a receive that drops it.
    pub(super) fn take_posted(&mut self, ctx: u32, src: usize, tag: i32) -> Option<usize> {
        if self.revocation(ctx).is_some() {
            return Some(self.discard_request(ctx, src));
        }
        let reqs = &self.reqs;
        let pos = self.posted.iter().position(|&key| match &reqs[key] {
            Request::Recv(recv) => recv.matches(ctx, src, tag),
            Request::Send(_) | Request::Collective(_) => false,
        })?;
        self.posted.remove(pos)
    }

    /// The source selector of receive `key` while it waits for a message
    /// (`None` once matched, or if it is not a receive).
    pub(super) fn posted_source(&self, key: usize) -> Option<Option<usize>> {
        match self.reqs.get(key) {
            Some(Request::Recv(recv)) if matches!(recv.state, RecvState::Posted) => Some(recv.src),
            _ => None,
        }
    }

    /// Flags receive `key` `arrived` if a message already matched it.
    pub(super) fn mark_arrived_if_matched(&mut self, key: usize) {
        if self.posted_source(key).is_none() {
            self.recv_mut(key).arrived = true;
        }
    }

    fn recv_mut(&mut self, key: usize) -> &mut RecvReq {
        match &mut self.reqs[key] {
            Request::Recv(recv) => recv,
            Request::Send(_) | Request::Collective(_) => unreachable!("receive key {key} names no receive"),
        }
    }

    /// Completes receive `key` with a whole message.
    fn deliver(&mut self, key: usize, status: Status, bytes: &[u8]) {
        let recv = self.recv_mut(key);
        recv.state = match recv.target {
            RecvTarget::Buffer { ptr, cap } => {
                let n = bytes.len().min(cap);
                // SAFETY: the poster guarantees `ptr` is valid for `cap`
                // bytes until completion; n <= cap.
                unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), ptr, n) };
                finished(status, None, (bytes.len() > cap).then_some(cap))
            }
            RecvTarget::Allocate { align } => {
                let mut owned = OwnedBytes::alloc(bytes.len(), align);
                owned.as_mut_slice().copy_from_slice(bytes);
                RecvState::Done { status, data: Some(owned) }
            }
        };
    }

    /// Completes receive `key` with a buffer we own: kept as is when the
    /// receive lets the runtime choose the buffer, copied otherwise.
    fn deliver_owned(&mut self, key: usize, status: Status, owned: OwnedBytes) {
        match self.recv_mut(key).target {
            RecvTarget::Allocate { .. } => self.recv_mut(key).state = RecvState::Done { status, data: Some(owned) },
            RecvTarget::Buffer { .. } => self.deliver(key, status, owned.as_slice()),
        }
    }

    /// Receive `key` matched an RTS: publish our buffer (if the sender
    /// offered a slot) and start copying.
    fn accept_rendezvous(
        &mut self,
        net: &Net,
        key: usize,
        src: usize,
        env: &Envelope,
        rts: Rts,
        settings: &ProtoSettings,
    ) {
        let len = rts.len as usize;
        let (dst, cap, data) = match self.recv_mut(key).target {
            RecvTarget::Buffer { ptr, cap } => (ptr, cap, None),
            RecvTarget::Allocate { align } => {
                let mut owned = OwnedBytes::alloc(len, align);
                (owned.as_mut_slice().as_mut_ptr(), len, Some(owned))
            }
        };
        let take = len.min(cap);
        let slot = (rts.slot != Rts::NO_SLOT).then_some(rts.slot);
        if let Some(slot) = slot {
            let shared = net.slot(net.peers[src].on_host().local, slot);
            shared.accept(RemoteRegion { addr: dst as u64, len: take as u64 }, chunk_size(take, settings));
            net.ring(src);
        }
        let copying = Copying {
            status: status(env, len),
            sender: src,
            slot,
            source: RemoteRegion { addr: rts.addr, len: rts.len },
            request: rts.request,
            dst,
            take,
            truncated_to: (len > cap).then_some(cap),
            data,
        };
        self.recv_mut(key).state = RecvState::Copying(Box::new(copying));
        self.copying.push(key);
    }

    /// A FIN from `src`: the receiver copied a slot-less rendezvous send.
    fn finish_offered_send(&mut self, src: usize, payload: &[u8]) -> Result<()> {
        let key = payload
            .get(..8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")) as usize)
            .ok_or_else(|| corrupt(src, "short FIN".into()))?;
        match self.reqs.get_mut(key) {
            Some(Request::Send(send))
                if send.dest == src
                    && matches!(
                        send.state,
                        SendState::Offered { slot: Rts::NO_SLOT }
                            | SendState::Withdrawn { slot: Rts::NO_SLOT }
                            | SendState::AwaitingAck
                    ) =>
            {
                send.state = SendState::Done;
                self.offered.retain(|&k| k != key);
                Ok(())
            }
            _ => Err(corrupt(src, format!("FIN for request {key}, which awaits no FIN from this rank"))),
        }
    }

    /// A receive was posted and an unexpected message matches it.
    pub(super) fn take_unexpected(&mut self, net: &Net, key: usize, at: matching::Slot, settings: &ProtoSettings) {
        let src = at.src;
        let arrival = self.unexpected.get(at);
        let env = Envelope { kind: Kind::Eager, ctx: arrival.ctx, tag: arrival.tag, src: arrival.src_comm };
        if let Body::Staged { total, data } = &arrival.body {
            if data.len() < *total {
                // Still collecting fragments: the receive takes over.
                let arrival = self.unexpected.remove(at);
                self.fins.extend(arrival.sync.map(|request| (src, request)));
                let Body::Staged { total, data } = arrival.body else { unreachable!() };
                self.begin_staging(key, status(&env, total), &data);
                self.staging_in[src] = Some(StagingTarget::Request(key));
                return;
            }
        }
        let arrival = self.unexpected.remove(at);
        self.fins.extend(arrival.sync.map(|request| (src, request)));
        match arrival.body {
            Body::Eager(bytes) | Body::Staged { data: bytes, .. } => {
                self.deliver(key, status(&env, bytes.len()), &bytes)
            }
            Body::Handover(owned) => self.deliver_owned(key, status(&env, owned.len()), owned),
            Body::Rts(rts) => self.accept_rendezvous(net, key, src, &env, rts, settings),
            Body::Pull { rts, first } => self.pull(key, src, &env, rts, &first),
        }
    }
}

/// Chunks of at least the configured size, and at most 64 per message so
/// that claiming stays cheap; page-rounded.
fn chunk_size(take: usize, settings: &ProtoSettings) -> u64 {
    take.div_ceil(64).max(settings.rdv_chunk).next_multiple_of(4096) as u64
}

pub(super) fn status(env: &Envelope, bytes: usize) -> Status {
    Status { source: env.src as usize, tag: env.tag, bytes }
}

/// The final state of a receive: done, or truncated to `cap` bytes.
pub(super) fn finished(status: Status, data: Option<OwnedBytes>, truncated_to: Option<usize>) -> RecvState {
    match truncated_to {
        None => RecvState::Done { status, data },
        Some(cap) => RecvState::Failed(Error::Truncated {
            source_rank: status.source,
            tag: status.tag,
            message_bytes: status.bytes,
            buffer_bytes: cap,
        }),
    }
}

pub(super) fn corrupt(src: usize, detail: String) -> Error {
    Error::Corrupt { source_rank: src, detail }
}
