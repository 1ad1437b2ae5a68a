//! One rank's lane of the diagram: the calls and regions kept, and their
//! columns as the page reads them.

use grappe_trace::ANY;
use rustc_hash::FxHashMap;
use serde::Serialize;

/// One call kept for the diagram.
#[derive(Debug, Clone, Copy)]
pub(super) struct Call {
    pub(super) start: u64,
    pub(super) end: u64,
    pub(super) kind: u16,
    pub(super) bytes: u64,
    pub(super) peer: u32,
    pub(super) waiting: u64,
    /// A sendrecv's receive when it differs from its send: source (or
    /// `ANY`) and bytes.
    pub(super) received: Option<(u32, u64)>,
}

/// A rank's last event, when it is a send: the next one may be its
/// sendrecv's second half.
#[derive(Debug, Clone, Copy)]
pub(super) struct LastSend {
    pub(super) event: grappe_trace::Event,
    /// Its call in the lane, if kept.
    pub(super) call: Option<usize>,
}

/// A region activation kept for the diagram.
#[derive(Debug, Clone, Copy)]
pub(super) struct Span {
    pub(super) start: u64,
    pub(super) end: u64,
    pub(super) name: u32,
    pub(super) depth: u8,
}

/// Whether a call or region is drawn one by one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Keep {
    Yes,
    No,
    /// A region entered outside the detail windows: drawn if it overlaps
    /// one, known when it is left.
    AtLeave,
}

/// A message drawn as an arrow: the receiver's lane, the sender, the
/// send's start, the receive's start and end.
#[derive(Debug, Clone, Copy)]
pub(super) struct Arrow {
    pub(super) lane: usize,
    pub(super) src: u32,
    pub(super) send_start: u64,
    pub(super) recv_start: u64,
    pub(super) recv_end: u64,
}

/// A region entered and not left yet.
#[derive(Debug, Clone, Copy)]
pub(super) struct Open {
    pub(super) name: u32,
    pub(super) start: u64,
    pub(super) kept: Keep,
}

/// One rank: its span, what is kept of it, its open regions and the
/// collectives it entered per communicator.
#[derive(Debug)]
pub(super) struct Lane {
    pub(super) rank: u32,
    pub(super) first: u64,
    pub(super) last: u64,
    pub(super) calls: Vec<Call>,
    pub(super) regions: Vec<Span>,
    pub(super) stack: Vec<Open>,
    pub(super) collectives: FxHashMap<u32, u64>,
    pub(super) last_send: Option<LastSend>,
}

impl Lane {
    pub(super) fn new(rank: u32, start: u64) -> Self {
        Lane {
            rank,
            first: start,
            last: start,
            calls: Vec::new(),
            regions: Vec::new(),
            stack: Vec::new(),
            collectives: FxHashMap::default(),
            last_send: None,
        }
    }

    /// Closes the innermost open region at `at`. Returns whether it is
    /// drawn and that was decided only now (`detailed` says whether an
    /// interval overlaps a detail window).
    pub(super) fn close_top(&mut self, at: u64, detailed: &dyn Fn(u64, u64) -> bool) -> bool {
        let depth = self.stack.len().saturating_sub(1) as u8;
        let Some(open) = self.stack.pop() else { return false };
        let end = at.max(open.start);
        let kept = match open.kept {
            Keep::Yes => true,
            Keep::No => false,
            Keep::AtLeave => detailed(open.start, end),
        };
        if kept {
            self.regions.push(Span { start: open.start, end, name: open.name, depth });
        }
        kept && open.kept == Keep::AtLeave
    }

    /// Sorts the calls and regions by start, as the page reads them.
    pub(super) fn sort(&mut self) {
        self.calls.sort_by_key(|c| c.start);
        self.regions.sort_by_key(|r| (r.start, r.depth));
    }

    /// Keeps the calls and regions for which `inside(start, end)` holds.
    pub(super) fn keep_only(&mut self, inside: &dyn Fn(u64, u64) -> bool) {
        self.calls.retain(|c| inside(c.start, c.end));
        self.regions.retain(|r| inside(r.start, r.end));
    }
}

