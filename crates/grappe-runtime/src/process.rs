//! A process's part of a job, from start-up to its end: its ranks run
//! either as bodies given to [`Runtime::run_ranks`] (`grappe::run`), or
//! one at a time between [`Runtime::start_rank`] and [`Rank::finish`] on
//! the calling thread (MPI's `MPI_Init` and `MPI_Finalize`). Both start
//! and end a rank the same way, and a failing rank ends the job the same
//! way.

use std::ops::Range;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use grappe_comm::{Communicator, JobControl, RankContext};
use grappe_launch::{Pmi, PmiError, PmiKind};
use grappe_proto::{Engine, Failure};
use grappe_sched::{RankOutcome, run_workers};

use crate::StartError;
use crate::job::{Job, WorkerPlan};

/// One process's part of a running job: its ranks, the host segment they
/// share, the process manager, and how the process ends when a rank fails.
pub struct Runtime {
    job: Job,
    end: Arc<JobEnd>,
    plan: Vec<WorkerPlan>,
}

/// Why a rank ended badly.
#[derive(Debug)]
pub enum RankFailure {
    /// Before it ran (connection, start of tracing): the caller says so
    /// (`grappe: rank R failed: ...`).
    Start(StartError),
    /// In its body or its finalize: already reported, the rank marked
    /// failed and its trace finished. The process should end through
    /// [`Runtime::exit_failed`].
    Handled,
}

/// Why [`Runtime::run_ranks`] did not end well.
#[derive(Debug)]
pub enum RunFailure {
    /// A rank failed and said so already: the process exits with status 1.
    Reported,
    /// A rank could not start, or panicked outside its body, or the
    /// process manager refused to finalize: the message says which.
    Unreported(String),
}

impl Runtime {
    /// This process's part of the job its launcher started (or a job of
    /// its own: a singleton), as the environment describes it: `grappe
    /// run`, MPICH's `mpiexec` (PMI-1), Slurm's `srun` (PMI-2), or none.
    /// No rank is connected yet.
    pub fn from_environment() -> Result<Runtime, StartError> {
        let (job, pmi) = Job::from_environment()?;
        if job.trace.is_some() {
            stop_on_sigterm(&job);
        }
        let plan = job.worker_plan();
        Ok(Runtime { job, end: Arc::new(JobEnd::new(pmi)), plan })
    }

    /// The world ranks this process hosts.
    pub fn ranks(&self) -> Range<usize> {
        self.job.mine.clone()
    }

    /// How many ranks the job has.
    pub fn world_size(&self) -> usize {
        self.job.world_size()
    }

    /// The kind of process manager that started this process.
    pub fn process_manager(&self) -> PmiKind {
        self.end.pmi().kind()
    }

    /// Runs `body` once per rank of this process, with the world
    /// communicator, on the process's workers (one per core, ranks as
    /// coroutines when they outnumber them); returns when every rank has
    /// finished. A rank that panics or returns an error is reported
    /// (`grappe: rank R failed: ...`), marked failed so that its peers stop
    /// waiting for it, and its trace kept; see [`Rank::fail`].
    pub fn run_ranks<F>(&self, body: &F) -> Result<(), RunFailure>
    where
        F: Fn(&Communicator) -> Result<(), String> + Sync,
    {
        let outcomes = self.run_each(&|rank| self.run_rank(rank, body));
        let mut reported = false;
        for outcome in outcomes {
            match outcome.result {
                Ok(Ok(())) => {}
                Ok(Err(RankFailure::Handled)) => reported = true,
                Ok(Err(RankFailure::Start(error))) => {
                    return Err(RunFailure::Unreported(format!("rank {} failed: {error}", outcome.rank)));
                }
                Err(panic) => {
                    let message = format!("rank {} failed: {}", outcome.rank, panic_message(&panic));
                    return Err(RunFailure::Unreported(message));
                }
            }
        }
        if reported {
            self.end.linger_if_stopped_only();
            return Err(RunFailure::Reported);
        }
        Ok(())
    }

