//! The statistical test of a communication-time model (Tape/PVM's
//! `tico` model check): is the transit time of a message of L bytes
//! β + L·τ on average, on each route, under the load of a real run?
//!
//! Observations come from a trace's own messages: a receive that was
//! posted before its message arrived (the `arrived` flag is off) measures
//! the message's transit, from the start of its send to the end of the
//! receive, on global time. A receive whose message was already there
//! measures only a copy and is left out.
//!
//! The model is either given, or fitted by least squares on observations
//! (of a ping-pong trace, say, or of the tested trace itself). For each
//! message size with at least [`MIN_SAMPLES`] observations, the residuals
//! e = t − (β + L·τ) are tested for a zero mean with Student's test:
//! T = mean(e) / s(e) · √n, s the unbiased standard deviation, rejected
//! when |T| exceeds the two-sided quantile t(1 − α/2, n − 1). Sizes with
//! fewer observations are reported as not tested: the test leans on the
//! central limit theorem, transit times being far from Gaussian.

use std::collections::BTreeMap;
use std::fmt;

use grappe_trace::Body;
use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::error::{AnalysisError, Result};
use crate::matching::Message;
use crate::stream::CausalStream;

/// Observations a size needs to be tested.
pub const MIN_SAMPLES: usize = 30;

/// Which way a message went, as the trace's host identities tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Route {
    /// Sender and receiver on one host: shared memory.
    SharedMemory,
    /// Sender and receiver on different hosts: the network.
    Network,
}

impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Route::SharedMemory => "shared memory (same host)",
            Route::Network => "network (different hosts)",
        })
    }
}

/// One measured transit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Transit {
    /// Its route.
    pub route: Route,
    /// Message bytes.
    pub bytes: u64,
    /// Seconds from the send's start to the receive's end.
    pub seconds: f64,
}

/// The transits a trace measures: its receives that waited for their
/// message (see the module's documentation). `host_of(rank)` names each
/// world rank's host (`None` if unknown: then every message takes one
/// route, shared memory).
pub fn transits(mut stream: CausalStream, host_of: impl Fn(u32) -> Option<String>) -> Result<Vec<Transit>> {
    let mut out = Vec::new();
    while let Some(linked) = stream.next_event()? {
        let Message::Received { channel, send } = *linked.message else { continue };
        let waited = match linked.event.body {
            Body::Recv { arrived, failed, .. } => !arrived && !failed,
            Body::Wait { completion, failed, .. } => !completion.arrived && !failed,
            Body::Test { completion: Some(completion), failed, .. } => !completion.arrived && !failed,
            _ => false,
        };
        if !waited || linked.event.end < send.start {
            continue;
        }
        let route = match (host_of(channel.src), host_of(channel.dst)) {
            (Some(a), Some(b)) if a != b => Route::Network,
            _ => Route::SharedMemory,
        };
        let seconds = (linked.event.end - send.start) as f64 * 1e-9;
        out.push(Transit { route, bytes: send.bytes, seconds });
    }
    Ok(out)
}

/// β + L·τ.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LinearModel {
    /// β: seconds for an empty message.
    pub beta_s: f64,
    /// τ: seconds per byte (1 / bandwidth).
    pub tau_s_per_byte: f64,
}

impl LinearModel {
    /// The model's transit for `bytes`.
    pub fn predict(&self, bytes: u64) -> f64 {
        self.beta_s + bytes as f64 * self.tau_s_per_byte
    }

    /// Least squares on (bytes, seconds). One size alone gives β = its
    /// mean transit and τ = 0; no observation at all, `None`.
    pub fn fit(points: impl IntoIterator<Item = (u64, f64)>) -> Option<LinearModel> {
        let points: Vec<(f64, f64)> = points.into_iter().map(|(l, t)| (l as f64, t)).collect();
        if points.is_empty() {
            return None;
        }
        let n = points.len() as f64;
        let (mean_l, mean_t) = points.iter().fold((0.0, 0.0), |(a, b), (l, t)| (a + l / n, b + t / n));
        let sxx: f64 = points.iter().map(|(l, _)| (l - mean_l) * (l - mean_l)).sum();
        let sxy: f64 = points.iter().map(|(l, t)| (l - mean_l) * (t - mean_t)).sum();
        let tau = if sxx > 0.0 { sxy / sxx } else { 0.0 };
        Some(LinearModel { beta_s: mean_t - tau * mean_l, tau_s_per_byte: tau })
    }
}

