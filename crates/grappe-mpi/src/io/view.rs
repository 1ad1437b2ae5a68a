//! Where a rank's data lie in a file: the view's filetype, flattened into
//! the blocks of data one copy of it covers, tiled from the displacement
//! with its extent as stride (MPI 3.1, 13.3). A position in the view
//! counts data bytes from the displacement, skipping the holes; a data
//! access of `n` bytes from a position covers the file's byte ranges
//! [`Tiling::segments`] gives, in order.

use std::fmt;

use crate::types::Block;

/// Why a filetype cannot make a view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TilingError {
    /// A block before the start of the filetype.
    NegativeOffset { offset: isize },
    /// A block that starts before the one ahead of it in the type map.
    Decreasing { offset: isize, previous_offset: isize },
    /// A block that starts inside the one ahead of it: MPI allows it in
    /// the view of a file opened for reading only.
    Overlapping { offset: isize, previous_end: isize },
    /// Data in a filetype of extent 0 (or less): its copies would pile up.
    NoExtent { extent: isize, size: usize },
}

impl fmt::Display for TilingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TilingError::NegativeOffset { offset } => {
                write!(f, "the filetype has data at displacement {offset}: MPI requires non-negative displacements")
            }
            TilingError::Decreasing { offset, previous_offset } => write!(
                f,
                "the filetype's data at displacement {offset} come before the data ahead of them in its type map \
                 (at {previous_offset}): MPI requires monotonically non-decreasing displacements"
            ),
            TilingError::Overlapping { offset, previous_end } => write!(
                f,
                "the filetype's data at displacement {offset} overlap the data ahead of them in its type map \
                 (which end at {previous_end}): MPI allows overlapping regions only in files opened for reading only"
            ),
            TilingError::NoExtent { extent, size } => {
                write!(f, "the filetype holds {size} bytes of data in an extent of {extent}")
            }
        }
    }
}

/// A byte range of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub offset: u64,
    pub len: u64,
}

impl Segment {
    pub fn end(&self) -> u64 {
        self.offset + self.len
    }
}

/// A filetype tiled from a displacement: what a view maps positions with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tiling {
    disp: u64,
    /// The blocks of one copy of the filetype, offsets from the copy's start.
    blocks: Vec<(u64, u64)>,
    /// The data bytes of one copy ahead of each block.
    before: Vec<u64>,
    /// Data bytes in one copy.
    size: u64,
    /// Bytes from one copy to the next.
    extent: u64,
    /// One block that fills the extent: positions map straight to bytes.
    dense: bool,
}

impl Tiling {
    /// The tiling of a filetype of `blocks` (in type-map order) and
    /// `extent`, from byte `disp` of the file. Blocks may overlap the
    /// ones ahead of them only if `overlap_allowed` (a file that is only
    /// read: MPI 3.1, 13.3); their starts never go back.
    pub fn new(disp: u64, blocks: &[Block], extent: isize, overlap_allowed: bool) -> Result<Tiling, TilingError> {
        let mut flat: Vec<(u64, u64)> = Vec::with_capacity(blocks.len());
        let (mut previous_offset, mut previous_end) = (0isize, 0isize);
        for block in blocks.iter().filter(|b| b.len > 0) {
            if block.offset < 0 {
                return Err(TilingError::NegativeOffset { offset: block.offset });
            }
            if block.offset < previous_offset {
                return Err(TilingError::Decreasing { offset: block.offset, previous_offset });
            }
            if block.offset < previous_end && !overlap_allowed {
                return Err(TilingError::Overlapping { offset: block.offset, previous_end });
            }
            previous_offset = block.offset;
            previous_end = previous_end.max(block.offset + block.len as isize);
            match flat.last_mut() {
                Some(last) if last.0 + last.1 == block.offset as u64 => last.1 += block.len as u64,
                _ => flat.push((block.offset as u64, block.len as u64)),
            }
        }
        let size: u64 = flat.iter().map(|b| b.1).sum();
        if size > 0 && extent <= 0 {
            return Err(TilingError::NoExtent { extent, size: size as usize });
        }
        let mut before = Vec::with_capacity(flat.len());
        let mut sum = 0;
        for block in &flat {
            before.push(sum);
            sum += block.1;
        }
        let extent = extent.max(0) as u64;
        let dense = matches!(flat[..], [(0, len)] if len == extent);
        Ok(Tiling { disp, blocks: flat, before, size, extent, dense })
    }

