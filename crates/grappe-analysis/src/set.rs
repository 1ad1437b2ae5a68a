//! The traces of one job: a directory of per-rank files, or one merged
//! file (the output of `grappe trace merge`; tools read both alike).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use grappe_trace::format::RankThread;
use grappe_trace::{FileHeader, TraceError, TraceFile};

use crate::error::{AnalysisError, Result};

/// How the events of a job are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// One file per rank, local dates.
    PerRank,
    /// One merged file, global dates, causal order.
    Merged,
}

/// A process of the job that ran traced ranks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Process {
    /// Its host.
    pub host: String,
    /// Its process id on that host.
    pub pid: u32,
    /// Its traced ranks, in order.
    pub ranks: Vec<u32>,
}

/// One trace file of the set and its header.
#[derive(Debug, Clone)]
pub struct SetFile {
    /// The file.
    pub path: PathBuf,
    /// Its header.
    pub header: FileHeader,
}

impl SetFile {
    /// The rank of a per-rank file.
    pub fn rank(&self) -> Option<u32> {
        self.header.rank
    }

    /// Opens the file for reading from its first block.
    pub fn open(&self) -> Result<TraceFile> {
        Ok(TraceFile::open(&self.path)?)
    }
}

/// The trace files of one job.
#[derive(Debug, Clone)]
pub struct TraceSet {
    location: PathBuf,
    layout: Layout,
    files: Vec<SetFile>,
    world_size: u32,
    notes: Vec<String>,
}

impl TraceSet {
    /// Opens a directory of per-rank traces (as written by `grappe run
    /// --trace DIR`) or a single trace file, checking that the files belong
    /// to one job.
    pub fn open(location: &Path) -> Result<TraceSet> {
        let meta = std::fs::metadata(location).map_err(|e| AnalysisError::io(location, e))?;
        if meta.is_dir() { TraceSet::open_dir(location) } else { TraceSet::open_file(location) }
    }

    fn open_file(path: &Path) -> Result<TraceSet> {
        let header = TraceFile::open(path)?.header().clone();
        let layout = if header.rank.is_some() { Layout::PerRank } else { Layout::Merged };
        let world_size = header.world_size;
        let file = SetFile { path: path.to_owned(), header };
        let mut set = TraceSet { location: path.to_owned(), layout, files: vec![file], world_size, notes: Vec::new() };
        set.note_missing_ranks();
        Ok(set)
    }

