//! What a stream saw once read: per rank, its records and how its file
//! ended; for the whole, the messages matched and the receives repaired;
//! and, in words, what the files it read lack.

use std::fmt;

use grappe_trace::Ending;
use grappe_trace::format::IncompleteRank;
use serde::Serialize;

use super::window::WindowSummary;

/// One rank's part in the stream, once it is read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlowSummary {
    /// World rank.
    pub rank: u32,
    /// Events read.
    pub events: u64,
    /// Records out of order in the file (start before the previous
    /// record's start, or end before start).
    pub disorder: u64,
    /// The first of them, described.
    pub first_disorder: Option<String>,
    /// How the file ended (`None` for the ranks of a merged file).
    #[serde(skip)]
    pub ending: Option<Ending>,
}

/// What the stream saw, once read to the end.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StreamSummary {
    /// Per rank.
    pub flows: Vec<FlowSummary>,
    /// Receives held back until their send was emitted.
    pub deferred: u64,
    /// Receives let go unmatched while their sender's trace went on: the
    /// traces contradict each other (waits in a cycle).
    pub forced: u64,
    /// Receives the controlled logical clock moved after their send
    /// (tachyon repair, off by default).
    pub repairs: Repairs,
    /// Messages matched.
    pub matched: u64,
    /// Receives with no send.
    pub unmatched_receives: u64,
    /// Sends never received.
    pub unreceived_sends: u64,
    /// The date the run starts from ([`CausalStream::origin`](super::CausalStream::origin)).
    pub origin: Option<u64>,
    /// What the window kept, if only an interval was read (the counts
    /// above are then those of the part read).
    pub window: Option<WindowSummary>,
    /// How a merged file ended, once read to its end (`None` for
    /// per-rank files: each flow has its own).
    #[serde(skip)]
    pub merged_ending: Option<Ending>,
}

impl FlowSummary {
    pub(super) fn new(rank: u32) -> Self {
        FlowSummary { rank, events: 0, disorder: 0, first_disorder: None, ending: None }
    }
}

/// The receives the controlled logical clock moved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Repairs {
    /// Receives whose end it moved to after their send's start.
    pub receives: u64,
    /// The largest move, ns.
    pub largest_ns: u64,
    /// The most a rank's events moved in all (the moves add up), ns.
    pub largest_shift_ns: u64,
}

impl std::fmt::Display for Repairs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = if self.receives == 1 { "" } else { "s" };
        write!(
            f,
            "{} receive{s} ended later, after their send (controlled logical clock; largest move {} ns, and \
             the rank's later events moved as much: {} ns at most in all)",
            self.receives, self.largest_ns, self.largest_shift_ns
        )
    }
}

/// What the files a stream read lack, one line each: cut or unfinished
/// files, events their recorders dropped, and, for a merged file, the
/// files it was made from that were so. Empty for a whole trace. Every
/// tool says it: figures of an incomplete trace are partial.
pub fn incomplete(summary: &StreamSummary) -> Vec<String> {
    let ranks = summary.flows.iter().filter_map(|flow| Some((format!("rank {}", flow.rank), flow.ending.as_ref()?)));
    let merged = summary.merged_ending.as_ref().map(|ending| ("the merged file".to_owned(), ending));
    ranks.chain(merged).flat_map(|(whose, ending)| describe_incomplete(&whose, ending)).collect()
}

/// What a file lacks (`whose`: its rank, or the merged file): its end,
/// the events its recorder dropped when its buffer was full, or, for a
/// merged file, the ends of the files it was made from.
fn describe_incomplete(whose: &str, ending: &Ending) -> Vec<String> {
    let footer = match ending {
        Ending::Complete(footer) => footer,
        Ending::Unfinished { offset } => {
            return vec![format!("{whose}: no footer after offset {offset} (its writer did not finish)")];
        }
        Ending::Cut { offset, reason } => {
            return vec![format!("{whose}: file cut at offset {offset} (expected {reason})")];
        }
    };
    let dropped = (footer.dropped > 0).then(|| {
        format!(
            "{whose}: {} events dropped when the recorder's buffer was full (flush policy end): the trace stops before the run did",
            footer.dropped
        )
    });
    let inputs = footer.incomplete.iter().map(|input| format!("{whose} was made from {}", IncompleteText(input)));
    dropped.into_iter().chain(inputs).collect()
}

/// `rank 1's file, cut at offset 3222 (expected ...): its events stop there`.
pub struct IncompleteText<'a>(pub &'a IncompleteRank);

impl fmt::Display for IncompleteText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let IncompleteRank { rank, offset, cut } = self.0;
        match cut {
            Some(reason) => write!(f, "rank {rank}'s file, cut at offset {offset} (expected {reason})")?,
            None => write!(f, "rank {rank}'s file, with no footer after offset {offset} (the rank did not finish)")?,
        }
        write!(f, ": its events stop there")
    }
}
