//! Where everything lives inside a host segment.
//!
//! ```text
//! [header page]                      magic, version, the parameters below,
//!                                    and the arena allocation bitmap
//! [rank controls]   n × 64 B         pid, state, doorbell index, probe address
//! [doorbells]       n × 64 B         futex words
//! [ring heads]      n × n × 64 B     consumer-published head of ring (src → dst)
//! [rings]           n × n × ring     mailbox data of ring (src → dst)
//! [rendezvous]      n × slots × 128  per-sender rendezvous slots
//! [arenas]          k × arena        per-communicator collective scratch
//! ```
//!
//! Rings are grouped by receiver, so the rings a rank polls are contiguous.

use std::sync::atomic::{AtomicU32, AtomicU64};

use crate::{CACHE_LINE, ring};

/// Bytes of one rendezvous slot; its contents are defined by the protocol.
pub const RDV_SLOT_BYTES: usize = 128;

const MAGIC: [u8; 8] = *b"GRAPPE01";
const VERSION: u32 = 2;
const HEADER_BYTES: usize = 4096;
/// Refuse layouts beyond this: a typo in a setting, not a real job.
const MAX_SEGMENT: usize = 64 << 30;

/// The settings a host segment is built from. All ranks of a host must use
/// the same values; they are stored in the header and checked on open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayoutParams {
    /// Ranks on this host (threads and processes together).
    pub local_ranks: usize,
    /// Bytes of each mailbox ring (a power of two).
    pub ring_bytes: usize,
    /// Rendezvous slots per sender: concurrent large sends per rank.
    pub rdv_slots: usize,
    /// Bytes of each collective arena.
    pub arena_bytes: usize,
    /// Number of collective arenas (communicators with a shared fast path).
    pub arenas: usize,
}

/// Liveness and identity of one rank, written by its owner.
#[repr(C, align(64))]
#[derive(Debug, Default)]
pub struct RankControl {
    /// Process id of the process hosting the rank.
    pub pid: AtomicU32,
    /// One of the `STATE_*` constants.
    pub state: AtomicU32,
    /// Index of the doorbell that wakes this rank's worker.
    pub bell: AtomicU32,
    /// The rank's number in the world communicator.
    pub world_rank: AtomicU32,
    /// Address, in the owner's address space, of a word holding
    /// [`PROBE_VALUE`]: peers read it once to check that cross-memory
    /// copies to this process are allowed.
    pub probe_addr: AtomicU64,
    /// While the rank copies to or from another rank's memory (a
    /// rendezvous), that rank's host-local index plus one; 0 otherwise. A
    /// rank that gives up its requests waits until no peer names it here,
    /// after which no peer touches its buffers again.
    pub accessing: AtomicU32,
}

/// The rank has not finished joining.
pub const STATE_JOINING: u32 = 0;
/// The rank is running.
pub const STATE_RUNNING: u32 = 1;
/// The rank called finalize.
pub const STATE_FINALIZED: u32 = 2;
/// The rank failed (panicked, returned an error, aborted) and said so,
/// before any other failure of the job was visible to it.
pub const STATE_FAILED: u32 = 3;
/// The rank ended because another rank had failed (or the job was being
/// stopped): a consequence, not a cause.
pub const STATE_STOPPED: u32 = 4;
/// The value behind every [`RankControl::probe_addr`].
pub const PROBE_VALUE: u64 = 0x6772_6170_7065_2121;

#[repr(C)]
struct Header {
    magic: [u8; 8],
    version: u32,
    local_ranks: u32,
    ring_bytes: u64,
    rdv_slots: u64,
    arena_bytes: u64,
    arenas: u64,
    total_len: u64,
}

/// Offset of the arena allocation bitmap (its own cache line in the
/// header page): bit `i` set means arena `i` belongs to a communicator.
pub(crate) const ARENA_BITMAP: usize = 2 * CACHE_LINE;

/// Offset of the count of processes that refused asymmetric fences (its
/// own cache line in the header page).
pub(crate) const FENCE_VOTES: usize = 3 * CACHE_LINE;

/// Most arenas a segment can have (one bitmap word).
pub const MAX_ARENAS: usize = 64;

/// Byte offsets of every area, computed from [`LayoutParams`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostLayout {
    /// The parameters this layout was computed from.
    pub params: LayoutParams,
    controls: usize,
    bells: usize,
    heads: usize,
    rings: usize,
    rdv: usize,
    arenas: usize,
    total: usize,
}

