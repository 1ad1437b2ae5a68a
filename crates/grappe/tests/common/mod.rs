//! Shared by the collective tests: cases whose inputs every rank can
//! derive from (seed, rank), the communicator a case runs on (the world or
//! a part of a random split, with or without the shared-memory arena), and
//! sequential references.

#![allow(dead_code)]

use std::fmt::Debug;

use bytemuck::Pod;
use grappe::{Communicator, Operation};
use proptest::prelude::*;

/// One run of a collective.
#[derive(Debug, Clone)]
pub struct Case {
    /// World size.
    pub ranks: usize,
    pub seed: u64,
    /// Elements per block (or the maximum, for variable counts).
    pub count: usize,
    /// Run on a part of a random split of the world.
    pub split: bool,
    /// Keep the shared-memory arena (false: messages only).
    pub arena: bool,
    /// Root, modulo the communicator size.
    pub root: usize,
    /// Which element type and operation.
    pub variant: usize,
}

/// Element counts: empty, within the arena, within the eager limit, and
/// past it (rendezvous), for 8-byte elements.
pub fn counts() -> impl Strategy<Value = usize> {
    prop_oneof![Just(0usize), 1..=40usize, 41..=400usize, 401..=3000usize]
}

/// Block lengths for all-to-all, whose buffers hold a block per rank: tiny
/// (the arena holds every rank's buffer), eager, and past the eager limit
/// for both element sizes (pairwise exchange).
pub fn block_counts() -> impl Strategy<Value = usize> {
    prop_oneof![Just(0usize), 1..=8usize, 9..=300usize, 2731..=3000usize]
}

/// Cases with any of `variants` element types or operations.
pub fn cases(variants: usize) -> impl Strategy<Value = Case> {
    cases_with(variants, counts())
}

/// Cases with counts drawn from `counts`.
pub fn cases_with(variants: usize, counts: impl Strategy<Value = usize>) -> impl Strategy<Value = Case> {
    (1..=17usize, any::<u64>(), counts, any::<bool>(), any::<bool>(), 0..64usize, 0..variants).prop_map(
        |(ranks, seed, count, split, arena, root, variant)| Case { ranks, seed, count, split, arena, root, variant },
    )
}

/// What a rank knows about its place in a case.
pub struct Place<'a> {
    pub comm: &'a Communicator,
    pub world_rank: usize,
}

impl Case {
    /// The world ranks of `world_rank`'s communicator, in its rank order.
    pub fn group_of(&self, world_rank: usize) -> Vec<usize> {
        if !self.split {
            return (0..self.ranks).collect();
        }
        let mut members: Vec<usize> = (0..self.ranks).filter(|&r| self.color(r) == self.color(world_rank)).collect();
        members.sort_by_key(|&r| (self.key(r), r));
        members
    }

    fn color(&self, rank: usize) -> u32 {
        (mix(self.seed, rank as u64, 1) % (1 + mix(self.seed, 0, 2) % 3)) as u32
    }

    fn key(&self, rank: usize) -> i32 {
        (mix(self.seed, rank as u64, 3) % 4) as i32
    }

    /// The root of a communicator of `size` ranks.
    pub fn root_in(&self, size: usize) -> usize {
        self.root % size
    }

    /// Runs `body` on every rank, on the case's communicator; returns each
    /// world rank's group and result.
    pub fn run<R: Send + 'static>(&self, body: impl Fn(&Place<'_>) -> R + Sync) -> Vec<(Vec<usize>, R)> {
        grappe::testing::threads(self.ranks, |world| {
            let base = if self.arena { world.clone() } else { without_arena(world) };
            let comm = if self.split {
                let r = world.rank();
                base.split(Some(self.color(r)), self.key(r)).expect("split").expect("every rank has a color")
            } else {
                base
            };
            let group = self.group_of(world.rank());
            assert_eq!((comm.size(), group[comm.rank()]), (group.len(), world.rank()), "split disagrees");
            let result = body(&Place { comm: &comm, world_rank: world.rank() });
            (group, result)
        })
    }

    /// Rank `rank`'s input number `salt`: `len` elements.
    pub fn input<T>(&self, make: fn(u64) -> T, rank: usize, salt: u64, len: usize) -> Vec<T> {
        let base = mix(self.seed, rank as u64, salt);
        (0..len as u64).map(|i| make(mix(base, i, 0))).collect()
    }

    /// A count in `0..=self.count`, fixed by the case and `(a, b)`.
    pub fn count_for(&self, a: usize, b: usize) -> usize {
        (mix(self.seed, (a * 1000 + b) as u64, 9) % (self.count as u64 + 1)) as usize
    }
}

