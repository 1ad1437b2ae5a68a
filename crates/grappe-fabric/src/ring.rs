//! Mailboxes: single-producer single-consumer record rings in shared memory.
//!
//! Each ordered pair of ranks on a host owns one ring, written only by the
//! sender and read only by the receiver. A record is a 32-byte header and a
//! payload, padded to whole cache lines, so an 8-byte message is one line and
//! costs the receiver exactly one cache miss.
//!
//! Publication: the producer writes the payload and header fields, then
//! stores the record's *stamp* (its absolute position in the stream, plus
//! one) with release ordering. The consumer polls the stamp at its head with
//! acquire ordering. Stamps only grow, so a stale record from an earlier lap
//! never looks current. To be sure that the word polled next was never part
//! of a payload (whose bytes could mimic a stamp), every record write also
//! zeroes the stamp word of the line that follows it; the producer always
//! keeps that line free.
//!
//! Space: the consumer publishes its head after each record; the producer
//! caches it and reloads only when the ring looks full, so in steady state
//! the producer never touches the consumer's line. A producer that finds
//! the ring full also raises a *waiting* flag next to the head; the
//! consumer, when it frees space and sees the flag, tells its caller to
//! wake the producer (ring its doorbell), so a sender blocked on a full
//! mailbox never sleeps through the space it waits for.
//!
//! Records never wrap: when a record does not fit before the end of the
//! ring, a padding record fills the end and the record starts at offset 0.

use std::ptr;
use std::sync::atomic::Ordering;

use crate::primitive::{AtomicU32, AtomicU64, fence};

use crate::CACHE_LINE;
use crate::doorbell::publish_fence;

/// The consumer's line: its published head and the producer's waiting flag.
/// The caller provides a zeroed, 64-byte aligned cache line (or a
/// `HeadLine::default()`, which is the same).
#[repr(C, align(64))]
#[derive(Debug, Default)]
pub struct HeadLine {
    head: AtomicU64,
    producer_waiting: AtomicU32,
}

/// Bytes of a record header; the payload starts right after it.
pub const HEADER_BYTES: usize = 32;

/// Protocol-defined words carried by every record (kind, tag, context...).
/// The fabric never interprets them.
pub type Meta = [u32; 4];

const PAD_LEN: u32 = u32::MAX;

#[repr(C)]
struct RawHeader {
    stamp: AtomicU64,
    /// Payload bytes, or `PAD_LEN` for a padding record.
    len: u32,
    /// Cache lines of the whole record, header included.
    lines: u32,
    meta: Meta,
}

const _: () = assert!(std::mem::size_of::<RawHeader>() == HEADER_BYTES);

/// Lines needed for a record of `len` payload bytes.
#[inline]
fn lines_for(len: usize) -> usize {
    (HEADER_BYTES + len).div_ceil(CACHE_LINE)
}

/// Largest payload a ring of `capacity` bytes accepts.
///
/// Half the ring (minus the header and the spare line) so that a record
/// always fits after at most one padding record.
pub fn max_payload(capacity: usize) -> usize {
    capacity / 2 - HEADER_BYTES - CACHE_LINE
}

/// Checks that `capacity` can be a ring size: a power of two of at least
/// four cache lines.
pub fn valid_capacity(capacity: usize) -> bool {
    capacity.is_power_of_two() && capacity >= 4 * CACHE_LINE
}

/// The sending side of a mailbox. Lives in the sender's private memory.
#[derive(Debug)]
pub struct Producer {
    data: *mut u8,
    mask: u64,
    line: *const HeadLine,
    tail: u64,
    cached_head: u64,
}

/// The receiving side of a mailbox. Lives in the receiver's private memory.
#[derive(Debug)]
pub struct Consumer {
    data: *const u8,
    mask: u64,
    line: *const HeadLine,
    head: u64,
}

// SAFETY: a producer or consumer is a handle to shared memory that stays
// mapped for the job; moving the handle to another thread is fine (it is
// still the only producer / consumer of its ring).
unsafe impl Send for Producer {}
// SAFETY: see above.
unsafe impl Send for Consumer {}

