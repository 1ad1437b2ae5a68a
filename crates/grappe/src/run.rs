//! Running a program's ranks: `grappe::run(|world| ...)`.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use grappe_comm::{Communicator, JobControl, RankContext};
use grappe_launch::{Pmi, PmiKind};
use grappe_proto::{Engine, Failure};
use grappe_sched::run_workers;

use crate::StartError;
use crate::job::{Job, WorkerPlan};

/// What a rank's body may return: nothing, or a `Result` whose error
/// fails the job with its message.
pub trait RankResult {
    /// `Err(message)` if the rank failed.
    fn into_outcome(self) -> Result<(), String>;
}

impl RankResult for () {
    fn into_outcome(self) -> Result<(), String> {
        Ok(())
    }
}

impl<E: std::fmt::Display> RankResult for Result<(), E> {
    fn into_outcome(self) -> Result<(), String> {
        self.map_err(|e| e.to_string())
    }
}

/// Runs `body` once per rank of this process with the world communicator,
/// however the job was launched: `grappe run` (threads, processes or
/// both), MPICH's `mpiexec`, Slurm's `srun`, or no launcher at all (one
/// rank). Returns when every rank of the job has finished.
///
/// A rank that panics or returns an error ends the whole process with a
/// message naming the rank (exit status 1); the launcher then stops the
/// other processes. The process first lets its other ranks see the failure
/// and finish their traces, for a second at most. A rank whose error
/// follows another rank's failure (a peer died, the job is being stopped)
/// says that it stopped, not that it failed; and a process in which no
/// rank failed first waits for the process manager to stop it (3 s at
/// most) rather than exit before the process where the failure began, so
/// that the launcher reports that one. Errors of start-up end it at once.
pub fn run<F, R>(body: F)
where
    F: Fn(&Communicator) -> R + Sync,
    R: RankResult,
{
    if let Err(failure) = try_run(body) {
        if let Some(message) = failure {
            eprintln!("grappe: {message}");
        }
        // Stopped by a signal: end as the signal would have, now that the
        // traces are written.
        if let Some(signal) = grappe_proto::stop::requested() {
            let _ = signal_hook::low_level::emulate_default_handler(signal);
        }
        std::process::exit(1);
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

/// Why a rank ended badly.
enum RankFailure {
    /// Before it ran (connection, start of tracing): the process says so.
    Start(StartError),
    /// In its body or its finalize: already reported, the rank marked
    /// failed and its trace finished.
    Handled,
}

/// `Err(None)`: a rank failed and said so already.
fn try_run<F, R>(body: F) -> Result<(), Option<String>>
where
    F: Fn(&Communicator) -> R + Sync,
    R: RankResult,
{
    let (job, pmi) = Job::from_environment().map_err(|e| Some(format!("cannot start the job: {e}")))?;
    if job.trace.is_some() {
        stop_on_sigterm(&job);
    }
    let end = Arc::new(JobEnd::new(pmi));
    let plan = job.worker_plan();
    let outcomes = run_workers(job.worker_specs(&plan), &job.wait, &|rank| run_rank(&job, &end, rank, &plan, &body));
    let mut handled = false;
    for outcome in outcomes {
        match outcome.result {
            Ok(Ok(())) => {}
            Ok(Err(RankFailure::Handled)) => handled = true,
            Ok(Err(RankFailure::Start(error))) => {
                return Err(Some(format!("rank {} failed: {error}", outcome.rank)));
            }
            Err(panic) => return Err(Some(format!("rank {} failed: {}", outcome.rank, panic_message(&panic)))),
        }
    }
    if handled {
        end.linger_if_stopped_only();
        return Err(None);
    }
    end.pmi().finalize().map_err(|e| Some(format!("process manager: {e}")))?;
    Ok(())
}

/// One rank from connection to finalize. A failure marks the rank failed,
/// so that its peers stop waiting for it, and keeps its trace.
fn run_rank<F, R>(job: &Job, end: &Arc<JobEnd>, rank: usize, plan: &[WorkerPlan], body: &F) -> Result<(), RankFailure>
where
    F: Fn(&Communicator) -> R + Sync,
    R: RankResult,
{
    let engine = match Engine::connect(job.host.clone(), rank, &job.locals, job.proto, job.wait) {
        Ok(engine) => engine,
        // A peer failed before this rank could start (its worker was busy
        // with other ranks): it stops, for that failure.
        Err(e @ grappe_proto::Error::PeerDied { .. }) => {
            grappe_proto::mark_stopped(&job.host, job.locals[rank]);
            end.report(rank, &Failure::After(e.to_string()), &e.to_string());
            return Err(RankFailure::Handled);
        }
        Err(e) => return Err(RankFailure::Start(StartError::Connect { rank, source: e.into() })),
    };
    let ctx = Rc::new(RankContext::with_job_control(engine, end.clone()));
    let world = Communicator::world(ctx.clone());
    crate::tracing::start_recorder(job, rank, plan, &world).map_err(RankFailure::Start)?;
    if let Err(e) = crate::tracing::begin(job, &world) {
        return Err(end.fail(rank, &ctx, &format!("start of tracing: {e}")));
    }
    let failure = match catch_unwind(AssertUnwindSafe(|| body(&world))) {
        Ok(result) => result.into_outcome().err(),
        Err(panic) => Some(panic_message(&panic)),
    };
    if let Some(message) = failure {
        return Err(end.fail(rank, &ctx, &message));
    }
    finalize(job, &world, &ctx).map_err(|e| end.fail(rank, &ctx, &format!("finalize: {e}")))
}

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
}

impl JobEnd {
    fn new(pmi: Box<dyn Pmi>) -> JobEnd {
        JobEnd {
            managed: pmi.kind() != PmiKind::Singleton,
            pmi: Mutex::new(pmi),
            failing: AtomicBool::new(false),
            caused: AtomicBool::new(false),
            deadline: OnceLock::new(),
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
                Failure::First => eprintln!("grappe: rank {rank} failed: {message}"),
                Failure::After(_) => eprintln!("grappe: rank {rank} stopped: {message}"),
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

impl JobControl for JobEnd {
    fn abort(&self, ctx: &RankContext, _rank: usize, code: i32, message: &str) -> ! {
        // Before the rank is marked failed: the other ranks of this
        // process, which then fail too, say nothing more.
        self.caused.store(true, Ordering::Release);
        self.failing.store(true, Ordering::Release);
        eprintln!("grappe: {message}");
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
    let locals: Vec<usize> = job.mine.clone().map(|rank| job.locals[rank]).collect();
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