/// The two-sided critical value of Student's law with `dof` degrees of
/// freedom at level `alpha`: k with P(|T| > k) = alpha, i.e. the
/// quantile t(1 − α/2, dof).
pub fn critical_value(alpha: f64, dof: usize) -> Result<f64> {
    if !(alpha > 0.0 && alpha < 1.0) {
        return Err(AnalysisError::Usage(format!("significance level {alpha}: expected a number between 0 and 1")));
    }
    let law = StudentsT::new(0.0, 1.0, dof as f64)
        .map_err(|e| AnalysisError::Usage(format!("Student's law with {dof} degrees of freedom: {e}")))?;
    Ok(law.inverse_cdf(1.0 - alpha / 2.0))
}

/// What the test says of one size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The mean residual is compatible with zero.
    Accept,
    /// It is not: the model does not hold for this size.
    Reject,
    /// Fewer than [`MIN_SAMPLES`] observations: no conclusion.
    NotTested,
}

/// The test of one message size.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SizeTest {
    /// Message bytes.
    pub bytes: u64,
    /// Observations.
    pub n: usize,
    /// Mean measured transit, seconds.
    pub mean_measured_s: f64,
    /// The model's transit, seconds.
    pub model_s: f64,
    /// Mean residual (measured − model), seconds.
    pub mean_residual_s: f64,
    /// Unbiased standard deviation of the residuals, seconds (`None`
    /// with one observation).
    pub stdev_s: Option<f64>,
    /// Student's variable (`None` when not tested).
    pub t: Option<f64>,
    /// The critical value it is compared with (`None` when not tested).
    pub critical: Option<f64>,
    /// The verdict.
    pub verdict: Verdict,
}

/// The test of one route.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RouteTest {
    /// The route.
    pub route: Route,
    /// The model tested.
    pub model: LinearModel,
    /// Each size, smallest first.
    pub sizes: Vec<SizeTest>,
}

impl RouteTest {
    /// ACCEPT if every tested size accepts, REJECT if one rejects; `None`
    /// if no size had enough observations.
    pub fn verdict(&self) -> Option<Verdict> {
        let tested: Vec<Verdict> = self.sizes.iter().map(|s| s.verdict).filter(|v| *v != Verdict::NotTested).collect();
        match tested.is_empty() {
            true => None,
            false if tested.contains(&Verdict::Reject) => Some(Verdict::Reject),
            false => Some(Verdict::Accept),
        }
    }
}

/// Tests `model` against the transits of one route, size by size, at
/// significance level `alpha`.
pub fn test_route(route: Route, model: LinearModel, transits: &[Transit], alpha: f64) -> Result<RouteTest> {
    let mut by_size: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
    for t in transits.iter().filter(|t| t.route == route) {
        by_size.entry(t.bytes).or_default().push(t.seconds);
    }
    let mut sizes = Vec::with_capacity(by_size.len());
    for (bytes, seconds) in by_size {
        sizes.push(test_size(model, bytes, &seconds, alpha)?);
    }
    Ok(RouteTest { route, model, sizes })
}

fn test_size(model: LinearModel, bytes: u64, seconds: &[f64], alpha: f64) -> Result<SizeTest> {
    let n = seconds.len();
    let model_s = model.predict(bytes);
    let mean_measured_s = seconds.iter().sum::<f64>() / n as f64;
    let mean_residual_s = mean_measured_s - model_s;
    let stdev_s = (n > 1).then(|| {
        let squares: f64 = seconds.iter().map(|s| (s - mean_measured_s).powi(2)).sum();
        (squares / (n - 1) as f64).sqrt()
    });
    let mut test = SizeTest {
        bytes,
        n,
        mean_measured_s,
        model_s,
        mean_residual_s,
        stdev_s,
        t: None,
        critical: None,
        verdict: Verdict::NotTested,
    };
    if n < MIN_SAMPLES {
        return Ok(test);
    }
    let stdev = stdev_s.expect("n > 1");
    let t = match stdev > 0.0 {
        true => mean_residual_s / stdev * (n as f64).sqrt(),
        // Identical observations: exactly the model, or certainly not.
        false if mean_residual_s == 0.0 => 0.0,
        false => f64::INFINITY.copysign(mean_residual_s),
    };
    let critical = critical_value(alpha, n - 1)?;
    test.t = Some(t);
    test.critical = Some(critical);
    test.verdict = if t.abs() > critical { Verdict::Reject } else { Verdict::Accept };
    Ok(test)
}

