//! What events refer to, kept once per process: texts (region, point
//! and counter names, source locations, call sites) and communicator
//! member lists.
//!
//! A record refers to them by definition ids of its file. Readers turn
//! the ids into thin pointers to a process-wide copy, so that an event
//! holds them without a reference count to touch (an `Arc` per text costs
//! two atomic operations per event on the tools' hot path: 7% of an
//! export's time) and without anything to drop (events are `Copy`), and
//! events of different files compare and hash them alike, by pointer.
//!
//! The copies are never freed: a process holds one per distinct value it
//! has read, as many as the programs it read have names, call sites and
//! communicators, which their traces' definitions bound; [`MAX_TEXT_BYTES`]
//! and [`MAX_MEMBER_BYTES`] bound what hostile files can make it hold.

use std::fmt;
use std::hash::Hash;
use std::ops::Deref;
use std::sync::Mutex;

use rustc_hash::FxHashMap;
use serde::{Serialize, Serializer};

/// A text the process keeps one copy of.
#[derive(Clone, Copy)]
pub struct Text(&'static &'static str);

/// The world ranks of a communicator, in its rank order, kept once per
/// process.
#[derive(Clone, Copy)]
pub struct Members(&'static &'static [u32]);

/// The most text a process keeps: far above any program's (a million
/// names of 64 bytes), and a bound on what hostile files can make it hold.
pub const MAX_TEXT_BYTES: usize = 64 << 20;

/// The most member-list bytes a process keeps (16 M ranks in all).
pub const MAX_MEMBER_BYTES: usize = 64 << 20;

/// The process's copies of one type, by content.
struct Table<T: ?Sized + 'static> {
    by_content: FxHashMap<&'static T, &'static &'static T>,
    bytes: usize,
}

/// The copy of `content` in `table` (made if new), or `None` once the
/// table holds `bound` bytes.
fn intern<T>(table: &Mutex<Option<Table<T>>>, content: &T, bound: usize) -> Option<&'static &'static T>
where
    T: ?Sized + Eq + Hash,
    for<'a> Box<T>: From<&'a T>,
{
    let mut table = table.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let table = table.get_or_insert_with(|| Table { by_content: FxHashMap::default(), bytes: 0 });
    if let Some(&copy) = table.by_content.get(content) {
        return Some(copy);
    }
    let size = std::mem::size_of_val(content);
    if table.bytes + size > bound {
        return None;
    }
    table.bytes += size;
    let owned: &'static T = Box::leak(Box::from(content));
    let copy: &'static &'static T = Box::leak(Box::new(owned));
    table.by_content.insert(owned, copy);
    Some(copy)
}

impl Text {
    /// The copy of this text (one per distinct text in the process), or
    /// `None` once the process holds [`MAX_TEXT_BYTES`] of them.
    pub fn of(content: &str) -> Option<Text> {
        static TEXTS: Mutex<Option<Table<str>>> = Mutex::new(None);
        intern(&TEXTS, content, MAX_TEXT_BYTES).map(Text)
    }

    /// The text.
    pub fn as_str(self) -> &'static str {
        self.0
    }

    /// A number for this text, unique in the process while it runs (for
    /// caches keyed by text).
    pub fn key(self) -> usize {
        self.0 as *const &'static str as usize
    }
}

/// Texts a program makes (in tests, generators): past [`MAX_TEXT_BYTES`]
/// of them this panics, which only a program that makes texts without
/// end reaches. Readers use [`Text::of`] and report the bound.
impl From<&str> for Text {
    fn from(content: &str) -> Text {
        Text::of(content).unwrap_or_else(|| panic!("more than {} MiB of distinct texts", MAX_TEXT_BYTES >> 20))
    }
}

impl From<String> for Text {
    fn from(content: String) -> Text {
        Text::from(content.as_str())
    }
}

impl Deref for Text {
    type Target = str;
    fn deref(&self) -> &str {
        self.0
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        self.0
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Text) -> bool {
        // One `Text` per content: the pointers decide.
        std::ptr::eq(self.0, other.0)
    }
}

impl Eq for Text {}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl std::hash::Hash for Text {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        std::ptr::hash(self.0, state)
    }
}

impl PartialOrd for Text {
    fn partial_cmp(&self, other: &Text) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Text {
    fn cmp(&self, other: &Text) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Text {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl Members {
    /// The copy of this list (one per distinct list in the process), or
    /// `None` once the process holds [`MAX_MEMBER_BYTES`] of them.
    pub fn of(ranks: &[u32]) -> Option<Members> {
        static LISTS: Mutex<Option<Table<[u32]>>> = Mutex::new(None);
        intern(&LISTS, ranks, MAX_MEMBER_BYTES).map(Members)
    }

    /// The ranks.
    pub fn as_slice(self) -> &'static [u32] {
        self.0
    }
}

/// Lists a program makes (in tests, generators): past
/// [`MAX_MEMBER_BYTES`] of them this panics. Readers use [`Members::of`].
impl From<&[u32]> for Members {
    fn from(ranks: &[u32]) -> Members {
        Members::of(ranks).unwrap_or_else(|| panic!("more than {} MiB of member lists", MAX_MEMBER_BYTES >> 20))
    }
}

impl From<Vec<u32>> for Members {
    fn from(ranks: Vec<u32>) -> Members {
        Members::from(ranks.as_slice())
    }
}

impl Deref for Members {
    type Target = [u32];
    fn deref(&self) -> &[u32] {
        self.0
    }
}

impl PartialEq for Members {
    fn eq(&self, other: &Members) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}

impl Eq for Members {}

impl fmt::Debug for Members {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_slice(), f)
    }
}

impl Serialize for Members {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.as_slice().serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_copy_per_content() {
        let a = Text::of("src/main.rs:10:5").unwrap();
        let b = Text::of(&String::from("src/main.rs:10:5")).unwrap();
        let c = Text::from("src/main.rs:11:5");
        assert_eq!(a, b);
        assert!(std::ptr::eq(a.as_str(), b.as_str()));
        assert_eq!(a.key(), b.key());
        assert_ne!(a, c);
        assert!(a < c);
        assert_eq!(a.to_string(), "src/main.rs:10:5");
        assert_eq!(c, "src/main.rs:11:5");
        assert_eq!(serde_json::to_string(&c).unwrap(), "\"src/main.rs:11:5\"");
    }

    #[test]
    fn one_copy_per_member_list() {
        let a = Members::of(&[3, 1, 2]).unwrap();
        let b = Members::from(vec![3, 1, 2]);
        assert_eq!(a, b);
        assert!(std::ptr::eq(a.as_slice(), b.as_slice()));
        assert_ne!(a, Members::from(vec![1, 2, 3]));
        assert_eq!(&*a, &[3, 1, 2]);
        assert_eq!(serde_json::to_string(&a).unwrap(), "[3,1,2]");
    }
}
