//! The file system under MPI-IO: POSIX files on the path given, read and
//! written at explicit offsets (`pread`/`pwrite`), as ROMIO's UFS driver
//! does. A file system shared between hosts is the user's to provide.

use std::ffi::c_int;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use nix::fcntl::{FcntlArg, fcntl};

use crate::abi::class;
use crate::errors::MpiError;

use super::view::Segment;

/// MPI's access modes (`MPI_MODE_*`).
pub mod mode {
    use std::ffi::c_int;
    pub const CREATE: c_int = 1;
    pub const RDONLY: c_int = 2;
    pub const WRONLY: c_int = 4;
    pub const RDWR: c_int = 8;
    pub const DELETE_ON_CLOSE: c_int = 16;
    pub const EXCL: c_int = 64;
    pub const APPEND: c_int = 128;
    pub const SEQUENTIAL: c_int = 256;
    /// Every mode MPI defines (`MPI_MODE_UNIQUE_OPEN`, 32, among them:
    /// a hint that changes nothing here).
    pub const ALL: c_int = 511;
}

/// What is wrong with an access mode, if anything (ROMIO's checks, in
/// its order): an `MPI_ERR_AMODE` message.
pub fn amode_problem(amode: c_int) -> Option<String> {
    let access = [mode::RDONLY, mode::WRONLY, mode::RDWR].iter().filter(|&&m| amode & m != 0).count();
    if amode & !mode::ALL != 0 {
        return Some(format!("access mode {amode:#x} has bits no MPI_MODE_* constant has ({:#x})", amode & !mode::ALL));
    }
    if access != 1 {
        return Some(format!(
            "access mode {amode:#x} must have exactly one of MPI_MODE_RDONLY, MPI_MODE_WRONLY and MPI_MODE_RDWR \
             (it has {access})"
        ));
    }
    if amode & mode::RDONLY != 0 && amode & (mode::CREATE | mode::EXCL) != 0 {
        return Some(format!(
            "access mode {amode:#x}: MPI_MODE_RDONLY cannot go with MPI_MODE_CREATE or MPI_MODE_EXCL"
        ));
    }
    if amode & mode::RDWR != 0 && amode & mode::SEQUENTIAL != 0 {
        return Some(format!("access mode {amode:#x}: MPI_MODE_RDWR cannot go with MPI_MODE_SEQUENTIAL"));
    }
    None
}

/// The prefixes ROMIO knows for file systems it has drivers for; grappe
/// has the POSIX one, `ufs:` (and `nfs:`, the same here).
const POSIX_PREFIXES: [&str; 2] = ["ufs:", "nfs:"];
const OTHER_PREFIXES: [&str; 17] = [
    "pfs:", "piofs:", "pvfs:", "pvfs2:", "testfs:", "ftp:", "gsiftp:", "xfs:", "sfs:", "hfs:", "panfs:", "gridftp:",
    "lustre:", "bg:", "bgl:", "gpfs:", "daos:",
];

/// The path of a file name: without a `ufs:` prefix; a prefix naming a
/// file system grappe has no driver for is an `MPI_ERR_IO`.
pub fn resolve(name: &str) -> Result<PathBuf, MpiError> {
    if let Some(rest) = POSIX_PREFIXES.iter().find_map(|p| name.strip_prefix(p)) {
        return Ok(PathBuf::from(rest));
    }
    if let Some(prefix) = OTHER_PREFIXES.iter().find(|p| name.starts_with(*p)) {
        return Err(MpiError::new(
            class::IO,
            format!("{name:?}: grappe has no driver for the file system {prefix} (it has ufs:, for POSIX files)"),
        ));
    }
    if name.is_empty() {
        return Err(MpiError::new(class::BAD_FILE, "the file name is empty"));
    }
    Ok(PathBuf::from(name))
}

/// The MPI error class of a failed system call, as ROMIO gives it.
pub fn class_of_errno(error: &io::Error) -> c_int {
    match error.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => class::ACCESS,
        Some(libc::ENAMETOOLONG) | Some(libc::EISDIR) => class::BAD_FILE,
        Some(libc::ENOENT) | Some(libc::ENOTDIR) => class::NO_SUCH_FILE,
        Some(libc::EROFS) => class::READ_ONLY,
        Some(libc::EEXIST) => class::FILE_EXISTS,
        Some(libc::ENOSPC) => class::NO_SPACE,
        Some(libc::EDQUOT) => class::QUOTA,
        _ => class::IO,
    }
}

/// An error of a system call on `path`: its class and what failed.
pub fn os_error(what: &str, path: &Path, error: &io::Error) -> MpiError {
    MpiError::new(class_of_errno(error), format!("cannot {what} {}: {error}", path.display()))
}

