//! Call sites: the source location (`file:line:column`) of the program's
//! call into the runtime, mpiP's unit of profile.
//!
//! A record carries its site as a string id of its file. Readers turn it
//! into a [`Site`], a thin pointer to a process-wide copy of the text, so
//! that an event carries it without a reference count to touch (an `Arc`
//! per event costs two atomic operations on the tools' hot path) and
//! events of different files compare and hash their sites alike.
//!
//! The copies are never freed: a process holds one per distinct site text
//! it has read, as many as the program has call sites, which a trace's
//! definitions bound.

use std::fmt;
use std::sync::Mutex;

use rustc_hash::FxHashMap;
use serde::{Serialize, Serializer};

/// The source location of a call, as `file:line:column`.
#[derive(Clone, Copy)]
pub struct Site(&'static &'static str);

/// The most site text a process keeps: far above any program's (a
/// million call sites of 64 bytes), and a bound on what hostile files
/// can make it hold.
pub const MAX_SITE_BYTES: usize = 64 << 20;

/// The process's sites, by text.
#[derive(Default)]
struct Sites {
    by_text: FxHashMap<&'static str, Site>,
    bytes: usize,
}

impl Site {
    /// The site of this text (one per distinct text in the process), or
    /// `None` once the process holds [`MAX_SITE_BYTES`] of them.
    pub fn of(text: &str) -> Option<Site> {
        static SITES: Mutex<Option<Sites>> = Mutex::new(None);
        let mut sites = SITES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let sites = sites.get_or_insert_with(Sites::default);
        if let Some(&site) = sites.by_text.get(text) {
            return Some(site);
        }
        if sites.bytes + text.len() > MAX_SITE_BYTES {
            return None;
        }
        sites.bytes += text.len();
        let owned: &'static str = Box::leak(text.to_owned().into_boxed_str());
        let site = Site(Box::leak(Box::new(owned)));
        sites.by_text.insert(owned, site);
        Some(site)
    }

    /// `file:line:column`.
    pub fn text(self) -> &'static str {
        self.0
    }

    /// A number for this site, unique in the process while it runs (for
    /// caches keyed by site).
    pub fn key(self) -> usize {
        self.0 as *const &'static str as usize
    }
}

/// Ids by address, direct-mapped: the last id seen at each of `N` slots.
/// Call records name one of a program's few sites over and over, so the
/// recorder and the merged file's writer look them up here first: a load
/// and a compare, where a hash map costs a hash and a probe per event.
/// Address 0 is never a key.
#[derive(Debug, Clone)]
pub struct RecentIds<const N: usize> {
    entries: [(usize, u32); N],
}

impl<const N: usize> Default for RecentIds<N> {
    fn default() -> Self {
        RecentIds { entries: [(0, 0); N] }
    }
}

impl<const N: usize> RecentIds<N> {
    /// The id last kept for `key`, if its slot still holds it.
    #[inline]
    pub fn get(&self, key: usize) -> Option<u32> {
        let (held, id) = self.entries[Self::slot(key)];
        (held == key).then_some(id)
    }

    /// Keeps `id` for `key`, in place of whatever shared its slot.
    pub fn insert(&mut self, key: usize, id: u32) {
        self.entries[Self::slot(key)] = (key, id);
    }

    fn slot(key: usize) -> usize {
        // Addresses of 8-byte aligned values: their low bits say nothing.
        (key >> 3) % N
    }
}

impl PartialEq for Site {
    fn eq(&self, other: &Site) -> bool {
        // One `Site` per text: the pointers decide.
        std::ptr::eq(self.0, other.0)
    }
}

impl Eq for Site {}

impl std::hash::Hash for Site {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        std::ptr::hash(self.0, state)
    }
}

impl PartialOrd for Site {
    fn partial_cmp(&self, other: &Site) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Site {
    fn cmp(&self, other: &Site) -> std::cmp::Ordering {
        self.text().cmp(other.text())
    }
}

impl fmt::Debug for Site {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.text(), f)
    }
}

impl fmt::Display for Site {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

impl Serialize for Site {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.text())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_ids_keep_the_last_key_of_each_slot() {
        let mut table = RecentIds::<4>::default();
        assert_eq!(table.get(8), None);
        table.insert(8, 1);
        table.insert(16, 2);
        assert_eq!((table.get(8), table.get(16)), (Some(1), Some(2)));
        // 40 shares 8's slot: it takes it.
        table.insert(40, 5);
        assert_eq!((table.get(40), table.get(8), table.get(16)), (Some(5), None, Some(2)));
    }

    #[test]
    fn one_site_per_text() {
        let a = Site::of("src/main.rs:10:5").unwrap();
        let b = Site::of(&String::from("src/main.rs:10:5")).unwrap();
        let c = Site::of("src/main.rs:11:5").unwrap();
        assert_eq!(a, b);
        assert!(std::ptr::eq(a.text(), b.text()));
        assert_ne!(a, c);
        assert!(a < c);
        assert_eq!(a.to_string(), "src/main.rs:10:5");
    }
}
