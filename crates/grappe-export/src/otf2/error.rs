//! What can go wrong writing an OTF2 archive, and whose fault it is.

use std::path::PathBuf;

use grappe_analysis::AnalysisError;

/// An error of the OTF2 export.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Otf2Error {
    /// The OTF2 library refused a call.
    #[error("{call} failed: {name} ({description}, OTF2 error code {code}){}", SaidText(said))]
    Call {
        /// The OTF2 function.
        call: &'static str,
        /// Its `OTF2_ErrorCode`.
        code: i32,
        /// `OTF2_Error_GetName` of the code.
        name: String,
        /// `OTF2_Error_GetDescription` of the code.
        description: String,
        /// What the library said of it (its error messages, which it
        /// would have printed on standard error).
        said: Vec<String>,
    },
    /// An OTF2 call that returns a handle returned none (these calls give
    /// no error code: what the library said of it is the why).
    #[error("{call} failed for {what}{}", SaidText(said))]
    NoHandle {
        /// The OTF2 function.
        call: &'static str,
        /// What it was asked for.
        what: String,
        /// What the library said of it.
        said: Vec<String>,
    },
    /// A file or directory of the archive cannot be created there.
    #[error("cannot create {path}: {source}")]
    Create {
        /// The archive's directory, its anchor file, or the directory
        /// they go in.
        path: PathBuf,
        /// The system's answer.
        #[source]
        source: std::io::Error,
    },
    /// The archive would overwrite files already there.
    #[error("{path}: already exists; remove it or export under another name (OTF2 never writes into an archive)")]
    Exists {
        /// The anchor file or archive directory found.
        path: PathBuf,
    },
    /// An archive path OTF2 cannot take.
    #[error("{path}: {reason}")]
    InvalidPath {
        /// The path.
        path: PathBuf,
        /// Why it is refused.
        reason: &'static str,
    },
    /// The output directory could not be created or inspected.
    #[error("{path}: {source}")]
    Io {
        /// The directory.
        path: PathBuf,
        /// The system's answer.
        #[source]
        source: std::io::Error,
    },
    /// More definitions of one kind than OTF2 numbers (32-bit references).
    #[error("more than {limit} {what}: beyond what an OTF2 archive can reference")]
    TooMany {
        /// What overflowed.
        what: &'static str,
        /// The limit.
        limit: u64,
    },
    /// An event for a location already written to its end.
    #[error("an event of rank {rank} after its location was closed (the export writes a location at a time)")]
    LocationClosed {
        /// World rank.
        rank: u32,
    },
    /// An event of a rank outside the job (a corrupt trace).
    #[error("an event of rank {rank} in a {world}-rank job")]
    RankOutOfRange {
        /// The event's rank.
        rank: u32,
        /// Ranks in the job.
        world: usize,
    },
    /// The traces could not be read.
    #[error(transparent)]
    Analysis(#[from] AnalysisError),
}

/// `: OTF2 says: A; B`, what the library said of an error (nothing if
/// it said nothing).
struct SaidText<'a>(&'a [String]);

impl std::fmt::Display for SaidText<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            [] => Ok(()),
            said => write!(f, "; OTF2 said: {}", said.join("; ")),
        }
    }
}
