//! Run time, measured as `grappe run --report-time` measures it: from the
//! end of each rank's start-up (its init event, which holds the first
//! clock-sampling phase) to the start of its finalize, the slowest rank's.

use grappe_trace::Body;

use crate::engine::Dates;
use crate::program::Program;

/// The run time the trace measured, s (`None` if no rank has both its
/// init and its finalize).
pub fn measured(program: &Program) -> Option<f64> {
    slowest(program, |rank, index| {
        let e = &program.flows[rank][index].event;
        (e.start as i64, e.end as i64)
    })
}

/// The run time under `dates`, s.
pub fn of(program: &Program, dates: &Dates) -> Option<f64> {
    slowest(program, |rank, index| dates.of[rank][index])
}

/// One rank's run time as the trace measured it and under the traversal's
/// dates, and the α its events recorded in that span: where a residual
/// comes from, rank by rank (a rank whose new time is its traced time
/// less its α had all its recording cost removed and waited no more).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct RankRunTime {
    /// The rank.
    pub rank: u32,
    /// From the end of its init to the start of its finalize, as traced, s.
    pub traced_s: f64,
    /// The same span under the traversal's dates, s.
    pub new_s: f64,
    /// The α of its events in the span (its init's included: spent after
    /// the init's end), flushes included, s.
    pub alpha_s: f64,
}

/// Every rank's [`RankRunTime`] under `dates` (ranks without both an init
/// and a finalize are left out).
pub fn by_rank(program: &Program, dates: &Dates) -> Vec<RankRunTime> {
    (0..program.flows.len())
        .filter_map(|rank| {
            let (init, fin) = window(program, rank)?;
            let steps = &program.flows[rank];
            let traced = steps[fin].event.start as i64 - steps[init].event.end as i64;
            let new = dates.of[rank][fin].0 - dates.of[rank][init].1;
            let alpha: i64 = steps[init..fin].iter().map(|s| i64::from(s.event.alpha_ns)).sum();
            let s = |ns: i64| ns as f64 / 1e9;
            Some(RankRunTime { rank: rank as u32, traced_s: s(traced), new_s: s(new), alpha_s: s(alpha) })
        })
        .collect()
}

/// The indices of `rank`'s first init and last finalize.
fn window(program: &Program, rank: usize) -> Option<(usize, usize)> {
    let steps = &program.flows[rank];
    let init = steps.iter().position(|s| matches!(s.event.body, Body::Init))?;
    let fin = steps.iter().rposition(|s| matches!(s.event.body, Body::Finalize))?;
    Some((init, fin))
}

fn slowest(program: &Program, date: impl Fn(usize, usize) -> (i64, i64)) -> Option<f64> {
    let mut longest: Option<i64> = None;
    for rank in 0..program.flows.len() {
        if let Some((init, fin)) = window(program, rank) {
            let span = date(rank, fin).0 - date(rank, init).1;
            longest = Some(longest.map_or(span, |l| l.max(span)));
        }
    }
    longest.map(|ns| ns as f64 / 1e9)
}
