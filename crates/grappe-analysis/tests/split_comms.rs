//! A world split into two disjoint communicators that share context id 2
//! (as `split(rank % 2)` gives them): the profile keeps the halves apart
//! (`grappe-export`'s tests: the exports).

use std::path::Path;

use grappe_analysis::profile::profile;
use grappe_analysis::{CausalStream, GlobalOptions, GlobalTime, TraceSet};
use grappe_testkit::synthetic::write_split_job;

fn stream(dir: &Path) -> CausalStream {
    let set = TraceSet::open(dir).unwrap();
    let time = GlobalTime::estimate(&set, &GlobalOptions::default()).unwrap();
    CausalStream::open(&set, &time).unwrap()
}

#[test]
fn each_half_of_a_split_completes_its_collectives_with_its_own_members() {
    let dir = grappe_testkit::scratch("split-profile");
    write_split_job(&dir).unwrap();
    let p = profile(stream(&dir), 4, &mut |_| {}).unwrap();
    // Each waits for the last entry of its own half, not the other's.
    let waiting: Vec<u64> = (0..4).map(|r| p.rank(r).unwrap().waiting_ns).collect();
    assert_eq!(waiting, vec![2000, 1700, 0, 0], "{p}");
}
