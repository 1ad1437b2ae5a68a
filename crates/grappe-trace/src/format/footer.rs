//! The footer block: the totals a rank writes when it finishes, or a
//! merge when it is done, varint-encoded. Each section was added after
//! the one before it; a footer may end after any of them (files written
//! before the section existed) and reads back with the later ones empty.
//!
//! ```text
//! events, dropped, flushes
//! α after the run:   count of kinds (0: none), then (kind id, ns) pairs
//! incomplete ranks:  count, then (rank, offset, cut length + 1 (0: none), cut UTF-8)
//! rank endings:      count, then (rank, dropped, flushes, α after the run as above)
//! ```

use serde::Serialize;

use super::{put_varint, varint};
use crate::event::EventKind;

/// Totals written when a rank finishes (or a merge does).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Footer {
    /// Events written.
    pub events: u64,
    /// Events lost because the buffer was full (policy `end`).
    pub dropped: u64,
    /// Buffer flushes during the run.
    pub flushes: u64,
    /// α per kind id measured again when the rank finished, as the clocks
    /// are sampled before and after the run (SBA): with the header's α
    /// (measured before), it says whether recording got dearer or cheaper
    /// while the program ran, and compensation can take each event's α
    /// between the two. `None` in files written before it was measured
    /// and in merged traces (their ranks' are in `ranks`).
    pub alpha_after: Option<[u32; 32]>,
    /// For a merged trace: the ranks whose files were incomplete when
    /// merged (their events stop where their file did). Empty otherwise.
    pub incomplete: Vec<IncompleteRank>,
    /// For a merged trace: the footer of each complete rank file it was
    /// made from, by rank. Empty otherwise.
    pub ranks: Vec<RankEnding>,
}

/// A rank's file that ended without its footer, as a merge found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IncompleteRank {
    /// World rank.
    pub rank: u32,
    /// Where its file ended (bytes read) or its cut block starts.
    pub offset: u64,
    /// What was missing there, for a file cut inside a block; `None` for
    /// one that ends after a whole block (the rank did not finish).
    pub cut: Option<String>,
}

/// What a rank's footer said, kept in a merged trace's footer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RankEnding {
    /// World rank.
    pub rank: u32,
    /// Its events lost because the buffer was full.
    pub dropped: u64,
    /// Its buffer flushes.
    pub flushes: u64,
    /// Its α after the run, per kind id.
    pub alpha_after: Option<[u32; 32]>,
}

/// Encodes a footer payload.
pub fn encode_footer(f: &Footer, out: &mut Vec<u8>) {
    for v in [f.events, f.dropped, f.flushes] {
        put_varint(out, v);
    }
    encode_alpha(f.alpha_after.as_ref(), out);
    put_varint(out, f.incomplete.len() as u64);
    for rank in &f.incomplete {
        put_varint(out, rank.rank as u64);
        put_varint(out, rank.offset);
        let cut = rank.cut.as_deref().map(str::as_bytes);
        put_varint(out, cut.map_or(0, |c| c.len() as u64 + 1));
        out.extend_from_slice(cut.unwrap_or_default());
    }
    put_varint(out, f.ranks.len() as u64);
    for rank in &f.ranks {
        for v in [rank.rank as u64, rank.dropped, rank.flushes] {
            put_varint(out, v);
        }
        encode_alpha(rank.alpha_after.as_ref(), out);
    }
}

fn encode_alpha(alpha: Option<&[u32; 32]>, out: &mut Vec<u8>) {
    put_varint(out, alpha.map_or(0, |_| EventKind::ALL.len() as u64));
    if let Some(alpha) = alpha {
        for kind in EventKind::ALL {
            put_varint(out, kind.id() as u64);
            put_varint(out, alpha[kind.id() as usize] as u64);
        }
    }
}

