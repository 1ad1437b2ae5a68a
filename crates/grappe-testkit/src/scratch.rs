//! Scratch directories for tests: unique, and removed when the test is
//! done, so that running the suite again and again does not fill `/tmp`
//! (it had left thousands of directories there, a disk filled up).

use std::path::{Path, PathBuf};

use tempfile::TempDir;

/// An empty directory of its own for one test, `grappe-NAME-XXXXXX` in
/// the system's temporary directory. Removed when dropped, unless the
/// test is failing: then it is kept for a look, and its path printed.
pub struct Scratch(Option<TempDir>);

/// A fresh scratch directory; `name` says which test it belongs to.
pub fn scratch(name: &str) -> Scratch {
    let dir = tempfile::Builder::new()
        .prefix(&format!("grappe-{name}-"))
        .tempdir()
        .unwrap_or_else(|e| panic!("cannot make a scratch directory for {name}: {e}"));
    Scratch(Some(dir))
}

impl Scratch {
    /// The directory's path.
    pub fn path(&self) -> &Path {
        self.0.as_ref().expect("held until dropped").path()
    }

    /// The directory's path, owned (for configurations that keep one).
    pub fn to_path_buf(&self) -> PathBuf {
        self.path().to_path_buf()
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        self.path()
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        self.path()
    }
}

impl AsRef<std::ffi::OsStr> for Scratch {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.path().as_os_str()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let Some(dir) = self.0.take() else { return };
        if std::thread::panicking() {
            eprintln!("scratch directory kept for a look: {}", dir.keep().display());
        }
        // Otherwise `TempDir`'s own drop removes it.
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scratch_directory_is_unique_and_removed_when_dropped() {
        let (a, b) = (scratch("same"), scratch("same"));
        assert_ne!(a.path(), b.path());
        std::fs::write(a.join("file"), b"x").unwrap();
        let path = a.to_path_buf();
        assert!(path.is_dir() && path.file_name().unwrap().to_string_lossy().starts_with("grappe-same-"));
        drop(a);
        assert!(!path.exists(), "{} is left behind", path.display());
    }

    #[test]
    fn a_failing_test_keeps_its_scratch_directory() {
        let path = std::thread::spawn(|| {
            let dir = scratch("failing");
            let path = dir.to_path_buf();
            let kept = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
                let _dir = dir;
                panic!("the test fails");
            }));
            assert!(kept.is_err());
            path
        })
        .join()
        .unwrap();
        assert!(path.is_dir(), "{} was removed", path.display());
        std::fs::remove_dir_all(&path).unwrap();
    }
}
