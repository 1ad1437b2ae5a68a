//! What a wave stores: a rank's image (its local copy, then its server's)
//! and the in-transit messages inside it, and the commits on the servers.

use grappe_comm::InTransit;
use serde::{Deserialize, Serialize};

use crate::client::{CheckpointClient, on_servers, on_servers_except};
use crate::error::Result;
use crate::local::{CheckpointDir, CommitRecord};
use crate::settings::FtSettings;

/// A message in transit at the cut, as an image keeps it.
#[derive(Serialize, Deserialize)]
pub(super) struct SavedMessage {
    src_world: u32,
    src_comm: u32,
    ctx: u32,
    tag: i32,
    payload: Vec<u8>,
}

impl From<InTransit> for SavedMessage {
    fn from(m: InTransit) -> Self {
        SavedMessage { src_world: m.src_world, src_comm: m.src_comm, ctx: m.ctx, tag: m.tag, payload: m.payload }
    }
}

impl SavedMessage {
    pub(super) fn into_in_transit(self) -> InTransit {
        let SavedMessage { src_world, src_comm, ctx, tag, payload } = self;
        InTransit { src_world, src_comm, ctx, tag, payload }
    }
}

/// Storing one rank's image: the local copy, then its server.
pub(super) struct Storing {
    pub settings: FtSettings,
    pub rank: usize,
    pub wave: u64,
    /// Not sealed yet: the checksum is computed here, off the point for vcl.
    pub image: Vec<u8>,
}

/// A stored image: whether it was, and its buffer, for the next wave.
pub(super) struct Stored {
    pub outcome: Result<()>,
    pub buffer: Vec<u8>,
}

impl Storing {
    pub(super) fn run(mut self) -> Stored {
        let outcome = self.store();
        Stored { outcome, buffer: self.image }
    }

    fn store(&mut self) -> Result<()> {
        crate::local::seal(&mut self.image);
        CheckpointDir::new(self.settings.dir.clone()).write_image(self.rank, self.wave, &self.image)?;
        if let Some(server) = self.settings.server_of(self.rank) {
            let mut client = CheckpointClient::for_job(&self.settings, server)?;
            client.put(self.wave, self.rank as u32, &mut &self.image[..])?;
        }
        Ok(())
    }
}

/// Commits a wave on every server that holds images of it; the first
/// server that could not is the error.
pub(super) fn commit_on_servers(settings: &FtSettings, wave: u64, ranks: usize) -> Result<()> {
    on_servers(settings, ranks, |client| client.commit(wave)).into_iter().try_for_each(|(_, outcome)| outcome)
}

/// Tells every server (but those of `skip`, known not to answer) to keep
/// the waves of the record and nothing else. A server that does not
/// answer keeps more until it is told again; each is named on stderr.
pub(super) fn keep_on_servers(settings: &FtSettings, record: &CommitRecord, ranks: usize, skip: &[String]) {
    for (server, outcome) in on_servers_except(settings, ranks, skip, |client| client.keep(record.waves())) {
        if let Err(e) = outcome {
            eprintln!("grappe: checkpoint server {server} could not drop the waves outside {:?}: {e}", record.waves());
        }
    }
}

/// The newest wave number any server (but those of `skip`) holds for the
/// job (0 if none; a server that does not answer is named on stderr and
/// counts as none).
pub(super) fn newest_on_servers(settings: &FtSettings, ranks: usize, skip: &[String]) -> u64 {
    let mut newest = 0;
    for (server, outcome) in on_servers_except(settings, ranks, skip, CheckpointClient::waves) {
        match outcome {
            Ok(waves) => newest = newest.max(waves.iter().map(|w| w.wave).max().unwrap_or(0)),
            Err(e) => eprintln!("grappe: cannot list the waves of checkpoint server {server}: {e}"),
        }
    }
    newest
}
