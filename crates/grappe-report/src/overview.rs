//! The overview of the whole run: per rank and time bin, the time in
//! point-to-point calls and in collectives. Bins have one width for all
//! ranks, doubled (neighbours merged) whenever a call ends beyond the
//! last bin, so the run need not be known in advance.

use grappe_analysis::CallType;
use serde::Serialize;

/// Time in calls per rank and time bin, for the whole run.
#[derive(Debug)]
pub(super) struct Overview {
    bins: usize,
    origin: Option<u64>,
    width: u64,
    /// Per lane, per bin: ns in point-to-point calls, ns in collectives.
    pub(super) lanes: Vec<Vec<[u64; 2]>>,
}

/// The overview as sent to the page: per lane, per bin, the fraction of
/// time in point-to-point calls and in collectives (‰).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct OverviewData {
    start: u64,
    bin_ns: u64,
    bins: usize,
    p2p: Vec<Vec<u16>>,
    coll: Vec<Vec<u16>>,
}

impl Overview {
    pub(super) fn new(bins: usize) -> Self {
        Overview { bins, origin: None, width: 1, lanes: Vec::new() }
    }

    pub(super) fn add(&mut self, lane: usize, call: CallType, start: u64, end: u64) {
        let origin = *self.origin.get_or_insert(start);
        let (start, end) = (start.max(origin) - origin, end.max(origin) - origin);
        while end >= self.width.saturating_mul(self.bins as u64) && self.width < u64::MAX / 4 {
            self.coarsen();
        }
        let column = matches!(call, CallType::Collective(_)) as usize;
        let cells = &mut self.lanes[lane];
        let last = ((end.saturating_sub(1).max(start) / self.width) as usize).min(self.bins - 1);
        if cells.len() <= last {
            cells.resize(last + 1, [0, 0]);
        }
        for (b, cell) in cells.iter_mut().enumerate().take(last + 1).skip((start / self.width) as usize) {
            let (lo, hi) = (self.width.saturating_mul(b as u64), self.width.saturating_mul(b as u64 + 1));
            cell[column] = cell[column].saturating_add(end.min(hi).saturating_sub(start.max(lo)));
        }
    }

    /// Doubles the bin width.
    fn coarsen(&mut self) {
        self.width *= 2;
        for cells in &mut self.lanes {
            let merged: Vec<[u64; 2]> =
                cells.chunks(2).map(|c| c.iter().fold([0, 0], |a, x| add_cells(a, *x))).collect();
            *cells = merged;
        }
    }

    pub(super) fn data(&self, order: &[usize], origin: u64, end: u64) -> OverviewData {
        let start = self.origin.unwrap_or(origin);
        let bins = (end.saturating_sub(start).div_ceil(self.width) as usize).clamp(1, self.bins);
        let permille = |v: u64| (v.saturating_mul(1000) / self.width).min(1000) as u16;
        let column = |lane: usize, c: usize| -> Vec<u16> {
            let cells = &self.lanes[lane];
            (0..bins).map(|b| cells.get(b).map_or(0, |cell| permille(cell[c]))).collect()
        };
        OverviewData {
            start: start.saturating_sub(origin),
            bin_ns: self.width,
            bins,
            p2p: order.iter().map(|&l| column(l, 0)).collect(),
            coll: order.iter().map(|&l| column(l, 1)).collect(),
        }
    }
}

fn add_cells(a: [u64; 2], b: [u64; 2]) -> [u64; 2] {
    [a[0].saturating_add(b[0]), a[1].saturating_add(b[1])]
}
