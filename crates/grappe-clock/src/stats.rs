//! Student-t quantiles for the confidence intervals of §2.6.
//!
//! The thesis quotes "k_35(0.05) = 2.44", which is not the two-sided 5%
//! quantile for 35 degrees of freedom (≈ 2.030, erratum §10); the exact
//! quantile is computed here from the regularised incomplete beta function,
//! so intervals are right for small samples (N − 2 = 3 gives 3.18, not 1.96).

use crate::error::ClockError;

/// Quantile of Student's t distribution: the t with P(T ≤ t) = `p` for `dof`
/// degrees of freedom. Accurate to ~1e-10 relative.
pub fn student_t_quantile(p: f64, dof: f64) -> Result<f64, ClockError> {
    if !(p > 0.0 && p < 1.0) {
        return Err(ClockError::InvalidParameter { name: "p", value: p, expected: "0 < p < 1" });
    }
    if !(dof > 0.0 && dof.is_finite()) {
        return Err(ClockError::InvalidParameter { name: "dof", value: dof, expected: "finite and > 0" });
    }
    if p < 0.5 {
        return Ok(-upper_quantile(1.0 - p, dof));
    }
    Ok(upper_quantile(p, dof))
}

/// Cumulative distribution of Student's t with `dof` degrees of freedom.
pub fn student_t_cdf(t: f64, dof: f64) -> f64 {
    // P(|T| > |t|) = I_{ν/(ν+t²)}(ν/2, 1/2).
    let tail = 0.5 * regularized_beta(dof / 2.0, 0.5, dof / (dof + t * t));
    if t > 0.0 { 1.0 - tail } else { tail }
}

/// Bisection on the CDF for p ≥ 0.5: slow but always converges, and it runs
/// once per fit.
fn upper_quantile(p: f64, dof: f64) -> f64 {
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    while student_t_cdf(hi, dof) < p && hi < 1e300 {
        lo = hi;
        hi *= 2.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if student_t_cdf(mid, dof) < p {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo <= 1e-13 * hi {
            break;
        }
    }
    0.5 * (lo + hi)
}

/// ln Γ(x) for x ≥ 0.5 by the Lanczos approximation (g = 7, 9 terms), which
/// is good to ~1e-15; every call here has x = ν/2, 1/2 or their sum.
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    let x = x - 1.0;
    let sum = C[1..].iter().enumerate().fold(C[0], |acc, (i, c)| acc + c / (x + i as f64 + 1.0));
    let t = x + G + 0.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// I_x(a, b), the regularised incomplete beta function.
fn regularized_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = a * x.ln() + b * (1.0 - x).ln() - (ln_gamma(a) + ln_gamma(b) - ln_gamma(a + b));
    // The continued fraction converges fast only below the mean; use the
    // symmetry I_x(a, b) = 1 − I_{1−x}(b, a) above it.
    if x < (a + 1.0) / (a + b + 2.0) {
        ln_front.exp() * beta_fraction(a, b, x) / a
    } else {
        1.0 - ln_front.exp() * beta_fraction(b, a, 1.0 - x) / b
    }
}

/// The continued fraction for I_x(a, b), evaluated by the modified Lentz
/// method: 1/(1+ d1/(1+ d2/(1+ …))) with
/// d_{2m} = m(b−m)x / ((a+2m−1)(a+2m)),
/// d_{2m+1} = −(a+m)(a+b+m)x / ((a+2m)(a+2m+1)).
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let guard = |v: f64| if v.abs() < TINY { TINY } else { v };
    let mut c = 1.0;
    let mut d = 1.0 / guard(1.0 - (a + b) * x / (a + 1.0));
    let mut h = d;
    for m in 1..=1000 {
        let m = f64::from(m);
        for coef in [
            m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0)),
        ] {
            d = 1.0 / guard(1.0 + coef * d);
            c = guard(1.0 + coef / c);
            h *= d * c;
        }
        if (d * c - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Two-sided 95% quantiles from standard tables.
    #[test]
    fn quantiles_match_tables() {
        let table = [
            (1.0, 12.706_204_736),
            (2.0, 4.302_652_730),
            (3.0, 3.182_446_305),
            (8.0, 2.306_004_135),
            (18.0, 2.100_922_040),
            (33.0, 2.034_515_297),
            (35.0, 2.030_107_928),
            (198.0, 1.972_017_478),
            (1e6, 1.959_966_353),
        ];
        for (dof, want) in table {
            let got = student_t_quantile(0.975, dof).unwrap();
            assert!((got - want).abs() < 1e-6 * want, "dof {dof}: {got} vs {want}");
        }
    }

    #[test]
    fn erratum_2_44_is_not_the_35_dof_quantile() {
        let q = student_t_quantile(0.975, 35.0).unwrap();
        assert!((q - 2.44).abs() > 0.4);
    }

    #[test]
    fn bad_arguments_are_errors() {
        for (p, dof) in [(f64::NAN, 3.0), (1.0, 3.0), (0.0, 3.0), (0.9, 0.0), (0.9, f64::INFINITY), (0.9, f64::NAN)] {
            assert!(student_t_quantile(p, dof).is_err(), "p={p} dof={dof}");
        }
    }

    proptest! {
        #[test]
        fn quantile_inverts_cdf(p in 0.001_f64..0.999, dof in 1.0_f64..500.0) {
            let t = student_t_quantile(p, dof).unwrap();
            prop_assert!((student_t_cdf(t, dof) - p).abs() < 1e-9);
        }

        #[test]
        fn quantile_decreases_with_dof(dof in 1.0_f64..200.0) {
            let a = student_t_quantile(0.975, dof).unwrap();
            let b = student_t_quantile(0.975, dof + 1.0).unwrap();
            prop_assert!(a > b && b > 1.959);
        }
    }
}
