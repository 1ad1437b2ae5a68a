//! Job ids: unique per job on a host, safe in file names.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::{SystemTime, UNIX_EPOCH};

/// `<prefix>-<pid>-<12 hex digits>`, or `<pid>-<12 hex digits>` when `prefix` is empty.
///
/// The pid makes ids of live jobs on one host distinct; the random part keeps a later job of a
/// reused pid from matching files an earlier one left behind.
pub fn new_job_id(prefix: &str) -> String {
    let id = format!("{}-{:012x}", std::process::id(), random_u64() & 0xffff_ffff_ffff);
    match prefix {
        "" => id,
        prefix => format!("{prefix}-{id}"),
    }
}

/// 64 random bits from std's per-process SipHash keys mixed with the clock; not cryptographic,
/// only meant to make collisions of job ids unlikely.
fn random_u64() -> u64 {
    let mut hasher = RandomState::new().build_hasher();
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |elapsed| elapsed.as_nanos());
    hasher.write_u128(nanos);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_file_safe_and_distinct() {
        let a = new_job_id("");
        let b = new_job_id("");
        assert_ne!(a, b);
        assert!(a.starts_with(&format!("{}-", std::process::id())));
        assert!(a.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'), "{a}");
        assert!(new_job_id("singleton").starts_with("singleton-"));
    }
}