    /// Runs `f(rank)` for every rank of this process on its workers (the
    /// first on the calling thread) and returns their outcomes in rank order.
    pub(crate) fn run_each<R: Send + 'static>(&self, f: &(dyn Fn(usize) -> R + Sync)) -> Vec<RankOutcome<R>> {
        run_workers(self.job.worker_specs(&self.plan), &self.job.wait, f)
    }

    /// One rank from start to finalize.
    fn run_rank<F>(&self, rank: usize, body: &F) -> Result<(), RankFailure>
    where
        F: Fn(&Communicator) -> Result<(), String> + Sync,
    {
        let started = self.start_rank(rank)?;
        let failure = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(started.world()))) {
            Ok(result) => result.err(),
            Err(panic) => Some(panic_message(&panic)),
        };
        match failure {
            Some(message) => Err(started.fail(self, &message)),
            None => started.finish(self),
        }
    }

    /// Starts world rank `rank` of this process on the calling thread,
    /// which must then run it to its end: connects its engine to the other
    /// ranks and starts its trace (measuring what recording costs, then
    /// the first clock-sampling phase) if the job records one.
    ///
    /// A peer that failed before this rank could connect makes it stop
    /// (reported, [`RankFailure::Handled`]).
    pub fn start_rank(&self, rank: usize) -> Result<Rank, RankFailure> {
        let job = &self.job;
        let links = job.take_links(rank);
        let engine = match Engine::connect_links(job.host.clone(), rank, &job.locals, links, job.proto, job.wait) {
            Ok(engine) => engine,
            // A peer failed before this rank could start (its worker was busy
            // with other ranks): it stops, for that failure.
            Err(e @ (grappe_proto::Error::PeerDied { .. } | grappe_proto::Error::PeerLost { .. })) => {
                grappe_proto::mark_stopped(&job.host, job.local(rank));
                self.end.report(rank, &Failure::After(e.to_string()), &e.to_string());
                return Err(RankFailure::Handled);
            }
            Err(e) => return Err(RankFailure::Start(StartError::Connect { rank, source: e.into() })),
        };
        let ctx = Rc::new(RankContext::with_job_control(engine, self.end.clone()));
        crate::matches::install(&job.matches, rank, &ctx).map_err(RankFailure::Start)?;
        let mut started = Rank { rank, world: Communicator::world(ctx.clone()), ctx, started: Instant::now() };
        crate::tracing::start_recorder(job, rank, &self.plan, &started.world).map_err(RankFailure::Start)?;
        if let Err(e) = crate::tracing::begin(job, &started.world) {
            return Err(started.fail(self, &format!("start of tracing: {e}")));
        }
        started.started = Instant::now();
        Ok(started)
    }

    /// Starts the one rank of a process that hosts exactly one (see
    /// [`start_rank`](Self::start_rank)): what an API whose ranks are
    /// processes (MPI's C library: C globals are per process) needs. The
    /// calling thread, which runs the rank, is bound to the rank's core
    /// as a worker of `grappe::run` is (`GRAPPE_BIND`): an unbound rank
    /// on a loaded host waits for the scheduler at every message.
    pub fn start_only_rank(&self) -> Result<Rank, RankFailure> {
        let ranks = self.ranks();
        if ranks.len() != 1 {
            return Err(RankFailure::Start(StartError::NotOneRank { ranks: ranks.len() }));
        }
        if let (true, Some(cpu)) = (self.job.wait.bind, self.plan.first().and_then(|worker| worker.cpu)) {
            // As run_workers does: a rank that cannot be bound runs unbound.
            let _ = grappe_sched::bind_current_thread(cpu);
        }
        self.start_rank(ranks.start)
    }

    /// Ends a process whose ranks have all ended and none failed: tells
    /// the process manager, leaving it the run time of this process's
    /// slowest rank (`RUN_TIME_KEY`-P, nanoseconds; `grappe run
    /// --report-time` prints the job's).
    pub fn finalize(self) -> Result<(), PmiError> {
        self.job.finish_heartbeats();
        let mut pmi = self.end.pmi();
        let longest = self.end.longest_run_ns.load(Ordering::Acquire);
        let process = pmi.rank();
        pmi.put(&format!("{}{process}", grappe_launch::env::RUN_TIME_KEY), &longest.to_string())?;
        pmi.finalize()
    }

    /// Ends a process one of whose ranks failed (see [`RankFailure::Handled`]):
    /// if none of its ranks caused the failure, after the process manager
    /// had time to stop the job (so that the launcher reports the cause),
    /// with exit status 1.
    pub fn exit_failed(&self) -> ! {
        self.end.linger_if_stopped_only();
        exit_failed()
    }
}

