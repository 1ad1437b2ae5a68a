//! Calls that failed because a peer died or the job was stopped
//! (`grappe_trace::Body::failed`): where each survivor of a failed rank
//! was stuck, and for how long. `check` lists them, the profile notes
//! them; neither counts them as a problem of the trace, which recorded
//! them faithfully.
//!
//! A `sendrecv` is two records (a send, then the receive marked as its
//! second half): it failed if either half did, and is one failed call.

use std::fmt;

use grappe_trace::{ANY, Body, Event, EventKind, Site};
use rustc_hash::FxHashMap;
use serde::Serialize;

use crate::calls::CallType;

/// One failed call.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FailedCall {
    /// Its rank.
    pub rank: u32,
    /// What it was (`recv`, `sendrecv`, `barrier`...).
    pub call: CallType,
    /// When it started, global ns.
    pub start: u64,
    /// When it failed, global ns.
    pub end: u64,
    /// The rank it waited on: the destination, or the source asked for
    /// ([`ANY`]: any source).
    pub peer: u32,
    /// How `peer` stands to the call.
    pub relation: Relation,
    /// Where the program made it.
    pub site: Option<Site>,
}

impl FailedCall {
    /// The failed call `event` records (one half of a sendrecv: the call).
    fn of(event: &Event) -> FailedCall {
        let call = match event.body {
            Body::Recv { sendrecv: true, .. } => CallType::Sendrecv,
            ref body => CallType::of(body).unwrap_or(CallType::Call(body.kind())),
        };
        let (relation, peer) = match event.body {
            Body::Send { dest, .. } => (Relation::To, dest),
            Body::Recv { sendrecv: true, src, .. } => (Relation::With, src),
            Body::Recv { src, .. } | Body::Probe { src, .. } | Body::Iprobe { src, .. } => (Relation::From, src),
            Body::Wait { completion, .. } if completion.is_recv => (Relation::From, completion.src),
            Body::Wait { completion, .. } => (Relation::To, completion.src),
            _ => (Relation::None, ANY),
        };
        let (rank, start, end, site) = (event.rank, event.start, event.end, event.site);
        FailedCall { rank, call, start, end, peer, relation, site }
    }

    /// A sendrecv, from its two halves: the peer of the half that failed
    /// (the receive's if both did).
    fn sendrecv(send: &Event, recv: &Event) -> FailedCall {
        let half = if recv.body.failed() { recv } else { send };
        let start = send.start.min(recv.start);
        FailedCall { call: CallType::Sendrecv, start, relation: Relation::With, ..FailedCall::of(half) }
    }

    /// How long it waited before it failed, ns.
    pub fn duration_ns(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }

    /// `rank 0: recv from rank 2 (src/main.rs:12:9)`.
    pub fn what(&self) -> What<'_> {
        What(self)
    }
}

/// How a failed call's peer stands to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Relation {
    /// No one peer (a collective, a test).
    None,
    /// The destination of a send (or of a waited-for send).
    To,
    /// The source a receive, probe or wait asked for.
    From,
    /// The peer of a sendrecv (the source if its receive failed, else the
    /// destination).
    With,
}

/// See [`FailedCall::what`].
pub struct What<'a>(&'a FailedCall);

impl fmt::Display for What<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let call = self.0;
        write!(f, "rank {}: {}", call.rank, call.call.name())?;
        // A wait is for a request: say which.
        let wait = call.call == CallType::Call(EventKind::Wait);
        let relation = match call.relation {
            Relation::None => None,
            Relation::To if wait => Some("for a send to"),
            Relation::From if wait => Some("for a receive from"),
            Relation::To => Some("to"),
            Relation::From => Some("from"),
            Relation::With => Some("with"),
        };
        match (relation, call.peer) {
            (None, _) => {}
            (Some(relation), ANY) => write!(f, " {relation} any rank")?,
            (Some(relation), peer) => write!(f, " {relation} rank {peer}")?,
        }
        if let Some(site) = call.site {
            write!(f, " ({})", site.text())?;
        }
        Ok(())
    }
}

/// The failed calls of a stream: fed every event in order, it counts them
/// and keeps the first few.
#[derive(Debug)]
pub struct FailedCalls {
    count: u64,
    examples: Vec<FailedCall>,
    keep: usize,
    /// A failed send per rank, until the rank's next event says whether
    /// it began a sendrecv.
    held: FxHashMap<u32, Event>,
}