impl HostLayout {
    /// Computes the layout, refusing parameters that cannot work.
    pub fn new(params: LayoutParams) -> Result<HostLayout, LayoutError> {
        let n = params.local_ranks;
        if n == 0 {
            return Err(LayoutError::NoRanks);
        }
        if !ring::valid_capacity(params.ring_bytes) {
            return Err(LayoutError::RingSize { ring_bytes: params.ring_bytes });
        }
        // Bounds that keep every offset below far from overflowing (and
        // catch a corrupt header early, with the number that is wrong).
        for (what, value, max) in [
            ("local ranks", n, 1 << 16),
            ("ring size", params.ring_bytes, 1 << 30),
            ("rendezvous slots", params.rdv_slots, 1 << 16),
            ("arena size", params.arena_bytes, 1 << 30),
        ] {
            if value > max {
                return Err(LayoutError::OverLimit { what, value, max });
            }
        }
        if params.arenas > MAX_ARENAS {
            return Err(LayoutError::OverLimit { what: "arena count", value: params.arenas, max: MAX_ARENAS });
        }
        if params.arena_bytes % CACHE_LINE != 0 {
            return Err(LayoutError::ArenaSize { arena_bytes: params.arena_bytes, multiple_of: CACHE_LINE });
        }
        let page = |x: usize| x.next_multiple_of(4096);
        let controls = HEADER_BYTES;
        let bells = page(controls + n * CACHE_LINE);
        let heads = page(bells + n * CACHE_LINE);
        let rings = page(heads + n * n * CACHE_LINE);
        // At most 2^62 + 2^39 + 2^36: no overflow on 64-bit targets.
        let rdv = page(rings + n * n * params.ring_bytes);
        let arenas = page(rdv + n * params.rdv_slots * RDV_SLOT_BYTES);
        let total = page(arenas + params.arenas * params.arena_bytes);
        match total <= MAX_SEGMENT {
            true => Ok(HostLayout { params, controls, bells, heads, rings, rdv, arenas, total }),
            false => Err(LayoutError::TooLarge {
                ranks: n,
                ring_bytes: params.ring_bytes,
                bytes: total,
                max_bytes: MAX_SEGMENT,
            }),
        }
    }

    /// Total bytes of the segment.
    pub fn total_len(&self) -> usize {
        self.total
    }

    /// Writes the header of a fresh (zeroed) segment.
    ///
    /// # Safety
    /// `base` must point to at least the header page (4096 bytes),
    /// writable, that no other rank reads yet. It need not be aligned.
    pub unsafe fn write_header(&self, base: *mut u8) {
        let p = self.params;
        let header = Header {
            magic: MAGIC,
            version: VERSION,
            local_ranks: p.local_ranks as u32,
            ring_bytes: p.ring_bytes as u64,
            rdv_slots: p.rdv_slots as u64,
            arena_bytes: p.arena_bytes as u64,
            arenas: p.arenas as u64,
            total_len: self.total as u64,
        };
        // SAFETY: the caller guarantees the space and exclusivity; the
        // write is unaligned because the contract promises no alignment.
        unsafe { (base as *mut Header).write_unaligned(header) };
    }

    /// Reads the layout back from a segment written by [`Self::write_header`].
    ///
    /// # Safety
    /// `base` must point to at least `len` readable bytes. It need not be
    /// aligned.
    pub unsafe fn read_header(base: *const u8, len: usize) -> Result<HostLayout, LayoutError> {
        if len < HEADER_BYTES {
            return Err(LayoutError::ShorterThanHeader { len, header_bytes: HEADER_BYTES });
        }
        // SAFETY: at least HEADER_BYTES are readable; the read is unaligned
        // because the contract promises no alignment.
        let h = unsafe { (base as *const Header).read_unaligned() };
        if h.magic != MAGIC {
            return Err(LayoutError::Magic { found: h.magic, expected: MAGIC });
        }
        if h.version != VERSION {
            return Err(LayoutError::Version { found: h.version, expected: VERSION });
        }
        let params = LayoutParams {
            local_ranks: h.local_ranks as usize,
            ring_bytes: h.ring_bytes as usize,
            rdv_slots: h.rdv_slots as usize,
            arena_bytes: h.arena_bytes as usize,
            arenas: h.arenas as usize,
        };
        let layout = HostLayout::new(params)?;
        if layout.total != h.total_len as usize || layout.total > len {
            return Err(LayoutError::Length { header_bytes: h.total_len, layout_bytes: layout.total, file_bytes: len });
        }
        Ok(layout)
    }

