//! Running a program's ranks: `grappe::run(|world| ...)`.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;

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
/// A rank that panics or returns an error ends the whole process at once
/// with a message naming the rank (exit status 1); the launcher then stops
/// the other processes. Errors of start-up end it the same way.
pub fn run<F, R>(body: F)
where
    F: Fn(&Communicator) -> R + Sync,
    R: RankResult,
{
    if let Err(message) = try_run(body) {
        eprintln!("grappe: {message}");
        std::process::exit(1);
    }
}

fn try_run<F, R>(body: F) -> Result<(), String>
where
    F: Fn(&Communicator) -> R + Sync,
    R: RankResult,
{
    let (job, mut pmi) = Job::from_environment().map_err(|e| e.to_string())?;
    let plan = job.worker_plan();
    let outcomes = run_workers(job.worker_specs(&plan), &job.wait, &|rank| run_rank(&job, rank, &plan, &body));
    for outcome in outcomes {
        if let Ok(Err(message)) | Err(message) = outcome.result.map_err(|p| panic_message(&p)) {
            return Err(format!("rank {} failed: {message}", outcome.rank));
        }
    }
    pmi.finalize().map_err(|e| format!("process manager: {e}"))?;
    Ok(())
}

/// One rank from connection to finalize. A failure ends the process.
fn run_rank<F, R>(job: &Job, rank: usize, plan: &[WorkerPlan], body: &F) -> Result<(), String>
where
    F: Fn(&Communicator) -> R + Sync,
    R: RankResult,
{
    let engine =
        Engine::connect(job.host.clone(), rank, &job.locals, job.proto, job.wait).map_err(|e| e.to_string())?;
    let ctx = Rc::new(RankContext::new(engine));
    let world = Communicator::world(ctx.clone());
    crate::tracing::start_recorder(job, rank, plan, &world)?;
    crate::tracing::begin(job, &world).map_err(|e| format!("start of tracing: {e}"))?;
    let failure = match catch_unwind(AssertUnwindSafe(|| body(&world))) {
        Ok(result) => result.into_outcome().err(),
        Err(panic) => Some(panic_message(&panic)),
    };
    if let Some(message) = failure {
        ctx.engine().mark_failed();
        eprintln!("grappe: rank {rank} failed: {message}");
        // Keep what was recorded, for the post-mortem.
        if let Some(mut recorder) = ctx.take_recorder() {
            let _ = recorder.finish();
        }
        std::process::exit(1);
    }
    finalize(job, &world, &ctx).map_err(|e| format!("finalize: {e}"))
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
