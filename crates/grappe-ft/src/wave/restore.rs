//! Restoring a rank at the start of a job: the newest committed wave every
//! rank can restore, from its local copy or its server, and the messages
//! that were in transit at that cut.
//!
//! The protocol ([`recover`]), collective:
//!
//! 1. Rank 0 reads the commit record and shares it. An unreadable record
//!    is said once, by rank 0; the candidates are then the waves of which
//!    the ranks hold images, since any wave whose images are all intact is
//!    a consistent cut (a rank stores its image only once its part of the
//!    wave is whole).
//! 2. The ranks try the candidates newest first until one is restorable by
//!    every rank ([`Step::Chosen`]); none is a fresh start, said so.
//! 3. The next wave number is past every wave any rank or server holds a
//!    file of, so that a new wave never mixes with what an older one left.
//! 4. Rank 0 writes the record from now on: the restored wave, and the
//!    older wave the record kept (never the newer ones, which could not be
//!    restored). Only then does each rank delete its images outside it,
//!    and the servers theirs.

use std::time::Instant;

use serde::de::DeserializeOwned;

use super::Checkpointer;
use super::storing::{SavedMessage, keep_on_servers, newest_on_servers};
use super::team::{Ranks, Step, Team};
use crate::client::CheckpointClient;
use crate::error::{FtError, Result};
use crate::local::{self, CheckpointDir, CommitRecord, RecordState};
use crate::settings::FtSettings;

/// What a job restarts from.
pub(crate) struct Recovery {
    /// The wave restored and this rank's state in it; `None` for a fresh
    /// start.
    pub restored: Option<(u64, Vec<u8>)>,
    /// The commit record from now on.
    pub record: CommitRecord,
    /// The newest wave number used so far: the next wave has the one after.
    pub last_wave: u64,
}

/// Where the candidates of a restore come from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Source {
    /// No record: nothing was committed (or the program does not restore).
    Nothing,
    /// The record's waves.
    Record,
    /// The record is unreadable: the waves the ranks hold images of.
    Images,
}

/// The restore protocol (see the module). With `fresh`, the job starts
/// over whatever is stored (a program that does not restore): only the
/// record and the numbering are set up. Rank 0 does not call the servers
/// of `silent` (they did not answer at the job's start). Collective.
pub(crate) fn recover(team: &dyn Team, settings: &FtSettings, fresh: bool, silent: &[String]) -> Result<Recovery> {
    let dir = CheckpointDir::new(settings.dir.clone());
    let (rank, ranks) = (team.rank(), team.size());
    let FoundRecord { source, record, unreadable } = read_record(team, &dir, fresh)?;
    let candidates = match source {
        Source::Nothing => Vec::new(),
        Source::Record => record.waves().to_vec(),
        Source::Images => dir.local_waves(rank),
    };
    let restored = choose(team, settings, &dir, &candidates)?;
    team.reached(Step::Chosen)?;
    if rank == 0 && restored.is_none() {
        say_starting_over(source, &record);
    }
    let mut newest = dir.newest_wave_number(rank).max(record.newest().unwrap_or(0));
    if rank == 0 && !settings.servers.is_empty() {
        newest = newest.max(newest_on_servers(settings, ranks, silent));
    }
    let last_wave = team.max(newest)?;
    let next = match &restored {
        Some((wave, _)) => record.with_newest(*wave),
        None => CommitRecord::default(),
    };
    replace_record(team, &dir, &next, unreadable || next != record)?;
    dir.retain(rank, next.waves());
    if rank == 0 && !settings.servers.is_empty() {
        keep_on_servers(settings, &next, ranks, silent);
    }
    Ok(Recovery { restored, record: next, last_wave })
}

/// Rank 0 says why a job that had checkpoints starts from the beginning.
fn say_starting_over(source: Source, record: &CommitRecord) {
    match source {
        Source::Record if record.newest().is_some() => eprintln!(
            "grappe: no committed wave ({:?}) can be restored by every rank: starting over from the beginning",
            record.waves()
        ),
        Source::Images => {
            eprintln!("grappe: no wave has an intact image on every rank: starting over from the beginning")
        }
        _ => {}
    }
}

/// Rank 0 writes the record from now on if it `changed`; an error on every
/// rank if it could not (nothing is deleted then).
fn replace_record(team: &dyn Team, dir: &CheckpointDir, next: &CommitRecord, changed: bool) -> Result<()> {
    let mut written = [1u64];
    if team.rank() == 0 && changed {
        if let Err(e) = dir.write_record(next) {
            eprintln!("grappe: cannot write the commit record: {e}");
            written[0] = 0;
        }
    }
    team.share(&mut written)?;
    if written[0] == 0 {
        return Err(FtError::RecordNotWritten { path: dir.record_path() });
    }
    Ok(())
}

/// The commit record as rank 0 found it, on every rank.
struct FoundRecord {
    /// Where the candidates come from.
    source: Source,
    /// The waves it names (none if it is absent or unreadable).
    record: CommitRecord,
    /// It is there but cannot be read: it is replaced whatever happens.
    unreadable: bool,
}