    pub(crate) fn control(&self, local: usize) -> usize {
        self.controls + local * CACHE_LINE
    }

    pub(crate) fn bell(&self, index: usize) -> usize {
        self.bells + index * CACHE_LINE
    }

    /// Ring (src → dst): (data offset, head offset).
    pub(crate) fn ring(&self, src: usize, dst: usize) -> (usize, usize) {
        let index = dst * self.params.local_ranks + src;
        (self.rings + index * self.params.ring_bytes, self.heads + index * CACHE_LINE)
    }

    pub(crate) fn rdv_slot(&self, owner: usize, slot: usize) -> usize {
        self.rdv + (owner * self.params.rdv_slots + slot) * RDV_SLOT_BYTES
    }

    pub(crate) fn arena(&self, index: usize) -> usize {
        self.arenas + index * self.params.arena_bytes
    }
}

/// Why a host segment cannot be laid out: parameters no segment can
/// have, or a header that does not describe the segment it heads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LayoutError {
    /// No rank at all.
    #[error("a host needs at least one rank")]
    NoRanks,
    /// A ring size that is not a power of two of at least 256 bytes.
    #[error("ring size {ring_bytes} must be a power of two of at least 256 bytes")]
    RingSize {
        /// The size asked for.
        ring_bytes: usize,
    },
    /// A parameter over its limit.
    #[error("{what} {value} exceeds the limit of {max}")]
    OverLimit {
        /// The parameter: local ranks, ring size, rendezvous slots, arena
        /// size or arena count.
        what: &'static str,
        /// Its value.
        value: usize,
        /// Its largest value.
        max: usize,
    },
    /// An arena size that is not a whole number of cache lines.
    #[error("arena size {arena_bytes} must be a multiple of {multiple_of}")]
    ArenaSize {
        /// The size asked for.
        arena_bytes: usize,
        /// The cache line.
        multiple_of: usize,
    },
    /// A segment larger than any job needs: a typo in a setting.
    #[error(
        "{ranks} ranks with {ring_bytes}-byte rings need {bytes} bytes of shared memory, more than {} GiB",
        max_bytes >> 30
    )]
    TooLarge {
        /// Ranks on the host.
        ranks: usize,
        /// Bytes of each ring.
        ring_bytes: usize,
        /// Bytes the segment would take.
        bytes: usize,
        /// The largest segment.
        max_bytes: usize,
    },
    /// A segment too short to hold its header.
    #[error("segment is {len} bytes, smaller than its {header_bytes}-byte header")]
    ShorterThanHeader {
        /// The segment's length.
        len: usize,
        /// The header's.
        header_bytes: usize,
    },
    /// A header that is not grappe's.
    #[error("bad magic {found:?}, expected {expected:?}")]
    Magic {
        /// The first bytes of the segment.
        found: [u8; 8],
        /// grappe's magic.
        expected: [u8; 8],
    },
    /// A header of another layout version.
    #[error("layout version {found}, this grappe reads {expected}")]
    Version {
        /// The header's version.
        found: u32,
        /// The version this grappe lays out.
        expected: u32,
    },
    /// A header whose length does not match its parameters or its file.
    #[error("header says {header_bytes} bytes, layout needs {layout_bytes}, file has {file_bytes}")]
    Length {
        /// The length the header states.
        header_bytes: u64,
        /// The length its parameters lay out.
        layout_bytes: usize,
        /// The length of the segment.
        file_bytes: usize,
    },
}

