//! How every export draws an event: its shape (a call, a region entered
//! or left, a counter, a point, a mark), the name viewers show for it and
//! for the job, the user regions open on a rank, and names numbered for
//! the formats that declare them up front.

use grappe_analysis::CausalStream;
use grappe_trace::Body;

/// How an event is drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Shape<'a> {
    /// A runtime call, with a duration.
    Call(&'static str),
    /// A user region entered.
    Enter { name: &'a str, location: &'a str },
    /// A user region left.
    Leave { name: &'a str },
    /// A counter sample.
    Counter { name: &'a str, value: i64 },
    /// A user point.
    Point { name: &'a str, location: &'a str },
    /// An instant of the runtime (the start of a flush).
    Mark(&'static str),
}

/// The user regions open on a rank, as every export closes them (and
/// OTF2 and the profile): a leave closes the innermost open region of its
/// name and every region entered inside it since; a leave of a region not
/// open closes nothing. Without the name, a viewer that pops its latest
/// region would end the wrong one when a program leaves out of order.
#[derive(Debug, Default)]
pub(crate) struct OpenRegions(Vec<(usize, usize)>);

impl OpenRegions {
    /// Names are interned (`grappe_trace::Text`): one copy per content,
    /// so its address and length name it.
    fn key(name: &str) -> (usize, usize) {
        (name.as_ptr() as usize, name.len())
    }

    pub fn enter(&mut self, name: &str) {
        self.0.push(Self::key(name));
    }

    /// How many regions a leave of `name` closes, innermost first.
    pub fn leave(&mut self, name: &str) -> usize {
        let key = Self::key(name);
        let Some(i) = self.0.iter().rposition(|&k| k == key) else { return 0 };
        let closed = self.0.len() - i;
        self.0.truncate(i);
        closed
    }

    /// Regions open.
    pub fn depth(&self) -> usize {
        self.0.len()
    }
}

/// How `body` is drawn.
#[inline(always)]
pub(crate) fn shape(body: &Body) -> Shape<'_> {
    match body {
        Body::RegionEnter { name, location } => Shape::Enter { name, location },
        Body::RegionLeave { name } => Shape::Leave { name },
        Body::Counter { name, value } => Shape::Counter { name, value: *value },
        Body::Point { name, location } => Shape::Point { name, location },
        Body::FlushBegin => Shape::Mark(body.kind().name()),
        _ => Shape::Call(call_name(body)),
    }
}

/// The name viewers show for the job (Chrome's process, Pajé's root
/// container): "grappe job" and its id.
pub(crate) fn job_name(stream: &CausalStream) -> String {
    match stream.job() {
        "" => "grappe job".to_owned(),
        job => format!("grappe job {job}"),
    }
}

/// The name every export gives an event: the call (`send`, `wait`...),
/// the collective operation (`allreduce`), or the user's name for
/// regions, points and counters.
pub fn display_name(body: &Body) -> &str {
    match shape(body) {
        Shape::Call(name) | Shape::Mark(name) => name,
        Shape::Enter { name, .. } | Shape::Leave { name } | Shape::Counter { name, .. } | Shape::Point { name, .. } => {
            name
        }
    }
}

fn call_name(body: &Body) -> &'static str {
    match body {
        Body::Collective { op, .. } => op.name(),
        // The flush's record spans it; its start is only a mark.
        Body::FlushEnd => "flush",
        other => other.kind().name(),
    }
}

/// What every export adds to the name of a call that failed (a peer
/// died, the job was stopped): `recv (failed)`.
pub const FAILED_MARK: &str = " (failed)";

/// The names [`display_name`] gives runtime calls, and `sendrecv` (a send
/// and the receive marked as its second half), for formats that declare
/// their values up front.
pub(crate) const CALL_NAMES: [&str; 29] = [
    "init",
    "finalize",
    "send",
    "recv",
    "sendrecv",
    "isend",
    "irecv",
    "wait",
    "test",
    "probe",
    "iprobe",
    "comm_create",
    "flush",
    "barrier",
    "bcast",
    "reduce",
    "allreduce",
    "gather",
    "gatherv",
    "scatter",
    "scatterv",
    "allgather",
    "allgatherv",
    "alltoall",
    "alltoallv",
    "scan",
    "exscan",
    "reduce_scatter",
    "reduce_scatter_block",
];

/// Names numbered in first-use order (region, counter, block names), so
/// records carry a number, not a copy of the string.
#[derive(Default)]
pub(crate) struct Names {
    ids: rustc_hash::FxHashMap<String, u32>,
    names: Vec<String>,
}

impl Names {
    /// The number of `name`, and whether it is new.
    pub(crate) fn id(&mut self, name: &str) -> (u32, bool) {
        if let Some(&id) = self.ids.get(name) {
            return (id, false);
        }
        let id = self.names.len() as u32;
        self.ids.insert(name.to_owned(), id);
        self.names.push(name.to_owned());
        (id, true)
    }

    pub(crate) fn name(&self, id: u32) -> &str {
        &self.names[id as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use grappe_trace::{ANY, CollectiveKind, Completion};

    #[test]
    fn every_call_is_drawn_under_a_declared_name() {
        let done = Completion { is_recv: true, src: 0, tag: 0, bytes: 0, arrived: false };
        let mut calls = vec![
            Body::Send { dest: 0, tag: 0, comm: 0, bytes: 0, seq: 0, failed: false, sync: false },
            Body::Recv {
                src: 0,
                tag: 0,
                comm: 0,
                bytes: 0,
                arrived: false,
                sendrecv: false,
                failed: false,
                any_source: false,
            },
            Body::Isend { dest: 0, tag: 0, comm: 0, bytes: 0, seq: 0, request: 0 },
            Body::Irecv { src: 0, tag: 0, comm: 0, request: 0 },
            Body::Wait { request: 0, comm: 0, completion: done, failed: false },
            Body::Test { request: 0, comm: 0, completion: None, failed: false },
            Body::Probe { src: 0, tag: 0, comm: 0, found: None, failed: false },
            Body::Iprobe { src: 0, tag: 0, comm: 0, found: None, failed: false },
            Body::CommCreate { comm: 1, parent: 0, members: vec![0].into() },
            Body::FlushEnd,
            Body::Init,
            Body::Finalize,
        ];
        calls.extend((1..=16).map(|id| Body::Collective {
            op: CollectiveKind::from_id(id).unwrap(),
            comm: 0,
            root: ANY,
            bytes: 0,
            failed: false,
        }));
        for body in &calls {
            assert!(matches!(shape(body), Shape::Call(_)), "{body:?}");
            assert!(CALL_NAMES.contains(&display_name(body)), "{body:?}");
        }
        // Every name but "sendrecv", the name of a pair of calls.
        assert_eq!(calls.len() + 1, CALL_NAMES.len());
        assert_eq!(display_name(&Body::RegionEnter { name: "step".into(), location: "".into() }), "step");
        assert_eq!(shape(&Body::FlushBegin), Shape::Mark("flush_begin"));
    }
}
