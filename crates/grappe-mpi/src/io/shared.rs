//! The shared file pointer of an open file: one value for every rank of
//! the file's communicator, which any of them moves at any time without
//! the others taking part (`MPI_File_write_shared` is not collective). It
//! lives where ROMIO keeps it, in a hidden file beside the data
//! (`.NAME.shfp.ID`), read and advanced under an exclusive lock on it,
//! so that ranks on every host that shares the file system see one
//! pointer, whatever the others are doing meanwhile. The file is made at
//! the first use and removed when the file is closed.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;

use super::posix::{RangeLock, mode, open};

/// The shared pointer of one open file, in etypes of the view.
pub struct SharedPointer {
    path: PathBuf,
    /// Opened at the first use. The mutex keeps the process's threads
    /// apart; the file lock, the processes.
    file: Mutex<Option<File>>,
}

impl SharedPointer {
    /// The pointer of the data file `data`, kept in `.NAME.shfp.ID` beside it.
    pub fn beside(data: &Path, id: u64) -> SharedPointer {
        let name = data.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let path = data.with_file_name(format!(".{name}.shfp.{id:x}"));
        SharedPointer { path, file: Mutex::new(None) }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` on the pointer's value with the pointer locked: the value
    /// `f` returns is stored; what the pointer was is returned.
    pub fn update(&self, f: impl FnOnce(u64) -> u64) -> io::Result<u64> {
        let mut opened = self.file.lock();
        if opened.is_none() {
            *opened = Some(open(&self.path, mode::RDWR, true)?);
        }
        let file = opened.as_ref().expect("opened above");
        let _lock = RangeLock::take(file, 0, 8, true)?;
        let mut bytes = [0u8; 8];
        let mut got = 0;
        while got < 8 {
            match file.read_at(&mut bytes[got..], got as u64)? {
                0 => break,
                n => got += n,
            }
        }
        // A file just made is empty: the pointer starts at 0.
        let old = if got == 8 { u64::from_le_bytes(bytes) } else { 0 };
        let new = f(old);
        if new != old || got < 8 {
            file.write_all_at(&new.to_le_bytes(), 0)?;
        }
        Ok(old)
    }

    /// Moves the pointer `by` etypes: where it was.
    pub fn fetch_add(&self, by: u64) -> io::Result<u64> {
        self.update(|old| old + by)
    }

    pub fn get(&self) -> io::Result<u64> {
        self.update(|old| old)
    }

    pub fn set(&self, value: u64) -> io::Result<()> {
        self.update(|_| value).map(|_| ())
    }

    /// Sets the pointer to 0, if it was ever used (a pointer never used is 0).
    pub fn reset(&self) -> io::Result<()> {
        if self.file.lock().is_none() && !self.path.exists() {
            return Ok(());
        }
        self.set(0)
    }

    /// Removes the hidden file, if it was made.
    pub fn remove(&self) {
        *self.file.lock() = None;
        // It may never have been made: nothing to remove then.
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pointer_starts_at_zero_moves_and_goes_with_its_file() {
        let dir = grappe_testkit::scratch("shared-pointer");
        let data = dir.path().join("data");
        let pointer = SharedPointer::beside(&data, 0xab);
        assert_eq!(pointer.path(), dir.path().join(".data.shfp.ab"));
        pointer.reset().unwrap();
        assert!(!pointer.path().exists(), "reset does not make the file");
        assert_eq!(pointer.fetch_add(5).unwrap(), 0);
        // Another process's view of it: a second handle on the same file.
        let other = SharedPointer::beside(&data, 0xab);
        assert_eq!(other.fetch_add(3).unwrap(), 5);
        assert_eq!(pointer.get().unwrap(), 8);
        pointer.reset().unwrap();
        assert_eq!(other.get().unwrap(), 0);
        pointer.remove();
        assert!(!pointer.path().exists());
    }

    #[test]
    fn threads_moving_the_pointer_at_once_each_get_their_own_range() {
        let dir = grappe_testkit::scratch("shared-pointer-threads");
        let data = dir.path().join("data");
        let pointers: Vec<SharedPointer> = (0..4).map(|_| SharedPointer::beside(&data, 1)).collect();
        let mut starts: Vec<u64> = std::thread::scope(|s| {
            let handles: Vec<_> = pointers
                .iter()
                .map(|p| s.spawn(move || (0..200).map(|_| p.fetch_add(2).unwrap()).collect::<Vec<_>>()))
                .collect();
            handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
        });
        starts.sort_unstable();
        assert_eq!(starts, (0..800).map(|i| i * 2).collect::<Vec<_>>(), "every range once, none lost");
    }
}
