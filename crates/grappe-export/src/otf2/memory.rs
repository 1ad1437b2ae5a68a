//! Chunk memory for OTF2's buffers: an export holds one chunk per location,
//! however long the trace.
//!
//! Left to itself, OTF2 lets each buffer take up to 128 MiB of chunks
//! (`OTF2_ALLOCATE_SIZE_MAX` in its `OTF2_Buffer.c`) and writes a buffer
//! to its file only once that is used up. Exporting 18.2 M events of 4
//! ranks held the whole 535 MB archive in memory; a job of 64 ranks could
//! have taken 8 GiB. OTF2 writes a buffer out when its allocator has no
//! chunk to give (and the flush callback agrees), then gives every chunk
//! of that buffer back through `free_all`. So this allocator gives an
//! event buffer a single chunk: when it is full, OTF2 writes it out and
//! fills it again. Definition buffers (one global, one small per location)
//! get what they ask for.
//!
//! A buffer's chunks are kept for it until OTF2 deletes the buffer, so that
//! a flush costs no allocation and no fresh page faults.
//!
//! No crate provides this: the callbacks are OTF2's own interface.

use std::cell::Cell;
use std::ffi::c_void;
use std::mem::MaybeUninit;
use std::ptr::null_mut;

use crate::otf2::ffi::{OTF2_FILETYPE_EVENTS, OTF2_FileType, OTF2_LocationRef, OTF2_MemoryCallbacks};

/// Chunks an event buffer may hold at once.
const EVENT_BUFFER_CHUNKS: usize = 1;

/// The callbacks, for `OTF2_Archive_SetMemoryCallbacks` (which keeps the
/// pointer: a `static`). Their user data is the archive's [`Memory`].
pub(crate) static MEMORY_CALLBACKS: OTF2_MemoryCallbacks =
    OTF2_MemoryCallbacks { otf2_allocate: Some(allocate), otf2_free_all: Some(free_all) };

/// What one archive's buffers hold, in bytes: now and at most.
#[derive(Debug, Default)]
pub(crate) struct Memory {
    held: Cell<u64>,
    peak: Cell<u64>,
}

impl Memory {
    /// The most the archive's buffers held at once.
    pub(crate) fn peak(&self) -> u64 {
        self.peak.get()
    }

    fn took(&self, bytes: u64) {
        self.held.set(self.held.get() + bytes);
        self.peak.set(self.peak.get().max(self.held.get()));
    }

    fn gave_back(&self, bytes: u64) {
        self.held.set(self.held.get() - bytes);
    }
}

/// The chunks of one buffer, all of one size, the first `given` of them
/// in OTF2's hands.
struct BufferChunks {
    size: usize,
    bounded: bool,
    chunks: Vec<Box<[MaybeUninit<u8>]>>,
    given: usize,
}

impl BufferChunks {
    fn new(size: usize, file_type: OTF2_FileType) -> BufferChunks {
        BufferChunks { size, bounded: file_type == OTF2_FILETYPE_EVENTS, chunks: Vec::new(), given: 0 }
    }

    /// A chunk for OTF2, or `None` to have it flush the buffer first.
    fn next(&mut self, size: usize, memory: &Memory) -> Option<*mut u8> {
        if size != self.size {
            return None; // OTF2 keeps one size per buffer; fail, never overrun.
        }
        if self.given == self.chunks.len() {
            if self.bounded && self.chunks.len() >= EVENT_BUFFER_CHUNKS {
                return None;
            }
            self.chunks.push(Box::new_uninit_slice(size));
            memory.took(size as u64);
        }
        self.given += 1;
        Some(self.chunks[self.given - 1].as_mut_ptr().cast())
    }

    fn bytes(&self) -> u64 {
        (self.size * self.chunks.len()) as u64
    }
}

/// Has blocks of 1 MiB or more go back to the system when freed, for the
/// whole process (glibc only).
///
/// glibc maps a block of 128 KiB or more on its own and unmaps it when it
/// is freed, but the first such block freed raises that threshold to its
/// size. From then on, 4 MiB blocks come from the heap, where a freed one
/// keeps its pages: the chunks above, and OTF2's 4 MiB file buffer per
/// event file. Those are taken and freed location after location. An
/// export of 256 ranks in passes of 64 locations grew to 263 MiB, where
/// all at once it held 146 MiB. A threshold that is set stays put: 44 MiB
/// (BENCHMARKS.md, "OTF2 from a merged file").
pub(crate) fn unmap_large_frees() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        // SAFETY: `mallopt` only changes the allocator's settings, under
        // the allocator's own lock.
        ONCE.call_once(|| _ = unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20) });
    }
}

