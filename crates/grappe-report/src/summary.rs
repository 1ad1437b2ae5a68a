//! The summary of the whole run, as Vampir's summary timeline draws it:
//! per row (a rank, or a group of ranks past [`MAX_ROWS`] of them) and
//! time bin, the time spent in each state (each call category the page
//! colours, waiting, failed calls; compute is the rest). The page draws
//! each pixel column as the shares of its states, stacked.
//!
//! The bins are placed once, over the run's span the first pass found,
//! and kept at the finest resolution memory allows ([`CELLS`] rows × bins,
//! whatever the trace's length); coarser levels, each [`LEVEL_FACTOR`]
//! times coarser, are sums of those, down to a few thousand bins. The
//! page gets the coarse levels first and the finer ones its size allows:
//! zooming in, it keeps a level with at least one bin per pixel.
//!
//! Each level is sent per row as bytes, base64: for each bin the number of
//! states present, then (state, share of the bin in 255ths) for each.

use base64::Engine as _;
use serde::Serialize;

/// The states, in the order the page stacks them (top first). Compute,
/// the time outside calls, is what the others leave.
pub(crate) const STATES: [&str; 13] = [
    "waiting",
    "failed",
    "send",
    "isend",
    "recv",
    "irecv",
    "sendrecv",
    "wait",
    "test",
    "probe",
    "collective",
    "other",
    "runtime",
];
const N: usize = STATES.len();
/// Waiting: the part of a call spent waiting for a late sender, or for
/// the last rank to enter a collective.
pub(crate) const WAITING: usize = 0;
/// A call that failed (a peer died, the job was stopped).
pub(crate) const FAILED: usize = 1;

/// Rows drawn at most: past that many ranks, ranks are summed in groups.
const MAX_ROWS: u32 = 128;
/// Rows × finest bins kept while reading (each 52 bytes).
const CELLS: usize = 1 << 20;
/// Finest bins per row, at most.
const MAX_BINS: usize = 1 << 18;
/// Bins of the coarsest level, at least (when the finest has that many).
const MIN_BINS: usize = 2048;
/// Each level is this many times coarser than the next finer.
const LEVEL_FACTOR: usize = 4;

/// The state of a call of a drawing category (see `diagram::category`).
pub(crate) fn state_of(category: &str) -> usize {
    STATES.iter().position(|&s| s == category).unwrap_or(STATES.len() - 2)
}

/// Time per row, finest bin and state, being summed while reading.
pub(crate) struct Summary {
    /// The first bin's start (global ns).
    origin: u64,
    /// The finest bins' width (ns) and number.
    width: u64,
    bins: usize,
    /// Ranks per row.
    group: u32,
    rows: usize,
    world_size: u32,
    /// Per row and bin: time per state, in units of 2^`shift` ns.
    cells: Vec<[u32; N]>,
    shift: u32,
}

impl Summary {
    /// A summary of `span` (the run's first start and last end, global
    /// ns) for ranks `0..world_size` (ranks past them fall in the last row).
    pub(crate) fn new(span: (u64, u64), world_size: u32) -> Self {
        let group = world_size.max(1).div_ceil(MAX_ROWS);
        let rows = world_size.max(1).div_ceil(group) as usize;
        let length = span.1.saturating_sub(span.0).saturating_add(1);
        let most = (CELLS / rows).clamp(1, MAX_BINS);
        let most = 1 << most.ilog2(); // a power of two: levels divide it
        let width = length.div_ceil(most as u64).max(1);
        let bins = length.div_ceil(width) as usize;
        let shift = (64 - width.leading_zeros()).saturating_sub(32);
        Summary { origin: span.0, width, bins, group, rows, world_size, cells: vec![[0; N]; rows * bins], shift }
    }

    fn row(&self, rank: u32) -> usize {
        ((rank / self.group) as usize).min(self.rows - 1)
    }

    /// Adds `[start, end)` (global ns) of rank `rank` to `state`.
    pub(crate) fn add(&mut self, rank: u32, state: usize, start: u64, end: u64) {
        let shift = self.shift;
        self.each_bin(rank, start, end, |cell, ns| cell[state] = cell[state].saturating_add((ns >> shift) as u32));
    }

    /// Moves `[start, end)` of rank `rank` from state `from` to `to` (the
    /// waiting part of a call, known after the call).
    pub(crate) fn change(&mut self, rank: u32, from: usize, to: usize, start: u64, end: u64) {
        let shift = self.shift;
        self.each_bin(rank, start, end, |cell, ns| {
            let units = ((ns >> shift) as u32).min(cell[from]);
            cell[from] -= units;
            cell[to] = cell[to].saturating_add(units);
        });
    }

