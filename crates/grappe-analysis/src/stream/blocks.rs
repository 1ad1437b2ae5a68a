//! A trace file read a batch of events at a time, its head borrowed in
//! place: what the k-way merge and the merged-file reader both walk.

use grappe_trace::resume::Resume;
use grappe_trace::{Ending, Event, TraceFile};

use crate::error::Result;

/// Events decoded at once. A recorder's block holds up to 1024 events
/// (older traces: 4096, or 65 536, 4.7 MB decoded, held whole for each
/// rank of a merge: a job of 1024 ranks took gigabytes). Batches keep each rank to
/// its block's encoded bytes and this many events (18 KB). Larger batches
/// decode no faster: 128, 256, 512 and 1024 cost the same instructions
/// per event, within 0.3%.
const BATCH: usize = 256;

pub(super) struct Blocks {
    /// `None` once read to the end.
    file: Option<TraceFile>,
    /// The current batch, kept from one batch to the next (the events
    /// passed are dropped all at once when the next batch is read).
    block: Vec<Event>,
    /// Index of the head in `block`; the block has more while the file
    /// has more (after [`Blocks::fill`]).
    head: usize,
}

impl Blocks {
    pub(super) fn new(file: TraceFile) -> Blocks {
        Blocks { file: Some(file), block: Vec::new(), head: 0 }
    }

    #[inline]
    pub(super) fn head(&self) -> Option<&Event> {
        self.block.get(self.head)
    }

    #[inline]
    pub(super) fn head_mut(&mut self) -> Option<&mut Event> {
        self.block.get_mut(self.head)
    }

    /// Passes the head; false when the batch has no more, and
    /// [`Blocks::fill`] must read the next one (callers keep that out of
    /// line: it happens once a batch, the pass once an event).
    #[inline]
    pub(super) fn pass_head(&mut self) -> bool {
        self.head += 1;
        self.head < self.block.len()
    }

    /// Moves the file to its last resume point settled before `date`
    /// ([`TraceFile::resume_before`]), dropping the block in hand; the
    /// caller fills again.
    pub(super) fn resume_before(&mut self, date: u64) -> Result<Option<Resume>> {
        let Some(file) = &mut self.file else { return Ok(None) };
        let point = file.resume_before(date)?;
        if point.is_some() {
            self.block.clear();
            self.head = 0;
        }
        Ok(point)
    }

    /// Reads the next batch of events, or to the end of the file, handing
    /// the batch to `each` first (to change its events in place). Returns
    /// how the file ended when it just did.
    #[inline]
    pub(super) fn fill(&mut self, each: impl FnMut(&mut [Event])) -> Result<Option<Ending>> {
        if self.head < self.block.len() { Ok(None) } else { self.read_block(each) }
    }

    fn read_block(&mut self, mut each: impl FnMut(&mut [Event])) -> Result<Option<Ending>> {
        self.head = 0;
        loop {
            let Some(file) = &mut self.file else {
                self.block.clear();
                return Ok(None);
            };
            if !file.next_batch_into(&mut self.block, BATCH)? {
                let ending = file.ending().cloned();
                self.file = None;
                return Ok(ending);
            }
            if !self.block.is_empty() {
                each(&mut self.block);
                return Ok(None);
            }
        }
    }
}
