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
//!
//! A stream can be narrowed to an interval of the run ([`Window`], see
//! `window`): the exports of a part of a long run.

use grappe_trace::Event;

mod blocks;
mod kway;
mod merged;
mod summary;
mod window;

use crate::error::Result;
use crate::global::GlobalTime;
use crate::matching::{Matcher, Message};
use crate::set::{Layout, Process, TraceSet};
use kway::KWay;
pub use kway::{RankFlow, RankSource, merge_date};
use merged::MergedFile;
pub use summary::{FlowSummary, IncompleteText, Repairs, StreamSummary, incomplete};
use window::{Verdict, Windowing};
pub use window::{Window, WindowSummary};

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
    /// The plain way has nothing more to give: the stream ended, or it is
    /// windowed (one test on the hot path for both).
    done: bool,
    /// Ranks of the job with no trace.
    untraced: Vec<u32>,
    /// The job's id (empty in files written before it was recorded).
    job: String,
    /// Ranks that took turns on one processor (`TraceSet::turn_taking`).
    turns: Vec<Vec<u32>>,
    /// The processes that ran the ranks (`TraceSet::processes`).
    processes: Vec<Process>,
    /// The date the run starts from (see [`CausalStream::origin`]).
    origin: Option<u64>,
    /// Ranks with a trace.
    traced: usize,
    /// The interval read, if not the whole run.
    window: Option<Box<Windowing>>,
    /// The event read is kept and goes out after the regions it releases.
    kept_pending: bool,
    /// A windowed stream ended.
    window_done: bool,
    /// A windowed merged file has not looked for a resume point yet.
    resume_pending: bool,
}

/// What a windowed stream gives out next.
enum Given {
    /// A held region enter or communicator creation.
    Released,
    /// The event read.
    Read,
    End,
}

