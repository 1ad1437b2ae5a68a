//! A host segment with its layout: typed access to every shared area.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::layout::{HostLayout, LayoutParams, RankControl};
use crate::ring::{Consumer, HeadLine, Producer};
use crate::{Doorbell, FabricError, Segment};

/// The memory all ranks of a host share, and where each piece of it is.
#[derive(Debug)]
pub struct HostMemory {
    segment: Segment,
    layout: HostLayout,
}

impl HostMemory {
    /// Shared memory for ranks that are threads of this process.
    pub fn anonymous(params: LayoutParams) -> Result<HostMemory, FabricError> {
        let layout = HostLayout::new(params)?;
        let segment = Segment::anonymous(layout.total_len())?;
        // SAFETY: fresh private mapping of `total_len` bytes.
        unsafe { layout.write_header(segment.base()) };
        Ok(HostMemory { segment, layout })
    }

    /// Creates the segment file that the other processes of the host open.
    pub fn create_file(path: &Path, params: LayoutParams) -> Result<HostMemory, FabricError> {
        let layout = HostLayout::new(params)?;
        let segment = Segment::create_file(path, layout.total_len())?;
        // SAFETY: fresh file of `total_len` bytes; peers open it only after
        // the creator publishes its name.
        unsafe { layout.write_header(segment.base()) };
        Ok(HostMemory { segment, layout })
    }

    /// Opens a segment file created by another process and checks it.
    pub fn open_file(path: &Path) -> Result<HostMemory, FabricError> {
        let segment = Segment::open_file(path)?;
        // SAFETY: the mapping has `segment.len()` readable bytes.
        let layout = unsafe { HostLayout::read_header(segment.base(), segment.len()) }
            .map_err(|reason| FabricError::BadSegment { path: path.to_owned(), reason })?;
        Ok(HostMemory { segment, layout })
    }

    /// The underlying segment (for unlinking its file).
    pub fn segment(&self) -> &Segment {
        &self.segment
    }

    /// The parameters the segment was built with.
    pub fn params(&self) -> LayoutParams {
        self.layout.params
    }

    fn at<T>(&self, offset: usize) -> *mut T {
        debug_assert!(offset + std::mem::size_of::<T>() <= self.segment.len());
        // SAFETY: layout offsets are inside the mapping (checked at creation).
        unsafe { self.segment.base().add(offset) as *mut T }
    }

    /// Identity and liveness of local rank `local`.
    pub fn control(&self, local: usize) -> &RankControl {
        assert!(local < self.layout.params.local_ranks, "local rank {local} out of range");
        // SAFETY: zero-initialised atomics, aligned, inside the mapping.
        unsafe { &*self.at::<RankControl>(self.layout.control(local)) }
    }

    /// Doorbell number `index` (one per local rank).
    pub fn doorbell(&self, index: usize) -> &Doorbell {
        assert!(index < self.layout.params.local_ranks, "doorbell {index} out of range");
        // SAFETY: as for `control`.
        unsafe { &*self.at::<Doorbell>(self.layout.bell(index)) }
    }

    /// The sending end of mailbox (src → dst).
    ///
    /// # Safety
    /// Exactly one producer may exist per (src, dst) pair in the whole job:
    /// only local rank `src` may call this, once.
    pub unsafe fn producer(&self, src: usize, dst: usize) -> Producer {
        let (data, head) = self.ring_offsets(src, dst);
        // SAFETY: the ring memory is zeroed, aligned and mapped for the life
        // of `self`, which the caller keeps alive with the producer.
        unsafe { Producer::new(self.at(data), self.layout.params.ring_bytes, self.at::<HeadLine>(head)) }
    }

    /// The receiving end of mailbox (src → dst).
    ///
    /// # Safety
    /// Exactly one consumer may exist per pair: only local rank `dst` may
    /// call this, once.
    pub unsafe fn consumer(&self, src: usize, dst: usize) -> Consumer {
        let (data, head) = self.ring_offsets(src, dst);
        // SAFETY: as for `producer`.
        unsafe { Consumer::new(self.at(data), self.layout.params.ring_bytes, self.at::<HeadLine>(head)) }
    }

