//! What the ranks' calls of one collective must agree on, and how each
//! message and each arena exchange carries it so that a rank can tell
//! when they do not.
//!
//! Every message of a collective carries its sender's size in its tag
//! (the collective's own tags are free for it), and a receive compares it
//! with its own besides the message's length: a rank never combines a
//! part of a peer's vector cut for another size, even when the part
//! happens to have the length it expects. The arena exchange compares
//! whole signatures (collective, root, size) at the last arrival.

use grappe_proto::{Call, Mismatch};
use grappe_trace::CollectiveKind;

/// The part of a collective call that must be the same on every rank,
/// kept in the words that the board, the arena header and the tag take
/// (a call pays for packing it once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Signature {
    /// The collective's id, and its root plus one above bit 8 (0: none).
    op_root: u64,
    /// Bytes the call names on every rank alike (the vector of an
    /// allreduce, one block of a gather); [`NO_SIZE`] for the collectives
    /// whose sizes differ by rank by design (gatherv, scatterv, alltoallv).
    bytes: u64,
    /// A digest of the per-rank counts of allgatherv and reduce_scatter
    /// (the same on every rank), 0 otherwise: two layouts with the same
    /// total differ here.
    layout: u64,
}

/// The size of a collective without a common one.
const NO_SIZE: u64 = u64::MAX;

/// A call as the board and the arena header show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Announcement {
    /// The call's number among the communicator's collectives.
    pub seq: u64,
    /// [`Signature::key`].
    pub key: u64,
    /// The collective and its root (see [`call_of`]).
    pub op_root: u64,
    /// Its size ([`NO_SIZE`]: none).
    pub bytes: u64,
}

/// Bits of a collective tag that hold the tag family (`tags`).
const FAMILY_BITS: u32 = 4;
/// A size below this travels exactly in the tag; larger ones as a digest.
const EXACT_SIZES: u64 = 1 << 26;

impl Signature {
    fn new(kind: CollectiveKind, root: Option<usize>, bytes: u64, layout: u64) -> Signature {
        let op_root = kind as u64 | root.map_or(0, |r| r as u64 + 1) << 8;
        Signature { op_root, bytes, layout }
    }

    /// A collective without root whose size is `bytes` on every rank.
    pub fn sized(kind: CollectiveKind, bytes: usize) -> Signature {
        Signature::new(kind, None, bytes as u64, 0)
    }

    /// A rooted collective of `bytes` on every rank.
    pub fn rooted(kind: CollectiveKind, bytes: usize, root: usize) -> Signature {
        Signature::new(kind, Some(root), bytes as u64, 0)
    }

    /// A collective whose sizes differ by rank by design: only the
    /// collective and its root must agree.
    pub fn per_rank_sizes(kind: CollectiveKind, root: Option<usize>) -> Signature {
        Signature::new(kind, root, NO_SIZE, 0)
    }

    /// A collective with per-rank `counts` of `elem_bytes`-byte elements,
    /// the same on every rank.
    pub fn laid_out(kind: CollectiveKind, counts: &[usize], elem_bytes: usize) -> Signature {
        let layout = counts.iter().fold(mix(counts.len() as u64, elem_bytes as u64), |h, &c| mix(h, c as u64));
        let total = counts.iter().sum::<usize>() * elem_bytes;
        Signature::new(kind, None, total as u64, layout | 1)
    }

    /// The collective.
    pub fn kind(&self) -> Option<CollectiveKind> {
        CollectiveKind::from_id(self.op_root as u8)
    }

    /// The root, for rooted collectives.
    pub fn root(&self) -> Option<usize> {
        (self.op_root >> 8).checked_sub(1).map(|r| r as usize)
    }

    /// The tag of this call's messages in tag family `family`.
    #[inline]
    pub fn tag(&self, family: i32) -> i32 {
        debug_assert!((1..1 << FAMILY_BITS).contains(&family));
        family | (self.size_field() << FAMILY_BITS) as i32
    }

    /// 27 bits: the size itself when below [`EXACT_SIZES`] and the layout
    /// is plain, else a digest with the top bit set (the digest of no size
    /// for the collectives without a common one).
    #[inline]
    fn size_field(&self) -> u32 {
        if self.layout == 0 && self.bytes < EXACT_SIZES {
            self.bytes as u32
        } else if self.bytes == NO_SIZE {
            EXACT_SIZES as u32
        } else {
            (EXACT_SIZES | (mix(self.bytes, self.layout) & (EXACT_SIZES - 1))) as u32
        }
    }

    /// One word for comparing whole signatures. Each part goes through
    /// its own odd multiplier (a bijection), so signatures that differ in
    /// one part always differ here; in several, they share a key only if
    /// the parts' differences cancel exactly.
    #[inline]
    pub fn key(&self) -> u64 {
        self.op_root.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ self.bytes.wrapping_mul(0xD6E8_FEB8_6659_FD93) ^ self.layout
    }

    /// What a rank's board and arena header hold of call `seq` with this
    /// signature, whose key is `key`.
    #[inline]
    pub fn announcement(&self, seq: u64, key: u64) -> Announcement {
        Announcement { seq, key, op_root: self.op_root, bytes: self.bytes }
    }

