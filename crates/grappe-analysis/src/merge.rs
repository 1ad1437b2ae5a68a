//! `grappe trace merge`: the causal stream written as one trace file in
//! the same format (rank `None`, global dates), so every tool reads it
//! like the per-rank files and merges chain. Every few hundred thousand
//! events it writes a resume point ([`grappe_trace::resume`]), from which
//! an interval late in the run is read without what comes before it.

use std::path::Path;

use crate::error::{AnalysisError, Result};
use crate::global::{GlobalTime, REFERENCE};
use crate::resume_points::OpenState;
use crate::set::{Layout, TraceSet};
use crate::stream::{CausalStream, StreamSummary};
use grappe_trace::format::{Encoded, FileHeader, IncompleteRank, MergedRank, RankEnding, VERSION};
use grappe_trace::raw::raw_of_event;
use grappe_trace::{ClockInfo, Ending, EventKind, FileDefinitions, Footer, TraceWriter};

/// How a merged file is cut up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MergeLayout {
    /// Events per block.
    pub block_events: usize,
    /// A resume point after every this many blocks (0: none).
    pub resume_every: usize,
}

impl Default for MergeLayout {
    /// Blocks of 8192 events, a resume point every 32 (262 144 events,
    /// about 3 MB of file): a reader starting at one reads at most that
    /// much before the date it wants, and the points, a few hundred bytes
    /// each, add nothing worth counting.
    fn default() -> Self {
        MergeLayout { block_events: 8192, resume_every: 32 }
    }
}

/// What a merge wrote.
#[derive(Debug, Clone)]
pub struct MergeOutcome {
    /// Events written.
    pub events: u64,
    /// The ranks whose files ended without their footer (the merged
    /// file's footer says so too, and `check` and `info` tell it).
    pub incomplete: Vec<IncompleteRank>,
    /// What the causal stream saw.
    pub summary: StreamSummary,
}

/// Merges `set` into `out`. `progress` is called with the events written
/// so far, every block.
pub fn merge_to_file(
    set: &TraceSet,
    time: &GlobalTime,
    out: &Path,
    progress: &mut dyn FnMut(u64),
) -> Result<MergeOutcome> {
    merge_to_file_with(set, time, out, MergeLayout::default(), progress)
}

/// [`merge_to_file`] cut up as `layout` says.
pub fn merge_to_file_with(
    set: &TraceSet,
    time: &GlobalTime,
    out: &Path,
    layout: MergeLayout,
    progress: &mut dyn FnMut(u64),
) -> Result<MergeOutcome> {
    let header = merged_header(set, time, layout)?;
    let io = |e| AnalysisError::io(out, e);
    let mut writer = TraceWriter::create(out, &header).map_err(io)?;
    let samples = reference_samples(set)?;
    if !samples.is_empty() {
        writer.write_samples(&samples).map_err(io)?;
    }
    let mut stream = CausalStream::open(set, time)?;
    let mut defs = FileDefinitions::default();
    let block_events = layout.block_events.max(1);
    let mut block: Vec<Encoded> = Vec::with_capacity(block_events);
    let (mut written, mut blocks) = (0u64, 0usize);
    let mut open = OpenState::default();
    while let Some(linked) = stream.next_event()? {
        let e = linked.event;
        open.observe(e);
        let raw = raw_of_event(e, &mut defs);
        block.push(Encoded { rank: e.rank, start: e.start, end: e.end, alpha_ns: e.alpha_ns, raw });
        if block.len() == block_events {
            written += write_block(&mut writer, &mut defs, &mut block).map_err(io)?;
            progress(written);
            blocks += 1;
            if layout.resume_every > 0 && blocks % layout.resume_every == 0 {
                let point = open.point(stream.matcher(), &mut defs);
                writer.write_definitions(&defs.take_pending()).map_err(io)?;
                writer.write_resume(&point).map_err(io)?;
            }
        }
    }
    written += write_block(&mut writer, &mut defs, &mut block).map_err(io)?;
    progress(written);
    let summary = stream.summary();
    let footer = merged_footer(&summary, written);
    writer.write_footer(&footer).map_err(io)?;
    Ok(MergeOutcome { events: written, incomplete: footer.incomplete, summary })
}

fn write_block(writer: &mut TraceWriter, defs: &mut FileDefinitions, block: &mut Vec<Encoded>) -> std::io::Result<u64> {
    let n = block.len() as u64;
    if n == 0 {
        return Ok(0);
    }
    writer.write_definitions(&defs.take_pending())?;
    writer.write_events(block.drain(..))?;
    Ok(n)
}

/// The footer of a merged file of `events` events made from the stream
/// `summary` describes: what its inputs dropped, which were incomplete,
/// and each rank's ending.
pub fn merged_footer(summary: &StreamSummary, events: u64) -> Footer {
    Footer {
        events,
        dropped: dropped_events(summary),
        incomplete: incomplete_inputs(summary),
        ranks: rank_endings(summary),
        ..Footer::default()
    }
}

