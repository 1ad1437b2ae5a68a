//! The communication times a trace measures, fitted as β + L·τ: the
//! copy out of the communication layer (DC, from receives whose message
//! had arrived: they last the copy alone) and the transit of a message
//! (from receives that waited for it: t(ER) − DĈ − t(S)). Correction uses
//! them where the decision tree needs a model.

use grappe_trace::Body;

use crate::program::{Link, Program};

/// A time linear in the message length, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct Linear {
    /// β, ns.
    pub beta_ns: f64,
    /// τ, ns per byte.
    pub tau_ns_per_byte: f64,
    /// Observations it was fitted on (0: no observation, the time is 0).
    pub samples: usize,
}

impl Linear {
    /// The time of `bytes`, ns (never negative).
    pub fn at(&self, bytes: u64) -> i64 {
        (self.beta_ns + self.tau_ns_per_byte * bytes as f64).max(0.0).round() as i64
    }

    /// Least squares over `(bytes, ns)`; when every observation has the
    /// same length, their median as β (a slope needs two lengths).
    pub fn fit(points: &[(u64, i64)]) -> Linear {
        let n = points.len();
        if n == 0 {
            return Linear::default();
        }
        let mean_x = points.iter().map(|p| p.0 as f64).sum::<f64>() / n as f64;
        let mean_y = points.iter().map(|p| p.1 as f64).sum::<f64>() / n as f64;
        let sxx: f64 = points.iter().map(|p| (p.0 as f64 - mean_x).powi(2)).sum();
        if sxx == 0.0 {
            let mut ys: Vec<i64> = points.iter().map(|p| p.1).collect();
            ys.sort_unstable();
            return Linear { beta_ns: ys[n / 2].max(0) as f64, tau_ns_per_byte: 0.0, samples: n };
        }
        let sxy: f64 = points.iter().map(|p| (p.0 as f64 - mean_x) * (p.1 as f64 - mean_y)).sum();
        let tau = (sxy / sxx).max(0.0);
        let beta = (mean_y - tau * mean_x).max(0.0);
        Linear { beta_ns: beta, tau_ns_per_byte: tau, samples: n }
    }
}

/// The two fits of a trace.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct Fits {
    /// DĈ: the copy out of the layer.
    pub copy: Linear,
    /// The transit of a message.
    pub transit: Linear,
}

impl Fits {
    /// Fits `program`'s measured receives of asynchronous messages (a
    /// rendezvous, for which `rendezvous` is true, ends with its send: its
    /// receive's duration is no copy and no transit).
    pub fn of(program: &Program, rendezvous: impl Fn(usize) -> bool) -> Fits {
        let mut copies = Vec::new();
        let mut waited = Vec::new();
        for flow in &program.flows {
            for step in flow {
                let Link::Recv { msg } = step.link else { continue };
                if rendezvous(msg) {
                    continue;
                }
                let Some(arrived) = arrival_flag(&step.event.body) else { continue };
                let bytes = program.messages[msg].bytes;
                let duration = step.event.end as i64 - step.event.start as i64;
                if arrived {
                    copies.push((bytes, duration));
                } else {
                    let send = program.step(program.messages[msg].send).event.start as i64;
                    waited.push((bytes, step.event.end as i64, send));
                }
            }
        }
        let copy = Linear::fit(&copies);
        let transits: Vec<(u64, i64)> =
            waited.iter().map(|&(bytes, end, send)| (bytes, end - copy.at(bytes) - send)).collect();
        Fits { copy, transit: Linear::fit(&transits) }
    }
}

/// Whether the message of a receive-completing body had arrived when the
/// receive (or the wait) started; `None` for bodies that complete none.
/// (A sendrecv's receive lasts its send's posting too: with eager sends,
/// a copy into the layer, a small part of the copy out it is fitted on.)
pub fn arrival_flag(body: &Body) -> Option<bool> {
    match *body {
        Body::Recv { arrived, .. } => Some(arrived),
        Body::Wait { completion, .. } if completion.is_recv => Some(completion.arrived),
        Body::Test { completion: Some(c), .. } if c.is_recv => Some(c.arrived),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_recovered_and_one_length_gives_the_median() {
        let line = Linear::fit(&[(0, 100), (1000, 1100), (2000, 2100)]);
        assert!((line.beta_ns - 100.0).abs() < 1e-6 && (line.tau_ns_per_byte - 1.0).abs() < 1e-9, "{line:?}");
        assert_eq!(line.at(500), 600);
        let flat = Linear::fit(&[(8, 5), (8, 900), (8, 7)]);
        assert_eq!((flat.at(8), flat.samples), (7, 3));
        assert_eq!(Linear::fit(&[]).at(1 << 20), 0);
    }
}
