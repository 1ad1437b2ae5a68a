//! A world split into two disjoint communicators that share context id 2
//! (as `split(rank % 2)` gives them): the tools keep the halves apart.

use std::path::Path;

use grappe_analysis::export::{write_chrome, write_paje, write_picl};
use grappe_analysis::profile::profile;
use grappe_analysis::{CausalStream, GlobalOptions, GlobalTime, TraceSet};
use grappe_testkit::synthetic::{plain_header, write_events};
use grappe_trace::{Body, CollectiveKind};

const SPLIT: u32 = 2;

/// Rank `r`'s half, in communicator rank order.
fn half(r: u32) -> Vec<u32> {
    if r % 2 == 0 { vec![0, 2] } else { vec![1, 3] }
}

/// Each half broadcasts from its rank 1 (world ranks 2 and 3). The halves
/// interleave: ranks 0, 1, 2, 3 enter at 1000, 1500, 3000, 3200.
fn write_job(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    for (r, entry) in [(0u32, 1000u64), (1, 1500), (2, 3000), (3, 3200)] {
        let events = vec![
            (100, 100, Body::Init),
            (200, 300, Body::CommCreate { comm: SPLIT, parent: 0, members: half(r).into() }),
            (
                entry,
                6000,
                Body::Collective { op: CollectiveKind::Bcast, comm: SPLIT, root: 1, bytes: 8, failed: false },
            ),
            (7000, 7000, Body::Finalize),
        ];
        write_events(&grappe_trace::file_for(dir, r), &plain_header(r, 4, "node-a"), &events).unwrap();
    }
}

fn stream(dir: &Path) -> CausalStream {
    let set = TraceSet::open(dir).unwrap();
    let time = GlobalTime::estimate(&set, &GlobalOptions::default()).unwrap();
    CausalStream::open(&set, &time).unwrap()
}

type Exporter = fn(
    CausalStream,
    &mut (dyn std::io::Write + Send),
    &mut dyn FnMut(u64),
) -> grappe_analysis::Result<grappe_analysis::export::ExportSummary>;

fn export(dir: &Path, export: Exporter) -> String {
    let mut out = Vec::new();
    export(stream(dir), &mut out, &mut |_| {}).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn each_half_of_a_split_completes_its_collectives_with_its_own_members() {
    let dir = grappe_testkit::scratch("split-profile");
    write_job(&dir);
    let p = profile(stream(&dir), 4, &mut |_| {}).unwrap();
    // Each waits for the last entry of its own half, not the other's.
    let waiting: Vec<u64> = (0..4).map(|r| p.rank(r).unwrap().waiting_ns).collect();
    assert_eq!(waiting, vec![2000, 1700, 0, 0], "{p}");
}

#[test]
fn picl_defines_one_subset_per_half_and_roots_are_world_ranks() {
    let dir = grappe_testkit::scratch("split-picl");
    write_job(&dir);
    let text = export(&dir, write_picl);
    let subsets: Vec<Vec<i64>> = text
        .lines()
        .filter(|l| l.starts_with("-202 "))
        .map(|l| l.split_whitespace().skip(7).map(|v| v.parse().unwrap()).collect())
        .collect();
    let mut defined: Vec<Vec<i64>> = subsets.iter().map(|s| s[1..].to_vec()).collect();
    defined.sort();
    assert_eq!(defined, vec![vec![0, 2], vec![1, 3]], "{text}");
    let subset_of = |r: u32| {
        let members: Vec<i64> = half(r).iter().map(|&m| m as i64).collect();
        subsets.iter().find(|s| s[1..] == members[..]).map(|s| s[0]).unwrap()
    };
    assert_ne!(subset_of(0), subset_of(1));
    // A broadcast begins with bytes, root (a world rank) and subset.
    for line in text.lines().filter(|l| l.starts_with("-3 -785 ")) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let rank: u32 = f[3].parse().unwrap();
        let data: Vec<i64> = f[7..].iter().map(|v| v.parse().unwrap()).collect();
        let root = half(rank)[1] as i64;
        assert_eq!(data, vec![8, root, subset_of(rank)], "rank {rank}:\n{text}");
    }
    assert_eq!(text.lines().filter(|l| l.starts_with("-3 -785 ")).count(), 4, "{text}");
}

#[test]
fn chrome_and_paje_keep_each_rank_s_own_half() {
    let dir = grappe_testkit::scratch("split-text");
    write_job(&dir);
    let chrome = export(&dir, write_chrome);
    let events: serde_json::Value = serde_json::from_str(&chrome).unwrap();
    let events = events.get("traceEvents").and_then(|e| e.as_array()).cloned().unwrap_or_default();
    for r in 0..4u64 {
        let created = events.iter().find(|e| e["tid"] == r && e["args"]["members"].is_array());
        let members =
            created.unwrap_or_else(|| panic!("no creation on rank {r}:\n{chrome}"))["args"]["members"].clone();
        assert_eq!(members, serde_json::json!(half(r as u32)), "rank {r}");
    }
    let paje = export(&dir, write_paje);
    assert!(paje.lines().filter(|l| l.contains("comm_create")).count() >= 4, "{paje}");
}