impl Producer {
    /// # Safety
    /// `data` must point to `capacity` bytes (a [`valid_capacity`]) and
    /// `line` to a [`HeadLine`]-sized cache line, both zero-initialised,
    /// 64-byte aligned, and valid for the life of the producer. This
    /// producer must be the only writer of the ring, and at most one
    /// [`Consumer`] may be built over the same memory.
    pub unsafe fn new(data: *mut u8, capacity: usize, line: *const HeadLine) -> Producer {
        debug_assert!(valid_capacity(capacity));
        Producer { data, mask: capacity as u64 - 1, line, tail: 0, cached_head: 0 }
    }

    /// Ring capacity in bytes.
    pub fn capacity(&self) -> usize {
        (self.mask + 1) as usize
    }

    /// Appends a record, or returns false if the ring is full right now.
    ///
    /// # Panics
    /// If `payload` is longer than [`max_payload`]: protocols must fragment
    /// or use rendezvous above that size, so this is a bug in the caller.
    // Always inlined, as is `try_push_with` below: an eager send is mostly
    // this push, and with more than one caller the compiler left it out of
    // line (about 30 instructions more per send, counted by callgrind).
    #[inline(always)]
    pub fn try_push(&mut self, meta: Meta, payload: &[u8]) -> bool {
        // SAFETY: `fill` gets a slice of exactly `payload.len()` bytes.
        self.try_push_with(meta, payload.len(), |dst| unsafe {
            crate::copy::copy_bytes(payload.as_ptr(), dst.as_mut_ptr(), payload.len())
        })
    }

    /// Appends a record whose payload `fill` writes in place (for gathers
    /// and serialisation straight into the ring).
    #[inline(always)]
    pub fn try_push_with(&mut self, meta: Meta, len: usize, fill: impl FnOnce(&mut [u8])) -> bool {
        assert!(len <= max_payload(self.capacity()), "record of {len} bytes exceeds ring limit");
        let bytes = (lines_for(len) * CACHE_LINE) as u64;
        let offset = self.tail & self.mask;
        let room_to_end = self.capacity() as u64 - offset;
        let pad = if bytes > room_to_end { room_to_end } else { 0 };
        if !self.has_room(pad + bytes) {
            return false;
        }
        if pad > 0 {
            // SAFETY: `has_room` proved [tail, tail + pad + bytes + line) free.
            unsafe { self.write_record(pad, PAD_LEN, [0; 4], |_| {}) };
        }
        // SAFETY: as above.
        unsafe { self.write_record(bytes, len as u32, meta, fill) };
        true
    }

    /// True if `bytes` more, plus the spare line, fit before the consumer.
    #[inline]
    fn has_room(&mut self, bytes: u64) -> bool {
        let end = self.tail + bytes + CACHE_LINE as u64;
        if end <= self.cached_head + self.capacity() as u64 {
            return true;
        }
        // SAFETY: `line` is valid by the constructor's contract.
        let line = unsafe { &*self.line };
        self.cached_head = line.head.load(Ordering::Acquire);
        if end <= self.cached_head + self.capacity() as u64 {
            return true;
        }
        // Full: ask the consumer to wake us when it frees space, then look
        // once more (it may have freed space before seeing the flag).
        // A swap, not a store: the consumer's swap that took the flag down
        // last time must come before this raise in the flag's order, which
        // loom models only between read-modify-writes (see `Doorbell`).
        let _ = line.producer_waiting.swap(1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        self.cached_head = line.head.load(Ordering::Acquire);
        end <= self.cached_head + self.capacity() as u64
    }

    /// # Safety
    /// `[tail, tail + bytes + one line)` must be free (consumed).
    #[inline]
    unsafe fn write_record(&mut self, bytes: u64, len: u32, meta: Meta, fill: impl FnOnce(&mut [u8])) {
        let offset = (self.tail & self.mask) as usize;
        // SAFETY: `offset + bytes <= capacity` (records never wrap) and the
        // range is free, so nobody else reads or writes it until the stamp
        // below is published.
        unsafe {
            let record = self.data.add(offset);
            if len != PAD_LEN {
                let payload = std::slice::from_raw_parts_mut(record.add(HEADER_BYTES), len as usize);
                fill(payload);
            }
            let header = record as *mut RawHeader;
            ptr::addr_of_mut!((*header).len).write(len);
            ptr::addr_of_mut!((*header).lines).write((bytes / CACHE_LINE as u64) as u32);
            ptr::addr_of_mut!((*header).meta).write(meta);
            let next = self.data.add(((self.tail + bytes) & self.mask) as usize) as *const AtomicU64;
            (*next).store(0, Ordering::Relaxed);
            (*header).stamp.store(self.tail + 1, Ordering::Release);
        }
        self.tail += bytes;
    }
}

/// A record at the head of a mailbox, borrowed until consumed.
#[derive(Debug)]
pub struct Record<'a> {
    ring: &'a mut Consumer,
    meta: Meta,
    payload: *const u8,
    len: usize,
    bytes: u64,
}

