//! What one rank owns: its protocol engine and its communicator bookkeeping.

use std::cell::{Cell, RefCell, RefMut};

use grappe_proto::Engine;
use grappe_trace::{Recorder, TraceClock};

/// The per-rank state shared by all communicators of the rank.
///
/// A rank runs on one thread (or coroutine) at a time, so interior
/// mutability with `RefCell` is all the synchronisation needed; engine
/// borrows never outlive one call.
pub struct RankContext {
    engine: RefCell<Engine>,
    /// Next context id this rank has not used (see `Communicator::dup`).
    next_ctx: Cell<u32>,
    /// The rank's trace recorder, when tracing is on.
    recorder: RefCell<Option<Recorder>>,
    /// `recorder.is_some()`, readable without a borrow: the one branch
    /// tracing costs when it is off.
    tracing: Cell<bool>,
    /// The recorder's clock, readable without a borrow: a call's start
    /// date costs the read alone.
    clock: Cell<TraceClock>,
}

impl RankContext {
    /// Wraps a connected engine; it records nothing until
    /// [`Self::install_recorder`].
    pub fn new(engine: Engine) -> RankContext {
        RankContext {
            engine: RefCell::new(engine),
            next_ctx: Cell::new(crate::communicator::FIRST_FREE_CTX),
            tracing: Cell::new(false),
            // Replaced by the recorder's at installation; reading the raw
            // clock here needs no calibration of the counter.
            clock: Cell::new(TraceClock::monotonic_raw()),
            recorder: RefCell::new(None),
        }
    }

    /// True if this rank records a trace.
    #[inline(always)]
    pub fn tracing(&self) -> bool {
        self.tracing.get()
    }

    /// The current date in the recorder's ticks (what
    /// [`Recorder::now`] gives, without borrowing the recorder).
    #[inline(always)]
    pub fn trace_now(&self) -> u64 {
        self.clock.get().now()
    }

    /// Starts recording with `recorder` (the rank records nothing yet).
    pub fn install_recorder(&self, recorder: Recorder) {
        assert!(self.recorder.borrow().is_none(), "rank {} has a recorder already", recorder.rank());
        self.clock.set(recorder.clock());
        *self.recorder.borrow_mut() = Some(recorder);
        self.tracing.set(true);
    }

    /// Turns recording off and on around the recorder, which stays: for
    /// timing a call untraced then traced (`measure_call_recording`).
    pub(crate) fn pause_tracing(&self, paused: bool) {
        self.tracing.set(!paused && self.recorder.borrow().is_some());
    }

    /// The recorder, for one event. Panics if tracing is off: check
    /// [`Self::tracing`] first.
    pub fn recorder(&self) -> RefMut<'_, Recorder> {
        RefMut::map(self.recorder.borrow_mut(), |r| r.as_mut().expect("tracing is on"))
    }

    /// Takes the recorder out (to finish the trace at finalize).
    pub fn take_recorder(&self) -> Option<Recorder> {
        self.tracing.set(false);
        self.recorder.borrow_mut().take()
    }

    /// The engine, for one operation.
    #[inline]
    pub fn engine(&self) -> RefMut<'_, Engine> {
        self.engine.borrow_mut()
    }

    /// The engine, unless an operation holds it.
    pub(crate) fn try_engine(&self) -> Option<RefMut<'_, Engine>> {
        self.engine.try_borrow_mut().ok()
    }

    pub(crate) fn next_ctx(&self) -> u32 {
        self.next_ctx.get()
    }

    pub(crate) fn used_ctx(&self, ctx: u32) {
        self.next_ctx.set(self.next_ctx.get().max(ctx + crate::communicator::CTX_STRIDE));
    }
}
