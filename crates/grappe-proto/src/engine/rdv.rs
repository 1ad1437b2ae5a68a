//! Driving rendezvous transfers: both ends claim and copy chunks, or the
//! receiver copies alone and answers with a FIN.

use super::dispatch::finished;
use super::{Engine, Net};
use crate::rendezvous::Slot;
use crate::request::{Copying, RecvState, Request, SendState};
use crate::wire::{Envelope, Kind, Rts};
use crate::{Error, Result};

impl Engine {
    /// Copies what can be copied now and completes finished transfers.
    pub(super) fn advance_rendezvous(&mut self) -> bool {
        let mut moved = self.advance_receives();
        moved |= self.advance_sends();
        moved |= self.recycle_slots();
        moved |= self.push_fins();
        moved |= self.push_pulled();
        moved |= self.push_pull_requests();
        moved
    }

    fn advance_receives(&mut self) -> bool {
        let mut moved = false;
        let mut i = 0;
        while i < self.book.copying.len() {
            let key = self.book.copying[i];
            if self.copy_received(key, &mut moved) {
                self.book.copying.swap_remove(i);
                moved = true;
            } else {
                i += 1;
            }
        }
        moved
    }

    /// Copies what receive `key` (copying a rendezvous) can claim; true
    /// once the transfer is over and the receive finished. The caller
    /// takes `key` out of `copying`.
    pub(super) fn copy_received(&mut self, key: usize, moved: &mut bool) -> bool {
        let Request::Recv(recv) = &mut self.book.reqs[key] else { unreachable!("copying key is a receive") };
        let RecvState::Copying(copying) = &mut recv.state else { unreachable!("copying state") };
        let Some(outcome) = receive_chunks(&self.net, copying, moved) else { return false };
        let RecvState::Copying(copying) = std::mem::replace(&mut recv.state, RecvState::Posted) else { unreachable!() };
        if copying.slot.is_none() && outcome.is_ok() {
            self.book.fins.push((copying.sender, copying.request));
        }
        recv.state = match outcome {
            Ok(()) => finished(copying.status, copying.data, copying.truncated_to),
            Err(e) => RecvState::Failed(e),
        };
        true
    }

    /// Ends receive `key`, copying a rendezvous, without waiting for its
    /// sender: this rank copies every chunk still unclaimed, then waits
    /// for the chunk the sender may be copying into its buffer. The
    /// receive is finished on return; nobody writes into its buffer again.
    pub(super) fn finish_receive_alone(&mut self, key: usize) {
        let mut moved = false;
        loop {
            if self.copy_received(key, &mut moved) {
                self.book.copying.retain(|&k| k != key);
                return;
            }
            // Every chunk is claimed; the sender's last ones are in flight.
            self.net.wait_for_accessors();
            if self.copy_received(key, &mut moved) {
                self.book.copying.retain(|&k| k != key);
                return;
            }
            // The sender died in the middle of a chunk: that chunk never
            // ends. Fail the transfer (the next pass reports it).
            let Request::Recv(recv) = &self.book.reqs[key] else { unreachable!("copying key is a receive") };
            let RecvState::Copying(copying) = &recv.state else { unreachable!("copying state") };
            if let Some(slot) = copying.slot {
                self.net.slot(self.net.peers[copying.sender].on_host().local, slot).fail();
            }
        }
    }

    fn advance_sends(&mut self) -> bool {
        let mut moved = false;
        let mut i = 0;
        while i < self.book.offered.len() {
            let key = self.book.offered[i];
            if self.copy_sent(key, &mut moved) {
                self.book.offered.swap_remove(i);
                moved = true;
            } else {
                i += 1;
            }
        }
        moved
    }

