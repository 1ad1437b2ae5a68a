//! What a trace records: one typed event per runtime call.
//!
//! A blocking call is one record with its start and end dates (Tape/PVM's
//! choice: one header, the duration as an attribute). Every record carries
//! α, the measured cost of recording it, for probe-effect compensation.

use serde::Serialize;

use crate::interned::{Members, Text};
use crate::site::Site;

/// Kinds of events, with their stable numeric ids (the file schema lists
/// them by name and id; readers of older files rely on these numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[repr(u16)]
pub enum EventKind {
    /// The rank joined the job.
    Init = 1,
    /// The rank left the job.
    Finalize = 2,
    /// Blocking send (start: call, end: return).
    Send = 3,
    /// Blocking receive (start: SR, end: ER).
    Recv = 4,
    /// Non-blocking send posted.
    Isend = 5,
    /// Non-blocking receive posted.
    Irecv = 6,
    /// Wait for a request (end: completion).
    Wait = 7,
    /// Test of a request.
    Test = 8,
    /// Blocking probe.
    Probe = 9,
    /// Non-blocking probe.
    Iprobe = 10,
    /// A collective operation.
    Collective = 11,
    /// A communicator was created (dup, split).
    CommCreate = 12,
    /// User region entered.
    RegionEnter = 13,
    /// User region left.
    RegionLeave = 14,
    /// User point event.
    Point = 15,
    /// User counter sample.
    Counter = 16,
    /// The recorder started writing a full buffer to its file.
    FlushBegin = 17,
    /// The recorder finished writing (start: begin, end: end).
    FlushEnd = 18,
}

impl EventKind {
    /// Every kind, in id order.
    pub const ALL: [EventKind; 18] = [
        EventKind::Init,
        EventKind::Finalize,
        EventKind::Send,
        EventKind::Recv,
        EventKind::Isend,
        EventKind::Irecv,
        EventKind::Wait,
        EventKind::Test,
        EventKind::Probe,
        EventKind::Iprobe,
        EventKind::Collective,
        EventKind::CommCreate,
        EventKind::RegionEnter,
        EventKind::RegionLeave,
        EventKind::Point,
        EventKind::Counter,
        EventKind::FlushBegin,
        EventKind::FlushEnd,
    ];

    /// The kind with numeric id `id`.
    pub fn from_id(id: u16) -> Option<EventKind> {
        EventKind::ALL.get((id as usize).wrapping_sub(1)).copied()
    }

    /// A call into the runtime (init to comm_create): what a call site
    /// is recorded for.
    pub fn is_call(self) -> bool {
        self.id() <= EventKind::CommCreate.id()
    }

    /// Stable numeric id.
    pub fn id(self) -> u16 {
        self as u16
    }

    /// Name as in the schema and the tools.
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Init => "init",
            EventKind::Finalize => "finalize",
            EventKind::Send => "send",
            EventKind::Recv => "recv",
            EventKind::Isend => "isend",
            EventKind::Irecv => "irecv",
            EventKind::Wait => "wait",
            EventKind::Test => "test",
            EventKind::Probe => "probe",
            EventKind::Iprobe => "iprobe",
            EventKind::Collective => "collective",
            EventKind::CommCreate => "comm_create",
            EventKind::RegionEnter => "region_enter",
            EventKind::RegionLeave => "region_leave",
            EventKind::Point => "point",
            EventKind::Counter => "counter",
            EventKind::FlushBegin => "flush_begin",
            EventKind::FlushEnd => "flush_end",
        }
    }
}

/// Collective operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[repr(u8)]
#[allow(missing_docs)]
pub enum CollectiveKind {
    Barrier = 1,
    Bcast = 2,
    Reduce = 3,
    Allreduce = 4,
    Gather = 5,
    Gatherv = 6,
    Scatter = 7,
    Scatterv = 8,
    Allgather = 9,
    Allgatherv = 10,
    Alltoall = 11,
    Alltoallv = 12,
    Scan = 13,
    Exscan = 14,
    ReduceScatter = 15,
    ReduceScatterBlock = 16,
}

