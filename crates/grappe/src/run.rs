//! Running a program's ranks: `grappe::run(|world| ...)`.

use grappe_comm::Communicator;
use grappe_runtime::{RunFailure, Runtime};

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
    let runtime = match Runtime::from_environment() {
        Ok(runtime) => runtime,
        Err(e) => fail(&format!("cannot start the job: {e}")),
    };
    match runtime.run_ranks(&|world| body(world).into_outcome()) {
        Ok(()) => {}
        Err(RunFailure::Reported) => grappe_runtime::exit_failed(),
        Err(RunFailure::Unreported(message)) => fail(&message),
    }
    if let Err(e) = runtime.finalize() {
        fail(&format!("process manager: {e}"));
    }
}

fn fail(message: &str) -> ! {
    grappe_runtime::say(message);
    grappe_runtime::exit_failed()
}
