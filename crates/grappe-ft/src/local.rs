//! What a job keeps in its checkpoint directory: each rank's local copy
//! of its last images, and the record of committed waves.
//!
//! ```text
//! DIR/COMMITTED              "grappe committed waves: 7 6"   (the commit record: newest first, at most two)
//! DIR/REQUEST                a wave is asked for (by the launcher's scheduler, or `touch`)
//! DIR/WAVE                   the asked-for wave is in progress (REQUEST renamed by rank 0)
//! DIR/rank-<r>/wave-<w>.img  "GRFTIMG1" wave:u64 rank:u32 ranks:u32 len:u64 crc32:u32 tag:u32, then the state
//! ```
//!
//! The tag is drawn by rank 0 for each wave and is the same in every
//! rank's image of it: a restore takes a wave only if its images agree,
//! so images of two runs of one wave number (a job that restarted before
//! its servers could tell it which numbers were used) never mix. Images
//! written before tags existed hold 0 there.
//!
//! Every file is written to a temporary name, fsynced, renamed and its
//! directory fsynced: a crash leaves the old version or the new one, never
//! half of one. The same encoded image goes to the checkpoint server, so a
//! copy fetched from there is checked the same way.
//!
//! The commit record is the authority on what the job can restart from:
//! a wave is committed once the record names it, and images are deleted
//! only once the record no longer names their wave (`wave::commit`).

use std::borrow::Cow;
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

/// Encodes a rank's image of a wave (of tag `tag`).
pub fn encode(wave: u64, rank: u32, ranks: u32, tag: u32, state: &[u8]) -> Vec<u8> {
    encode_with(wave, rank, ranks, tag, state.len(), |out| {
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
    tag: u32,
    size_hint: usize,
    write: impl FnOnce(&mut Vec<u8>) -> std::result::Result<(), E>,
) -> std::result::Result<Vec<u8>, E> {
    let mut image = Vec::new();
    start_image(&mut image, wave, rank, ranks, tag, size_hint);
    write(&mut image)?;
    seal(&mut image);
    Ok(image)
}

/// The header of an image, with room for `size_hint` bytes of state to be
/// appended before [`seal`] fills in their length and checksum.
///
/// `image` is emptied first and its capacity kept: a rank reuses one
/// buffer from wave to wave (see `wave::Checkpointer`).
pub fn start_image(image: &mut Vec<u8>, wave: u64, rank: u32, ranks: u32, tag: u32, size_hint: usize) {
    image.clear();
    image.reserve(HEADER + size_hint);
    image.extend_from_slice(MAGIC);
    image.extend_from_slice(&wave.to_le_bytes());
    image.extend_from_slice(&rank.to_le_bytes());
    image.extend_from_slice(&ranks.to_le_bytes());
    image.extend_from_slice(&[0; 12]);
    image.extend_from_slice(&tag.to_le_bytes());
}

/// A checked image.
#[derive(Debug, PartialEq, Eq)]
pub struct Decoded<'a> {
    /// The tag of the wave it belongs to.
    pub tag: u32,
    /// The state.
    pub state: &'a [u8],
}

/// Writes the length and checksum of the state behind the header.
pub fn seal(image: &mut [u8]) {
    let state_len = (image.len() - HEADER) as u64;
    let crc = crc32fast::hash(&image[HEADER..]);
    image[24..32].copy_from_slice(&state_len.to_le_bytes());
    image[32..36].copy_from_slice(&crc.to_le_bytes());
}

/// The state in an image, and its wave's tag, if it is the image of
/// (wave, rank) in a job of `ranks` ranks and its checksum holds; `origin`
/// names it in errors.
pub fn decode<'a>(image: &'a [u8], wave: u64, rank: u32, ranks: u32, origin: &Path) -> Result<Decoded<'a>> {
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
    Ok(Decoded { tag: u32_at(36), state })
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

    /// Deletes the rank's images (whole or half written) of waves not in
    /// `keep`.
    pub fn retain(&self, rank: usize, keep: &[u64]) {
        for (wave, _, path) in self.rank_files(rank) {
            if !keep.contains(&wave) {
                let _ = fs::remove_file(path);
            }
        }
    }

    /// The waves of which the rank holds a whole image file (intact or
    /// not), newest first.
    pub fn local_waves(&self, rank: usize) -> Vec<u64> {
        let mut waves: Vec<u64> = self.rank_files(rank).into_iter().filter(|f| f.1).map(|f| f.0).collect();
        waves.sort_unstable_by(|a, b| b.cmp(a));
        waves
    }

    /// The newest wave any file of the rank belongs to (0 if none): a new
    /// wave must have a larger number, so that it never mixes with what
    /// a wave cut short left.
    pub fn newest_wave_number(&self, rank: usize) -> u64 {
        self.rank_files(rank).into_iter().map(|f| f.0).max().unwrap_or(0)
    }

    /// The rank's image files: (wave, whole, path); `.partial` files are
    /// the half-written ones.
    fn rank_files(&self, rank: usize) -> Vec<(u64, bool, PathBuf)> {
        let Ok(entries) = fs::read_dir(self.dir.join(format!("rank-{rank}"))) else { return Vec::new() };
        let mut files = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(rest) = name.to_str().and_then(|n| n.strip_prefix("wave-")) else { continue };
            let (number, whole) = match (rest.strip_suffix(".img"), rest.strip_suffix(".partial")) {
                (Some(n), _) => (n, true),
                (None, Some(n)) => (n, false),
                (None, None) => continue,
            };
            if let Ok(wave) = number.parse::<u64>() {
                files.push((wave, whole, entry.path()));
            }
        }
        files
    }

    /// Locks the directory for this job (held until the returned file is
    /// closed, by the process's end at the latest): two jobs sharing a
    /// directory would delete each other's images.
    pub fn lock(&self) -> Result<Flock<File>> {
        let path = self.dir.join("LOCK");
        fs::create_dir_all(&self.dir).map_err(|e| FtError::Disk { path: self.dir.clone(), source: e })?;
        let file = File::create(&path).map_err(|e| FtError::Disk { path: path.clone(), source: e })?;
        Flock::lock(file, FlockArg::LockExclusiveNonblock)
            .map_err(|_| FtError::DirectoryInUse { dir: self.dir.clone(), lock: path })
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

    /// The commit record's file.
    pub fn record_path(&self) -> PathBuf {
        self.dir.join(COMMIT_FILE)
    }

    /// The commit record as it is on disk.
    pub fn read_record(&self) -> RecordState {
        let path = self.record_path();
        match fs::read(&path) {
            Ok(bytes) => match CommitRecord::parse(&bytes) {
                Ok(record) => RecordState::Valid(record),
                Err(error) => RecordState::Unreadable(FtError::Record { path, error }),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => RecordState::Absent,
            Err(e) => RecordState::Unreadable(FtError::Disk { path, source: e }),
        }
    }

    /// Replaces the commit record, durably: the commit point of a wave.
    pub fn write_record(&self, record: &CommitRecord) -> Result<()> {
        write_durably(&self.record_path(), record.to_text().as_bytes())
    }
}

/// The commit record as read from disk.
#[derive(Debug)]
pub enum RecordState {
    /// No record: no wave was ever committed in this directory.
    Absent,
    /// The committed waves.
    Valid(CommitRecord),
    /// A record that cannot be read or parsed (the error says why).
    Unreadable(FtError),
}

/// The waves a job can restart from, newest first: the newest committed
/// wave and the one before it, at most (MPICH-V keeps two).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommitRecord {
    waves: Vec<u64>,
}

