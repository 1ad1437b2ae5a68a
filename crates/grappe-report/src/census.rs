//! What the first pass (the check's) learns for the second: the run's
//! span, so that the summary's bins are placed once and for all, and
//! where in time the calls and messages lie, so that the calls drawn one
//! by one can be spread over the whole run within the page's size.
//!
//! Memory is fixed: a histogram of [`CENSUS_BINS`] bins whose width
//! doubles (neighbours merged) whenever an event ends beyond the last.

use grappe_analysis::{CallType, LinkedRef, Message};
use grappe_trace::Body;

/// Bins of the histogram of calls and messages over time.
const CENSUS_BINS: usize = 1 << 16;
/// Detail windows spread over the interval detailed when not all of it
/// fits: nowhere is detail further than a 256th of the interval away.
const SEGMENTS: usize = 256;

/// Calls (and regions) starting and messages received per time bin.
#[derive(Debug)]
pub(crate) struct Census {
    /// The date the histogram counts from (global ns).
    origin: u64,
    width: u64,
    /// Per bin: intervals starting there, messages received there.
    bins: Vec<[u64; 2]>,
    /// The run's first start and last end (global ns), once an event is seen.
    span: Option<(u64, u64)>,
}

/// The part of the run drawn call by call: windows of global ns, sorted,
/// disjoint, `[start, end)`.
pub(crate) type Windows = Vec<(u64, u64)>;

/// What a call, a region and an arrow add to the page, in bytes, about.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Costs {
    pub interval: u64,
    pub arrow: u64,
}

impl Census {
    /// A census counting from `origin` (the stream's, if it has one).
    pub(crate) fn new(origin: Option<u64>) -> Self {
        Census { origin: origin.unwrap_or(0), width: 1, bins: vec![[0, 0]; CENSUS_BINS], span: None }
    }

    /// Counts one event of the causal stream.
    pub(crate) fn observe(&mut self, linked: LinkedRef<'_>) {
        let event = linked.event;
        let (start, end) = (event.start, event.end.max(event.start));
        let span = self.span.get_or_insert((start, end));
        *span = (span.0.min(start), span.1.max(end));
        let interval = CallType::of(&event.body).is_some()
            || matches!(event.body, Body::Init | Body::Finalize | Body::RegionEnter { .. });
        let arrow = matches!(linked.message, Message::Received { .. });
        if !interval && !arrow {
            return;
        }
        while end.saturating_sub(self.origin) >= self.width.saturating_mul(CENSUS_BINS as u64)
            && self.width < u64::MAX / 4
        {
            self.coarsen();
        }
        let (start_bin, end_bin) = (self.bin(start), self.bin(end));
        self.bins[start_bin][0] += interval as u64;
        self.bins[end_bin][1] += arrow as u64;
    }

    fn bin(&self, date: u64) -> usize {
        ((date.saturating_sub(self.origin) / self.width) as usize).min(CENSUS_BINS - 1)
    }

    fn coarsen(&mut self) {
        self.width *= 2;
        for i in 0..CENSUS_BINS / 2 {
            let (a, b) = (self.bins[2 * i], self.bins[2 * i + 1]);
            self.bins[i] = [a[0] + b[0], a[1] + b[1]];
        }
        self.bins[CENSUS_BINS / 2..].fill([0, 0]);
    }

    /// The run's first start and last end (global ns); `None` for a trace
    /// with no event.
    pub(crate) fn span(&self) -> Option<(u64, u64)> {
        self.span
    }

    /// The windows to draw call by call in `interval` (global ns, `[from,
    /// to)`), so that what they hold costs about `budget` bytes: the whole
    /// interval if it fits; else one window at the start of each of
    /// [`SEGMENTS`] equal segments of it, each as long as an equal share
    /// of the budget allows (a segment that needs less than its share
    /// gives the rest to the others).
    pub(crate) fn windows(&self, interval: (u64, u64), budget: u64, costs: Costs) -> Windows {
        let Some((first, last)) = self.span else { return Vec::new() };
        let (from, to) = (interval.0.max(first), interval.1.min(last.saturating_add(1)));
        if from >= to {
            return Vec::new();
        }
        let segments = self.segments(from, to, costs);
        let total: u64 = segments.iter().map(|s| s.cost).sum();
        if total <= budget {
            return vec![(from, to)];
        }
        let level = water_level(&segments, budget);
        let mut windows: Windows = Vec::new();
        for segment in &segments {
            let end = self.cut(segment, level, costs);
            if end <= segment.start {
                continue;
            }
            match windows.last_mut() {
                Some(last) if last.1 >= segment.start => last.1 = end,
                _ => windows.push((segment.start, end)),
            }
        }
        windows
    }

    /// [`SEGMENTS`] equal segments of `[from, to)` and their costs.
    fn segments(&self, from: u64, to: u64, costs: Costs) -> Vec<Segment> {
        let n = (SEGMENTS as u64).min(to - from).max(1);
        (0..n)
            .map(|s| {
                let start = from + ((to - from) as u128 * s as u128 / n as u128) as u64;
                let end = from + ((to - from) as u128 * (s + 1) as u128 / n as u128) as u64;
                Segment { start, end, cost: self.cost(start, end, costs) }
            })
            .collect()
    }

    /// What the calls and messages of `window` cost, about.
    pub(crate) fn cost_of(&self, window: (u64, u64), costs: Costs) -> u64 {
        self.cost(window.0, window.1, costs)
    }

