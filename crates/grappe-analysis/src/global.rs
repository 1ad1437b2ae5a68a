//! Global time: every rank's local dates put on the reference rank's
//! clock (rank 0, which sampled every peer by ping-pong, see
//! `grappe_clock`).
//!
//! Ranks that share the reference's clock need no estimate: processes of
//! one host read the same raw monotonic clock or time-stamp counter, and
//! the counter's per-process calibration is in each header, so their dates
//! are rebased exactly. Other ranks (other hosts, or simulated clocks) get
//! the fitted linear model; the strategy falls back from SBA to SB when a
//! rank has no samples after the run (it was killed), and to uncorrected
//! dates, with a note, when it has none at all.

use grappe_clock::{
    ClockError, ClockModel, ClockReport, Estimator, FitConfig, PeerClock, Phase, Sample, SampleSet, Strategy,
};
use grappe_trace::{ClockSample, FileHeader, TscAnchor};
use serde::Serialize;

use crate::error::{AnalysisError, Result};
use crate::set::{Layout, TraceSet};

/// The reference rank: the one that sampled the others.
pub const REFERENCE: u32 = 0;

/// How one rank's dates become global dates.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Basis {
    /// The reference rank itself.
    Reference,
    /// Same host and clock as the reference: an exact rebase.
    SharedClock,
    /// A fitted clock model.
    Estimated {
        /// Strategy actually used (SB when SBA lacked the after phase).
        strategy: Strategy,
    },
    /// No usable model: local dates are kept.
    Uncorrected {
        /// Why.
        reason: String,
    },
    /// Already global (a merged trace), with how the merge made them so
    /// (the [`Basis::describe`] text it kept).
    Global {
        /// How this rank's dates were put on global time at the merge.
        at_merge: String,
    },
}

impl Basis {
    /// One line for people.
    pub fn describe(&self) -> String {
        match self {
            Basis::Reference => "reference clock".into(),
            Basis::SharedClock => "shares the reference's clock (same host): rebased exactly".into(),
            Basis::Estimated { strategy } => format!("estimated ({})", strategy_name(*strategy)),
            Basis::Uncorrected { reason } => format!("uncorrected: {reason}"),
            Basis::Global { at_merge } => format!("global dates; at the merge: {at_merge}"),
        }
    }

    /// The strategy of an estimated rank from its [`Basis::describe`] text,
    /// as a merged file keeps it (`None` for any other basis).
    fn estimated_from_text(text: &str) -> Option<Strategy> {
        [Strategy::SampleBeforeAfter, Strategy::SampleBefore]
            .into_iter()
            .find(|&strategy| Basis::Estimated { strategy }.describe() == text)
    }
}

fn strategy_name(s: Strategy) -> &'static str {
    match s {
        Strategy::SampleBefore => "SB",
        Strategy::SampleBeforeAfter => "SBA",
    }
}

/// One rank's conversion to global time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankTime {
    /// World rank.
    pub rank: u32,
    /// Local to global.
    pub model: ClockModel,
    /// Where the model comes from.
    pub basis: Basis,
}

impl RankTime {
    fn exact(rank: u32, model: ClockModel, basis: Basis) -> Self {
        RankTime { rank, model, basis }
    }

    /// The global date of a local date (saturating at 0).
    #[inline]
    pub fn to_global(&self, local_ns: u64) -> u64 {
        match self.conversion() {
            None => local_ns,
            Some(model) => global_of(&model, local_ns),
        }
    }

    /// The model dates go through, `None` when they are global already
    /// (the reference rank, merged files): readers of many dates decide
    /// once, not per date (comparing the models took 17 instructions an
    /// event).
    #[inline]
    pub fn conversion(&self) -> Option<ClockModel> {
        (self.model != ClockModel::identity()).then_some(self.model)
    }
}

/// The global date of a local date by `model` (saturating at 0).
#[inline]
pub fn global_of(model: &ClockModel, local_ns: u64) -> u64 {
    model.to_global(local_ns.min(i64::MAX as u64) as i64).max(0) as u64
}

/// What [`GlobalTime::estimate`] does.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct GlobalOptions {
    /// Estimator, strategy and filter.
    pub fit: FitConfig,
    /// Estimate ranks that share the reference's clock too (to see the
    /// estimator's error against a known answer).
    pub estimate_shared: bool,
    /// Repair the tachyons global time leaves with a controlled logical
    /// clock, this many ns of minimum latency (`None`: dates as estimated).
    pub tachyon_repair: Option<u64>,
    /// The fit's median window was asked for, not the default: a window
    /// wider than a rank's samples is then the caller's error. The default
    /// one narrows to fit a rank sampled with fewer points.
    pub window_asked: bool,
}

