//! The re-simulated trace, written as a merged trace (one file, global
//! dates, in causal order): every tool reads it as it reads the input,
//! and correction and prediction chain on it. Its events carry α = 0: the
//! recording's cost is what the traversal took out, so correcting the
//! output again changes nothing.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::Path;

use grappe_analysis::merge::{MergeLayout, merged_footer, merged_header, reference_samples};
use grappe_analysis::{GlobalTime, TraceSet};
use grappe_trace::format::Encoded;
use grappe_trace::raw::raw_of_event;
use grappe_trace::{Event, FileDefinitions, Footer, TraceWriter};
use rustc_hash::FxHashMap;

use crate::engine::Dates;
use crate::error::{ResimError, Result};
use crate::program::{Link, Program};

/// Gives the events of `program` with their new `dates` to `emit`, in the
/// order a merged trace keeps: by date (a receive's completion at its end,
/// the moment the message was delivered), each rank in its own order,
/// every send before its receive. A heap holds each rank's next event; a
/// rank whose next event receives a message not given yet waits aside
/// until its send is.
pub fn in_causal_order(program: &Program, dates: &Dates, mut emit: impl FnMut(Event)) {
    let mut order = Order {
        program,
        dates,
        cursors: vec![0; program.flows.len()],
        sent: vec![false; program.messages.len()],
        parked: FxHashMap::default(),
        heap: BinaryHeap::new(),
    };
    for rank in 0..program.flows.len() as u32 {
        order.queue(rank);
    }
    while let Some(Reverse((_, rank))) = order.heap.pop() {
        let index = order.cursors[rank as usize];
        let step = &program.flows[rank as usize][index];
        let (start, end) = dates.of[rank as usize][index];
        let start = start.max(0) as u64;
        emit(Event { start, end: (end.max(0) as u64).max(start), alpha_ns: 0, ..step.event });
        order.cursors[rank as usize] += 1;
        order.queue(rank);
        if let Link::Send { msg } = step.link {
            order.sent[msg] = true;
            if let Some(waiting) = order.parked.remove(&msg) {
                order.queue(waiting);
            }
        }
    }
}

/// The state of [`in_causal_order`].
struct Order<'a> {
    program: &'a Program,
    dates: &'a Dates,
    cursors: Vec<usize>,
    sent: Vec<bool>,
    /// Ranks waiting for a message's send, by message.
    parked: FxHashMap<usize, u32>,
    /// Each rank's next event by date (ties: the lower rank).
    heap: BinaryHeap<Reverse<(i64, u32)>>,
}

impl Order<'_> {
    /// Queues `rank`'s next event, or parks the rank behind the send its
    /// receive needs.
    fn queue(&mut self, rank: u32) {
        let index = self.cursors[rank as usize];
        let Some(step) = self.program.flows[rank as usize].get(index) else { return };
        let (start, end) = self.dates.of[rank as usize][index];
        match step.link {
            Link::Recv { msg } if !self.sent[msg] => {
                self.parked.insert(msg, rank);
            }
            Link::Recv { .. } => self.heap.push(Reverse((end, rank))),
            _ => self.heap.push(Reverse((start, rank))),
        }
    }
}

/// Writes `program` with `dates` to `out`, as a merged trace of `set`.
pub fn write(set: &TraceSet, time: &GlobalTime, program: &Program, dates: &Dates, out: &Path) -> Result<u64> {
    let layout = MergeLayout::default();
    let header = merged_header(set, time, layout)?;
    let io = |source| ResimError::Write { path: out.to_owned(), source };
    let mut writer = TraceWriter::create(out, &header).map_err(io)?;
    let samples = reference_samples(set)?;
    if !samples.is_empty() {
        writer.write_samples(&samples).map_err(io)?;
    }
    let mut defs = FileDefinitions::default();
    let mut block: Vec<Encoded> = Vec::with_capacity(layout.block_events);
    let (mut written, mut failed) = (0u64, None);
    let mut flush = |block: &mut Vec<Encoded>, defs: &mut FileDefinitions| -> std::io::Result<()> {
        writer.write_definitions(&defs.take_pending())?;
        writer.write_events(block.drain(..))
    };
    in_causal_order(program, dates, |e| {
        if failed.is_some() {
            return;
        }
        block.push(Encoded { rank: e.rank, start: e.start, end: e.end, alpha_ns: 0, raw: raw_of_event(&e, &mut defs) });
        written += 1;
        if block.len() == layout.block_events {
            failed = flush(&mut block, &mut defs).err();
        }
    });
    if let Some(e) = failed {
        return Err(io(e));
    }
    if !block.is_empty() {
        flush(&mut block, &mut defs).map_err(io)?;
    }
    let footer = match &program.read_from {
        Some(summary) => merged_footer(summary, written),
        None => Footer { events: written, ..Footer::default() },
    };
    writer.write_footer(&footer).map_err(io)?;
    Ok(written)
}
