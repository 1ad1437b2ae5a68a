//! Ordinary least squares on the offset series d = a + κ·x (Eq. 3.8 with
//! β = 1 + κ), the variances of Eq. 3.11–3.12 and the Durbin–Watson
//! statistic of §2.7.

use crate::error::ClockError;
use crate::points::Point;

/// A straight line d = a + κ·x in the centred frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Line {
    /// Offset at x = 0 (the frame's origin), ns.
    pub a: f64,
    /// Drift κ = β − 1.
    pub kappa: f64,
}

impl Line {
    pub fn at(&self, x: f64) -> f64 {
        self.a + self.kappa * x
    }
}

/// An OLS fit and what its confidence intervals need.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct LineFit {
    pub line: Line,
    /// σ̂² = ‖residuals‖² / (N − 2), Eq. 3.12.
    pub sigma2: f64,
    /// V̂(a) = σ̂²·(1/N + x̄²/Sxx): the variance of the offset at the origin,
    /// diagonal element of σ̂²(X′X)⁻¹ (Eq. 3.11).
    pub var_a: f64,
    /// V̂(κ) = σ̂²/Sxx.
    pub var_kappa: f64,
    /// Residuals d_k − a − κ·x_k, in point order.
    pub residuals: Vec<f64>,
    /// x̄, the mean abscissa.
    pub x_mean: f64,
    /// Sxx = Σ(x − x̄)².
    pub sxx: f64,
}

impl LineFit {
    /// Degrees of freedom of the Student quantile, N − 2.
    pub fn dof(&self) -> usize {
        self.residuals.len() - 2
    }

    /// V̂ of the line's value at x: σ̂²·(1/N + (x − x̄)²/Sxx).
    pub fn var_at(&self, x: f64) -> f64 {
        self.sigma2 * (1.0 / self.residuals.len() as f64 + (x - self.x_mean).powi(2) / self.sxx)
    }
}

/// Minimum number of points: two for the line and one for σ̂².
pub(crate) const MIN_POINTS: usize = 3;

/// Fits the line by OLS. Centred sums (about x̄, d̄) avoid the cancellation of
/// the textbook Σx², (Σx)² form.
pub(crate) fn ols(points: &[Point]) -> Result<LineFit, ClockError> {
    let n = points.len();
    if n < MIN_POINTS {
        return Err(ClockError::TooFewPoints { needed: MIN_POINTS, got: n });
    }
    if points.iter().any(|p| !(p.x.is_finite() && p.d.is_finite())) {
        return Err(ClockError::InvalidParameter { name: "point", value: f64::NAN, expected: "finite" });
    }
    let nf = n as f64;
    let x_mean = points.iter().map(|p| p.x).sum::<f64>() / nf;
    let d_mean = points.iter().map(|p| p.d).sum::<f64>() / nf;
    let sxx: f64 = points.iter().map(|p| (p.x - x_mean).powi(2)).sum();
    if sxx <= 0.0 {
        return Err(ClockError::DegenerateAbscissa { points: n });
    }
    let sxd: f64 = points.iter().map(|p| (p.x - x_mean) * (p.d - d_mean)).sum();
    let kappa = sxd / sxx;
    let line = Line { a: d_mean - kappa * x_mean, kappa };
    let residuals: Vec<f64> = points.iter().map(|p| p.d - line.at(p.x)).collect();
    let sigma2 = residuals.iter().map(|r| r * r).sum::<f64>() / (nf - 2.0);
    let var_a = sigma2 * (1.0 / nf + x_mean * x_mean / sxx);
    Ok(LineFit { line, sigma2, var_a, var_kappa: sigma2 / sxx, residuals, x_mean, sxx })
}

/// DW = Σ_{k≥2}(v_k − v_{k−1})² / Σ v_k²: 2 for independent residuals, below
/// 2 for positive autocorrelation (a periodic clock noise gives ≈ 0.9,
/// §2.7), above 2 for alternating residuals (Haddad's raw points). `None`
/// when every residual is zero.
pub(crate) fn durbin_watson(residuals: &[f64]) -> Option<f64> {
    let energy: f64 = residuals.iter().map(|v| v * v).sum();
    if energy == 0.0 {
        return None;
    }
    let diffs: f64 = residuals.windows(2).map(|w| (w[1] - w[0]).powi(2)).sum();
    Some(diffs / energy)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::points::Direction;

    fn pts(xy: &[(f64, f64)]) -> Vec<Point> {
        xy.iter().map(|&(x, d)| Point { x, d, dir: Direction::Midpoint }).collect()
    }

    #[test]
    fn exact_line_is_recovered_with_zero_variance() {
        let fit = ols(&pts(&[(0.0, 5.0), (10.0, 6.0), (20.0, 7.0), (30.0, 8.0)])).unwrap();
        assert!((fit.line.a - 5.0).abs() < 1e-12 && (fit.line.kappa - 0.1).abs() < 1e-12);
        assert!(fit.sigma2.abs() < 1e-20);
        assert_eq!(fit.dof(), 2);
    }

    #[test]
    fn variances_follow_eq_3_11() {
        // Residuals +1, −2, +1 about d = 0: σ̂² = 6/1, Sxx = 2, x̄ = 1.
        let fit = ols(&pts(&[(0.0, 1.0), (1.0, -2.0), (2.0, 1.0)])).unwrap();
        assert!((fit.sigma2 - 6.0).abs() < 1e-12);
        assert!((fit.var_kappa - 3.0).abs() < 1e-12);
        assert!((fit.var_a - 6.0 * (1.0 / 3.0 + 0.5)).abs() < 1e-12);
    }

    #[test]
    fn degenerate_inputs_are_errors() {
        assert!(matches!(ols(&pts(&[(0.0, 1.0), (1.0, 2.0)])), Err(ClockError::TooFewPoints { got: 2, .. })));
        let same_x = pts(&[(3.0, 1.0), (3.0, 2.0), (3.0, 4.0)]);
        assert_eq!(ols(&same_x), Err(ClockError::DegenerateAbscissa { points: 3 }));
        assert!(ols(&pts(&[(0.0, f64::NAN), (1.0, 2.0), (2.0, 3.0)])).is_err());
        assert!(ols(&pts(&[(0.0, 1.0), (f64::INFINITY, 2.0), (2.0, 3.0)])).is_err());
    }

    #[test]
    fn durbin_watson_extremes() {
        assert_eq!(durbin_watson(&[0.0, 0.0]), None);
        let alternating = durbin_watson(&[1.0, -1.0, 1.0, -1.0]).unwrap();
        assert!((alternating - 3.0).abs() < 1e-12);
        let smooth = durbin_watson(&[1.0, 1.0, 1.0, 1.0]).unwrap();
        assert_eq!(smooth, 0.0);
    }
}