/// Every rank's conversion, and the clock-statistics report.
#[derive(Debug, Clone, Serialize)]
pub struct GlobalTime {
    /// By rank; `None` for ranks without a trace.
    pub ranks: Vec<Option<RankTime>>,
    /// The statistics of the estimated ranks (Tape/PVM Fig. 6.1).
    pub report: Option<ClockReport>,
    /// Fallbacks and failures, for people.
    pub notes: Vec<String>,
    /// Estimator, strategy and window, for the merged file's header (for a
    /// merged set: what its header says the merge used).
    pub estimation: String,
    /// The minimum latency of the controlled logical clock that moves
    /// receives dated before their send (`None`: off; always for a merged
    /// set, whose dates are the merge's).
    pub tachyon_repair: Option<u64>,
}

impl GlobalTime {
    /// Builds global time for a set: a merged set is global already;
    /// per-rank sets use rank 0's clock samples.
    pub fn estimate(set: &TraceSet, options: &GlobalOptions) -> Result<GlobalTime> {
        options.fit.validate().map_err(|e| AnalysisError::Usage(format!("clock estimation settings: {e}")))?;
        if set.layout() == Layout::Merged {
            return merged_time(set, options);
        }
        let estimation = describe_fit(&options.fit) + &describe_repair(options.tachyon_repair);
        let tachyon_repair = options.tachyon_repair;
        let mut ranks: Vec<Option<RankTime>> = vec![None; set.world_size() as usize];
        let mut notes = Vec::new();
        let Some(reference) = set.file_of(REFERENCE) else {
            notes.push(format!("rank {REFERENCE}'s trace is missing: no clock samples, dates are uncorrected"));
            for f in set.files() {
                let rank = f.rank().expect("per-rank set");
                let reason = "no reference rank".to_owned();
                ranks[rank as usize] =
                    Some(RankTime::exact(rank, ClockModel::identity(), Basis::Uncorrected { reason }));
            }
            return Ok(GlobalTime { ranks, report: None, notes, estimation, tachyon_repair });
        };
        let samples = {
            let mut file = reference.open()?;
            file.skim()?;
            file.clock_samples().to_vec()
        };
        let mut peers = Vec::new();
        for f in set.files() {
            let rank = f.rank().expect("per-rank set");
            let time = if rank == REFERENCE {
                RankTime::exact(rank, ClockModel::identity(), Basis::Reference)
            } else {
                let shared = shared_clock_model(&reference.header, &f.header).filter(|_| !options.estimate_shared);
                match shared {
                    Some(model) => RankTime::exact(rank, model, Basis::SharedClock),
                    None => estimate_rank(rank, &samples, options, &mut peers, &mut notes)?,
                }
            };
            ranks[rank as usize] = Some(time);
        }
        let report = match peers.is_empty() {
            true => None,
            false => Some(match run_span(reference, &samples)? {
                Some((start, end)) => ClockReport::for_run(format!("rank {REFERENCE}"), peers, start, end),
                None => ClockReport::new(format!("rank {REFERENCE}"), peers),
            }),
        };
        Ok(GlobalTime { ranks, report, notes, estimation, tachyon_repair })
    }

    /// The ranks whose dates stay local because no clock could be fitted
    /// for them (what `grappe trace clock` exits non-zero for).
    pub fn uncorrected(&self) -> Vec<u32> {
        let stuck = |r: &&RankTime| matches!(r.basis, Basis::Uncorrected { .. });
        self.ranks.iter().flatten().filter(stuck).map(|r| r.rank).collect()
    }

    /// The conversion of a rank (`None` for a missing rank).
    pub fn rank(&self, rank: u32) -> Option<&RankTime> {
        self.ranks.get(rank as usize).and_then(Option::as_ref)
    }
}