    /// The view of a file with no view set: every byte, from `disp`.
    pub fn bytes(disp: u64) -> Tiling {
        Tiling { disp, blocks: vec![(0, 1)], before: vec![0], size: 1, extent: 1, dense: true }
    }

    pub fn disp(&self) -> u64 {
        self.disp
    }

    /// The file byte of data position `position`.
    pub fn byte_of(&self, position: u64) -> u64 {
        if self.dense {
            return self.disp + position;
        }
        if self.size == 0 {
            return self.disp;
        }
        let (copy, within) = (position / self.size, position % self.size);
        let block = self.before.partition_point(|&b| b <= within) - 1;
        self.disp + copy * self.extent + self.blocks[block].0 + (within - self.before[block])
    }

    /// The file's byte ranges of `len` data bytes from data position
    /// `start`, in order, adjacent ones merged.
    pub fn segments(&self, start: u64, len: u64) -> Segments<'_> {
        Segments { tiling: self, position: start, remaining: len, pending: None }
    }

    /// The data bytes of the view that lie before file byte `byte`: the
    /// position of the first data at or after it.
    pub fn position_of_byte(&self, byte: u64) -> u64 {
        if byte <= self.disp || self.size == 0 {
            return 0;
        }
        if self.dense {
            return byte - self.disp;
        }
        // Positions map to bytes in increasing order: the first position
        // whose byte is at or after `byte`, by bisection. (In a view whose
        // blocks overlap, which only reads, they go back where the blocks
        // do: the bisection then finds a position whose byte is at or after
        // `byte` and whose predecessor's is before it.)
        let copies = (byte - self.disp) / self.extent.max(1) + 1;
        let (mut low, mut high) = (0u64, copies * self.size);
        while low < high {
            let middle = low + (high - low) / 2;
            if self.byte_of(middle) < byte {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        low
    }
}

/// The byte ranges of an access (see [`Tiling::segments`]).
pub struct Segments<'a> {
    tiling: &'a Tiling,
    position: u64,
    remaining: u64,
    /// A range found, held until the next one shows it does not continue it.
    pending: Option<Segment>,
}

impl Segments<'_> {
    /// The next range of the tiling, unmerged.
    fn next_piece(&mut self) -> Option<Segment> {
        if self.remaining == 0 || self.tiling.size == 0 {
            return None;
        }
        let t = self.tiling;
        if t.dense {
            let piece = Segment { offset: t.disp + self.position, len: self.remaining };
            self.position += self.remaining;
            self.remaining = 0;
            return Some(piece);
        }
        let within = self.position % t.size;
        let block = t.before.partition_point(|&b| b <= within) - 1;
        let into = within - t.before[block];
        let len = (t.blocks[block].1 - into).min(self.remaining);
        let piece = Segment { offset: t.byte_of(self.position), len };
        self.position += len;
        self.remaining -= len;
        Some(piece)
    }
}

