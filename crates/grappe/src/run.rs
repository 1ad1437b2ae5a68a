//! Running a program's ranks: `grappe::run(|world| ...)`.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use grappe_comm::{Communicator, RankContext};
use grappe_proto::Engine;
use grappe_sched::run_workers;

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
/// and finish their traces, for a second at most. Errors of start-up
/// end it at once.
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

/// How long a traced process that received SIGTERM lets its ranks unwind
/// out of their runtime calls (and write their traces) before it dies of
/// the signal anyway: a rank computing outside the runtime never sees it.
const STOP_GRACE: Duration = Duration::from_secs(1);

/// Why a rank ended badly.
enum RankFailure {
    /// Before it ran (connection, start of tracing): the process says so.
    Start(String),
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
    let (job, mut pmi) = Job::from_environment().map_err(|e| Some(e.to_string()))?;
    if job.trace.is_some() {
        stop_on_sigterm(&job);
    }
    let plan = job.worker_plan();
    let outcomes = run_workers(job.worker_specs(&plan), &job.wait, &|rank| run_rank(&job, rank, &plan, &body));
    let mut handled = false;
    for outcome in outcomes {
        match outcome.result {
            Ok(Ok(())) => {}
            Ok(Err(RankFailure::Handled)) => handled = true,
            Ok(Err(RankFailure::Start(message))) => {
                return Err(Some(format!("rank {} failed: {message}", outcome.rank)));
            }
            Err(panic) => return Err(Some(format!("rank {} failed: {}", outcome.rank, panic_message(&panic)))),
        }
    }
    if handled {
        return Err(None);
    }
    pmi.finalize().map_err(|e| Some(format!("process manager: {e}")))?;
    Ok(())
}

/// One rank from connection to finalize. A failure marks the rank failed,
/// so that its peers stop waiting for it, and keeps its trace.
fn run_rank<F, R>(job: &Job, rank: usize, plan: &[WorkerPlan], body: &F) -> Result<(), RankFailure>
where
    F: Fn(&Communicator) -> R + Sync,
    R: RankResult,
{
    let engine = Engine::connect(job.host.clone(), rank, &job.locals, job.proto, job.wait)
        .map_err(|e| RankFailure::Start(e.to_string()))?;
    let ctx = Rc::new(RankContext::new(engine));
    let world = Communicator::world(ctx.clone());
    crate::tracing::start_recorder(job, rank, plan, &world).map_err(RankFailure::Start)?;
    crate::tracing::begin(job, &world).map_err(|e| RankFailure::Start(format!("start of tracing: {e}")))?;
    let failure = match catch_unwind(AssertUnwindSafe(|| body(&world))) {
        Ok(result) => result.into_outcome().err(),
        Err(panic) => Some(panic_message(&panic)),
    };
    if let Some(message) = failure {
        return Err(fail(rank, &ctx, &message));
    }
    finalize(job, &world, &ctx).map_err(|e| fail(rank, &ctx, &format!("finalize: {e}")))
}

/// Set by the first rank of this process that fails.
static FAILING: AtomicBool = AtomicBool::new(false);

/// The failure path of a rank: marked failed, reported if it is the
/// process's first failure (the others follow from it) and the job is not
/// being stopped anyway, its trace finished for the post-mortem. The
/// process ends when its other ranks have ended too, or after
/// [`FAILING_GRACE`].
fn fail(rank: usize, ctx: &RankContext, message: &str) -> RankFailure {
    ctx.engine().mark_failed();
    let first = !FAILING.swap(true, Ordering::AcqRel);
    if first && grappe_proto::stop::requested().is_none() {
        eprintln!("grappe: rank {rank} failed: {message}");
    }
    if let Some(mut recorder) = ctx.take_recorder() {
        let _ = recorder.finish();
    }
    if first {
        let watchdog = std::thread::Builder::new().name("grappe-failing".into()).spawn(|| {
            std::thread::sleep(FAILING_GRACE);
            std::process::exit(1);
        });
        if watchdog.is_err() {
            std::process::exit(1);
        }
    }
    RankFailure::Handled
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
pub(crate) fn finalize(job: &Job, world: &Communicator, ctx: &RankContext) -> grappe_proto::Result<()> {
    crate::tracing::end(job, world, ctx)?;
    world.barrier()?;
    ctx.engine().finalize()
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
