//! Strings and member lists numbered for a file being written (each file
//! has its own ids; the merged file and generated traces renumber).

use grappe_trace::Site;
use grappe_trace::format::Definition;
use grappe_trace::raw::Interner;
use grappe_trace::site::RecentIds;
use rustc_hash::FxHashMap;

/// Entries of the table of recent call sites.
const RECENT_SITES: usize = 256;

/// An interner that remembers the definitions not written yet.
#[derive(Debug, Default)]
pub(crate) struct FileDefinitions {
    strings: FxHashMap<String, u32>,
    /// Ids of call sites, by site key: one lookup per call event, so in a
    /// table of recent ones rather than by hashing the text.
    recent_sites: RecentIds<RECENT_SITES>,
    members: FxHashMap<Vec<u32>, u64>,
    pending: Vec<Definition>,
}

impl FileDefinitions {
    /// The definitions made since the last call, to write before the
    /// events that use them.
    pub(crate) fn take_pending(&mut self) -> Vec<Definition> {
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
    fn site(&mut self, site: Site) -> u32 {
        if let Some(id) = self.recent_sites.get(site.key()) {
            return id;
        }
        let id = self.intern(site.text());
        self.recent_sites.insert(site.key(), id);
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