const _: () = assert!(std::mem::size_of::<RankControl>() == CACHE_LINE);
const _: () = assert!(std::mem::size_of::<Header>() <= ARENA_BITMAP);

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// A header page of arbitrary bytes gives an error or a layout that
        /// fits the claimed size; never a panic or an overflow.
        #[test]
        fn arbitrary_headers_are_refused_cleanly(words in proptest::collection::vec(any::<u64>(), 8), len in 0usize..1 << 40) {
            let mut page = vec![0u8; HEADER_BYTES];
            page[..8].copy_from_slice(&MAGIC);
            for (i, w) in words.iter().enumerate().skip(1) {
                page[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
            }
            page[8..12].copy_from_slice(&VERSION.to_le_bytes());
            // SAFETY: `page` holds a whole header page; `len` only bounds the layout.
            if let Ok(layout) = unsafe { HostLayout::read_header(page.as_ptr(), len) } {
                prop_assert!(layout.total_len() <= len);
            }
        }
    }

    #[test]
    fn parameters_no_segment_can_have_are_refused_with_their_numbers() {
        let ok = LayoutParams { local_ranks: 2, ring_bytes: 4096, rdv_slots: 4, arena_bytes: 4096, arenas: 2 };
        for (params, error) in [
            (LayoutParams { local_ranks: 0, ..ok }, LayoutError::NoRanks),
            (LayoutParams { ring_bytes: 1000, ..ok }, LayoutError::RingSize { ring_bytes: 1000 }),
            (
                LayoutParams { rdv_slots: 70_000, ..ok },
                LayoutError::OverLimit { what: "rendezvous slots", value: 70_000, max: 1 << 16 },
            ),
            (
                LayoutParams { arenas: 65, ..ok },
                LayoutError::OverLimit { what: "arena count", value: 65, max: MAX_ARENAS },
            ),
            (
                LayoutParams { arena_bytes: 100, ..ok },
                LayoutError::ArenaSize { arena_bytes: 100, multiple_of: CACHE_LINE },
            ),
        ] {
            assert_eq!(HostLayout::new(params), Err(error));
        }
        let huge = LayoutParams { local_ranks: 1 << 10, ring_bytes: 1 << 20, ..ok };
        let Err(LayoutError::TooLarge { ranks: 1024, ring_bytes: 1048576, bytes, max_bytes }) = HostLayout::new(huge)
        else {
            panic!("a 1 TiB segment")
        };
        assert!(bytes > max_bytes && max_bytes == MAX_SEGMENT);
    }

    #[test]
    fn a_foreign_header_is_refused_with_what_it_holds() {
        let mut page = vec![0u8; HEADER_BYTES];
        page[..8].copy_from_slice(b"NOTOURS!");
        // SAFETY: `page` holds a whole header page.
        let error = unsafe { HostLayout::read_header(page.as_ptr(), HEADER_BYTES) }.unwrap_err();
        assert_eq!(error, LayoutError::Magic { found: *b"NOTOURS!", expected: MAGIC });
        page[..8].copy_from_slice(&MAGIC);
        page[8..12].copy_from_slice(&(VERSION + 1).to_le_bytes());
        // SAFETY: as above.
        let error = unsafe { HostLayout::read_header(page.as_ptr(), HEADER_BYTES) }.unwrap_err();
        assert_eq!(error, LayoutError::Version { found: VERSION + 1, expected: VERSION });
        // SAFETY: as above; the length is below the header's.
        let error = unsafe { HostLayout::read_header(page.as_ptr(), 100) }.unwrap_err();
        assert_eq!(error, LayoutError::ShorterThanHeader { len: 100, header_bytes: HEADER_BYTES });
    }

    #[test]
    fn a_layout_round_trips_through_its_header() {
        let params = LayoutParams { local_ranks: 5, ring_bytes: 8192, rdv_slots: 4, arena_bytes: 4096, arenas: 3 };
        let layout = HostLayout::new(params).unwrap();
        let mut page = vec![0u8; HEADER_BYTES];
        // SAFETY: `page` is a header page of ours.
        unsafe { layout.write_header(page.as_mut_ptr()) };
        // SAFETY: `page` holds the header bytes; the length only bounds the layout.
        let back = unsafe { HostLayout::read_header(page.as_ptr(), layout.total_len()) }.unwrap();
        assert_eq!(back, layout);
        // SAFETY: as above.
        let short = unsafe { HostLayout::read_header(page.as_ptr(), layout.total_len() - 1) }.unwrap_err();
        assert!(short.to_string().contains("file has"), "{short}");
        let expected = (layout.total_len() as u64, layout.total_len(), layout.total_len() - 1);
        assert_eq!(
            short,
            LayoutError::Length { header_bytes: expected.0, layout_bytes: expected.1, file_bytes: expected.2 }
        );
    }
}
