//! A window on the causal stream: the events of one interval of the run,
//! so that a part of a long run can be exported (`grappe trace export
//! --from --to`) and the file still opens and reads right.
//!
//! Kept, in stream order:
//! - the events that overlap the interval: a call from `start` to `end`
//!   if `start < to` and `end >= from`; an instant if `from <= start < to`;
//! - the user regions open at `from` (entered before it, left after it or
//!   never): a rank's enters before `from` are held, a leave before
//!   `from` drops the innermost, and those still held when the rank's
//!   first event is kept come out just before it, in call order. That
//!   event ends at or after `from` and they enclose it, so they are open
//!   at `from`, and they are exactly those;
//! - the leave of every region kept, wherever it is, so that no viewer
//!   meets an enter without its leave;
//! - communicator creations before `to`, wherever they are, if anything
//!   else is kept: later events need their groups (OTF2's communicators,
//!   PICL's subsets). Those before `from` are held until the first event
//!   kept (of any rank) and come out just before it and the regions it
//!   releases, so one may come out before region enters of its rank that
//!   precede it; a rank's other events keep their call order. A window
//!   past the end of the run keeps nothing.
//!
//! A receive kept whose send is not becomes [`Message::SendOutside`]: the
//! output has no send to draw its arrow from. Reading stops once every
//! rank is past `to` and every region kept is left.

use grappe_trace::{Body, Event};
use serde::Serialize;

use crate::matching::Message;
use crate::per_rank::PerRank;

/// An interval of the run: ns from the start of the run (the first
/// event's start), `to` excluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Its start, ns after the run's first event started.
    pub from: u64,
    /// Its end (excluded), same reference; `u64::MAX`: the run's end.
    pub to: u64,
}

impl Window {
    /// The whole run.
    pub const ALL: Window = Window { from: 0, to: u64::MAX };
}

/// What a windowed stream read and kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WindowSummary {
    /// The interval asked for, global ns (`to` excluded).
    pub from_ns: u64,
    /// Its end.
    pub to_ns: u64,
    /// Events read.
    pub read: u64,
    /// Of them, given out.
    pub kept: u64,
    /// Receives kept whose send was not (their arrows are left out).
    pub cut_messages: u64,
    /// The latest date of the events read (start or end), global ns: an
    /// interval that kept nothing may be past the run.
    pub last_ns: u64,
    /// Whether reading stopped before the end of the trace (every rank
    /// past the interval).
    pub stopped_early: bool,
}

/// What to do with an event read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    Skip,
    Keep,
    /// Keep it after the regions it releases ([`Windowing::next_released`]).
    KeepAfterReleased,
}

/// One rank's side of the window.
#[derive(Default)]
struct RankWindow {
    /// An event of the rank was kept: its enters are no longer held.
    kept_any: bool,
    /// Regions entered before `from` and not left yet.
    held: Vec<Event>,
    /// Regions kept and not left yet.
    depth: u32,
    /// Regions entered at or after `to` and not left yet (inside those
    /// kept: their leaves come first).
    skipped: u32,
    /// Every event still to come starts at or after `to`.
    past_to: bool,
}

/// The filter of a windowed [`CausalStream`](super::CausalStream).
pub(super) struct Windowing {
    from: u64,
    to: u64,
    ranks: PerRank<RankWindow>,
    /// Ranks in the trace not yet past `to`.
    ranks_before_to: usize,
    /// An event was kept: creations are no longer held.
    kept_any: bool,
    /// Communicator creations before `from`, held until an event is kept.
    creations: Vec<Event>,
    /// Regions kept or held and not left, all ranks (a held one may
    /// still be kept by its leave).
    open: u64,
    /// Held events being given out, in order (reversed: popped).
    released: Vec<Event>,
    /// The held event given out last.
    out: Option<Event>,
    summary: WindowSummary,
}

impl Windowing {
    /// The filter of `window`, dated from `origin`, over a trace of `ranks`
    /// traced ranks.
    pub(super) fn new(window: Window, origin: u64, ranks: usize) -> Self {
        let (from, to) = (origin.saturating_add(window.from), origin.saturating_add(window.to));
        let summary = WindowSummary {
            from_ns: from,
            to_ns: to,
            read: 0,
            kept: 0,
            cut_messages: 0,
            last_ns: 0,
            stopped_early: false,
        };
        Windowing {
            from,
            to,
            ranks: PerRank::default(),
            ranks_before_to: ranks,
            kept_any: false,
            creations: Vec::new(),
            open: 0,
            released: Vec::new(),
            out: None,
            summary,
        }
    }

    /// The start of the interval, global ns.
    pub(super) fn from(&self) -> u64 {
        self.from
    }

