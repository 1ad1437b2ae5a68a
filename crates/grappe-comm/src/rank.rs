//! What one rank owns: its protocol engine and its communicator bookkeeping.

use std::cell::{Cell, RefCell, RefMut};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use grappe_proto::Engine;
use grappe_proto::Status;
use grappe_trace::{Recorder, TraceClock};

use crate::matches::{MatchLog, Steered};
use crate::selectors::{Source, Tag};

/// How a rank ends its whole job, provided by the runtime that runs the
/// ranks (`grappe::run` speaks to the process manager). Each method ends
/// the rank with [`RankContext::leave`] (marked failed, trace finished).
pub trait JobControl: Send + Sync {
    /// Ends the whole job with exit status `code` (an abort, or a fatal
    /// error that is this rank's own): says so in one line, `message`,
    /// then asks the process manager to stop every process with `code`.
    fn abort(&self, ctx: &RankContext, rank: usize, code: i32, message: &str) -> !;

    /// Ends the rank's process because of a fatal error that followed
    /// another failure of the job (a peer died, the job is being stopped):
    /// the rank stopped, it is not the cause, and the process manager
    /// should hear of the cause first. `message` says what the rank met.
    fn stop(&self, ctx: &RankContext, rank: usize, message: &str) -> !;
}

/// Without a runtime to ask: the process ends with the code.
struct ExitProcess;

impl JobControl for ExitProcess {
    fn abort(&self, ctx: &RankContext, _rank: usize, code: i32, message: &str) -> ! {
        say(&format!("grappe: {message}"));
        ctx.leave();
        std::process::exit(code)
    }

    fn stop(&self, ctx: &RankContext, rank: usize, message: &str) -> ! {
        say(&format!("grappe: rank {rank} stopped: {message}"));
        ctx.leave();
        std::process::exit(1)
    }
}

/// The per-rank state shared by all communicators of the rank.
///
/// A rank runs on one thread (or coroutine) at a time, so interior
/// mutability with `RefCell` is all the synchronisation needed; engine
/// borrows never outlive one call.
pub struct RankContext {
    engine: RefCell<Engine>,
    /// Next context id this rank has not used (see `Communicator::dup`);
    /// shared with the schedules of pending `idup` agreements, which
    /// claim contexts while the engine progresses (see `crate::idup`).
    next_ctx: Arc<AtomicU32>,
    /// The engine requests of this rank's pending `idup` agreements, by
    /// token: a blocking communicator creation sees them through first.
    agreements: RefCell<Vec<(u64, grappe_proto::RequestId)>>,
    next_agreement: Cell<u64>,
    /// The rank's trace recorder, when tracing is on.
    recorder: RefCell<Option<Recorder>>,
    /// `recorder.is_some()`, readable without a borrow: the one branch
    /// tracing costs when it is off.
    tracing: Cell<bool>,
    /// The recorder's clock, readable without a borrow: a call's start
    /// date costs the read alone.
    clock: Cell<TraceClock>,
    /// How to end the job from this rank.
    job: Arc<dyn JobControl>,
    /// The next claim of a matched probe (see `Communicator::mprobe`).
    next_claim: Cell<i32>,
    /// The log of wildcard matches recorded or replayed, if any
    /// (`grappe run --record-matches`, `--replay-matches`).
    matches: RefCell<Option<MatchLog>>,
}

impl RankContext {
    /// Wraps a connected engine; it records nothing until
    /// [`Self::install_recorder`]. Ending the job from it ends this
    /// process (see [`Self::with_job_control`]).
    pub fn new(engine: Engine) -> RankContext {
        RankContext::with_job_control(engine, Arc::new(ExitProcess))
    }

    /// Wraps a connected engine of a job that `job` ends.
    pub fn with_job_control(engine: Engine, job: Arc<dyn JobControl>) -> RankContext {
        RankContext {
            job,
            engine: RefCell::new(engine),
            next_ctx: Arc::new(AtomicU32::new(crate::communicator::FIRST_FREE_CTX)),
            agreements: RefCell::new(Vec::new()),
            next_agreement: Cell::new(0),
            tracing: Cell::new(false),
            // Replaced by the recorder's at installation; reading the raw
            // clock here needs no calibration of the counter.
            clock: Cell::new(TraceClock::monotonic_raw()),
            recorder: RefCell::new(None),
            next_claim: Cell::new(0),
            matches: RefCell::new(None),
        }
    }

    /// A claim no other pending matched probe of this rank has: claims
    /// count up and wrap at `i32::MAX`, far beyond the messages a rank
    /// can hold claimed at once.
    pub(crate) fn next_claim(&self) -> i32 {
        let claim = self.next_claim.get();
        self.next_claim.set(if claim == i32::MAX { 0 } else { claim + 1 });
        claim
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

    /// The engine, unless a call of this rank is using it (a user
    /// operation of a reduction runs inside one).
    pub(crate) fn engine_if_free(&self) -> Option<RefMut<'_, Engine>> {
        self.engine.try_borrow_mut().ok()
    }

    /// How to end the job from this rank.
    pub(crate) fn job(&self) -> &dyn JobControl {
        &*self.job
    }

