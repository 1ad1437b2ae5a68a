//! Receiver-driven rendezvous between hosts ("pull"). A message to a rank
//! of another host of at least `net_pull_min` bytes waits in its sender's
//! buffer, announced by a slot-less RTS (hosts share no memory) that
//! carries its first bytes, as many as a fragment holds. Once a receive
//! takes the RTS, its rank sends a `Pull` naming the sender's request, the
//! receive and the bytes it has; the sender then pushes the rest in
//! `PullData` records naming the receive, copied on arrival straight into
//! the receive's buffer. The first bytes move during the pull's round
//! trip, which a receive posted first would otherwise spend idle.
//!
//! Staged messages go at once, and those not received yet are copied into
//! buffers of the receiver (with a page fault every 4 KiB of a fresh
//! buffer), as many as the sender sends ahead. A pulled one costs a round
//! trip before its bytes move, which its size amortizes, and no buffer:
//! a sender cannot run ahead of its receiver with large messages.
//!
//! Records of different pulled messages may interleave, with each other
//! and with a staged message's fragments: each names its receive.

use super::dispatch::{corrupt, status};
use super::{Book, Engine, Peer};
use crate::Result;
use crate::request::{Push, RecvState, Request, SendReq, SendState};
use crate::wire::{Envelope, Kind, Rts, Words};

const WORD: usize = 8;

/// Pushes the RTS of `send` (request `key`), which its receiver will
/// pull, with the message's first bytes.
pub(super) fn offer_to_pull(key: usize, send: &SendReq, peer: &mut Peer) -> Push {
    let rts = Rts { slot: Rts::NO_SLOT, len: send.len as u64, addr: 0, request: key as u64 };
    let env = Envelope { kind: Kind::Rts, ..send.env };
    let mut words = [0u8; Rts::BYTES];
    rts.write(&mut words);
    let first = send.len.min(peer.out.max_payload() / 2 - Rts::BYTES);
    // SAFETY: the poster keeps `data` valid until completion.
    let first = unsafe { std::slice::from_raw_parts(send.data, first) };
    match peer.out.try_push_parts(env.encode(), &words, first) {
        true => Push::Offered(Rts::NO_SLOT),
        false => Push::Blocked,
    }
}

/// The offer of a message to pull from world rank `src`, of another host:
/// its RTS and the first bytes that came with it.
pub(super) fn read_offer(src: usize, payload: &[u8]) -> Result<(Rts, &[u8])> {
    let (words, first) = payload.split_at_checked(Rts::BYTES).unwrap_or((payload, &[]));
    match Rts::read(words) {
        Some(rts) if rts.slot == Rts::NO_SLOT && first.len() as u64 <= rts.len => Ok((rts, first)),
        _ => Err(corrupt(
            src,
            format!(
                "an offer of {} bytes from another host that is no RTS, names a slot or holds more than its message",
                payload.len()
            ),
        )),
    }
}

/// Pushes the bytes of pulled `send` from byte `sent` on, for the receive
/// `key`, while the link takes them; the bytes out after.
fn push_data(send: &SendReq, key: u64, peer: &mut Peer, mut sent: usize) -> usize {
    // Half the link's largest record, as staged fragments: several in flight.
    let room = peer.out.max_payload() / 2 - WORD;
    let env = Envelope { kind: Kind::PullData, ..send.env };
    let head = key.to_le_bytes();
    while sent < send.len {
        let n = (send.len - sent).min(room);
        // SAFETY: the poster keeps `data` valid until completion (or the
        // request owns a copy of it, see `SendReq::own_data`).
        let bytes = unsafe { std::slice::from_raw_parts(send.data.add(sent), n) };
        if !peer.out.try_push_parts(env.encode(), &head, bytes) {
            break;
        }
        sent += n;
    }
    sent
}

