//! What an export wrote, and how often it says how far it got.

use grappe_analysis::StreamSummary;
use serde::Serialize;

/// What an export wrote.
#[derive(Debug, Clone, Serialize)]
pub struct ExportSummary {
    /// Events read from the stream.
    pub events: u64,
    /// Messages drawn (matched sends and receives).
    pub messages: u64,
    /// Bytes written.
    pub written_bytes: u64,
    /// Records the time-ordered formats had to move later than their date,
    /// because an earlier-dated record came after a later one was written
    /// (a trace out of order, or one the reorder buffer could not hold).
    pub late_records: u64,
    /// Names of the PICL user block types: type `i + 1` is `blocks[i]`
    /// (empty for the other formats).
    pub blocks: Vec<String>,
    /// What the stream saw.
    pub stream: StreamSummary,
}

/// Events between two calls of the progress callback.
pub(crate) const PROGRESS_EVERY: u64 = 1 << 16;
