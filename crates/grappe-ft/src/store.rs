//! Images on the server's disk.
//!
//! ```text
//! DIR/<job>/wave-<n>/rank-<r>.img        a complete image
//! DIR/<job>/wave-<n>/rank-<r>.partial    one being received
//! DIR/<job>/wave-<n>/COMMITTED           the wave is complete
//! ```
//!
//! An image file starts with a 32-byte header, `"GRCKIMG1"`, wave u64,
//! rank u32, CRC-32 u32, size u64 (little-endian), then the bytes. It is
//! received into `.partial`, its header completed, fsynced, renamed, and
//! its directory fsynced before the server acknowledges: an acknowledged
//! image survives a crash of the server. Reading checks the size and the
//! checksum as the bytes go out.
//!
//! Retention follows the job's commit record, which the client sends
//! (`keep`): the waves it names are kept (and marked committed), every
//! other wave of the job is deleted. A committed wave is deleted only that
//! way, so a server never drops a wave the record may still name, even
//! across crashes of the job between its commit steps (`wave::commit`).
//! Waves that never commit (a rank died, a server did not answer) go
//! sooner: when the first image of wave n arrives, the uncommitted waves
//! older than n are deleted.

use std::fs::{self, File};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use parking_lot::Mutex;

use crate::error::{FtError, Result};
use crate::wire::{WaveListing, check_job};

/// Bytes of an image file's header.
pub const HEADER_LEN: usize = 32;
const IMAGE_MAGIC: &[u8; 8] = b"GRCKIMG1";
const COMMITTED: &str = "COMMITTED";

/// The server's directory of images.
pub struct Store {
    root: PathBuf,
    /// Held while a wave directory is created and the old ones deleted.
    waves: Mutex<()>,
}

impl Store {
    /// Opens (creating) the store at `root`, dropping `.partial` files a
    /// crash left behind.
    pub fn open(root: &Path) -> Result<Store> {
        fs::create_dir_all(root).map_err(|e| disk(root, e))?;
        let store = Store { root: root.to_path_buf(), waves: Mutex::new(()) };
        for job in read_dir(root)? {
            for wave in read_dir(&job)? {
                for file in read_dir(&wave)? {
                    if file.extension().is_some_and(|x| x == "partial") {
                        fs::remove_file(&file).map_err(|e| disk(&file, e))?;
                    }
                }
            }
        }
        Ok(store)
    }

    /// The directory of a job's wave.
    pub fn wave_dir(&self, job: &str, wave: u64) -> PathBuf {
        self.root.join(job).join(format!("wave-{wave}"))
    }

    /// The file of a complete image.
    pub fn image_path(&self, job: &str, wave: u64, rank: u32) -> PathBuf {
        self.wave_dir(job, wave).join(format!("rank-{rank}.img"))
    }

    /// Starts receiving an image; creates the wave (and cleans up old
    /// ones) if it is the first image of it.
    pub fn begin_put(&self, job: &str, wave: u64, rank: u32) -> Result<PartialImage> {
        check_job(job)?;
        let dir = self.wave_dir(job, wave);
        if !dir.is_dir() {
            let _guard = self.waves.lock();
            if !dir.is_dir() {
                fs::create_dir_all(&dir).map_err(|e| disk(&dir, e))?;
                sync_dir(dir.parent().expect("a job directory"))?;
                self.retire_old_waves(job, wave)?;
            }
        }
        let path = dir.join(format!("rank-{rank}.partial"));
        let mut file = File::create(&path).map_err(|e| disk(&path, e))?;
        file.write_all(&[0u8; HEADER_LEN]).map_err(|e| disk(&path, e))?;
        Ok(PartialImage { file, path, wave, rank })
    }

    /// Deletes the uncommitted waves older than `wave`: they never
    /// completed, and a job never goes back to a wave it did not commit.
    fn retire_old_waves(&self, job: &str, wave: u64) -> Result<()> {
        for old in self.waves(job)?.iter().filter(|w| w.wave < wave && !w.committed) {
            let dir = self.wave_dir(job, old.wave);
            fs::remove_dir_all(&dir).map_err(|e| disk(&dir, e))?;
        }
        Ok(())
    }

    /// Marks a wave complete, durably.
    pub fn commit(&self, job: &str, wave: u64) -> Result<()> {
        check_job(job)?;
        let dir = self.wave_dir(job, wave);
        if !dir.is_dir() {
            return Err(FtError::Invalid(format!("job {job} has no wave {wave} here to commit")));
        }
        mark_committed(&dir)
    }

    /// Keeps the waves of `keep` that are here, marked committed, and
    /// deletes the job's other waves (the job's record names `keep`).
    pub fn keep(&self, job: &str, keep: &[u64]) -> Result<()> {
        check_job(job)?;
        let _guard = self.waves.lock();
        for held in self.waves(job)? {
            let dir = self.wave_dir(job, held.wave);
            if !keep.contains(&held.wave) {
                fs::remove_dir_all(&dir).map_err(|e| disk(&dir, e))?;
            } else if !held.committed {
                mark_committed(&dir)?;
            }
        }
        sync_dir(&self.root.join(job)).or_else(|e| match &e {
            FtError::Disk { source, .. } if source.kind() == std::io::ErrorKind::NotFound => Ok(()),
            _ => Err(e),
        })
    }

