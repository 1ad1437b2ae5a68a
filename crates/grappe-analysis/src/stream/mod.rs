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

use grappe_trace::{Ending, Event};
use serde::Serialize;

mod blocks;
mod kway;
mod merged;

use crate::error::Result;
use crate::global::GlobalTime;
use crate::matching::{Matcher, Message, receive_of};
use crate::set::{Layout, TraceSet};
use kway::KWay;
use merged::MergedFile;

/// An event of the causal stream, owned (what the iterator yields).
#[derive(Debug, Clone, PartialEq)]
pub struct Linked {
    /// The event, global dates.
    pub event: Event,
    /// Its message role.
    pub message: Message,
}

impl Linked {
    /// A borrowed view, as [`CausalStream::next_event`] gives.
    pub fn as_ref(&self) -> LinkedRef<'_> {
        LinkedRef { event: &self.event, message: &self.message }
    }
}

/// An event of the causal stream, borrowed from it until the next call
/// (the fast way through: neither the event nor its message role is
/// copied).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkedRef<'a> {
    /// The event, global dates.
    pub event: &'a Event,
    /// Its message role.
    pub message: &'a Message,
}

impl LinkedRef<'_> {
    /// An owned copy.
    pub fn to_linked(&self) -> Linked {
        Linked { event: *self.event, message: *self.message }
    }
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
///
/// Read it with [`CausalStream::next_event`] (borrowed events, no copy) or
/// as an iterator of owned [`Linked`] events.
pub struct CausalStream {
    source: Source,
    matcher: Matcher,
    /// The message role of the event out.
    message: Message,
    /// An event is out (borrowed by the caller) and goes on the next call.
    out: bool,
    done: bool,
    /// Ranks of the job with no trace.
    untraced: Vec<u32>,
    /// The job's id (empty in files written before it was recorded).
    job: String,
    /// Ranks that took turns on one processor (`TraceSet::turn_taking`).
    turns: Vec<Vec<u32>>,
}

enum Source {
    Merge(KWay),
    /// Boxed: a reader is much bigger than the merge's vectors.
    Merged(Box<MergedFile>),
}

impl CausalStream {
    /// Opens the stream of a set on the given global time.
    pub fn open(set: &TraceSet, time: &GlobalTime) -> Result<CausalStream> {
        let source = match set.layout() {
            Layout::Merged => Source::Merged(Box::new(MergedFile::open(set.files()[0].open()?)?)),
            Layout::PerRank => Source::Merge(KWay::open(set, time)?),
        };
        let (untraced, job, turns) = (set.missing_ranks(), set.files()[0].header.job.clone(), set.turn_taking());
        let matcher = Matcher::new();
        Ok(CausalStream { source, matcher, message: Message::None, out: false, done: false, untraced, job, turns })
    }

    /// The next event and its message role; `Ok(None)` at the end. An error
    /// (a corrupt block) ends the stream.
    #[inline]
    pub fn next_event(&mut self) -> Result<Option<LinkedRef<'_>>> {
        if self.done {
            return Ok(None);
        }
        // Taken apart by `?`, which moves the result: a `match` on it
        // would drop it on every event, a call into the error's drop glue.
        let more = self.select().inspect_err(|_| self.done = true)?;
        if !more {
            self.done = true;
            return Ok(None);
        }
        let event = match &self.source {
            Source::Merge(k) => k.out_event(),
            Source::Merged(m) => m.head(),
        };
        Ok(event.map(|event| LinkedRef { event, message: &self.message }))
    }

    /// Lets the previous event go, finds the next one and matches it;
    /// false at the end.
    fn select(&mut self) -> Result<bool> {
        if std::mem::take(&mut self.out) {
            match &mut self.source {
                Source::Merge(k) => k.release_out()?,
                Source::Merged(m) => m.advance()?,
            }
        }
        let event = match &mut self.source {
            Source::Merge(k) => k.select(&self.matcher)?,
            Source::Merged(m) => m.head(),
        };
        let Some(event) = event else { return Ok(false) };
        let sent = self.matcher.observe_into(event, &mut self.message);
        if let (Some(channel), Source::Merge(k)) = (sent, &mut self.source) {
            k.wake(&channel);
        }
        self.out = true;
        Ok(true)
    }

    /// A lower bound of the start of every event not yet returned (for
    /// exporters that must write in time order); `None` when unknown
    /// (merged files) or at the end.
    pub fn pending_start_bound(&self) -> Option<u64> {
        match &self.source {
            Source::Merge(k) => k.pending_start_bound(),
            Source::Merged(_) => None,
        }
    }

    /// Ranks of the job with no trace: messages from or to them have no
    /// other half in the stream.
    pub fn untraced(&self) -> &[u32] {
        &self.untraced
    }

    /// Ranks that took turns on one processor: a rank's calls last while
    /// the others of its group run.
    pub fn turn_taking(&self) -> &[Vec<u32>] {
        &self.turns
    }

    /// The job's id (empty in files written before it was recorded).
    pub fn job(&self) -> &str {
        &self.job
    }

    /// The matcher (sends not yet received, counts).
    pub fn matcher(&self) -> &Matcher {
        &self.matcher
    }

    /// Totals; complete once the stream returned `None`.
    pub fn summary(&self) -> StreamSummary {
        let (flows, deferred, forced) = match &self.source {
            Source::Merge(k) => (k.summaries().cloned().collect(), k.deferred, k.forced),
            Source::Merged(m) => (m.summaries(), 0, 0),
        };
        StreamSummary {
            flows,
            deferred,
            forced,
            matched: self.matcher.matched(),
            unmatched_receives: self.matcher.unmatched_receives(),
            unreceived_sends: self.matcher.pending_sends(),
        }
    }
}

impl Iterator for CausalStream {
    type Item = Result<Linked>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_event().map(|linked| linked.map(|l| l.to_linked())).transpose()
    }
}

impl FlowSummary {
    fn new(rank: u32) -> Self {
        FlowSummary { rank, events: 0, disorder: 0, first_disorder: None, ending: None }
    }
}
