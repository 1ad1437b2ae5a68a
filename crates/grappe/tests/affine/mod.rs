//! Shared by the non-blocking collective tests: affine maps as reduction
//! operands. Composing maps x ↦ a·x + b (mod 2³²) is associative and not
//! commutative, so a reduction combined in any other order than the ranks'
//! shows in its result.

#![allow(dead_code)]

use std::sync::Arc;

use grappe::Combine;

/// Map `i` of the rank whose id is `id`.
pub fn affine(id: usize, i: usize) -> [u32; 2] {
    [(id * 7 + i * 3 + 1) as u32 | 1, (id * 13 + i) as u32]
}

/// `lower` then `higher`: x ↦ h.a·(l.a·x + l.b) + h.b.
pub fn compose(lower: [u32; 2], higher: [u32; 2]) -> [u32; 2] {
    [higher[0].wrapping_mul(lower[0]), higher[0].wrapping_mul(lower[1]).wrapping_add(higher[1])]
}

/// [`compose`] over packed maps, as a collective's combination.
pub fn compose_bytes() -> Combine {
    Arc::new(|input: &[u8], inout: &mut [u8]| {
        for (lower, higher) in input.chunks_exact(8).zip(inout.chunks_exact_mut(8)) {
            let l: [u32; 2] = bytemuck::pod_read_unaligned(lower);
            let h: [u32; 2] = bytemuck::pod_read_unaligned(higher);
            higher.copy_from_slice(bytemuck::bytes_of(&compose(l, h)));
        }
    })
}

/// The `n` maps of the rank whose id is `id`, as bytes.
pub fn maps(id: usize, n: usize) -> Vec<u8> {
    (0..n).flat_map(|i| bytemuck::bytes_of(&affine(id, i)).to_vec()).collect()
}

/// The maps of the ranks `ids` composed in that order, as bytes.
pub fn composed(ids: impl IntoIterator<Item = usize> + Clone, n: usize) -> Vec<u8> {
    (0..n)
        .flat_map(|i| {
            let all = ids.clone().into_iter().map(|id| affine(id, i)).reduce(compose).expect("at least one rank");
            bytemuck::bytes_of(&all).to_vec()
        })
        .collect()
}
