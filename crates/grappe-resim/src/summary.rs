//! The counts of a traversal (tico's summary) and its run times.

use std::collections::BTreeMap;
use std::fmt;

use crate::fit::Fits;
use crate::model::{Case, CostModel};

/// What a traversal counted.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Summary {
    /// The model of the traversal.
    pub model: CostModel,
    /// The trace's fitted copy and transit times.
    pub fits: Fits,
    /// Events read.
    pub events: u64,
    /// Events whose dates changed.
    pub events_corrected: u64,
    /// Evaluations of each case of the decision trees, by name.
    pub cases: BTreeMap<&'static str, u64>,
    /// Cases that evaluated the communication model (NBSIM).
    pub communication_model_uses: u64,
    /// Receives whose start followed their send's: the messages
    /// Sarukkai–Malony's method would have modelled (NBSIM_SM).
    pub sarukkai_malony_model_uses: u64,
    /// Receives whose message had arrived when they started, as measured
    /// (NBCOMF).
    pub arrived_measured: u64,
    /// Receives whose message was there before they started after the
    /// traversal (NBCOMFA).
    pub arrived_after: u64,
    /// Wildcard receives whose traced order was kept against the
    /// corrected arrival order (one warning each).
    pub wildcard_orders_imposed: u64,
    /// Receives that end before their send starts, after the traversal.
    pub causality_violations_after: u64,
    /// Run time of the trace as read, s.
    pub traced_run_time_s: Option<f64>,
    /// Run time after the traversal, s.
    pub new_run_time_s: Option<f64>,
    /// Each rank's run time, traced and after, and its α.
    pub ranks: Vec<crate::run_time::RankRunTime>,
}

impl Summary {
    pub(crate) fn new(model: CostModel, fits: Fits) -> Summary {
        Summary {
            model,
            fits,
            events: 0,
            events_corrected: 0,
            cases: BTreeMap::new(),
            communication_model_uses: 0,
            sarukkai_malony_model_uses: 0,
            arrived_measured: 0,
            arrived_after: 0,
            wildcard_orders_imposed: 0,
            causality_violations_after: 0,
            traced_run_time_s: None,
            new_run_time_s: None,
            ranks: Vec::new(),
        }
    }

    pub(crate) fn count(&mut self, case: Case) {
        *self.cases.entry(case.name()).or_default() += 1;
        if case.uses_model() {
            self.communication_model_uses += 1;
        }
    }

    /// Messages received (NBCOM): the receive cases and rendezvous.
    pub fn receives(&self) -> u64 {
        self.cases.iter().filter(|(name, _)| **name != Case::Collective.name()).map(|(_, n)| n).sum()
    }
}

/// A share of a count, as tico prints it.
fn share(part: u64, whole: u64) -> String {
    if whole == 0 { "0%".to_owned() } else { format!("{:.0}%", 100.0 * part as f64 / whole as f64) }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let receives = self.receives();
        writeln!(
            f,
            "events: {}, changed: {} ({})",
            self.events,
            self.events_corrected,
            share(self.events_corrected, self.events)
        )?;
        writeln!(
            f,
            "NBCOM={receives} NBCOMF={} ({}) NBCOMFA={} ({}) NBSIM={} ({}) NBSIM_SM={} ({})",
            self.arrived_measured,
            share(self.arrived_measured, receives),
            self.arrived_after,
            share(self.arrived_after, receives),
            self.communication_model_uses,
            share(self.communication_model_uses, receives),
            self.sarukkai_malony_model_uses,
            share(self.sarukkai_malony_model_uses, receives)
        )?;
        match self.model {
            CostModel::Correct(mode) => writeln!(f, "Alpha correction is on\nSimulation mode is {}", mode.name())?,
            CostModel::Predict(net) => writeln!(
                f,
                "Prediction: between hosts {:.0} ns + {:.4} ns/byte; within a host {}",
                net.between_hosts.latency_ns,
                net.between_hosts.ns_per_byte,
                net.within_host.map_or("as measured".to_owned(), |c| format!(
                    "{:.0} ns + {:.4} ns/byte",
                    c.latency_ns, c.ns_per_byte
                ))
            )?,
        }
        writeln!(
            f,
            "Flush time removed\nfitted copy DC = {:.0} ns + {:.4} ns/byte ({} receives), transit = {:.0} ns + {:.4} ns/byte ({} receives)",
            self.fits.copy.beta_ns,
            self.fits.copy.tau_ns_per_byte,
            self.fits.copy.samples,
            self.fits.transit.beta_ns,
            self.fits.transit.tau_ns_per_byte,
            self.fits.transit.samples
        )?;
        writeln!(f, "model evaluations per case:")?;
        for (name, n) in &self.cases {
            writeln!(f, "  {name}: {n}")?;
        }
        writeln!(f, "wildcard orders imposed: {}", self.wildcard_orders_imposed)?;
        writeln!(f, "causality violations after: {}", self.causality_violations_after)
    }
}
