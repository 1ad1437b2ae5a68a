//! An mpiP-style profile of a trace, computed in one pass over the
//! [`CausalStream`] with memory independent of the trace's length
//! (per-rank accumulators, a sparse rank × rank matrix, a region stack per
//! rank, the collective instances in flight).
//!
//! The tables:
//!
//! - **calls by type** (send, recv, isend, irecv, wait, test, probe,
//!   iprobe, comm_create, each collective operation): count, total, mean,
//!   min and max time, share of the run time, bytes;
//! - **call sites**, as mpiP's: the call type at the source location of
//!   the program's call (`file:line:column`, recorded with every runtime
//!   call), with the *innermost enclosing user region* (its name and
//!   source location, from `Communicator::region`) beside it. Records
//!   without a location (made by the runtime itself) are told apart by
//!   their region alone;
//! - **message sizes**: power-of-two histograms of the point-to-point
//!   messages sent and of the collectives' per-rank contributions;
//! - **per rank**: total (first to last event), time in runtime calls
//!   (the union of the calls' intervals: a `sendrecv` records an
//!   overlapping send and receive), and of that the *waiting* time —
//!   late sender: the part of a receive (or of a wait completing one)
//!   before its matching send started; collectives: from the rank's entry
//!   to the last entry of the instance, the k-th collective of every rank
//!   on one communicator — the rest being *communication*; compute is the
//!   total minus the calls. compute + communication + waiting = total;
//! - **communication matrix**: messages and bytes, sender × receiver;
//! - **user regions** by inclusive time.
//!
//! Bytes of a call: sent by `send`/`isend`, received by `recv` and by a
//! `wait`/`test` completing a receive, contributed to a collective.
//!
//! A call that failed because a peer died or the job was stopped counts
//! under its type and site like any other, its whole time as waiting (for
//! a peer that never came), with no bytes and no message in the matrix; a
//! note lists such calls.
//! Trace-buffer flushes are not calls: their time counts as compute
//! ([`RankRow::flush_ns`] has it apart).

mod profiler;
mod tables;
mod text;

use crate::error::Result;
use crate::stream::{CausalStream, incomplete};

pub use profiler::Profiler;
pub use tables::{CallRow, CallStats, MatrixCell, Profile, RankRow, RegionRow, SiteRow, SizeBin};

/// Reads the whole stream and profiles it; `progress` gets the events
/// read. `world_size`: ranks in the job (a collective on a communicator
/// whose creation is not in the trace is taken to involve every traced
/// rank).
pub fn profile(mut stream: CausalStream, world_size: u32, progress: &mut dyn FnMut(u64)) -> Result<Profile> {
    let mut profiler = Profiler::for_stream(&stream, world_size);
    let mut events = 0u64;
    while let Some(linked) = stream.next_event()? {
        profiler.observe(linked);
        events += 1;
        if events % crate::PROGRESS_EVERY == 0 {
            progress(events);
        }
    }
    progress(events);
    let mut profile = profiler.finish();
    let partial = incomplete(&stream.summary()).into_iter().map(|line| format!("partial trace: {line}"));
    profile.notes.splice(0..0, partial);
    Ok(profile)
}
