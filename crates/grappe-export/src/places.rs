//! Where viewers draw each rank: a process per process of the job (a host
//! and a pid), a thread per rank, both numbered from 1. Perfetto reads pid
//! 0 and tid 0 as the kernel's idle task (the "swapper" of a system
//! trace): its JSON importer files their events there, and its protobuf
//! importer refuses events of theirs. Threads are numbered rank + 1, which
//! Perfetto also sorts them by; processes in order of their lowest rank.

use grappe_analysis::CausalStream;

use crate::shape::job_name;

/// The process and thread of a rank, as a viewer numbers them (from 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Thread {
    pub(crate) pid: u32,
    pub(crate) tid: u32,
}

/// The processes of the job and the rank each runs.
pub(crate) struct Places {
    /// Per rank, the index of its process (ranks the stream places nowhere:
    /// the last process, the job alone).
    process_of: Vec<u32>,
    /// Per process, the name viewers show.
    names: Vec<String>,
}

impl Places {
    /// The stream's processes, and after them one for the ranks it does not
    /// place (all of them in a merged file that does not say), named
    /// after the job alone.
    pub(crate) fn of(stream: &CausalStream) -> Places {
        let job = job_name(stream);
        let mut names = Vec::new();
        let mut process_of = Vec::new();
        for (index, process) in (0u32..).zip(stream.processes()) {
            names.push(format!("{job}: {} pid {}", process.host, process.pid));
            for &rank in &process.ranks {
                let rank = rank as usize;
                if process_of.len() <= rank {
                    process_of.resize(rank + 1, u32::MAX);
                }
                process_of[rank] = index;
            }
        }
        let unplaced = names.len() as u32;
        process_of.iter_mut().filter(|p| **p == u32::MAX).for_each(|p| *p = unplaced);
        names.push(job);
        Places { process_of, names }
    }

    /// The index of the process of `rank`.
    #[inline(always)]
    pub(crate) fn process(&self, rank: u32) -> u32 {
        self.process_of.get(rank as usize).copied().unwrap_or(self.names.len() as u32 - 1)
    }

    /// The process and thread of `rank`.
    #[inline(always)]
    pub(crate) fn thread(&self, rank: u32) -> Thread {
        Thread { pid: self.process(rank) + 1, tid: rank + 1 }
    }

    /// The number of processes (the last one, the job alone, may have no
    /// rank).
    pub(crate) fn count(&self) -> usize {
        self.names.len()
    }

    /// The name of process `index`.
    pub(crate) fn name(&self, index: u32) -> &str {
        &self.names[index as usize]
    }
}
