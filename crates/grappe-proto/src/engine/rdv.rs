//! Driving rendezvous transfers: both ends claim and copy chunks, or the
//! receiver copies alone and answers with a FIN.

use grappe_fabric::put::RemoteRegion;

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
        moved
    }

    fn advance_receives(&mut self) -> bool {
        let mut moved = false;
        let mut i = 0;
        while i < self.book.copying.len() {
            let key = self.book.copying[i];
            let Request::Recv(recv) = &mut self.book.reqs[key] else { unreachable!("copying key is a receive") };
            let RecvState::Copying(copying) = &mut recv.state else { unreachable!("copying state") };
            let Some(outcome) = receive_chunks(&self.net, copying, &mut moved) else {
                i += 1;
                continue;
            };
            let RecvState::Copying(copying) = std::mem::replace(&mut recv.state, RecvState::Posted) else {
                unreachable!()
            };
            if copying.slot.is_none() && outcome.is_ok() {
                self.book.fins.push((copying.sender, copying.request));
            }
            recv.state = match outcome {
                Ok(()) => finished(copying.status, copying.data, copying.truncated_to),
                Err(e) => RecvState::Failed(e),
            };
            self.book.copying.swap_remove(i);
            moved = true;
        }
        moved
    }

    fn advance_sends(&mut self) -> bool {
        let mut moved = false;
        let mut i = 0;
        while i < self.book.offered.len() {
            let key = self.book.offered[i];
            let Request::Send(send) = &mut self.book.reqs[key] else { unreachable!("offered key is a send") };
            let SendState::Offered { slot: slot_index } = send.state else { unreachable!("offered state") };
            if slot_index == Rts::NO_SLOT {
                i += 1; // completes when the FIN arrives
                continue;
            }
            let slot = self.net.slot(self.net.me_local, slot_index);
            let Some(dst) = slot.destination() else {
                i += 1;
                continue;
            };
            let error = match send_chunks(&self.net, send.dest, slot, send.data, dst) {
                Ok(copied) => {
                    moved |= copied;
                    None
                }
                Err(e) => Some(e),
            };
            let Some(all_copied) = slot.outcome() else {
                i += 1;
                continue;
            };
            let (dest, pid) = (send.dest, self.net.peers[send.dest].pid);
            send.state = match (error, all_copied) {
                (Some(e), _) => SendState::Failed(e),
                (None, false) => SendState::Failed(peer_failed(dest, pid, "the receiver")),
                (None, true) => SendState::Done,
            };
            self.book.retiring.push(slot_index);
            self.book.offered.swap_remove(i);
            moved = true;
        }
        moved
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
    let route = net.peers[c.sender].route;
    let Some(slot_index) = c.slot else {
        // Alone: one copy of everything we take.
        // SAFETY: `dst` is our receive buffer, valid for `take` bytes.
        let out = unsafe { std::slice::from_raw_parts_mut(c.dst, c.take) };
        // SAFETY: the sender keeps its buffer until our FIN.
        let copied = unsafe { route.get(out, c.source, 0) };
        *moved = true;
        return Some(copied.map_err(|e| net.copy_error(c.sender, e)));
    };
    let slot = net.slot(net.peers[c.sender].local, slot_index);
    let mut error = None;
    while let Some(range) = slot.claim() {
        let (start, len) = (range.start as usize, (range.end - range.start) as usize);
        // SAFETY: our buffer, valid for `take` bytes; this chunk is ours.
        let out = unsafe { std::slice::from_raw_parts_mut(c.dst.add(start), len) };
        // SAFETY: the sender keeps its buffer until the copy completes.
        match unsafe { route.get(out, c.source, start) } {
            Ok(()) if slot.copied(len as u64) => net.ring(c.sender),
            Ok(()) => {}
            Err(e) => {
                slot.fail();
                error = Some(net.copy_error(c.sender, e));
                break;
            }
        }
        *moved = true;
    }
    let all_copied = slot.outcome()?;
    slot.release();
    net.ring(c.sender);
    Some(match (error, all_copied) {
        (Some(e), _) => Err(e),
        (None, false) => Err(peer_failed(c.sender, net.peers[c.sender].pid, "the sender")),
        (None, true) => Ok(()),
    })
}

/// Sender side: copies every chunk it can claim into the receiver's
/// buffer. True if it copied any.
fn send_chunks(net: &Net, dest: usize, slot: &Slot, data: *const u8, dst: RemoteRegion) -> Result<bool, Error> {
    let route = net.peers[dest].route;
    let mut copied = false;
    while let Some(range) = slot.claim() {
        let (start, len) = (range.start as usize, (range.end - range.start) as usize);
        // SAFETY: the poster keeps `data` valid until completion; the
        // chunk lies within the message.
        let src = unsafe { std::slice::from_raw_parts(data.add(start), len) };
        // SAFETY: the receiver owns `dst` until the transfer completes and
        // does not touch this chunk, which we claimed.
        match unsafe { route.put(src, dst, start) } {
            Ok(()) if slot.copied(len as u64) => net.ring(dest),
            Ok(()) => {}
            Err(e) => {
                slot.fail();
                net.ring(dest);
                return Err(net.copy_error(dest, e));
            }
        }
        copied = true;
    }
    Ok(copied)
}

fn peer_failed(rank: usize, pid: u32, who: &str) -> Error {
    Error::PeerDied { rank, pid, cause: format!("{who} reported a failed copy during a rendezvous") }
}
