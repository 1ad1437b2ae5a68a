//! What can go wrong reading a set of traces, and whose fault it is.

use std::path::PathBuf;

use grappe_trace::TraceError;

/// An error of the trace tools.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AnalysisError {
    /// A trace file is unreadable or corrupt (the error names the file and
    /// the offset).
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// A file or directory could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The system's answer.
        #[source]
        source: std::io::Error,
    },
    /// A directory holds no per-rank trace.
    #[error("{dir}: no grappe trace here (expected rank-NNNNN.gtrace files written by `grappe run --trace`)")]
    NoTraces {
        /// The directory.
        dir: PathBuf,
    },
    /// Files that do not belong to one job.
    #[error("{path}: {reason}")]
    Inconsistent {
        /// The file that does not fit.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A setting the tools cannot use.
    #[error("{0}")]
    Usage(String),
}

impl AnalysisError {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        AnalysisError::Io { path: path.into(), source }
    }
}

/// Results of the trace tools.
pub type Result<T, E = AnalysisError> = std::result::Result<T, E>;