/// A duplicate of `world` without an arena: communicators are created
/// until the host's arenas are all taken.
pub fn without_arena(world: &Communicator) -> Communicator {
    for _ in 0..1000 {
        let comm = world.dup().expect("dup");
        if !comm.has_shared_arena() {
            return comm;
        }
        world.split(Some(world.rank() as u32), 0).expect("split");
    }
    panic!("the arenas never ran out");
}

/// A well-mixed hash of three words (splitmix64 finaliser, chained).
pub fn mix(a: u64, b: u64, c: u64) -> u64 {
    fn finish(mut z: u64) -> u64 {
        z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    finish(finish(finish(a) ^ b) ^ c)
}

// ---- element generators ----

pub fn word(h: u64) -> u64 {
    h
}

/// Small enough that 17 of them never overflow a sum.
pub fn small_word(h: u64) -> u64 {
    h >> 24
}

pub fn int(h: u64) -> i32 {
    (h % 2001) as i32 - 1000
}

pub fn real(h: u64) -> f64 {
    let unit = (h >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
    unit * f64::powi(10.0, (h % 7) as i32)
}

/// A 3-byte element: offsets that are no multiple of 8.
pub fn triple(h: u64) -> [u8; 3] {
    let b = h.to_le_bytes();
    [b[0], b[1], b[2]]
}

/// A 2×2 matrix of wrapping integers: its product is associative and not
/// commutative.
pub fn matrix(h: u64) -> [u64; 4] {
    [h, mix(h, 1, 0), mix(h, 2, 0), mix(h, 3, 0)]
}

pub fn matmul(acc: &mut [u64; 4], b: &[u64; 4]) {
    let a = *acc;
    let (m, p) = (|x: u64, y: u64| x.wrapping_mul(y), |x: u64, y: u64| x.wrapping_add(y));
    *acc = [
        p(m(a[0], b[0]), m(a[1], b[2])),
        p(m(a[0], b[1]), m(a[1], b[3])),
        p(m(a[2], b[0]), m(a[3], b[2])),
        p(m(a[2], b[1]), m(a[3], b[3])),
    ];
}

// ---- references ----

/// `inputs[0] ⊕ inputs[1] ⊕ ...`, left to right.
pub fn fold<T: Pod, O: Operation<T>>(op: &O, inputs: impl IntoIterator<Item = Vec<T>>) -> Vec<T> {
    let mut inputs = inputs.into_iter();
    let mut acc = inputs.next().expect("at least one input");
    for later in inputs {
        op.combine(&mut acc, &later);
    }
    acc
}

/// Equal, or a message naming the first difference.
pub fn same<T: PartialEq + Debug>(what: &str, got: &[T], want: &[T]) -> Result<(), TestCaseError> {
    if got.len() != want.len() {
        return Err(TestCaseError::fail(format!("{what}: {} elements, expected {}", got.len(), want.len())));
    }
    match got.iter().zip(want).position(|(g, w)| g != w) {
        None => Ok(()),
        Some(i) => Err(TestCaseError::fail(format!(
            "{what}: element {i} of {} is {:?}, expected {:?}",
            got.len(),
            got[i],
            want[i]
        ))),
    }
}

/// Runs `$check(case, generator, op)` for the case's reduction variant:
/// u64 xor and sum, i32 sum, f64 max and min, and a non-commutative
/// matrix product.
#[macro_export]
macro_rules! with_reduction {
    ($case:expr, $check:ident) => {
        match $case.variant % 6 {
            0 => $check($case, common::word, grappe::BitXor),
            1 => $check($case, common::small_word, grappe::Sum),
            2 => $check($case, common::int, grappe::Sum),
            3 => $check($case, common::real, grappe::Max),
            4 => $check($case, common::real, grappe::Min),
            _ => $check($case, common::matrix, grappe::UserOp::non_commutative(common::matmul)),
        }
    };
}

/// Runs `$check(case, generator)` for the case's element type: 8-byte
/// words or 3-byte triples.
#[macro_export]
macro_rules! with_element {
    ($case:expr, $check:ident) => {
        match $case.variant % 2 {
            0 => $check($case, common::word),
            _ => $check($case, common::triple),
        }
    };
}
