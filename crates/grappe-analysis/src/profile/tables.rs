//! The tables of a profile, as the profiler fills them and the text and
//! the report show them.

use serde::Serialize;

use crate::calls::CallType;

/// Durations and bytes of a set of calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CallStats {
    /// Calls.
    pub count: u64,
    /// Sum of their durations, ns.
    pub total_ns: u64,
    /// Shortest, ns.
    pub min_ns: u64,
    /// Longest, ns.
    pub max_ns: u64,
    /// Bytes moved (see the module documentation).
    pub bytes: u64,
}

impl CallStats {
    pub(super) fn add(&mut self, ns: u64, bytes: u64) {
        self.min_ns = if self.count == 0 { ns } else { self.min_ns.min(ns) };
        self.max_ns = self.max_ns.max(ns);
        self.count += 1;
        self.total_ns = self.total_ns.saturating_add(ns);
        self.bytes = self.bytes.saturating_add(bytes);
    }

    /// Mean duration, ns.
    pub fn mean_ns(&self) -> f64 {
        if self.count == 0 { 0.0 } else { self.total_ns as f64 / self.count as f64 }
    }
}

/// One row of the calls-by-type table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallRow {
    /// The call type.
    pub call: CallType,
    /// Its calls.
    #[serde(flatten)]
    pub stats: CallStats,
}

/// One call site: a call type at a source location, within the innermost
/// enclosing user region.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SiteRow {
    /// The call type.
    pub call: CallType,
    /// Where the program made the call (`file:line:column`; `None` for
    /// calls recorded without one).
    pub site: Option<String>,
    /// The innermost enclosing region (`None`: outside every region).
    pub region: Option<String>,
    /// The region's source location.
    pub location: Option<String>,
    /// Its calls.
    #[serde(flatten)]
    pub stats: CallStats,
}

/// Messages of sizes `min..=max` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SizeBin {
    /// Smallest size of the bin.
    pub min: u64,
    /// Largest size of the bin.
    pub max: u64,
    /// Messages (or collective calls).
    pub count: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// One rank's time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RankRow {
    /// World rank.
    pub rank: u32,
    /// Its events.
    pub events: u64,
    /// Its application time, ns: from the end of its init to the start of
    /// its finalize (mpiP's AppTime; its first and last events' dates
    /// where it has neither).
    pub total_ns: u64,
    /// In runtime calls (union of their intervals), ns.
    pub calls_ns: u64,
    /// Of `calls_ns`, waiting for a late sender or for the last rank of a
    /// collective, ns.
    pub waiting_ns: u64,
    /// `calls_ns - waiting_ns`.
    pub communication_ns: u64,
    /// `total_ns - calls_ns`.
    pub compute_ns: u64,
    /// Trace-buffer flushes (within compute), ns.
    pub flush_ns: u64,
}

impl RankRow {
    /// `part` as a percentage of this rank's total.
    pub fn pct(&self, part: u64) -> f64 {
        pct(part, self.total_ns)
    }
}

/// Messages from one rank to another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MatrixCell {
    /// Sender.
    pub src: u32,
    /// Receiver.
    pub dst: u32,
    /// Messages sent.
    pub messages: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// A user region and its time over all ranks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RegionRow {
    /// Name given to `region()`.
    pub name: String,
    /// Source location of the call.
    pub location: String,
    /// Times entered.
    pub count: u64,
    /// Inclusive time, ns (outermost activations only, when recursive).
    pub inclusive_ns: u64,
    /// Activations still open at their rank's last event (closed there).
    pub unclosed: u64,
}

/// The profile of a trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Profile {
    /// Ranks in the job.
    pub world_size: u32,
    /// Events read.
    pub events: u64,
    /// Where the ranks' application time starts, the earliest, global ns.
    pub start_ns: u64,
    /// From there to where the last of them ends, ns.
    pub span_ns: u64,
    /// Sum of the ranks' totals, ns (the base of the percentages).
    pub aggregate_ns: u64,
    /// Calls by type, longest total first.
    pub calls: Vec<CallRow>,
    /// Call sites, longest total first.
    pub sites: Vec<SiteRow>,
    /// Point-to-point messages sent, by size (non-empty bins).
    pub p2p_sizes: Vec<SizeBin>,
    /// Collective calls, by this rank's contribution (non-empty bins).
    pub collective_sizes: Vec<SizeBin>,
    /// Per rank, by rank.
    pub ranks: Vec<RankRow>,
    /// Sender × receiver, by sender then receiver (pairs that exchanged).
    pub matrix: Vec<MatrixCell>,
    /// User regions, longest inclusive time first (at most
    /// [`Profile::REGIONS_KEPT`]).
    pub regions: Vec<RegionRow>,
    /// Distinct regions seen.
    pub region_count: usize,
    /// Things the reader should know (regions left unbalanced...).
    pub notes: Vec<String>,
}

impl Profile {
    /// Regions kept in [`Profile::regions`].
    pub const REGIONS_KEPT: usize = 50;

    /// The row of a call type, by name (`send`, `allreduce`).
    pub fn call(&self, name: &str) -> Option<&CallRow> {
        self.calls.iter().find(|c| c.call.name() == name)
    }

    /// The row of a rank.
    pub fn rank(&self, rank: u32) -> Option<&RankRow> {
        self.ranks.iter().find(|r| r.rank == rank)
    }

    /// Messages and bytes from `src` to `dst`.
    pub fn messages(&self, src: u32, dst: u32) -> (u64, u64) {
        self.matrix.iter().find(|c| (c.src, c.dst) == (src, dst)).map_or((0, 0), |c| (c.messages, c.bytes))
    }

    /// Time in calls over all ranks (sum of the ranks' unions), ns.
    pub fn calls_ns(&self) -> u64 {
        self.ranks.iter().fold(0, |a, r| a.saturating_add(r.calls_ns))
    }

    /// `part` as a percentage of the aggregate run time.
    pub fn pct_of_run(&self, part: u64) -> f64 {
        pct(part, self.aggregate_ns)
    }
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 { 0.0 } else { 100.0 * part as f64 / whole as f64 }
}
