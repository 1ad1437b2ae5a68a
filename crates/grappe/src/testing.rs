//! Running ranks inside a test: `n` thread ranks in this process, exactly
//! as `grappe run --threads -n N` runs them, without a launcher.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::rc::Rc;

use grappe_comm::{Communicator, RankContext};
use grappe_proto::Engine;
use grappe_sched::run_workers;

use crate::job::Job;
use crate::run::finalize;

/// Runs `body` on `n` thread ranks and returns their results in rank
/// order. A rank that panics marks itself failed (its peers then get
/// [`Error::PeerDied`](crate::Error::PeerDied) instead of hanging) and the
/// first panic is re-raised here.
pub fn threads<F, R>(n: usize, body: F) -> Vec<R>
where
    F: Fn(&Communicator) -> R + Sync,
    R: Send + 'static,
{
    let job = Job::threads(n).expect("cannot set up thread ranks");
    let plan = job.worker_plan();
    let outcomes = run_workers(job.worker_specs(&plan), &job.wait, &|rank| {
        let engine = Engine::connect(job.host.clone(), rank, &job.locals, job.proto, job.wait).expect("connect");
        let ctx = Rc::new(RankContext::new(engine));
        let world = Communicator::world(ctx.clone());
        match catch_unwind(AssertUnwindSafe(|| body(&world))) {
            Ok(value) => {
                finalize(&world, &ctx).expect("finalize");
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
