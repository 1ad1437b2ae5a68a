//! The settings of a job's host segment, derived from its size and the
//! environment.

use grappe_fabric::LayoutParams;
use grappe_settings::{SettingError, Vars};

/// Mailbox size per ordered pair of ranks: 32 MiB shared by all pairs of
/// the host, between 4 KiB and 256 KiB each (`GRAPPE_RING_BYTES`
/// overrides). Large rings let a sender run ahead of its receiver: a
/// stream of 1 KiB messages takes 4x less time per message with 256 KiB
/// than with 64 KiB (scripts/ring-sweep, BENCHMARKS.md).
pub(crate) fn layout_params(local_ranks: usize) -> Result<LayoutParams, SettingError> {
    layout_params_from(local_ranks, Vars::process())
}

fn layout_params_from(local_ranks: usize, vars: Vars<'_>) -> Result<LayoutParams, SettingError> {
    let budget = (32usize << 20) / (local_ranks * local_ranks).max(1);
    let default_ring = budget.clamp(4 << 10, 256 << 10);
    let default_ring = if default_ring.is_power_of_two() { default_ring } else { default_ring.next_power_of_two() / 2 };
    let ring_bytes = vars.number("GRAPPE_RING_BYTES", default_ring, "a number of bytes")?;
    Ok(LayoutParams {
        local_ranks,
        ring_bytes,
        rdv_slots: 16,
        arena_bytes: grappe_comm::arena_bytes(local_ranks),
        arenas: grappe_comm::ARENAS,
    })
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use super::*;

    #[test]
    fn rings_share_32_mib_and_a_bad_size_is_named() {
        let none = |_: &str| None;
        assert_eq!(layout_params_from(4, Vars::from_lookup(&none)).unwrap().ring_bytes, 256 << 10);
        assert_eq!(layout_params_from(64, Vars::from_lookup(&none)).unwrap().ring_bytes, 8 << 10);
        let bad = |_: &str| Some(OsString::from("64KiB"));
        let error = layout_params_from(4, Vars::from_lookup(&bad)).unwrap_err();
        assert_eq!(error.to_string(), "GRAPPE_RING_BYTES=\"64KiB\": expected a number of bytes");
    }
}