/// Decodes a footer payload.
pub fn decode_footer(payload: &[u8]) -> Result<Footer, (usize, String)> {
    let mut pos = 0;
    let (events, dropped, flushes) = (
        varint(payload, &mut pos, "events")?,
        varint(payload, &mut pos, "dropped")?,
        varint(payload, &mut pos, "flushes")?,
    );
    let mut footer = Footer { events, dropped, flushes, ..Footer::default() };
    if pos < payload.len() {
        footer.alpha_after = decode_alpha(payload, &mut pos)?;
        footer.incomplete = decode_incomplete(payload, &mut pos)?;
    }
    if pos < payload.len() {
        footer.ranks = decode_rank_endings(payload, &mut pos)?;
    }
    Ok(footer)
}

/// An α after the run: a count of kinds (0: none), then (kind id, ns)
/// pairs.
fn decode_alpha(payload: &[u8], pos: &mut usize) -> Result<Option<[u32; 32]>, (usize, String)> {
    let count = varint(payload, pos, "kinds with an α after the run")?;
    if count > EventKind::ALL.len() as u64 {
        return Err((*pos, format!("at most {} kinds with an α after the run, not {count}", EventKind::ALL.len())));
    }
    if count == 0 {
        return Ok(None);
    }
    let mut alpha = [0u32; 32];
    for _ in 0..count {
        let id = varint(payload, pos, "an event kind id")?;
        let kind = u16::try_from(id).ok().and_then(EventKind::from_id);
        let kind = kind.ok_or_else(|| (*pos, format!("a known event kind id, not {id}")))?;
        let ns = varint(payload, pos, "an α in ns")?;
        alpha[kind.id() as usize] = u32::try_from(ns).map_err(|_| (*pos, format!("an α below 2^32 ns, not {ns}")))?;
    }
    Ok(Some(alpha))
}

fn rank_of(payload: &[u8], pos: &mut usize) -> Result<u32, (usize, String)> {
    let rank = varint(payload, pos, "a rank")?;
    u32::try_from(rank).map_err(|_| (*pos, format!("a rank below 2^32, not {rank}")))
}

/// A count read before as many entries: no more than the bytes left,
/// which each entry needs at least one of (a corrupt count must not
/// reserve gigabytes).
fn capacity(count: u64, payload: &[u8], pos: usize) -> usize {
    count.min(payload.len().saturating_sub(pos) as u64) as usize
}

fn decode_incomplete(payload: &[u8], pos: &mut usize) -> Result<Vec<IncompleteRank>, (usize, String)> {
    let count = varint(payload, pos, "incomplete ranks")?;
    let mut ranks = Vec::with_capacity(capacity(count, payload, *pos));
    for _ in 0..count {
        let rank = rank_of(payload, pos)?;
        let offset = varint(payload, pos, "an offset")?;
        let cut = match varint(payload, pos, "the length of what was missing")? {
            0 => None,
            len => {
                let bytes = usize::try_from(len - 1).ok().and_then(|len| payload.get(*pos..pos.checked_add(len)?));
                let bytes = bytes.ok_or_else(|| (*pos, format!("{} bytes of what was missing", len - 1)))?;
                *pos += bytes.len();
                Some(
                    String::from_utf8(bytes.to_vec())
                        .map_err(|_| (*pos, "UTF-8 text of what was missing".to_owned()))?,
                )
            }
        };
        ranks.push(IncompleteRank { rank, offset, cut });
    }
    Ok(ranks)
}

fn decode_rank_endings(payload: &[u8], pos: &mut usize) -> Result<Vec<RankEnding>, (usize, String)> {
    let count = varint(payload, pos, "rank endings")?;
    let mut ranks = Vec::with_capacity(capacity(count, payload, *pos));
    for _ in 0..count {
        let rank = rank_of(payload, pos)?;
        let dropped = varint(payload, pos, "a rank's dropped events")?;
        let flushes = varint(payload, pos, "a rank's flushes")?;
        let alpha_after = decode_alpha(payload, pos)?;
        ranks.push(RankEnding { rank, dropped, flushes, alpha_after });
    }
    Ok(ranks)
}
