//! A world split into two disjoint communicators that share context id 2
//! (as `split(rank % 2)` gives them): the exports keep the halves apart.

use std::path::Path;

use grappe_analysis::{CausalStream, GlobalOptions, GlobalTime, TraceSet};
use grappe_export::{write_chrome, write_paje, write_picl};
use grappe_testkit::synthetic::{split_half as half, write_split_job};

fn stream(dir: &Path) -> CausalStream {
    let set = TraceSet::open(dir).unwrap();
    let time = GlobalTime::estimate(&set, &GlobalOptions::default()).unwrap();
    CausalStream::open(&set, &time).unwrap()
}

type Exporter = fn(
    CausalStream,
    &mut (dyn std::io::Write + Send),
    &mut dyn FnMut(u64),
) -> grappe_analysis::Result<grappe_export::ExportSummary>;

fn export(dir: &Path, export: Exporter) -> String {
    let mut out = Vec::new();
    export(stream(dir), &mut out, &mut |_| {}).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn picl_defines_one_subset_per_half_and_roots_are_world_ranks() {
    let dir = grappe_testkit::scratch("split-picl");
    write_split_job(&dir).unwrap();
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
    write_split_job(&dir).unwrap();
    let chrome = export(&dir, write_chrome);
    let events: serde_json::Value = serde_json::from_str(&chrome).unwrap();
    let events = events.get("traceEvents").and_then(|e| e.as_array()).cloned().unwrap_or_default();
    for r in 0..4u64 {
        let created = events.iter().find(|e| e["tid"] == r + 1 && e["args"]["members"].is_array());
        let members =
            created.unwrap_or_else(|| panic!("no creation on rank {r}:\n{chrome}"))["args"]["members"].clone();
        assert_eq!(members, serde_json::json!(half(r as u32)), "rank {r}");
    }
    let paje = export(&dir, write_paje);
    assert!(paje.lines().filter(|l| l.contains("comm_create")).count() >= 4, "{paje}");
}
