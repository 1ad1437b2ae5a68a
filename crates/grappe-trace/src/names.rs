//! The names of the program's own events (regions, points, counters) by
//! call site, so that recording one costs about what a runtime call's
//! record does.
//!
//! A program names its events with strings, and the file refers to them
//! by ids. Hashing the name on every event (and the call site's address
//! besides) made a user event cost 30 to 60 ns against 13 for the record
//! itself. A call site names the same event over and over, so the
//! recorder keeps, per site, the last name seen there with its ids: an
//! address compare and a short string compare. The compare is on content,
//! not address: a name built at run time may reuse the memory of an
//! earlier, different one. Names of up to [`INLINE`] bytes are kept in
//! the entry itself, which saves following a pointer on every event
//! (about 1 ns of 17).

/// The longest name an entry holds in place; longer ones are boxed.
const INLINE: usize = 40;

/// What a call site named last: its address, the name, and the ids of
/// the name and of the site's location.
#[derive(Debug, Clone)]
struct Entry {
    site: usize,
    len: usize,
    /// The name when it is `INLINE` bytes or shorter (the first `len`).
    short: [u8; INLINE],
    /// The name when it is longer.
    long: Box<str>,
    ids: (u32, u32),
}

impl Default for Entry {
    fn default() -> Self {
        Entry { site: 0, len: 0, short: [0; INLINE], long: Box::default(), ids: (0, 0) }
    }
}

impl Entry {
    #[inline(always)]
    fn holds(&self, name: &str) -> bool {
        self.len == name.len()
            && if name.len() <= INLINE { self.short[..name.len()] == *name.as_bytes() } else { *self.long == *name }
    }
}

/// Direct-mapped by call-site address, `N` entries (a program's hot loops
/// name a few events; a collision costs a map lookup, not an error).
/// Address 0 is never a key.
#[derive(Debug, Clone)]
pub struct RecentNames<const N: usize> {
    entries: [Entry; N],
}

impl<const N: usize> Default for RecentNames<N> {
    fn default() -> Self {
        RecentNames { entries: std::array::from_fn(|_| Entry::default()) }
    }
}

impl<const N: usize> RecentNames<N> {
    /// The ids kept for `name` at the call site at address `site`, if its
    /// slot still holds them.
    #[inline]
    pub fn get(&self, site: usize, name: &str) -> Option<(u32, u32)> {
        let entry = &self.entries[Self::slot(site)];
        (entry.site == site && entry.holds(name)).then_some(entry.ids)
    }

    /// Keeps `ids` for `name` at `site`, in place of whatever shared its
    /// slot.
    pub fn insert(&mut self, site: usize, name: &str, ids: (u32, u32)) {
        let entry = &mut self.entries[Self::slot(site)];
        if !entry.holds(name) {
            if name.len() <= INLINE {
                entry.short[..name.len()].copy_from_slice(name.as_bytes());
            } else {
                entry.long = name.into();
            }
            entry.len = name.len();
        }
        (entry.site, entry.ids) = (site, ids);
    }

    fn slot(site: usize) -> usize {
        crate::site::address_slot(site, N)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_site_keeps_the_last_name_it_gave() {
        let mut names = RecentNames::<4>::default();
        assert_eq!(names.get(8, "step"), None);
        names.insert(8, "step", (1, 2));
        assert_eq!(names.get(8, "step"), Some((1, 2)));
        // Another name at the same site, or the name at another site: no.
        assert_eq!(names.get(8, "stop"), None);
        assert_eq!(names.get(16, "step"), None);
        names.insert(8, "stop", (3, 2));
        assert_eq!((names.get(8, "stop"), names.get(8, "step")), (Some((3, 2)), None));
        // 40 shares 8's slot: it takes it.
        names.insert(40, "step", (1, 4));
        assert_eq!((names.get(40, "step"), names.get(8, "stop")), (Some((1, 4)), None));
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(usize, usize, u32),
        Get(usize, usize),
    }

    fn ops() -> impl Strategy<Value = Vec<Op>> {
        let op = prop_oneof![
            (0..4usize, 0..4usize, any::<u32>()).prop_map(|(s, n, id)| Op::Insert(s, n, id)),
            (0..4usize, 0..4usize).prop_map(|(s, n)| Op::Get(s, n)),
        ];
        proptest::collection::vec(op, 0..64)
    }

    proptest! {
        /// Against a map of what was last given: a hit is always what the
        /// site last gave for that very name, and a name just given hits.
        #[test]
        fn a_hit_is_what_the_site_last_gave_for_that_name(ops in ops()) {
            // Sites 8, 40 and 72 share a slot of 4; the names share
            // lengths, two held in place and two boxed.
            let long = ["x".repeat(INLINE + 1), "y".repeat(INLINE + 1)];
            let (sites, names) = ([8usize, 16, 40, 72], ["ab", "ba", long[0].as_str(), long[1].as_str()]);
            let mut table = RecentNames::<4>::default();
            let mut given = std::collections::HashMap::new();
            for op in ops {
                match op {
                    Op::Insert(s, n, id) => {
                        table.insert(sites[s], names[n], (id, s as u32));
                        given.insert((s, n), (id, s as u32));
                        prop_assert_eq!(table.get(sites[s], names[n]), Some((id, s as u32)));
                    }
                    Op::Get(s, n) => {
                        if let Some(ids) = table.get(sites[s], names[n]) {
                            prop_assert_eq!(Some(&ids), given.get(&(s, n)));
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_name_is_compared_by_content_not_address() {
        let mut names = RecentNames::<4>::default();
        let mut text = String::from("iteration 1");
        names.insert(8, &text, (1, 2));
        // The same buffer, now holding another name.
        text.replace_range(10.., "2");
        assert_eq!(names.get(8, &text), None);
        // Another buffer with the first name.
        assert_eq!(names.get(8, &String::from("iteration 1")), Some((1, 2)));
    }
}
