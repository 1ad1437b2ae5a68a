//! Regression points in a centred frame.
//!
//! Every estimator reduces samples to points (x, d) where x is a reference
//! date and d = lt_j − lt_ref is the peer's offset at that date. Fitting the
//! offset series d = a + κ·x instead of y = α + β·x is the same regression
//! (β = 1 + κ, identical residuals and variances) but keeps the drift κ ≈ 1e-6
//! at full precision instead of as the 7th decimal of β ≈ 1.
//!
//! Raw nanosecond dates are ~1e18; both coordinates are taken relative to an
//! origin (x0, d0) in `i128` before converting to `f64`, so the sums of the
//! regression never see large numbers (the numerical advice of the chapter,
//! §2.4.4).

use crate::sample::Sample;

/// Which timestamps a point comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    /// Eq. 3.9: the peer's clock at the pong's arrival (Dunigan). On the line.
    Midpoint,
    /// (lt_ref(S_ref), lt_j(R_j)) of Eq. 3.4: above the line by the latency.
    Forward,
    /// (lt_ref(R_ref), lt_j(S_j)) of Eq. 3.5: below the line by the latency.
    Return,
}

/// A point relative to the frame's origin: x in ns since x0, d in ns minus d0.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Point {
    pub x: f64,
    pub d: f64,
    pub dir: Direction,
}

/// The origin of the centred coordinates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Frame {
    /// Reference date of the origin: the first sample's ping.
    pub x0: i64,
    /// Offset at the origin, rounded: the first sample's r − s_ref.
    pub d0: i128,
}

impl Frame {
    /// The frame anchored at a sample.
    pub fn at(first: &Sample) -> Self {
        Frame { x0: first.t_send_ref, d0: i128::from(first.t_recv_peer) - i128::from(first.t_send_ref) }
    }

    fn x(&self, reference_date: i64) -> f64 {
        (i128::from(reference_date) - i128::from(self.x0)) as f64
    }

    /// A point from a reference date and twice the offset there.
    fn point(&self, reference_date: i64, twice_d: i128, dir: Direction) -> Point {
        Point { x: self.x(reference_date), d: (twice_d - 2 * self.d0) as f64 / 2.0, dir }
    }

    /// Eq. 3.9: (lt_ref(R_ref), lt̂_j(R_ref)), as an offset.
    pub fn midpoint(&self, s: &Sample) -> Point {
        self.point(s.t_recv_ref, s.twice_midpoint_offset(), Direction::Midpoint)
    }

    /// Eq. 3.4: the ping's two dates.
    pub fn forward(&self, s: &Sample) -> Point {
        let twice = 2 * (i128::from(s.t_recv_peer) - i128::from(s.t_send_ref));
        self.point(s.t_send_ref, twice, Direction::Forward)
    }

    /// Eq. 3.5: the pong's two dates.
    pub fn back(&self, s: &Sample) -> Point {
        let twice = 2 * (i128::from(s.t_send_peer) - i128::from(s.t_recv_ref));
        self.point(s.t_recv_ref, twice, Direction::Return)
    }

    /// Absolute reference date of a centred abscissa.
    pub fn reference_date(&self, x: f64) -> i64 {
        (self.x0 as f64 + x).round() as i64
    }

    /// Absolute offset of a centred ordinate. Precision is that of an `f64`
    /// holding the clocks' offset: 0.1 ns even for offsets of days.
    pub fn offset(&self, d: f64) -> f64 {
        self.d0 as f64 + d
    }
}

/// Eq. 3.9 points, one per sample (Dunigan, `R_j`).
pub(crate) fn dunigan(frame: &Frame, samples: &[Sample]) -> Vec<Point> {
    samples.iter().map(|s| frame.midpoint(s)).collect()
}

/// The 2n raw points of Haddad et al. (`S_j`), in time order.
pub(crate) fn haddad(frame: &Frame, samples: &[Sample]) -> Vec<Point> {
    samples.iter().flat_map(|s| [frame.forward(s), frame.back(s)]).collect()
}

/// The samples with the shortest time on the wire, in their original order.
/// Long round trips are the likely asymmetric ones (NTP's rule, §2.4.8 of the
/// chapter), so they are the ones that bias the Eq. 3.9 midpoint.
pub(crate) fn shortest_round_trips(samples: &[Sample], keep: f64) -> Vec<Sample> {
    let count = ((samples.len() as f64 * keep).ceil() as usize).clamp(1, samples.len());
    let mut order: Vec<usize> = (0..samples.len()).collect();
    order.sort_by_key(|&i| samples[i].wire_time());
    order.truncate(count);
    order.sort_unstable();
    order.into_iter().map(|i| samples[i]).collect()
}