    /// This call, as one side of a mismatch found by rank `rank`.
    pub fn call(&self, rank: usize) -> Call {
        Call { rank, op: None, bytes: (self.bytes != NO_SIZE).then_some(self.bytes), root: self.root() }
    }

    /// The call of `rank` that sent a message with `tag`, as far as the tag
    /// tells it, next to ours: its collective if another, its size if it
    /// travelled exactly.
    pub fn call_from_tag(&self, rank: usize, tag: i32, family: i32) -> Call {
        let their_family = tag & ((1 << FAMILY_BITS) - 1);
        let field = (tag as u32 >> FAMILY_BITS) as u64;
        let op = (their_family != family).then(|| family_name(their_family).into());
        Call { rank, op, bytes: (field < EXACT_SIZES).then_some(field), root: None }
    }

    /// The call described by an arena header's `op_root` and `bytes`, next
    /// to ours.
    pub fn call_from_header(&self, rank: usize, op_root: u64, bytes: u64) -> Call {
        call_of(rank, op_root, bytes, self.kind())
    }
}

/// The call of `rank` described by the `op_root` and `bytes` of an
/// [`Announcement`], naming its collective if not `ours`.
pub(crate) fn call_of(rank: usize, op_root: u64, bytes: u64, ours: Option<CollectiveKind>) -> Call {
    let kind = CollectiveKind::from_id(op_root as u8);
    let op = (kind != ours).then(|| kind.map_or("another collective", CollectiveKind::name).into());
    let root = (op_root >> 8).checked_sub(1).map(|r| r as usize);
    Call { rank, op, bytes: (bytes != NO_SIZE).then_some(bytes), root }
}

/// A mismatch found by `rank`, in call `op`, comparing `calls`.
pub(crate) fn mismatch(op: &'static str, rank: usize, calls: Vec<Call>, evidence: String) -> Mismatch {
    Mismatch { op: op.into(), found_by: rank, calls, evidence }
}

/// Names of the tag families, for a message of another collective.
fn family_name(family: i32) -> &'static str {
    use super::tags::*;
    match family {
        BARRIER => "barrier",
        ALLREDUCE => "allreduce",
        BCAST => "bcast",
        REDUCE => "reduce",
        GATHER => "gather",
        SCATTER => "scatter",
        ALLGATHER => "allgather",
        ALLTOALL => "alltoall",
        SCAN => "scan",
        REDUCE_SCATTER => "reduce_scatter",
        _ => "another operation on the communicator",
    }
}

/// splitmix64's finaliser over two words.
fn mix(a: u64, b: u64) -> u64 {
    let mut z = a.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ b;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn kinds() -> impl Strategy<Value = CollectiveKind> {
        (1u8..=16).prop_map(|id| CollectiveKind::from_id(id).expect("ids 1..=16"))
    }

    proptest! {
        #[test]
        fn tags_are_positive_and_never_those_of_management_or_clock_sync(
            kind in kinds(), bytes in any::<usize>(), family in 1i32..=10,
        ) {
            let tag = Signature::sized(kind, bytes).tag(family);
            prop_assert!(tag > 0);
            prop_assert_ne!(tag, crate::selectors::TAG_UB);
            prop_assert_ne!(tag, crate::selectors::TAG_UB - 1);
        }

        #[test]
        fn a_size_below_64_mib_travels_exactly(kind in kinds(), bytes in 0usize..1 << 26, family in 1i32..=10) {
            let sig = Signature::sized(kind, bytes);
            let call = sig.call_from_tag(3, sig.tag(family), family);
            prop_assert_eq!(call, Call { rank: 3, op: None, bytes: Some(bytes as u64), root: None });
        }

        #[test]
        fn different_sizes_give_different_tags(kind in kinds(), a in 0usize..1 << 26, b in 0usize..1 << 40) {
            prop_assume!(a != b);
            prop_assert_ne!(Signature::sized(kind, a).tag(2), Signature::sized(kind, b).tag(2));
        }

        #[test]
        fn different_roots_or_layouts_give_different_keys(kind in kinds(), bytes in 0usize..4096, root in 0usize..64) {
            let sig = Signature::rooted(kind, bytes, root);
            prop_assert_ne!(sig.key(), Signature::rooted(kind, bytes, root + 1).key());
            prop_assert_ne!(sig.key(), Signature::sized(kind, bytes).key());
            let (a, b) = (Signature::laid_out(kind, &[2, 3], 8), Signature::laid_out(kind, &[3, 2], 8));
            prop_assert_eq!(a.bytes, b.bytes);
            prop_assert_ne!(a.key(), b.key());
            prop_assert_ne!(a.tag(2), b.tag(2));
        }

        #[test]
        fn headers_give_back_the_call(kind in kinds(), other in kinds(), bytes in 0usize..4096, root in proptest::option::of(0usize..64)) {
            let theirs = Signature::new(other, root, bytes as u64, 0).announcement(1, 2);
            let call = Signature::sized(kind, 0).call_from_header(5, theirs.op_root, theirs.bytes);
            prop_assert_eq!(call.op.is_some(), kind != other);
            prop_assert_eq!((call.rank, call.bytes, call.root), (5, Some(bytes as u64), root));
        }
    }
}
