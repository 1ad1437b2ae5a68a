//! Staged transfers: large messages cut into fragments that travel through
//! the mailbox, for process pairs where cross-memory attach is refused
//! (and, later, for network backends). Two copies, pipelined: the sender
//! fills fragments while the receiver empties earlier ones.
//!
//! A staged message is one `FragFirst` record (total length, first bytes)
//! followed by `Frag` records. The sender pushes nothing else to that
//! receiver until the last fragment is out, so the receiver attaches every
//! `Frag` to the message begun by the last `FragFirst` from that sender.

use super::dispatch::{corrupt, finished, status};
use super::{Book, Peer, StagingTarget};
use crate::matching::Body;
use crate::request::{Push, RecvState, Request, SendReq};
use crate::wire::{Envelope, Kind};
use crate::{OwnedBytes, RecvTarget, Result, Status};

const TOTAL_BYTES: usize = 8;
/// A synchronous sender's request id, ahead of its first fragment.
const REQUEST_BYTES: usize = 8;

/// Pushes fragments of `send` from byte `sent` on, as long as the ring
/// takes them. A synchronous send (`sync`: its request id) names itself in
/// its first fragment and, once all are out, awaits the receiver's FIN.
pub(super) fn push_fragments(send: &SendReq, peer: &mut Peer, mut sent: usize, sync: Option<u64>) -> Push {
    let room = peer.out.max_payload() / 2;
    while sent < send.len {
        // SAFETY: the poster keeps `data` valid until completion.
        let rest = unsafe { std::slice::from_raw_parts(send.data.add(sent), send.len - sent) };
        let pushed = if sent == 0 {
            let id = sync.map_or(0, |_| REQUEST_BYTES);
            let n = rest.len().min(room - TOTAL_BYTES - id);
            let kind = if sync.is_some() { Kind::SyncFragFirst } else { Kind::FragFirst };
            let env = Envelope { kind, ..send.env };
            let mut head = [0u8; REQUEST_BYTES + TOTAL_BYTES];
            if let Some(request) = sync {
                head[..id].copy_from_slice(&request.to_le_bytes());
            }
            head[id..id + TOTAL_BYTES].copy_from_slice(&(send.len as u64).to_le_bytes());
            // In two parts: a network link writes the data from the
            // sender's buffer, not through a copy joining it to its head.
            peer.out.try_push_parts(env.encode(), &head[..id + TOTAL_BYTES], &rest[..n]).then_some(n)
        } else {
            let n = rest.len().min(room);
            let env = Envelope { kind: Kind::Frag, ..send.env };
            peer.out.try_push(env.encode(), &rest[..n]).then_some(n)
        };
        match pushed {
            Some(n) => sent += n,
            None if sent == 0 => return Push::Blocked,
            None => return Push::Partial(sent),
        }
    }
    match sync {
        Some(_) => Push::AwaitingAck,
        None => Push::Finished,
    }
}

impl Book {
    /// A `FragFirst` record arrived from `src`.
    /// `sync`: the request id of a synchronous sender, owed a FIN once a
    /// receive takes the message.
    pub(super) fn first_fragment(
        &mut self,
        src: usize,
        env: &Envelope,
        payload: &[u8],
        sync: Option<u64>,
    ) -> Result<()> {
        let total = payload
            .get(..TOTAL_BYTES)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")) as usize)
            .ok_or_else(|| corrupt(src, "first fragment shorter than its length field".into()))?;
        let first = &payload[TOTAL_BYTES..];
        if first.len() > total {
            return Err(corrupt(src, format!("first fragment of {} bytes for a {total}-byte message", first.len())));
        }
        match self.take_posted(env.ctx, src, env.tag) {
            Some(key) => {
                self.fins.extend(sync.map(|request| (src, request)));
                if !self.begin_staging(key, status(env, total), first) {
                    self.staging_in[src] = Some(StagingTarget::Request(key));
                }
            }
            None => {
                let mut data = Vec::with_capacity(total);
                data.extend_from_slice(first);
                if data.len() < total {
                    self.staging_in[src] = Some(StagingTarget::Unexpected);
                }
                self.unexpected.push_sync(src, env.ctx, env.tag, env.src, Body::Staged { total, data }, sync);
            }
        }
        Ok(())
    }

    /// A `Frag` record arrived from `src`.
    pub(super) fn next_fragment(&mut self, src: usize, payload: &[u8]) -> Result<()> {
        match self.staging_in[src] {
            Some(StagingTarget::Request(key)) => {
                if self.append_fragment(key, payload) {
                    self.staging_in[src] = None;
                }
            }
            Some(StagingTarget::Unexpected) => {
                let arrival = self
                    .unexpected
                    .staging_tail(src)
                    .ok_or_else(|| corrupt(src, "fragment for a message no longer collecting".into()))?;
                let Body::Staged { total, data } = &mut arrival.body else { unreachable!("staging tail") };
                if data.len() + payload.len() > *total {
                    return Err(corrupt(src, format!("fragments exceed the announced {total} bytes")));
                }
                data.extend_from_slice(payload);
                if data.len() == *total {
                    self.staging_in[src] = None;
                }
            }
            None => return Err(corrupt(src, "fragment without a first fragment".into())),
        }
        Ok(())
    }

    /// Receive `key` starts collecting a staged message with `first`
    /// bytes already in hand. True if that completed it.
    pub(super) fn begin_staging(&mut self, key: usize, status: Status, first: &[u8]) -> bool {
        let Request::Recv(recv) = &mut self.reqs[key] else { unreachable!("staging key is a receive") };
        let data = match recv.target {
            RecvTarget::Buffer { .. } => None,
            RecvTarget::Allocate { align } => Some(OwnedBytes::alloc(status.bytes, align)),
        };
        recv.state = RecvState::Staging { status, got: 0, data };
        self.append_fragment(key, first)
    }

    /// Copies a fragment into receive `key`; true if the message is complete.
    pub(super) fn append_fragment(&mut self, key: usize, bytes: &[u8]) -> bool {
        let Request::Recv(recv) = &mut self.reqs[key] else { unreachable!("staging key is a receive") };
        let RecvState::Staging { status, got, data } = &mut recv.state else { unreachable!("staging state") };
        let (dst, cap) = match (recv.target, data.as_mut()) {
            (RecvTarget::Buffer { ptr, cap }, _) => (ptr, cap),
            (RecvTarget::Allocate { .. }, Some(owned)) => (owned.as_mut_slice().as_mut_ptr(), status.bytes),
            (RecvTarget::Allocate { .. }, None) => unreachable!("allocated at start"),
        };
        let n = bytes.len().min(cap.saturating_sub(*got));
        if n > 0 {
            // SAFETY: the receive buffer is valid for `cap` bytes until
            // completion and `got + n <= cap`.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst.add(*got), n) };
        }
        *got += bytes.len();
        if *got < status.bytes {
            return false;
        }
        let (status, data) = (*status, data.take());
        recv.state = finished(status, data, (status.bytes > cap).then_some(cap));
        true
    }
}
