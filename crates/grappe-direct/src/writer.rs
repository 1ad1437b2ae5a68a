//! A file writer that goes around the page cache.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, OFlag, fcntl};

use crate::buf::{ALIGN, AlignedBuf, is_aligned};

/// Bytes gathered before a write: large enough that each write is a long
/// transfer.
const BOUNCE: usize = 4 << 20;

/// Writes a new file with `O_DIRECT` where the filesystem allows it, and
/// through the page cache where it does not (see the crate's docs).
///
/// Aligned whole blocks passed to `write` while nothing is pending go to
/// the device as they are; anything else is gathered into whole blocks
/// first. [`DirectWriter::finish`] writes the last, partial block and sets
/// the file's length; `flush` cannot write a partial block, so it keeps it
/// for `finish` (or for the drop, which finishes as best it can).
pub struct DirectWriter {
    file: Option<File>,
    direct: bool,
    bounce: AlignedBuf,
    pending: usize,
    /// Bytes accepted so far: the file's length once finished.
    len: u64,
}

impl DirectWriter {
    /// Creates (or truncates) the file at `path`.
    pub fn create(path: &Path) -> io::Result<DirectWriter> {
        let file = OpenOptions::new().write(true).create(true).truncate(true).open(path)?;
        // Only regular files: on a pipe, O_DIRECT means packet mode.
        let direct = file.metadata()?.is_file() && set_direct(&file, true).is_ok();
        Ok(DirectWriter { file: Some(file), direct, bounce: AlignedBuf::new(BOUNCE), pending: 0, len: 0 })
    }

    /// Whether the bytes go around the page cache (so far).
    pub fn is_direct(&self) -> bool {
        self.direct
    }

    /// Writes what is pending, sets the file's length and returns the
    /// file (not synced).
    pub fn finish(mut self) -> io::Result<File> {
        self.write_tail()?;
        Ok(self.file.take().expect("a file until finished"))
    }

    /// Writes the bounce buffer's pending bytes (a partial last block is
    /// padded and the file cut back to its length).
    fn write_tail(&mut self) -> io::Result<()> {
        let padded = if self.direct { self.pending.next_multiple_of(ALIGN) } else { self.pending };
        self.bounce.bytes_mut()[self.pending..padded].fill(0);
        self.write_bounce(padded)?;
        if padded > self.pending {
            self.file.as_mut().expect("a file until finished").set_len(self.len)?;
        }
        self.pending = 0;
        Ok(())
    }

    /// Writes the first `len` bytes of the bounce buffer.
    fn write_bounce(&mut self, len: usize) -> io::Result<()> {
        let file = self.file.as_mut().expect("a file until finished");
        write_out(file, &mut self.direct, &self.bounce.bytes()[..len])
    }
}

impl Write for DirectWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.pending == 0 && is_aligned(data) {
            let file = self.file.as_mut().expect("a file until finished");
            write_out(file, &mut self.direct, data)?;
            self.len += data.len() as u64;
            return Ok(data.len());
        }
        let n = data.len().min(self.bounce.len() - self.pending);
        self.bounce.bytes_mut()[self.pending..self.pending + n].copy_from_slice(&data[..n]);
        self.pending += n;
        self.len += n as u64;
        if self.pending == self.bounce.len() {
            self.write_bounce(self.pending)?;
            self.pending = 0;
        }
        Ok(n)
    }

    /// Writes what is pending: all of it through the page cache, whole
    /// blocks with `O_DIRECT` (a partial last block waits for `finish`).
    fn flush(&mut self) -> io::Result<()> {
        let whole = if self.direct { self.pending / ALIGN * ALIGN } else { self.pending };
        if whole > 0 {
            self.write_bounce(whole)?;
            self.bounce.bytes_mut().copy_within(whole..self.pending, 0);
            self.pending -= whole;
        }
        Ok(())
    }
}

impl Drop for DirectWriter {
    fn drop(&mut self) {
        if self.file.is_some() {
            // Like `BufWriter`: the caller that wants the error calls
            // `finish`.
            let _ = self.write_tail();
        }
    }
}