impl Iterator for Segments<'_> {
    type Item = Segment;

    fn next(&mut self) -> Option<Segment> {
        loop {
            match (self.pending, self.next_piece()) {
                (None, None) => return None,
                (pending, None) => {
                    self.pending = None;
                    return pending;
                }
                (None, Some(piece)) => self.pending = Some(piece),
                (Some(held), Some(piece)) if held.end() == piece.offset => {
                    self.pending = Some(Segment { offset: held.offset, len: held.len + piece.len })
                }
                (Some(held), Some(piece)) => {
                    self.pending = Some(piece);
                    return Some(held);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn block(offset: isize, len: usize) -> Block {
        Block { offset, len }
    }

    #[test]
    fn a_vector_filetype_maps_positions_to_its_blocks_copy_after_copy() {
        // MPI_Type_vector(2, 2, 4, MPI_INT) resized to 32 bytes, from byte 100.
        let tiling = Tiling::new(100, &[block(0, 8), block(16, 8)], 32, false).unwrap();
        assert_eq!(tiling.segments(0, 16).map(|s| s.len).sum::<u64>(), 16);
        assert_eq!([0, 7, 8, 15, 16, 20].map(|p| tiling.byte_of(p)), [100, 107, 116, 123, 132, 136]);
        let segments: Vec<_> = tiling.segments(4, 20).map(|s| (s.offset, s.len)).collect();
        assert_eq!(segments, vec![(104, 4), (116, 8), (132, 8)]);
        assert_eq!([0, 100, 104, 108, 116, 125, 132].map(|b| tiling.position_of_byte(b)), [0, 0, 4, 8, 8, 16, 16]);
    }

    #[test]
    fn blocks_that_meet_across_copies_make_one_range() {
        // Data at the end of one copy and the start of the next.
        let tiling = Tiling::new(0, &[block(0, 4), block(12, 4)], 16, false).unwrap();
        let segments: Vec<_> = tiling.segments(4, 12).map(|s| (s.offset, s.len)).collect();
        assert_eq!(segments, vec![(12, 8), (28, 4)]);
    }

    #[test]
    fn a_contiguous_filetype_is_one_range_whatever_the_length() {
        let tiling = Tiling::new(3, &[block(0, 4)], 4, false).unwrap();
        let segments: Vec<_> = tiling.segments(8, 1 << 40).collect();
        assert_eq!(segments, vec![Segment { offset: 11, len: 1 << 40 }]);
        assert_eq!(tiling.position_of_byte(10), 7);
    }

    #[test]
    fn filetypes_mpi_forbids_are_refused_with_the_displacement() {
        assert_eq!(Tiling::new(0, &[block(-4, 4)], 8, true), Err(TilingError::NegativeOffset { offset: -4 }));
        assert_eq!(
            Tiling::new(0, &[block(8, 4), block(0, 4)], 16, true),
            Err(TilingError::Decreasing { offset: 0, previous_offset: 8 })
        );
        assert_eq!(
            Tiling::new(0, &[block(0, 12), block(4, 4)], 16, false),
            Err(TilingError::Overlapping { offset: 4, previous_end: 12 })
        );
        assert_eq!(Tiling::new(0, &[block(0, 4)], 0, false), Err(TilingError::NoExtent { extent: 0, size: 4 }));
        assert!(Tiling::new(0, &[], 0, false).unwrap().segments(0, 10).next().is_none(), "no data, no ranges");
    }

    #[test]
    fn overlapping_blocks_of_a_view_that_is_only_read_map_to_the_bytes_again() {
        // MPI_Type_indexed: 3 ints at 0, then 1 int at 1 (bytes 4..8 again).
        let tiling = Tiling::new(0, &[block(0, 12), block(4, 4)], 16, true).unwrap();
        let segments: Vec<_> = tiling.segments(8, 16).map(|s| (s.offset, s.len)).collect();
        assert_eq!(segments, vec![(8, 4), (4, 4), (16, 8)]);
        assert_eq!([11, 12, 15, 16].map(|p| tiling.byte_of(p)), [11, 4, 7, 16]);
    }

    /// The file bytes of positions `start..start + len`, one by one.
    fn bytes_one_by_one(tiling: &Tiling, start: u64, len: u64) -> Vec<u64> {
        (start..start + len).map(|p| tiling.byte_of(p)).collect()
    }

    /// Blocks in increasing order with gaps, and an extent past the last.
    fn filetypes() -> impl Strategy<Value = (Vec<Block>, isize)> {
        (prop::collection::vec((0usize..6, 1usize..6), 1..6), 0isize..8).prop_map(|(parts, slack)| {
            let mut at = 0isize;
            let blocks: Vec<Block> = parts
                .into_iter()
                .map(|(gap, len)| {
                    at += gap as isize;
                    let b = block(at, len);
                    at += len as isize;
                    b
                })
                .collect();
            (blocks, at + slack)
        })
    }

    proptest! {
        /// The ranges of an access are its positions' bytes, in order,
        /// merged where they touch and nowhere else.
        #[test]
        fn segments_cover_exactly_the_positions_bytes(
            (blocks, extent) in filetypes(), disp in 0u64..50, start in 0u64..80, len in 0u64..80,
        ) {
            let tiling = Tiling::new(disp, &blocks, extent, false).unwrap();
            let segments: Vec<Segment> = tiling.segments(start, len).collect();
            let covered: Vec<u64> = segments.iter().flat_map(|s| s.offset..s.end()).collect();
            prop_assert_eq!(covered, bytes_one_by_one(&tiling, start, len));
            for pair in segments.windows(2) {
                prop_assert!(pair[0].end() < pair[1].offset, "merged where they touch: {:?}", pair);
            }
        }

        /// The data before a byte are the positions whose bytes lie before it.
        #[test]
        fn position_of_byte_counts_the_data_before_it(
            (blocks, extent) in filetypes(), disp in 0u64..20, byte in 0u64..200,
        ) {
            let tiling = Tiling::new(disp, &blocks, extent, false).unwrap();
            let before = (0..400).filter(|&p| tiling.byte_of(p) < byte).count() as u64;
            prop_assert_eq!(tiling.position_of_byte(byte), before);
        }
    }
}
