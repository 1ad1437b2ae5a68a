//! Tracing a job: the recorder of each rank, its clock samples, its
//! beginning and end.
//!
//! `GRAPPE_TRACE=DIR` (what `grappe run --trace DIR` sets) turns it on.
//! Clock sampling, for global time, follows Tape/PVM's SBA: one phase
//! before the program and one after, rank 0 against every other rank.
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `GRAPPE_TRACE` | directory of the per-rank trace files (local storage) | off |
//! | `GRAPPE_TRACE_FLUSH` | `end`, `full` or `thread` (see `grappe_trace::FlushPolicy`) | `full` |
//! | `GRAPPE_TRACE_BUFFER` | events per rank buffer | 65536 |
//! | `GRAPPE_TRACE_SYNC` | `sba` (before and after) or `sb` (before only) | `sba` |
//! | `GRAPPE_TRACE_SYNC_POINTS` | exchanges per peer and phase (at least 3) | 20 |
//! | `GRAPPE_TRACE_SYNC_SPACING_US` | pause between rounds of exchanges | 1000 |
//! | `GRAPPE_TRACE_SIMULATE` | distort each rank's clock, e.g. `offset=2ms,drift=50ppm,amplitude=5us,period=10s,jitter=50ns,seed=7` (see `grappe_clock::sim::SimulationSpec`; implies the raw monotonic clock) | off |
//!
//! Simulated clocks let one host test global time: every rank's dates are
//! distorted as a clock of another host would be, and the header of each
//! file says how. Jitter is read noise: dates closer together than it may
//! come out of order, and `grappe trace check` says so.

use std::sync::Arc;
use std::time::Duration;

use grappe_clock::sim::{LocalClock, SimulatedClock, SimulationSpec};
use grappe_comm::{Communicator, RankContext};
use grappe_trace::format::RankThread;
use grappe_trace::{Identity, Recorder, RecorderConfig, TimeMap};

use crate::job::{Job, WorkerPlan};

/// How this job records.
#[derive(Debug, Clone)]
pub(crate) struct TraceSettings {
    pub recorder: RecorderConfig,
    pub after_phase: bool,
    pub points: usize,
    pub spacing: Duration,
    pub simulate: Option<SimulationSpec>,
}

impl TraceSettings {
    pub fn from_env() -> Result<Option<TraceSettings>, String> {
        let Some(recorder) = RecorderConfig::from_env()? else { return Ok(None) };
        let after_phase = match std::env::var("GRAPPE_TRACE_SYNC").as_deref() {
            Err(_) | Ok("sba") => true,
            Ok("sb") => false,
            Ok(other) => return Err(format!("GRAPPE_TRACE_SYNC={other:?}: expected sba or sb")),
        };
        let number = |var: &str, default: u64| -> Result<u64, String> {
            match std::env::var(var) {
                Err(_) => Ok(default),
                Ok(v) => v.trim().parse().map_err(|_| format!("{var}={v:?} is not a number")),
            }
        };
        match std::env::var("GRAPPE_TRACE_CLOCK").as_deref() {
            Err(_) | Ok("monotonic_raw" | "tsc") => {}
            Ok(other) => return Err(format!("GRAPPE_TRACE_CLOCK={other:?}: expected monotonic_raw or tsc")),
        }
        let points = number("GRAPPE_TRACE_SYNC_POINTS", 20)?;
        if points < 3 {
            return Err(format!("GRAPPE_TRACE_SYNC_POINTS={points}: a clock fit needs at least 3 exchanges a phase"));
        }
        Ok(Some(TraceSettings {
            recorder,
            after_phase,
            points: points as usize,
            spacing: Duration::from_micros(number("GRAPPE_TRACE_SYNC_SPACING_US", 1000)?),
            simulate: match std::env::var("GRAPPE_TRACE_SIMULATE") {
                Err(_) => None,
                Ok(v) => Some(v.parse().map_err(|e| format!("GRAPPE_TRACE_SIMULATE={v:?}: {e}"))?),
            },
        }))
    }
}