    /// Copies what offered send `key` can claim; true once the transfer
    /// is over and the send finished (its slot then retires). The caller
    /// takes `key` out of `offered`.
    pub(super) fn copy_sent(&mut self, key: usize, moved: &mut bool) -> bool {
        let Request::Send(send) = &mut self.book.reqs[key] else { unreachable!("offered key is a send") };
        let (slot_index, withdrawn) = match send.state {
            SendState::Offered { slot } => (slot, false),
            SendState::Withdrawn { slot } => (slot, true),
            _ => unreachable!("offered state"),
        };
        if slot_index == Rts::NO_SLOT {
            return false; // completes when the FIN arrives
        }
        let slot = self.net.slot(self.net.me_local, slot_index);
        if slot.destination().is_none() {
            return false;
        }
        // A withdrawn send's buffer may be gone: it copies nothing.
        let error = match withdrawn {
            true => None,
            false => send_chunks(&self.net, send.dest, slot, send.data, moved).err(),
        };
        let Some(all_copied) = slot.outcome() else { return false };
        let (dest, pid) = (send.dest, self.net.peers[send.dest].on_host().pid);
        send.state = match (error, all_copied) {
            (Some(e), _) => SendState::Failed(e),
            (None, false) => SendState::Failed(peer_failed(dest, pid, "the receiver")),
            (None, true) => SendState::Done,
        };
        self.book.retiring.push(slot_index);
        true
    }

    /// Ends offered send `key` without waiting for its receiver, if the
    /// receiver has matched it: this rank copies every chunk still
    /// unclaimed, then waits for the chunk the receiver may be reading.
    /// False if the receiver has not matched it (nothing can end it here).
    pub(super) fn finish_send_alone(&mut self, key: usize) -> bool {
        let Request::Send(send) = &self.book.reqs[key] else { unreachable!("offered key is a send") };
        let SendState::Offered { slot } = send.state else { unreachable!("offered state") };
        if slot == Rts::NO_SLOT || self.net.slot(self.net.me_local, slot).destination().is_none() {
            return false;
        }
        let mut moved = false;
        loop {
            if self.copy_sent(key, &mut moved) {
                self.book.offered.retain(|&k| k != key);
                return true;
            }
            self.net.wait_for_accessors();
            if self.copy_sent(key, &mut moved) {
                self.book.offered.retain(|&k| k != key);
                return true;
            }
            // The receiver died in the middle of a chunk.
            self.net.slot(self.net.me_local, slot).fail();
        }
    }

    fn recycle_slots(&mut self) -> bool {
        let before = self.book.retiring.len();
        let (net, free) = (&self.net, &mut self.book.free_slots);
        self.book.retiring.retain(|&slot| {
            let recycled = net.slot(net.me_local, slot).try_recycle();
            if recycled {
                free.push(slot);
            }
            !recycled
        });
        before != self.book.retiring.len()
    }

    /// Sends the FINs of slot-less receives that completed; a full ring
    /// keeps them for the next pass.
    fn push_fins(&mut self) -> bool {
        let before = self.book.fins.len();
        let net = &mut self.net;
        self.book.fins.retain(|&(sender, request)| {
            let env = Envelope { kind: Kind::Fin, ctx: 0, tag: 0, src: 0 };
            let pushed = net.peers[sender].out.try_push(env.encode(), &request.to_le_bytes());
            if pushed {
                net.ring(sender);
            }
            !pushed
        });
        before != self.book.fins.len()
    }
}

