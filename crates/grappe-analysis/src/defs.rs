//! Strings and member lists numbered for a file being written (each file
//! has its own ids; the merged file and generated traces renumber).

use grappe_trace::Site;
use grappe_trace::format::Definition;
use grappe_trace::raw::Interner;
use rustc_hash::FxHashMap;

/// Entries of the table of recent call sites.
const RECENT_SITES: usize = 256;

/// An interner that remembers the definitions not written yet.
#[derive(Debug)]
pub(crate) struct FileDefinitions {
    strings: FxHashMap<String, u32>,
    /// Ids of call sites, by site: one lookup per call event, so by the
    /// site's key in a table of recent ones (a program has few sites),
    /// rather than by hashing the text.
    recent_sites: [(usize, u32); RECENT_SITES],
    members: FxHashMap<Vec<u32>, u64>,
    pending: Vec<Definition>,
}

impl Default for FileDefinitions {
    fn default() -> Self {
        FileDefinitions {
            strings: FxHashMap::default(),
            recent_sites: [(0, 0); RECENT_SITES],
            members: FxHashMap::default(),
            pending: Vec::new(),
        }
    }
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
        let slot = (site.key() >> 3) % RECENT_SITES;
        match self.recent_sites[slot] {
            (key, id) if key == site.key() => id,
            _ => {
                let id = self.intern(site.text());
                self.recent_sites[slot] = (site.key(), id);
                id
            }
        }
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
