//! The k-way merge of per-rank files on global time.
//!
//! Each rank's events are read a block at a time, put on global time in
//! place, and taken from the block by reference until they go out: the
//! merge looks at heads without moving them. The flow that just went out
//! stays outside the heap while it is still the earliest (runs of one
//! rank's events cost no heap operation).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::PathBuf;

use grappe_trace::{ANY, Event, TraceFile};

use super::blocks::Blocks;
use rustc_hash::FxHashMap;

use super::summary::{FlowSummary, Repairs};
use crate::error::Result;
use crate::global::{GlobalTime, RankTime, global_of};
use crate::matching::{Channel, Matcher, SendSide, receive_of};
use crate::set::TraceSet;

/// The date an event takes its place by in the merge.
#[inline]
pub fn merge_date(event: &Event) -> u64 {
    if receive_of(event).is_some() { event.end } else { event.start }
}

/// One rank's file being merged.
struct Flow {
    blocks: Blocks,
    clock: LocalOrder,
    /// How much later than global time its events are dated from the
    /// head on: the sum of the controlled logical clock's moves of its
    /// receives so far (0 without repair).
    shift: u64,
}

/// A rank's dates: checked in local order, then put on global time.
struct LocalOrder {
    time: RankTime,
    last_start: u64,
    summary: FlowSummary,
}

impl Flow {
    fn open(file: TraceFile, time: RankTime, rank: u32) -> Result<Flow> {
        let clock = LocalOrder { time, last_start: 0, summary: FlowSummary::new(rank) };
        let mut flow = Flow { blocks: Blocks::new(file), clock, shift: 0 };
        flow.fill()?;
        Ok(flow)
    }

    fn head(&self) -> Option<&Event> {
        self.blocks.head()
    }

    /// Drops the head and makes sure the next one is there (reading the
    /// next block once in a few thousand events: out of line).
    #[inline]
    fn advance(&mut self) -> Result<()> {
        if !self.blocks.pass_head() {
            self.fill()?;
        }
        if self.shift > 0 {
            self.shift_head();
        }
        Ok(())
    }

    /// Dates the new head `shift` later, as the receives moved before it
    /// (each event once, when it becomes the head).
    #[inline(never)]
    fn shift_head(&mut self) {
        if let Some(head) = self.blocks.head_mut() {
            head.start = head.start.saturating_add(self.shift);
            head.end = head.end.saturating_add(self.shift);
        }
    }

    /// The controlled logical clock's forward step (Rabenseifner's CLC,
    /// as Scalasca applies it): a receive at the head that ends before
    /// `earliest_end` (its send's start plus the minimum latency) ends
    /// there instead, and every later event of the rank moves as much, so
    /// that the rank's intervals stay as recorded. Returns the move.
    fn delay_receive_end(&mut self, earliest_end: u64) -> u64 {
        let Some(head) = self.blocks.head_mut() else { return 0 };
        let jump = earliest_end.saturating_sub(head.end);
        head.end += jump;
        self.shift += jump;
        jump
    }

    #[inline(never)]
    fn fill(&mut self) -> Result<()> {
        let clock = &mut self.clock;
        if let Some(ending) = self.blocks.fill(|events| clock.globalize(events))? {
            clock.summary.ending = Some(ending);
        }
        Ok(())
    }
}

/// One rank's file and its global time, to be read on its own (opened
/// when asked, so that a tool holds one rank's reader at a time). From
/// [`super::CausalStream::into_ranks`].
pub struct RankSource {
    path: PathBuf,
    time: RankTime,
    rank: u32,
}

impl RankSource {
    /// The rank.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// Opens the rank's file, to read from its first event.
    pub fn open(self) -> Result<RankFlow> {
        let file = TraceFile::open(&self.path)?;
        Ok(RankFlow { flow: Flow::open(file, self.time, self.rank)?, started: false })
    }
}

/// One rank's events on global time, in its file's order, read on their
/// own: for a tool that needs no order across ranks (the OTF2 export
/// writes a location at a time).
pub struct RankFlow {
    flow: Flow,
    started: bool,
}