    fn open_dir(dir: &Path) -> Result<TraceSet> {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| AnalysisError::io(dir, e))?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|ext| ext == "gtrace"))
            .collect();
        paths.sort();
        let mut files = Vec::new();
        let mut notes = Vec::new();
        let mut first_cut = None;
        for path in paths {
            let header = match TraceFile::open(&path) {
                Ok(file) => file.header().clone(),
                // A rank killed as it started leaves a file with nothing to
                // read; like a rank with no file, it is left out (its
                // rank is named by the missing ranks' note).
                Err(cut @ TraceError::HeaderCut { .. }) => {
                    notes.push(format!("{cut}; left out"));
                    first_cut.get_or_insert(cut);
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            if header.rank.is_none() {
                notes.push(format!("{}: a merged trace, left out (read it on its own)", path.display()));
                continue;
            }
            files.push(SetFile { path, header });
        }
        let Some(first) = files.first() else {
            return Err(first_cut.map_or_else(|| AnalysisError::NoTraces { dir: dir.to_owned() }, AnalysisError::from));
        };
        let world_size = first.header.world_size;
        check_one_job(&files, world_size)?;
        files.sort_by_key(|f| f.header.rank);
        let mut set = TraceSet { location: dir.to_owned(), layout: Layout::PerRank, files, world_size, notes };
        set.note_missing_ranks();
        Ok(set)
    }

    fn note_missing_ranks(&mut self) {
        let missing = self.missing_ranks();
        if !missing.is_empty() {
            self.notes.push(format!(
                "no trace for {} of {} ranks ({}): their events and messages are absent",
                missing.len(),
                self.world_size,
                list_ranks(&missing)
            ));
        }
    }

    /// Where the set was opened from.
    pub fn location(&self) -> &Path {
        &self.location
    }

    /// Per-rank files or one merged file.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The files, by rank for a per-rank set.
    pub fn files(&self) -> &[SetFile] {
        &self.files
    }

    /// Ranks in the job.
    pub fn world_size(&self) -> u32 {
        self.world_size
    }

    /// The file of a rank (per-rank sets).
    pub fn file_of(&self, rank: u32) -> Option<&SetFile> {
        self.files.iter().find(|f| f.header.rank == Some(rank))
    }

    /// A rank's host and clock source, from its file or, in a merged
    /// set, from what the merged file says of the file it was made from.
    pub fn host_and_clock(&self, rank: u32) -> Option<(&str, &str)> {
        match self.layout {
            Layout::PerRank => self.file_of(rank).map(|f| (f.header.host.as_str(), f.header.clock.source.as_str())),
            Layout::Merged => self.files[0]
                .header
                .merged_from
                .iter()
                .find(|m| m.rank == rank)
                .map(|m| (m.host.as_str(), m.clock.as_str())),
        }
    }

    /// The processes that ran the traced ranks, in order of their lowest
    /// rank: from the files' headers, or in a merged set, from what the
    /// merged file says of the files it was made from (none if it says
    /// nothing of them).
    pub fn processes(&self) -> Vec<Process> {
        let places: Vec<(u32, &str, u32)> = match self.layout {
            Layout::PerRank => {
                self.files.iter().filter_map(|f| Some((f.header.rank?, f.header.host.as_str(), f.header.pid))).collect()
            }
            Layout::Merged => {
                self.files[0].header.merged_from.iter().map(|m| (m.rank, m.host.as_str(), m.pid)).collect()
            }
        };
        let mut by_place: BTreeMap<(&str, u32), Vec<u32>> = BTreeMap::new();
        for (rank, host, pid) in places {
            by_place.entry((host, pid)).or_default().push(rank);
        }
        let mut processes: Vec<Process> = by_place
            .into_iter()
            .map(|((host, pid), mut ranks)| {
                ranks.sort_unstable();
                Process { host: host.to_owned(), pid, ranks }
            })
            .collect();
        processes.sort_by_key(|p| p.ranks[0]);
        processes
    }

    /// Ranks of the job with no trace: no file (per-rank sets), or none
    /// among the files a merged trace was made from.
    pub fn missing_ranks(&self) -> Vec<u32> {
        let traced = |r: u32| match self.layout {
            Layout::PerRank => self.file_of(r).is_some(),
            Layout::Merged => {
                let from = &self.files[0].header.merged_from;
                from.is_empty() || from.iter().any(|m| m.rank == r)
            }
        };
        (0..self.world_size).filter(|&r| !traced(r)).collect()
    }

    /// Ranks that took turns on one processor, each group in rank order:
    /// ranks bound to one CPU of a host, or, unbound, run by one thread
    /// (coroutines of a worker). A rank's calls then last while the others
    /// run. Files that do not say what ran them count for none.
    pub fn turn_taking(&self) -> Vec<Vec<u32>> {
        let places: Vec<(u32, &str, &RankThread, u32)> = match self.layout {
            Layout::PerRank => self
                .files
                .iter()
                .filter_map(|f| Some((f.header.rank?, f.header.host.as_str(), f.header.thread.as_ref()?, f.header.pid)))
                .collect(),
            Layout::Merged => self.files[0]
                .header
                .merged_from
                .iter()
                .filter_map(|m| Some((m.rank, m.host.as_str(), m.thread.as_ref()?, m.pid)))
                .collect(),
        };
        let mut groups: BTreeMap<(&str, Processor), Vec<u32>> = BTreeMap::new();
        for (rank, host, thread, pid) in places {
            let processor = match thread.cpu {
                Some(cpu) => Processor::Cpu(cpu),
                None => Processor::Thread(pid, thread.tid),
            };
            groups.entry((host, processor)).or_default().push(rank);
        }
        let mut shared: Vec<Vec<u32>> = groups.into_values().filter(|ranks| ranks.len() > 1).collect();
        shared.iter_mut().for_each(|ranks| ranks.sort_unstable());
        shared.sort();
        shared
    }

    /// The events the files hold, as their footers say (each read from
    /// its file's end, without reading the events): what a tool reading
    /// the whole set goes through, known before it starts. `None` when a
    /// file has no footer (cut, or its rank did not finish).
    pub fn events_recorded(&self) -> Result<Option<u64>> {
        let mut total = 0u64;
        for file in &self.files {
            match file.open()?.footer_from_end()? {
                Some(footer) => total += footer.events,
                None => return Ok(None),
            }
        }
        Ok(Some(total))
    }

    /// What the reader should know about the set (missing ranks, files
    /// left out).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }
}