/// Starts the trace of world rank `rank` if the job records: measures
/// what recording adds to each kind of call on this rank (the α of calls), then
/// creates the rank's file and installs its recorder. Called on the thread
/// that runs the rank, one of the workers of `plan`, before any traced call.
pub(crate) fn start_recorder(job: &Job, rank: usize, plan: &[WorkerPlan], world: &Communicator) -> Result<(), String> {
    let Some(settings) = &job.trace else { return Ok(()) };
    let calls =
        world.measure_call_recording().map_err(|e| format!("rank {rank}: cannot time the recording of calls: {e}"))?;
    let who = Identity {
        rank: rank as u32,
        world_size: job.locals.len() as u32,
        process_ranks: job.mine.clone().map(|r| r as u32).collect(),
        job: job.id.clone(),
        thread: Some(this_thread(rank, plan)),
    };
    let time_map =
        settings.simulate.map(|spec| Arc::new(SimulatedTime(spec.clock_for(rank as u32))) as Arc<dyn TimeMap>);
    let recorder = Recorder::create_with_call_costs(&settings.recorder, who, time_map, Some(calls))
        .map_err(|e| format!("cannot create the trace of rank {rank} in {}: {e}", settings.recorder.dir.display()))?;
    world.rank_context().install_recorder(recorder);
    Ok(())
}

/// The calling thread, which runs `rank` for the whole run (ranks never
/// move between workers): its id, the CPU it is bound to if one, and the
/// ranks of its worker.
fn this_thread(rank: usize, plan: &[WorkerPlan]) -> RankThread {
    // SAFETY: gettid takes no argument and cannot fail.
    let tid = nix::unistd::gettid().as_raw() as u32;
    let cpu = match grappe_sched::allowed_cpus()[..] {
        [only] => Some(only as u32),
        _ => None,
    };
    let worker = plan.iter().find(|worker| worker.ranks.contains(&rank));
    let ranks = worker.map_or(vec![rank as u32], |worker| worker.ranks.iter().map(|&r| r as u32).collect());
    RankThread { tid, cpu, ranks }
}

/// Start of a traced rank: its first event, the init, which holds the
/// first sampling phase.
pub(crate) fn begin(job: &Job, world: &Communicator) -> grappe_comm::Result<()> {
    let Some(settings) = &job.trace else { return Ok(()) };
    world.trace_lifecycle(true, || world.sample_clocks(0, settings.points, settings.spacing))
}

/// End of a traced rank: the last event, the finalize, which holds the
/// second sampling phase; α measured again; and the file completed
/// (before the final barrier, which is not traced).
pub(crate) fn end(job: &Job, world: &Communicator, ctx: &RankContext) -> grappe_comm::Result<()> {
    let Some(settings) = &job.trace else { return Ok(()) };
    world.trace_lifecycle(false, || match settings.after_phase {
        true => world.sample_clocks(1, settings.points, settings.spacing),
        false => Ok(()),
    })?;
    if let Some(mut recorder) = ctx.take_recorder() {
        let rank = recorder.rank();
        // α again, after the run, as the clocks are sampled: the host may
        // have changed pace since the start. A failure costs the footer
        // that figure only, not the trace.
        match world.measure_call_recording() {
            Ok(calls) => recorder.calibrate_after(Some(calls)),
            Err(e) => eprintln!(
                "grappe: rank {rank}: cannot time the recording of calls after the run ({e}); its trace has no α after the run"
            ),
        }
        recorder
            .finish()
            .map_err(|e| grappe_comm::Error::Bootstrap(format!("cannot complete the trace of rank {rank}: {e}")))?;
    }
    Ok(())
}

/// A rank's simulated clock, applied to every date it writes.
struct SimulatedTime(SimulatedClock);

impl TimeMap for SimulatedTime {
    fn map(&self, local_ns: u64) -> u64 {
        self.0.read(local_ns.min(i64::MAX as u64) as i64).max(0) as u64
    }

    fn describe(&self) -> String {
        let c = &self.0;
        format!(
            "offset {} ns, drift {} ppm, amplitude {} ns, period {} s, phase {} rad, jitter {} ns, seed {}",
            c.offset_ns, c.drift_ppm, c.amplitude_ns, c.period_s, c.phase_rad, c.jitter_ns, c.seed
        )
    }
}
