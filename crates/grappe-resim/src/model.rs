//! The cost models of the traversal: how long a message takes, and how a
//! receive's end follows from its send. Correction and prediction are the
//! same traversal with different models.
//!
//! # The receive rule (blocking receives, and waits and tests completing
//! a non-blocking receive)
//!
//! Notation of Maillet's thesis: S the send's start, SR the receive's
//! start, ER its end, B the moment the message is available at the
//! receiver, t() a measured date, ta() a corrected one, pert(X) = t(X) −
//! ta(X). `arrived` (recorded) is t(B) ≤ t(SR).
//!
//! A non-blocking receive is posted by an `irecv` and completed by a wait
//! or a successful test. Grappe buffers a message that comes before its
//! receive is posted (the unexpected queue), so the post does not bound B:
//! only the completion copies the message out, and the completion's record
//! says whether it had arrived when the wait started. The rule is
//! therefore the blocking receive's with SR replaced by the start of the
//! completing wait (or test).
//!
//! What the trace says of B also bounds a modelled ta(B). Instrumentation
//! is assumed not to change transit times, so every measured bound on
//! t(B) moves by pert(S) (Eq. 4.3: ta(B) = t(B) − pert(S)):
//! * `arrived` says t(B) ≤ t(SR), so ta(B) ≤ t(SR) − pert(S);
//! * a test that failed at t(T) on the same request says t(B) > t(T), so
//!   ta(B) > t(T) − pert(S) (the thesis's receives were blocking and had
//!   no such date).
//!
//! MINSIM's model case (cas-1m, Proposition 1 not holding) clamps the
//! model's ta(S) + β + L·τ into these bounds, so that a wrong model can
//! never date the receive against what the trace measured. A successful
//! test keeps its outcome (the conservative approximation: a corrected
//! run in which it would have failed is not simulated).

use crate::fit::{Fits, Linear};

/// The correction models of the thesis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub enum Mode {
    /// Model transit times only where Propositions 1–2 cannot decide.
    #[default]
    MinSim,
    /// Model every transit time.
    FullSim,
    /// Sarukkai and Malony: the transit is measured when the receive
    /// started before the send, modelled otherwise.
    SarukkaiMalony,
}

impl Mode {
    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Mode::MinSim => "minsim",
            Mode::FullSim => "fullsim",
            Mode::SarukkaiMalony => "sarukkai-malony",
        }
    }
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Mode, String> {
        [Mode::MinSim, Mode::FullSim, Mode::SarukkaiMalony]
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| format!("unknown model `{s}` (minsim, fullsim or sarukkai-malony)"))
    }
}

/// A link's cost: latency plus size over bandwidth.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct LinkCost {
    /// Latency, ns.
    pub latency_ns: f64,
    /// ns per byte (1 / bandwidth).
    pub ns_per_byte: f64,
}

impl LinkCost {
    /// From a latency in ns and a bandwidth in bytes per second.
    pub fn new(latency_ns: f64, bytes_per_second: f64) -> LinkCost {
        LinkCost { latency_ns, ns_per_byte: 1e9 / bytes_per_second }
    }

    /// The time of `bytes`, ns.
    pub fn at(&self, bytes: u64) -> i64 {
        (self.latency_ns + self.ns_per_byte * bytes as f64).round() as i64
    }
}

/// The network a prediction assumes.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Network {
    /// Between ranks of different hosts.
    pub between_hosts: LinkCost,
    /// Between ranks of one host; `None`: as the trace measured.
    pub within_host: Option<LinkCost>,
}

/// What the traversal computes.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub enum CostModel {
    /// Probe-effect correction.
    Correct(Mode),
    /// Prediction under a network.
    Predict(Network),
}

/// Eager limits of the protocol (grappe-proto's defaults: a larger
/// message goes by rendezvous, its send waits for the receive).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct EagerLimits {
    /// Between processes.
    pub between_processes: u64,
    /// Between threads of one process.
    pub between_threads: u64,
}

impl Default for EagerLimits {
    fn default() -> Self {
        EagerLimits { between_processes: 8192, between_threads: 2048 }
    }
}

/// One receive, as the rule sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Receive {
    /// t(S), ta(S).
    pub send: (i64, i64),
    /// t(SR), ta(SR).
    pub start: (i64, i64),
    /// t(ER).
    pub end: i64,
    /// t(B) ≤ t(SR) was recorded.
    pub arrived: bool,
    /// Message bytes.
    pub bytes: u64,
    /// The last failed test on the same request: t(T), ta(T).
    pub failed_test: Option<(i64, i64)>,
}

/// A receive's corrected end and the case of the decision that gave it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decided {
    /// ta(ER).
    pub end: i64,
    /// ta(B) as the rule estimated it.
    pub available: i64,
    /// The case (a counter of the summary).
    pub case: Case,
}