/// One rank's lane, columns sorted by start; dates relative to the
/// diagram's origin, starts as differences from the previous one.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct LaneData {
    rank: u32,
    first: u64,
    last: u64,
    /// Calls: start deltas, durations, kinds, bytes, peers (-1: none),
    /// waiting prefixes.
    t: Vec<u64>,
    d: Vec<u64>,
    k: Vec<u16>,
    b: Vec<u64>,
    p: Vec<i64>,
    w: Vec<u64>,
    /// Regions: start deltas, durations, names, depths.
    rt: Vec<u64>,
    rd: Vec<u64>,
    rn: Vec<i64>,
    rz: Vec<u8>,
    /// Sendrecvs whose receive differs from their send (another peer,
    /// another size): call indices, receive sources (-1: none), bytes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    xi: Vec<u32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    xp: Vec<i64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    xb: Vec<u64>,
}

fn deltas(starts: impl Iterator<Item = u64>, origin: u64) -> Vec<u64> {
    let mut previous = origin;
    starts
        .map(|s| {
            let d = s.saturating_sub(previous);
            previous = previous.max(s);
            d
        })
        .collect()
}

impl LaneData {
    /// A lane whose calls and regions are sorted ([`Lane::sort`]);
    /// `bare`: its span only.
    pub(super) fn of(lane: &Lane, origin: u64, bare: bool) -> Self {
        let calls = if bare { &[][..] } else { &lane.calls };
        let regions = if bare { &[][..] } else { &lane.regions };
        let signed = |v: u32| if v == ANY { -1 } else { v as i64 };
        let other: Vec<(u32, (u32, u64))> =
            calls.iter().enumerate().filter_map(|(i, c)| c.received.map(|r| (i as u32, r))).collect();
        LaneData {
            rank: lane.rank,
            first: lane.first.saturating_sub(origin),
            last: lane.last.saturating_sub(origin),
            t: deltas(calls.iter().map(|c| c.start.max(origin)), origin),
            d: calls.iter().map(|c| c.end - c.start).collect(),
            k: calls.iter().map(|c| c.kind).collect(),
            b: calls.iter().map(|c| c.bytes).collect(),
            p: calls.iter().map(|c| signed(c.peer)).collect(),
            w: calls.iter().map(|c| c.waiting.min(c.end - c.start)).collect(),
            rt: deltas(regions.iter().map(|r| r.start.max(origin)), origin),
            rd: regions.iter().map(|r| r.end - r.start).collect(),
            rn: regions.iter().map(|r| signed(r.name)).collect(),
            rz: regions.iter().map(|r| r.depth).collect(),
            xi: other.iter().map(|o| o.0).collect(),
            xp: other.iter().map(|o| signed(o.1.0)).collect(),
            xb: other.iter().map(|o| o.1.1).collect(),
        }
    }
}

/// Messages, sorted by receive end: sender and receiver lanes (-1: the
/// sender has no lane), receive end deltas, receive end minus send start.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Arrows {
    s: Vec<i64>,
    r: Vec<u32>,
    t: Vec<u64>,
    l: Vec<i64>,
}

impl Arrows {
    /// Arrows sorted by receive end, their lanes positions in `lanes`.
    pub(super) fn of(arrows: &[Arrow], lanes: &[Lane], origin: u64) -> Self {
        let position: FxHashMap<u32, usize> = lanes.iter().enumerate().map(|(p, l)| (l.rank, p)).collect();
        let lane_of = |rank: u32| position.get(&rank).map_or(-1, |&p| p as i64);
        Arrows {
            s: arrows.iter().map(|a| lane_of(a.src)).collect(),
            r: arrows.iter().map(|a| a.lane as u32).collect(),
            t: deltas(arrows.iter().map(|a| a.recv_end.max(origin)), origin),
            l: arrows.iter().map(|a| a.recv_end.wrapping_sub(a.send_start) as i64).collect(),
        }
    }
}
