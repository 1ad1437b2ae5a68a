//! Copies tuned for the message sizes of the hot path.

/// Copies `len` bytes from `src` to `dst`. Sizes up to 16 bytes (the
/// typical small message) are done inline with two overlapping loads and
/// stores instead of a call into `memcpy`.
///
/// # Safety
/// As for [`std::ptr::copy_nonoverlapping`].
#[inline(always)]
pub unsafe fn copy_bytes(src: *const u8, dst: *mut u8, len: usize) {
    // SAFETY: the caller guarantees both ranges are valid and disjoint;
    // every access below stays inside [0, len).
    unsafe {
        match len {
            8..=16 => {
                let head = (src as *const u64).read_unaligned();
                let tail = (src.add(len - 8) as *const u64).read_unaligned();
                (dst as *mut u64).write_unaligned(head);
                (dst.add(len - 8) as *mut u64).write_unaligned(tail);
            }
            4..=7 => {
                let head = (src as *const u32).read_unaligned();
                let tail = (src.add(len - 4) as *const u32).read_unaligned();
                (dst as *mut u32).write_unaligned(head);
                (dst.add(len - 4) as *mut u32).write_unaligned(tail);
            }
            0..=3 => {
                for i in 0..len {
                    dst.add(i).write(src.add(i).read());
                }
            }
            _ => std::ptr::copy_nonoverlapping(src, dst, len),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_small_length_copies_exactly() {
        for len in 0..64 {
            let src: Vec<u8> = (0..len as u8).map(|i| i.wrapping_mul(37) | 1).collect();
            let mut dst = vec![0u8; len + 2];
            // SAFETY: both ranges are inside their vectors and disjoint.
            unsafe { copy_bytes(src.as_ptr(), dst.as_mut_ptr().add(1), len) };
            assert_eq!(&dst[1..=len], &src[..], "length {len}");
            assert_eq!((dst[0], dst[len + 1]), (0, 0), "length {len} wrote outside");
        }
    }
}