    /// For a rank about to end the job: finishes its trace, if it records
    /// one, and marks it failed (see [`Engine::mark_failed`]). Either is
    /// skipped if the rank is in the middle of using it (a user operation
    /// of a reduction that aborts): the job ends all the same.
    pub fn leave(&self) -> grappe_proto::Failure {
        self.tracing.set(false);
        if let Some(mut recorder) = self.recorder.try_borrow_mut().ok().and_then(|mut r| r.take()) {
            let rank = recorder.rank();
            if let Err(e) = recorder.finish() {
                say(&format!("grappe: rank {rank}: cannot complete its trace: {e}"));
            }
        }
        match self.engine_if_free() {
            Some(mut engine) => engine.mark_failed(),
            None => grappe_proto::Failure::First,
        }
    }

    /// Records or replays the matches of wildcard calls with `log`.
    pub fn install_match_log(&self, log: MatchLog) {
        *self.matches.borrow_mut() = Some(log);
    }

    /// Takes the match log out (to save it at the end of the run).
    pub fn take_match_log(&self) -> Option<MatchLog> {
        self.matches.borrow_mut().take()
    }

    /// What a receive or blocking probe on `ctx` posts (see [`MatchLog::steer`]).
    #[inline]
    pub(crate) fn steer(&self, ctx: u32, source: Source, tag: Tag) -> crate::Result<Steered> {
        match &mut *self.matches.borrow_mut() {
            None => Ok(Steered { source, tag, slot: None, replayed: None }),
            Some(log) => log.steer(ctx, source, tag),
        }
    }

    /// What a non-blocking probe looks for (see [`MatchLog::steer_probe`]).
    #[inline]
    pub(crate) fn steer_probe(&self, ctx: u32, source: Source, tag: Tag) -> crate::Result<Steered> {
        match &mut *self.matches.borrow_mut() {
            None => Ok(Steered { source, tag, slot: None, replayed: None }),
            Some(log) => log.steer_probe(ctx, source, tag),
        }
    }

    /// How long a replayed call waits (see [`MatchLog::with_patience`]).
    pub(crate) fn replay_patience(&self) -> std::time::Duration {
        self.matches.borrow().as_ref().map_or(crate::matches::DEFAULT_PATIENCE, MatchLog::patience)
    }

    /// The error of replayed call `index` (see [`MatchLog::diverged`]).
    pub(crate) fn replay_diverged(&self, index: usize, detail: String) -> crate::Error {
        let log = self.matches.borrow();
        log.as_ref().expect("a replayed call has a log").diverged(index, detail)
    }

    /// A non-blocking probe found `status` (see [`MatchLog::probed`]).
    pub(crate) fn probed(&self, ctx: u32, source: Source, tag: Tag, status: &Status) {
        if let Some(log) = &mut *self.matches.borrow_mut() {
            log.probed(ctx, source, tag, status);
        }
    }

    /// The call of `slot` matched `status` (see [`MatchLog::matched`]).
    #[inline]
    pub(crate) fn matched(&self, slot: Option<usize>, status: &Status) {
        if let Some(slot) = slot
            && let Some(log) = &mut *self.matches.borrow_mut()
        {
            log.matched(slot, status);
        }
    }

    /// The lowest context this rank never used: its proposal when a
    /// communicator is created. Pending `idup` agreements, which claim
    /// contexts as the engine progresses, are seen through first, so that
    /// none claims one between this proposal and the creation.
    pub(crate) fn next_ctx(&self) -> Result<u32, crate::Error> {
        self.settle_agreements()?;
        Ok(self.next_ctx.load(Ordering::Relaxed))
    }

    pub(crate) fn used_ctx(&self, ctx: u32) {
        self.next_ctx.fetch_max(ctx + crate::communicator::CTX_STRIDE, Ordering::Relaxed);
    }

    /// The counter of unused contexts, for the schedules of `idup`.
    pub(crate) fn ctx_counter(&self) -> Arc<AtomicU32> {
        self.next_ctx.clone()
    }

    /// Registers the engine request of a pending `idup` agreement: its
    /// token, for [`Self::agreement_done`].
    pub(crate) fn agreement_started(&self, id: grappe_proto::RequestId) -> u64 {
        let token = self.next_agreement.get();
        self.next_agreement.set(token + 1);
        self.agreements.borrow_mut().push((token, id));
        token
    }

    /// The agreement of `token` finished or was given up.
    pub(crate) fn agreement_done(&self, token: u64) {
        self.agreements.borrow_mut().retain(|&(t, _)| t != token);
    }

    fn settle_agreements(&self) -> Result<(), crate::Error> {
        let pending: Vec<grappe_proto::RequestId> = self.agreements.borrow().iter().map(|&(_, id)| id).collect();
        for id in pending {
            self.engine().settle(id)?;
        }
        Ok(())
    }
}

/// Writes `line` and a newline to stderr in one write: the lines of ranks
/// failing at once in several processes stay whole (`eprintln!` writes the
/// pieces of its format one by one on the unbuffered stderr).
fn say(line: &str) {
    use std::io::Write;
    let _ = std::io::stderr().lock().write_all(format!("{line}\n").as_bytes());
}