/// Exit status 1, or, if the job was stopped by a signal, the death the
/// signal would have caused, now that the traces are written.
pub fn exit_failed() -> ! {
    if let Some(signal) = grappe_proto::stop::requested() {
        let _ = signal_hook::low_level::emulate_default_handler(signal);
    }
    std::process::exit(1)
}

/// A started rank of this process, run by the thread that started it.
pub struct Rank {
    rank: usize,
    ctx: Rc<RankContext>,
    world: Communicator,
    /// The end of its start-up (tracing begun): where its run time starts.
    started: Instant,
}

impl Rank {
    /// The world communicator of this rank.
    pub fn world(&self) -> &Communicator {
        &self.world
    }

    /// The rank's number in the world.
    pub fn number(&self) -> usize {
        self.rank
    }

    /// The rank's end after a body that succeeded: its trace completed
    /// (second clock-sampling phase), then it waits for every other rank,
    /// so that no process exits while a peer still reads its memory. A
    /// failure there is handled as [`fail`](Self::fail) does.
    ///
    /// Its run time, from the end of its start-up to here (the start of
    /// finalize), is counted for [`Runtime::finalize`].
    pub fn finish(self, runtime: &Runtime) -> Result<(), RankFailure> {
        let ran = u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        runtime.end.longest_run_ns.fetch_max(ran, Ordering::AcqRel);
        match self.finalize(runtime) {
            Ok(()) => Ok(()),
            Err(e) => Err(self.fail(runtime, &format!("finalize: {e}"))),
        }
    }

    /// [`finish`](Self::finish) without the failure handling.
    fn finalize(&self, runtime: &Runtime) -> grappe_comm::Result<()> {
        finalize(&runtime.job, &self.world, &self.ctx)
    }

    /// The failure path of a rank: marked failed (see
    /// [`Engine::mark_failed`]) so that its peers stop waiting for it, its
    /// trace finished for the post-mortem, and reported on stderr:
    /// `grappe: rank R failed: MESSAGE` if it is the job's first failure,
    /// `stopped` if it follows another. The process ends at a deadline
    /// (1 s for the cause, 3 s for one that only stopped) even if its
    /// other ranks are still running.
    pub fn fail(self, runtime: &Runtime, message: &str) -> RankFailure {
        runtime.end.fail(self.rank, &self.ctx, message)
    }
}

/// How long a process in which a rank failed waits for its other ranks
/// (which see the failure in their next runtime call) to end and finish
/// their traces before it exits anyway.
const FAILING_GRACE: Duration = Duration::from_secs(1);

/// How long a process whose ranks only stopped after another rank's
/// failure waits for the process manager to stop the job before it exits
/// anyway. The process where the failure began exits within
/// [`FAILING_GRACE`] of it; a launcher reports the first process that
/// ends badly, which must be that one.
const STOPPED_LINGER: Duration = Duration::from_secs(3);

/// How long a rank that aborts the job waits for a PMI-1 process manager,
/// told of the abort, to stop this process (it then exits with the
/// abort's code) before it exits with the code itself.
const ABORT_PATIENCE: Duration = Duration::from_secs(2);

