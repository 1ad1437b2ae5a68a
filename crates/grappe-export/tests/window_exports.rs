//! `grappe trace export --from --to` of a merged file against the export
//! of the same interval of its per-rank files: the same bytes, in every
//! byte-stream format.

use std::path::Path;

use grappe_analysis::stream::Window;
use grappe_analysis::{CausalStream, GlobalOptions, GlobalTime, MergeLayout, Result, TraceSet, merge_to_file_with};
use grappe_export::{ExportSummary, write_chrome_with_sites, write_paje_with_sites, write_perfetto, write_picl};
use grappe_testkit::synthetic::{ITERATION_NS, SyntheticJob, write_job};
use proptest::prelude::*;

fn scratch(name: &str) -> grappe_testkit::Scratch {
    grappe_testkit::scratch(&format!("window-{name}"))
}

fn open(location: &Path) -> CausalStream {
    let set = TraceSet::open(location).unwrap();
    let time = GlobalTime::estimate(&set, &GlobalOptions::default()).unwrap();
    CausalStream::open(&set, &time).unwrap()
}

type Exporter = fn(CausalStream, &mut (dyn std::io::Write + Send), &mut dyn FnMut(u64)) -> Result<ExportSummary>;

/// The first line where `got` differs from `want`, both shown.
fn first_difference(got: &[u8], want: &[u8]) -> String {
    let (got, want) = (String::from_utf8_lossy(got), String::from_utf8_lossy(want));
    let mut lines = got.lines().zip(want.lines()).enumerate();
    match lines.find(|(_, (g, w))| g != w) {
        Some((i, (g, w))) => format!("line {}: {g:?}, not {w:?}", i + 1),
        None => format!("{} lines, not {}", got.lines().count(), want.lines().count()),
    }
}

/// The export of `window` of the trace at `location`.
fn export_window(location: &Path, window: Window, export: Exporter) -> Vec<u8> {
    let mut out = Vec::new();
    export(open(location).windowed(window), &mut out, &mut |_| {}).unwrap();
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// `export --from --to` of a merged file writes the same bytes as of
    /// its per-rank files, in every text format (OTF2: otf2_print.rs),
    /// wherever the interval is: before the first resume point,
    /// across one, after the last, past the run. Blocks of more than the
    /// reader's batch of 256 events leave the first one partly decoded
    /// when the window looks for its resume point: a reader that found
    /// none lost the rest of it, and messages were numbered from there.
    #[test]
    fn a_window_exports_the_same_bytes_from_the_merged_file(
        from in 0u64..64 * ITERATION_NS,
        length in 1u64..24 * ITERATION_NS,
        block in prop_oneof![Just(64usize), Just(300), Just(1000)],
    ) {
        let dir = scratch("export");
        let (ranks, merged) = (dir.join("ranks"), dir.join("merged.gtrace"));
        write_job(&ranks, &SyntheticJob::distorted(4, 60)).unwrap();
        let set = TraceSet::open(&ranks).unwrap();
        let time = GlobalTime::estimate(&set, &GlobalOptions::default()).unwrap();
        let layout = MergeLayout { block_events: block, resume_every: 1 };
        merge_to_file_with(&set, &time, &merged, layout, &mut |_| {}).unwrap();
        let window = Window { from, to: from + length };
        let formats: [(&str, Exporter); 4] = [
            ("chrome", write_chrome_with_sites),
            ("perfetto", write_perfetto),
            ("paje", write_paje_with_sites),
            ("picl", write_picl),
        ];
        for (format, export) in formats {
            let want = export_window(&ranks, window, export);
            let got = export_window(&merged, window, export);
            prop_assert!(got == want, "{} from the merged file differs: {}", format, first_difference(&got, &want));
        }
    }
}