impl Engine {
    /// Pushes what the pulled sends can push now, and completes those
    /// whose bytes are all out; true if anything moved.
    pub(super) fn push_pulled(&mut self) -> bool {
        let mut moved = false;
        let mut i = 0;
        while i < self.book.pulled.len() {
            let key = self.book.pulled[i];
            let Request::Send(send) = &mut self.book.reqs[key] else { unreachable!("pulled key is a send") };
            let SendState::Pulled { key: receive, sent } = send.state else { unreachable!("pulled state") };
            let outcome = match self.net.broken_link(send.dest) {
                Some(broken) => Err(broken),
                None => Ok(push_data(send, receive, &mut self.net.peers[send.dest], sent)),
            };
            match outcome {
                Ok(now) if now < send.len => {
                    moved |= now > sent;
                    send.state = SendState::Pulled { key: receive, sent: now };
                    i += 1;
                    continue;
                }
                Ok(_) => send.state = SendState::Done,
                Err(broken) => send.state = SendState::Failed(broken),
            }
            send.owned = None;
            self.book.pulled.swap_remove(i);
            moved = true;
        }
        moved
    }

    /// Sends the `Pull`s of receives that took an RTS from another host; a
    /// full link keeps them for the next pass. True if any went.
    pub(super) fn push_pull_requests(&mut self) -> bool {
        let before = self.book.pulls.len();
        let net = &mut self.net;
        self.book.pulls.retain(|&(sender, request, receive, from)| {
            let env = Envelope { kind: Kind::Pull, ctx: 0, tag: 0, src: 0 };
            let mut words = [0u8; 3 * WORD];
            for (at, word) in words.chunks_exact_mut(WORD).zip([request, receive, from]) {
                at.copy_from_slice(&word.to_le_bytes());
            }
            !net.peers[sender].out.try_push(env.encode(), &words)
        });
        before != self.book.pulls.len()
    }
}

impl Book {
    /// Receive `key` took the RTS of a message of world rank `src`, of
    /// another host, with its `first` bytes: it waits for the rest, which
    /// a `Pull` asks for (sent even for none: the send ends with it).
    pub(super) fn pull(&mut self, key: usize, src: usize, env: &Envelope, rts: Rts, first: &[u8]) {
        if !self.begin_staging(key, status(env, rts.len as usize), first) {
            self.pulling.push((key, src));
        }
        self.pulls.push((src, rts.request, key as u64, first.len() as u64));
    }

    /// A `Pull` from world rank `src`: a receive of it took our send
    /// named in the payload, which now goes.
    pub(super) fn pull_requested(&mut self, src: usize, payload: &[u8]) -> Result<()> {
        let word = |i: usize| {
            payload.get(i * WORD..(i + 1) * WORD).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
        };
        let (Some(request), Some(receive), Some(from), 24) = (word(0), word(1), word(2), payload.len()) else {
            return Err(corrupt(src, format!("a pull of {} bytes, not 24", payload.len())));
        };
        match self.reqs.get_mut(request as usize) {
            Some(Request::Send(send))
                if send.dest == src
                    && matches!(send.state, SendState::Offered { slot: Rts::NO_SLOT })
                    && from as usize <= send.len =>
            {
                send.state = SendState::Pulled { key: receive, sent: from as usize };
                self.offered.retain(|&key| key != request as usize);
                self.pulled.push(request as usize);
                Ok(())
            }
            _ => Err(corrupt(src, format!("a pull of send {request}, which offered it nothing"))),
        }
    }

    /// A `PullData` record from world rank `src`: the next bytes of the
    /// message a receive of ours pulls.
    pub(super) fn pulled_data(&mut self, src: usize, payload: &[u8]) -> Result<()> {
        let (key, bytes) = payload
            .split_first_chunk::<WORD>()
            .ok_or_else(|| corrupt(src, "pulled data shorter than its receive's key".into()))?;
        let key = u64::from_le_bytes(*key) as usize;
        let Some(at) = self.pulling.iter().position(|&pulling| pulling == (key, src)) else {
            return Err(corrupt(src, format!("pulled data for receive {key}, which pulls nothing from it")));
        };
        let Request::Recv(recv) = &self.reqs[key] else { unreachable!("a pulling key is a receive") };
        let RecvState::Staging { status, got, .. } = &recv.state else { unreachable!("a pulling receive stages") };
        if got + bytes.len() > status.bytes {
            let total = status.bytes;
            return Err(corrupt(src, format!("pulled data past the {total} bytes its message announced")));
        }
        if self.append_fragment(key, bytes) {
            self.pulling.swap_remove(at);
        }
        Ok(())
    }
}
