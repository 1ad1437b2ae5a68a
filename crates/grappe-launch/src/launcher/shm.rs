//! Removing the shared-memory files a job leaves behind.
//!
//! The runtime names its POSIX shared-memory segments `grappe-<GRAPPE_JOB_ID>...`, which live as
//! files in `/dev/shm`. A rank that crashes never unlinks its own, so the launcher does it after
//! every job, successful or not.

use std::path::{Path, PathBuf};

/// Where POSIX shared memory lives on Linux.
pub const SHM_DIR: &str = "/dev/shm";

/// The common file-name prefix of every segment of job `job_id`.
pub fn segment_prefix(job_id: &str) -> String {
    format!("grappe-{job_id}")
}

/// Removes `/dev/shm/grappe-<job_id>*` and returns the paths removed, sorted.
pub fn remove_job_segments(job_id: &str) -> Vec<PathBuf> {
    remove_with_prefix(Path::new(SHM_DIR), &segment_prefix(job_id))
}

/// Removes the files of `dir` whose name starts with `prefix`. Files that vanish meanwhile or
/// cannot be removed are skipped: cleanup must never fail the job.
fn remove_with_prefix(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut removed: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name().to_string_lossy().starts_with(prefix))
        .map(|entry| entry.path())
        .filter(|path| std::fs::remove_file(path).is_ok())
        .collect();
    removed.sort();
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_files_of_the_job_are_removed() {
        let dir = std::env::temp_dir().join(format!("grappe-shm-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for name in ["grappe-12-ab-seg0", "grappe-12-ab", "grappe-13-ab-seg0", "other"] {
            std::fs::write(dir.join(name), b"x").unwrap();
        }
        let removed = remove_with_prefix(&dir, &segment_prefix("12-ab"));
        let mut left: Vec<_> =
            std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        left.sort();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(removed, vec![dir.join("grappe-12-ab"), dir.join("grappe-12-ab-seg0")]);
        assert_eq!(left, vec!["grappe-13-ab-seg0", "other"]);
    }
}
