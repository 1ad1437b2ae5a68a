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

/// The part of a collective call that must be the same on every rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Signature {
    pub kind: CollectiveKind,
    /// The root of a rooted collective.
    pub root: Option<usize>,
    /// Bytes the call names on every rank alike (the vector of an
    /// allreduce, one block of a gather); `None` for the collectives whose
    /// sizes differ by rank by design (gatherv, scatterv, alltoallv).
    pub bytes: Option<usize>,
    /// A digest of the per-rank counts of allgatherv and reduce_scatter
    /// (the same on every rank), 0 otherwise: two layouts with the same
    /// total differ here.
    pub layout: u64,
}

/// Bits of a collective tag that hold the tag family (`tags`).
const FAMILY_BITS: u32 = 4;
/// A size below this travels exactly in the tag; larger ones as a digest.
const EXACT_SIZES: u64 = 1 << 26;

impl Signature {
    /// A collective without root whose size is `bytes` on every rank.
    pub fn sized(kind: CollectiveKind, bytes: usize) -> Signature {
        Signature { kind, root: None, bytes: Some(bytes), layout: 0 }
    }

    /// A rooted collective of `bytes` on every rank.
    pub fn rooted(kind: CollectiveKind, bytes: usize, root: usize) -> Signature {
        Signature { kind, root: Some(root), bytes: Some(bytes), layout: 0 }
    }

    /// A collective whose sizes differ by rank by design: only the
    /// collective and its root must agree.
    pub fn per_rank_sizes(kind: CollectiveKind, root: Option<usize>) -> Signature {
        Signature { kind, root, bytes: None, layout: 0 }
    }

    /// A collective with per-rank `counts` of `elem_bytes`-byte elements,
    /// the same on every rank.
    pub fn laid_out(kind: CollectiveKind, counts: &[usize], elem_bytes: usize) -> Signature {
        let layout = counts.iter().fold(mix(counts.len() as u64, elem_bytes as u64), |h, &c| mix(h, c as u64));
        let total = counts.iter().sum::<usize>() * elem_bytes;
        Signature { kind, root: None, bytes: Some(total), layout: layout | 1 }
    }

    /// The tag of this call's messages in tag family `family`.
    pub fn tag(&self, family: i32) -> i32 {
        debug_assert!((1..1 << FAMILY_BITS).contains(&family));
        family | (self.size_field() << FAMILY_BITS) as i32
    }

    /// 27 bits: the size itself when below [`EXACT_SIZES`] and the layout
    /// is plain, else a digest with the top bit set (the digest of no size
    /// for the collectives without a common one).
    fn size_field(&self) -> u32 {
        match self.bytes {
            Some(bytes) if self.layout == 0 && (bytes as u64) < EXACT_SIZES => bytes as u32,
            Some(bytes) => (EXACT_SIZES | (mix(bytes as u64, self.layout) & (EXACT_SIZES - 1))) as u32,
            None => EXACT_SIZES as u32,
        }
    }

    /// One word for the arena's comparison of every rank's signature:
    /// distinct signatures share it with probability 2^-64.
    pub fn key(&self) -> u64 {
        let root = self.root.map_or(u64::MAX, |r| r as u64);
        let bytes = self.bytes.map_or(u64::MAX, |b| b as u64);
        mix(mix(mix(self.kind as u64, root), bytes), self.layout)
    }

    /// This call, as one side of a mismatch found by rank `rank`.
    pub fn call(&self, rank: usize) -> Call {
        Call { rank, op: None, bytes: self.reported_bytes(), root: self.root }
    }

    fn reported_bytes(&self) -> Option<u64> {
        self.bytes.map(|b| b as u64)
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

    /// Packs the collective and root for an arena header.
    pub fn pack_op_root(&self) -> u64 {
        (self.kind as u64) | (self.root.map_or(0, |r| r as u64 + 1) << 8)
    }

    /// The call described by an arena header: `op_root` from
    /// [`pack_op_root`](Self::pack_op_root) and the size, next to ours.
    pub fn call_from_header(&self, rank: usize, op_root: u64, bytes: u64) -> Call {
        call_of(rank, op_root, bytes, Some(self.kind))
    }

    /// The size for an arena header (`u64::MAX`: none).
    pub fn header_bytes(&self) -> u64 {
        self.bytes.map_or(u64::MAX, |b| b as u64)
    }
}

/// The call of `rank` described by `op_root` (from
/// [`Signature::pack_op_root`]) and `bytes` (from
/// [`Signature::header_bytes`]), naming its collective if not `ours`.
pub(crate) fn call_of(rank: usize, op_root: u64, bytes: u64, ours: Option<CollectiveKind>) -> Call {
    let kind = CollectiveKind::from_id(op_root as u8);
    let op = (kind != ours).then(|| kind.map_or("another collective", CollectiveKind::name).into());
    let root = (op_root >> 8).checked_sub(1).map(|r| r as usize);
    Call { rank, op, bytes: (bytes != u64::MAX).then_some(bytes), root }
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
            let theirs = Signature { kind: other, root, bytes: Some(bytes), layout: 0 };
            let call = Signature::sized(kind, 0).call_from_header(5, theirs.pack_op_root(), theirs.header_bytes());
            prop_assert_eq!(call.op.is_some(), kind != other);
            prop_assert_eq!((call.rank, call.bytes, call.root), (5, Some(bytes as u64), root));
        }
    }
}