    /// Judges the event read; a kept receive whose send is not kept has
    /// its `message` made [`Message::SendOutside`].
    pub(super) fn judge(&mut self, e: &Event, message: &mut Message) -> Verdict {
        self.summary.read += 1;
        self.note_progress(e);
        let verdict = match e.body {
            Body::RegionEnter { .. } => self.enter(e),
            Body::RegionLeave { .. } => self.leave(e),
            Body::CommCreate { .. } if e.start < self.to && !self.overlaps(e.start, e.end) => self.creation(e),
            _ if self.overlaps(e.start, e.end) => self.first_kept(e.rank),
            _ => Verdict::Skip,
        };
        if verdict != Verdict::Skip {
            self.summary.kept += 1;
            self.cut_message(message);
        }
        verdict
    }

    fn overlaps(&self, start: u64, end: u64) -> bool {
        start < self.to && end.max(start) >= self.from
    }

    /// Marks the rank past `to` once an event of it ends there (the next
    /// starts no earlier) or it finalizes; a rank finalized before `from`
    /// has no region open at it.
    fn note_progress(&mut self, e: &Event) {
        let finalize = matches!(e.body, Body::Finalize);
        self.summary.last_ns = self.summary.last_ns.max(e.end.max(e.start));
        let rank = self.ranks.get(e.rank);
        if finalize && !rank.kept_any && e.start < self.from {
            self.open -= rank.held.len() as u64;
            rank.held.clear();
        }
        if !rank.past_to && (finalize || e.end.max(e.start) >= self.to) {
            rank.past_to = true;
            self.ranks_before_to = self.ranks_before_to.saturating_sub(1);
        }
    }

    fn enter(&mut self, e: &Event) -> Verdict {
        let rank = self.ranks.get(e.rank);
        if e.start >= self.to {
            rank.skipped += 1;
            return Verdict::Skip;
        }
        if e.start < self.from && !rank.kept_any {
            rank.held.push(*e);
            self.open += 1;
            return Verdict::Skip;
        }
        rank.depth += 1;
        self.open += 1;
        self.first_kept(e.rank)
    }

    fn leave(&mut self, e: &Event) -> Verdict {
        let (from, rank) = (self.from, self.ranks.get(e.rank));
        if rank.skipped > 0 {
            rank.skipped -= 1;
            return Verdict::Skip;
        }
        if rank.kept_any {
            if rank.depth == 0 {
                return Verdict::Skip; // a leave with no enter
            }
            rank.depth -= 1;
            self.open -= 1;
            return Verdict::Keep;
        }
        if e.start < from || rank.held.is_empty() {
            self.open -= rank.held.pop().is_some() as u64;
            return Verdict::Skip;
        }
        // Leaves a region open at `from`: the rank's first event kept.
        let verdict = self.first_kept(e.rank);
        self.ranks.get(e.rank).depth -= 1;
        self.open -= 1;
        verdict
    }

    /// A creation before `from`: kept once anything else is.
    fn creation(&mut self, e: &Event) -> Verdict {
        if self.kept_any {
            return Verdict::Keep;
        }
        self.creations.push(*e);
        Verdict::Skip
    }

    /// An event of the rank is kept: if it is the rank's first, the
    /// regions held are open at `from` and go out before it, and if it is
    /// the first of all, the creations held go out before those.
    fn first_kept(&mut self, rank: u32) -> Verdict {
        let r = self.ranks.get(rank);
        if r.kept_any {
            return Verdict::Keep;
        }
        r.kept_any = true;
        let held = std::mem::take(&mut r.held);
        r.depth += held.len() as u32;
        self.kept_any = true;
        // `released` is popped: the creations, then the regions, in order.
        self.released.extend(held.into_iter().rev());
        self.released.extend(self.creations.drain(..).rev());
        if self.released.is_empty() {
            return Verdict::Keep;
        }
        self.summary.kept += self.released.len() as u64;
        Verdict::KeepAfterReleased
    }

    fn cut_message(&mut self, message: &mut Message) {
        if let Message::Received { channel, send } = *message
            && !self.overlaps(send.start, send.end)
        {
            *message = Message::SendOutside { channel, send };
            self.summary.cut_messages += 1;
        }
    }

    /// Takes the next held event to give out; false if none is left.
    pub(super) fn next_released(&mut self) -> bool {
        self.out = self.released.pop();
        self.out.is_some()
    }

    /// The held enter taken last.
    pub(super) fn given_out(&self) -> Option<&Event> {
        self.out.as_ref()
    }

    /// Whether the rest of the trace is past the window: every rank is
    /// past `to` and every region kept is left.
    pub(super) fn is_over(&self) -> bool {
        self.ranks_before_to == 0 && self.open == 0
    }

    /// The stream stops before its end.
    pub(super) fn stop_early(&mut self) {
        self.summary.stopped_early = true;
    }

    /// The earliest start of the enters and creations held (the stream's
    /// lower bound of what is still to come must count them).
    pub(super) fn held_start(&self) -> Option<u64> {
        let enters = self.ranks.iter().filter_map(|(_, r)| r.held.first().map(|e| e.start));
        enters.chain(self.creations.first().map(|e| e.start)).min()
    }

    pub(super) fn summary(&self) -> WindowSummary {
        self.summary
    }
}
