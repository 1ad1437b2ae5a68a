//! What becomes of a failed call: its error is returned (the default),
//! or, on a communicator whose errors are fatal, the job ends (MPI's
//! `MPI_ERRORS_RETURN` and `MPI_ERRORS_ARE_FATAL`); and `abort`, which
//! ends the job with an exit status (`MPI_Abort`).

use crate::{Communicator, RankContext, Result};

/// What a communicator does with the errors of its calls. New
/// communicators (`dup`, `split`) take their parent's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ErrorHandler {
    /// The call returns the error (`MPI_ERRORS_RETURN`).
    #[default]
    Return,
    /// The job ends (`MPI_ERRORS_ARE_FATAL`): the rank prints one line
    /// naming itself, the call and the error, finishes its trace, and asks
    /// the process manager to stop every process with exit status
    /// [`FATAL_ERROR_EXIT_CODE`], as [`Communicator::abort`] does. An error
    /// that follows another failure of the job (a peer died, the job is
    /// being stopped) ends only the rank's process, as a rank returning
    /// that error would: the first failure is the one the job reports.
    Fatal,
}

/// The exit status of a job ended by a fatal error.
pub const FATAL_ERROR_EXIT_CODE: i32 = 1;

impl Communicator {
    /// Sets what this communicator does with the errors of its calls
    /// (`MPI_Comm_set_errhandler`); clones of this handle share it.
    pub fn set_error_handler(&self, handler: ErrorHandler) {
        self.inner.errors.set(handler);
    }

    /// What this communicator does with the errors of its calls.
    pub fn error_handler(&self) -> ErrorHandler {
        self.inner.errors.get()
    }

    /// Ends the whole job with exit status `code`, like `MPI_Abort`: the
    /// rank prints `grappe: rank R aborts the job with exit code CODE`,
    /// finishes its trace (when it records one), and asks the process
    /// manager to stop every process of the job, which then exits with
    /// `code` (0 included; see `JobFailure::exit_code`): `grappe run`, MPICH's `mpiexec` (PMI-1 `abort`) and Slurm's
    /// `srun` (PMI-2 `abort`; Slurm kills the step and reports the tasks
    /// killed). Without a process manager the process exits with `code`.
    /// Every rank of the job ends, whatever the communicator.
    ///
    /// The other ranks of this process lose the trace events they had not
    /// written (their files have no footer); the other processes are
    /// stopped as after any failure.
    pub fn abort(&self, code: i32) -> ! {
        let (ctx, rank) = (self.rank_context(), self.world_rank());
        ctx.job().abort(ctx, rank, code, &format!("rank {rank} aborts the job with exit code {code}"))
    }

    /// Ends the job for a fatal error of call `op` on this communicator,
    /// as [`ErrorHandler::Fatal`] does: for an API that finds errors of its
    /// own (MPI's C library: an invalid handle) and applies its handlers itself.
    #[cold]
    pub fn fail_fatally(&self, op: &str, error: &dyn std::fmt::Display) -> ! {
        fatal(self.rank_context(), self.world_rank(), op, error)
    }

    /// `result`, unless it is an error and this communicator's errors are
    /// fatal: then the job ends (see [`ErrorHandler::Fatal`]). `op` names
    /// the call in the diagnostic.
    #[inline(always)]
    pub(crate) fn handled<T>(&self, op: &'static str, result: Result<T>) -> Result<T> {
        if let Err(error) = &result {
            if self.inner.errors.get() == ErrorHandler::Fatal {
                fatal(self.rank_context(), self.world_rank(), op, error);
            }
        }
        result
    }

    /// This rank's number in the world.
    fn world_rank(&self) -> usize {
        match &self.inner.local {
            Some(local) => local.world_rank(),
            None => self.inner.group[self.inner.rank],
        }
    }
}

/// `result`, or the end of the job if it is an error and `handler` is
/// fatal: for requests, which keep their communicator's handler.
#[inline]
pub(crate) fn handled_by<T>(
    handler: ErrorHandler,
    ctx: &RankContext,
    op: &'static str,
    result: Result<T>,
) -> Result<T> {
    if let (Err(error), ErrorHandler::Fatal) = (&result, handler) {
        let rank = ctx.engine_if_free().map_or(0, |engine| engine.world_rank());
        fatal(ctx, rank, op, error);
    }
    result
}

/// A fatal error of call `op` on world rank `rank`: the job ends, or,
/// if the error follows another failure, the rank's process does.
#[cold]
pub(crate) fn fatal(ctx: &RankContext, rank: usize, op: &str, error: &dyn std::fmt::Display) -> ! {
    let earlier = ctx.engine_if_free().and_then(|engine| engine.check_peers().err());
    match earlier {
        None => ctx.job().abort(
            ctx,
            rank,
            FATAL_ERROR_EXIT_CODE,
            &format!("rank {rank} aborts the job: fatal error in {op}: {error}"),
        ),
        Some(_) => ctx.job().stop(ctx, rank, &format!("fatal error in {op}: {error}")),
    }
}
