//! `grappe trace info`: what is in a trace, rank by rank.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use grappe_trace::format::{MergedRank, RankThread};
use grappe_trace::{Ending, EventKind, FileHeader, TraceFile};
use serde::Serialize;

use crate::error::Result;
use crate::global::{GlobalOptions, GlobalTime};
use crate::set::{Layout, TraceSet, list_ranks};
use crate::stream::IncompleteText;

mod alpha;
use alpha::{alpha_moves, alpha_text, before_after_text, kind_names};

/// One rank's events.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RankInfo {
    /// World rank.
    pub rank: u32,
    /// Events.
    pub events: u64,
    /// First event start (ns, the file's time base).
    pub first_ns: Option<u64>,
    /// Last event end.
    pub last_ns: Option<u64>,
    /// Events per kind name.
    pub kinds: BTreeMap<&'static str, u64>,
    /// α, the recording cost its recorder measured before the run, per
    /// kind name (from its file's header, or what a merged file kept of
    /// it; empty when neither has it).
    pub alpha_ns: BTreeMap<String, u32>,
    /// α measured again when the rank finished, per kind name, from its
    /// file's footer or what a merged file's footer kept of it (empty when
    /// neither has it).
    pub alpha_after_ns: BTreeMap<String, u32>,
    /// Events its recorder dropped (buffer full, policy `end`), from its
    /// file's footer or what a merged file's footer kept of it; `None`
    /// when neither has it (the file was incomplete).
    pub dropped: Option<u64>,
}

impl RankInfo {
    fn new(rank: u32) -> RankInfo {
        RankInfo { rank, ..RankInfo::default() }
    }

    fn add(&mut self, start: u64, end: u64, kind: EventKind) {
        self.events += 1;
        self.first_ns = Some(self.first_ns.map_or(start, |f| f.min(start)));
        self.last_ns = Some(self.last_ns.map_or(end, |l| l.max(end)));
        *self.kinds.entry(kind.name()).or_default() += 1;
    }

    /// Last end minus first start, ns.
    pub fn duration_ns(&self) -> u64 {
        match (self.first_ns, self.last_ns) {
            (Some(a), Some(b)) => b.saturating_sub(a),
            _ => 0,
        }
    }
}

/// One file of the set.
#[derive(Debug, Clone, Serialize)]
pub struct FileInfo {
    /// The file.
    pub path: PathBuf,
    /// Its rank (`None`: merged).
    pub rank: Option<u32>,
    /// Host and process.
    pub host: String,
    /// Process id.
    pub pid: u32,
    /// The OS thread that ran the rank, if the file says.
    pub thread: Option<RankThread>,
    /// Clock source and time base.
    pub clock: String,
    /// Simulated distortion, if any.
    pub simulated: Option<String>,
    /// Flush policy and buffer size.
    pub buffering: String,
    /// Events dropped (buffer full, policy `end`), when the file is complete.
    pub dropped: Option<u64>,
    /// For a merged file made from incomplete rank files: `dropped` counts
    /// the complete ones only (the others' counts were in their footers).
    pub dropped_of_complete_ranks_only: bool,
    /// Buffer flushes during the run.
    pub flushes: Option<u64>,
    /// Clock samples in the file.
    pub clock_samples: usize,
    /// Resume points in the file (merged files have them).
    pub resume_points: u64,
    /// α, the recording cost the recorder measured, in ns per kind name.
    pub alpha_ns: BTreeMap<String, u32>,
    /// α measured again when the rank finished, per kind name (empty for
    /// files without it: merged ones, older ones, cut ones).
    pub alpha_after_ns: BTreeMap<String, u32>,
    /// How the file ends.
    pub ending: String,
    /// True if the file has its footer.
    pub complete: bool,
}

/// Everything `info` prints.
#[derive(Debug, Clone, Serialize)]
pub struct TraceInfo {
    /// Per-rank or merged.
    pub merged: bool,
    /// Ranks in the job.
    pub world_size: u32,
    /// The job's id (empty in files written before it was recorded).
    pub job: String,
    /// The files.
    pub files: Vec<FileInfo>,
    /// Ranks seen, with their events.
    pub ranks: Vec<RankInfo>,
    /// From the first start to the last end over all ranks on global time
    /// (each rank's dates put on rank 0's clock as the other tools do), ns.
    pub span_ns: u64,
    /// Missing ranks and other remarks.
    pub notes: Vec<String>,
}