/// The message role of the held events a window gives out late.
const NO_MESSAGE: Message = Message::None;

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
        let processes = set.processes();
        let origin = match &source {
            Source::Merge(k) => k.pending_start_bound(),
            Source::Merged(m) => m.head().map(|e| e.start),
        };
        let traced = (set.world_size() as usize).saturating_sub(untraced.len());
        Ok(CausalStream {
            source,
            matcher: Matcher::new(),
            message: Message::None,
            out: false,
            done: false,
            untraced,
            job,
            turns,
            processes,
            origin,
            traced,
            window: None,
            kept_pending: false,
            window_done: false,
            resume_pending: false,
        })
    }

    /// The stream narrowed to `window`, an interval dated from
    /// [`CausalStream::origin`]: the events that overlap it, the regions
    /// open at its start and the leaves of those kept, communicator
    /// creations before its end (see [`Window`]). Call it before reading.
    /// A merged file with resume points is read from the last one before
    /// the interval.
    pub fn windowed(mut self, window: Window) -> CausalStream {
        self.window = Some(Box::new(Windowing::new(window, self.origin.unwrap_or(0), self.traced)));
        self.done = true; // every event goes through the window
        self.resume_pending = matches!(self.source, Source::Merged(_));
        self
    }

    /// What the window read and kept, if the stream has one (complete
    /// once the stream returned `None`).
    pub fn window_summary(&self) -> Option<WindowSummary> {
        self.window.as_ref().map(|w| w.summary())
    }

    /// The date the run starts from, that exports count from and windows
    /// are placed by: the earliest start of the ranks' files, or the first
    /// event's of a merged file; `None` for a trace with no event.
    pub fn origin(&self) -> Option<u64> {
        self.origin
    }

    /// The next event and its message role; `Ok(None)` at the end. An error
    /// (a corrupt block) ends the stream.
    // Always inlined: LLVM no longer does it on its own, and the call
    // costs an export 2% more instructions.
    #[inline(always)]
    pub fn next_event(&mut self) -> Result<Option<LinkedRef<'_>>> {
        if self.done {
            return if self.window.is_some() { self.next_in_window() } else { Ok(None) };
        }
        // Taken apart by `?`, which moves the result: a `match` on it
        // would drop it on every event, a call into the error's drop glue.
        let more = self.select().inspect_err(|_| self.done = true)?;
        if !more {
            self.done = true;
            return Ok(None);
        }
        Ok(self.current().map(|event| LinkedRef { event, message: &self.message }))
    }

    /// The event read last.
    fn current(&self) -> Option<&Event> {
        match &self.source {
            Source::Merge(k) => k.out_event(),
            Source::Merged(m) => m.head(),
        }
    }

    /// [`CausalStream::next_event`] through the window.
    #[inline(never)]
    fn next_in_window(&mut self) -> Result<Option<LinkedRef<'_>>> {
        let Some(mut window) = self.window.take() else { return Ok(None) };
        let given = self.advance_window(&mut window);
        self.window = Some(window);
        Ok(match given? {
            Given::Released => {
                self.window.as_ref().and_then(|w| w.given_out()).map(|event| LinkedRef { event, message: &NO_MESSAGE })
            }
            Given::Read => self.current().map(|event| LinkedRef { event, message: &self.message }),
            Given::End => None,
        })
    }

    /// Reads on until the window gives something out.
    fn advance_window(&mut self, window: &mut Windowing) -> Result<Given> {
        if std::mem::take(&mut self.resume_pending) {
            self.resume(window).inspect_err(|_| self.window_done = true)?;
        }
        loop {
            if window.next_released() {
                return Ok(Given::Released);
            }
            if std::mem::take(&mut self.kept_pending) {
                return Ok(Given::Read);
            }
            if self.window_done {
                return Ok(Given::End);
            }
            if window.is_over() {
                window.stop_early();
                self.window_done = true;
                return Ok(Given::End);
            }
            let more = self.select().inspect_err(|_| self.window_done = true)?;
            let Some(&event) = self.current().filter(|_| more) else {
                self.window_done = true;
                continue;
            };
            match window.judge(&event, &mut self.message) {
                Verdict::Skip => {}
                Verdict::Keep => return Ok(Given::Read),
                Verdict::KeepAfterReleased => self.kept_pending = true,
            }
        }
    }

    /// Starts a merged file at its last resume point before the window:
    /// the matcher takes up its messages in flight, and the window its
    /// creations, open regions and finalized ranks, as if it had read
    /// every event before the point. All of those ended before the window,
    /// so none is kept for itself.
    fn resume(&mut self, window: &mut Windowing) -> Result<()> {
        let Source::Merged(merged) = &mut self.source else { return Ok(()) };
        let Some(point) = merged.resume_before(window.from())? else { return Ok(()) };
        self.matcher.resume(point.next_message, point.in_flight.iter().map(crate::resume_points::sent));
        for event in &point.events {
            let mut message = Message::None;
            let verdict = window.judge(event, &mut message);
            debug_assert!(verdict == Verdict::Skip, "an event before the window kept: {event:?}");
        }
        Ok(())
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
        let bound = match &self.source {
            Source::Merge(k) => k.pending_start_bound(),
            Source::Merged(_) => None,
        }?;
        Some(self.held_start().map_or(bound, |held| held.min(bound)))
    }

    /// The earliest start of the region enters and creations a window holds back (a
    /// bound of what is to come, with or without
    /// [`CausalStream::pending_start_bound`]).
    pub fn held_start(&self) -> Option<u64> {
        self.window.as_ref().and_then(|w| w.held_start())
    }

    /// Ranks of the job with no trace: messages from or to them have no
    /// other half in the stream.
    pub fn untraced(&self) -> &[u32] {
        &self.untraced
    }

    /// Ranks of the job with a trace, in rank order.
    pub fn traced_ranks(&self) -> impl Iterator<Item = u32> + '_ {
        let world = (self.traced + self.untraced.len()) as u32;
        (0..world).filter(|rank| self.untraced.binary_search(rank).is_err())
    }

    /// Ranks that took turns on one processor: a rank's calls last while
    /// the others of its group run.
    pub fn turn_taking(&self) -> &[Vec<u32>] {
        &self.turns
    }

    /// The processes that ran the traced ranks, in order of their lowest
    /// rank (empty for a merged file that does not say).
    pub fn processes(&self) -> &[Process] {
        &self.processes
    }

    /// The job's id (empty in files written before it was recorded).
    pub fn job(&self) -> &str {
        &self.job
    }

    /// The matcher (sends not yet received, counts).
    pub fn matcher(&self) -> &Matcher {
        &self.matcher
    }

    /// The ranks of a stream of per-rank files, not windowed and not read
    /// yet, each to be opened and read on its own in its file's order (on
    /// global time, checked for local order as the merge checks it);
    /// `Err(self)` for any other stream. For a tool that needs no causal
    /// order across ranks: it then holds one rank's reader at a time, and
    /// skips the merge and the matching.
    pub fn into_ranks(self) -> std::result::Result<Vec<RankSource>, Box<CausalStream>> {
        let fresh = !self.out && !self.done && self.window.is_none();
        match self.source {
            Source::Merge(k) if fresh && !k.repairs_tachyons() => Ok(k.into_ranks()),
            source => Err(Box::new(CausalStream { source, ..self })),
        }
    }

    /// Totals; complete once the stream returned `None`.
    pub fn summary(&self) -> StreamSummary {
        let (flows, deferred, forced, repairs) = match &self.source {
            Source::Merge(k) => (k.summaries().cloned().collect(), k.deferred, k.forced, k.repairs()),
            Source::Merged(m) => (m.summaries(), 0, 0, Repairs::default()),
        };
        StreamSummary {
            flows,
            deferred,
            forced,
            repairs,
            matched: self.matcher.matched(),
            unmatched_receives: self.matcher.unmatched_receives(),
            unreceived_sends: self.matcher.pending_sends(),
            origin: self.origin,
            window: self.window_summary(),
            merged_ending: match &self.source {
                Source::Merged(m) => m.ending().cloned(),
                Source::Merge(_) => None,
            },
        }
    }
}

impl Iterator for CausalStream {
    type Item = Result<Linked>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_event().map(|linked| linked.map(|l| l.to_linked())).transpose()
    }
}