    fn ring_offsets(&self, src: usize, dst: usize) -> (usize, usize) {
        let n = self.layout.params.local_ranks;
        assert!(src < n && dst < n, "ring ({src} -> {dst}) out of range for {n} ranks");
        self.layout.ring(src, dst)
    }

    /// Rendezvous slot `slot` of local rank `owner`:
    /// [`RDV_SLOT_BYTES`](crate::layout::RDV_SLOT_BYTES) zeroed bytes,
    /// 64-byte aligned.
    pub fn rdv_slot(&self, owner: usize, slot: usize) -> *mut u8 {
        let p = self.layout.params;
        assert!(owner < p.local_ranks && slot < p.rdv_slots, "rendezvous slot ({owner}, {slot}) out of range");
        self.at(self.layout.rdv_slot(owner, slot))
    }

    /// Claims a free collective arena for a new communicator; `None` when
    /// all are taken (the communicator then uses message-based collectives).
    /// Arena 0 is never handed out: it belongs to the world communicator.
    pub fn claim_arena(&self) -> Option<usize> {
        let bitmap = self.arena_bitmap();
        let arenas = self.layout.params.arenas;
        let mut current = bitmap.load(Ordering::Relaxed);
        loop {
            let free = (1..arenas).find(|&i| current & (1 << i) == 0)?;
            match bitmap.compare_exchange(current, current | 1 << free, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => return Some(free),
                Err(now) => current = now,
            }
        }
    }

    /// Records whether this process could register for asymmetric fences
    /// (see [`crate::doorbell`]). Call before the job's start-up barrier.
    pub fn vote_asymmetric(&self, registered: bool) {
        if !registered {
            self.asymmetric_refusals().fetch_add(1, Ordering::AcqRel);
        }
    }

    /// True if no process of the host refused asymmetric fences. Read
    /// after the start-up barrier.
    pub fn asymmetric_agreed(&self) -> bool {
        self.asymmetric_refusals().load(Ordering::Acquire) == 0
    }

    fn asymmetric_refusals(&self) -> &AtomicU64 {
        // SAFETY: a zero-initialised, aligned word of the header page.
        unsafe { &*self.at::<AtomicU64>(crate::layout::FENCE_VOTES) }
    }

    fn arena_bitmap(&self) -> &AtomicU64 {
        // SAFETY: a zero-initialised, aligned word of the header page.
        unsafe { &*self.at::<AtomicU64>(crate::layout::ARENA_BITMAP) }
    }

    /// Collective arena `index`: `arena_bytes` zeroed bytes, 64-byte aligned.
    pub fn arena(&self, index: usize) -> *mut u8 {
        assert!(index < self.layout.params.arenas, "arena {index} out of range");
        self.at(self.layout.arena(index))
    }
}

