//! The commit protocol of a wave, once every rank has stored its image
//! (or failed to), as explicit steps ([`Step`]):
//!
//! 1. **Stored**: the ranks agree that every image is stored, locally and
//!    on its server. If one is not, the wave is not committed (and each
//!    rank deletes its image of it).
//! 2. **ServersCommitted**: rank 0 marks the wave committed on every
//!    server. A server that refuses or does not answer fails the wave
//!    here: it is not committed (the ranks delete their images of it).
//! 3. **Recorded**: rank 0 writes the record, the wave and the newest one
//!    before it. This durable write is the commit point.
//! 4. Rank 0 tells every rank whether the wave is committed.
//! 5. **Retired**: each rank deletes its images of the waves the record
//!    does not name.
//! 6. **ServersKept**: rank 0 tells the servers to keep the record's waves
//!    and delete the others.
//!
//! What holds after any step, and so after a crash between two of them:
//! every wave the record names has the image of every rank, locally and on
//! its server (marked committed there, which protects it from the servers'
//! own clean-up). Images are deleted only once the record no longer names
//! their wave; a crash leaves extra files at most, which the next restore
//! deletes (`restore`). A crash after step 2 and before step 3 leaves a
//! wave committed on the servers only: it is not committed, and the next
//! restore has the servers drop it.

use super::storing::{commit_on_servers, keep_on_servers};
use super::team::{Step, Team};
use crate::error::Result;
use crate::local::{CheckpointDir, CommitRecord};
use crate::settings::FtSettings;

/// Commits `wave` if every rank `stored` its image; whether it did.
/// `record` is the job's record, the same on every rank; it becomes the
/// new one if the wave is committed. Collective.
pub(crate) fn commit_wave(
    team: &dyn Team,
    settings: &FtSettings,
    record: &mut CommitRecord,
    wave: u64,
    stored: bool,
) -> Result<bool> {
    let dir = CheckpointDir::new(settings.dir.clone());
    if !team.all(stored)? {
        if team.rank() == 0 {
            eprintln!("grappe: checkpoint wave {wave} not committed: not every rank could store its image (see above)");
        }
        // Its images are of no use, and would fill the disk that just
        // failed a rank.
        dir.retain(team.rank(), record.waves());
        return Ok(false);
    }
    team.reached(Step::Stored)?;
    let next = record.with_newest(wave);
    let mut committed = [0u64];
    if team.rank() == 0 {
        committed[0] = u64::from(record_commit(team, settings, &dir, &next, wave)?);
    }
    team.share(&mut committed)?;
    if committed[0] == 0 {
        dir.retain(team.rank(), record.waves());
        return Ok(false);
    }
    *record = next;
    dir.retain(team.rank(), record.waves());
    team.reached(Step::Retired)?;
    if team.rank() == 0 && !settings.servers.is_empty() {
        keep_on_servers(settings, record, team.size(), &[]);
        team.reached(Step::ServersKept)?;
    }
    Ok(true)
}

/// Rank 0's steps 2 and 3: the servers, then the record. Whether the wave
/// is committed (a failure is said on stderr); an error only if the job
/// was cut short at a step.
fn record_commit(
    team: &dyn Team,
    settings: &FtSettings,
    dir: &CheckpointDir,
    next: &CommitRecord,
    wave: u64,
) -> Result<bool> {
    if let Err(e) = commit_on_servers(settings, wave, team.size()) {
        eprintln!("grappe: checkpoint wave {wave} not committed: {e}");
        return Ok(false);
    }
    team.reached(Step::ServersCommitted)?;
    if let Err(e) = dir.write_record(next) {
        eprintln!("grappe: checkpoint wave {wave} not committed: {e}");
        return Ok(false);
    }
    team.reached(Step::Recorded)?;
    Ok(true)
}