    /// The waves of a job, oldest first.
    pub fn waves(&self, job: &str) -> Result<Vec<WaveListing>> {
        check_job(job)?;
        let mut waves = Vec::new();
        for dir in read_dir(&self.root.join(job))? {
            let Some(wave) = dir.file_name().and_then(|n| n.to_str()?.strip_prefix("wave-")?.parse().ok()) else {
                continue;
            };
            let mut ranks: Vec<u32> = read_dir(&dir)?
                .iter()
                .filter_map(|f| f.file_name()?.to_str()?.strip_prefix("rank-")?.strip_suffix(".img")?.parse().ok())
                .collect();
            ranks.sort_unstable();
            waves.push(WaveListing { wave, committed: dir.join(COMMITTED).is_file(), ranks });
        }
        waves.sort_by_key(|w| w.wave);
        Ok(waves)
    }

    /// Opens a complete image for reading.
    pub fn open_image(&self, job: &str, wave: u64, rank: u32) -> Result<StoredImage> {
        check_job(job)?;
        let path = self.image_path(job, wave, rank);
        let mut file = File::open(&path).map_err(|e| disk(&path, e))?;
        let mut header = [0u8; HEADER_LEN];
        file.read_exact(&mut header).map_err(|e| corrupt(&path, rank, wave, format!("a 32-byte header ({e})")))?;
        let field = |at: usize, n: usize| &header[at..at + n];
        let (stored_wave, stored_rank) = (le_u64(field(8, 8)), le_u32(field(16, 4)));
        if field(0, 8) != IMAGE_MAGIC || (stored_wave, stored_rank) != (wave, rank) {
            let detail =
                format!("a header for rank {rank}, wave {wave}, found one for rank {stored_rank}, wave {stored_wave}");
            return Err(corrupt(&path, rank, wave, detail));
        }
        let (crc, size) = (le_u32(field(20, 4)), le_u64(field(24, 8)));
        let on_disk = file.metadata().map_err(|e| disk(&path, e))?.len();
        if on_disk != HEADER_LEN as u64 + size {
            let detail = format!("{size} bytes after the header, the file has {}", on_disk.saturating_sub(32));
            return Err(corrupt(&path, rank, wave, detail));
        }
        Ok(StoredImage { file, path, wave, rank, size, crc, read: 0, hasher: crc32fast::Hasher::new() })
    }
}

/// An image being received.
pub struct PartialImage {
    file: File,
    path: PathBuf,
    wave: u64,
    rank: u32,
}

impl PartialImage {
    /// Completes the header, makes the image durable and visible.
    pub fn finish(mut self, size: u64, crc: u32) -> Result<()> {
        let mut header = [0u8; HEADER_LEN];
        header[0..8].copy_from_slice(IMAGE_MAGIC);
        header[8..16].copy_from_slice(&self.wave.to_le_bytes());
        header[16..20].copy_from_slice(&self.rank.to_le_bytes());
        header[20..24].copy_from_slice(&crc.to_le_bytes());
        header[24..32].copy_from_slice(&size.to_le_bytes());
        let path = self.path.clone();
        let io = |e| disk(&path, e);
        self.file.seek(SeekFrom::Start(0)).map_err(io)?;
        self.file.write_all(&header).map_err(io)?;
        self.file.sync_all().map_err(io)?;
        let done = self.path.with_extension("img");
        fs::rename(&self.path, &done).map_err(|e| disk(&done, e))?;
        sync_dir(done.parent().expect("a wave directory"))
    }

    /// Drops what was received.
    pub fn abandon(self) {
        let _ = fs::remove_file(&self.path);
    }
}

impl Write for PartialImage {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// A stored image being read; [`StoredImage::verify`] once read to the end.
pub struct StoredImage {
    file: File,
    path: PathBuf,
    wave: u64,
    rank: u32,
    size: u64,
    crc: u32,
    read: u64,
    hasher: crc32fast::Hasher,
}

impl StoredImage {
    /// Bytes of the image.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Whether the bytes read match the checksum stored with them.
    pub fn verify(&self) -> Result<()> {
        let crc = self.hasher.clone().finalize();
        if self.read != self.size || crc != self.crc {
            let detail = format!(
                "{} bytes with checksum {:#010x} expected, read {} bytes with checksum {crc:#010x}",
                self.size, self.crc, self.read
            );
            return Err(corrupt(&self.path, self.rank, self.wave, detail));
        }
        Ok(())
    }
}

impl Read for StoredImage {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = (self.size - self.read).min(buf.len() as u64) as usize;
        let n = self.file.read(&mut buf[..left])?;
        self.hasher.update(&buf[..n]);
        self.read += n as u64;
        Ok(n)
    }
}

fn le_u32(b: &[u8]) -> u32 {
    u32::from_le_bytes(b.try_into().expect("4 bytes"))
}

fn le_u64(b: &[u8]) -> u64 {
    u64::from_le_bytes(b.try_into().expect("8 bytes"))
}

fn disk(path: &Path, source: std::io::Error) -> FtError {
    FtError::Disk { path: path.to_path_buf(), source }
}

fn corrupt(path: &Path, rank: u32, wave: u64, detail: String) -> FtError {
    FtError::Corrupt { path: path.to_path_buf(), rank, wave, detail }
}

/// The entries of a directory (none if it does not exist).
fn read_dir(dir: &Path) -> Result<Vec<PathBuf>> {
    match fs::read_dir(dir) {
        Ok(entries) => entries.map(|e| e.map(|e| e.path()).map_err(|e| disk(dir, e))).collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(disk(dir, e)),
    }
}

/// Writes a wave's commit marker durably.
fn mark_committed(wave_dir: &Path) -> Result<()> {
    let marker = wave_dir.join(COMMITTED);
    let file = File::create(&marker).map_err(|e| disk(&marker, e))?;
    file.sync_all().map_err(|e| disk(&marker, e))?;
    sync_dir(wave_dir)
}

/// Makes a directory's entries (a rename, a new file) durable.
fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(|e| disk(dir, e))
}
