//! A merged trace read as it is: its events are already on global time
//! and in causal order.

use std::collections::BTreeMap;

use grappe_trace::resume::Resume;
use grappe_trace::{Ending, Event, TraceFile};

use super::blocks::Blocks;
use super::summary::FlowSummary;
use crate::error::Result;

/// The merged file, a block at a time.
pub(super) struct MergedFile {
    blocks: Blocks,
    /// Events per rank.
    flows: BTreeMap<u32, FlowSummary>,
    /// How the file ended, once read to its end.
    ending: Option<Ending>,
}

impl MergedFile {
    pub(super) fn open(file: TraceFile) -> Result<MergedFile> {
        let mut merged = MergedFile { blocks: Blocks::new(file), flows: BTreeMap::new(), ending: None };
        merged.fill()?;
        Ok(merged)
    }

    pub(super) fn head(&self) -> Option<&Event> {
        self.blocks.head()
    }

    /// Drops the head and reads on (the next block out of line).
    #[inline]
    pub(super) fn advance(&mut self) -> Result<()> {
        if self.blocks.pass_head() { Ok(()) } else { self.fill() }
    }

    #[inline(never)]
    fn fill(&mut self) -> Result<()> {
        let flows = &mut self.flows;
        let ending = self.blocks.fill(|events| {
            // Counted by runs of one rank (a map lookup per run, not per event).
            for run in events.chunk_by(|a, b| a.rank == b.rank) {
                let rank = run[0].rank;
                flows.entry(rank).or_insert_with(|| FlowSummary::new(rank)).events += run.len() as u64;
            }
        })?;
        self.ending = ending.or(self.ending.take());
        Ok(())
    }

    /// Goes on from the last resume point settled before `date`, if the
    /// file has one after the head: the events in between are not read.
    pub(super) fn resume_before(&mut self, date: u64) -> Result<Option<Resume>> {
        let point = self.blocks.resume_before(date)?;
        if point.is_some() {
            self.fill()?;
        }
        Ok(point)
    }

    /// How the file ended, once read to its end.
    pub(super) fn ending(&self) -> Option<&Ending> {
        self.ending.as_ref()
    }

    pub(super) fn summaries(&self) -> Vec<FlowSummary> {
        self.flows.values().cloned().collect()
    }
}
