//! The data embedded in the page for its scripts: the diagram, the
//! profile's tables, and the communication matrix as a dense square
//! (ranks pooled in blocks past [`MATRIX_SIDE`], so the page stays small
//! whatever the job's size).

use grappe_analysis::profile::Profile;
use serde::Serialize;

use super::diagram::Diagram;

/// Rows (and columns) of the matrix sent to the page, at most.
const MATRIX_SIDE: u32 = 200;
/// Call sites sent to the page (the longest).
const SITES_SHOWN: usize = 50;

/// What the scripts read.
#[derive(Serialize)]
pub(crate) struct Data<'a> {
    world_size: u32,
    diagram: &'a Diagram<'a>,
    /// The profile without its matrix, and its longest call sites only.
    profile: Profile,
    sites_total: usize,
    matrix: Matrix,
}

/// Messages and bytes from each block of `block` ranks to each other, as
/// `size` × `size` arrays by rows.
#[derive(Serialize)]
struct Matrix {
    ranks: u32,
    block: u32,
    size: usize,
    messages: Vec<u64>,
    bytes: Vec<u64>,
}

impl<'a> Data<'a> {
    pub(crate) fn new(world_size: u32, diagram: &'a Diagram<'a>, profile: &Profile) -> Self {
        let mut shown = profile.clone();
        shown.matrix = Vec::new();
        shown.sites.truncate(SITES_SHOWN);
        Data { world_size, diagram, profile: shown, sites_total: profile.sites.len(), matrix: Matrix::of(profile) }
    }
}

impl Matrix {
    fn of(profile: &Profile) -> Self {
        let highest = profile.matrix.iter().map(|c| c.src.max(c.dst)).max().unwrap_or(0);
        let ranks = highest.saturating_add(1).max(profile.world_size).max(1);
        let block = ranks.div_ceil(MATRIX_SIDE);
        let size = ranks.div_ceil(block) as usize;
        let (mut messages, mut bytes) = (vec![0u64; size * size], vec![0u64; size * size]);
        for c in &profile.matrix {
            let cell = (c.src / block) as usize * size + (c.dst / block) as usize;
            messages[cell] = messages[cell].saturating_add(c.messages);
            bytes[cell] = bytes[cell].saturating_add(c.bytes);
        }
        Matrix { ranks, block, size, messages, bytes }
    }
}
