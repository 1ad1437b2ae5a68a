//! `grappe trace predict`.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use grappe_resim::{CostModel, LinkCost, Network, Options};
use serde_json::json;

use super::common::{EstimationArgs, TraceInput};
use super::resim::{EagerArgs, resimulate, seconds, write_json};
use crate::cmd::time::parse_offset_ns;

/// Predicts the run under another network: re-simulates the trace (corrected or not: the α it
/// records is taken out) with every message between hosts taking LATENCY + size / BANDWIDTH,
/// and writes the predicted trace in the same format (a merged trace file).
#[derive(Debug, Args)]
pub struct PredictArgs {
    #[command(flatten)]
    input: TraceInput,
    #[command(flatten)]
    estimation: EstimationArgs,
    /// The predicted trace to write (a merged trace file).
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
    /// Latency of a message between ranks of different hosts: 50us, 2ms, 800ns.
    #[arg(long, value_name = "DUR", value_parser = parse_offset_ns)]
    latency: u64,
    /// Bandwidth between hosts: 100MB/s, 1GB/s, 800Mbit/s, 64KiB/s.
    #[arg(long, value_name = "RATE", value_parser = parse_rate)]
    bandwidth: f64,
    /// Latency of a message between ranks of one host [default: as the trace measured].
    #[arg(long, value_name = "DUR", value_parser = parse_offset_ns, requires = "copy_bandwidth")]
    copy_latency: Option<u64>,
    /// Bandwidth between ranks of one host [default: as the trace measured].
    #[arg(long, value_name = "RATE", value_parser = parse_rate, requires = "copy_latency")]
    copy_bandwidth: Option<f64>,
    /// Also write the summary as JSON to this file.
    #[arg(long, value_name = "SUMMARY")]
    json: Option<PathBuf>,
    /// The traced run split its processes into K hosts of one machine
    /// (GRAPPE_EMULATED_HOSTS=K), which its trace does not tell apart: process p on host p·K/P.
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u64).range(1..))]
    emulated_hosts: Option<u64>,
    #[command(flatten)]
    eager: EagerArgs,
}

pub fn execute(args: PredictArgs) -> Result<i32> {
    let within_host = match (args.copy_latency, args.copy_bandwidth) {
        (Some(latency), Some(bandwidth)) => Some(LinkCost::new(latency as f64, bandwidth)),
        _ => None,
    };
    let network = Network { between_hosts: LinkCost::new(args.latency as f64, args.bandwidth), within_host };
    let options = Options { model: CostModel::Predict(network), eager: args.eager.limits() };
    let outcome = resimulate(
        &args.input.trace,
        &args.estimation,
        &args.output,
        &options,
        args.emulated_hosts.map(|k| k as usize),
    )?;
    let s = &outcome.summary;
    say!("{s}");
    sayln!("traced run time: {} s", seconds(s.traced_run_time_s));
    sayln!("predicted run time: {} s", seconds(s.new_run_time_s));
    if let Some(path) = &args.json {
        let value = json!({
            "predicted_run_time_s": s.new_run_time_s,
            "traced_run_time_s": s.traced_run_time_s,
            "events": s.events,
            "model_evaluations": s.cases,
            "causality_violations_after": s.causality_violations_after,
        });
        write_json(path, &value)?;
    }
    Ok(0)
}

/// A rate in bytes per second: a number and a unit, B/s, kB/s, MB/s, GB/s
/// (powers of 1000), KiB/s, MiB/s, GiB/s (of 1024), or bit/s, kbit/s,
/// Mbit/s, Gbit/s.
pub fn parse_rate(text: &str) -> Result<f64, String> {
    let text = text.trim();
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 =
        number.parse().map_err(|_| format!("expected a rate like 100MB/s, 1GB/s or 800Mbit/s, got \"{text}\""))?;
    let scale = match unit.trim() {
        "B/s" => 1.0,
        "kB/s" | "KB/s" => 1e3,
        "MB/s" => 1e6,
        "GB/s" => 1e9,
        "KiB/s" => 1024.0,
        "MiB/s" => 1024.0 * 1024.0,
        "GiB/s" => 1024.0 * 1024.0 * 1024.0,
        "bit/s" => 1.0 / 8.0,
        "kbit/s" => 1e3 / 8.0,
        "Mbit/s" => 1e6 / 8.0,
        "Gbit/s" => 1e9 / 8.0,
        other => {
            return Err(format!(
                "unknown unit \"{other}\" in \"{text}\" (B/s, kB/s, MB/s, GB/s, KiB/s, MiB/s, GiB/s, bit/s, kbit/s, Mbit/s, Gbit/s)"
            ));
        }
    };
    let rate = value * scale;
    if rate <= 0.0 || !rate.is_finite() {
        return Err(format!("a bandwidth must be positive, got \"{text}\""));
    }
    Ok(rate)
}

#[cfg(test)]
mod tests {
    use super::parse_rate;

    #[test]
    fn rates_take_decimal_binary_and_bit_units() {
        for (text, rate) in [
            ("100MB/s", 1e8),
            ("1GB/s", 1e9),
            ("800Mbit/s", 1e8),
            ("1.5kB/s", 1500.0),
            ("2KiB/s", 2048.0),
            ("1MiB/s", 1048576.0),
            ("8bit/s", 1.0),
        ] {
            assert_eq!(parse_rate(text), Ok(rate), "{text}");
        }
        for (text, said) in
            [("100", "unknown unit"), ("MB/s", "expected a rate"), ("0MB/s", "positive"), ("5 parsecs", "unknown unit")]
        {
            let error = parse_rate(text).expect_err(text);
            assert!(error.contains(said), "{text}: {error}");
        }
    }
}