/// The cases of the decision trees (a counter each in the summary).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum Case {
    /// MINSIM, cas-1m, Proposition 1 holds: no model.
    ArrivedProp1,
    /// MINSIM, cas-1m, undecidable: the transit model.
    ArrivedModel,
    /// MINSIM, cas-2m, Proposition 2 holds: no model.
    WaitedProp2,
    /// MINSIM, cas-2m, Proposition 2 does not hold: no model (max).
    WaitedMax,
    /// FULLSIM: the transit model.
    FullSimModel,
    /// Sarukkai–Malony, SR before S: transit measured.
    SmMeasured,
    /// Sarukkai–Malony, SR after S: the transit model.
    SmModel,
    /// Prediction: the given network's transit.
    PredictNetwork,
    /// A rendezvous (blocking send of rendezvous size, blocking receive).
    Rendezvous,
    /// A collective instance, as a rendezvous of its members.
    Collective,
}

impl Case {
    /// Its name in the summary.
    pub fn name(self) -> &'static str {
        match self {
            Case::ArrivedProp1 => "minsim_arrived_prop1",
            Case::ArrivedModel => "minsim_arrived_model",
            Case::WaitedProp2 => "minsim_waited_prop2",
            Case::WaitedMax => "minsim_waited_max",
            Case::FullSimModel => "fullsim_model",
            Case::SmMeasured => "sarukkai_malony_measured",
            Case::SmModel => "sarukkai_malony_model",
            Case::PredictNetwork => "predict_network",
            Case::Rendezvous => "rendezvous",
            Case::Collective => "collective",
        }
    }

    /// Whether the case evaluates the communication model.
    pub fn uses_model(self) -> bool {
        matches!(self, Case::ArrivedModel | Case::FullSimModel | Case::SmModel | Case::PredictNetwork)
    }
}

/// The receive rule of `mode` (see the module's doc), with `transit` the
/// model of a message's transit and `copy` DĈ's.
pub fn decide(mode: Mode, r: &Receive, transit: i64, copy: &Linear) -> Decided {
    let (t_s, ta_s) = r.send;
    let (t_sr, ta_sr) = r.start;
    let measured = (r.end - t_sr).max(0);
    // DĈ cannot exceed the receive's own duration: B ≥ SR in cas-2m.
    let copy_est = copy.at(r.bytes).min(measured);
    let p_s = t_s - ta_s;
    let p_sr = t_sr - ta_sr;
    let modelled_b = |ta_s: i64| ta_s + transit;
    match mode {
        Mode::MinSim if r.arrived => {
            if p_sr <= p_s {
                // Proposition 1: ta(B) ≤ ta(SR).
                Decided { end: ta_sr + measured, available: ta_sr, case: Case::ArrivedProp1 }
            } else {
                let b = within_measured_bounds(modelled_b(ta_s), r, p_s);
                Decided { end: ta_sr.max(b) + measured, available: b, case: Case::ArrivedModel }
            }
        }
        Mode::MinSim => {
            // t(B) ≈ t(ER) − DĈ, moved by the send's perturbation (Eq. 4.3).
            let b = r.end - copy_est - p_s;
            if p_sr >= p_s {
                // Proposition 2: ta(SR) < ta(B).
                Decided { end: b + copy_est, available: b, case: Case::WaitedProp2 }
            } else {
                Decided { end: ta_sr.max(b) + copy_est, available: b, case: Case::WaitedMax }
            }
        }
        Mode::FullSim => {
            let b = modelled_b(ta_s);
            let copy = if r.arrived { measured } else { copy_est };
            Decided { end: ta_sr.max(b) + copy, available: b, case: Case::FullSimModel }
        }
        Mode::SarukkaiMalony => {
            if t_sr < t_s {
                let b = ta_s + (r.end - copy_est - t_s);
                Decided { end: ta_sr.max(b) + copy_est, available: b, case: Case::SmMeasured }
            } else {
                let b = modelled_b(ta_s);
                let copy = if r.arrived { measured } else { copy_est };
                Decided { end: ta_sr.max(b) + copy, available: b, case: Case::SmModel }
            }
        }
    }
}

/// A prediction's receive: the message is available a modelled transit
/// after its corrected send; the copy out is the measured one when the
/// message had arrived, else DĈ.
pub fn predict(r: &Receive, transit: i64, copy: &Linear) -> Decided {
    let (t_sr, ta_sr) = r.start;
    let measured = (r.end - t_sr).max(0);
    let copy = if r.arrived { measured } else { copy.at(r.bytes).min(measured) };
    let b = r.send.1 + transit;
    Decided { end: ta_sr.max(b) + copy, available: b, case: Case::PredictNetwork }
}