impl CollectiveKind {
    const ALL: [CollectiveKind; 16] = [
        CollectiveKind::Barrier,
        CollectiveKind::Bcast,
        CollectiveKind::Reduce,
        CollectiveKind::Allreduce,
        CollectiveKind::Gather,
        CollectiveKind::Gatherv,
        CollectiveKind::Scatter,
        CollectiveKind::Scatterv,
        CollectiveKind::Allgather,
        CollectiveKind::Allgatherv,
        CollectiveKind::Alltoall,
        CollectiveKind::Alltoallv,
        CollectiveKind::Scan,
        CollectiveKind::Exscan,
        CollectiveKind::ReduceScatter,
        CollectiveKind::ReduceScatterBlock,
    ];

    /// The operation with numeric id `id`.
    pub fn from_id(id: u8) -> Option<CollectiveKind> {
        CollectiveKind::ALL.get((id as usize).wrapping_sub(1)).copied()
    }

    /// MPI-style name (`MPI_Allreduce` is `allreduce`).
    pub fn name(self) -> &'static str {
        match self {
            CollectiveKind::Barrier => "barrier",
            CollectiveKind::Bcast => "bcast",
            CollectiveKind::Reduce => "reduce",
            CollectiveKind::Allreduce => "allreduce",
            CollectiveKind::Gather => "gather",
            CollectiveKind::Gatherv => "gatherv",
            CollectiveKind::Scatter => "scatter",
            CollectiveKind::Scatterv => "scatterv",
            CollectiveKind::Allgather => "allgather",
            CollectiveKind::Allgatherv => "allgatherv",
            CollectiveKind::Alltoall => "alltoall",
            CollectiveKind::Alltoallv => "alltoallv",
            CollectiveKind::Scan => "scan",
            CollectiveKind::Exscan => "exscan",
            CollectiveKind::ReduceScatter => "reduce_scatter",
            CollectiveKind::ReduceScatterBlock => "reduce_scatter_block",
        }
    }
}

/// "Any" in a receive's source or tag selector.
pub const ANY: u32 = u32::MAX;

/// One event, as readers and tools see it. Dates are nanoseconds of the
/// rank's local clock in a per-rank file, of the global clock in a merged
/// trace (see the file header).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Event {
    /// World rank that recorded it.
    pub rank: u32,
    /// Start date (for a receive: SR).
    pub start: u64,
    /// End date (for a receive: ER); equal to `start` for instant events.
    pub end: u64,
    /// Cost of recording this event, in nanoseconds.
    pub alpha_ns: u32,
    /// Where the program made the call (runtime calls; `None` for other
    /// events and for calls recorded without their caller).
    pub site: Option<Site>,
    /// What happened.
    pub body: Body,
}

impl Event {
    /// Whether this event is the receive that ends the sendrecv `send`
    /// began: a receive marked as a sendrecv's second half, with the
    /// send's dates and call site. A rank's events come in its own order,
    /// so a reader holds each send until the rank's next event to know.
    pub fn ends_sendrecv_of(&self, send: &Event) -> bool {
        matches!(self.body, Body::Recv { sendrecv: true, .. })
            && matches!(send.body, Body::Send { .. })
            && (self.rank, self.start, self.end, self.site) == (send.rank, send.start, send.end, send.site)
    }
}

