//! Probing the peer a collective call waits for (see [`CallBoard`]).

use std::sync::Arc;

use super::dispatch::corrupt;
use super::{Book, Engine, Net};
use crate::request::{RecvState, Request, SendState};
use crate::wire::{Envelope, Kind, Rts, Words};
use crate::{CallBoard, Mismatch, Result};

/// The 4 words of an answer, as a payload.
struct Answer([u64; 4]);

impl Words for Answer {
    const BYTES: usize = 32;
    fn write(&self, out: &mut [u8]) {
        for (chunk, w) in out.chunks_exact_mut(8).zip(self.0) {
            chunk.copy_from_slice(&w.to_le_bytes());
        }
    }
    fn read(bytes: &[u8]) -> Option<Self> {
        let word = |i: usize| Some(u64::from_le_bytes(bytes.get(i * 8..i * 8 + 8)?.try_into().ok()?));
        Some(Answer([word(0)?, word(1)?, word(2)?, word(3)?]))
    }
}

/// Probes sent and not answered yet: (context, world rank). A peer busy
/// outside the runtime for minutes gets one probe per waiter, not one per
/// waiter and sleep.
#[derive(Default)]
pub(super) struct Outstanding(Vec<(u32, usize)>);

/// What dispatching records left for the engine to send or do.
#[derive(Default)]
pub(super) struct Owed {
    /// Answers to probes: (world rank, context, this rank in its communicator, words).
    answers: Vec<(usize, u32, u32, [u64; 4])>,
    /// Mismatches shown by answers: (context, why).
    strays: Vec<(u32, Mismatch)>,
}

impl Owed {
    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        self.answers.is_empty() && self.strays.is_empty()
    }
}

impl Engine {
    /// Lets peers ask where this rank stands in the collective calls of
    /// context `ctx`, and lets this rank judge their answers, with `board`.
    pub fn register_board(&mut self, ctx: u32, board: Arc<dyn CallBoard>) {
        self.book.boards.retain(|(c, _)| *c != ctx);
        self.book.boards.push((ctx, board));
    }

    /// Forgets the board of context `ctx` (its communicator is gone):
    /// probes of it go unanswered.
    pub fn unregister_board(&mut self, ctx: u32) {
        self.book.boards.retain(|(c, _)| *c != ctx);
    }

    /// After a sleep that nobody cut short in a wait: asks the peer of
    /// every receive of a collective context that waits for its message,
    /// and of every send of one that waits for its receiver, where it
    /// stands (once per peer and context, and not again before it
    /// answered). All of them, not only the one waited for: a round of
    /// requests is waited for one after the other, and the stalled one may
    /// come later.
    pub(super) fn probe_stalled_peers(&mut self) {
        if self.book.boards.is_empty() {
            return;
        }
        let mut peers: Vec<(u32, usize)> = Vec::new();
        for (_, request) in self.book.reqs.iter() {
            let stalled = match request {
                Request::Recv(recv) if matches!(recv.state, RecvState::Posted) => recv.src.map(|src| (recv.ctx, src)),
                Request::Send(send)
                    if matches!(send.state, SendState::Queued | SendState::Offered { .. } | SendState::AwaitingAck) =>
                {
                    Some((send.env.ctx, send.dest))
                }
                _ => None,
            };
            if let Some(peer) = stalled.filter(|peer| !peers.contains(peer) && !self.book.probing.0.contains(peer)) {
                peers.push(peer);
            }
        }
        for (ctx, peer) in peers {
            if let Some(board) = self.book.board(ctx) {
                let env = Envelope { kind: Kind::Probe, ctx, tag: 0, src: board.rank() as u32 };
                self.send_control(peer, env, Vec::new());
                self.book.probing.0.push((ctx, peer));
            }
        }
    }

    /// Sends the answers that dispatching owes and revokes the contexts
    /// whose answers showed a mismatch.
    pub(super) fn settle_owed(&mut self) {
        let owed = std::mem::take(&mut self.book.owed);
        for (dest, ctx, me, words) in owed.answers {
            let mut payload = vec![0; Answer::BYTES];
            Answer(words).write(&mut payload);
            self.send_control(dest, Envelope { kind: Kind::ProbeReply, ctx, tag: 0, src: me }, payload);
        }
        for (ctx, why) in owed.strays {
            if self.book.revocation(ctx).is_some() {
                continue;
            }
            if let Some(board) = self.book.board(ctx) {
                self.revoke(ctx, &why, board.members(), board.rank() as u32);
            }
        }
    }
}

impl Book {
    pub(super) fn board(&self, ctx: u32) -> Option<Arc<dyn CallBoard>> {
        self.boards.iter().find(|(c, _)| *c == ctx).map(|(_, board)| board.clone())
    }

    /// A probe from world rank `src` for context `ctx`: answered after the
    /// dispatch, if this rank has a board for it.
    pub(super) fn probed(&mut self, src: usize, ctx: u32) {
        if let Some(board) = self.board(ctx) {
            self.owed.answers.push((src, ctx, board.rank() as u32, board.current()));
        }
    }

    /// An answer from world rank `src` (rank `src_comm` of its
    /// communicator) about context `ctx`.
    pub(super) fn answered(&mut self, net: &Net, src: usize, src_comm: u32, ctx: u32, payload: &[u8]) -> Result<()> {
        let Answer(words) = Answer::read(payload).ok_or_else(|| corrupt(src, "short probe answer".into()))?;
        self.probing.0.retain(|&probe| probe != (ctx, src));
        let Some(board) = self.board(ctx) else { return Ok(()) };
        if let Some(why) = board.stray(src_comm as usize, words, self.awaits(net, ctx, src)) {
            self.owed.strays.push((ctx, why));
        }
        Ok(())
    }

    /// True if this rank waits for world rank `peer` on context `ctx`, in
    /// a way that its answer, received after everything it sent before,
    /// settles: a receive from it still without a message, or a send to it
    /// that it has not taken (still queued, or offered in a slot it has not
    /// matched). A slot-less offer is left out: its receiver may be copying
    /// it, and says so only with a FIN that can follow the answer.
    fn awaits(&self, net: &Net, ctx: u32, peer: usize) -> bool {
        self.reqs.iter().any(|(_, request)| match request {
            Request::Recv(recv) => matches!(recv.state, RecvState::Posted) && recv.ctx == ctx && recv.src == Some(peer),
            Request::Send(send) if send.env.ctx == ctx && send.dest == peer => match send.state {
                SendState::Queued => true,
                SendState::Offered { slot } => {
                    slot != Rts::NO_SLOT && net.slot(net.me_local, slot).destination().is_none()
                }
                _ => false,
            },
            Request::Send(_) | Request::Collective(_) => false,
        })
    }
}