/// Receiver side of one transfer: copies what it can claim. `Some` once
/// the transfer is over (every byte copied, or a failure).
fn receive_chunks(net: &Net, c: &mut Copying, moved: &mut bool) -> Option<Result<()>> {
    let route = net.peers[c.sender].on_host().route;
    let Some(slot_index) = c.slot else {
        // Alone: one copy of everything we take.
        // SAFETY: `dst` is our receive buffer, valid for `take` bytes.
        let out = unsafe { std::slice::from_raw_parts_mut(c.dst, c.take) };
        // SAFETY: the sender keeps its buffer until our FIN, or until it
        // stops running, which `touching` checks for.
        let copied = net.touching(c.sender, || unsafe { route.get(out, c.source, 0) });
        *moved = true;
        return Some(copied.and_then(|copied| copied.map_err(|e| net.copy_error(c.sender, e))));
    };
    let slot = net.slot(net.peers[c.sender].on_host().local, slot_index);
    let copied = net.touching(c.sender, || {
        while let Some(range) = slot.claim() {
            let (start, len) = (range.start as usize, (range.end - range.start) as usize);
            // SAFETY: our buffer, valid for `take` bytes; this chunk is ours.
            let out = unsafe { std::slice::from_raw_parts_mut(c.dst.add(start), len) };
            // SAFETY: the sender keeps its buffer until the copy completes,
            // or until it stops running, which `touching` checks for.
            match unsafe { route.get(out, c.source, start) } {
                Ok(()) if slot.copied(len as u64) => net.ring(c.sender),
                Ok(()) => {}
                Err(e) => return Err(net.copy_error(c.sender, e)),
            }
            *moved = true;
        }
        Ok(())
    });
    let error = settle_refusal(slot, copied);
    if error.is_some() {
        fail_transfer(net, slot);
    }
    let all_copied = slot.outcome()?;
    slot.release();
    net.ring(c.sender);
    Some(match (error, all_copied) {
        (Some(e), _) => Err(e),
        (None, false) => Err(peer_failed(c.sender, net.peers[c.sender].on_host().pid, "the sender")),
        (None, true) => Ok(()),
    })
}

/// Sender side: copies every chunk it can claim into the receiver's
/// buffer; `moved` is set if it copied any.
fn send_chunks(net: &Net, dest: usize, slot: &Slot, data: *const u8, moved: &mut bool) -> Result<(), Error> {
    let Some(dst) = slot.destination() else { return Ok(()) };
    let route = net.peers[dest].on_host().route;
    let copied = net.touching(dest, || {
        while let Some(range) = slot.claim() {
            let (start, len) = (range.start as usize, (range.end - range.start) as usize);
            // SAFETY: the poster keeps `data` valid until completion; the
            // chunk lies within the message.
            let src = unsafe { std::slice::from_raw_parts(data.add(start), len) };
            // SAFETY: the receiver owns `dst` until the transfer completes,
            // or until it stops running, which `touching` checks for; it
            // does not touch this chunk, which we claimed.
            match unsafe { route.put(src, dst, start) } {
                Ok(()) if slot.copied(len as u64) => net.ring(dest),
                Ok(()) => {}
                Err(e) => return Err(net.copy_error(dest, e)),
            }
            *moved = true;
        }
        Ok(())
    });
    match settle_refusal(slot, copied) {
        None => Ok(()),
        Some(e) => {
            fail_transfer(net, slot);
            net.ring(dest);
            Err(e)
        }
    }
}

/// Ends a transfer that failed on this side. The other side may still be
/// copying a chunk, and would go on claiming more, into or out of a
/// buffer that is about to be given back: this side claims every chunk
/// left (and copies none), then waits for the other's chunk to end.
fn fail_transfer(net: &Net, slot: &Slot) {
    slot.fail();
    while slot.claim().is_some() {}
    net.wait_for_accessors();
}

/// The error of a chunk copy, if it failed: a copy refused because the
/// other side no longer runs is one only if bytes are left that nobody
/// will copy (a side that finalized after the last byte refuses nothing).
fn settle_refusal(slot: &Slot, copied: Result<Result<()>>) -> Option<Error> {
    match copied {
        Ok(copied) => copied.err(),
        Err(_) if slot.outcome().is_some() => None,
        Err(refused) => Some(refused),
    }
}

fn peer_failed(rank: usize, pid: u32, who: &str) -> Error {
    Error::PeerDied { rank, pid, cause: format!("{who} reported a failed copy during a rendezvous") }
}