impl TraceInfo {
    /// All events.
    pub fn events(&self) -> u64 {
        self.ranks.iter().map(|r| r.events).sum()
    }
}

/// Reads every file of the set. `progress` gets the events read so far.
pub fn info(set: &TraceSet, progress: &mut dyn FnMut(u64)) -> Result<TraceInfo> {
    let mut ranks: BTreeMap<u32, RankInfo> = BTreeMap::new();
    let mut files = Vec::new();
    let mut read = 0u64;
    for f in set.files() {
        let mut trace = f.open()?;
        while let Some(block) = trace.next_events()? {
            for e in &block {
                ranks.entry(e.rank).or_insert_with(|| RankInfo::new(e.rank)).add(e.start, e.end, e.body.kind());
            }
            read += block.len() as u64;
            progress(read);
        }
        if let Some(rank) = f.rank() {
            ranks.entry(rank).or_insert_with(|| RankInfo::new(rank));
        }
        for (rank, alpha) in alpha_before_by_rank(trace.header()) {
            ranks.entry(rank).or_insert_with(|| RankInfo::new(rank)).alpha_ns = alpha;
        }
        let after = alpha_after_by_rank(&trace);
        let file_after = f.rank().and_then(|rank| after.get(&rank).cloned()).unwrap_or_default();
        files.push(file_info(&trace, file_after));
        for (rank, alpha) in after {
            ranks.entry(rank).or_insert_with(|| RankInfo::new(rank)).alpha_after_ns = alpha;
        }
        for (rank, dropped) in dropped_by_rank(&trace) {
            ranks.entry(rank).or_insert_with(|| RankInfo::new(rank)).dropped = Some(dropped);
        }
    }
    let mut notes = set.notes().to_vec();
    let missing = set.missing_ranks();
    if !missing.is_empty() && notes.is_empty() {
        notes.push(format!("missing ranks: {}", list_ranks(&missing)));
    }
    let turns = set.turn_taking();
    if !turns.is_empty() {
        notes.push(crate::set::turn_taking_text(&turns));
    }
    let time = GlobalTime::estimate(set, &GlobalOptions::default())?;
    let span_ns = global_span(ranks.values(), &time);
    Ok(TraceInfo {
        span_ns,
        merged: set.layout() == Layout::Merged,
        world_size: set.world_size(),
        job: set.files()[0].header.job.clone(),
        files,
        ranks: ranks.into_values().collect(),
        notes,
    })
}

/// The run's span over every rank on global time: ranks' local clocks
/// differ by their offsets (seconds, on different hosts), which a span of
/// raw dates would count.
fn global_span<'a>(ranks: impl Iterator<Item = &'a RankInfo>, time: &GlobalTime) -> u64 {
    let (mut first, mut last) = (u64::MAX, 0u64);
    for r in ranks {
        let global = |ns: u64| time.rank(r.rank).map_or(ns, |t| t.to_global(ns));
        if let (Some(a), Some(b)) = (r.first_ns, r.last_ns) {
            first = first.min(global(a));
            last = last.max(global(b));
        }
    }
    last.saturating_sub(first.min(last))
}