impl FailedCalls {
    /// Keeps the first `keep` failed calls.
    pub fn new(keep: usize) -> Self {
        FailedCalls { count: 0, examples: Vec::new(), keep, held: FxHashMap::default() }
    }

    /// Takes the next event of the stream. A branch for the traces of
    /// jobs that did not fail.
    #[inline]
    pub fn observe(&mut self, event: &Event) {
        if event.body.failed() || !self.held.is_empty() {
            self.observe_cold(event);
        }
    }

    #[cold]
    fn observe_cold(&mut self, event: &Event) {
        if let Some(send) = self.held.remove(&event.rank) {
            if event.ends_sendrecv_of(&send) {
                return self.add(FailedCall::sendrecv(&send, event));
            }
            self.add(FailedCall::of(&send));
        }
        match event.body {
            Body::Send { failed: true, .. } => _ = self.held.insert(event.rank, *event),
            ref body if body.failed() => self.add(FailedCall::of(event)),
            _ => {}
        }
    }

    fn add(&mut self, call: FailedCall) {
        self.count += 1;
        if self.examples.len() < self.keep {
            self.examples.push(call);
        }
    }

    /// At the end of the stream: the failed sends still held, by rank.
    pub fn finish(&mut self) {
        let mut held: Vec<Event> = self.held.drain().map(|(_, send)| send).collect();
        held.sort_by_key(|send| send.rank);
        held.iter().for_each(|send| self.add(FailedCall::of(send)));
    }

    /// Failed calls seen.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The first ones, in stream order.
    pub fn examples(&self) -> &[FailedCall] {
        &self.examples
    }
}

/// What a failed call says in words: a peer died or the job was stopped.
pub const WHY: &str = "a peer died or the job was stopped";

#[cfg(test)]
mod tests {
    use super::*;
    use grappe_trace::{CollectiveKind, Completion};

    fn ev(rank: u32, start: u64, end: u64, body: Body) -> Event {
        Event { rank, start, end, alpha_ns: 0, site: None, body }
    }

    fn send(dest: u32, failed: bool) -> Body {
        Body::Send { dest, tag: 1, comm: 0, bytes: 8, seq: 0, failed, sync: false }
    }

    fn recv(src: u32, sendrecv: bool, failed: bool) -> Body {
        Body::Recv { src, tag: 1, comm: 0, bytes: 0, arrived: false, sendrecv, failed, any_source: false }
    }

    #[test]
    fn failed_calls_are_counted_once_and_a_sendrecv_as_one() {
        let mut failed = FailedCalls::new(10);
        let barrier = Body::Collective { op: CollectiveKind::Barrier, comm: 0, root: ANY, bytes: 0, failed: true };
        let waited = |is_recv| Completion { is_recv, src: 3, tag: 1, bytes: 0, arrived: false };
        let events = [
            ev(0, 10, 20, send(1, false)),
            ev(0, 30, 90, recv(2, false, true)),
            ev(1, 10, 80, barrier),
            // A sendrecv whose send failed and whose receive did not.
            ev(2, 40, 70, send(0, true)),
            ev(2, 40, 70, recv(0, true, false)),
            // One whose receive failed.
            ev(3, 40, 75, send(0, false)),
            ev(3, 40, 75, recv(ANY, true, true)),
            ev(4, 5, 95, Body::Wait { request: 1, comm: 0, completion: waited(true), failed: true }),
            ev(6, 5, 95, Body::Wait { request: 2, comm: 0, completion: waited(false), failed: true }),
            // A failed send last on its rank.
            ev(5, 50, 99, send(2, true)),
        ];
        events.iter().for_each(|e| failed.observe(e));
        failed.finish();
        let said: Vec<String> = failed.examples().iter().map(|c| c.what().to_string()).collect();
        assert_eq!(
            said,
            [
                "rank 0: recv from rank 2",
                "rank 1: barrier",
                "rank 2: sendrecv with rank 0",
                "rank 3: sendrecv with any rank",
                "rank 4: wait for a receive from rank 3",
                "rank 6: wait for a send to rank 3",
                "rank 5: send to rank 2",
            ]
        );
        assert_eq!(failed.count(), 7);
        assert_eq!(failed.examples()[0].duration_ns(), 60);
    }
}
