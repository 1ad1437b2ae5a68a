//! This rank's collective calls on a communicator, for the peers that
//! wait for it (see [`grappe_proto::CallBoard`]): the number and
//! signature of its latest call, written when the call starts.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use grappe_proto::{CallBoard, Mismatch};
use grappe_trace::CollectiveKind;

use super::signature::{Announcement, call_of, mismatch};

/// The board of one communicator on one rank.
#[derive(Debug)]
pub(crate) struct Board {
    rank: usize,
    /// World ranks of the members, by communicator rank.
    members: Vec<usize>,
    seq: AtomicU64,
    key: AtomicU64,
    op_root: AtomicU64,
    bytes: AtomicU64,
    /// The engine revoked the communicator's collectives.
    revoked: AtomicBool,
}

impl Board {
    pub fn new(rank: usize, members: Vec<usize>) -> Board {
        let zero = || AtomicU64::new(0);
        Board {
            rank,
            members,
            seq: zero(),
            key: zero(),
            op_root: zero(),
            bytes: zero(),
            revoked: AtomicBool::new(false),
        }
    }

    /// True once the engine revoked the communicator's collectives.
    #[inline]
    pub fn is_revoked(&self) -> bool {
        self.revoked.load(Ordering::Relaxed)
    }

    /// A new call of the communicator starts.
    #[inline]
    pub fn announce(&self, call: &Announcement) {
        self.key.store(call.key, Ordering::Relaxed);
        self.op_root.store(call.op_root, Ordering::Relaxed);
        self.bytes.store(call.bytes, Ordering::Relaxed);
        self.seq.store(call.seq, Ordering::Relaxed);
    }
}

impl CallBoard for Board {
    fn current(&self) -> [u64; 4] {
        [
            self.seq.load(Ordering::Relaxed),
            self.key.load(Ordering::Relaxed),
            self.op_root.load(Ordering::Relaxed),
            self.bytes.load(Ordering::Relaxed),
        ]
    }

    fn stray(&self, peer: usize, theirs: [u64; 4], awaited: bool) -> Option<Mismatch> {
        let [seq, key, op_root, bytes] = self.current();
        let kind = CollectiveKind::from_id(op_root as u8);
        let me = call_of(self.rank, op_root, bytes, kind);
        let evidence = if theirs[0] == seq && theirs[1] != key {
            format!(
                "rank {} waited in collective call {seq} of the communicator; rank {peer}, asked, is at that call \
                 with another signature",
                self.rank
            )
        } else if theirs[0] > seq && awaited {
            format!(
                "rank {} waited for a message of rank {peer} in collective call {seq} of the communicator; rank \
                 {peer}, asked, had gone on to call {} without sending it",
                self.rank, theirs[0]
            )
        } else {
            return None;
        };
        let theirs_call = if theirs[0] == seq {
            call_of(peer, theirs[2], theirs[3], kind)
        } else {
            grappe_proto::Call { rank: peer, op: None, bytes: None, root: None }
        };
        let op = kind.map_or("collective", CollectiveKind::name);
        Some(mismatch(op, self.rank, vec![me, theirs_call], evidence))
    }

    fn members(&self) -> &[usize] {
        &self.members
    }

    fn rank(&self) -> usize {
        self.rank
    }

    fn revoked(&self) {
        self.revoked.store(true, Ordering::Relaxed);
    }
}
