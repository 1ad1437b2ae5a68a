//! Strings and member lists numbered for a file being written (each file
//! has its own ids; the merged file and generated traces renumber).

use crate::format::Definition;
use crate::interned::Text;
use crate::raw::Interner;
use crate::site::RecentIds;
use rustc_hash::FxHashMap;

/// Entries of the table of recent texts.
const RECENT_TEXTS: usize = 256;

/// An interner that remembers the definitions not written yet, for a
/// [`TraceWriter`](crate::TraceWriter) to write before the events that
/// use them.
#[derive(Debug, Default)]
pub struct FileDefinitions {
    strings: FxHashMap<String, u32>,
    /// Ids of texts (call sites, names, locations), by text key: a lookup
    /// per call, region, point or counter, so in a table of recent ones
    /// rather than by hashing the text.
    recent_texts: RecentIds<RECENT_TEXTS>,
    members: FxHashMap<Vec<u32>, u64>,
    pending: Vec<Definition>,
}

impl FileDefinitions {
    /// The definitions made since the last call, to write before the
    /// events that use them.
    pub fn take_pending(&mut self) -> Vec<Definition> {
        std::mem::take(&mut self.pending)
    }
}

impl Interner for FileDefinitions {
    fn intern(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.strings.get(s) {
            return id;
        }
        let id = self.strings.len() as u32;
        self.strings.insert(s.to_owned(), id);
        self.pending.push(Definition::String(id, s.to_owned()));
        id
    }

    #[inline]
    fn text(&mut self, text: Text) -> u32 {
        if let Some(id) = self.recent_texts.get(text.key()) {
            return id;
        }
        let id = self.intern(text.as_str());
        self.recent_texts.insert(text.key(), id);
        id
    }

    fn members(&mut self, members: &[u32]) -> u64 {
        if let Some(&id) = self.members.get(members) {
            return id;
        }
        let id = self.members.len() as u64;
        self.members.insert(members.to_vec(), id);
        self.pending.push(Definition::Members(id, members.to_vec()));
        id
    }
}
