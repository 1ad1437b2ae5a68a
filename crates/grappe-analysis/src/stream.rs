//! The causal event stream every tool reads: the events of all ranks on
//! global time, each with its message role, sends before their receives.
//!
//! From per-rank files it is a streaming k-way merge (one block per rank
//! in memory): the next event is the one with the smallest *merge date* —
//! its start, or for an event that completes a receive its end, the moment
//! the message was delivered — and a receive whose send has not been
//! emitted yet is deferred, its rank held back, until the send comes by
//! (Tape/PVM's dependency-driven traversal). With consistent global time
//! no receive is deferred; deferrals are counted, they measure clock
//! error. A merged file is read as it is.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use grappe_trace::{ANY, Ending, Event, Events};
use rustc_hash::FxHashMap;
use serde::Serialize;

use crate::error::Result;
use crate::global::{GlobalTime, RankTime};
use crate::matching::{Channel, Matcher, Message, receive_of};
use crate::set::{Layout, TraceSet};

/// An event of the causal stream.
#[derive(Debug, Clone, PartialEq)]
pub struct Linked {
    /// The event, global dates.
    pub event: Event,
    /// Its message role.
    pub message: Message,
}

/// The date an event takes its place by in the merge.
#[inline]
pub fn merge_date(event: &Event) -> u64 {
    if receive_of(event).is_some() { event.end } else { event.start }
}

/// One rank's part in the stream, once it is read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlowSummary {
    /// World rank.
    pub rank: u32,
    /// Events read.
    pub events: u64,
    /// Records out of order in the file (start before the previous
    /// record's start, or end before start).
    pub disorder: u64,
    /// The first of them, described.
    pub first_disorder: Option<String>,
    /// How the file ended (`None` for the ranks of a merged file).
    #[serde(skip)]
    pub ending: Option<Ending>,
}

/// What the stream saw, once read to the end.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StreamSummary {
    /// Per rank.
    pub flows: Vec<FlowSummary>,
    /// Receives held back until their send was emitted.
    pub deferred: u64,
    /// Receives let go unmatched while their sender's trace went on: the
    /// traces contradict each other (waits in a cycle).
    pub forced: u64,
    /// Messages matched.
    pub matched: u64,
    /// Receives with no send.
    pub unmatched_receives: u64,
    /// Sends never received.
    pub unreceived_sends: u64,
}

/// The causal stream of a trace set.
pub struct CausalStream {
    source: Source,
    matcher: Matcher,
    deferred: u64,
    forced: u64,
    done: bool,
}

enum Source {
    Merge(KWay),
    /// Boxed: a reader is much bigger than the merge's vectors.
    Merged {
        events: Box<Events>,
        flows: FxHashMap<u32, FlowSummary>,
    },
}

impl CausalStream {
    /// Opens the stream of a set on the given global time.
    pub fn open(set: &TraceSet, time: &GlobalTime) -> Result<CausalStream> {
        let source = match set.layout() {
            Layout::Merged => {
                Source::Merged { events: Box::new(set.files()[0].open()?.events()), flows: FxHashMap::default() }
            }
            Layout::PerRank => Source::Merge(KWay::open(set, time)?),
        };
        Ok(CausalStream { source, matcher: Matcher::new(), deferred: 0, forced: 0, done: false })
    }

    /// A lower bound of the start of every event not yet returned (for
    /// exporters that must write in time order); `None` when unknown
    /// (merged files) or at the end.
    pub fn pending_start_bound(&self) -> Option<u64> {
        match &self.source {
            Source::Merge(k) => k.flows.iter().filter_map(|f| f.head.as_ref().map(|e| e.start)).min(),
            Source::Merged { .. } => None,
        }
    }

    /// The matcher (sends not yet received, counts).
    pub fn matcher(&self) -> &Matcher {
        &self.matcher
    }

    /// Totals; complete once the stream returned `None`.
    pub fn summary(&self) -> StreamSummary {
        let flows = match &self.source {
            Source::Merge(k) => k.flows.iter().map(|f| f.summary.clone()).collect(),
            Source::Merged { flows, .. } => {
                let mut flows: Vec<FlowSummary> = flows.values().cloned().collect();
                flows.sort_by_key(|f| f.rank);
                flows
            }
        };
        StreamSummary {
            flows,
            deferred: self.deferred,
            forced: self.forced,
            matched: self.matcher.matched(),
            unmatched_receives: self.matcher.unmatched_receives(),
            unreceived_sends: self.matcher.pending_sends(),
        }
    }

    fn next_linked(&mut self) -> Result<Option<Linked>> {
        let event = match &mut self.source {
            Source::Merge(k) => match k.next(&self.matcher, &mut self.deferred, &mut self.forced)? {
                Some(event) => event,
                None => return Ok(None),
            },
            Source::Merged { events, flows } => match events.next().transpose()? {
                Some(event) => {
                    let flow = flows.entry(event.rank).or_insert_with(|| FlowSummary::new(event.rank));
                    flow.events += 1;
                    event
                }
                None => return Ok(None),
            },
        };
        let message = self.matcher.observe(&event);
        if let (Message::Sent { channel, .. }, Source::Merge(k)) = (&message, &mut self.source) {
            k.wake(channel);
        }
        Ok(Some(Linked { event, message }))
    }
}