fn dropped_events(summary: &StreamSummary) -> u64 {
    let ends = summary.flows.iter().filter_map(|f| f.ending.as_ref()).chain(&summary.merged_ending);
    ends.map(|ending| if let Ending::Complete(footer) = ending { footer.dropped } else { 0 }).sum()
}

/// The input files that ended without their footer: each per-rank file
/// cut or unfinished, or those a merged input already named.
fn incomplete_inputs(summary: &StreamSummary) -> Vec<IncompleteRank> {
    let ranks = summary.flows.iter().filter_map(|f| match f.ending.as_ref()? {
        Ending::Complete(_) => None,
        Ending::Unfinished { offset } => Some(IncompleteRank { rank: f.rank, offset: *offset, cut: None }),
        Ending::Cut { offset, reason } => {
            Some(IncompleteRank { rank: f.rank, offset: *offset, cut: Some(reason.clone()) })
        }
    });
    let merged = match &summary.merged_ending {
        Some(Ending::Complete(footer)) => footer.incomplete.clone(),
        _ => Vec::new(),
    };
    ranks.chain(merged).collect()
}

/// What the complete input files' footers said, rank by rank (or what a
/// merged input kept of them), for the merged file's footer.
fn rank_endings(summary: &StreamSummary) -> Vec<RankEnding> {
    let ranks = summary.flows.iter().filter_map(|f| match f.ending.as_ref()? {
        Ending::Complete(footer) => Some(RankEnding {
            rank: f.rank,
            dropped: footer.dropped,
            flushes: footer.flushes,
            alpha_after: footer.alpha_after,
        }),
        _ => None,
    });
    let merged = match &summary.merged_ending {
        Some(Ending::Complete(footer)) => footer.ranks.clone(),
        _ => Vec::new(),
    };
    ranks.chain(merged).collect()
}

/// Rank 0's clock samples, kept so `grappe trace clock` works on the
/// merged file too (and on any trace written in a merged file's form).
pub fn reference_samples(set: &TraceSet) -> Result<Vec<grappe_trace::ClockSample>> {
    let file = match set.layout() {
        Layout::PerRank => set.file_of(REFERENCE),
        Layout::Merged => set.files().first(),
    };
    let Some(file) = file else { return Ok(Vec::new()) };
    let mut trace = file.open()?;
    trace.skim()?;
    Ok(trace.clock_samples().to_vec())
}

/// A rank file's α calibration indexed by kind id (0 for kinds it does
/// not name).
fn alpha_by_id(header: &FileHeader) -> Vec<u32> {
    let mut alpha = vec![0; EventKind::ALL.iter().map(|k| k.id() as usize + 1).max().unwrap_or(0)];
    for c in &header.calibration {
        if let Some(kind) = EventKind::ALL.iter().find(|k| k.name() == c.kind) {
            alpha[kind.id() as usize] = c.alpha_ns;
        }
    }
    alpha
}

/// The header of a merged file made of `set` on global time `time`: the
/// reference rank's, on global dates, with what each rank's file said
/// (a merged input's own header as it is). Tools that write a trace in
/// the merged form (a re-simulated trace) start from it.
pub fn merged_header(set: &TraceSet, time: &GlobalTime, layout: MergeLayout) -> Result<FileHeader> {
    let first = &set.files()[0].header;
    if set.layout() == Layout::Merged {
        return Ok(first.clone());
    }
    let reference = set.file_of(REFERENCE).map_or(first, |f| &f.header);
    let merged_from = set
        .files()
        .iter()
        .map(|f| {
            let rank = f.rank().expect("per-rank set");
            MergedRank {
                rank,
                host: f.header.host.clone(),
                pid: f.header.pid,
                thread: f.header.thread.clone(),
                clock: f.header.clock.source.clone(),
                time: time.rank(rank).map_or("missing".into(), |t| t.basis.describe()),
                flush_policy: f.header.flush_policy.clone(),
                buffer_events: f.header.buffer_events,
                alpha_ns: alpha_by_id(&f.header),
            }
        })
        .collect();
    Ok(FileHeader {
        format: VERSION,
        rank: None,
        world_size: set.world_size(),
        job: reference.job.clone(),
        host: reference.host.clone(),
        pid: reference.pid,
        process_ranks: Vec::new(),
        thread: None,
        clock: ClockInfo {
            source: reference.clock.source.clone(),
            ticks_per_second: reference.clock.ticks_per_second,
            time_base: "global".into(),
            simulated: None,
            estimation: Some(time.estimation.clone()),
            tsc: None,
        },
        calibration: reference.calibration.clone(),
        schema: reference.schema.clone(),
        flush_policy: reference.flush_policy.clone(),
        buffer_events: layout.block_events as u64,
        started_unix_ns: set.files().iter().map(|f| f.header.started_unix_ns).min().unwrap_or(0),
        merged_from,
    })
}
