//! Send/receive matching.
//!
//! MPI delivers the messages of one channel — sender, receiver,
//! communicator, tag — in the order they were sent (non-overtaking), so
//! the k-th receive completed on a channel got the k-th message sent on it:
//! a FIFO per channel, fed in causal order, matches every message. The
//! receive's actual source and tag are in its record, so wildcards need
//! nothing more.
//!
//! A call that failed (a peer died, the job was stopped: see
//! [`Body`]) carries no message: its send is not known to have left, its
//! receive took nothing. Neither is matched, so that a survivor's receive
//! from a dead rank is neither paired with a send nor counted unmatched.
//!
//! Known limit: two non-blocking receives with the same envelope that
//! complete out of posting order are matched in completion order (the
//! record of which request was posted first is in the trace, but using it
//! would need the receives' posting order across waits; no tool we know
//! does that either).

use std::collections::VecDeque;

use grappe_trace::{ANY, Body, Event};
use rustc_hash::FxHashMap;
use serde::Serialize;

/// Sender, receiver, communicator, tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Channel {
    /// Sending world rank.
    pub src: u32,
    /// Receiving world rank.
    pub dst: u32,
    /// Communicator (point-to-point context id).
    pub comm: u32,
    /// Tag.
    pub tag: i32,
}

/// The send side of a message, as the receive needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SendSide {
    /// Message id, in send order over the whole trace.
    pub id: u64,
    /// Send start (the call), global ns.
    pub start: u64,
    /// Send end, global ns.
    pub end: u64,
    /// Bytes sent.
    pub bytes: u64,
    /// The sender's sequence number towards this receiver.
    pub seq: u64,
}

/// The message role of an event in the causal stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Message {
    /// Not a send or a message-receiving event.
    None,
    /// A send; its message id.
    Sent {
        /// Id shared with the matching receive.
        id: u64,
        /// Its channel.
        channel: Channel,
    },
    /// A receive and the send it matched.
    Received {
        /// Its channel.
        channel: Channel,
        /// The matching send.
        send: SendSide,
    },
    /// A receive with no send in the trace (sender not traced, or its
    /// trace cut before the send).
    Unmatched {
        /// Its channel (`src` may be [`ANY`] if the source was unknown).
        channel: Channel,
    },
    /// A receive whose send is outside the window of a windowed stream
    /// (`crate::stream::Window`): matched, but the send is not given out.
    /// Formats whose readers match messages themselves (OTF2, PICL) leave
    /// out its message record: a receive with no send would shift every
    /// later message of its channel onto the wrong send.
    SendOutside {
        /// Its channel.
        channel: Channel,
        /// The matching send.
        send: SendSide,
    },
}

/// The message an event sends, if any: its channel, bytes and sequence
/// (none for a failed send).
pub fn send_of(event: &Event) -> Option<(Channel, u64, u64)> {
    match event.body {
        Body::Send { dest, tag, comm, bytes, seq, failed: false, .. }
        | Body::Isend { dest, tag, comm, bytes, seq, .. } => {
            Some((Channel { src: event.rank, dst: dest, comm, tag }, bytes, seq))
        }
        _ => None,
    }
}

/// Messages counted per channel, for a tool that reads each rank on its
/// own, with no causal order to match in. MPI's non-overtaking order pairs
/// a channel's k-th send with its k-th receive, so a channel's matched
/// messages are the fewer of its sends and its receives, as the matcher
/// pairs them.
#[derive(Debug, Default)]
pub struct ChannelTally {
    /// Sends and receives of each channel.
    counts: FxHashMap<Channel, (u64, u64)>,
}

impl ChannelTally {
    /// Counts `event` if it sends or receives a message.
    #[inline]
    pub fn observe(&mut self, event: &Event) {
        if !may_carry_a_message(&event.body) {
            return;
        }
        if let Some((channel, _, _)) = send_of(event) {
            self.counts.entry(channel).or_default().0 += 1;
        } else if let Some((channel, _)) = receive_of(event) {
            self.counts.entry(channel).or_default().1 += 1;
        }
    }

    /// Messages whose send and receive were both counted.
    pub fn matched(&self) -> u64 {
        self.counts.values().map(|&(sends, receives)| sends.min(receives)).sum()
    }

    /// Receives with no send.
    pub fn unmatched_receives(&self) -> u64 {
        self.counts.values().map(|&(sends, receives)| receives.saturating_sub(sends)).sum()
    }

    /// Sends never received.
    pub fn unreceived_sends(&self) -> u64 {
        self.counts.values().map(|&(sends, receives)| sends.saturating_sub(receives)).sum()
    }
}

/// Whether `body` is of a kind that sends or receives a message.
#[inline(always)]
fn may_carry_a_message(body: &Body) -> bool {
    matches!(body, Body::Send { .. } | Body::Isend { .. } | Body::Recv { .. } | Body::Wait { .. } | Body::Test { .. })
}

