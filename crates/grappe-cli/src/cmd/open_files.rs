//! The limit of open files. The trace tools read every rank's file at
//! once (the merge holds a block of each), and the launcher holds a socket
//! and pipes per process; many systems start a process with a soft limit
//! of 1024 files under a much higher hard one, so a job of more ranks
//! would stop at the 1021st file. So `grappe` lifts its soft limit to the
//! hard one, which any process may do (as `ulimit -n` would in its shell),
//! and a trace tool's error for lack of files says which limit to raise.

use nix::errno::Errno;
use nix::sys::resource::{RLIM_INFINITY, Resource, getrlimit, setrlimit};

/// A soft limit to ask for when the hard one is unlimited: Linux's
/// default cap on open files per process (`fs.nr_open`).
const UNLIMITED_ASK: u64 = 1 << 20;

/// Lifts the soft limit of open files to the hard limit; a failure leaves
/// it where it was (the error then says so, see [`hint`]).
pub(crate) fn raise_limit() {
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else { return };
    let wanted = if hard == RLIM_INFINITY { UNLIMITED_ASK } else { hard };
    if soft < wanted {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, wanted, hard);
    }
}

/// What to do about `error`, if it is for lack of open files; `holder`
/// says what takes a file per rank or process.
pub(crate) fn hint(error: &(dyn std::error::Error + 'static), holder: &str) -> Option<String> {
    let mut causes = std::iter::successors(Some(error), |e| e.source());
    let out_of_files = causes.any(|cause| {
        cause.downcast_ref::<std::io::Error>().is_some_and(|e| e.raw_os_error() == Some(Errno::EMFILE as i32))
    });
    if !out_of_files {
        return None;
    }
    let limit = getrlimit(Resource::RLIMIT_NOFILE).map_or_else(|_| "unknown".to_owned(), |(soft, _)| soft.to_string());
    Some(format!(
        "{holder}, and this process may open {limit} files: raise the hard limit \
         (`ulimit -Hn`, or `LimitNOFILE` of the session) above the number of ranks"
    ))
}
