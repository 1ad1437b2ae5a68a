//! The little collective communicator management needs before the real
//! collectives exist: gather fixed-size records to rank 0, broadcast back.
//! Linear, which is fine for the rare `dup`/`split`.

use crate::Result;

use crate::Communicator;
use crate::selectors::{Source, Tag};

/// Tag of management traffic on the collective context; the collectives
/// use smaller tags.
pub(crate) const MANAGEMENT_TAG: i32 = crate::selectors::TAG_UB;

/// Every rank's `words`, indexed by communicator rank. All ranks must pass
/// the same number of words. Rank 0 may `annotate` the gathered table
/// before it goes back to everyone (to hand out shared resources).
pub(crate) fn allgather_words(
    comm: &Communicator,
    words: &[u64],
    annotate: impl FnOnce(&mut [Vec<u64>]),
) -> Result<Vec<Vec<u64>>> {
    let (size, rank, ctx) = (comm.size(), comm.rank(), comm.coll_ctx());
    let width = words.len() * 8;
    let mut table = vec![0u8; size * width];
    table[rank * width..(rank + 1) * width].copy_from_slice(bytemuck::cast_slice(words));
    if rank == 0 {
        for src in 1..size {
            let part = &mut table[src * width..(src + 1) * width];
            comm.recv_bytes(ctx, part, Source::Rank(src), Tag::Is(MANAGEMENT_TAG))?;
        }
        let mut entries = decode(&table, width);
        annotate(&mut entries);
        table = entries.iter().flat_map(|entry| entry.iter().flat_map(|w| w.to_ne_bytes())).collect();
        for dest in 1..size {
            comm.send_bytes(ctx, &table, dest, MANAGEMENT_TAG)?;
        }
    } else {
        comm.send_bytes(ctx, bytemuck::cast_slice(words), 0, MANAGEMENT_TAG)?;
        comm.recv_bytes(ctx, &mut table, Source::Rank(0), Tag::Is(MANAGEMENT_TAG))?;
    }
    Ok(decode(&table, width))
}

fn decode(table: &[u8], width: usize) -> Vec<Vec<u64>> {
    table
        .chunks_exact(width.max(1))
        .map(|chunk| chunk.chunks_exact(8).map(|b| u64::from_ne_bytes(b.try_into().expect("8 bytes"))).collect())
        .collect()
}