/// What `info` says of a file, once `trace` is read to its end, with the
/// α after the run its footer gives for its rank.
fn file_info(trace: &TraceFile, alpha_after_ns: BTreeMap<String, u32>) -> FileInfo {
    let h = trace.header();
    let (dropped, flushes, complete, ending) = match trace.ending() {
        Some(Ending::Complete(footer)) => {
            let inputs: Vec<String> = footer.incomplete.iter().map(|i| IncompleteText(i).to_string()).collect();
            let ending = match inputs.is_empty() {
                true => "complete".to_owned(),
                false => format!("complete, made from incomplete files: {}", inputs.join("; ")),
            };
            (Some(footer.dropped), Some(footer.flushes), true, ending)
        }
        Some(Ending::Unfinished { offset }) => {
            (None, None, false, format!("unfinished: no footer after offset {offset} (the rank did not finish)"))
        }
        Some(Ending::Cut { offset, reason }) => {
            (None, None, false, format!("cut at offset {offset}: expected {reason}; what comes before it was read"))
        }
        None => (None, None, false, "not read to the end".to_owned()),
    };
    FileInfo {
        path: trace.path().to_owned(),
        rank: h.rank,
        host: h.host.clone(),
        pid: h.pid,
        thread: h.thread.clone(),
        clock: format!(
            "{} ({:.3} GHz), {} dates{}",
            h.clock.source,
            h.clock.ticks_per_second / 1e9,
            h.clock.time_base,
            h.clock.estimation.as_ref().map_or(String::new(), |e| format!(" ({e})"))
        ),
        simulated: h.clock.simulated.clone(),
        buffering: match h.rank {
            Some(_) => format!("flush {}, buffer {} events", h.flush_policy, h.buffer_events),
            None => format!("merged in blocks of {} events; {}", h.buffer_events, RecordersText(&h.merged_from)),
        },
        dropped,
        dropped_of_complete_ranks_only: matches!(trace.ending(), Some(Ending::Complete(f)) if !f.incomplete.is_empty()),
        flushes,
        clock_samples: trace.clock_samples().len(),
        resume_points: trace.resume_points(),
        alpha_ns: calibration_by_name(h),
        alpha_after_ns,
        ending,
        complete,
    }
}

/// A rank file's α, by kind name.
fn calibration_by_name(header: &FileHeader) -> BTreeMap<String, u32> {
    header.calibration.iter().map(|c| (c.kind.clone(), c.alpha_ns)).collect()
}

/// The α a file's header gives, per rank and kind name: its rank's, or
/// for a merged file those it kept of its inputs.
fn alpha_before_by_rank(header: &FileHeader) -> BTreeMap<u32, BTreeMap<String, u32>> {
    match header.rank {
        Some(rank) => [(rank, calibration_by_name(header))].into(),
        None => header
            .merged_from
            .iter()
            .filter(|m| !m.alpha_ns.is_empty())
            .map(|m| {
                (m.rank, kind_names().filter_map(|(id, name)| Some((name.to_owned(), *m.alpha_ns.get(id)?))).collect())
            })
            .collect(),
    }
}

/// The events dropped a file's footer gives, per rank: its rank's, or for
/// a merged file those it kept of its complete inputs.
fn dropped_by_rank(trace: &TraceFile) -> BTreeMap<u32, u64> {
    let Some(Ending::Complete(footer)) = trace.ending() else { return BTreeMap::new() };
    match trace.header().rank {
        Some(rank) => [(rank, footer.dropped)].into(),
        None => footer.ranks.iter().map(|r| (r.rank, r.dropped)).collect(),
    }
}

/// The α after the run a file's footer gives, per rank and kind name: its
/// rank's, or for a merged file those it kept of its inputs.
fn alpha_after_by_rank(trace: &TraceFile) -> BTreeMap<u32, BTreeMap<String, u32>> {
    let Some(Ending::Complete(footer)) = trace.ending() else { return BTreeMap::new() };
    let by_name = |alpha: &[u32; 32]| kind_names().map(|(id, name)| (name.to_owned(), alpha[id])).collect();
    match trace.header().rank {
        Some(rank) => footer.alpha_after.iter().map(|alpha| (rank, by_name(alpha))).collect(),
        None => footer.ranks.iter().filter_map(|r| Some((r.rank, by_name(r.alpha_after.as_ref()?)))).collect(),
    }
}

