//! Per-rank state of the tools that walk the stream (the profile, the
//! exports).

/// Per-rank state: a vector for the usual dense ranks, a map for the
/// odd large one (a rank number never sizes an allocation).
#[derive(Default)]
pub struct PerRank<T> {
    dense: Vec<T>,
    sparse: rustc_hash::FxHashMap<u32, T>,
}

/// Ranks kept in the vector.
const DENSE_RANKS: u32 = 1 << 16;

impl<T: Default> PerRank<T> {
    /// The state of `rank`, made on first use.
    #[inline(always)]
    pub fn get(&mut self, rank: u32) -> &mut T {
        let i = rank as usize;
        if i >= self.dense.len() {
            return self.get_new(rank);
        }
        &mut self.dense[i]
    }

    /// A rank met for the first time, or beyond the vector.
    #[cold]
    fn get_new(&mut self, rank: u32) -> &mut T {
        if rank >= DENSE_RANKS {
            return self.sparse.entry(rank).or_default();
        }
        let i = rank as usize;
        self.dense.resize_with(i + 1, T::default);
        &mut self.dense[i]
    }

    /// Every rank's state, by rank.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &T)> {
        let mut sparse: Vec<_> = self.sparse.iter().map(|(&r, t)| (r, t)).collect();
        sparse.sort_by_key(|(r, _)| *r);
        self.dense.iter().enumerate().map(|(r, t)| (r as u32, t)).chain(sparse)
    }
}
