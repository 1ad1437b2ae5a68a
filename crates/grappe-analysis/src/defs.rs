//! Strings and member lists numbered for a file being written (each file
//! has its own ids; the merged file and generated traces renumber).

use grappe_trace::format::Definition;
use grappe_trace::raw::Interner;
use rustc_hash::FxHashMap;

/// An interner that remembers the definitions not written yet.
#[derive(Debug, Default)]
pub(crate) struct FileDefinitions {
    strings: FxHashMap<String, u32>,
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
