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
//! | `GRAPPE_TRACE_SYNC_POINTS` | clock samples per peer and phase (at least 3, which a fit needs; each the quietest of three exchanges after a warm-up one) | 20 |
//! | `GRAPPE_TRACE_SYNC_SPACING_US` | pause between rounds of exchanges | 1000 |
//! | `GRAPPE_TRACE_SIMULATE` | distort each rank's clock, e.g. `offset=2ms,drift=50ppm,amplitude=5us,period=10s,jitter=50ns,seed=7` (see `grappe_clock::sim::SimulationSpec`; implies the raw monotonic clock) | off |
//!
//! Simulated clocks let one host test global time: every rank's dates are
//! distorted as a clock of another host would be, and the header of each
//! file says how. A base offset common to every rank keeps the dates
//! positive, so none is clamped. Jitter is read noise: dates closer
//! together than it may come out of order, in events and clock samples
//! alike, and nothing puts them back in order: `grappe trace check` says
//! so, and the clock estimator takes such samples as noise.

use std::sync::Arc;
use std::time::Duration;

use grappe_clock::sim::{LocalClock, SimulatedClock, SimulationSpec};
use grappe_comm::{Communicator, RankContext};
use grappe_settings::{SettingError, Vars};
use grappe_trace::format::RankThread;
use grappe_trace::{Identity, Recorder, RecorderConfig, TimeMap};

use crate::StartError;
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
    pub fn from_env() -> Result<Option<TraceSettings>, SettingError> {
        TraceSettings::from_vars(Vars::process())
    }

    pub fn from_vars(vars: Vars<'_>) -> Result<Option<TraceSettings>, SettingError> {
        let Some(recorder) = RecorderConfig::from_vars(vars)? else { return Ok(None) };
        let after_phase = vars.word("GRAPPE_TRACE_SYNC", true, &[("sba", true), ("sb", false)])?;
        // Checked here; the recorder's clock reads it (grappe_trace::clock).
        vars.word("GRAPPE_TRACE_CLOCK", (), &[("monotonic_raw", ()), ("tsc", ())])?;
        let points: usize = vars.number("GRAPPE_TRACE_SYNC_POINTS", 20, "a number of exchanges")?;
        if points < MIN_SYNC_POINTS {
            let expected = format!("at least {MIN_SYNC_POINTS} exchanges a phase, which a clock fit needs");
            return Err(SettingError::new("GRAPPE_TRACE_SYNC_POINTS", points.to_string(), expected));
        }
        let spacing = Duration::from_micros(vars.number("GRAPPE_TRACE_SYNC_SPACING_US", 1000, "microseconds")?);
        let simulate = match vars.text("GRAPPE_TRACE_SIMULATE")? {
            None => None,
            Some(text) => Some(text.parse().map_err(|e| {
                let expected = "a clock simulation such as offset=2ms,drift=50ppm,seed=7";
                SettingError::new("GRAPPE_TRACE_SIMULATE", text.clone(), expected).because(e)
            })?),
        };
        Ok(Some(TraceSettings { recorder, after_phase, points, spacing, simulate }))
    }
}

/// Exchanges per peer and phase that a clock fit needs.
const MIN_SYNC_POINTS: usize = 3;

/// Starts the trace of world rank `rank` if the job records: measures
/// what recording adds to each kind of call on this rank (the α of calls), then
/// creates the rank's file and installs its recorder. Called on the thread
/// that runs the rank, one of the workers of `plan`, before any traced call.
pub(crate) fn start_recorder(
    job: &Job,
    rank: usize,
    plan: &[WorkerPlan],
    world: &Communicator,
) -> Result<(), StartError> {
    let Some(settings) = &job.trace else { return Ok(()) };
    let calls = world.measure_call_recording().map_err(|source| StartError::CallTiming { rank, source })?;
    let who = Identity {
        rank: rank as u32,
        world_size: job.world_size() as u32,
        process_ranks: job.mine.clone().map(|r| r as u32).collect(),
        job: job.id.clone(),
        thread: Some(this_thread(rank, plan)),
    };
    let time_map =
        settings.simulate.map(|spec| Arc::new(SimulatedTime(spec.clock_for(rank as u32))) as Arc<dyn TimeMap>);
    let recorder = Recorder::create_with_call_costs(&settings.recorder, who, time_map, Some(calls))
        .map_err(|source| StartError::TraceFile { rank, dir: settings.recorder.dir.clone(), source })?;
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
        recorder.finish().map_err(|source| grappe_comm::Error::Trace {
            rank: rank as usize,
            action: "complete",
            source,
        })?;
    }
    Ok(())
}

/// A rank's simulated clock, applied to every date it writes.
struct SimulatedTime(SimulatedClock);