impl RankFlow {
    /// The rank read.
    pub fn rank(&self) -> u32 {
        self.flow.clock.summary.rank
    }

    /// The rank's next event; `Ok(None)` at the end of its file.
    #[inline]
    pub fn next_event(&mut self) -> Result<Option<&Event>> {
        if self.started && self.flow.head().is_some() {
            self.flow.advance()?;
        }
        self.started = true;
        Ok(self.flow.head())
    }

    /// What was read of the rank so far (complete at the end).
    pub fn summary(&self) -> &FlowSummary {
        &self.flow.clock.summary
    }
}

impl LocalOrder {
    /// Checks the local order of a block and puts it on global time.
    fn globalize(&mut self, events: &mut [Event]) {
        let conversion = self.time.conversion();
        for e in events {
            self.check_order(e);
            self.summary.events += 1;
            if let Some(model) = &conversion {
                e.start = global_of(model, e.start);
                e.end = global_of(model, e.end);
            }
        }
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
}

/// The merge: flows, the ready heap, the receives waiting for their send.
pub(super) struct KWay {
    flows: Vec<Flow>,
    /// The file of each flow.
    paths: Vec<PathBuf>,
    /// The flow that went out last, while it is still the earliest.
    current: Option<(u64, usize)>,
    /// Other flows whose head can go, by (merge date, flow).
    ready: BinaryHeap<Reverse<(u64, usize)>>,
    /// Flows whose head is a receive waiting for its send.
    waiting: FxHashMap<Channel, usize>,
    /// Flow index of each rank.
    flow_of: FxHashMap<u32, usize>,
    /// The flow whose head is out (borrowed by the stream's caller).
    out: Option<usize>,
    /// Receives held back (clock error) and let go unmatched (contradictions).
    pub(super) deferred: u64,
    pub(super) forced: u64,
    /// The controlled logical clock, if it repairs tachyons (boxed: the
    /// merge stays small enough to sit in the stream unboxed).
    repair: Option<Box<Repair>>,
}

/// The controlled logical clock's setting and what it did.
struct Repair {
    /// Minimum latency, ns.
    latency: u64,
    done: Repairs,
}

impl KWay {
    pub(super) fn open(set: &TraceSet, time: &GlobalTime) -> Result<KWay> {
        let mut k = KWay {
            flows: Vec::new(),
            current: None,
            ready: BinaryHeap::new(),
            waiting: FxHashMap::default(),
            flow_of: FxHashMap::default(),
            paths: Vec::new(),
            out: None,
            deferred: 0,
            forced: 0,
            repair: time.tachyon_repair.map(|latency| Box::new(Repair { latency, done: Repairs::default() })),
        };
        for f in set.files() {
            let rank = f.rank().expect("per-rank set");
            let time = time.rank(rank).cloned().expect("global time covers every traced rank");
            k.flow_of.insert(rank, k.flows.len());
            k.flows.push(Flow::open(f.open()?, time, rank)?);
            k.paths.push(f.path.clone());
        }
        for i in 0..k.flows.len() {
            k.schedule(i);
        }
        Ok(k)
    }

    /// The ranks' files and times, each to be read on its own (before
    /// any is merged); the files open here are closed.
    pub(super) fn into_ranks(self) -> Vec<RankSource> {
        let times = self.flows.into_iter().map(|flow| (flow.clock.time, flow.clock.summary.rank));
        self.paths.into_iter().zip(times).map(|(path, (time, rank))| RankSource { path, time, rank }).collect()
    }

    pub(super) fn summaries(&self) -> impl Iterator<Item = &FlowSummary> {
        self.flows.iter().map(|f| &f.clock.summary)
    }

    /// A lower bound of the start of every event not out yet.
    pub(super) fn pending_start_bound(&self) -> Option<u64> {
        self.flows.iter().filter_map(|f| f.head().map(|e| e.start)).min()
    }

    fn schedule(&mut self, i: usize) {
        if let Some(head) = self.flows[i].head() {
            self.ready.push(Reverse((merge_date(head), i)));
        }
    }

