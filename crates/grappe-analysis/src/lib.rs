//! The analyses of grappe traces, over the files `grappe run --trace`
//! writes.
//!
//! The pipeline every tool shares:
//!
//! 1. [`TraceSet`] finds the files of one job (a directory of per-rank
//!    traces, or one merged trace) and checks they belong together;
//! 2. [`GlobalTime`] puts every rank on the reference rank's clock: an
//!    exact rebase for ranks sharing its clock, a fitted model (SB/SBA,
//!    `grappe_clock`) for the others;
//! 3. [`CausalStream`] merges the ranks' events on global time, sends
//!    before their receives, and matches messages ([`Matcher`]), reading
//!    one block per rank at a time.
//!
//! The analyses consume that stream: [`check()`], the [`failed`] calls,
//! the [`profile`], [`merge_to_file`], and [`info()`] (which reads files
//! directly). The exports to viewers' formats (`grappe-export`) and the
//! HTML report (`grappe-report`) are written over them.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod error;
mod per_rank;
mod resume_points;

pub mod calls;
pub mod check;
pub mod collectives;
pub mod comms;
pub mod failed;
pub mod global;
pub mod info;
pub mod matching;
pub mod merge;
pub mod model_test;
pub mod profile;
pub mod set;
pub mod stream;

/// Events read between two calls of a progress callback: a call every
/// few milliseconds at tens of millions of events a second, so that a
/// progress bar moves smoothly, and a test of a counter per event.
pub const PROGRESS_EVERY: u64 = 1 << 16;

pub use calls::CallType;
pub use check::{CheckReport, check, check_observing};
pub use comms::{Comms, Communicator};
pub use error::{AnalysisError, Result};
pub use global::{Basis, GlobalOptions, GlobalTime, RankTime};
pub use info::{InfoSummary, TraceInfo, info};
pub use matching::{Channel, ChannelTally, Matcher, Message, SendSide};
pub use merge::{MergeLayout, MergeOutcome, merge_to_file, merge_to_file_with};
pub use per_rank::PerRank;
pub use set::{Layout, Process, TraceSet};
pub use stream::{CausalStream, Linked, LinkedRef, RankFlow, RankSource, Repairs, StreamSummary, merge_date};
