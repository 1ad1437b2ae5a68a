//! Errors of the PMI clients, grouped by who is to blame: the environment, the caller, the
//! server, or the connection.

use crate::wire::{TextProblem, WireError};

/// Why a PMI operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PmiError {
    /// The launcher's environment is unusable (the launcher's or the user's fault).
    #[error(transparent)]
    BadEnv(#[from] crate::env::BadEnv),

    /// The caller passed a key the wire cannot carry (the caller's fault).
    #[error("PMI key {key:?} is invalid: {problem}")]
    InvalidKey { key: String, problem: TextProblem },

    /// The caller passed a value the wire cannot carry (the caller's fault).
    #[error("PMI value for key {key:?} is invalid: {problem}")]
    InvalidValue { key: String, problem: TextProblem },

    /// `get` of a key that no process put (before the last fence).
    #[error("PMI key {key:?} was not found{}", server_note(.server_message))]
    KeyNotFound { key: String, server_message: Option<String> },

    /// Reading from or writing to the PMI socket failed.
    #[error("PMI I/O failed during {during}: {source}")]
    Io {
        during: &'static str,
        #[source]
        source: std::io::Error,
    },

    /// The server closed the PMI socket (it probably stopped the job).
    #[error("the PMI server closed the connection during {during}")]
    ServerClosed { during: &'static str },

    /// The server sent bytes that are not a PMI message (the server's fault).
    #[error("the PMI server sent a malformed message during {during}: {source}")]
    Malformed {
        during: &'static str,
        #[source]
        source: WireError,
    },

    /// The server sent a well-formed message that is not the expected reply (the server's fault).
    #[error("PMI protocol error: expected {expected}, got `{got}`")]
    Protocol { expected: String, got: String },

    /// The server answered with a non-zero return code.
    #[error("the PMI server refused `{command}` with rc={rc}{}", server_note(.message))]
    Refused { command: String, rc: i64, message: Option<String> },

    /// The client was used after `finalize`.
    #[error("PMI {operation} called after finalize")]
    Finalized { operation: &'static str },
}

fn server_note(message: &Option<String>) -> String {
    match message {
        Some(text) => format!(" (server says: {text})"),
        None => String::new(),
    }
}

impl PmiError {
    pub(crate) fn io(during: &'static str) -> impl FnOnce(std::io::Error) -> PmiError {
        move |source| PmiError::Io { during, source }
    }

    pub(crate) fn malformed(during: &'static str) -> impl FnOnce(WireError) -> PmiError {
        move |source| PmiError::Malformed { during, source }
    }
}