    /// What the bins of `[start, end)` cost, a bin cut by the interval in
    /// proportion.
    fn cost(&self, start: u64, end: u64, costs: Costs) -> u64 {
        let mut total = 0u128;
        let mut bin = self.bin(start);
        while bin < CENSUS_BINS {
            let (lo, hi) = self.bin_dates(bin);
            if lo >= end {
                break;
            }
            let part = (hi.min(end) - lo.max(start)) as u128;
            total += self.bin_cost(bin, costs) as u128 * part / (hi - lo) as u128;
            bin += 1;
        }
        total.min(u64::MAX as u128) as u64
    }

    fn bin_dates(&self, bin: usize) -> (u64, u64) {
        let lo = self.origin.saturating_add(self.width.saturating_mul(bin as u64));
        (lo, lo.saturating_add(self.width))
    }

    fn bin_cost(&self, bin: usize, costs: Costs) -> u64 {
        let [intervals, arrows] = self.bins[bin];
        intervals.saturating_mul(costs.interval).saturating_add(arrows.saturating_mul(costs.arrow))
    }

    /// Where the window of `segment` ends when it may cost `level`: the
    /// segment's end if it costs less, else the date the cost reaches
    /// `level` (a bin counted as spread evenly over its width).
    fn cut(&self, segment: &Segment, level: u64, costs: Costs) -> u64 {
        if segment.cost <= level {
            return segment.end;
        }
        let mut spent = 0u64;
        let mut bin = self.bin(segment.start);
        loop {
            let (lo, hi) = self.bin_dates(bin);
            let (lo, hi) = (lo.max(segment.start), hi.min(segment.end));
            let cost = self.cost(lo, hi, costs);
            if spent + cost > level {
                let share = (level - spent) as u128 * (hi - lo) as u128 / cost.max(1) as u128;
                return lo + share as u64;
            }
            spent += cost;
            bin += 1;
            if hi >= segment.end || bin >= CENSUS_BINS {
                return segment.end;
            }
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Segment {
    start: u64,
    end: u64,
    cost: u64,
}

/// The largest `level` such that the segments, each taking at most
/// `level`, take at most `budget` together.
fn water_level(segments: &[Segment], budget: u64) -> u64 {
    let taken = |level: u64| segments.iter().map(|s| s.cost.min(level)).fold(0u64, u64::saturating_add);
    let (mut lo, mut hi) = (0u64, segments.iter().map(|s| s.cost).max().unwrap_or(0));
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if taken(mid) <= budget { lo = mid } else { hi = mid - 1 }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;
    use grappe_trace::Event;

    const COSTS: Costs = Costs { interval: 10, arrow: 0 };

    /// A census of one call starting at each of `starts` (ns), lasting 1 ns.
    fn census_of(starts: impl Iterator<Item = u64>) -> Census {
        let mut census = Census::new(Some(0));
        for start in starts {
            let body = Body::Init;
            let event = Event { rank: 0, start, end: start + 1, alpha_ns: 0, site: None, body };
            census.observe(LinkedRef { event: &event, message: &Message::None });
        }
        census
    }

    #[test]
    fn a_trace_that_fits_is_one_window() {
        let census = census_of((0..1000).map(|i| i * 100));
        assert_eq!(census.span(), Some((0, 99_901)));
        assert_eq!(census.windows((0, u64::MAX), 10_000, COSTS), vec![(0, 99_902)]);
        // An interval asked for bounds it.
        assert_eq!(census.windows((5_000, 7_000), 10_000, COSTS), vec![(5_000, 7_000)]);
    }

    #[test]
    fn a_trace_that_does_not_fit_gets_windows_spread_over_the_whole_run() {
        // 100 000 calls evenly spread, a budget for a tenth of them.
        let census = census_of((0..100_000).map(|i| i * 100));
        let windows = census.windows((0, u64::MAX), 100_000, COSTS);
        assert_eq!(windows.len(), SEGMENTS);
        let covered: u64 = windows.iter().map(|w| w.1 - w.0).sum();
        let run = 9_999_902; // to the last end, included
        assert!((covered as f64 / run as f64 - 0.1).abs() < 0.01, "{covered} ns of {run} ns");
        // One at the start of each 256th of the run, the last near its end.
        assert_eq!(windows[0].0, 0);
        assert_eq!(windows.last().unwrap().0, run * 255 / 256);
        assert!(windows.windows(2).all(|w| w[0].1 < w[1].0), "sorted and disjoint");
    }

    #[test]
    fn a_quiet_segment_gives_its_share_to_the_busy_ones() {
        // The first half has one call per 10 µs, the second one per 100 ns.
        let quiet = (0..500).map(|i| i * 10_000);
        let busy = (0..50_000).map(|i| 5_000_000 + i * 100);
        let census = census_of(quiet.chain(busy));
        let windows = census.windows((0, u64::MAX), 100_000, COSTS);
        // The quiet half is detailed whole, in one window with the start
        // of the busy half's first segment; the busy half gets the rest of
        // the budget, 9 500 calls of 50 000, in a window per segment.
        assert_eq!(windows[0].0, 0);
        assert!(windows[0].1 > 5_000_000 && windows[0].1 < 5_010_000, "{:?}", windows[0]);
        let busy: u64 = windows.iter().map(|w| w.1 - w.0.max(5_000_000)).sum();
        assert!((busy as f64 / 5e6 - 0.19).abs() < 0.01, "{busy} ns");
        assert_eq!(windows.len(), 128);
    }
}