impl fmt::Display for TraceInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_title(f)?;
        for file in &self.files {
            let who = file.rank.map_or("merged".to_owned(), |r| format!("rank {r}"));
            writeln!(f, "{who}: {}", file.path.display())?;
            let thread = file.thread.as_ref().map_or(String::new(), |t| format!(", {}", ThreadText(file.rank, t)));
            writeln!(f, "    host {} pid {}{thread}, clock {}", file.host, file.pid, file.clock)?;
            if let Some(sim) = &file.simulated {
                writeln!(f, "    simulated clock: {sim}")?;
            }
            let drops = match (file.dropped, file.dropped_of_complete_ranks_only) {
                (None, _) => "unknown".to_owned(),
                (Some(d), false) => d.to_string(),
                (Some(d), true) => format!("{d} (by the complete rank files; unknown for the others)"),
            };
            writeln!(f, "    {}, {drops} dropped, {} clock samples", file.buffering, file.clock_samples)?;
            if file.rank.is_none() {
                writeln!(f, "    {}", ResumeText(file.resume_points))?;
                if !self.ranks.is_empty() {
                    writeln!(f, "    {}", DropsText(&self.ranks))?;
                }
            }
            if file.rank.is_none() {
                self.write_ranks_alpha(f)?;
            } else if !file.alpha_ns.is_empty() {
                writeln!(f, "    recording cost (α): {}", alpha_text(&file.alpha_ns))?;
            }
            if !file.alpha_after_ns.is_empty() {
                writeln!(f, "    α after the run: {}", alpha_text(&file.alpha_after_ns))?;
                let moves = alpha_moves(&file.alpha_ns, &file.alpha_after_ns);
                if !moves.is_empty() {
                    writeln!(f, "    α moved during the run (the host's pace changed): {}", moves.join("; "))?;
                }
            }
            writeln!(f, "    {}", file.ending)?;
        }
        writeln!(f, "{:>6} {:>12} {:>14}  kinds", "rank", "events", "duration (s)")?;
        for r in &self.ranks {
            let kinds: Vec<String> = r.kinds.iter().map(|(k, n)| format!("{k} {n}")).collect();
            writeln!(f, "{:>6} {:>12} {:>14.6}  {}", r.rank, r.events, r.duration_ns() as f64 / 1e9, kinds.join(", "))?;
        }
        self.notes.iter().try_for_each(|n| writeln!(f, "note: {n}"))
    }
}

impl TraceInfo {
    /// The short account of the trace, a screen's worth whatever the
    /// ranks: the job, ranks, events and duration, how the files end,
    /// the drops, the clocks, α in one line, the notes. Its
    /// [`Display`](fmt::Display) gives each file's and rank's details.
    pub fn summary(&self) -> InfoSummary<'_> {
        InfoSummary(self)
    }

    /// The first line of both accounts.
    fn write_title(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if self.merged { "merged trace" } else { "per-rank traces" };
        let job = if self.job.is_empty() { String::new() } else { format!(" of job {}", self.job) };
        writeln!(
            f,
            "{kind}{job}: {} ranks, {} events over {:.6} s",
            self.world_size,
            self.events(),
            self.span_ns as f64 / 1e9
        )
    }
}

/// [`TraceInfo::summary`].
pub struct InfoSummary<'a>(&'a TraceInfo);

impl fmt::Display for InfoSummary<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let info = self.0;
        info.write_title(f)?;
        writeln!(f, "  files:    {}", EndingsText(&info.files))?;
        if !info.merged {
            writeln!(f, "  hosts:    {}", HostsText(&info.files))?;
        }
        writeln!(f, "  clocks:   {}", ClocksText(&info.files))?;
        if let Some(line) = events_per_rank(&info.ranks) {
            writeln!(f, "  events:   {line}")?;
        }
        writeln!(f, "  dropped:  {}", DroppedText(&info.ranks))?;
        if let Some(line) = alpha_summary(&info.ranks) {
            writeln!(f, "  α:        {line}")?;
        }
        info.notes.iter().try_for_each(|n| writeln!(f, "note: {n}"))
    }
}

/// `4 complete`, or `3 complete; rank 2: cut at offset ...`: how the
/// files end, the incomplete ones named.
struct EndingsText<'a>(&'a [FileInfo]);

impl fmt::Display for EndingsText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let [merged] = self.0
            && merged.rank.is_none()
        {
            return write!(f, "one merged file, {}", merged.ending);
        }
        let complete = self.0.iter().filter(|file| file.complete).count();
        write!(f, "{complete} complete")?;
        for file in self.0.iter().filter(|file| !file.complete) {
            let who = file.rank.map_or("merged".to_owned(), |r| format!("rank {r}"));
            write!(f, "; {who}: {}", file.ending)?;
        }
        Ok(())
    }
}

/// `node1 (every rank)` or `a (ranks 0-1), b (ranks 2-3)`, at most a few
/// hosts named.
struct HostsText<'a>(&'a [FileInfo]);

/// Hosts, clocks... named at most in a summary's line.
const NAMED_AT_MOST: usize = 4;

impl fmt::Display for HostsText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_groups(f, self.0.iter().filter_map(|file| Some((file.host.as_str(), file.rank?))), "hosts")
    }
}

