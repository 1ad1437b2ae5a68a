//! What a job keeps in its checkpoint directory: each rank's local copy
//! of its last images, and the record of committed waves.
//!
//! ```text
//! DIR/COMMITTED              "grappe committed waves: 7 6"   (newest first, at most two)
//! DIR/REQUEST                a wave is asked for (by the launcher's scheduler, or `touch`)
//! DIR/WAVE                   the asked-for wave is in progress (REQUEST renamed by rank 0)
//! DIR/rank-<r>/wave-<w>.img  "GRFTIMG1" wave:u64 rank:u32 ranks:u32 len:u64 crc32:u32 pad:u32, then the state
//! ```
//!
//! Every file is written to a temporary name, fsynced, renamed and its
//! directory fsynced: a crash leaves the old version or the new one, never
//! half of one. The same encoded image goes to the checkpoint server, so a
//! copy fetched from there is checked the same way.

use std::fs::{self, File};
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};

use crate::error::{FtError, Result};

const MAGIC: &[u8; 8] = b"GRFTIMG1";
const HEADER: usize = 40;
const COMMIT_FILE: &str = "COMMITTED";
const COMMIT_PREFIX: &str = "grappe committed waves:";
/// Asks rank 0 for a wave.
const REQUEST_FILE: &str = "REQUEST";
/// A requested wave in progress.
const WAVE_FILE: &str = "WAVE";

/// Encodes a rank's image of a wave.
pub fn encode(wave: u64, rank: u32, ranks: u32, state: &[u8]) -> Vec<u8> {
    encode_with(wave, rank, ranks, state.len(), |out| {
        out.extend_from_slice(state);
        Ok::<(), std::convert::Infallible>(())
    })
    .unwrap_or_else(|never| match never {})
}

/// Encodes a rank's image with the state written by `write` straight
/// after the header (no copy of a state that may be gigabytes);
/// `size_hint` bytes are reserved for it.
pub fn encode_with<E>(
    wave: u64,
    rank: u32,
    ranks: u32,
    size_hint: usize,
    write: impl FnOnce(&mut Vec<u8>) -> std::result::Result<(), E>,
) -> std::result::Result<Vec<u8>, E> {
    let mut image = Vec::new();
    start_image(&mut image, wave, rank, ranks, size_hint);
    write(&mut image)?;
    seal(&mut image);
    Ok(image)
}

/// The header of an image, with room for `size_hint` bytes of state to be
/// appended before [`seal`] fills in their length and checksum.
///
/// `image` is emptied first and its capacity kept: a rank reuses one
/// buffer from wave to wave (see `wave::Checkpointer`).
pub fn start_image(image: &mut Vec<u8>, wave: u64, rank: u32, ranks: u32, size_hint: usize) {
    image.clear();
    image.reserve(HEADER + size_hint);
    image.extend_from_slice(MAGIC);
    image.extend_from_slice(&wave.to_le_bytes());
    image.extend_from_slice(&rank.to_le_bytes());
    image.extend_from_slice(&ranks.to_le_bytes());
    image.extend_from_slice(&[0; 16]);
}

/// Writes the length and checksum of the state behind the header.
pub fn seal(image: &mut [u8]) {
    let state_len = (image.len() - HEADER) as u64;
    let crc = crc32fast::hash(&image[HEADER..]);
    image[24..32].copy_from_slice(&state_len.to_le_bytes());
    image[32..36].copy_from_slice(&crc.to_le_bytes());
}

/// The state in an image, if it is the image of (wave, rank) in a job of
/// `ranks` ranks and its checksum holds; `origin` names it in errors.
pub fn decode<'a>(image: &'a [u8], wave: u64, rank: u32, ranks: u32, origin: &Path) -> Result<&'a [u8]> {
    let corrupt = |detail: String| FtError::Corrupt { path: origin.to_path_buf(), rank, wave, detail };
    if image.len() < HEADER || &image[..8] != MAGIC {
        return Err(corrupt(format!("a {HEADER}-byte header starting \"GRFTIMG1\"")));
    }
    let u64_at = |at: usize| u64::from_le_bytes(image[at..at + 8].try_into().expect("8 bytes"));
    let u32_at = |at: usize| u32::from_le_bytes(image[at..at + 4].try_into().expect("4 bytes"));
    let found = (u64_at(8), u32_at(16), u32_at(20));
    if found != (wave, rank, ranks) {
        return Err(corrupt(format!(
            "the image of wave {wave}, rank {rank} of {ranks}, found wave {}, rank {} of {}",
            found.0, found.1, found.2
        )));
    }
    let (len, crc) = (u64_at(24), u32_at(32));
    let state = &image[HEADER..];
    if state.len() as u64 != len {
        return Err(corrupt(format!("{len} bytes of state, found {}", state.len())));
    }
    let actual = crc32fast::hash(state);
    if actual != crc {
        return Err(corrupt(format!("checksum {crc:#010x}, found {actual:#010x}")));
    }
    Ok(state)
}

/// A job's checkpoint directory.
#[derive(Clone, Debug)]
pub struct CheckpointDir {
    dir: PathBuf,
}

impl CheckpointDir {
    pub fn new(dir: PathBuf) -> Self {
        CheckpointDir { dir }
    }

    /// The local copy of a rank's image.
    pub fn image_path(&self, rank: usize, wave: u64) -> PathBuf {
        self.dir.join(format!("rank-{rank}")).join(format!("wave-{wave}.img"))
    }

