//! What `grappe trace correct` and `grappe trace predict` share: the trace
//! read into a program, the traversal, the output written.

use std::path::Path;

use anyhow::{Context, Result};
use clap::Args;
use grappe_resim::{EagerLimits, Options, Outcome, Program};

use super::common::{EstimationArgs, check_output, open, refuse_to_overwrite_input};

/// The protocol's eager limits, as the traced run had them.
#[derive(Debug, Clone, Args)]
pub struct EagerArgs {
    /// Largest message the traced run sent eagerly between processes (GRAPPE_EAGER_MAX);
    /// a larger blocking send waits for its receive (the rendezvous model).
    #[arg(long, value_name = "BYTES", default_value_t = EagerLimits::default().between_processes)]
    eager_max: u64,
    /// The same between thread ranks of one process (GRAPPE_EAGER_MAX_THREADS).
    #[arg(long, value_name = "BYTES", default_value_t = EagerLimits::default().between_threads)]
    eager_max_threads: u64,
}

impl EagerArgs {
    pub fn limits(&self) -> EagerLimits {
        EagerLimits { between_processes: self.eager_max, between_threads: self.eager_max_threads }
    }
}

/// Reads `trace`, re-simulates it under `options` and writes the result to
/// `output` (a merged trace file); warnings go to stderr.
pub fn resimulate(trace: &Path, estimation: &EstimationArgs, output: &Path, options: &Options) -> Result<Outcome> {
    check_output(output)?;
    let (set, time) = open(trace, estimation)?;
    refuse_to_overwrite_input(&set, output)?;
    let program = Program::read(&set, &time)?;
    let outcome = grappe_resim::run(&program, options)?;
    for warning in &outcome.warnings {
        eprintln!("grappe trace: warning: {warning}");
    }
    grappe_resim::output::write(&set, &time, &program, &outcome.dates, output)?;
    Ok(outcome)
}

/// A run time for the summary lines.
pub fn seconds(run_time: Option<f64>) -> String {
    run_time.map_or("unknown (no rank has both its init and its finalize)".to_owned(), |s| format!("{s:.6}"))
}

/// Writes `value` as pretty JSON to `path`.
pub fn write_json(path: &Path, value: &serde_json::Value) -> Result<()> {
    let text = serde_json::to_string_pretty(value).context("encoding the JSON summary")?;
    std::fs::write(path, text + "\n").with_context(|| format!("cannot write {}", path.display()))
}
