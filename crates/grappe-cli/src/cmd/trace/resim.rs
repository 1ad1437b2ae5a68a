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
/// `output` (a merged trace file); warnings go to stderr. `emulated_hosts`:
/// the traced run's processes were split into that many hosts of one
/// machine (`GRAPPE_EMULATED_HOSTS`), which the trace's host names do not
/// tell apart.
pub fn resimulate(
    trace: &Path,
    estimation: &EstimationArgs,
    output: &Path,
    options: &Options,
    emulated_hosts: Option<usize>,
) -> Result<Outcome> {
    check_output(output)?;
    let (set, time) = open(trace, estimation)?;
    refuse_to_overwrite_input(&set, output)?;
    let mut program = Program::read(&set, &time)?;
    if let Some(hosts) = emulated_hosts {
        emulate_hosts(&mut program, &set.processes(), hosts);
    }
    let outcome = grappe_resim::run(&program, options)?;
    for warning in &outcome.warnings {
        eprintln!("grappe trace: warning: {warning}");
    }
    grappe_resim::output::write(&set, &time, &program, &outcome.dates, output)?;
    Ok(outcome)
}

/// Puts process `p` (in the order of their lowest rank) on host
/// `p·K/processes`, as the runtime splits a job into `K` emulated hosts.
fn emulate_hosts(program: &mut Program, processes: &[grappe_analysis::Process], hosts: usize) {
    let count = processes.len().max(1);
    for (p, process) in processes.iter().enumerate() {
        let host = format!("{}#{}", process.host, p * hosts.min(count) / count);
        for &rank in &process.ranks {
            if let Some(slot) = program.placement.host.get_mut(rank as usize) {
                *slot = host.clone();
            }
        }
    }
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