impl Record<'_> {
    /// The protocol words of the record.
    #[inline]
    pub fn meta(&self) -> Meta {
        self.meta
    }

    /// Payload length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for an empty payload.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The payload, valid until the record is consumed.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        // SAFETY: the producer published these bytes (acquire on the stamp)
        // and will not touch them before the consumer's head moves past.
        unsafe { std::slice::from_raw_parts(self.payload, self.len) }
    }

    /// Releases the record's space to the producer. True if the producer
    /// was waiting for space: the caller must then wake it.
    #[inline]
    #[must_use = "a producer waiting for space must be woken"]
    pub fn consume(self) -> bool {
        self.ring.advance(self.bytes);
        self.ring.producer_was_waiting()
    }
}

impl Consumer {
    /// # Safety
    /// Same contract as [`Producer::new`], for the single consumer, over
    /// the same memory and the same head line.
    pub unsafe fn new(data: *const u8, capacity: usize, line: *const HeadLine) -> Consumer {
        debug_assert!(valid_capacity(capacity));
        Consumer { data, mask: capacity as u64 - 1, line, head: 0 }
    }

    /// The record at the head, if one is published. Padding is skipped.
    #[inline]
    pub fn peek(&mut self) -> Option<Record<'_>> {
        loop {
            let offset = (self.head & self.mask) as usize;
            // SAFETY: offset < capacity and 64-byte aligned; the stamp is
            // only accessed atomically.
            let header = unsafe { self.data.add(offset) } as *const RawHeader;
            // SAFETY: `header` points inside the ring (above); the stamp is only accessed atomically.
            let stamp = unsafe { &(*header).stamp }.load(Ordering::Acquire);
            if stamp != self.head + 1 {
                return None;
            }
            // SAFETY: the acquire above makes the producer's header writes visible.
            let (len, lines, meta) = unsafe { ((*header).len, (*header).lines, (*header).meta) };
            let bytes = lines as u64 * CACHE_LINE as u64;
            if len == PAD_LEN {
                self.advance(bytes);
                continue;
            }
            // SAFETY: the payload follows the header inside the record.
            let payload = unsafe { (header as *const u8).add(HEADER_BYTES) };
            return Some(Record { ring: self, meta, payload, len: len as usize, bytes });
        }
    }

    /// True if a record (or padding) is published at the head.
    #[inline]
    pub fn has_record(&self) -> bool {
        let offset = (self.head & self.mask) as usize;
        // SAFETY: as in `peek`.
        let header = unsafe { self.data.add(offset) } as *const RawHeader;
        // SAFETY: the stamp word at the head is only accessed atomically.
        unsafe { &(*header).stamp }.load(Ordering::Acquire) == self.head + 1
    }

    #[inline]
    fn advance(&mut self, bytes: u64) {
        self.head += bytes;
        // SAFETY: valid by the constructor's contract.
        unsafe { &*self.line }.head.store(self.head, Ordering::Release);
    }

    /// Takes down the producer's waiting flag, if raised.
    #[inline]
    fn producer_was_waiting(&self) -> bool {
        // SAFETY: valid by the constructor's contract.
        let line = unsafe { &*self.line };
        publish_fence();
        line.producer_waiting.load(Ordering::Relaxed) != 0 && line.producer_waiting.swap(0, Ordering::AcqRel) != 0
    }
}

// The tests map real memory, where loom's atomics cannot live: the loom
// build runs the loom models only.
#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(all(test, loom))]
mod loom_models;
