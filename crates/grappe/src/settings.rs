//! The settings of a job's host segment, derived from its size and the
//! environment.

use grappe_comm::Error;
use grappe_fabric::LayoutParams;

/// Mailbox size per ordered pair of ranks: 32 MiB shared by all pairs of
/// the host, between 4 KiB and 256 KiB each (`GRAPPE_RING_BYTES`
/// overrides). Large rings let a sender run ahead of its receiver: a
/// stream of 1 KiB messages takes 4x less time per message with 256 KiB
/// than with 64 KiB (scripts/ring-sweep, BENCHMARKS.md).
pub(crate) fn layout_params(local_ranks: usize) -> Result<LayoutParams, Error> {
    let budget = (32usize << 20) / (local_ranks * local_ranks).max(1);
    let default_ring = budget.clamp(4 << 10, 256 << 10);
    let default_ring = if default_ring.is_power_of_two() { default_ring } else { default_ring.next_power_of_two() / 2 };
    let ring_bytes = match std::env::var("GRAPPE_RING_BYTES") {
        Err(_) => default_ring,
        Ok(text) => text
            .trim()
            .parse()
            .map_err(|_| Error::Bootstrap(format!("GRAPPE_RING_BYTES={text:?} is not a number of bytes")))?,
    };
    Ok(LayoutParams {
        local_ranks,
        ring_bytes,
        rdv_slots: 16,
        arena_bytes: grappe_comm::arena_bytes(local_ranks),
        arenas: grappe_comm::ARENAS,
    })
}