/// "ranks 0, 2 took turns on one processor (so did 1, 3)", for the groups
/// of [`TraceSet::turn_taking`] (at least one).
pub(crate) fn turn_taking_text(turns: &[Vec<u32>]) -> String {
    let list = |ranks: &Vec<u32>| ranks.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
    let others: Vec<String> = turns[1..].iter().map(list).collect();
    let also = if others.is_empty() { String::new() } else { format!(" (so did {})", others.join("; ")) };
    format!("ranks {} took turns on one processor{also}", list(&turns[0]))
}

/// What a rank ran on, for [`TraceSet::turn_taking`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Processor {
    Cpu(u32),
    /// An unbound thread: (pid, tid).
    Thread(u32, u32),
}

/// Refuses files of different jobs: another job id (a file left by an
/// earlier run), another world size, a rank out of range, a rank twice.
fn check_one_job(files: &[SetFile], world_size: u32) -> Result<()> {
    let first = &files[0];
    let mut seen: Vec<Option<&Path>> = vec![None; world_size as usize];
    for f in files {
        let rank = f.header.rank.expect("per-rank files only");
        let inconsistent = |reason: String| AnalysisError::Inconsistent { path: f.path.clone(), reason };
        if f.header.job != first.header.job {
            return Err(inconsistent(format!(
                "a trace of job {} among traces of job {} ({}): files of two runs in one directory (remove the older run's)",
                job_name(&f.header.job),
                job_name(&first.header.job),
                first.path.display()
            )));
        }
        if f.header.world_size != world_size {
            return Err(inconsistent(format!(
                "a trace of a {}-rank job among traces of a {world_size}-rank job ({})",
                f.header.world_size,
                first.path.display()
            )));
        }
        let Some(slot) = seen.get_mut(rank as usize) else {
            return Err(inconsistent(format!("rank {rank} in a {world_size}-rank job")));
        };
        if let Some(other) = slot {
            return Err(inconsistent(format!("rank {rank} is also traced in {}", other.display())));
        }
        *slot = Some(&f.path);
    }
    Ok(())
}

fn job_name(id: &str) -> String {
    if id.is_empty() { "(no id: written before grappe recorded job ids)".into() } else { format!("{id:?}") }
}

/// "0, 3-5, 9": ranks as ranges.
pub fn list_ranks(ranks: &[u32]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < ranks.len() {
        let mut j = i;
        while j + 1 < ranks.len() && ranks[j + 1] == ranks[j] + 1 {
            j += 1;
        }
        parts.push(if i == j { ranks[i].to_string() } else { format!("{}-{}", ranks[i], ranks[j]) });
        i = j + 1;
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::list_ranks;

    #[test]
    fn rank_lists_collapse_runs() {
        assert_eq!(list_ranks(&[0, 3, 4, 5, 9]), "0, 3-5, 9");
        assert_eq!(list_ranks(&[]), "");
        assert_eq!(list_ranks(&[7]), "7");
    }
}
