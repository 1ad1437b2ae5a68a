//! Connections made on demand: the connection between two ranks is made
//! when one of them first sends to the other, by either side.
//!
//! A [`Pairing`] is what a rank's two halves of a link not yet connected
//! ([`LinkOut::pending`], [`LinkIn::pending`]) share with the threads of
//! its process that connect and accept. The sending half asks for a
//! connection ([`Pairing::request`]) on its first push, which it refuses
//! as a full link does until the connection is there; the threads
//! [`Pairing::deposit`] both halves of the connection made (or
//! [`Pairing::fail`] it), and the rank's halves take them.
//!
//! Both ranks of a pair may connect at once. The accepting side decides,
//! once the peer proved it holds the job's secret ([`Pairing::on_hello`]),
//! and the rule is the same on both sides, so exactly one connection
//! survives: the connection of the lower rank wins. An accepting side
//! declines a connection when it has one already, or when its own
//! connection, in flight, is the lower rank's; the higher rank accepts the
//! lower rank's connection even while its own is in flight, and its own
//! is then declined by the lower rank. [`Step`] is that rule alone, a
//! pure function checked by a property test over every interleaving.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::error::LinkError;
use crate::split::{LinkIn, LinkOut};

/// Where a pair's connection stands, seen from one rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairState {
    /// No connection, none asked for.
    Idle,
    /// This side's connection is in flight.
    Connecting,
    /// This side's connection was declined: the peer's is on its way.
    Awaiting,
    /// The peer's connection was accepted; its halves are being made.
    Accepting,
    /// The connection is made (its halves deposited).
    Ready,
    /// Connecting or accepting failed: the pair has no connection.
    Failed,
}

/// The rule of connections made on demand, from one rank's side (`me`)
/// of the pair with `peer`.
#[derive(Debug, Clone, Copy)]
pub struct Step {
    /// This side's world rank.
    pub me: u32,
    /// The peer's world rank.
    pub peer: u32,
}

impl Step {
    /// The rank wants to send: whether to start a connection, and the
    /// state after.
    pub fn on_request(self, state: PairState) -> (bool, PairState) {
        match state {
            PairState::Idle => (true, PairState::Connecting),
            other => (false, other),
        }
    }

    /// The peer's connection arrived, authenticated: whether to accept it,
    /// and the state after.
    pub fn on_hello(self, state: PairState) -> (bool, PairState) {
        match state {
            PairState::Idle => (true, PairState::Accepting),
            // The lower rank's connection wins: ours, in flight, loses to
            // the peer's if the peer is the lower rank.
            PairState::Connecting | PairState::Awaiting if self.peer < self.me => (true, PairState::Accepting),
            other => (false, other),
        }
    }

    /// This side's connection was accepted (`kept`) or declined: whether
    /// to keep it, and the state after.
    pub fn on_verdict(self, state: PairState, kept: bool) -> (bool, PairState) {
        match (state, kept) {
            (PairState::Connecting, true) => (true, PairState::Ready),
            (PairState::Connecting, false) => (false, PairState::Awaiting),
            // Accepted while the peer's was accepted here: cannot happen
            // under this rule (the lower rank declines the other), and a
            // second connection would reorder records: dropped.
            (other, _) => (false, other),
        }
    }
}

/// One rank's side of a pair whose connection is made on demand, shared
/// by the rank's link halves and the process's connecting threads.
pub struct Pairing {
    step: Step,
    /// Set once halves or a failure are deposited: the halves look at
    /// the rest only then (one load on their hot path).
    settled: AtomicBool,
    inner: Mutex<Inner>,
    /// Asks the process's connecting thread to connect this pair.
    ask: Box<dyn Fn(Step) + Send + Sync>,
}

#[derive(Default)]
struct Inner {
    state: Option<PairState>,
    out: Option<LinkOut>,
    inbound: Option<LinkIn>,
    failure: Option<LinkError>,
}

impl std::fmt::Debug for Pairing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pairing").field("step", &self.step).field("state", &self.state()).finish_non_exhaustive()
    }
}

impl Pairing {
    /// The side of rank `me` of its pair with rank `peer`; `ask` starts a
    /// connection (on another thread: it must not block).
    pub fn new(me: u32, peer: u32, ask: Box<dyn Fn(Step) + Send + Sync>) -> Pairing {
        Pairing { step: Step { me, peer }, settled: AtomicBool::new(false), inner: Mutex::default(), ask }
    }

    /// The pair's ranks.
    pub fn step(&self) -> Step {
        self.step
    }

    /// Where the pair's connection stands.
    pub fn state(&self) -> PairState {
        self.lock().state.unwrap_or(PairState::Idle)
    }

    /// The rank wants to send: starts a connection unless one is made or
    /// on its way.
    pub fn request(&self) {
        let start = self.advance(|step, state| step.on_request(state));
        if start {
            (self.ask)(self.step);
        }
    }

    /// The peer's connection arrived, authenticated: true to accept it
    /// (then [`Pairing::deposit`] or [`Pairing::fail`] follows).
    pub fn on_hello(&self) -> bool {
        self.advance(|step, state| step.on_hello(state))
    }

