//! A fitted clock: conversion between a peer's local dates and global time
//! (the reference rank's clock), Eq. 3.2–3.3, and the tachyon check of P4.

use serde::{Deserialize, Serialize};

use crate::error::ClockError;

/// The linear relation lt_j = α + β·lt_ref between a peer's clock and the
/// reference clock (Eq. 3.2 without the noise δ).
///
/// It is stored around an origin on the reference clock, as the offset
/// lt_j − lt_ref at that date and the drift κ = β − 1, because both are
/// small numbers an `f64` holds exactly enough, where α (the offset at the
/// reference clock's epoch) and β ≈ 1 are not.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClockModel {
    /// A reference-clock date, ns (the first sample's ping for a fit).
    pub origin_ns: i64,
    /// lt_j − lt_ref at `origin_ns`, ns.
    pub offset_ns: f64,
    /// κ = β − 1, the peer's rate relative to the reference minus one.
    pub drift: f64,
}

impl ClockModel {
    /// The reference rank's own model: global time is its local time.
    pub fn identity() -> Self {
        ClockModel { origin_ns: 0, offset_ns: 0.0, drift: 0.0 }
    }

    /// A model from its parts, refused if not finite or if β = 1 + drift is
    /// not positive (a clock that runs backwards cannot be inverted).
    pub fn new(origin_ns: i64, offset_ns: f64, drift: f64) -> Result<Self, ClockError> {
        if !offset_ns.is_finite() {
            return Err(ClockError::InvalidParameter { name: "offset_ns", value: offset_ns, expected: "finite" });
        }
        if !(drift.is_finite() && drift > -1.0) {
            return Err(ClockError::InvalidParameter { name: "drift", value: drift, expected: "finite and > -1" });
        }
        Ok(ClockModel { origin_ns, offset_ns, drift })
    }

    /// β, the slope of Eq. 3.2.
    pub fn slope(&self) -> f64 {
        1.0 + self.drift
    }

    /// α, the intercept of Eq. 3.2: the offset at reference date 0. Far from
    /// the origin this loses precision (it multiplies κ by the date); prefer
    /// [`ClockModel::offset_at`].
    pub fn alpha(&self) -> f64 {
        self.offset_at(0)
    }

    /// lt_j − lt_ref at a reference date.
    pub fn offset_at(&self, reference_ns: i64) -> f64 {
        self.offset_ns + self.drift * self.since_origin(reference_ns)
    }

    /// Eq. 3.3: LC_j = (lt_j − α)/β, the global date of a local date of the
    /// peer. Rounded to the nanosecond; saturates at the `i64` range.
    pub fn to_global(&self, local_ns: i64) -> i64 {
        let elapsed = self.since_origin(local_ns) - self.offset_ns;
        self.origin_ns.saturating_add((elapsed / self.slope()).round() as i64)
    }

    /// The inverse of [`ClockModel::to_global`]: the peer's local date at a
    /// global date, lt_j = α + β·LC.
    pub fn to_local(&self, global_ns: i64) -> i64 {
        global_ns.saturating_add(self.offset_at(global_ns).round() as i64)
    }

    /// Nanoseconds from the origin to a date, exact up to 2^53 ns (104 days)
    /// because the difference is taken in integers first; dates are added
    /// back in integers too, so a raw monotonic date of 1e18 keeps its
    /// nanoseconds.
    fn since_origin(&self, date_ns: i64) -> f64 {
        (i128::from(date_ns) - i128::from(self.origin_ns)) as f64
    }
}

/// Global receive-end date minus global send date, ns: positive when the
/// receive is dated after the send, negative for a tachyon.
pub fn causal_gap_ns(send_local_ns: i64, sender: &ClockModel, recv_local_ns: i64, receiver: &ClockModel) -> i64 {
    receiver.to_global(recv_local_ns).saturating_sub(sender.to_global(send_local_ns))
}

/// True when a message's receive end is dated before its send once both are
/// converted to global time (a violation of P4, "tachyon").
pub fn is_tachyon(send_local_ns: i64, sender: &ClockModel, recv_local_ns: i64, receiver: &ClockModel) -> bool {
    causal_gap_ns(send_local_ns, sender, recv_local_ns, receiver) < 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn identity_changes_nothing() {
        let id = ClockModel::identity();
        assert_eq!(id.to_global(123_456_789), 123_456_789);
        assert_eq!(id.to_local(-5), -5);
    }

    #[test]
    fn eq_3_3_on_a_known_clock() {
        // Peer 1 s ahead at reference date 10 s, running 100 ppm fast.
        let m = ClockModel::new(10_000_000_000, 1e9, 1e-4).unwrap();
        assert_eq!(m.to_local(10_000_000_000), 11_000_000_000);
        assert_eq!(m.to_local(20_000_000_000), 21_001_000_000);
        assert_eq!(m.to_global(21_001_000_000), 20_000_000_000);
        assert!((m.alpha() - (1e9 - 1e6)).abs() < 1e-3);
    }

    #[test]
    fn bad_models_are_refused() {
        assert!(ClockModel::new(0, f64::NAN, 0.0).is_err());
        assert!(ClockModel::new(0, 0.0, f64::INFINITY).is_err());
        assert!(ClockModel::new(0, 0.0, -1.0).is_err());
    }

    #[test]
    fn tachyon_is_a_receive_dated_before_its_send() {
        let sender = ClockModel::identity();
        let receiver = ClockModel::new(0, 500.0, 0.0).unwrap();
        // Sent at 1000, received at global 1100 → local 1600.
        assert!(!is_tachyon(1000, &sender, 1600, &receiver));
        assert_eq!(causal_gap_ns(1000, &sender, 1600, &receiver), 100);
        // A receiver clock believed 700 ns ahead dates it at 900.
        let wrong = ClockModel::new(0, 700.0, 0.0).unwrap();
        assert!(is_tachyon(1000, &sender, 1600, &wrong));
    }

    proptest! {
        #[test]
        fn to_local_inverts_to_global(
            origin in -1_i64 << 50..1 << 50,
            offset in -1e12_f64..1e12,
            drift in -1e-3_f64..1e-3,
            global in -1_i64 << 45..1 << 45,
        ) {
            let m = ClockModel::new(origin, offset, drift).unwrap();
            let g = origin + global;
            prop_assert!((m.to_global(m.to_local(g)) - g).abs() <= 1);
        }
    }
}
