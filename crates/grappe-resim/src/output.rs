//! The re-simulated trace, written as a merged trace (one file, global
//! dates, in causal order): every tool reads it as it reads the input,
//! and correction and prediction chain on it. Its events carry α = 0: the
//! recording's cost is what the traversal took out, so correcting the
//! output again changes nothing.

use std::path::Path;

use grappe_analysis::merge::{MergeLayout, merged_footer, merged_header, reference_samples};
use grappe_analysis::{GlobalTime, TraceSet};
use grappe_trace::format::Encoded;
use grappe_trace::raw::raw_of_event;
use grappe_trace::{Event, FileDefinitions, Footer, TraceWriter};

use crate::engine::Dates;
use crate::error::{ResimError, Result};
use crate::program::{Link, Program};

/// The events of `program` with their new `dates`, in the order a merged
/// trace keeps: by date (a receive's completion at its end, the moment
/// the message was delivered), each rank in its own order, every send
/// before its receive.
pub fn causal_order(program: &Program, dates: &Dates) -> Vec<Event> {
    let mut cursors = vec![0usize; program.flows.len()];
    let mut sent = vec![false; program.messages.len()];
    let mut out = Vec::with_capacity(program.events());
    loop {
        let mut best: Option<(i64, usize)> = None;
        for (rank, steps) in program.flows.iter().enumerate() {
            let Some(step) = steps.get(cursors[rank]) else { continue };
            let (start, end) = dates.of[rank][cursors[rank]];
            let key = match step.link {
                Link::Recv { msg } if !sent[msg] => continue,
                Link::Recv { .. } => end,
                _ => start,
            };
            if best.is_none_or(|(k, _)| key < k) {
                best = Some((key, rank));
            }
        }
        let Some((_, rank)) = best else { break };
        let index = cursors[rank];
        let step = &program.flows[rank][index];
        if let Link::Send { msg } = step.link {
            sent[msg] = true;
        }
        let (start, end) = dates.of[rank][index];
        let start = start.max(0) as u64;
        out.push(Event { start, end: (end.max(0) as u64).max(start), alpha_ns: 0, ..step.event });
        cursors[rank] += 1;
    }
    out
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
    let events = causal_order(program, dates);
    for block in events.chunks(layout.block_events) {
        let encoded: Vec<Encoded> = block
            .iter()
            .map(|e| Encoded { rank: e.rank, start: e.start, end: e.end, alpha_ns: 0, raw: raw_of_event(e, &mut defs) })
            .collect();
        writer.write_definitions(&defs.take_pending()).map_err(io)?;
        writer.write_events(encoded.into_iter()).map_err(io)?;
    }
    let written = events.len() as u64;
    let footer = match &program.read_from {
        Some(summary) => merged_footer(summary, written),
        None => Footer { events: written, ..Footer::default() },
    };
    writer.write_footer(&footer).map_err(io)?;
    Ok(events.len() as u64)
}