/// The files' clocks (source, rate, time base, estimation), the ranks
/// that share one named together.
struct ClocksText<'a>(&'a [FileInfo]);

impl fmt::Display for ClocksText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let [merged] = self.0
            && merged.rank.is_none()
        {
            return write!(f, "{}", merged.clock);
        }
        write_groups(f, self.0.iter().filter_map(|file| Some((file.clock.as_str(), file.rank?))), "clocks")
    }
}

/// `A (every rank)`, `A (ranks 0-1), B (rank 2)`, or past
/// [`NAMED_AT_MOST`] groups `9 hosts`: values and the ranks that have
/// each.
fn write_groups<'a>(
    f: &mut fmt::Formatter<'_>,
    of_rank: impl Iterator<Item = (&'a str, u32)>,
    what: &str,
) -> fmt::Result {
    let mut groups: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
    let mut ranks = 0;
    for (value, rank) in of_rank {
        groups.entry(value).or_default().push(rank);
        ranks += 1;
    }
    if groups.len() > NAMED_AT_MOST {
        return write!(f, "{} {what}", groups.len());
    }
    if let [(value, _)] = groups.iter().collect::<Vec<_>>()[..] {
        let every = if ranks == 1 { "its rank" } else { "every rank" };
        return write!(f, "{value} ({every})");
    }
    let parts: Vec<String> = groups
        .into_iter()
        .map(|(value, ranks)| {
            let s = if ranks.len() == 1 { "" } else { "s" };
            format!("{value} (rank{s} {})", list_ranks(&ranks))
        })
        .collect();
    write!(f, "{}", parts.join(", "))
}

/// `from 1200 (rank 3) to 1300 (rank 0) per rank`, or `1250 per rank`.
fn events_per_rank(ranks: &[RankInfo]) -> Option<String> {
    let fewest = ranks.iter().min_by_key(|r| r.events)?;
    let most = ranks.iter().max_by_key(|r| r.events)?;
    Some(match fewest.events == most.events {
        true => format!("{} per rank", most.events),
        false => {
            format!("from {} (rank {}) to {} (rank {}) per rank", fewest.events, fewest.rank, most.events, most.rank)
        }
    })
}

/// `none`, or `29: 24 (rank 1), 5 (rank 3)` and what is unknown.
struct DroppedText<'a>(&'a [RankInfo]);

impl fmt::Display for DroppedText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let total: u64 = self.0.iter().filter_map(|r| r.dropped).sum();
        let unknown: Vec<u32> = self.0.iter().filter(|r| r.dropped.is_none()).map(|r| r.rank).collect();
        let mut lossy: Vec<&RankInfo> = self.0.iter().filter(|r| r.dropped.unwrap_or(0) > 0).collect();
        lossy.sort_by_key(|r| std::cmp::Reverse(r.dropped));
        match total {
            0 => write!(f, "none")?,
            _ => {
                let shown: Vec<String> = lossy
                    .iter()
                    .take(NAMED_AT_MOST)
                    .map(|r| format!("{} (rank {})", r.dropped.unwrap_or(0), r.rank))
                    .collect();
                let more = if lossy.len() > NAMED_AT_MOST { ", ..." } else { "" };
                write!(f, "{total} events (buffer full): {}{more}", shown.join(", "))?;
            }
        }
        if !unknown.is_empty() {
            write!(f, "; unknown for ranks {} (no footer)", list_ranks(&unknown))?;
        }
        Ok(())
    }
}

/// `10-13 ns an event over the ranks and kinds, 10-14 ns after the run
/// (moved on ranks 1, 3)`: α in one line.
fn alpha_summary(ranks: &[RankInfo]) -> Option<String> {
    let range = |alphas: &mut dyn Iterator<Item = u32>| {
        let values: Vec<u32> = alphas.collect();
        let (low, high) = (*values.iter().min()?, *values.iter().max()?);
        Some(if low == high { format!("{low} ns") } else { format!("{low}-{high} ns") })
    };
    let before = range(&mut ranks.iter().flat_map(|r| r.alpha_ns.values().copied()))?;
    let mut line = format!("recording cost {before} an event, over the ranks and event kinds");
    if let Some(after) = range(&mut ranks.iter().flat_map(|r| r.alpha_after_ns.values().copied())) {
        line.push_str(&format!("; {after} after the run"));
    }
    let moved: Vec<u32> =
        ranks.iter().filter(|r| !alpha_moves(&r.alpha_ns, &r.alpha_after_ns).is_empty()).map(|r| r.rank).collect();
    if !moved.is_empty() {
        line.push_str(&format!(" (moved during the run on ranks {})", list_ranks(&moved)));
    }
    Some(line)
}