    /// Calls `f` with each bin of the row of `rank` that `[start, end)`
    /// overlaps, and the ns it overlaps.
    fn each_bin(&mut self, rank: u32, start: u64, end: u64, mut f: impl FnMut(&mut [u32; N], u64)) {
        let last = self.origin.saturating_add(self.width.saturating_mul(self.bins as u64));
        let (start, end) = (start.clamp(self.origin, last), end.clamp(self.origin, last));
        if end <= start {
            return;
        }
        let (start, end) = (start - self.origin, end - self.origin);
        let row = self.row(rank) * self.bins;
        let (first, past) = ((start / self.width) as usize, end.div_ceil(self.width) as usize);
        for bin in first..past.min(self.bins) {
            let (lo, hi) = (bin as u64 * self.width, (bin as u64 + 1) * self.width);
            f(&mut self.cells[row + bin], end.min(hi) - start.max(lo));
        }
    }

    /// The summary as the page gets it: the coarsest level, then finer
    /// ones while all of them take at most `budget` bytes.
    pub(crate) fn encode(&self, budget: u64) -> SummaryData {
        let mut factors = vec![1usize];
        while self.bins / (factors[0] * LEVEL_FACTOR) >= MIN_BINS {
            factors.insert(0, factors[0] * LEVEL_FACTOR);
        }
        let mut levels = Vec::new();
        let mut spent = 0u64;
        for &factor in &factors {
            let level = self.level(factor);
            let bytes: u64 = level.rows.iter().map(|r| r.len() as u64).sum();
            if !levels.is_empty() && spent + bytes > budget {
                break;
            }
            spent += bytes;
            levels.push(level);
        }
        SummaryData {
            states: STATES,
            group: self.group,
            rows: self.rows,
            finest_ns: self.width,
            levels_left_out: factors.len() - levels.len(),
            levels,
        }
    }

    /// The level whose bins are `factor` finest bins each.
    fn level(&self, factor: usize) -> Level {
        let bins = self.bins.div_ceil(factor);
        let width = self.width * factor as u64;
        let rows = (0..self.rows).map(|row| self.encode_row(row, factor, bins, width)).collect();
        Level { bin_ns: width, bins, rows }
    }

    /// Ranks of row `row` (the last may have fewer).
    fn members(&self, row: usize) -> u64 {
        let first = row as u64 * self.group as u64;
        (self.group as u64).min((self.world_size.max(1) as u64).saturating_sub(first)).max(1)
    }

    /// A row's bins, as shares of the time of its ranks.
    fn encode_row(&self, row: usize, factor: usize, bins: usize, width: u64) -> String {
        let whole = width as u128 * self.members(row) as u128;
        let cells = &self.cells[row * self.bins..(row + 1) * self.bins];
        let mut bytes = Vec::with_capacity(bins * 3);
        for chunk in cells.chunks(factor) {
            let mut sums = [0u64; N];
            for cell in chunk {
                for (sum, &units) in sums.iter_mut().zip(cell) {
                    *sum += units as u64;
                }
            }
            let count = bytes.len();
            bytes.push(0);
            for (state, &units) in sums.iter().enumerate().filter(|(_, u)| **u > 0) {
                let ns = (units as u128) << self.shift;
                let share = ((ns * 255 + whole / 2) / whole).clamp(1, 255);
                bytes.extend([state as u8, share as u8]);
                bytes[count] += 1;
            }
        }
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }
}

/// The summary as sent to the page.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SummaryData {
    states: [&'static str; N],
    /// Ranks per row (rank r is in row r / group).
    pub(crate) group: u32,
    pub(crate) rows: usize,
    /// The finest bins computed, ns (those of the finest level sent, or
    /// finer ones the page had no room for).
    pub(crate) finest_ns: u64,
    /// Finer levels computed but left out of the page (its size).
    pub(crate) levels_left_out: usize,
    /// Coarsest first.
    pub(crate) levels: Vec<Level>,
}

/// One level: its bins from the run's start, per row.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Level {
    pub(crate) bin_ns: u64,
    pub(crate) bins: usize,
    rows: Vec<String>,
}