/// Rank 0 reads the record (and says once if it cannot) and shares it.
/// With `fresh` its waves are no candidates.
fn read_record(team: &dyn Team, dir: &CheckpointDir, fresh: bool) -> Result<FoundRecord> {
    // Words: the source, whether unreadable, the number of waves, the waves.
    let mut words = [0u64; 3 + CommitRecord::KEPT];
    if team.rank() == 0 {
        match dir.read_record() {
            RecordState::Absent => {}
            RecordState::Valid(record) => {
                words[0] = 1;
                words[2] = record.waves().len() as u64;
                words[3..3 + record.waves().len()].copy_from_slice(record.waves());
            }
            RecordState::Unreadable(e) => {
                let then = if fresh {
                    "replacing it"
                } else {
                    "restoring the newest wave whose images every rank holds intact"
                };
                eprintln!("grappe: the commit record is unreadable ({e}): {then}");
                (words[0], words[1]) = (2, 1);
            }
        }
    }
    team.share(&mut words)?;
    let waves = words[3..3 + (words[2] as usize).min(CommitRecord::KEPT)].to_vec();
    let record = CommitRecord::new(waves).map_err(FtError::SharedRecord)?;
    let source = match words[0] {
        _ if fresh => Source::Nothing,
        0 => Source::Nothing,
        1 => Source::Record,
        _ => Source::Images,
    };
    Ok(FoundRecord { source, record, unreadable: words[1] == 1 })
}

/// The newest of the candidates (each rank's own, newest first) that
/// every rank can restore, and this rank's state in it.
fn choose(
    team: &dyn Team,
    settings: &FtSettings,
    dir: &CheckpointDir,
    candidates: &[u64],
) -> Result<Option<(u64, Vec<u8>)>> {
    let mut below = u64::MAX;
    loop {
        let wave = team.max(candidates.iter().copied().find(|&w| w < below).unwrap_or(0))?;
        if wave == 0 {
            return Ok(None);
        }
        let fetched = fetch(settings, dir, team.rank(), team.size(), wave);
        if let Err(e) = &fetched {
            eprintln!("grappe: rank {}: cannot restore wave {wave}: {e}", team.rank());
        }
        // The images must also belong to one run of the wave: their tags
        // agree.
        let tag = fetched.as_ref().map_or(0, |(tag, _)| *tag);
        let top = team.max(u64::from(tag))?;
        let same = fetched.is_ok() && u64::from(tag) == top;
        if fetched.is_ok() && !same {
            eprintln!(
                "grappe: rank {}: cannot restore wave {wave}: its image is of another run of that wave (tag {tag:#x}, another rank's {top:#x})",
                team.rank()
            );
        }
        if team.all(same)? {
            return fetched.map(|(_, state)| Some((wave, state)));
        }
        below = wave;
    }
}

/// This rank's image of `wave`, its tag and state: the local copy, else
/// the server's (which then replaces the local copy).
fn fetch(settings: &FtSettings, dir: &CheckpointDir, rank: usize, ranks: usize, wave: u64) -> Result<(u32, Vec<u8>)> {
    let path = dir.image_path(rank, wave);
    let (rank32, ranks32) = (rank as u32, ranks as u32);
    let decoded = |image: &[u8], origin: &std::path::Path| {
        local::decode(image, wave, rank32, ranks32, origin).map(|d| (d.tag, d.state.to_vec()))
    };
    let local = dir.read_image(rank, wave).and_then(|image| decoded(&image, &path));
    let (e, server) = match (local, settings.server_of(rank)) {
        (Ok(state), _) => return Ok(state),
        (Err(e), None) => return Err(e),
        (Err(e), Some(server)) => (e, server),
    };
    eprintln!("grappe: rank {rank}: local copy of wave {wave} unusable ({e}); fetching it from {server}");
    let mut image = Vec::new();
    CheckpointClient::for_job(settings, server)?.get(wave, rank32, &mut image)?;
    let origin = std::path::PathBuf::from(format!("{server}:{}/wave-{wave}/rank-{rank}", settings.name));
    let fetched = decoded(&image, &origin)?;
    if let Err(e) = dir.write_image(rank, wave, &image) {
        eprintln!("grappe: rank {rank}: cannot put back the local copy of wave {wave}: {e}");
    }
    Ok(fetched)
}

impl Checkpointer {
    /// The state of the newest committed wave every rank can restore,
    /// from its local copy or its server; `None` for a fresh start.
    /// Collective; the first call of a rank's checkpointer.
    pub fn restore<S: DeserializeOwned>(&mut self) -> Result<Option<S>> {
        let Some(settings) = self.settings.clone() else { return Ok(None) };
        let started = Instant::now();
        let recovery = recover(&Ranks { ctl: &self.ctl, wave: 0 }, &settings, false, &self.silent_at_start)?;
        self.recovered(recovery.record, recovery.last_wave);
        let Some((chosen, bytes)) = recovery.restored else { return Ok(None) };
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
}
