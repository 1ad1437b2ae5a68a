//! The ranks as the commit and restore protocols see them: a few
//! collectives, and the steps where a job can be cut short.
//!
//! The protocols (`commit`, `restore`) are written once against [`Team`]:
//! the job's ranks run them over the checkpoint communicator, and the
//! protocol tests run them over threads that can crash at any step.

use grappe_comm::{BitAnd, Communicator, Max};

use crate::error::{FtError, Result};

/// The collectives of the protocols. Every rank calls them in the same
/// order.
pub(crate) trait Team {
    /// This rank.
    fn rank(&self) -> usize;
    /// The number of ranks.
    fn size(&self) -> usize;
    /// Whether every rank says yes.
    fn all(&self, mine: bool) -> Result<bool>;
    /// The largest of the ranks' numbers.
    fn max(&self, mine: u64) -> Result<u64>;
    /// Rank 0's words, on every rank.
    fn share(&self, words: &mut [u64]) -> Result<()>;
    /// The protocol reached `step` on this rank: where a crash leaves the
    /// files in a state the protocols must recover from (the protocol tests
    /// crash the job here).
    fn reached(&self, _step: Step) -> Result<()> {
        Ok(())
    }
}

/// The steps of the commit protocol, in order, and the restore's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Every rank stored its image; rank 0 is about to commit.
    Stored,
    /// Every server marked the wave committed; the record does not name it
    /// yet.
    ServersCommitted,
    /// The record names the wave: it is committed.
    Recorded,
    /// This rank deleted its images of the waves the record does not name.
    Retired,
    /// The servers keep only the record's waves.
    ServersKept,
    /// Restore: the wave to restart from is chosen, nothing is written yet.
    Chosen,
}

/// The job's ranks, over the checkpoint protocol's communicator.
pub(crate) struct Ranks<'a> {
    pub ctl: &'a Communicator,
    /// The wave, for errors (0 while restoring).
    pub wave: u64,
}

impl Ranks<'_> {
    fn runtime(&self, source: grappe_comm::Error) -> FtError {
        FtError::Runtime { wave: self.wave, source }
    }
}

impl Team for Ranks<'_> {
    fn rank(&self) -> usize {
        self.ctl.rank()
    }

    fn size(&self) -> usize {
        self.ctl.size()
    }

    fn all(&self, mine: bool) -> Result<bool> {
        let mut all = [0u64];
        self.ctl.allreduce(&[u64::from(mine)], &mut all, BitAnd).map_err(|e| self.runtime(e))?;
        Ok(all[0] == 1)
    }

    fn max(&self, mine: u64) -> Result<u64> {
        let mut max = [0u64];
        self.ctl.allreduce(&[mine], &mut max, Max).map_err(|e| self.runtime(e))?;
        Ok(max[0])
    }

    fn share(&self, words: &mut [u64]) -> Result<()> {
        self.ctl.bcast(words, 0).map_err(|e| self.runtime(e))
    }
}