/// `OTF2_MemoryAllocate`.
unsafe extern "C" fn allocate(
    memory: *mut c_void,
    file_type: OTF2_FileType,
    _location: OTF2_LocationRef,
    per_buffer: *mut *mut c_void,
    chunk_size: u64,
) -> *mut c_void {
    // SAFETY: `memory` is the archive's `Memory`, which outlives it
    // (archive.rs); OTF2 calls back from the one thread writing it.
    let memory = unsafe { &*(memory as *const Memory) };
    // SAFETY: OTF2 passes its buffer's own slot, NULL until set here.
    let slot = unsafe { &mut *per_buffer };
    if slot.is_null() {
        *slot = Box::into_raw(Box::new(BufferChunks::new(chunk_size as usize, file_type))).cast();
    }
    // SAFETY: a non-NULL slot holds the `BufferChunks` made above, until
    // `free_all` takes it back and clears the slot.
    let chunks = unsafe { &mut *(*slot as *mut BufferChunks) };
    chunks.next(chunk_size as usize, memory).map_or(null_mut(), |p| p.cast())
}

/// `OTF2_MemoryFreeAll`: every chunk of the buffer is given back, after a
/// flush (kept for its next chunks) or for good (`last`).
unsafe extern "C" fn free_all(
    memory: *mut c_void,
    _file_type: OTF2_FileType,
    _location: OTF2_LocationRef,
    per_buffer: *mut *mut c_void,
    last: bool,
) {
    // SAFETY: as in `allocate`.
    let (memory, slot) = unsafe { (&*(memory as *const Memory), &mut *per_buffer) };
    if slot.is_null() {
        return;
    }
    let chunks = *slot as *mut BufferChunks;
    if last {
        // SAFETY: made by `Box::into_raw` in `allocate`; the slot is
        // cleared, so it is taken back once.
        let chunks = unsafe { Box::from_raw(chunks) };
        memory.gave_back(chunks.bytes());
        *slot = null_mut();
    } else {
        // SAFETY: as in `allocate`.
        unsafe { (*chunks).given = 0 };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::otf2::ffi::OTF2_FileType;

    const GLOBAL_DEFS: OTF2_FileType = 1;

    /// Calls the callbacks as OTF2 does, on one buffer.
    struct Buffer<'m> {
        memory: &'m Memory,
        file_type: OTF2_FileType,
        slot: *mut c_void,
    }

    impl Buffer<'_> {
        fn allocate(&mut self, size: u64) -> *mut c_void {
            let memory = self.memory as *const Memory as *mut c_void;
            // SAFETY: a live `Memory` and this buffer's own slot.
            unsafe { allocate(memory, self.file_type, 0, &mut self.slot, size) }
        }

        fn free_all(&mut self, last: bool) {
            let memory = self.memory as *const Memory as *mut c_void;
            // SAFETY: as above.
            unsafe { free_all(memory, self.file_type, 0, &mut self.slot, last) }
        }
    }

    #[test]
    fn an_event_buffer_gets_one_chunk_then_the_same_one_after_each_flush() {
        let memory = Memory::default();
        let mut events = Buffer { memory: &memory, file_type: OTF2_FILETYPE_EVENTS, slot: null_mut() };
        let first = events.allocate(4096);
        assert!(!first.is_null());
        assert!(events.allocate(4096).is_null(), "a second chunk is refused: OTF2 must flush");
        for _ in 0..3 {
            events.free_all(false);
            assert_eq!(events.allocate(4096), first, "the flushed chunk is reused");
            assert!(events.allocate(4096).is_null());
        }
        assert_eq!(memory.peak(), 4096);
        assert!(events.allocate(8192).is_null(), "another size is refused, not overrun");
        events.free_all(true);
        assert!(events.slot.is_null());
        assert_eq!(memory.held.get(), 0);
    }

    #[test]
    fn definition_buffers_grow_as_asked_and_every_chunk_is_counted() {
        let memory = Memory::default();
        let mut defs = Buffer { memory: &memory, file_type: GLOBAL_DEFS, slot: null_mut() };
        let mut events = Buffer { memory: &memory, file_type: OTF2_FILETYPE_EVENTS, slot: null_mut() };
        let chunks: Vec<_> = (0..3).map(|_| defs.allocate(1024)).collect();
        assert!(chunks.iter().all(|c| !c.is_null()));
        assert_ne!(chunks[0], chunks[1]);
        assert!(!events.allocate(4096).is_null());
        assert_eq!(memory.peak(), 3 * 1024 + 4096);
        defs.free_all(false);
        assert_eq!(defs.allocate(1024), chunks[0], "kept for the buffer's next chunks");
        defs.free_all(true);
        events.free_all(true);
        assert_eq!(memory.held.get(), 0);
        assert_eq!(memory.peak(), 3 * 1024 + 4096);
    }
}