/// The attributes of each kind of event. Names and locations are
/// process-wide [`Text`]s, so reading an event allocates nothing and
/// touches no reference count.
///
/// `failed` (the calls that wait: sends, receives, waits, tests, probes,
/// collectives): the call failed because a peer died or the job was
/// stopped (MPI's `MPI_ERR_PROC_FAILED`). Its dates are the call's, from
/// its start to its failure: where the rank was stuck, and how long. Its
/// message, if it had one, is not known to have gone anywhere, and is
/// never matched: a failed send has no `seq` (0), a failed receive holds
/// the source and tag it asked for ([`ANY`] for wildcards, the tag as
/// `-1`) and 0 bytes. [`Body::failed`] tells.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[allow(missing_docs)]
pub enum Body {
    Init,
    Finalize,
    /// `seq` numbers the sends of this rank to `dest` (all communicators).
    /// `sync`: a synchronous send (`ssend`), which ended once its receive
    /// had matched it.
    Send {
        dest: u32,
        tag: i32,
        comm: u32,
        bytes: u64,
        seq: u64,
        failed: bool,
        sync: bool,
    },
    /// `arrived`: the message was already there when the receive started.
    /// `sendrecv`: this receive is the second half of a `sendrecv`, whose
    /// first half is the rank's send just before it, with the same dates.
    /// `any_source`: it asked for any source (`src` is the one it got).
    Recv {
        src: u32,
        tag: i32,
        comm: u32,
        bytes: u64,
        arrived: bool,
        sendrecv: bool,
        failed: bool,
        any_source: bool,
    },
    Isend {
        dest: u32,
        tag: i32,
        comm: u32,
        bytes: u64,
        seq: u64,
        request: u64,
    },
    /// `src`/`tag` are the selectors ([`ANY`] for wildcards).
    Irecv {
        src: u32,
        tag: u32,
        comm: u32,
        request: u64,
    },
    /// Completion of a request; for a receive, what arrived. `comm`: the
    /// request's communicator (message matching needs it). A failed wait
    /// completed nothing: its `completion` says what it waited for, the
    /// request's side, its peer (the destination, or the source asked
    /// for) and tag, with 0 bytes.
    Wait {
        request: u64,
        comm: u32,
        completion: Completion,
        failed: bool,
    },
    /// A failed test completed nothing (`completion` is `None`).
    Test {
        request: u64,
        comm: u32,
        completion: Option<Completion>,
        failed: bool,
    },
    /// `found`: the status, if a message matched (`None` when failed).
    Probe {
        src: u32,
        tag: u32,
        comm: u32,
        found: Option<Completion>,
        failed: bool,
    },
    Iprobe {
        src: u32,
        tag: u32,
        comm: u32,
        found: Option<Completion>,
        failed: bool,
    },
    /// `root`: [`ANY`] for rootless operations; `bytes`: this rank's contribution.
    Collective {
        op: CollectiveKind,
        comm: u32,
        root: u32,
        bytes: u64,
        failed: bool,
    },
    /// `members`: world ranks of the new communicator, in its rank order.
    CommCreate {
        comm: u32,
        parent: u32,
        members: Members,
    },
    RegionEnter {
        name: Text,
        location: Text,
    },
    RegionLeave {
        name: Text,
    },
    Point {
        name: Text,
        location: Text,
    },
    Counter {
        name: Text,
        value: i64,
    },
    FlushBegin,
    FlushEnd,
}

/// What a completed request or a probe reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Completion {
    /// True for a receive (then the other fields describe the message).
    pub is_recv: bool,
    /// Source world rank.
    pub src: u32,
    /// Tag.
    pub tag: i32,
    /// Message bytes.
    pub bytes: u64,
    /// The message had arrived before the wait started.
    pub arrived: bool,
}

impl Body {
    /// Whether the call failed because a peer died or the job was stopped
    /// (see [`Body`]); false for the kinds that cannot record it.
    #[inline]
    pub fn failed(&self) -> bool {
        match *self {
            Body::Send { failed, .. }
            | Body::Recv { failed, .. }
            | Body::Wait { failed, .. }
            | Body::Test { failed, .. }
            | Body::Probe { failed, .. }
            | Body::Iprobe { failed, .. }
            | Body::Collective { failed, .. } => failed,
            Body::Init
            | Body::Finalize
            | Body::Isend { .. }
            | Body::Irecv { .. }
            | Body::CommCreate { .. }
            | Body::RegionEnter { .. }
            | Body::RegionLeave { .. }
            | Body::Point { .. }
            | Body::Counter { .. }
            | Body::FlushBegin
            | Body::FlushEnd => false,
        }
    }

    /// The kind of this event.
    pub fn kind(&self) -> EventKind {
        match self {
            Body::Init => EventKind::Init,
            Body::Finalize => EventKind::Finalize,
            Body::Send { .. } => EventKind::Send,
            Body::Recv { .. } => EventKind::Recv,
            Body::Isend { .. } => EventKind::Isend,
            Body::Irecv { .. } => EventKind::Irecv,
            Body::Wait { .. } => EventKind::Wait,
            Body::Test { .. } => EventKind::Test,
            Body::Probe { .. } => EventKind::Probe,
            Body::Iprobe { .. } => EventKind::Iprobe,
            Body::Collective { .. } => EventKind::Collective,
            Body::CommCreate { .. } => EventKind::CommCreate,
            Body::RegionEnter { .. } => EventKind::RegionEnter,
            Body::RegionLeave { .. } => EventKind::RegionLeave,
            Body::Point { .. } => EventKind::Point,
            Body::Counter { .. } => EventKind::Counter,
            Body::FlushBegin => EventKind::FlushBegin,
            Body::FlushEnd => EventKind::FlushEnd,
        }
    }
}
