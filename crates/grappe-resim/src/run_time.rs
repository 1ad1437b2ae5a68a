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

fn slowest(program: &Program, date: impl Fn(usize, usize) -> (i64, i64)) -> Option<f64> {
    let mut longest: Option<i64> = None;
    for (rank, steps) in program.flows.iter().enumerate() {
        let init = steps.iter().position(|s| matches!(s.event.body, Body::Init));
        let fin = steps.iter().rposition(|s| matches!(s.event.body, Body::Finalize));
        if let (Some(init), Some(fin)) = (init, fin) {
            let span = date(rank, fin).0 - date(rank, init).1;
            longest = Some(longest.map_or(span, |l| l.max(span)));
        }
    }
    longest.map(|ns| ns as f64 / 1e9)
}