    /// This side's connection was accepted (`kept`) or declined: true to
    /// keep it (then [`Pairing::deposit`] or [`Pairing::fail`] follows).
    pub fn on_verdict(&self, kept: bool) -> bool {
        self.advance(|step, state| step.on_verdict(state, kept))
    }

    /// The connection is made: its halves, for the rank to take.
    pub fn deposit(&self, out: LinkOut, inbound: LinkIn) {
        let mut inner = self.lock();
        inner.state = Some(PairState::Ready);
        inner.out = Some(out);
        inner.inbound = Some(inbound);
        self.settled.store(true, Ordering::Release);
    }

    /// Connecting or accepting failed: the rank's sending half reports
    /// `error`. A pair with a connection already keeps it.
    pub fn fail(&self, error: LinkError) {
        let mut inner = self.lock();
        if inner.state == Some(PairState::Ready) {
            return;
        }
        inner.state = Some(PairState::Failed);
        inner.failure = Some(error);
        self.settled.store(true, Ordering::Release);
    }

    /// The sending half, once deposited (taken once), or the failure.
    pub(crate) fn take_out(&self) -> Option<Result<LinkOut, LinkError>> {
        if !self.settled.load(Ordering::Acquire) {
            return None;
        }
        let mut inner = self.lock();
        match inner.out.take() {
            Some(out) => Some(Ok(out)),
            None => inner.failure.take().map(Err),
        }
    }

    /// The receiving half, once deposited (taken once).
    pub(crate) fn take_inbound(&self) -> Option<LinkIn> {
        if !self.settled.load(Ordering::Acquire) {
            return None;
        }
        self.lock().inbound.take()
    }

    /// Applies `step` to the state; its verdict.
    fn advance(&self, step: impl FnOnce(Step, PairState) -> (bool, PairState)) -> bool {
        let mut inner = self.lock();
        let (verdict, next) = step(self.step, inner.state.unwrap_or(PairState::Idle));
        inner.state = Some(next);
        verdict
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// A message between the two sides of the model: the hello of the
    /// connection started by side `from`, or the verdict on it.
    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Message {
        Hello { from: usize },
        Verdict { to: usize, kept: bool },
    }

    /// Two sides of a pair, their states, the messages in flight and the
    /// connections each side holds (named by the side that started them).
    struct Model {
        steps: [Step; 2],
        states: [PairState; 2],
        flight: Vec<Message>,
        held: [Vec<usize>; 2],
    }

    impl Model {
        fn new(ranks: (u32, u32)) -> Model {
            Model {
                steps: [Step { me: ranks.0, peer: ranks.1 }, Step { me: ranks.1, peer: ranks.0 }],
                states: [PairState::Idle; 2],
                flight: Vec::new(),
                held: [Vec::new(), Vec::new()],
            }
        }

        fn request(&mut self, side: usize) {
            let (start, next) = self.steps[side].on_request(self.states[side]);
            self.states[side] = next;
            if start {
                self.flight.push(Message::Hello { from: side });
            }
        }

        fn deliver(&mut self, at: usize) {
            match self.flight.remove(at) {
                Message::Hello { from } => {
                    let side = 1 - from;
                    let (kept, next) = self.steps[side].on_hello(self.states[side]);
                    self.states[side] = next;
                    if kept {
                        // The halves are made and deposited at once.
                        self.states[side] = PairState::Ready;
                        self.held[side].push(from);
                    }
                    self.flight.push(Message::Verdict { to: from, kept });
                }
                Message::Verdict { to, kept } => {
                    let (keep, next) = self.steps[to].on_verdict(self.states[to], kept);
                    self.states[to] = next;
                    if keep {
                        self.held[to].push(to);
                    }
                }
            }
        }
    }

    proptest! {
        /// Whoever asks first, whatever order the messages arrive in, once
        /// a side asked and every message arrived both sides hold the same
        /// one connection, and when both sides asked before any hello
        /// arrived, it is the lower rank's.
        #[test]
        fn both_sides_end_with_the_same_single_connection(
            ranks in (0u32..8, 0u32..8).prop_filter("two ranks", |(a, b)| a != b),
            script in proptest::collection::vec((0usize..3, 0usize..4), 1..24),
            first in 0usize..2,
        ) {
            let mut model = Model::new(ranks);
            model.request(first);
            let mut both_before_any_hello = false;
            for (action, pick) in script {
                match action {
                    0 | 1 => {
                        let nothing_delivered = model.flight.len() == 1 && model.held.iter().all(Vec::is_empty)
                            && model.states[action] == PairState::Idle;
                        model.request(action);
                        both_before_any_hello |= nothing_delivered && model.flight.len() == 2;
                    }
                    _ if !model.flight.is_empty() => model.deliver(pick % model.flight.len()),
                    _ => {}
                }
            }
            while !model.flight.is_empty() {
                model.deliver(0);
            }
            prop_assert_eq!(model.states, [PairState::Ready; 2]);
            prop_assert_eq!(model.held[0].len(), 1, "side 0 holds {:?}", model.held[0]);
            prop_assert_eq!(&model.held[0], &model.held[1]);
            if both_before_any_hello {
                let lower = if ranks.0 < ranks.1 { 0 } else { 1 };
                prop_assert_eq!(model.held[0][0], lower, "the lower rank's connection wins");
            }
        }
    }
}
