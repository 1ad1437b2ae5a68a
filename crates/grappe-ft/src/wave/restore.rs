//! Restoring a rank at the start of a job: the newest committed wave every
//! rank can read, from its local copy or its server, and the messages that
//! were in transit at that cut.

use std::time::Instant;

use grappe_comm::BitAnd;
use serde::de::DeserializeOwned;

use super::Checkpointer;
use super::storing::SavedMessage;
use crate::client::CheckpointClient;
use crate::error::{FtError, Result};
use crate::local::{self, CheckpointDir};

impl Checkpointer {
    /// The state of the newest committed wave every rank can restore,
    /// from its local copy or its server; `None` for a fresh start.
    /// Collective.
    pub fn restore<S: DeserializeOwned>(&mut self) -> Result<Option<S>> {
        let Some(dir) = self.dir.clone() else { return Ok(None) };
        let started = Instant::now();
        let committed = dir.committed()?;
        self.wave = committed.first().copied().unwrap_or(0);
        if committed.is_empty() {
            return Ok(None);
        }
        let mut states = Vec::new();
        let mut mask = 0u64;
        for (i, &wave) in committed.iter().enumerate() {
            match self.fetch(&dir, wave) {
                Ok(state) => {
                    mask |= 1 << i;
                    states.push((wave, state));
                }
                Err(e) => eprintln!("grappe: rank {}: cannot restore wave {wave}: {e}", self.rank),
            }
        }
        let mut all = [0u64];
        self.ctl.allreduce(&[mask], &mut all, BitAnd).map_err(|e| self.runtime(e))?;
        let Some(chosen) = (0..committed.len()).find(|i| all[0] & (1 << i) != 0).map(|i| committed[i]) else {
            if self.rank == 0 {
                eprintln!("grappe: no committed wave ({committed:?}) can be restored by every rank: starting over");
            }
            return Ok(None);
        };
        let (_, bytes) = states.into_iter().find(|(w, _)| *w == chosen).expect("the mask says this rank has it");
        let (state, channels): (S, Vec<SavedMessage>) = bincode::deserialize(&bytes).map_err(|e| FtError::State {
            rank: self.rank,
            wave: chosen,
            what: "restored",
            detail: e.to_string(),
        })?;
        // Before the barrier: no peer sends anything new before these are
        // back in place, so they are received first.
        let channels = channels.into_iter().map(SavedMessage::into_in_transit).collect();
        self.app.rank_context().engine().restore_in_transit(channels);
        self.committed = committed.into_iter().filter(|&w| w <= chosen).collect();
        self.stats.restored_from = Some(chosen);
        self.ctl.barrier().map_err(|e| self.runtime(e))?;
        if self.rank == 0 {
            let (mb, seconds) = (bytes.len() as f64 / 1e6, started.elapsed().as_secs_f64());
            eprintln!(
                "grappe: restarted from checkpoint wave {chosen} ({mb:.1} MB on rank 0, restored in {seconds:.3} s)"
            );
        }
        Ok(Some(state))
    }

    /// This rank's state in `wave`: the local copy, else the server's.
    fn fetch(&self, dir: &CheckpointDir, wave: u64) -> Result<Vec<u8>> {
        let (rank, ranks) = (self.rank as u32, self.ranks as u32);
        let path = dir.image_path(self.rank, wave);
        let local = dir
            .read_image(self.rank, wave)
            .and_then(|image| local::decode(&image, wave, rank, ranks, &path).map(<[u8]>::to_vec));
        let settings = self.settings.as_ref().expect("restores only happen with settings");
        match (local, settings.server_of(self.rank)) {
            (Ok(state), _) => Ok(state),
            (Err(e), None) => Err(e),
            (Err(e), Some(server)) => {
                eprintln!(
                    "grappe: rank {}: local copy of wave {wave} unusable ({e}); fetching it from {server}",
                    self.rank
                );
                let mut image = Vec::new();
                CheckpointClient::connect(server, &settings.name, &settings.secret)?.get(wave, rank, &mut image)?;
                let origin = std::path::PathBuf::from(format!("{server}:{}/wave-{wave}/rank-{rank}", settings.name));
                local::decode(&image, wave, rank, ranks, &origin).map(<[u8]>::to_vec)
            }
        }
    }
}