/// The message an event receives, if any: its channel and bytes (none
/// for a failed receive, wait or test).
pub fn receive_of(event: &Event) -> Option<(Channel, u64)> {
    let dst = event.rank;
    match &event.body {
        Body::Recv { src, tag, comm, bytes, failed: false, .. } => {
            Some((Channel { src: *src, dst, comm: *comm, tag: *tag }, *bytes))
        }
        Body::Wait { comm, completion, failed: false, .. } if completion.is_recv => {
            Some((Channel { src: completion.src, dst, comm: *comm, tag: completion.tag }, completion.bytes))
        }
        Body::Test { comm, completion: Some(c), failed: false, .. } if c.is_recv => {
            Some((Channel { src: c.src, dst, comm: *comm, tag: c.tag }, c.bytes))
        }
        _ => None,
    }
}

/// Matches receives to sends, fed in causal order.
#[derive(Debug, Default)]
pub struct Matcher {
    in_flight: FxHashMap<Channel, VecDeque<SendSide>>,
    next_id: u64,
    pending: u64,
    matched: u64,
    unmatched_receives: u64,
}

impl Matcher {
    /// An empty matcher.
    pub fn new() -> Self {
        Matcher::default()
    }

    /// True if a receive on `channel` would find its send now.
    pub fn has_send(&self, channel: &Channel) -> bool {
        self.in_flight.get(channel).is_some_and(|q| !q.is_empty())
    }

    /// The send the next receive on `channel` will match, if it went out.
    pub fn next_send(&self, channel: &Channel) -> Option<&SendSide> {
        self.in_flight.get(channel).and_then(|q| q.front())
    }

    /// Takes the next event of the causal stream and says its message role.
    pub fn observe(&mut self, event: &Event) -> Message {
        let mut message = Message::None;
        self.observe_into(event, &mut message);
        message
    }

    /// [`Matcher::observe`] writing the role in place (returning a 48-byte
    /// enum goes through memory and its copy stalls the CPU on the hot
    /// path); returns the channel when the event is a send.
    #[inline]
    pub fn observe_into(&mut self, event: &Event, message: &mut Message) -> Option<Channel> {
        // Most events carry no message (regions, counters, collectives):
        // one look at the kind spares them the two matches below.
        if !may_carry_a_message(&event.body) {
            *message = Message::None;
            return None;
        }
        if let Some((channel, bytes, seq)) = send_of(event) {
            let id = self.next_id;
            self.next_id += 1;
            self.pending += 1;
            let side = SendSide { id, start: event.start, end: event.end, bytes, seq };
            self.in_flight.entry(channel).or_default().push_back(side);
            *message = Message::Sent { id, channel };
            return Some(channel);
        }
        let Some((channel, _)) = receive_of(event) else {
            *message = Message::None;
            return None;
        };
        let queue = if channel.src == ANY { None } else { self.in_flight.get_mut(&channel) };
        match queue {
            Some(queue) if !queue.is_empty() => {
                received_into(message, channel, &queue[0]);
                queue.pop_front();
                self.pending -= 1;
                self.matched += 1;
            }
            _ => {
                self.unmatched_receives += 1;
                *message = Message::Unmatched { channel };
            }
        }
        None
    }

    /// Messages matched so far.
    pub fn matched(&self) -> u64 {
        self.matched
    }

    /// Receives that found no send.
    pub fn unmatched_receives(&self) -> u64 {
        self.unmatched_receives
    }

    /// Sends not (yet) received.
    pub fn pending_sends(&self) -> u64 {
        self.pending
    }

    /// The sends never received, by channel (call at the end).
    pub fn unreceived(&self) -> impl Iterator<Item = (&Channel, &SendSide)> {
        self.in_flight.iter().flat_map(|(c, q)| q.iter().map(move |s| (c, s)))
    }

    /// The id the next send gets.
    pub fn next_message(&self) -> u64 {
        self.next_id
    }

    /// Takes up matching where a resume point of a merged trace left it:
    /// the sends in flight then (in the order they were sent, their ids
    /// kept), and the id of the next.
    pub fn resume(&mut self, next_message: u64, in_flight: impl IntoIterator<Item = (Channel, SendSide)>) {
        for (channel, send) in in_flight {
            self.in_flight.entry(channel).or_default().push_back(send);
            self.pending += 1;
        }
        self.next_id = next_message;
    }
}