/// A modelled ta(B) of a message that had arrived, kept between what a
/// failed test and the receive's start measured of B, moved by the send's
/// perturbation (see the module's doc).
fn within_measured_bounds(b: i64, r: &Receive, p_s: i64) -> i64 {
    let upper = r.start.0 - p_s;
    let lower = r.failed_test.map_or(i64::MIN, |(t_t, _)| t_t - p_s);
    b.min(upper).max(lower)
}

/// The rendezvous model: the exits of a send (SS..ES) and its receive
/// (SR..ER), each (t, ta) at entry, t at exit; `transfer`: the data
/// transfer time when modelled (prediction), else the measured overlap
/// ΔRDV. Returns (ta(ES), ta(ER)).
pub fn rendezvous(send: ((i64, i64), i64), recv: ((i64, i64), i64), transfer: Option<i64>) -> (i64, i64) {
    let (((t_ss, ta_ss), t_es), ((t_sr, ta_sr), t_er)) = (send, recv);
    let overlap = transfer.unwrap_or((t_er.min(t_es) - t_sr.max(t_ss)).max(0));
    let first = ta_sr.max(ta_ss) + overlap;
    if t_er < t_es { (first + (t_es - t_er), first) } else { (first, first + (t_er - t_es)) }
}

/// The barrier model (Malony's, of which the rendezvous is the case of
/// two): every member's (t, ta) at entry and t at exit. A member that left
/// after the last entry waits for the last corrected entry and keeps what
/// it spent after the measured last entry; one that left before every
/// member had entered did not wait for them (a root that sends and
/// leaves) and keeps its duration. `extra`: added to the waiting ones'
/// exits (prediction's modelled messages). Returns each ta(exit).
pub fn barrier(parts: &[((i64, i64), i64)], extra: i64) -> Vec<i64> {
    let last_t = parts.iter().map(|p| p.0.0).max().unwrap_or(0);
    let last_ta = parts.iter().map(|p| p.0.1).max().unwrap_or(0);
    parts
        .iter()
        .map(|&((t_in, ta_in), t_out)| {
            if t_out >= last_t {
                (last_ta + (t_out - last_t) + extra).max(ta_in + (t_out - t_in).min(t_out - last_t))
            } else {
                ta_in + (t_out - t_in)
            }
        })
        .collect()
}

