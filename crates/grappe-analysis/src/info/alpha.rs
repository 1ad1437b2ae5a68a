//! What `info` says of α, the recording cost: per kind, before and
//! after the run, the kinds that share a value named together.

use std::cmp::Reverse;
use std::collections::BTreeMap;

use grappe_trace::EventKind;
use grappe_trace::alpha::{Recording, recording_of};

/// The kinds whose α after the run differs from the one before by more
/// than a quarter and 3 ns (what a busier or quieter host does; a
/// median's noise stays within), grouped by their two values:
/// `13 → 22 ns each runtime call`.
pub(super) fn alpha_moves(before: &BTreeMap<String, u32>, after: &BTreeMap<String, u32>) -> Vec<String> {
    let mut by_move: BTreeMap<(u32, u32), Vec<&str>> = BTreeMap::new();
    for (kind, &b) in before {
        if let Some(&a) = after.get(kind)
            && a.abs_diff(b) > 3
            && a.abs_diff(b) * 4 > b
        {
            by_move.entry((b, a)).or_default().push(kind);
        }
    }
    by_move.into_iter().map(|((b, a), kinds)| format!("{b} → {a} ns {}", kinds_text(kinds))).collect()
}

/// Kind names, "each runtime call" standing for all the calls when they are there.
fn kinds_text(mut kinds: Vec<&str>) -> String {
    let calls: Vec<&str> =
        EventKind::ALL.iter().filter(|&&k| recording_of(k) == Recording::Call).map(|k| k.name()).collect();
    if calls.iter().all(|c| kinds.contains(c)) {
        kinds.retain(|k| !calls.contains(k));
        kinds.insert(0, "each runtime call");
    }
    kinds.join(", ")
}

/// `22 ns each runtime call; 14 ns point, counter, region_enter; ...`:
/// the kinds grouped by α, largest first.
pub(super) fn alpha_text(alpha_ns: &BTreeMap<String, u32>) -> String {
    let mut by_cost: BTreeMap<Reverse<u32>, Vec<&str>> = BTreeMap::new();
    for (kind, &ns) in alpha_ns {
        by_cost.entry(Reverse(ns)).or_default().push(kind);
    }
    let groups: Vec<String> =
        by_cost.into_iter().map(|(Reverse(ns), kinds)| format!("{ns} ns {}", kinds_text(kinds))).collect();
    groups.join("; ")
}

/// Each kind's id and name, for α tables indexed by kind id.
pub(super) fn kind_names() -> impl Iterator<Item = (usize, &'static str)> {
    EventKind::ALL.iter().map(|k| (k.id() as usize, k.name()))
}

/// `21 → 15 ns each runtime call; 11 ns point, counter`: a rank's α
/// before and after the run, the kinds grouped by the two values (one
/// when they agree), dearest first.
pub(super) fn before_after_text(before: &BTreeMap<String, u32>, after: &BTreeMap<String, u32>) -> String {
    // Dearest first: by α before, then after, both descending.
    type Dearest = (Reverse<u32>, Reverse<Option<u32>>);
    let mut by_cost: BTreeMap<Dearest, Vec<&str>> = BTreeMap::new();
    for (kind, &b) in before {
        let a = after.get(kind).copied().filter(|&a| a != b);
        by_cost.entry((Reverse(b), Reverse(a))).or_default().push(kind);
    }
    let groups: Vec<String> = by_cost
        .into_iter()
        .map(|((Reverse(b), Reverse(a)), kinds)| match a {
            Some(a) => format!("{b} → {a} ns {}", kinds_text(kinds)),
            None => format!("{b} ns {}", kinds_text(kinds)),
        })
        .collect();
    groups.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alphas(of: impl Fn(EventKind) -> u32) -> BTreeMap<String, u32> {
        EventKind::ALL.iter().map(|&k| (k.name().to_owned(), of(k))).collect()
    }

    #[test]
    fn the_recording_costs_group_the_kinds_that_share_one() {
        let by_recording = alphas(|k| match recording_of(k) {
            Recording::Call => 22,
            Recording::Named => 18,
            Recording::Instant => 12,
        });
        assert_eq!(
            alpha_text(&by_recording),
            "22 ns each runtime call; 18 ns counter, point, region_enter; 12 ns flush_begin, flush_end, region_leave"
        );
        // A file whose non-blocking posts cost what points do: the calls are named.
        let older = alphas(|k| match (k, recording_of(k)) {
            (EventKind::Isend | EventKind::Irecv, _) | (_, Recording::Named | Recording::Instant) => 11,
            _ => 22,
        });
        let text = alpha_text(&older);
        assert!(text.starts_with("22 ns collective, comm_create, finalize, init, iprobe, probe, recv, send"), "{text}");
        assert!(text.contains("; 11 ns counter, flush_begin, flush_end, irecv, isend, point,"), "{text}");
    }

    #[test]
    fn an_alpha_that_moved_by_more_than_a_quarter_and_3_ns_is_named_with_both_values() {
        let before = alphas(|k| match k {
            EventKind::Counter => 20,
            _ if recording_of(k) == Recording::Call => 13,
            _ => 10,
        });
        let after = alphas(|k| match k {
            EventKind::Point => 13,   // 3 ns: a median's noise, if a third
            EventKind::Counter => 24, // 4 ns, but a fifth
            EventKind::RegionLeave => 16,
            _ if recording_of(k) == Recording::Call => 22,
            _ => before[k.name()],
        });
        assert_eq!(alpha_moves(&before, &after), ["10 → 16 ns region_leave", "13 → 22 ns each runtime call"]);
        assert!(alpha_moves(&before, &before).is_empty());
    }

    #[test]
    fn a_ranks_alpha_before_and_after_groups_the_kinds_by_both_values() {
        let named = |pairs: &[(&str, u32)]| pairs.iter().map(|&(k, v)| (k.to_owned(), v)).collect::<BTreeMap<_, _>>();
        let before = named(&[("send", 21), ("recv", 21), ("point", 11), ("counter", 11), ("init", 30)]);
        let after = named(&[("send", 15), ("recv", 15), ("point", 11), ("counter", 12)]);
        assert_eq!(
            before_after_text(&before, &after),
            "30 ns init; 21 → 15 ns recv, send; 11 → 12 ns counter; 11 ns point"
        );
    }
}
