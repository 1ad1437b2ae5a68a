//! A merged trace read as it is: its events are already on global time
//! and in causal order.

use std::collections::BTreeMap;

use grappe_trace::{Event, TraceFile};

use super::FlowSummary;
use crate::error::Result;

/// The merged file, a block at a time.
pub(super) struct MergedFile {
    file: Option<TraceFile>,
    block: std::vec::IntoIter<Event>,
    /// Events per rank.
    flows: BTreeMap<u32, FlowSummary>,
}

impl MergedFile {
    pub(super) fn open(file: TraceFile) -> Result<MergedFile> {
        let mut merged = MergedFile { file: Some(file), block: Vec::new().into_iter(), flows: BTreeMap::new() };
        merged.fill()?;
        Ok(merged)
    }

    pub(super) fn head(&self) -> Option<&Event> {
        self.block.as_slice().first()
    }

    /// Drops the head and reads on.
    pub(super) fn advance(&mut self) -> Result<()> {
        self.block.next();
        self.fill()
    }

    fn fill(&mut self) -> Result<()> {
        while self.block.len() == 0 {
            let Some(file) = &mut self.file else { return Ok(()) };
            match file.next_events()? {
                Some(events) => {
                    for e in &events {
                        self.flows.entry(e.rank).or_insert_with(|| FlowSummary::new(e.rank)).events += 1;
                    }
                    self.block = events.into_iter();
                }
                None => self.file = None,
            }
        }
        Ok(())
    }

    pub(super) fn summaries(&self) -> Vec<FlowSummary> {
        self.flows.values().cloned().collect()
    }
}