impl TimeMap for SimulatedTime {
    /// The simulated reading. The spec's base offset keeps it at 0 or more
    /// (see `SimulationSpec::base_ns`), so the conversion to the format's
    /// unsigned dates loses nothing; the read noise is kept, unordered.
    fn map(&self, local_ns: u64) -> u64 {
        let reading = self.0.read(local_ns.min(i64::MAX as u64) as i64);
        debug_assert!(reading >= 0, "a simulated clock read {reading} despite its base offset");
        reading.max(0) as u64
    }

    fn describe(&self) -> String {
        let c = &self.0;
        format!(
            "offset {} ns, drift {} ppm, amplitude {} ns, period {} s, phase {} rad, jitter {} ns, seed {}",
            c.offset_ns, c.drift_ppm, c.amplitude_ns, c.period_s, c.phase_rad, c.jitter_ns, c.seed
        )
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use super::*;

    fn read(pairs: &[(&str, &str)]) -> Result<Option<TraceSettings>, SettingError> {
        let lookup = |name: &str| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| OsString::from(*v));
        TraceSettings::from_vars(Vars::from_lookup(&lookup))
    }

    #[test]
    fn trace_settings_are_read_with_their_defaults() {
        assert!(read(&[("GRAPPE_TRACE_SYNC", "bogus")]).unwrap().is_none(), "off without a directory");
        let settings =
            read(&[("GRAPPE_TRACE", "/t"), ("GRAPPE_TRACE_SYNC", "sb"), ("GRAPPE_TRACE_SIMULATE", "seed=3")]);
        let settings = settings.unwrap().expect("on");
        assert_eq!((settings.after_phase, settings.points, settings.spacing), (false, 20, Duration::from_millis(1)));
        assert_eq!(settings.simulate.map(|s| s.seed), Some(3));
    }

    #[test]
    fn a_bad_setting_names_the_variable_its_value_and_what_it_takes() {
        for (var, value, said) in [
            ("GRAPPE_TRACE_SYNC", "sab", "GRAPPE_TRACE_SYNC=\"sab\": expected sba or sb"),
            ("GRAPPE_TRACE_CLOCK", "bogus", "GRAPPE_TRACE_CLOCK=\"bogus\": expected monotonic_raw or tsc"),
            ("GRAPPE_TRACE_SYNC_POINTS", "x", "GRAPPE_TRACE_SYNC_POINTS=\"x\": expected a number of exchanges"),
            (
                "GRAPPE_TRACE_SYNC_POINTS",
                "2",
                "GRAPPE_TRACE_SYNC_POINTS=\"2\": expected at least 3 exchanges a phase, which a clock fit needs",
            ),
            ("GRAPPE_TRACE_SYNC_SPACING_US", "1ms", "GRAPPE_TRACE_SYNC_SPACING_US=\"1ms\": expected microseconds"),
        ] {
            let error = read(&[("GRAPPE_TRACE", "/t"), (var, value)]).unwrap_err();
            assert_eq!(error.to_string(), said);
        }
    }

    /// A rank whose simulated clock is seconds behind, read just after
    /// boot: its dates used to be clamped at 0 (every early date of the
    /// rank the same, its offset to the others lost); they now keep the
    /// offset between ranks.
    #[test]
    fn simulated_dates_are_not_clamped_at_zero() {
        let spec: SimulationSpec = "offset=3s,drift=10ppm,seed=2".parse().unwrap();
        let behind = (0..64).find(|&r| spec.clock_for(r).offset_ns < spec.base_ns() - 1_000_000_000).unwrap();
        let ahead = (0..64).find(|&r| spec.clock_for(r).offset_ns > spec.base_ns() + 1_000_000_000).unwrap();
        let (slow, fast) = (SimulatedTime(spec.clock_for(behind)), SimulatedTime(spec.clock_for(ahead)));
        for local in [0_u64, 1_000_000, 500_000_000] {
            let apart = fast.map(local) as i64 - slow.map(local) as i64;
            let offsets = spec.clock_for(ahead).offset_ns - spec.clock_for(behind).offset_ns;
            assert!((apart - offsets).abs() <= 10_000, "at {local}: {apart} ns apart, offsets {offsets} apart");
        }
        assert!(slow.map(1_000) > slow.map(0), "dates move on");
    }

    #[test]
    fn a_bad_simulation_keeps_the_parser_s_refusal_as_its_source() {
        let error = read(&[("GRAPPE_TRACE", "/t"), ("GRAPPE_TRACE_SIMULATE", "offset=2")]).unwrap_err();
        assert_eq!((error.var, error.value.as_str()), ("GRAPPE_TRACE_SIMULATE", "offset=2"));
        let source = std::error::Error::source(&error).expect("the spec's error");
        assert!(source.to_string().contains("a duration like 2ms"), "{source}");
        assert!(error.to_string().contains("a duration like 2ms"), "{error}");
    }
}
