//! Call sites: the source location (`file:line:column`) of the program's
//! call into the runtime, mpiP's unit of profile.
//!
//! A record carries its site as a string id of its file; readers turn it
//! into a [`Site`], a process-wide [`Text`] (no reference count per event;
//! events of different files compare and hash their sites alike).

use std::fmt;

use serde::Serialize;

use crate::interned::Text;

/// The source location of a call, as `file:line:column`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct Site(Text);

impl Site {
    /// The site of this text, or `None` once the process holds
    /// [`crate::interned::MAX_TEXT_BYTES`] of texts.
    pub fn of(text: &str) -> Option<Site> {
        Text::of(text).map(Site)
    }

    /// The site a text names.
    pub fn from_text(text: Text) -> Site {
        Site(text)
    }

    /// The site's text.
    pub fn as_text(self) -> Text {
        self.0
    }

    /// `file:line:column`.
    pub fn text(self) -> &'static str {
        self.0.as_str()
    }

    /// A number for this site, unique in the process while it runs (for
    /// caches keyed by site).
    pub fn key(self) -> usize {
        self.0.key()
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
        address_slot(key, N)
    }
}

/// The slot of an address in a direct-mapped table of `n` entries (this
/// one's and [`crate::names`]'s). Keys are addresses of 8-byte aligned
/// values: their low bits say nothing.
#[inline(always)]
pub(crate) fn address_slot(address: usize, n: usize) -> usize {
    (address >> 3) % n
}

/// A site shows as its text.
impl fmt::Debug for Site {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for Site {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
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
    fn a_site_is_its_text() {
        let a = Site::of("src/main.rs:10:5").unwrap();
        assert_eq!(a, Site::from_text(Text::from("src/main.rs:10:5")));
        assert_ne!(a, Site::of("src/main.rs:11:5").unwrap());
        assert_eq!(a.to_string(), "src/main.rs:10:5");
        assert_eq!(format!("{a:?}"), "\"src/main.rs:10:5\"");
        assert_eq!(serde_json::to_string(&a).unwrap(), "\"src/main.rs:10:5\"");
    }
}