impl TraceInfo {
    /// A merged file's α, rank by rank: the events' and the one measured
    /// after the run.
    fn write_ranks_alpha(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "    recording cost (α) of each rank, before → after the run:")?;
        for r in self.ranks.iter().filter(|r| !r.alpha_ns.is_empty()) {
            let after = if r.alpha_after_ns.is_empty() { " (no α after the run)" } else { "" };
            writeln!(f, "      rank {}: {}{after}", r.rank, before_after_text(&r.alpha_ns, &r.alpha_after_ns))?;
        }
        Ok(())
    }
}

/// `flush full, buffer 65536 events (every rank)`: how the ranks of a
/// merged trace were recorded, ranks that agree named together.
struct RecordersText<'a>(&'a [MergedRank]);

impl fmt::Display for RecordersText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut by_setting: BTreeMap<(&str, u64), Vec<u32>> = BTreeMap::new();
        for m in self.0.iter().filter(|m| !m.flush_policy.is_empty()) {
            by_setting.entry((m.flush_policy.as_str(), m.buffer_events)).or_default().push(m.rank);
        }
        if by_setting.is_empty() {
            return write!(f, "the ranks' recorder settings were not kept");
        }
        let every = by_setting.len() == 1 && by_setting.values().all(|ranks| ranks.len() == self.0.len());
        let groups: Vec<String> = by_setting
            .into_iter()
            .map(|((policy, buffer), ranks)| {
                let who = if every { "every rank".to_owned() } else { format!("ranks {}", list_ranks(&ranks)) };
                format!("flush {policy}, buffer {buffer} events ({who})")
            })
            .collect();
        write!(f, "recorded with {}", groups.join("; "))
    }
}

/// `dropped by rank: 0 (ranks 0, 2-3), 24 (rank 1), unknown (rank 4)`:
/// a merged file's drops, ranks that agree named together, as a per-rank
/// file's line says its rank's.
struct DropsText<'a>(&'a [RankInfo]);

impl fmt::Display for DropsText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut by_count: BTreeMap<Option<u64>, Vec<u32>> = BTreeMap::new();
        for r in self.0 {
            by_count.entry(r.dropped).or_default().push(r.rank);
        }
        // Unknown last: `None` sorts first.
        let unknown = by_count.remove(&None).map(|ranks| (None, ranks));
        let groups: Vec<String> = by_count
            .into_iter()
            .chain(unknown)
            .map(|(count, ranks)| {
                let count = count.map_or("unknown".to_owned(), |c| c.to_string());
                let s = if ranks.len() == 1 { "" } else { "s" };
                format!("{count} (rank{s} {})", list_ranks(&ranks))
            })
            .collect();
        write!(f, "dropped by rank: {}", groups.join(", "))
    }
}

/// What a merged file's resume points are for, or that it has none.
struct ResumeText(u64);

impl fmt::Display for ResumeText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            0 => write!(f, "no resume points: `export --from` reads it from its start"),
            n => {
                let s = if n == 1 { "" } else { "s" };
                write!(f, "{n} resume point{s}: `export --from` starts at the last one before the interval")
            }
        }
    }
}

/// `thread T on cpu C (runs ranks 0, 2)`: what ran a rank, and which other
/// ranks it ran (coroutines of one worker take turns).
struct ThreadText<'a>(Option<u32>, &'a RankThread);

impl fmt::Display for ThreadText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ThreadText(rank, thread) = *self;
        write!(f, "thread {}", thread.tid)?;
        match thread.cpu {
            Some(cpu) => write!(f, " on cpu {cpu}")?,
            None => write!(f, " (not bound to a cpu)")?,
        }
        if thread.ranks.iter().any(|&r| Some(r) != rank) {
            let ranks: Vec<String> = thread.ranks.iter().map(u32::to_string).collect();
            write!(f, " (runs ranks {}, taking turns)", ranks.join(", "))?;
        }
        Ok(())
    }
}