impl Iterator for CausalStream {
    type Item = Result<Linked>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let next = self.next_linked().transpose();
        self.done = matches!(next, None | Some(Err(_)));
        next
    }
}

impl FlowSummary {
    fn new(rank: u32) -> Self {
        FlowSummary { rank, events: 0, disorder: 0, first_disorder: None, ending: None }
    }
}

/// One rank's file being merged.
struct Flow {
    events: Option<Events>,
    head: Option<Event>,
    time: RankTime,
    last_start: u64,
    summary: FlowSummary,
}

impl Flow {
    /// Reads the next event into `head`, on global time.
    fn advance(&mut self) -> Result<()> {
        self.head = None;
        let Some(events) = &mut self.events else { return Ok(()) };
        let Some(mut event) = events.next().transpose()? else {
            self.summary.ending = events.trace().ending().cloned();
            self.events = None;
            return Ok(());
        };
        self.check_order(&event);
        self.summary.events += 1;
        event.start = self.time.to_global(event.start);
        event.end = self.time.to_global(event.end);
        self.head = Some(event);
        Ok(())
    }

    fn check_order(&mut self, e: &Event) {
        let problem = if e.end < e.start {
            Some(format!("ends at {} ns, before its start at {} ns", e.end, e.start))
        } else if e.start < self.last_start {
            Some(format!("starts at {} ns, before the previous record's start at {} ns", e.start, self.last_start))
        } else {
            None
        };
        self.last_start = self.last_start.max(e.start);
        if let Some(problem) = problem {
            self.summary.disorder += 1;
            self.summary
                .first_disorder
                .get_or_insert_with(|| format!("record {} ({}) {problem}", self.summary.events, e.body.kind().name()));
        }
    }

    fn can_still_send(&self) -> bool {
        self.head.is_some()
    }
}

/// The k-way merge of per-rank files.
struct KWay {
    flows: Vec<Flow>,
    /// Flows whose head can go, by (merge date, flow).
    ready: BinaryHeap<Reverse<(u64, usize)>>,
    /// Flows whose head is a receive waiting for its send.
    waiting: FxHashMap<Channel, usize>,
    /// Flow index of each rank.
    flow_of: FxHashMap<u32, usize>,
}

impl KWay {
    fn open(set: &TraceSet, time: &GlobalTime) -> Result<KWay> {
        let mut k = KWay {
            flows: Vec::new(),
            ready: BinaryHeap::new(),
            waiting: FxHashMap::default(),
            flow_of: FxHashMap::default(),
        };
        for f in set.files() {
            let rank = f.rank().expect("per-rank set");
            let time = time.rank(rank).cloned().expect("global time covers every traced rank");
            let mut flow = Flow {
                events: Some(f.open()?.events()),
                head: None,
                time,
                last_start: 0,
                summary: FlowSummary::new(rank),
            };
            flow.advance()?;
            k.flow_of.insert(rank, k.flows.len());
            k.flows.push(flow);
        }
        for i in 0..k.flows.len() {
            k.schedule(i);
        }
        Ok(k)
    }

    fn schedule(&mut self, i: usize) {
        if let Some(head) = &self.flows[i].head {
            self.ready.push(Reverse((merge_date(head), i)));
        }
    }

    /// A send on `channel` was emitted: its receiver may go on.
    fn wake(&mut self, channel: &Channel) {
        if let Some(i) = self.waiting.remove(channel) {
            self.schedule(i);
        }
    }

    fn next(&mut self, matcher: &Matcher, deferred: &mut u64, forced: &mut u64) -> Result<Option<Event>> {
        loop {
            let Some(Reverse((_, i))) = self.ready.pop() else {
                // Only receives whose sends never come are left: a trace
                // cut short, or an inconsistent one. Let the earliest go.
                let Some((&channel, &i)) = self.waiting.iter().min_by_key(|(_, i)| self.head_date(**i)) else {
                    return Ok(None);
                };
                self.waiting.remove(&channel);
                *forced += 1;
                return self.emit(i).map(Some);
            };
            let head = self.flows[i].head.as_ref().expect("scheduled flows have a head");
            if let Some((channel, _)) = receive_of(head)
                && !matcher.has_send(&channel)
                && self.sender_may_send(channel.src)
            {
                *deferred += 1;
                self.waiting.insert(channel, i);
                continue;
            }
            return self.emit(i).map(Some);
        }
    }

    fn head_date(&self, i: usize) -> u64 {
        self.flows[i].head.as_ref().map_or(u64::MAX, merge_date)
    }

    fn sender_may_send(&self, src: u32) -> bool {
        src != ANY && self.flow_of.get(&src).is_some_and(|&s| self.flows[s].can_still_send())
    }

    /// Takes flow `i`'s head and reads its next event.
    fn emit(&mut self, i: usize) -> Result<Event> {
        let event = self.flows[i].head.take().expect("emitted flows have a head");
        self.flows[i].advance()?;
        self.schedule(i);
        if self.flows[i].head.is_none() {
            self.release_waiting_on(event.rank);
        }
        Ok(event)
    }

    /// A rank's trace ended: receives waiting for its sends go unmatched.
    fn release_waiting_on(&mut self, rank: u32) {
        let stuck: Vec<Channel> = self.waiting.keys().filter(|c| c.src == rank).copied().collect();
        for channel in stuck {
            if let Some(i) = self.waiting.remove(&channel) {
                self.schedule(i);
            }
        }
    }
}
