//! Rendezvous slots: large messages move with one copy, by both ends.
//!
//! The sender describes its buffer in a small RTS record and prepares one
//! of its slots (in the host segment) for the shared copy state. When the receiver matches the
//! RTS it writes its own buffer into the slot and starts copying. The
//! message is cut into chunks claimed with an atomic counter, so a sender
//! that is waiting for the send to finish copies chunks too: two cores move
//! the data, each with a single copy (memcpy between threads, cross-memory
//! attach between processes). This is collaborative polling applied to the
//! one transfer where it pays most. A sender busy elsewhere simply lets the
//! receiver copy everything.
//!
//! Slot life cycle, each step published with release ordering:
//!
//! ```text
//! FREE --sender offers--> OFFERED --receiver matches--> MATCHED
//!   ^                                                     | chunks copied by both
//!   +---- sender recycles <---- receiver released <-------+ (done == take)
//! ```

use std::ops::Range;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use grappe_fabric::layout::RDV_SLOT_BYTES;
use grappe_fabric::put::RemoteRegion;

const FREE: u32 = 0;
const OFFERED: u32 = 1;
const MATCHED: u32 = 2;

/// The shared part of one rendezvous, in the sender's slot area.
#[repr(C, align(64))]
#[derive(Debug)]
pub(crate) struct Slot {
    state: AtomicU32,
    failed: AtomicU32,
    dst_addr: AtomicU64,
    take: AtomicU64,
    chunk: AtomicU64,
    next_chunk: AtomicU64,
    done: AtomicU64,
    released: AtomicU32,
}

const _: () = assert!(std::mem::size_of::<Slot>() <= RDV_SLOT_BYTES);

impl Slot {
    /// # Safety
    /// `ptr` must be a rendezvous slot of the host segment, which outlives
    /// the returned reference.
    pub(crate) unsafe fn at<'a>(ptr: *mut u8) -> &'a Slot {
        // SAFETY: zero-initialised, aligned, only atomics.
        unsafe { &*(ptr as *const Slot) }
    }

    /// Sender: prepare the slot for a new transfer (the data itself is
    /// described in the RTS). The slot must be FREE.
    pub(crate) fn offer(&self) {
        debug_assert_eq!(self.state.load(Ordering::Relaxed), FREE);
        self.failed.store(0, Ordering::Relaxed);
        self.released.store(0, Ordering::Relaxed);
        self.next_chunk.store(0, Ordering::Relaxed);
        self.done.store(0, Ordering::Relaxed);
        self.state.store(OFFERED, Ordering::Release);
    }

    /// Sender: take back an offer nobody saw (its RTS did not fit).
    pub(crate) fn withdraw(&self) {
        self.state.store(FREE, Ordering::Relaxed);
    }

    /// Receiver: publish the destination, `take` bytes in `chunk`-byte
    /// pieces. `take` may be less than the message (truncation) or zero.
    pub(crate) fn accept(&self, dst: RemoteRegion, chunk: u64) {
        self.dst_addr.store(dst.addr, Ordering::Relaxed);
        self.take.store(dst.len, Ordering::Relaxed);
        self.chunk.store(chunk.max(1), Ordering::Relaxed);
        self.state.store(MATCHED, Ordering::Release);
    }

    /// Sender: the destination, once the receiver accepted.
    pub(crate) fn destination(&self) -> Option<RemoteRegion> {
        (self.state.load(Ordering::Acquire) == MATCHED).then(|| RemoteRegion {
            addr: self.dst_addr.load(Ordering::Relaxed),
            len: self.take.load(Ordering::Relaxed),
        })
    }

    /// Either side: claim the next chunk still to copy. Acquire-release:
    /// a side that claims after the other has claimed a chunk sees what
    /// the other published before (its `accessing` word), so that one
    /// finishing a transfer alone knows whom to wait for.
    pub(crate) fn claim(&self) -> Option<Range<u64>> {
        let take = self.take.load(Ordering::Relaxed);
        let chunk = self.chunk.load(Ordering::Relaxed);
        let index = self.next_chunk.fetch_add(1, Ordering::AcqRel);
        let start = index.checked_mul(chunk)?;
        (start < take).then(|| start..(start + chunk).min(take))
    }

    /// Either side: `bytes` of a claimed chunk are copied. True if that
    /// completed the transfer (the caller then rings the other side).
    pub(crate) fn copied(&self, bytes: u64) -> bool {
        let take = self.take.load(Ordering::Relaxed);
        self.done.fetch_add(bytes, Ordering::AcqRel) + bytes == take
    }

    /// `Some(true)` once every byte is copied, `Some(false)` if a copy
    /// failed, `None` while copies are under way.
    pub(crate) fn outcome(&self) -> Option<bool> {
        if self.has_failed() {
            Some(false)
        } else {
            (self.done.load(Ordering::Acquire) == self.take.load(Ordering::Relaxed)).then_some(true)
        }
    }

    /// Either side: a copy failed; the other side stops waiting.
    pub(crate) fn fail(&self) {
        self.failed.store(1, Ordering::Release);
    }

    pub(crate) fn has_failed(&self) -> bool {
        self.failed.load(Ordering::Acquire) != 0
    }

    /// Receiver: it will not touch the slot again.
    pub(crate) fn release(&self) {
        self.released.store(1, Ordering::Release);
    }

    /// Sender: recycle the slot if the receiver released it.
    pub(crate) fn try_recycle(&self) -> bool {
        if self.released.load(Ordering::Acquire) == 0 {
            return false;
        }
        self.state.store(FREE, Ordering::Relaxed);
        true
    }
}