/// How long a traced process that received SIGTERM lets its ranks unwind
/// out of their runtime calls (and write their traces) before it dies of
/// the signal anyway: a rank computing outside the runtime never sees it.
const STOP_GRACE: Duration = Duration::from_secs(1);

/// How the ranks of this process end the job, or their process, when one
/// fails or aborts; and the process manager, finalized at a clean end.
struct JobEnd {
    pmi: Mutex<Box<dyn Pmi>>,
    /// A process manager stops the job when a process fails or aborts
    /// (not a singleton).
    managed: bool,
    /// Set by the first rank of this process that fails or stops.
    failing: AtomicBool,
    /// Set when a rank of this process failed first (not after another
    /// rank's failure), or aborted.
    caused: AtomicBool,
    /// When the process ends, once a rank failed.
    deadline: OnceLock<Instant>,
    /// The longest run time of a rank of this process that finished, in
    /// nanoseconds (see [`Rank::finish`]).
    longest_run_ns: AtomicU64,
}

impl JobEnd {
    fn new(pmi: Box<dyn Pmi>) -> JobEnd {
        JobEnd {
            managed: pmi.kind() != PmiKind::Singleton,
            pmi: Mutex::new(pmi),
            failing: AtomicBool::new(false),
            caused: AtomicBool::new(false),
            deadline: OnceLock::new(),
            longest_run_ns: AtomicU64::new(0),
        }
    }