impl fmt::Display for RouteTest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let LinearModel { beta_s, tau_s_per_byte } = self.model;
        let bandwidth = if tau_s_per_byte > 0.0 { format!("{:.1} MB/s", 1e-6 / tau_s_per_byte) } else { "∞".into() };
        writeln!(f, "route: {}", self.route)?;
        writeln!(f, "  model: BETA = {:.3} us, TAU = {:.6} s/MB ({bandwidth})", beta_s * 1e6, tau_s_per_byte * 1e6)?;
        writeln!(
            f,
            "  {:>10} {:>6} {:>14} {:>14} {:>10} {:>10}  verdict",
            "bytes", "n", "measured (us)", "model (us)", "t", "k"
        )?;
        for s in &self.sizes {
            let (t, k) = match (s.t, s.critical) {
                (Some(t), Some(k)) => (format!("{t:.3}"), format!("{k:.3}")),
                _ => ("-".into(), "-".into()),
            };
            let verdict = match s.verdict {
                Verdict::Accept => "ACCEPT".to_owned(),
                Verdict::Reject => "REJECT".to_owned(),
                Verdict::NotTested => format!("not tested (n < {MIN_SAMPLES})"),
            };
            writeln!(
                f,
                "  {:>10} {:>6} {:>14.3} {:>14.3} {:>10} {:>10}  {verdict}",
                s.bytes,
                s.n,
                s.mean_measured_s * 1e6,
                s.model_s * 1e6,
                t,
                k
            )?;
        }
        match self.verdict() {
            Some(Verdict::Accept) => writeln!(f, "  route verdict: ACCEPT (every tested size)"),
            Some(_) => writeln!(f, "  route verdict: REJECT"),
            None => writeln!(f, "  route verdict: no conclusion (no size has {MIN_SAMPLES} observations)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic noise in [-1, 1): a fixed sequence, no generator.
    fn noise(i: usize) -> f64 {
        let x = (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(17);
        (x >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }

    /// `per_size` transits of each size from β + L·τ plus noise of
    /// amplitude `spread`, shifted by `offset`.
    fn sample(model: LinearModel, per_size: usize, spread: f64, offset: f64, seed: usize) -> Vec<Transit> {
        let mut out = Vec::new();
        for (k, bytes) in [8u64, 1024, 65536, 1 << 20].into_iter().enumerate() {
            for i in 0..per_size {
                let seconds = model.predict(bytes) + offset + spread * noise(seed + k * 1000 + i);
                out.push(Transit { route: Route::SharedMemory, bytes, seconds });
            }
        }
        out
    }

    const TRUE: LinearModel = LinearModel { beta_s: 2e-6, tau_s_per_byte: 1e-10 };

    #[test]
    fn critical_values_are_two_sided_student_quantiles() {
        // Tables: t(0.975, 35) = 2.0301, t(0.99, 35) = 2.4377, t(0.975, 33)
        // = 2.0345, t(0.975, 29) = 2.0452, t(0.995, 10) = 3.1693, and the
        // normal law's 1.96 for many degrees of freedom.
        for (alpha, dof, expected) in
            [(0.05, 35, 2.0301), (0.02, 35, 2.4377), (0.05, 33, 2.0345), (0.05, 29, 2.0452), (0.01, 10, 3.1693)]
        {
            let k = critical_value(alpha, dof).unwrap();
            assert!((k - expected).abs() < 5e-4, "alpha {alpha}, {dof} dof: {k} instead of {expected}");
        }
        assert!((critical_value(0.05, 100_000).unwrap() - 1.95996).abs() < 1e-3);
        assert!(critical_value(0.0, 10).is_err() && critical_value(1.5, 10).is_err());
    }

    #[test]
    fn the_thesis_s_example_gives_its_t_variable() {
        // FFT-2D on the SP2: mean 0.20564 s, unbiased stdev 0.16145 s,
        // n = 36 give t = 7.642 (REJECT); mean −0.022589, stdev 0.069625,
        // n = 34 give −1.891 (ACCEPT).
        for (mean, stdev, n, t_expected, verdict) in
            [(0.20564, 0.16145, 36, 7.642, Verdict::Reject), (-0.022589, 0.069625, 34, -1.891, Verdict::Accept)]
        {
            // n values with that mean and unbiased stdev: half at mean + d, half at mean − d.
            let d = stdev * ((n - 1) as f64 / n as f64).sqrt();
            let seconds: Vec<f64> = (0..n).map(|i| if i % 2 == 0 { mean + d } else { mean - d }).collect();
            let zero = LinearModel { beta_s: 0.0, tau_s_per_byte: 0.0 };
            let test = test_size(zero, 262_144, &seconds, 0.05).unwrap();
            assert!((test.t.unwrap() - t_expected).abs() < 2e-3, "t = {:?}, expected {t_expected}", test.t);
            assert_eq!(test.verdict, verdict);
        }
    }

    #[test]
    fn the_fit_finds_the_model_that_made_the_data() {
        let fitted = LinearModel::fit(sample(TRUE, 50, 0.2e-6, 0.0, 1).iter().map(|t| (t.bytes, t.seconds))).unwrap();
        assert!((fitted.beta_s - TRUE.beta_s).abs() < 0.1e-6, "{fitted:?}");
        assert!((fitted.tau_s_per_byte - TRUE.tau_s_per_byte).abs() < 1e-12, "{fitted:?}");
        assert_eq!(LinearModel::fit(std::iter::empty()), None);
        let one_size = LinearModel::fit([(64, 1.0), (64, 3.0)]).unwrap();
        assert_eq!(one_size, LinearModel { beta_s: 2.0, tau_s_per_byte: 0.0 });
    }

    #[test]
    fn a_model_fitted_on_calibration_runs_is_accepted_on_data_of_the_same_model() {
        let calibration = sample(TRUE, 40, 0.5e-6, 0.0, 7);
        let model = LinearModel::fit(calibration.iter().map(|t| (t.bytes, t.seconds))).unwrap();
        let run = sample(TRUE, 40, 0.5e-6, 0.0, 50_000);
        let test = test_route(Route::SharedMemory, model, &run, 0.05).unwrap();
        assert_eq!(test.verdict(), Some(Verdict::Accept), "{test}");
        assert!(test.sizes.iter().all(|s| s.n == 40 && s.verdict == Verdict::Accept), "{test}");
    }

    #[test]
    fn data_of_another_model_is_rejected() {
        let calibration = sample(TRUE, 40, 0.5e-6, 0.0, 7);
        let model = LinearModel::fit(calibration.iter().map(|t| (t.bytes, t.seconds))).unwrap();
        // Under load: 1 µs more per message, twice the time per byte.
        let loaded = LinearModel { beta_s: 3e-6, tau_s_per_byte: 2e-10 };
        let run = sample(loaded, 40, 0.5e-6, 0.0, 90_000);
        let test = test_route(Route::SharedMemory, model, &run, 0.05).unwrap();
        assert_eq!(test.verdict(), Some(Verdict::Reject), "{test}");
        assert!(test.sizes.iter().all(|s| s.verdict == Verdict::Reject), "{test}");
    }

    #[test]
    fn sizes_with_fewer_than_30_observations_are_not_tested_nor_accepted() {
        let run = sample(TRUE, 29, 0.5e-6, 0.0, 3);
        let test = test_route(Route::SharedMemory, TRUE, &run, 0.05).unwrap();
        assert!(test.sizes.iter().all(|s| s.verdict == Verdict::NotTested && s.t.is_none()), "{test}");
        assert_eq!(test.verdict(), None);
        assert!(test.to_string().contains("not tested (n < 30)"), "{test}");
        let mut mixed = sample(TRUE, 30, 0.5e-6, 0.0, 3);
        mixed.truncate(mixed.len() - 1); // the largest size keeps 29
        let test = test_route(Route::SharedMemory, TRUE, &mixed, 0.05).unwrap();
        assert_eq!(test.sizes.last().unwrap().verdict, Verdict::NotTested);
        assert_eq!(test.verdict(), Some(Verdict::Accept), "{test}");
    }

    #[test]
    fn identical_observations_accept_only_the_exact_model() {
        // Binary fractions: the mean of 30 equal values is exact.
        let flat = LinearModel { beta_s: 0.5, tau_s_per_byte: 0.0 };
        assert_eq!(test_size(flat, 64, &[0.5; 30], 0.05).unwrap().verdict, Verdict::Accept);
        let off = test_size(flat, 64, &[0.5 + 1.0 / 1024.0; 30], 0.05).unwrap();
        assert_eq!((off.verdict, off.t), (Verdict::Reject, Some(f64::INFINITY)));
    }
}