impl CommitRecord {
    /// Waves a record keeps.
    pub const KEPT: usize = 2;

    /// A record of `waves`, newest first: at most [`CommitRecord::KEPT`]
    /// wave numbers above 0, each older than the one before.
    pub fn new(waves: Vec<u64>) -> std::result::Result<CommitRecord, BadWaves> {
        let decreasing = waves.windows(2).all(|pair| pair[0] > pair[1]);
        if waves.len() > Self::KEPT || !decreasing || waves.contains(&0) {
            return Err(BadWaves { waves });
        }
        Ok(CommitRecord { waves })
    }

    /// The waves, newest first.
    pub fn waves(&self) -> &[u64] {
        &self.waves
    }

    /// The newest committed wave.
    pub fn newest(&self) -> Option<u64> {
        self.waves.first().copied()
    }

    /// The record once `wave` is the newest committed wave: it, and the
    /// newest older wave this record keeps (the waves newer than `wave`,
    /// which a restore could not use, are dropped).
    pub fn with_newest(&self, wave: u64) -> CommitRecord {
        let mut waves = vec![wave];
        waves.extend(self.waves.iter().copied().filter(|&w| w < wave).take(Self::KEPT - 1));
        CommitRecord { waves }
    }

    /// The record's text.
    pub fn to_text(&self) -> String {
        let mut text = COMMIT_PREFIX.to_owned();
        self.waves.iter().for_each(|w| text.push_str(&format!(" {w}")));
        text.push('\n');
        text
    }

    /// Parses a record's text; where it is not one, what was expected.
    pub fn parse(bytes: &[u8]) -> std::result::Result<CommitRecord, RecordError> {
        let refuse = |offset: usize, expected: Cow<'static, str>| RecordError {
            offset,
            expected,
            found: String::from_utf8_lossy(&bytes[..bytes.len().min(RecordError::SHOWN)]).into_owned(),
        };
        let text = std::str::from_utf8(bytes).map_err(|e| refuse(e.valid_up_to(), "UTF-8 text".into()))?;
        let start = text.len() - text.trim_start().len();
        let numbers = text.trim().strip_prefix(COMMIT_PREFIX).ok_or_else(|| refuse(start, "its first words".into()))?;
        let numbers_at = start + COMMIT_PREFIX.len();
        let mut waves = Vec::new();
        for word in numbers.split_whitespace() {
            // A word of `numbers`, which is a slice of `text`.
            let at = word.as_ptr() as usize - text.as_ptr() as usize;
            waves.push(word.parse::<u64>().map_err(|_| refuse(at, format!("a wave number, not {word:?}").into()))?);
        }
        CommitRecord::new(waves).map_err(|e| refuse(numbers_at, e.to_string().into()))
    }
}