    /// A send on `channel` went out: its receiver may go on.
    pub(super) fn wake(&mut self, channel: &Channel) {
        if self.waiting.is_empty() {
            return;
        }
        if let Some(i) = self.waiting.remove(channel) {
            self.schedule(i);
        }
    }

    /// Finds the next event in causal order and puts it out (it stays at
    /// the head of its flow until [`KWay::release_out`]).
    pub(super) fn select(&mut self, matcher: &Matcher) -> Result<Option<&Event>> {
        let Some(i) = self.next_flow(matcher) else { return Ok(None) };
        self.out = Some(i);
        Ok(self.flows[i].head())
    }

    /// The event out.
    pub(super) fn out_event(&self) -> Option<&Event> {
        self.out.and_then(|i| self.flows[i].head())
    }

    fn next_flow(&mut self, matcher: &Matcher) -> Option<usize> {
        while let Some(i) = self.earliest() {
            let head = self.flows[i].head().expect("ready flows have a head");
            if let Some((channel, _)) = receive_of(head) {
                if !matcher.has_send(&channel) && self.sender_may_send(channel.src) {
                    self.deferred += 1;
                    self.waiting.insert(channel, i);
                    continue;
                }
                if self.repair.is_some() && self.repair_receive(i, matcher.next_send(&channel)) {
                    // Dated later now: it goes in its new place.
                    self.schedule(i);
                    continue;
                }
            }
            return Some(i);
        }
        // Only receives whose sends never come are left: the traces
        // contradict each other. Let the earliest go.
        let (&channel, &i) = self.waiting.iter().min_by_key(|(_, i)| self.head_date(**i))?;
        self.waiting.remove(&channel);
        self.forced += 1;
        Some(i)
    }

    /// The ready flow with the earliest head: the current one if no other
    /// is earlier (no heap operation), else the heap's top, which the
    /// current one replaces (one sift instead of a push and a pop).
    fn earliest(&mut self) -> Option<usize> {
        let Some((date, i)) = self.current.take() else { return self.ready.pop().map(|Reverse((_, j))| j) };
        match self.ready.peek_mut() {
            Some(mut top) if top.0.0 < date => {
                let j = top.0.1;
                *top = Reverse((date, i));
                Some(j)
            }
            _ => Some(i),
        }
    }

    /// Moves the receive at the head of flow `i` after its send, if
    /// tachyons are repaired and it ends before the send starts (plus the
    /// minimum latency); true if it moved.
    fn repair_receive(&mut self, i: usize, send: Option<&SendSide>) -> bool {
        let (Some(repair), Some(send)) = (&mut self.repair, send) else { return false };
        let flow = &mut self.flows[i];
        let jump = flow.delay_receive_end(send.start.saturating_add(repair.latency));
        if jump == 0 {
            return false;
        }
        let done = &mut repair.done;
        done.receives += 1;
        done.largest_ns = done.largest_ns.max(jump);
        done.largest_shift_ns = done.largest_shift_ns.max(flow.shift);
        true
    }

    /// What the controlled logical clock did (nothing without repair).
    pub(super) fn repairs(&self) -> Repairs {
        self.repair.as_ref().map_or_else(Repairs::default, |r| r.done)
    }

    /// True if the controlled logical clock may move events: the ranks
    /// must then be read in causal order, not one at a time.
    pub(super) fn repairs_tachyons(&self) -> bool {
        self.repair.is_some()
    }

    fn head_date(&self, i: usize) -> u64 {
        self.flows[i].head().map_or(u64::MAX, merge_date)
    }

    fn sender_may_send(&self, src: u32) -> bool {
        src != ANY && self.flow_of.get(&src).is_some_and(|&s| self.flows[s].head().is_some())
    }

    /// Drops the event out and reads on in its flow, which stays current
    /// while it has more.
    pub(super) fn release_out(&mut self) -> Result<()> {
        let Some(i) = self.out.take() else { return Ok(()) };
        self.flows[i].advance()?;
        match self.flows[i].head() {
            Some(next) => self.current = Some((merge_date(next), i)),
            None => self.release_waiting_on(self.flows[i].clock.summary.rank),
        }
        Ok(())
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