impl SummaryData {
    /// The summary without its levels of bins narrower than `ns` (the
    /// coarsest is kept).
    /// (not counted as left out: they are not needed).
    pub(crate) fn drop_finer_than(&mut self, ns: u64) {
        while self.levels.len() > 1 && self.levels.last().is_some_and(|l| l.bin_ns < ns) {
            self.levels.pop();
        }
    }

    /// The summary without its finest level (the page's size), if it has
    /// more than one.
    pub(crate) fn drop_finest(&mut self) -> bool {
        if self.levels.len() < 2 {
            return false;
        }
        self.levels.pop();
        self.levels_left_out += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(row: &str) -> Vec<Vec<(usize, u8)>> {
        let bytes = base64::engine::general_purpose::STANDARD.decode(row).unwrap();
        let mut bins = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            let n = bytes[i] as usize;
            bins.push((0..n).map(|k| (bytes[i + 1 + 2 * k] as usize, bytes[i + 2 + 2 * k])).collect());
            i += 1 + 2 * n;
        }
        bins
    }

    #[test]
    fn time_is_shared_out_among_the_bins_it_overlaps() {
        // Two ranks over 4 096 ns: bins of 1 ns at the finest.
        let mut s = Summary::new((1_000, 1_000 + 4_095), 2);
        assert_eq!((s.width, s.bins, s.rows), (1, 4_096, 2));
        let recv = state_of("recv");
        s.add(1, recv, 1_000, 1_000 + 2_048); // the first half
        s.change(1, recv, WAITING, 1_000, 1_000 + 1_024); // its first half waiting
        let data = s.encode(u64::MAX);
        // One level: a coarser one would have fewer than 2 048 bins.
        assert_eq!(data.levels.len(), 1);
        let bins = decode(&data.levels[0].rows[1]);
        assert_eq!(bins.len(), 4_096);
        assert_eq!(bins[0], [(WAITING, 255)]);
        assert_eq!(bins[1_500], [(recv, 255)]);
        assert_eq!(bins[3_000], []);
        assert!(decode(&data.levels[0].rows[0]).iter().all(|b| b.is_empty()));
    }

    #[test]
    fn coarser_levels_sum_the_finer_and_the_budget_drops_the_finest() {
        // One rank over 2^20 ns: the finest bins are 4 ns.
        let mut s = Summary::new((0, (1 << 20) - 1), 1);
        assert_eq!((s.width, s.bins), (4, 1 << 18));
        let send = state_of("send");
        // A send of 1 ns in each 8 ns.
        for i in 0..(1u64 << 17) {
            s.add(0, send, i * 8, i * 8 + 1);
        }
        let data = s.encode(u64::MAX);
        let widths: Vec<u64> = data.levels.iter().map(|l| l.bin_ns).collect();
        assert_eq!(widths, [4 * 64, 4 * 16, 4 * 4, 4], "coarsest first, down to >= 2048 bins");
        for level in &data.levels {
            let bins = decode(&level.rows[0]);
            assert_eq!(bins.len(), level.bins);
            // An eighth of every bin of 8 ns or more; a half of every
            // other 4 ns bin at the finest.
            let want = if level.bin_ns >= 8 { 32 } else { 64 };
            assert_eq!(bins[10], [(send, want)], "level of {} ns", level.bin_ns);
        }
        let small = s.encode(data.levels[0].rows[0].len() as u64 + 1);
        assert_eq!((small.levels.len(), small.levels_left_out), (1, 3));
    }

    #[test]
    fn many_ranks_are_summed_in_groups() {
        let mut s = Summary::new((0, 9_999), 1_000);
        assert_eq!((s.group, s.rows), (8, 125));
        // Ranks 8 to 15, row 1, each half the run in collectives.
        let collective = state_of("collective");
        for rank in 8..16 {
            s.add(rank, collective, 0, 5_000);
        }
        let data = s.encode(u64::MAX);
        let bins = decode(&data.levels.last().unwrap().rows[1]);
        // Eight ranks' time in one row of eight: all of it; half of it
        // when only four of them are busy.
        assert_eq!(bins[0], [(collective, 255)]);
        s.change(12, collective, WAITING, 0, 5_000);
        s.change(13, collective, WAITING, 0, 5_000);
        s.change(14, collective, WAITING, 0, 5_000);
        s.change(15, collective, WAITING, 0, 5_000);
        let bins = decode(&s.encode(u64::MAX).levels.last().unwrap().rows[1]);
        assert_eq!(bins[0], [(WAITING, 128), (collective, 128)]);
        assert!(decode(&data.levels[0].rows[0]).iter().all(|b| b.is_empty()));
    }
}
