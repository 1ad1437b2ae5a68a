//! Memory aligned for `O_DIRECT`.

use std::alloc::Layout;

use memmap2::{Advice, MmapMut, MmapOptions};

/// The alignment `O_DIRECT` gets here: a page covers the logical block of
/// every device.
pub const ALIGN: usize = 4096;

/// A buffer this large or larger is asked for huge pages (the size of one
/// on x86-64 and arm64).
const HUGE_PAGE: usize = 2 << 20;

/// A growable byte buffer whose start is aligned to [`ALIGN`] and whose
/// length is a whole number of blocks.
///
/// It is a private anonymous mapping, not a `Vec`: the kernel zeroes its
/// pages, and a large one gets transparent huge pages (`MADV_HUGEPAGE`
/// before the first touch). Every `O_DIRECT` write pins the pages it
/// reads and unpins them after; with 4 KiB pages that took 7% of a Chrome
/// export's CPU time here, and first touching them (a fault and a clearing
/// per page) 2% more (BENCHMARKS.md, "Output buffers in huge pages"). A
/// `Vec` of aligned blocks went through `aligned_alloc` and a `memset`,
/// which touched every page before any advice could apply.
pub struct AlignedBuf {
    map: MmapMut,
}

impl AlignedBuf {
    /// A zeroed buffer of at least `len` bytes (rounded up to blocks, and
    /// to huge pages once it is that large, so that none is cut). Like a
    /// `Vec`, it ends the process if the memory cannot be had.
    pub fn new(len: usize) -> AlignedBuf {
        let len = len.max(1).next_multiple_of(ALIGN);
        let len = if len >= HUGE_PAGE { len.next_multiple_of(HUGE_PAGE) } else { len };
        let Ok(map) = MmapOptions::new().len(len).map_anon() else {
            let layout = Layout::from_size_align(len, ALIGN).expect("a length rounded to blocks");
            std::alloc::handle_alloc_error(layout)
        };
        if len >= HUGE_PAGE {
            // Advice: without it (or where the kernel has no huge pages)
            // the buffer works the same on small pages.
            let _ = map.advise(Advice::HugePage);
        }
        AlignedBuf { map }
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether it has no block.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Grows it to at least `len` bytes, keeping its content.
    pub fn grow(&mut self, len: usize) {
        if len > self.len() {
            let mut bigger = AlignedBuf::new(len);
            bigger.map[..self.len()].copy_from_slice(&self.map);
            *self = bigger;
        }
    }

    #[inline(always)]
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    #[inline(always)]
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.map
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

    #[test]
    fn large_buffers_are_whole_huge_pages_advised_as_such_and_zeroed() {
        let mut b = AlignedBuf::new(HUGE_PAGE + 1);
        assert_eq!(b.len(), 2 * HUGE_PAGE, "rounded to whole huge pages");
        assert!(b.bytes().iter().all(|&x| x == 0));
        let flags = vm_flags_at(b.bytes().as_ptr() as usize);
        assert!(flags.split_whitespace().any(|f| f == "hg"), "no MADV_HUGEPAGE on the mapping: {flags}");
        b.bytes_mut()[HUGE_PAGE] = 7;
        b.grow(3 * HUGE_PAGE);
        assert_eq!((b.len(), b.bytes()[HUGE_PAGE]), (3 * HUGE_PAGE, 7), "grown with its content");
        // A small one is left on small pages: rounding it up would waste memory.
        assert_eq!(AlignedBuf::new(3 * ALIGN).len(), 3 * ALIGN);
    }

    /// The `VmFlags` line of the mapping of this process that holds `addr`.
    fn vm_flags_at(addr: usize) -> String {
        let smaps = std::fs::read_to_string("/proc/self/smaps").expect("/proc/self/smaps");
        let mut inside = false;
        for line in smaps.lines() {
            let range = line.split_whitespace().next().and_then(|r| r.split_once('-'));
            if let Some((from, to)) = range
                && let (Ok(from), Ok(to)) = (usize::from_str_radix(from, 16), usize::from_str_radix(to, 16))
            {
                inside = (from..to).contains(&addr);
            } else if inside && let Some(flags) = line.strip_prefix("VmFlags:") {
                return flags.to_owned();
            }
        }
        panic!("no mapping holds {addr:#x}")
    }
}
