//! Memory aligned for `O_DIRECT`.

/// The alignment `O_DIRECT` gets here: a page covers the logical block of
/// every device.
pub const ALIGN: usize = 4096;

/// One aligned block.
#[derive(Clone, Copy, bytemuck::Zeroable, bytemuck::Pod)]
#[repr(C, align(4096))]
struct Block([u8; ALIGN]);

/// A growable byte buffer whose start is aligned to [`ALIGN`] and whose
/// length is a whole number of blocks.
#[derive(Clone)]
pub struct AlignedBuf {
    blocks: Vec<Block>,
}

impl AlignedBuf {
    /// A zeroed buffer of at least `len` bytes (rounded up to blocks).
    pub fn new(len: usize) -> AlignedBuf {
        AlignedBuf { blocks: vec![Block([0; ALIGN]); len.div_ceil(ALIGN)] }
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.blocks.len() * ALIGN
    }

    /// Whether it has no block.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// Grows it to at least `len` bytes, keeping its content.
    pub fn grow(&mut self, len: usize) {
        if len > self.len() {
            self.blocks.resize(len.div_ceil(ALIGN), Block([0; ALIGN]));
        }
    }

    #[inline(always)]
    pub fn bytes(&self) -> &[u8] {
        bytemuck::cast_slice(&self.blocks)
    }

    #[inline(always)]
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        bytemuck::cast_slice_mut(&mut self.blocks)
    }
}

/// Whether `bytes` can go to an `O_DIRECT` file as they are: aligned start,
/// whole blocks.
pub(crate) fn is_aligned(bytes: &[u8]) -> bool {
    (bytes.as_ptr() as usize) % ALIGN == 0 && bytes.len() % ALIGN == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_aligned_and_keep_their_content_when_grown() {
        let mut b = AlignedBuf::new(1);
        assert_eq!(b.len(), ALIGN);
        assert!(is_aligned(b.bytes()));
        b.bytes_mut()[..3].copy_from_slice(b"abc");
        b.grow(3 * ALIGN + 1);
        assert_eq!(b.len(), 4 * ALIGN);
        assert!(is_aligned(b.bytes()));
        assert_eq!(&b.bytes()[..3], b"abc");
        assert!(!is_aligned(&b.bytes()[1..ALIGN + 1]));
        assert!(!is_aligned(&b.bytes()[..ALIGN - 1]));
    }
}
