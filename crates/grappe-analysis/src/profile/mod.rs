//! An mpiP-style profile of a trace, computed in one pass over the
//! [`CausalStream`] with memory independent of the trace's length
//! (per-rank accumulators, a sparse rank × rank matrix, a region stack per
//! rank, the collective instances in flight).
//!
//! The tables:
//!
//! - **calls by type** (send, recv, isend, irecv, wait, test, probe,
//!   iprobe, comm_create, each collective operation): count, total, mean,
//!   min and max time, share of the run time, bytes;
//! - **call sites**, as mpiP's: the call type at the source location of
//!   the program's call (`file:line:column`, recorded with every runtime
//!   call), with the *innermost enclosing user region* (its name and
//!   source location, from `Communicator::region`) beside it. Records
//!   without a location (made by the runtime itself) are told apart by
//!   their region alone;
//! - **message sizes**: power-of-two histograms of the point-to-point
//!   messages sent and of the collectives' per-rank contributions;
//! - **per rank**: total (first to last event), time in runtime calls
//!   (the union of the calls' intervals: a `sendrecv` records an
//!   overlapping send and receive), and of that the *waiting* time —
//!   late sender: the part of a receive (or of a wait completing one)
//!   before its matching send started; collectives: from the rank's entry
//!   to the last entry of the instance, the k-th collective of every rank
//!   on one communicator — the rest being *communication*; compute is the
//!   total minus the calls. compute + communication + waiting = total;
//! - **communication matrix**: messages and bytes, sender × receiver;
//! - **user regions** by inclusive time.
//!
//! Bytes of a call: sent by `send`/`isend`, received by `recv` and by a
//! `wait`/`test` completing a receive, contributed to a collective.
//!
//! A call that failed because a peer died or the job was stopped counts
//! under its type and site like any other, its whole time as waiting (for
//! a peer that never came), with no bytes and no message in the matrix; a
//! note lists such calls.
//! Trace-buffer flushes are not calls: their time counts as compute
//! ([`RankRow::flush_ns`] has it apart).

pub(crate) mod collectives;
mod profiler;
mod text;

use grappe_trace::{Body, CollectiveKind, EventKind};
use serde::{Serialize, Serializer};

use crate::error::Result;
use crate::stream::CausalStream;

pub use profiler::Profiler;

/// A runtime call type: a point-to-point or request call, or one
/// collective operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CallType {
    /// A call recorded under its event kind (send, wait, probe...).
    Call(EventKind),
    /// A collective operation.
    Collective(CollectiveKind),
    /// A sendrecv: a send and the receive marked as its second half.
    Sendrecv,
}

impl CallType {
    /// The call type of an event, if it is a runtime call.
    pub fn of(body: &Body) -> Option<CallType> {
        match body {
            Body::Collective { op, .. } => Some(CallType::Collective(*op)),
            Body::Send { .. }
            | Body::Recv { .. }
            | Body::Isend { .. }
            | Body::Irecv { .. }
            | Body::Wait { .. }
            | Body::Test { .. }
            | Body::Probe { .. }
            | Body::Iprobe { .. }
            | Body::CommCreate { .. } => Some(CallType::Call(body.kind())),
            Body::Init
            | Body::Finalize
            | Body::RegionEnter { .. }
            | Body::RegionLeave { .. }
            | Body::Point { .. }
            | Body::Counter { .. }
            | Body::FlushBegin
            | Body::FlushEnd => None,
        }
    }

    /// Its name (`send`, `allreduce`...).
    pub fn name(self) -> &'static str {
        match self {
            CallType::Call(kind) => kind.name(),
            CallType::Collective(op) => op.name(),
            CallType::Sendrecv => "sendrecv",
        }
    }
}

impl Serialize for CallType {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

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
    fn add(&mut self, ns: u64, bytes: u64) {
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

/// Reads the whole stream and profiles it; `progress` gets the events
/// read. `world_size`: ranks in the job (a collective on a communicator
/// whose creation is not in the trace is taken to involve every traced
/// rank).
pub fn profile(mut stream: CausalStream, world_size: u32, progress: &mut dyn FnMut(u64)) -> Result<Profile> {
    let mut profiler = Profiler::for_stream(&stream, world_size);
    let mut events = 0u64;
    while let Some(linked) = stream.next_event()? {
        profiler.observe(linked);
        events += 1;
        if events % (1 << 20) == 0 {
            progress(events);
        }
    }
    progress(events);
    let mut profile = profiler.finish();
    let partial = crate::check::incomplete(&stream.summary()).into_iter().map(|line| format!("partial trace: {line}"));
    profile.notes.splice(0..0, partial);
    Ok(profile)
}