    fn pmi(&self) -> MutexGuard<'_, Box<dyn Pmi>> {
        self.pmi.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The failure path of a rank: marked failed (see
    /// [`Engine::mark_failed`]), its trace finished for the post-mortem,
    /// and reported.
    fn fail(&self, rank: usize, ctx: &RankContext, message: &str) -> RankFailure {
        let failure = ctx.engine().mark_failed();
        if let Some(mut recorder) = ctx.take_recorder() {
            let _ = recorder.finish();
        }
        self.report(rank, &failure, message);
        RankFailure::Handled
    }

    /// Says why the process's first failing rank failed, or that it
    /// stopped because of an earlier failure (unless the job is being
    /// stopped anyway), and sees that the process ends: when its other
    /// ranks have, or at a deadline (see [`FAILING_GRACE`] and
    /// [`STOPPED_LINGER`]).
    fn report(&self, rank: usize, failure: &Failure, message: &str) {
        if *failure == Failure::First {
            self.caused.store(true, Ordering::Release);
        }
        if self.failing.swap(true, Ordering::AcqRel) {
            return;
        }
        if grappe_proto::stop::requested().is_none() {
            match failure {
                Failure::First => say(&format!("rank {rank} failed: {message}")),
                Failure::After(_) => say(&format!("rank {rank} stopped: {message}")),
            }
        }
        let grace = match failure {
            Failure::After(_) if self.lingers() => STOPPED_LINGER,
            _ => FAILING_GRACE,
        };
        let deadline = *self.deadline.get_or_init(|| Instant::now() + grace);
        let watchdog = std::thread::Builder::new().name("grappe-failing".into()).spawn(move || {
            std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
            std::process::exit(1);
        });
        if watchdog.is_err() {
            std::process::exit(1);
        }
    }

    /// Whether a process whose ranks only stopped should wait for the
    /// process manager: there is one, and it is not stopping the job yet.
    fn lingers(&self) -> bool {
        self.managed && grappe_proto::stop::requested().is_none()
    }

    /// Called once every rank of the process has ended, some of them
    /// badly: if none failed first, waits for the process manager to stop
    /// the job (see [`STOPPED_LINGER`]).
    fn linger_if_stopped_only(&self) {
        if self.caused.load(Ordering::Acquire) || !self.lingers() {
            return;
        }
        if let Some(deadline) = self.deadline.get() {
            std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
        }
    }
}

/// Prints `grappe: MESSAGE` on stderr in one write. A process about to
/// end the job says why this way: `eprintln!` writes its pieces one by
/// one, and a launcher that kills the job at the abort (hydra) may then
/// forward only `grappe: `.
pub fn say(message: &str) {
    use std::io::Write;
    let line = format!("grappe: {message}\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

impl JobControl for JobEnd {
    fn abort(&self, ctx: &RankContext, _rank: usize, code: i32, message: &str) -> ! {
        // Before the rank is marked failed: the other ranks of this
        // process, which then fail too, say nothing more.
        self.caused.store(true, Ordering::Release);
        self.failing.store(true, Ordering::Release);
        say(message);
        ctx.leave();
        // The line above says why; the launcher's own names the process
        // and the code.
        let mut pmi = self.pmi();
        let told = pmi.abort(code, "").is_ok();
        // A PMI-1 launcher (`grappe run`, hydra) stops every process, this
        // one too, and exits with the abort's code: waiting for it makes
        // `grappe run` name the abort rather than this process's exit.
        // Slurm kills the step and reports each task's status: this one's
        // had better be the code.
        if told && pmi.kind() == PmiKind::Simple1 {
            std::thread::sleep(ABORT_PATIENCE);
        }
        std::process::exit(code)
    }

    fn stop(&self, ctx: &RankContext, rank: usize, message: &str) -> ! {
        self.report(rank, &Failure::After(message.to_owned()), message);
        ctx.leave();
        if let Some(deadline) = self.deadline.get() {
            std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
        }
        std::process::exit(1)
    }
}

/// Traced jobs: SIGTERM (the launcher stopping the job) makes every rank
/// of this process waiting in a runtime call fail with
/// [`Error::Stopped`](grappe_proto::Error::Stopped), so that it ends
/// through [`fail`] with its trace finished. After [`STOP_GRACE`] the
/// process dies of the signal as if it had no handler.
fn stop_on_sigterm(job: &Job) {
    use signal_hook::consts::SIGTERM;
    let mut signals = match signal_hook::iterator::Signals::new([SIGTERM]) {
        Ok(signals) => signals,
        Err(e) => {
            eprintln!("grappe: warning: cannot handle SIGTERM ({e}): a stopped job loses its unwritten trace events");
            return;
        }
    };
    let host = job.host.clone();
    let locals: Vec<usize> = job.mine.clone().map(|rank| job.local(rank)).collect();
    let watcher = std::thread::Builder::new().name("grappe-sigterm".into()).spawn(move || {
        let Some(signal) = signals.forever().next() else { return };
        grappe_proto::stop::request(signal);
        // Wake the ranks that sleep in a wait: they see the request at once.
        for &local in &locals {
            host.doorbell(host.control(local).bell.load(Ordering::Acquire) as usize).ring();
        }
        std::thread::sleep(STOP_GRACE);
        let _ = signal_hook::low_level::emulate_default_handler(signal);
        std::process::exit(128 + signal);
    });
    if let Err(e) = watcher {
        eprintln!("grappe: warning: cannot watch for SIGTERM ({e}): a stopped job loses its unwritten trace events");
    }
}

/// The end of a rank: its trace completed, then every rank waits for the
/// others before leaving, so no process exits while a peer still reads its
/// memory.
pub(crate) fn finalize(job: &Job, world: &Communicator, ctx: &RankContext) -> grappe_comm::Result<()> {
    let rank = world.rank();
    if let Err(e) = crate::matches::finish(rank, ctx) {
        eprintln!("grappe: rank {rank}: cannot save its match log: {e}");
    }
    crate::tracing::end(job, world, ctx)?;
    world.barrier()?;
    Ok(ctx.engine().finalize()?)
}

pub(crate) fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        format!("panicked: {s}")
    } else if let Some(s) = panic.downcast_ref::<String>() {
        format!("panicked: {s}")
    } else {
        "panicked".to_owned()
    }
}