/// Makes `message` a receipt of `send` on `channel`, field by field in
/// place. Built whole (`*message = Message::Received { .. }`), the message
/// was put together on the stack and copied over in wide moves, each
/// reading across several of the narrower stores that had just made it,
/// which the CPU cannot forward from: a stall on every matched message,
/// 7% of the stream's time.
#[inline(always)]
fn received_into(message: &mut Message, channel: Channel, send: &SendSide) {
    if !matches!(message, Message::Received { .. }) {
        let none = SendSide { id: 0, start: 0, end: 0, bytes: 0, seq: 0 };
        *message = Message::Received { channel, send: none };
    }
    if let Message::Received { channel: to_channel, send: to_send } = message {
        *to_channel = channel;
        *to_send = *send;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use grappe_trace::Completion;

    fn ev(rank: u32, start: u64, body: Body) -> Event {
        Event { rank, start, end: start + 1, alpha_ns: 0, site: None, body }
    }

    #[test]
    fn messages_of_a_channel_match_in_order_and_channels_are_apart() {
        let mut m = Matcher::new();
        let send = |tag, bytes, seq| Body::Send { dest: 1, tag, comm: 3, bytes, seq, failed: false, sync: false };
        assert!(matches!(m.observe(&ev(0, 1, send(7, 10, 0))), Message::Sent { id: 0, .. }));
        assert!(matches!(m.observe(&ev(0, 2, send(8, 20, 1))), Message::Sent { id: 1, .. }));
        assert!(matches!(m.observe(&ev(0, 3, send(7, 30, 2))), Message::Sent { id: 2, .. }));
        let recv = |tag| Body::Recv {
            src: 0,
            tag,
            comm: 3,
            bytes: 0,
            arrived: false,
            sendrecv: false,
            failed: false,
            any_source: false,
        };
        let got = |m: &mut Matcher, tag| match m.observe(&ev(1, 9, recv(tag))) {
            Message::Received { send, .. } => send.bytes,
            other => panic!("expected a match, got {other:?}"),
        };
        assert_eq!(got(&mut m, 8), 20);
        assert_eq!(got(&mut m, 7), 10);
        assert_eq!(got(&mut m, 7), 30);
        assert!(matches!(m.observe(&ev(1, 9, recv(7))), Message::Unmatched { .. }));
        assert_eq!((m.matched(), m.unmatched_receives(), m.pending_sends()), (3, 1, 0));
    }

    #[test]
    fn a_wait_completing_a_receive_matches_and_a_send_wait_does_not() {
        let mut m = Matcher::new();
        m.observe(&ev(2, 1, Body::Isend { dest: 0, tag: 1, comm: 5, bytes: 4, seq: 0, request: 0 }));
        let done = |is_recv| Completion { is_recv, src: 2, tag: 1, bytes: 4, arrived: false };
        assert_eq!(
            m.observe(&ev(2, 2, Body::Wait { request: 0, comm: 5, completion: done(false), failed: false })),
            Message::None
        );
        let wait = Body::Wait { request: 9, comm: 5, completion: done(true), failed: false };
        assert!(matches!(m.observe(&ev(0, 3, wait)), Message::Received { send: SendSide { id: 0, .. }, .. }));
        let other_comm = Body::Wait { request: 9, comm: 6, completion: done(true), failed: false };
        assert!(matches!(m.observe(&ev(0, 3, other_comm)), Message::Unmatched { .. }));
    }

    /// A failed call (a peer died, the job was stopped) carries no message:
    /// a failed receive takes no send, not even one waiting on its very
    /// channel, and counts as no unmatched receive; a failed send is
    /// nothing a receive can take. The channel's next receive gets its send.
    #[test]
    fn failed_calls_are_never_matched() {
        let mut m = Matcher::new();
        let send = |failed| Body::Send { dest: 1, tag: 7, comm: 3, bytes: 8, seq: 1, failed, sync: false };
        let recv = |failed| Body::Recv {
            src: 0,
            tag: 7,
            comm: 3,
            bytes: 0,
            arrived: false,
            sendrecv: false,
            failed,
            any_source: false,
        };
        let waited_for = Completion { is_recv: true, src: 0, tag: 7, bytes: 0, arrived: false };
        let failed = [
            recv(true),
            Body::Wait { request: 4, comm: 3, completion: waited_for, failed: true },
            Body::Test { request: 4, comm: 3, completion: Some(waited_for), failed: true },
        ];
        assert!(matches!(m.observe(&ev(0, 1, send(false))), Message::Sent { id: 0, .. }));
        for body in failed {
            assert_eq!(m.observe(&ev(1, 2, body)), Message::None, "{body:?}");
        }
        assert_eq!(m.observe(&ev(0, 3, send(true))), Message::None, "a failed send");
        assert!(matches!(m.observe(&ev(1, 4, recv(false))), Message::Received { send: SendSide { id: 0, .. }, .. }));
        assert!(matches!(m.observe(&ev(1, 5, recv(false))), Message::Unmatched { .. }), "the failed send went nowhere");
        assert_eq!((m.matched(), m.unmatched_receives(), m.pending_sends()), (1, 1, 0));

        let mut tally = ChannelTally::default();
        for body in [send(false), send(true), recv(true), recv(false)] {
            tally.observe(&ev(if matches!(body, Body::Send { .. }) { 0 } else { 1 }, 1, body));
        }
        let counts = (tally.matched(), tally.unmatched_receives(), tally.unreceived_sends());
        assert_eq!(counts, (1, 0, 0), "per-rank tallies leave failed calls out too");
    }
}