    /// Stores a rank's encoded image durably.
    pub fn write_image(&self, rank: usize, wave: u64, image: &[u8]) -> Result<()> {
        write_durably(&self.image_path(rank, wave), image)
    }

    /// Reads a rank's encoded image.
    pub fn read_image(&self, rank: usize, wave: u64) -> Result<Vec<u8>> {
        let path = self.image_path(rank, wave);
        fs::read(&path).map_err(|e| FtError::Disk { path, source: e })
    }

    /// Deletes the rank's images of waves not in `keep`.
    pub fn retain(&self, rank: usize, keep: &[u64]) {
        let Ok(entries) = fs::read_dir(self.dir.join(format!("rank-{rank}"))) else { return };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let wave = name.to_str().and_then(|n| n.strip_prefix("wave-")?.strip_suffix(".img")?.parse::<u64>().ok());
            if wave.is_some_and(|w| !keep.contains(&w)) {
                let _ = fs::remove_file(entry.path());
            }
        }
    }

    /// Locks the directory for this job (held until the returned file is
    /// closed, by the process's end at the latest): two jobs sharing a
    /// directory would delete each other's images.
    pub fn lock(&self) -> Result<Flock<File>> {
        let path = self.dir.join("LOCK");
        fs::create_dir_all(&self.dir).map_err(|e| FtError::Disk { path: self.dir.clone(), source: e })?;
        let file = File::create(&path).map_err(|e| FtError::Disk { path: path.clone(), source: e })?;
        Flock::lock(file, FlockArg::LockExclusiveNonblock).map_err(|_| {
            FtError::Settings(format!(
                "checkpoint directory {} is in use by another running job (its rank 0 holds {})",
                self.dir.display(),
                path.display()
            ))
        })
    }

    /// Asks for a wave at the next agreement (what the launcher's scheduler
    /// does; `touch DIR/REQUEST` does the same).
    pub fn request_wave(&self) -> Result<()> {
        let path = self.dir.join(REQUEST_FILE);
        fs::create_dir_all(&self.dir).map_err(|e| FtError::Disk { path: self.dir.clone(), source: e })?;
        File::create(&path).map(drop).map_err(|e| FtError::Disk { path, source: e })
    }

    /// Takes a request for a wave now: `REQUEST` becomes `WAVE` until
    /// [`CheckpointDir::wave_over`].
    pub fn take_request(&self) -> bool {
        fs::rename(self.dir.join(REQUEST_FILE), self.dir.join(WAVE_FILE)).is_ok()
    }

    /// The wave rank 0 took is over (committed, failed or skipped); also
    /// clears what a rank 0 that died in a wave left.
    pub fn wave_over(&self) {
        let _ = fs::remove_file(self.dir.join(WAVE_FILE));
    }

    /// A wave was asked for and is not over yet.
    pub fn wave_pending(&self) -> bool {
        self.dir.join(REQUEST_FILE).exists() || self.dir.join(WAVE_FILE).exists()
    }

    /// The committed waves, newest first (none if never committed).
    pub fn committed(&self) -> Result<Vec<u64>> {
        let path = self.dir.join(COMMIT_FILE);
        let text = match fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(FtError::Disk { path, source: e }),
        };
        let bad = || FtError::Protocol {
            source_name: path.display().to_string(),
            offset: 0,
            expected: format!("\"{COMMIT_PREFIX} N [M]\", found {:?}", text.trim()),
        };
        let waves = text.trim().strip_prefix(COMMIT_PREFIX).ok_or_else(bad)?;
        waves.split_whitespace().map(|w| w.parse().map_err(|_| bad())).collect()
    }

    /// Records `wave` as the newest committed wave (keeping the one before).
    pub fn commit(&self, wave: u64) -> Result<Vec<u64>> {
        let mut waves = vec![wave];
        waves.extend(self.committed()?.into_iter().filter(|&w| w < wave).take(1));
        let text = format!("{COMMIT_PREFIX} {}\n", waves.iter().map(u64::to_string).collect::<Vec<_>>().join(" "));
        write_durably(&self.dir.join(COMMIT_FILE), text.as_bytes())?;
        Ok(waves)
    }
}

/// Writes a file under a temporary name, fsyncs it, renames it and fsyncs
/// its directory.
fn write_durably(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().expect("files of the checkpoint directory have a parent");
    let disk = |p: &Path| {
        let p = p.to_path_buf();
        move |e| FtError::Disk { path: p, source: e }
    };
    fs::create_dir_all(dir).map_err(disk(dir))?;
    let partial = path.with_extension("partial");
    if let Err(e) = grappe_direct::write_synced(&partial, bytes) {
        // A full disk must not stay full of what could not be written.
        let _ = fs::remove_file(&partial);
        return Err(disk(&partial)(e));
    }
    fs::rename(&partial, path).map_err(disk(path))?;
    File::open(dir).and_then(|d| d.sync_all()).map_err(disk(dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_locked_directory_refuses_a_second_job_until_the_first_lets_go() {
        let scratch = grappe_testkit::scratch("ft-local-lock");
        let dir = CheckpointDir::new(scratch.to_path_buf());
        let first = dir.lock().expect("a free directory locks");
        let err = dir.lock().expect_err("the directory is held");
        assert!(err.to_string().contains("in use by another running job"), "{err}");
        drop(first);
        dir.lock().expect("the lock went with its holder");
    }
}
