//! Definition numbers: OTF2's 32-bit references, and the strings numbered
//! in order of first use that every other definition names.

use rustc_hash::FxHashMap;

use crate::otf2::error::Otf2Error;
use crate::otf2::ffi::OTF2_StringRef;

type Result<T, E = Otf2Error> = std::result::Result<T, E>;

/// A 32-bit reference for the `n`-th definition of a kind.
pub(crate) fn reference(n: usize, what: &'static str) -> Result<u32> {
    // u32::MAX is OTF2's "undefined".
    u32::try_from(n).ok().filter(|&r| r != u32::MAX).ok_or(Otf2Error::TooMany { what, limit: u32::MAX as u64 - 1 })
}

/// Strings, numbered in order of first use.
#[derive(Default)]
pub(crate) struct Strings {
    ids: FxHashMap<String, OTF2_StringRef>,
    all: Vec<String>,
}

impl Strings {
    pub(crate) fn get(&self, s: &str) -> Option<OTF2_StringRef> {
        self.ids.get(s).copied()
    }

    pub(crate) fn intern(&mut self, s: &str) -> Result<OTF2_StringRef> {
        if let Some(id) = self.get(s) {
            return Ok(id);
        }
        let id = reference(self.all.len(), "strings")?;
        self.ids.insert(s.to_owned(), id);
        self.all.push(s.to_owned());
        Ok(id)
    }

    /// Every string, by reference.
    pub(crate) fn all(&self) -> &[String] {
        &self.all
    }
}