// Loom's atomics cannot live in mapped memory: no host tests in the loom build.
#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::CACHE_LINE;
    use crate::doorbell::Wake;
    use crate::layout::RDV_SLOT_BYTES;
    use std::time::Duration;

    /// Small settings, so that Miri (which runs these too) maps little.
    fn settings() -> [LayoutParams; 3] {
        [
            LayoutParams { local_ranks: 1, ring_bytes: 256, rdv_slots: 0, arena_bytes: 0, arenas: 0 },
            LayoutParams { local_ranks: 3, ring_bytes: 1024, rdv_slots: 2, arena_bytes: 192, arenas: 3 },
            LayoutParams { local_ranks: 2, ring_bytes: 4096, rdv_slots: 5, arena_bytes: 4096, arenas: 2 },
        ]
    }

    /// Every area of the layout as (what, offset, bytes).
    fn areas(layout: &HostLayout) -> Vec<(String, usize, usize)> {
        let p = layout.params;
        let n = p.local_ranks;
        let mut areas = vec![("header".to_owned(), 0, 4096)];
        for i in 0..n {
            areas.push((format!("control {i}"), layout.control(i), CACHE_LINE));
            areas.push((format!("doorbell {i}"), layout.bell(i), CACHE_LINE));
            for j in 0..n {
                let (data, head) = layout.ring(i, j);
                areas.push((format!("ring {i}->{j}"), data, p.ring_bytes));
                areas.push((format!("head {i}->{j}"), head, CACHE_LINE));
            }
            for s in 0..p.rdv_slots {
                areas.push((format!("rendezvous {i}.{s}"), layout.rdv_slot(i, s), RDV_SLOT_BYTES));
            }
        }
        for a in 0..p.arenas {
            areas.push((format!("arena {a}"), layout.arena(a), p.arena_bytes));
        }
        areas
    }

    #[test]
    fn every_area_is_aligned_inside_the_segment_and_apart_from_the_others() {
        for params in settings() {
            let layout = HostLayout::new(params).unwrap();
            let mut areas = areas(&layout);
            areas.sort_by_key(|&(_, offset, _)| offset);
            for (what, offset, bytes) in &areas {
                assert_eq!(offset % CACHE_LINE, 0, "{what} at {offset} is not line-aligned ({params:?})");
                assert!(offset + bytes <= layout.total_len(), "{what} ends past the segment ({params:?})");
            }
            for pair in areas.windows(2) {
                let ((a, a_at, a_len), (b, b_at, _)) = (&pair[0], &pair[1]);
                assert!(a_at + a_len <= *b_at, "{a} overlaps {b} ({params:?})");
            }
        }
    }

    #[test]
    fn every_area_of_a_mapped_segment_takes_its_accesses() {
        // Touches each area through the typed accessors: Miri checks that
        // every access is in bounds and aligned for its type.
        for params in settings() {
            let host = HostMemory::anonymous(params).unwrap();
            let n = params.local_ranks;
            for i in 0..n {
                host.control(i).pid.store(100 + i as u32, Ordering::Release);
                host.control(i).probe_addr.store(u64::MAX, Ordering::Release);
                let bell = host.doorbell(i);
                bell.prepare();
                bell.ring();
                assert_eq!(bell.sleep(Duration::from_secs(10)), Wake::Rung);
                for s in 0..params.rdv_slots {
                    // SAFETY: a slot of RDV_SLOT_BYTES bytes of our own mapping.
                    unsafe { host.rdv_slot(i, s).write_bytes(0xa5, RDV_SLOT_BYTES) };
                }
            }
            for a in 0..params.arenas {
                // SAFETY: an arena of `arena_bytes` bytes of our own mapping.
                unsafe { host.arena(a).write_bytes(0x5a, params.arena_bytes) };
            }
            for i in 0..n {
                assert_eq!(host.control(i).pid.load(Ordering::Acquire), 100 + i as u32, "control {i} was overwritten");
            }
            let claimed: Vec<usize> = std::iter::from_fn(|| host.claim_arena()).collect();
            assert_eq!(claimed, (1..params.arenas).collect::<Vec<_>>(), "arena 0 is the world's");
            host.vote_asymmetric(false);
            assert!(!host.asymmetric_agreed());
        }
    }

    #[test]
    fn every_mailbox_of_a_host_carries_only_its_own_records() {
        let params = settings()[1];
        let host = HostMemory::anonymous(params).unwrap();
        let n = params.local_ranks;
        let pairs = || (0..n).flat_map(|src| (0..n).map(move |dst| (src, dst)));
        // SAFETY: one producer and one consumer per pair, all dropped
        // before `host`.
        let mut producers: Vec<_> = pairs().map(|(src, dst)| unsafe { host.producer(src, dst) }).collect();
        // SAFETY: as above.
        let mut consumers: Vec<_> = pairs().map(|(src, dst)| unsafe { host.consumer(src, dst) }).collect();
        for ((src, dst), tx) in pairs().zip(&mut producers) {
            // Two lines per record, so a neighbour's ring or head line would be overrun.
            let payload = [(src * n + dst) as u8; 40];
            while tx.try_push([src as u32, dst as u32, 0, 0], &payload) {}
        }
        for ((src, dst), rx) in pairs().zip(&mut consumers) {
            let mut records = 0;
            while let Some(rec) = rx.peek() {
                assert_eq!(rec.meta(), [src as u32, dst as u32, 0, 0], "ring {src}->{dst}");
                assert_eq!(rec.payload(), &[(src * n + dst) as u8; 40], "ring {src}->{dst}");
                let _ = rec.consume();
                records += 1;
            }
            // 1024 bytes, 2 lines per record, one spare line: 7 records.
            assert_eq!(records, 7, "ring {src}->{dst}");
        }
    }
}
