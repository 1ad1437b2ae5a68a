//! What can go wrong re-simulating a trace.

use std::path::PathBuf;

/// An error of the re-simulation.
#[derive(Debug, thiserror::Error)]
pub enum ResimError {
    /// Reading the trace failed.
    #[error(transparent)]
    Analysis(#[from] grappe_analysis::AnalysisError),
    /// The trace contradicts itself.
    #[error("rank {rank}, event {index}: {what}")]
    Inconsistent {
        /// Rank.
        rank: u32,
        /// Index of the event in the rank's events.
        index: usize,
        /// What is wrong.
        what: &'static str,
    },
    /// The ranks wait for each other in a cycle the trace cannot resolve.
    #[error("the traversal is stuck: {waiting}")]
    Stuck {
        /// What each stuck rank waits for.
        waiting: String,
    },
    /// Writing the output failed.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The output.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// Results of this crate.
pub type Result<T> = std::result::Result<T, ResimError>;