/// Waves no commit record holds: more than [`CommitRecord::KEPT`], a 0, or
/// not newest first.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("at most {} wave numbers above 0, newest first, not {waves:?}", CommitRecord::KEPT)]
pub struct BadWaves {
    /// The waves given.
    pub waves: Vec<u64>,
}

/// Bytes that are not a commit record's text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("\"{COMMIT_PREFIX} N [M]\" ({expected} at byte {offset}), found {found:?}")]
pub struct RecordError {
    /// Where in the bytes the record stops being one.
    pub offset: usize,
    /// What should have been there.
    pub expected: Cow<'static, str>,
    /// The record's first bytes ([`RecordError::SHOWN`] at most).
    pub found: String,
}

impl RecordError {
    /// Bytes of a bad record shown in its error.
    pub const SHOWN: usize = 80;
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
    use proptest::prelude::*;

    fn record() -> impl Strategy<Value = CommitRecord> {
        prop::collection::btree_set(1u64.., 0..=CommitRecord::KEPT)
            .prop_map(|waves| CommitRecord::new(waves.into_iter().rev().collect()).unwrap())
    }

    proptest! {
        #[test]
        fn records_read_back_as_written(record in record()) {
            prop_assert_eq!(CommitRecord::parse(record.to_text().as_bytes()), Ok(record));
        }

        /// Whatever the bytes, parsing says what it expected or gives a
        /// record that keeps the rules (at most two waves, newest first).
        #[test]
        fn any_bytes_parse_to_a_valid_record_or_a_reason(bytes in prop::collection::vec(any::<u8>(), 0..80)) {
            match CommitRecord::parse(&bytes) {
                Ok(record) => prop_assert_eq!(CommitRecord::new(record.waves().to_vec()), Ok(record)),
                Err(expected) => prop_assert!(expected.to_string().contains("grappe committed waves: N [M]"), "{}", expected),
            }
        }

        /// A commit keeps the new wave and the newest older one; waves
        /// newer than it (which a restore could not use) are dropped.
        #[test]
        fn a_new_wave_keeps_the_newest_older_one(record in record(), wave in 1u64..) {
            let next = record.with_newest(wave);
            let older = record.waves().iter().copied().find(|&w| w < wave);
            prop_assert_eq!(next.waves(), &std::iter::once(wave).chain(older).collect::<Vec<_>>()[..]);
        }
    }

    #[test]
    fn malformed_records_are_refused_with_what_was_found() {
        for bad in
            ["grappe committed waves: seven", "grappe committed waves: 3 5", "grappe committed waves: 4 3 2", "x"]
        {
            let err = CommitRecord::parse(bad.as_bytes()).unwrap_err();
            assert!(err.to_string().contains(&format!("{bad:?}")), "{err}");
        }
        assert_eq!(CommitRecord::parse(b"grappe committed waves:\n"), Ok(CommitRecord::default()));
    }

    #[test]
    fn a_malformed_record_says_at_which_byte_and_what_it_expected() {
        for (bad, offset, expected) in [
            (&b"grappe committed waves: 7 seven"[..], 26, "a wave number, not \"seven\""),
            (b" grappe committed waves: 3 5\n", 24, "at most 2 wave numbers above 0, newest first, not [3, 5]"),
            (b"grappe waves: 3", 0, "its first words"),
            (b"grappe committed waves: 3\xff", 25, "UTF-8 text"),
        ] {
            let err = CommitRecord::parse(bad).unwrap_err();
            assert_eq!((err.offset, &*err.expected), (offset, expected), "{err}");
        }
        let long = format!("{COMMIT_PREFIX} {}", "9 ".repeat(100));
        assert_eq!(CommitRecord::parse(long.as_bytes()).unwrap_err().found.len(), RecordError::SHOWN);
        assert_eq!(CommitRecord::new(vec![0]), Err(BadWaves { waves: vec![0] }));
    }

    #[test]
    fn images_carry_their_waves_tag_and_damage_is_caught() {
        let image = encode(7, 2, 4, 0xabcd, b"state");
        let path = Path::new("img");
        assert_eq!(decode(&image, 7, 2, 4, path).unwrap(), Decoded { tag: 0xabcd, state: b"state" });
        assert!(decode(&image, 8, 2, 4, path).is_err(), "another wave");
        let mut flipped = image.clone();
        flipped[HEADER + 1] ^= 1;
        assert!(decode(&flipped, 7, 2, 4, path).unwrap_err().to_string().contains("checksum"));
    }

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
