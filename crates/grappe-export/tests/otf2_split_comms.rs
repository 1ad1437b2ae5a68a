//! A world split into two disjoint communicators sharing context id 2:
//! two OTF2 communicators, each rank's collective on its own, read back
//! by `otf2-print`.

mod otf2_common;

use grappe_testkit::synthetic::{plain_header, write_events};
use grappe_trace::{Body, CollectiveKind};
use otf2_common::*;

fn half(r: u32) -> Vec<u32> {
    if r % 2 == 0 { vec![0, 2] } else { vec![1, 3] }
}

#[test]
fn the_halves_of_a_split_are_two_communicators_and_each_rank_uses_its_own() {
    let dir = scratch("split");
    let traces = dir.join("traces");
    std::fs::create_dir_all(&traces).unwrap();
    for r in 0..4u32 {
        let events = vec![
            (100, 100, Body::Init),
            (200, 300, Body::CommCreate { comm: 2, parent: 0, members: half(r).into() }),
            (
                1000 + 100 * r as u64,
                2000,
                Body::Collective { op: CollectiveKind::Bcast, comm: 2, root: 1, bytes: 8, failed: false },
            ),
            (3000, 3000, Body::Finalize),
        ];
        write_events(&grappe_trace::file_for(&traces, r), &plain_header(r, 4, "node-a"), &events).unwrap();
    }
    let summary = export(&traces, &dir.join("out"), "split").unwrap();
    let defs = otf2_print(&["-G"], &summary.anchor);
    let comm_lines: Vec<&str> = defs.lines().filter(|l| l.starts_with("COMM ")).collect();
    for (name, members) in
        [("comm 2 (ranks 0, 2)", "2 Members: 0 (\"rank 0"), ("comm 2 (ranks 1, 3)", "2 Members: 1 (\"rank 1")]
    {
        let named = format!("Name: \"{name}\"");
        assert_eq!(comm_lines.iter().filter(|l| l.contains(&named)).count(), 1, "{defs}");
        let group = defs.lines().find(|l| l.starts_with("GROUP ") && l.contains(&named));
        assert!(group.is_some_and(|g| g.contains(members)), "{name}:\n{defs}");
    }
    for line in events(&summary.anchor).iter().filter(|l| l.kind == "MPI_COLLECTIVE_END") {
        let own = if line.location % 2 == 0 { "comm 2 (ranks 0, 2)" } else { "comm 2 (ranks 1, 3)" };
        assert!(line.attrs.contains(&format!("Communicator: \"{own}\"")), "{line:?}");
        // Root 1 of each half: world rank 2 or 3.
        let root = format!("Root: 1 (\"rank {}", 2 + line.location % 2);
        assert!(line.attrs.contains(&root), "{line:?}");
    }
}
