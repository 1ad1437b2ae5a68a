//! Running ranks inside a test: `n` thread ranks in this process, exactly
//! as `grappe run --threads -n N` runs them, without a launcher.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::rc::Rc;

use grappe_comm::{Communicator, RankContext};
use grappe_proto::Engine;
use grappe_sched::run_workers;

use crate::job::Job;
use crate::process::finalize;

/// Runs `body` on `n` thread ranks and returns their results in rank
/// order. A rank that panics marks itself failed (its peers then get
/// [`Error::PeerDied`](grappe_comm::Error::PeerDied) instead of hanging) and the
/// first panic is re-raised here.
pub fn threads<F, R>(n: usize, body: F) -> Vec<R>
where
    F: Fn(&Communicator) -> R + Sync,
    R: Send + 'static,
{
    run_job(Job::threads(n, &grappe_launch::new_job_id("threads")).expect("cannot set up thread ranks"), body)
}

/// Like [`threads`], recording a trace of every rank in `dir` (flush
/// policy `full`, SBA clock sampling with 5 points per phase).
pub fn threads_traced<F, R>(n: usize, dir: &std::path::Path, body: F) -> Vec<R>
where
    F: Fn(&Communicator) -> R + Sync,
    R: Send + 'static,
{
    let mut job = Job::threads(n, &grappe_launch::new_job_id("threads")).expect("cannot set up thread ranks");
    job.trace = Some(crate::tracing::TraceSettings {
        recorder: grappe_trace::RecorderConfig {
            dir: dir.to_owned(),
            policy: grappe_trace::FlushPolicy::Full,
            buffer_events: 65536,
            extra_cost_ns: 0,
        },
        after_phase: true,
        points: 5,
        spacing: std::time::Duration::from_micros(100),
        simulate: None,
    });
    run_job(job, body)
}

fn run_job<F, R>(job: Job, body: F) -> Vec<R>
where
    F: Fn(&Communicator) -> R + Sync,
    R: Send + 'static,
{
    let plan = job.worker_plan();
    let outcomes = run_workers(job.worker_specs(&plan), &job.wait, &|rank| {
        let links = job.take_links(rank);
        let engine =
            Engine::connect_links(job.host.clone(), rank, &job.locals, links, job.proto, job.wait).expect("connect");
        let ctx = Rc::new(RankContext::new(engine));
        let world = Communicator::world(ctx.clone());
        crate::tracing::start_recorder(&job, rank, &plan, &world).expect("trace recorder");
        crate::tracing::begin(&job, &world).expect("start of tracing");
        match catch_unwind(AssertUnwindSafe(|| body(&world))) {
            Ok(value) => {
                finalize(&job, &world, &ctx).expect("finalize");
                value
            }
            Err(panic) => {
                ctx.engine().mark_failed();
                resume_unwind(panic)
            }
        }
    });
    outcomes.into_iter().map(|o| o.result.unwrap_or_else(|panic| resume_unwind(panic))).collect()
}
