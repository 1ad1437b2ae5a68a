//! Texts of events (region, point and counter names, source locations,
//! call sites), kept once per process.
//!
//! A record carries its texts as string ids of its file. Readers turn
//! them into [`Text`]s, thin pointers to a process-wide copy, so that an
//! event carries them without a reference count to touch (an `Arc` per
//! text costs two atomic operations per event on the tools' hot path:
//! 7% of an export's time) and events of different files compare and hash
//! their texts alike, by pointer.
//!
//! The copies are never freed: a process holds one per distinct text it
//! has read, as many as the programs it read have names and call sites,
//! which their traces' definitions bound; [`MAX_TEXT_BYTES`] bounds what
//! hostile files can make it hold.

use std::fmt;
use std::ops::Deref;
use std::sync::Mutex;

use rustc_hash::FxHashMap;
use serde::{Serialize, Serializer};

/// A text the process keeps one copy of.
#[derive(Clone, Copy)]
pub struct Text(&'static &'static str);

/// The most text a process keeps: far above any program's (a million
/// names of 64 bytes), and a bound on what hostile files can make it hold.
pub const MAX_TEXT_BYTES: usize = 64 << 20;

/// The process's texts, by content.
#[derive(Default)]
struct Texts {
    by_content: FxHashMap<&'static str, Text>,
    bytes: usize,
}

impl Text {
    /// The copy of this text (one per distinct text in the process), or
    /// `None` once the process holds [`MAX_TEXT_BYTES`] of them.
    pub fn of(content: &str) -> Option<Text> {
        static TEXTS: Mutex<Option<Texts>> = Mutex::new(None);
        let mut texts = TEXTS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let texts = texts.get_or_insert_with(Texts::default);
        if let Some(&text) = texts.by_content.get(content) {
            return Some(text);
        }
        if texts.bytes + content.len() > MAX_TEXT_BYTES {
            return None;
        }
        texts.bytes += content.len();
        let owned: &'static str = Box::leak(content.to_owned().into_boxed_str());
        let text = Text(Box::leak(Box::new(owned)));
        texts.by_content.insert(owned, text);
        Some(text)
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
}
