//! A trace file read a block of events at a time, its head borrowed in
//! place: what the k-way merge and the merged-file reader both walk.

use grappe_trace::{Ending, Event, TraceFile};

use crate::error::Result;

pub(super) struct Blocks {
    /// `None` once read to the end.
    file: Option<TraceFile>,
    /// Events of the current block not yet dropped; never empty while the
    /// file has more (after [`Blocks::fill`]).
    block: std::vec::IntoIter<Event>,
}

impl Blocks {
    pub(super) fn new(file: TraceFile) -> Blocks {
        Blocks { file: Some(file), block: Vec::new().into_iter() }
    }

    pub(super) fn head(&self) -> Option<&Event> {
        self.block.as_slice().first()
    }

    /// Drops the head (call [`Blocks::fill`] next).
    pub(super) fn drop_head(&mut self) {
        self.block.next();
    }

    /// Reads blocks until one has events or the file ends, handing each
    /// block to `each` first (to change its events in place). Returns how
    /// the file ended when it just did.
    pub(super) fn fill(&mut self, mut each: impl FnMut(&mut [Event])) -> Result<Option<Ending>> {
        while self.block.len() == 0 {
            let Some(file) = &mut self.file else { return Ok(None) };
            match file.next_events()? {
                Some(mut events) => {
                    each(&mut events);
                    self.block = events.into_iter();
                }
                None => {
                    let ending = file.ending().cloned();
                    self.file = None;
                    return Ok(ending);
                }
            }
        }
        Ok(None)
    }
}