/// Writes all of `bytes`. A filesystem that accepted `O_DIRECT` at open
/// but refuses a direct write (EINVAL) gets the rest through the page
/// cache.
fn write_out(file: &mut File, direct: &mut bool, bytes: &[u8]) -> io::Result<()> {
    let mut done = 0;
    while done < bytes.len() {
        match file.write(&bytes[done..]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if *direct && e.raw_os_error() == Some(Errno::EINVAL as i32) => {
                set_direct(file, false)?;
                *direct = false;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Turns `O_DIRECT` on or off for an open file.
fn set_direct(file: &File, on: bool) -> io::Result<()> {
    let mut flags = OFlag::from_bits_retain(fcntl(file, FcntlArg::F_GETFL)?);
    flags.set(OFlag::O_DIRECT, on);
    fcntl(file, FcntlArg::F_SETFL(flags))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::io::Read;
    use std::os::fd::AsRawFd;
    use std::path::PathBuf;

    fn scratch(fs: &str, name: &str) -> PathBuf {
        let dir = PathBuf::from(fs).join(format!("grappe-direct-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 31 % 251) as u8).collect()
    }

    #[test]
    fn every_length_reads_back_exactly() {
        let path = scratch("/var/tmp", "lengths");
        for len in [0, 1, ALIGN - 1, ALIGN, ALIGN + 1, BOUNCE - 1, BOUNCE, BOUNCE + 4097, 3 * BOUNCE + 17] {
            let bytes = pattern(len);
            crate::write_synced(&path, &bytes).unwrap();
            assert!(std::fs::read(&path).unwrap() == bytes, "{len} bytes came back different");
        }
        // A longer file is replaced, not overwritten in part.
        crate::write_synced(&path, b"short").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"short");
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    #[test]
    fn ext4_takes_direct_writes() {
        // The point of the crate: on the disk the images and exports go
        // to, the page cache is bypassed.
        let path = scratch("/var/tmp", "direct");
        let w = DirectWriter::create(&path).unwrap();
        assert!(w.is_direct(), "O_DIRECT refused on {}", path.display());
        drop(w);
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    #[test]
    fn aligned_blocks_and_dropped_writers_lose_nothing() {
        let path = scratch("/var/tmp", "aligned");
        let mut block = AlignedBuf::new(2 * ALIGN);
        block.bytes_mut().copy_from_slice(&pattern(2 * ALIGN));
        {
            let mut w = DirectWriter::create(&path).unwrap();
            w.write_all(block.bytes()).unwrap(); // straight to the device
            w.write_all(b"tail").unwrap();
            w.flush().unwrap();
        } // dropped, not finished: the tail is still written
        let mut expected = pattern(2 * ALIGN);
        expected.extend_from_slice(b"tail");
        assert!(std::fs::read(&path).unwrap() == expected);
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    #[test]
    fn devices_and_pipes_get_plain_writes() {
        let w = DirectWriter::create(Path::new("/dev/null")).unwrap();
        assert!(!w.is_direct());
        let (read_end, write_end) = nix::unistd::pipe().unwrap();
        let path = PathBuf::from(format!("/proc/self/fd/{}", write_end.as_raw_fd()));
        let mut w = DirectWriter::create(&path).unwrap();
        assert!(!w.is_direct(), "a pipe in packet mode");
        w.write_all(b"through a pipe").unwrap();
        w.finish().unwrap();
        drop(write_end);
        let mut got = Vec::new();
        File::from(read_end).read_to_end(&mut got).unwrap();
        assert_eq!(got, b"through a pipe");
    }

    #[test]
    fn a_full_device_is_an_error() {
        let mut w = DirectWriter::create(Path::new("/dev/full")).unwrap();
        let err = w.write_all(&pattern(BOUNCE + 1)).and_then(|()| w.finish().map(drop)).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(Errno::ENOSPC as i32), "{err}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// Any sequence of writes and flushes, on ext4 (direct) and tmpfs
        /// (direct or not, as the kernel allows), reads back exactly.
        #[test]
        fn any_writes_read_back(sizes in prop::collection::vec((0usize..3 * ALIGN + 7, any::<bool>()), 0..12),
                                tmpfs in any::<bool>()) {
            let path = scratch(if tmpfs { "/dev/shm" } else { "/var/tmp" }, "prop");
            let mut w = DirectWriter::create(&path).unwrap();
            let mut expected = Vec::new();
            for (i, &(size, flush)) in sizes.iter().enumerate() {
                let chunk: Vec<u8> = pattern(size).into_iter().map(|b| b ^ i as u8).collect();
                w.write_all(&chunk).unwrap();
                expected.extend_from_slice(&chunk);
                if flush {
                    w.flush().unwrap();
                }
            }
            w.finish().unwrap();
            prop_assert!(std::fs::read(&path).unwrap() == expected);
            let _ = std::fs::remove_dir_all(path.parent().unwrap());
        }
    }
}