/// A merged file's dates are global already: every rank keeps them as
/// they are. The clock statistics are computed again from rank 0's
/// samples, which the merge kept ahead of the events, for the ranks the
/// merge estimated (every other rank with `estimate_shared`).
fn merged_time(set: &TraceSet, options: &GlobalOptions) -> Result<GlobalTime> {
    let header = &set.files()[0].header;
    let samples = {
        let mut file = set.files()[0].open()?;
        // The first events block comes after the samples: reading it
        // reads them, without going through the whole file.
        file.next_events()?;
        file.clock_samples().to_vec()
    };
    let mut ranks: Vec<Option<RankTime>> = vec![None; set.world_size() as usize];
    let (mut peers, mut notes) = (Vec::new(), Vec::new());
    for from in header.merged_from.iter().filter(|m| m.rank < set.world_size()) {
        let estimated = Basis::estimated_from_text(&from.time).is_some();
        if from.rank != REFERENCE && (estimated || options.estimate_shared) {
            // Its notes speak of dating the events, which the merge did.
            let fit = estimate_rank(from.rank, &samples, options, &mut peers, &mut Vec::new())?;
            if let Basis::Uncorrected { reason } = fit.basis {
                notes.push(format!("rank {}: no clock statistics: {reason}", from.rank));
            }
        }
        let basis = Basis::Global { at_merge: from.time.clone() };
        ranks[from.rank as usize] = Some(RankTime::exact(from.rank, ClockModel::identity(), basis));
    }
    let merged_with = header.clock.estimation.clone().unwrap_or_else(|| "not recorded in the file".to_owned());
    let recomputed_with = describe_fit(&options.fit);
    // The merge's text may go on with its tachyon repair: the same fit
    // settings start it.
    if !merged_with.starts_with(&recomputed_with) {
        notes.push(format!(
            "a merged file keeps the dates its merge gave ({merged_with}): the estimation settings asked for \
             ({recomputed_with}) change only the clock statistics, computed again with them"
        ));
    }
    if options.tachyon_repair.is_some() {
        notes.push(
            "a merged file's dates are those the merge wrote: merge the rank files again to repair tachyons".to_owned(),
        );
    }
    let report = match peers.is_empty() {
        true => None,
        false => Some(match run_span(&set.files()[0], &samples)? {
            Some((start, end)) => ClockReport::for_run(format!("rank {REFERENCE}"), peers, start, end),
            None => ClockReport::new(format!("rank {REFERENCE}"), peers),
        }),
    };
    Ok(GlobalTime { ranks, report, notes, estimation: merged_with, tachyon_repair: None })
}

fn describe_repair(repair: Option<u64>) -> String {
    repair
        .map_or(String::new(), |ns| format!(", tachyons repaired (controlled logical clock, minimum latency {ns} ns)"))
}

fn describe_fit(fit: &FitConfig) -> String {
    let window = fit.median_window_used().map_or("no median filter".to_owned(), |w| format!("median window {w}"));
    format!("{} estimator, {}, {window}, reference rank {REFERENCE}", fit.estimator.name(), strategy_name(fit.strategy))
}

/// The run on the reference clock, for the clock report's trust: from the
/// end of the sampling before the run to the start of the sampling after
/// it; without samples after it (SB), to the reference rank's last date.
/// `None` when the reference has no samples or no events.
fn run_span(reference: &crate::set::SetFile, samples: &[ClockSample]) -> Result<Option<(i64, i64)>> {
    let date = |ns: u64| ns.min(i64::MAX as u64) as i64;
    let Some(start) = samples.iter().filter(|s| s.phase == 0).map(|s| date(s.t_recv_ref)).max() else {
        return Ok(None);
    };
    if let Some(end) = samples.iter().filter(|s| s.phase != 0).map(|s| date(s.t_send_ref)).min() {
        return Ok(Some((start, end.max(start))));
    }
    let mut file = reference.open()?;
    let mut end = None;
    while let Some(block) = file.next_events()? {
        end = block.iter().map(|e| date(e.end.max(e.start))).max().max(end);
    }
    Ok(end.map(|end| (start, end.max(start))))
}

