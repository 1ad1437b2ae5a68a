//! The sampling phases: before the traced run, and after it (§2.8).

use std::fmt;

use serde::{Deserialize, Serialize};

/// When a sample was taken relative to the traced run (§2.8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Phase {
    /// Sampling before the application starts (used by SB and SBA).
    Before,
    /// Sampling after the application ends (used by SBA only).
    After,
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Phase::Before => "before",
            Phase::After => "after",
        })
    }
}
