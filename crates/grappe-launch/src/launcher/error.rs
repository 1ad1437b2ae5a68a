//! Why a job could not be launched at all.

use std::path::PathBuf;

/// A job that could not start (no child is left running when this is returned).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LaunchError {
    #[error("the number of ranks (-n) must be at least 1")]
    NoRanks,

    #[error("--threads-per-process must be at least 1")]
    NoThreadsPerProcess,

    #[error(
        "--threads-per-process {per_process} does not divide the {ranks} ranks (-n {ranks}); \
         every process must host the same number of thread ranks"
    )]
    UnevenThreads { ranks: usize, per_process: usize },

    #[error("cannot execute {}: no such file{}", program.display(), searched_note(*searched_path))]
    ProgramNotFound { program: PathBuf, searched_path: bool },

    #[error("cannot execute {}: {reason}", path.display())]
    NotExecutable { path: PathBuf, reason: String },

    #[error("cannot start process {process} ({}): {source}", path.display())]
    Spawn {
        path: PathBuf,
        process: usize,
        #[source]
        source: std::io::Error,
    },

    #[error("host {host}: {message}")]
    Host { host: String, status: u32, message: String },

    #[error("cannot set up the job ({what}): {source}")]
    Setup {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
}

fn searched_note(searched_path: bool) -> &'static str {
    match searched_path {
        true => " in any directory of PATH",
        false => "",
    }
}

impl LaunchError {
    /// Exit status for a launcher that gives up: 127 not found and 126 not executable (as a
    /// shell does), 2 for a bad command line, 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        match self {
            LaunchError::NoRanks | LaunchError::NoThreadsPerProcess | LaunchError::UnevenThreads { .. } => 2,
            LaunchError::ProgramNotFound { .. } => 127,
            LaunchError::NotExecutable { .. } => 126,
            LaunchError::Spawn { source, .. } => match source.kind() {
                std::io::ErrorKind::NotFound => 127,
                std::io::ErrorKind::PermissionDenied => 126,
                _ => 1,
            },
            LaunchError::Host { status, .. } => match *status as i32 & 0xff {
                0 => 1,
                status => status,
            },
            LaunchError::Setup { .. } => 1,
        }
    }

    pub(crate) fn setup(what: &'static str) -> impl FnOnce(std::io::Error) -> LaunchError {
        move |source| LaunchError::Setup { what, source }
    }
}