/// Fits one rank's clock, falling back from SBA to SB, from an estimator
/// that fails to the robust one, then to local dates (said in a note that
/// `grappe trace clock` turns into a failure). An error only for a median
/// window asked for and too wide.
fn estimate_rank(
    rank: u32,
    samples: &[ClockSample],
    options: &GlobalOptions,
    peers: &mut Vec<PeerClock>,
    notes: &mut Vec<String>,
) -> Result<RankTime> {
    let set = samples_of(rank, samples);
    let uncorrected = |reason: String| RankTime::exact(rank, ClockModel::identity(), Basis::Uncorrected { reason });
    if set.phase(Phase::Before).is_empty() {
        let reason = "no clock samples (rank 0 did not sample it)".to_owned();
        notes
            .push(format!("rank {rank}: {reason}; its dates are UNCORRECTED (local clock, not on rank {REFERENCE}'s)"));
        return Ok(uncorrected(reason));
    }
    let mut config = options.fit;
    if config.strategy == Strategy::SampleBeforeAfter && set.phase(Phase::After).is_empty() {
        notes.push(format!(
            "rank {rank}: no clock samples after the run (a rank did not finish): SB extrapolation used, \
             its error grows with the distance from the start"
        ));
        config.strategy = Strategy::SampleBefore;
    }
    loop {
        match grappe_clock::fit(&set, &config) {
            Ok(fit) => {
                let time = RankTime::exact(rank, fit.model, Basis::Estimated { strategy: config.strategy });
                peers.push(PeerClock { label: format!("rank {rank}"), fit });
                return Ok(time);
            }
            Err(ClockError::WindowTooLarge { window, points, phase }) => {
                let fits = if points % 2 == 1 { points } else { points - 1 };
                if options.window_asked {
                    return Err(AnalysisError::Usage(format!(
                        "median window {window} is larger than the {points} clock samples of rank {rank}'s {phase} \
                         phase (it can be at most {fits})"
                    )));
                }
                notes.push(format!(
                    "rank {rank}: median window narrowed from {window} to {fits} (its {phase} phase has {points} \
                     clock samples)"
                ));
                config.median_window = (fits > 1).then_some(fits);
            }
            Err(e) if config.estimator != Estimator::Robust => {
                notes.push(format!(
                    "rank {rank}: the {} estimator cannot fit its clock ({e}); the robust estimator is used instead",
                    config.estimator.name()
                ));
                config.estimator = Estimator::Robust;
            }
            Err(e) => {
                let reason = e.to_string();
                notes.push(format!(
                    "rank {rank}: clock fit failed ({reason}); its dates are UNCORRECTED (local clock, not on rank \
                     {REFERENCE}'s)"
                ));
                return Ok(uncorrected(reason));
            }
        }
    }
}

/// The samples of one peer, by phase, in the order taken.
pub fn samples_of(peer: u32, samples: &[ClockSample]) -> SampleSet {
    let mut set = SampleSet::new();
    for s in samples.iter().filter(|s| s.peer == peer) {
        let date = |ns: u64| ns.min(i64::MAX as u64) as i64;
        let sample = Sample::new(date(s.t_send_ref), date(s.t_recv_peer), date(s.t_send_peer), date(s.t_recv_ref));
        set.push(if s.phase == 0 { Phase::Before } else { Phase::After }, sample);
    }
    set
}

/// The exact model of a rank whose clock is the reference's: same host,
/// same source, no simulated distortion. For the time-stamp counter, the
/// two processes' calibrations give the affine map between their dates.
fn shared_clock_model(reference: &FileHeader, peer: &FileHeader) -> Option<ClockModel> {
    let (rc, pc) = (&reference.clock, &peer.clock);
    let same_clock = reference.host == peer.host && rc.source == pc.source;
    if !same_clock || rc.simulated.is_some() || pc.simulated.is_some() {
        return None;
    }
    match (rc.source.as_str(), rc.tsc, pc.tsc) {
        ("monotonic_raw", _, _) => Some(ClockModel::identity()),
        ("tsc", Some(r), Some(p)) => tsc_rebase(&r, &p),
        _ => None,
    }
}

/// lt_peer = ns0_p + (tick − tick0_p)·npt_p with tick = tick0_r +
/// (lt_ref − ns0_r)/npt_r: a line in lt_ref with slope npt_p/npt_r.
fn tsc_rebase(r: &TscAnchor, p: &TscAnchor) -> Option<ClockModel> {
    if r == p {
        return Some(ClockModel::identity());
    }
    let ticks_between = (i128::from(r.tick0) - i128::from(p.tick0)) as f64;
    let origin = i64::try_from(r.ns0).ok()?;
    let peer_at_origin = p.ns0 as f64 + ticks_between * p.ns_per_tick;
    let offset = peer_at_origin - r.ns0 as f64;
    ClockModel::new(origin, offset, p.ns_per_tick / r.ns_per_tick - 1.0).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tsc_rebase_maps_the_same_tick_to_the_same_date() {
        let r = TscAnchor { tick0: 5_000_000, ns0: 1_000_000_000, ns_per_tick: 0.3333334 };
        let p = TscAnchor { tick0: 9_000_000, ns0: 1_001_400_000, ns_per_tick: 0.3333321 };
        let model = tsc_rebase(&r, &p).expect("valid anchors");
        for tick in [9_000_000u64, 50_000_000, 3_000_000_000_000] {
            let ns = |a: &TscAnchor| a.ns0 as f64 + (tick as f64 - a.tick0 as f64) * a.ns_per_tick;
            let global = model.to_global(ns(&p).round() as i64);
            assert!((global as f64 - ns(&r)).abs() <= 2.0, "tick {tick}: {global} vs {}", ns(&r));
        }
    }
}
