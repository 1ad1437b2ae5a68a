//! Event traces of grappe programs.
//!
//! * [`Recorder`]: per-rank recording on the hot path, a few stores into a
//!   preallocated buffer, flushed to a local file (never the network);
//! * [`format`](mod@format): the compact self-describing file format;
//! * [`TraceFile`]: the streaming reader, with errors that name the file,
//!   the offset and what was expected.
#![warn(unsafe_op_in_unsafe_fn, missing_docs)]

pub mod alpha;
pub mod clock;
pub mod code_site;
pub mod event;
mod file_definitions;
pub mod format;
pub mod interned;
mod names;
pub mod raw;
mod reader;
mod recorder;
pub mod resume;
pub mod site;
mod writer;

pub use clock::TraceClock;
pub use event::{ANY, Body, CollectiveKind, Completion, Event, EventKind};
pub use file_definitions::FileDefinitions;
pub use format::{ClockInfo, ClockSample, FileHeader, Footer, MergedRank, TscAnchor};
pub use interned::{Members, Text};
pub use raw::RawEvent;
pub use reader::{Ending, Events, TraceError, TraceFile};
pub use recorder::{
    FlushPolicy, Identity, Recorder, RecorderConfig, TimeMap, file_for, rank_of_file, remove_rank_files,
};
pub use site::Site;
pub use writer::{RECORDER_BLOCK_EVENTS, TraceWriter};