/// Opens `path` for the access of `amode`; creates it if `create` (and
/// it must not exist if `amode` has `MPI_MODE_EXCL`).
pub fn open(path: &Path, amode: c_int, create: bool) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(amode & mode::WRONLY == 0).write(amode & mode::RDONLY == 0);
    if create {
        match amode & mode::EXCL != 0 {
            true => options.create_new(true),
            false => options.create(true),
        };
    }
    options.mode(0o666).custom_flags(libc::O_CLOEXEC);
    let file = options.open(path)?;
    if file.metadata()?.is_dir() {
        return Err(io::Error::from_raw_os_error(libc::EISDIR));
    }
    Ok(file)
}

/// A failed read or write: the system's error and where it struck.
#[derive(Debug)]
pub struct AccessError {
    pub offset: u64,
    pub len: u64,
    pub error: io::Error,
}

/// The largest hole between two ranges that one read spans (the bytes of
/// the hole are read and dropped): about what a system call costs in
/// copying time, so that spanning never costs more than it saves.
const SIEVE_GAP: u64 = 4 << 10;
/// The most bytes one spanning read covers.
const SIEVE_WINDOW: u64 = 4 << 20;

/// Reads the file's bytes of `segments` into `into`, in order, until
/// they are all read or the file ends: the bytes read. Ranges separated
/// by small holes (a view of scattered etypes) are read by one `pread`
/// of the span around them, as ROMIO's data sieving does.
pub fn read_segments(
    file: &File,
    segments: impl Iterator<Item = Segment>,
    into: &mut [u8],
) -> Result<usize, AccessError> {
    let mut reader = SievingReader { file, into, at: 0, batch: Vec::new(), window: Vec::new() };
    for segment in segments {
        if !reader.joins(segment) && !reader.flush()? {
            return Ok(reader.at);
        }
        reader.batch.push(segment);
    }
    reader.flush()?;
    Ok(reader.at)
}

/// What [`read_segments`] keeps between ranges.
struct SievingReader<'a> {
    file: &'a File,
    into: &'a mut [u8],
    /// Bytes of `into` read.
    at: usize,
    /// Ranges to read by one spanning read.
    batch: Vec<Segment>,
    /// Where a spanning read lands.
    window: Vec<u8>,
}

