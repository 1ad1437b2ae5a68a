//! Heap buffers that move between ranks whole.

use std::alloc::Layout;
use std::ptr::NonNull;

use bytemuck::Pod;

/// A heap buffer owned by the runtime on its way to a receiver: either a
/// `Vec` handed over by a thread rank (nothing copied) or memory allocated
/// when a message matched a receive that did not know its size.
#[derive(Debug)]
pub struct OwnedBytes {
    ptr: NonNull<u8>,
    len: usize,
    cap: usize,
    align: usize,
}

// SAFETY: OwnedBytes uniquely owns its allocation, like a Vec<u8>.
unsafe impl Send for OwnedBytes {}

impl OwnedBytes {
    /// Allocates `len` bytes aligned to `align` (contents unspecified
    /// until written; only ever exposed after a receive filled them).
    pub fn alloc(len: usize, align: usize) -> OwnedBytes {
        let align = align.max(1);
        if len == 0 {
            return OwnedBytes { ptr: dangling(align), len: 0, cap: 0, align };
        }
        let layout = Layout::from_size_align(len, align).expect("receive allocation layout");
        // SAFETY: layout has non-zero size.
        let raw = unsafe { std::alloc::alloc(layout) };
        let ptr = NonNull::new(raw).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        OwnedBytes { ptr, len, cap: len, align }
    }

    /// Takes ownership of a vector's allocation.
    pub fn from_vec<T: Pod>(v: Vec<T>) -> OwnedBytes {
        let mut v = std::mem::ManuallyDrop::new(v);
        let size = std::mem::size_of::<T>();
        let align = std::mem::align_of::<T>();
        if v.capacity() == 0 || size == 0 {
            return OwnedBytes { ptr: dangling(align), len: 0, cap: 0, align };
        }
        let ptr = NonNull::new(v.as_mut_ptr() as *mut u8).expect("vec pointer");
        OwnedBytes { ptr, len: v.len() * size, cap: v.capacity() * size, align }
    }

    /// Rebuilds a buffer from the raw parts of [`Self::into_raw_parts`].
    ///
    /// # Safety
    /// The parts must come from `into_raw_parts` of a buffer of this
    /// process that nobody else owns any more.
    pub unsafe fn from_raw_parts(ptr: *mut u8, len: usize, cap: usize, align: usize) -> OwnedBytes {
        let ptr = NonNull::new(ptr).unwrap_or_else(|| dangling(align));
        OwnedBytes { ptr, len, cap, align }
    }

    /// Gives up ownership: `(ptr, len, cap, align)`.
    pub fn into_raw_parts(self) -> (*mut u8, usize, usize, usize) {
        let me = std::mem::ManuallyDrop::new(self);
        (me.ptr.as_ptr(), me.len, me.cap, me.align)
    }

    /// `(ptr, len, cap, align)`, still owned by `self`.
    pub(crate) fn parts(&self) -> (*const u8, usize, usize, usize) {
        (self.ptr.as_ptr(), self.len, self.cap, self.align)
    }

    /// The bytes in use.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr is valid for len bytes (or dangling with len 0).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The bytes in use, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and we own the memory uniquely.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Converts into a `Vec<T>`, reusing the allocation when its layout is
    /// exactly what `Vec<T>` would have made, copying otherwise. The bytes
    /// come back unchanged if they are not a whole number of `T`s (or `T`
    /// has no size): the caller says what it wanted.
    pub fn into_vec<T: Pod>(self) -> Result<Vec<T>, OwnedBytes> {
        let size = std::mem::size_of::<T>();
        if size == 0 || self.len % size != 0 {
            return Err(self);
        }
        if self.cap == 0 {
            return Ok(Vec::new());
        }
        if self.align == std::mem::align_of::<T>() && self.cap % size == 0 {
            let (ptr, len, cap, _) = self.into_raw_parts();
            // SAFETY: the allocation has layout (cap, align_of::<T>()),
            // which is Layout::array::<T>(cap / size); T is Pod, so any
            // bytes are a valid T.
            return Ok(unsafe { Vec::from_raw_parts(ptr as *mut T, len / size, cap / size) });
        }
        Ok(bytemuck::pod_collect_to_vec(self.as_slice()))
    }
}

impl Drop for OwnedBytes {
    fn drop(&mut self) {
        if self.cap > 0 {
            // SAFETY: allocated with exactly this layout (by `alloc`, or by
            // the Vec whose parts we took).
            unsafe { std::alloc::dealloc(self.ptr.as_ptr(), Layout::from_size_align_unchecked(self.cap, self.align)) }
        }
    }
}

fn dangling(align: usize) -> NonNull<u8> {
    NonNull::new(align.max(1) as *mut u8).expect("non-zero alignment")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vec_round_trips_without_copy() {
        let v: Vec<u64> = (0..1000).collect();
        let addr = v.as_ptr() as usize;
        let back: Vec<u64> = OwnedBytes::from_vec(v).into_vec().unwrap();
        assert_eq!(back.as_ptr() as usize, addr, "allocation reused");
        assert_eq!(back, (0..1000).collect::<Vec<u64>>());
    }

    #[test]
    fn another_type_gets_a_copy_and_wrong_sizes_an_error() {
        let bytes = OwnedBytes::from_vec(vec![1u8, 0, 0, 0, 2, 0, 0, 0]);
        let ints: Vec<u32> = bytes.into_vec().unwrap();
        assert_eq!(ints, vec![1, 2]);
        let odd = OwnedBytes::from_vec(vec![1u8, 2, 3]);
        assert_eq!(odd.into_vec::<u16>().expect_err("3 bytes are no u16s").as_slice(), &[1, 2, 3]);
    }

    #[test]
    fn empty_buffers_are_fine() {
        assert!(OwnedBytes::alloc(0, 8).into_vec::<u64>().unwrap().is_empty());
        assert!(OwnedBytes::from_vec(Vec::<u32>::with_capacity(10)).into_vec::<u32>().unwrap().is_empty());
    }
}
