//! A host segment: one mapping shared by every rank of a host.
//!
//! Thread ranks share anonymous memory; process ranks share a file under
//! `/dev/shm` that the host leader creates and the others open. Either way
//! the rest of grappe sees the same thing: a base pointer and a length, laid
//! out by [`crate::HostLayout`].

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use memmap2::{MmapOptions, MmapRaw};

use crate::FabricError;

/// Where shared segments of process ranks are created.
pub const SHM_DIR: &str = "/dev/shm";

/// A mapped region shared by all ranks of a host.
///
/// The mapping lives as long as the `Segment`; every pointer handed out by
/// the layout borrows from it, so grappe keeps the segment in an `Arc` for
/// the whole job.
#[derive(Debug)]
pub struct Segment {
    map: MmapRaw,
    path: Option<PathBuf>,
}

impl Segment {
    /// Anonymous, zero-filled memory for ranks that are threads of one process.
    pub fn anonymous(len: usize) -> Result<Segment, FabricError> {
        let map = MmapOptions::new().len(len).map_anon().map_err(|source| segment_error("map", None, len, source))?;
        Ok(Segment { map: MmapRaw::from(map), path: None })
    }

    /// Creates a new zero-filled file segment that other processes can open.
    ///
    /// Fails if the file already exists: a stale segment from another job
    /// must never be reused by accident. The space is reserved now: on a
    /// full tmpfs a sparse file would only fail later, with SIGBUS, at the
    /// first touch of a missing page.
    pub fn create_file(path: &Path, len: usize) -> Result<Segment, FabricError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(|source| segment_error("create", Some(path), len, source))?;
        file.set_len(len as u64).map_err(|source| segment_error("resize", Some(path), len, source))?;
        reserve(&file).map_err(|source| {
            let _ = std::fs::remove_file(path);
            segment_error("reserve space for", Some(path), len, source)
        })?;
        Self::map_file(&file, path, len)
    }

    /// Opens a segment created by another process of the job.
    pub fn open_file(path: &Path) -> Result<Segment, FabricError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|source| segment_error("open", Some(path), 0, source))?;
        let len = file.metadata().map_err(|source| segment_error("open", Some(path), 0, source))?.len() as usize;
        Self::map_file(&file, path, len)
    }

    fn map_file(file: &File, path: &Path, len: usize) -> Result<Segment, FabricError> {
        let map = MmapRaw::map_raw(file).map_err(|source| segment_error("map", Some(path), len, source))?;
        Ok(Segment { map, path: Some(path.to_owned()) })
    }

    /// Removes the file name so that the segment disappears with the last
    /// mapping, even if a process is killed. Anonymous segments have no name.
    pub fn unlink(&self) -> std::io::Result<()> {
        match &self.path {
            Some(path) => std::fs::remove_file(path),
            None => Ok(()),
        }
    }

    /// The file backing the segment, if any.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// First byte of the mapping.
    pub fn base(&self) -> *mut u8 {
        self.map.as_mut_ptr()
    }

    /// Length of the mapping in bytes.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True for an empty mapping (never produced by the constructors above).
    pub fn is_empty(&self) -> bool {
        self.map.len() == 0
    }
}

/// Allocates every block of the file (`posix_fallocate`).
fn reserve(file: &File) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let len = file.metadata()?.len() as libc::off_t;
    // SAFETY: plain syscall on an open descriptor we own.
    match unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len) } {
        0 => Ok(()),
        errno => Err(std::io::Error::from_raw_os_error(errno)),
    }
}

fn segment_error(action: &'static str, path: Option<&Path>, len: usize, source: std::io::Error) -> FabricError {
    FabricError::Segment { action, path: path.map(Path::to_owned), len, source }
}

// SAFETY: the mapping is plain shared memory; every concurrent access to it
// goes through atomics or through regions whose ownership is handed over by
// acquire/release on those atomics (see `ring` and `layout`).
unsafe impl Send for Segment {}
// SAFETY: as above; `Segment` exposes only a raw pointer, never references.
unsafe impl Sync for Segment {}