impl SievingReader<'_> {
    /// Whether `next` may be read with the ranges held.
    fn joins(&self, next: Segment) -> bool {
        match (self.batch.first(), self.batch.last()) {
            (Some(first), Some(last)) => {
                next.offset >= last.end()
                    && next.offset - last.end() <= SIEVE_GAP
                    && next.end() - first.offset <= SIEVE_WINDOW
            }
            _ => true,
        }
    }

    /// Reads the ranges held: false if the file ended before their end.
    fn flush(&mut self) -> Result<bool, AccessError> {
        let batch = std::mem::take(&mut self.batch);
        let (Some(first), Some(last)) = (batch.first().copied(), batch.last().copied()) else {
            return Ok(true);
        };
        let failed = |error| AccessError { offset: first.offset, len: last.end() - first.offset, error };
        if batch.len() == 1 {
            let wanted = first.len as usize;
            let got = read_fully(self.file, &mut self.into[self.at..self.at + wanted], first.offset).map_err(failed)?;
            self.at += got;
            return Ok(got == wanted);
        }
        self.window.resize((last.end() - first.offset) as usize, 0);
        let got = read_fully(self.file, &mut self.window, first.offset).map_err(failed)?;
        for segment in batch {
            let from = (segment.offset - first.offset) as usize;
            let available = got.saturating_sub(from).min(segment.len as usize);
            self.into[self.at..self.at + available].copy_from_slice(&self.window[from..from + available]);
            self.at += available;
            if available < segment.len as usize {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// Reads at `offset` until `into` is full or the file ends: the bytes read.
fn read_fully(file: &File, into: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut done = 0;
    while done < into.len() {
        match file.read_at(&mut into[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// Writes `from` to the file's bytes of `segments`, in order.
pub fn write_segments(file: &File, segments: impl Iterator<Item = Segment>, from: &[u8]) -> Result<(), AccessError> {
    let mut at = 0;
    for segment in segments {
        let len = segment.len as usize;
        file.write_all_at(&from[at..at + len], segment.offset).map_err(|error| AccessError {
            offset: segment.offset,
            len: segment.len,
            error,
        })?;
        at += len;
    }
    Ok(())
}

/// Makes the file at least `size` bytes long, with its blocks allocated.
pub fn preallocate(file: &File, size: u64) -> io::Result<()> {
    let current = file.metadata()?.len();
    if size <= current {
        return Ok(());
    }
    let len = i64::try_from(size - current).map_err(|_| io::Error::from_raw_os_error(libc::EFBIG))?;
    // SAFETY: a plain system call on a descriptor the file owns.
    match unsafe { libc::posix_fallocate(std::os::fd::AsRawFd::as_raw_fd(file), current as i64, len) } {
        0 => Ok(()),
        // File systems without fallocate (some network ones): the size,
        // at least, as MPI_File_get_size reports it.
        libc::EOPNOTSUPP | libc::EINVAL => file.set_len(size),
        errno => Err(io::Error::from_raw_os_error(errno)),
    }
}

/// A lock on a byte range of a file, shared (reads) or exclusive
/// (writes), between the processes that open it (on a shared file system
/// too, where it supports POSIX locks): released when dropped. Locks are
/// those of the open file description (`F_OFD_SETLKW`), so that another
/// descriptor the process has on the file does not release them.
pub struct RangeLock<'a> {
    file: &'a File,
    start: u64,
    len: u64,
}

impl<'a> RangeLock<'a> {
    /// Waits for the range `start..start + len` (`len` 0: to the end of
    /// the file and beyond).
    pub fn take(file: &'a File, start: u64, len: u64, exclusive: bool) -> io::Result<RangeLock<'a>> {
        let kind = if exclusive { libc::F_WRLCK } else { libc::F_RDLCK };
        set_lock(file, kind, start, len)?;
        Ok(RangeLock { file, start, len })
    }
}

impl Drop for RangeLock<'_> {
    fn drop(&mut self) {
        // Unlocking a range this description holds does not fail.
        let _ = set_lock(self.file, libc::F_UNLCK, self.start, self.len);
    }
}

fn set_lock(file: &File, kind: c_int, start: u64, len: u64) -> io::Result<()> {
    // SAFETY: `flock` is plain data, all zeroes a valid value.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = kind as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    lock.l_start = start as libc::off_t;
    lock.l_len = len as libc::off_t;
    loop {
        match fcntl(file.as_fd(), FcntlArg::F_OFD_SETLKW(&lock)) {
            Ok(_) => return Ok(()),
            Err(nix::errno::Errno::EINTR) => continue,
            Err(errno) => return Err(io::Error::from(errno)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn access_modes_are_checked_as_romio_checks_them() {
        assert_eq!(amode_problem(mode::RDWR | mode::CREATE | mode::DELETE_ON_CLOSE), None);
        assert_eq!(amode_problem(mode::WRONLY | mode::SEQUENTIAL | mode::APPEND), None);
        for bad in [
            0,
            mode::RDONLY | mode::RDWR,
            mode::RDONLY | mode::CREATE,
            mode::RDONLY | mode::EXCL,
            mode::RDWR | mode::SEQUENTIAL,
            mode::RDWR | 4096,
        ] {
            assert!(amode_problem(bad).is_some(), "{bad:#x} passes");
        }
    }

    #[test]
    fn a_ufs_prefix_is_the_posix_file_system_and_others_are_refused() {
        assert_eq!(resolve("ufs:/tmp/x").unwrap(), PathBuf::from("/tmp/x"));
        assert_eq!(resolve("/tmp/a:b").unwrap(), PathBuf::from("/tmp/a:b"));
        assert_eq!(resolve("lustre:/scratch/x").unwrap_err().class, class::IO);
        assert_eq!(resolve("").unwrap_err().class, class::BAD_FILE);
    }

    /// Ranges in increasing order, with holes of up to twice the sieve's
    /// gap, over a file of some length.
    fn ranges() -> impl Strategy<Value = (Vec<Segment>, usize)> {
        let holes = prop::collection::vec((0u64..2 * SIEVE_GAP + 2, 1u64..300), 1..40);
        (holes, 0usize..40_000).prop_map(|(parts, file_len)| {
            let mut at = 0;
            let segments = parts
                .into_iter()
                .map(|(hole, len)| {
                    at += hole;
                    let segment = Segment { offset: at, len };
                    at += len;
                    segment
                })
                .collect();
            (segments, file_len)
        })
    }

    proptest! {
        /// Spanning reads give what one read per range gives: the ranges'
        /// bytes in order, up to the end of the file.
        #[test]
        fn sieved_reads_are_the_ranges_bytes_up_to_the_end((segments, file_len) in ranges()) {
            let dir = grappe_testkit::scratch("sieve");
            let path = dir.path().join("data");
            let content: Vec<u8> = (0..file_len).map(|i| (i * 7 + i / 251) as u8).collect();
            std::fs::write(&path, &content).unwrap();
            let file = File::open(&path).unwrap();
            let mut expected = Vec::new();
            for s in &segments {
                let (start, end) = ((s.offset as usize).min(file_len), (s.end() as usize).min(file_len));
                expected.extend_from_slice(&content[start..end]);
                if end < s.end() as usize {
                    break;
                }
            }
            let total: u64 = segments.iter().map(|s| s.len).sum();
            let mut into = vec![0u8; total as usize];
            let got = read_segments(&file, segments.into_iter(), &mut into).unwrap();
            prop_assert_eq!(&into[..got], &expected[..]);
        }
    }

    #[test]
    fn errnos_take_romio_s_classes() {
        let class = |errno| class_of_errno(&io::Error::from_raw_os_error(errno));
        assert_eq!(
            [libc::ENOENT, libc::EACCES, libc::EEXIST, libc::EROFS, libc::EISDIR, libc::EIO].map(class),
            [class::NO_SUCH_FILE, class::ACCESS, class::FILE_EXISTS, class::READ_ONLY, class::BAD_FILE, class::IO]
        );
    }
}