/// The transit model of a correction (the fit) or of a prediction
/// between two ranks, `None` where a prediction keeps what was measured.
pub fn transit_of(model: &CostModel, fits: &Fits, same_host: bool, bytes: u64) -> Option<i64> {
    match model {
        CostModel::Correct(_) => Some(fits.transit.at(bytes)),
        CostModel::Predict(net) if !same_host => Some(net.between_hosts.at(bytes)),
        CostModel::Predict(net) => net.within_host.map(|c| c.at(bytes)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NO_COPY: Linear = Linear { beta_ns: 0.0, tau_ns_per_byte: 0.0, samples: 0 };
    const COPY_10: Linear = Linear { beta_ns: 10.0, tau_ns_per_byte: 0.0, samples: 1 };

    fn receive(send: (i64, i64), start: (i64, i64), end: i64, arrived: bool) -> Receive {
        Receive { send, start, end, arrived, bytes: 8, failed_test: None }
    }

    /// cas-1m with pert(SR) ≤ pert(S): Proposition 1, no model, the
    /// receive keeps its measured copy after its corrected start.
    #[test]
    fn arrived_and_a_receiver_perturbed_less_uses_proposition_1() {
        // S at 100 (perturbed by 50), SR at 300 (perturbed by 20), copy 15.
        let d = decide(Mode::MinSim, &receive((100, 50), (300, 280), 315, true), 1_000_000, &NO_COPY);
        assert_eq!(d, Decided { end: 295, available: 280, case: Case::ArrivedProp1 });
        assert!(!d.case.uses_model());
    }

    /// cas-1m with the receiver perturbed more: undecidable, the model is
    /// used and may turn it into a wait (cas-2a).
    #[test]
    fn arrived_and_a_receiver_perturbed_more_needs_the_model() {
        // pert(S) = 0, pert(SR) = 200: ta(SR) = 100, model transit 150.
        let d = decide(Mode::MinSim, &receive((0, 0), (300, 100), 315, true), 150, &NO_COPY);
        assert_eq!(d, Decided { end: 165, available: 150, case: Case::ArrivedModel });
        assert!(d.case.uses_model());
        // With a short transit the message is still there first (cas-1a).
        let d = decide(Mode::MinSim, &receive((0, 0), (300, 100), 315, true), 40, &NO_COPY);
        assert_eq!(d.end, 115);
    }

    /// cas-2m with pert(SR) ≥ pert(S): Proposition 2, the receive ends a
    /// DĈ after B, which moved as the send did: ta(ER) = t(ER) − pert(S).
    #[test]
    fn waited_and_a_receiver_perturbed_more_uses_proposition_2() {
        let d = decide(Mode::MinSim, &receive((100, 60), (120, 20), 500, false), 1_000_000, &COPY_10);
        assert_eq!(d, Decided { end: 460, available: 450, case: Case::WaitedProp2 });
        assert!(!d.case.uses_model());
    }

    /// cas-2m with the sender perturbed more: the message may now be
    /// there before the receive starts; no model either.
    #[test]
    fn waited_and_a_sender_perturbed_more_takes_the_later_of_b_and_sr() {
        // pert(S) = 400: B moves from 490 to 90, before ta(SR) = 110.
        let d = decide(Mode::MinSim, &receive((500, 100), (120, 110), 500, false), 1_000_000, &COPY_10);
        assert_eq!(d, Decided { end: 120, available: 90, case: Case::WaitedMax });
        // Not so far: B stays after SR.
        let d = decide(Mode::MinSim, &receive((500, 480), (120, 110), 600, false), 0, &COPY_10);
        assert_eq!(d.end, 580);
    }

    /// The `arrived` flag decides the branch: the same dates with and
    /// without it go down different sides of the tree.
    #[test]
    fn the_arrived_flag_chooses_the_branch() {
        let dates = ((100, 100), (300, 300), 400);
        let arrived = decide(Mode::MinSim, &receive(dates.0, dates.1, dates.2, true), 0, &COPY_10);
        let waited = decide(Mode::MinSim, &receive(dates.0, dates.1, dates.2, false), 0, &COPY_10);
        assert_eq!((arrived.case, waited.case), (Case::ArrivedProp1, Case::WaitedProp2));
        assert_eq!((arrived.end, waited.end), (400, 400), "no perturbation, no change");
    }

    /// FULLSIM models every message; Sarukkai–Malony only those whose
    /// receive started after the send.
    #[test]
    fn fullsim_always_and_sarukkai_malony_only_after_the_send_use_the_model() {
        let early = receive((200, 200), (100, 100), 400, false);
        let late = receive((100, 100), (300, 300), 310, true);
        assert_eq!(decide(Mode::FullSim, &early, 50, &COPY_10).case, Case::FullSimModel);
        assert_eq!(decide(Mode::FullSim, &early, 50, &COPY_10).end, 260);
        let sm = decide(Mode::SarukkaiMalony, &early, 50, &COPY_10);
        assert_eq!((sm.case, sm.end), (Case::SmMeasured, 400));
        let sm = decide(Mode::SarukkaiMalony, &late, 50, &COPY_10);
        assert_eq!((sm.case, sm.end), (Case::SmModel, 310));
    }

    /// The measured bracket of B, moved by the send's perturbation,
    /// bounds a modelled B: a failed test from below, the receive's start
    /// (the message had arrived) from above.
    #[test]
    fn the_measured_bounds_of_the_arrival_clamp_the_model() {
        let mut r = receive((0, 0), (300, 100), 315, true);
        r.failed_test = Some((250, 90));
        let d = decide(Mode::MinSim, &r, 10, &NO_COPY);
        assert_eq!((d.available, d.end), (250, 265));
        (r.send, r.start) = ((0, -500), (300, -300));
        r.failed_test = Some((250, 240));
        assert_eq!(decide(Mode::MinSim, &r, 10, &NO_COPY).available, -250);
        // No test: a model longer than the measure is cut at t(SR) − pert(S).
        let r = receive((0, 0), (300, 100), 315, true);
        let d = decide(Mode::MinSim, &r, 1_000_000, &NO_COPY);
        assert_eq!((d.available, d.end), (300, 315));
    }

    /// The rendezvous keeps the exits' measured order and spacing after
    /// the later corrected entry plus the measured overlap.
    #[test]
    fn a_rendezvous_waits_for_the_later_corrected_entry() {
        // Sender enters at 100 (ta 100), receiver at 300 (ta 150): overlap
        // min(410, 420) − 300 = 110.
        let (es, er) = rendezvous(((100, 100), 420), ((300, 150), 410), None);
        assert_eq!((es, er), (270, 260));
        let (es, er) = rendezvous(((100, 100), 420), ((300, 150), 410), Some(1000));
        assert_eq!((es, er), (1160, 1150));
    }

    /// The barrier model: exits follow the last corrected entry; a member
    /// that left before the others came keeps its own duration.
    #[test]
    fn a_barrier_releases_everyone_after_the_last_corrected_entry() {
        let exits = barrier(&[((100, 90), 500), ((480, 200), 505), ((300, 290), 502)], 0);
        assert_eq!(exits, vec![310, 315, 312]);
        let exits = barrier(&[((100, 100), 150), ((480, 400), 505)], 0);
        assert_eq!(exits, vec![150, 425]);
    }
}