/// A phase's quiet exchanges, in their original order: at most the
/// quieter half by time on the wire, and of those only the ones within
/// the usual spread of the quietest (below), but always the three
/// quietest (or all, if fewer). An exchange delayed one way (the peer
/// asleep when the ping came, a descheduled reference) has a long time on
/// the wire, and its Eq. 3.9 midpoint is off by up to half of it; on a
/// loaded host more than half of a phase may be delayed, by milliseconds.
///
/// The usual spread: the quietest time on the wire w₀ plus the larger of
/// w₀ and three times the spread of the three quietest (w₂ − w₀). When w₀
/// is not positive the clocks' read noise exceeds the latency and decides
/// the times on the wire: then the quieter half is kept, as a choice
/// narrower than the noise would favour the exchanges whose noise happens
/// to shorten the wire, and bias their midpoints.
pub(crate) fn quietest(samples: &[Sample]) -> Vec<Sample> {
    let mut order: Vec<usize> = (0..samples.len()).collect();
    order.sort_by_key(|&i| samples[i].wire_time());
    if order.is_empty() {
        return Vec::new();
    }
    let wire = |k: usize| samples[order[k]].wire_time();
    let floor = 3.min(samples.len());
    let w0 = wire(0);
    let limit = if w0 > 0 { w0 + (3 * (wire(floor - 1) - w0)).max(w0) } else { i128::MAX };
    let half = samples.len().div_ceil(2).max(floor);
    let kept = (floor..half).take_while(|&k| wire(k) <= limit).count() + floor;
    order.truncate(kept);
    order.sort_unstable();
    order.into_iter().map(|i| samples[i]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn midpoint_is_the_offset_at_the_pong_arrival() {
        // Peer is 1000 ns ahead; 100 ns each way, 50 ns turnaround.
        let s = Sample::new(0, 1100, 1150, 250);
        let frame = Frame { x0: 0, d0: 0 };
        let p = frame.midpoint(&s);
        assert_eq!((p.x, p.d), (250.0, 1000.0));
        assert_eq!(frame.forward(&s).d, 1100.0);
        assert_eq!(frame.back(&s).d, 900.0);
    }

    #[test]
    fn frame_keeps_precision_on_large_dates() {
        let base = 4_000_000_000_000_000_000_i64;
        let s = Sample::new(base, base + 1_000_000_001, base + 1_000_000_003, base + 3);
        let frame = Frame::at(&s);
        let p = frame.midpoint(&s);
        assert_eq!(p.x, 3.0);
        assert_eq!(frame.offset(p.d), 1_000_000_000.5);
    }

    #[test]
    fn shortest_round_trips_keeps_order_and_at_least_one() {
        let s = |rtt: i64, at: i64| Sample::new(at, at + 5, at + 5, at + rtt);
        let samples = [s(30, 0), s(10, 100), s(20, 200), s(40, 300)];
        let kept = shortest_round_trips(&samples, 0.5);
        assert_eq!(kept, vec![samples[1], samples[2]]);
        assert_eq!(shortest_round_trips(&samples, 0.01).len(), 1);
    }

    #[test]
    fn quietest_keeps_half_and_at_least_three() {
        let s = |rtt: i64, at: i64| Sample::new(at, at + 5, at + 5, at + rtt);
        let eight: Vec<Sample> =
            [90, 10, 30, 20, 500, 40, 15, 60].iter().zip(0..).map(|(&r, k)| s(r, 100 * k)).collect();
        let kept = quietest(&eight);
        assert_eq!(kept, vec![eight[1], eight[2], eight[3], eight[6]]);
        assert_eq!(quietest(&eight[..4]).len(), 3);
        assert_eq!(quietest(&eight[..2]).len(), 2);
        assert!(quietest(&[]).is_empty());
    }

    #[test]
    fn quietest_drops_a_delayed_majority() {
        // 3 exchanges near 10 ns on the wire, 7 delayed by milliseconds.
        let s = |rtt: i64, at: i64| Sample::new(at, at + 5, at + 5, at + rtt);
        let wires = [3_000_000, 10, 4_000_000, 12, 2_000_000, 11, 5_000_000, 6_000_000, 13, 7_000_000];
        let samples: Vec<Sample> = wires.iter().zip(0..).map(|(&w, k)| s(w, 100 * k)).collect();
        let kept = quietest(&samples);
        assert_eq!(kept, vec![samples[1], samples[3], samples[5], samples[8]]);
    }
}
