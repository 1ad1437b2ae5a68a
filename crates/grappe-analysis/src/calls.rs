//! The runtime calls as the tools name and count them: a call type per
//! point-to-point or request call, one per collective operation, and the
//! sendrecv (a send and the receive marked as its second half).

use grappe_trace::{Body, CollectiveKind, EventKind};
use serde::{Serialize, Serializer};

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
