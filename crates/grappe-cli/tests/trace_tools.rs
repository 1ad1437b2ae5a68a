//! The trace tools end to end, the real binary on synthetic jobs: what
//! `export --sites` adds and which formats refuse it; the interval
//! `report --from/--to` details and the dates it refuses; the interval
//! `export --from/--to` writes, in every format.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use grappe_testkit::synthetic::{SyntheticJob, write_job};
use grappe_trace::EventKind;
use serde_json::Value;

const GRAPPE: &str = env!("CARGO_BIN_EXE_grappe");

fn scratch(name: &str) -> grappe_testkit::Scratch {
    grappe_testkit::scratch(&format!("cli-trace-{name}"))
}

/// `grappe trace TOOL ARGS...`.
fn trace(tool: &str, args: &[&str]) -> Output {
    Command::new(GRAPPE).args(["trace", tool]).args(args).output().expect("the grappe binary runs")
}

fn export(args: &[&str]) -> Output {
    trace("export", args)
}

fn report(args: &[&str]) -> Output {
    trace("report", args)
}

#[test]
fn sites_are_written_by_the_formats_that_take_them_and_refused_by_the_others() {
    let dir = scratch("sites");
    let traces = dir.join("traces");
    write_job(&traces, &SyntheticJob::new(2, 10)).unwrap();
    let traces = traces.to_str().unwrap();

    let paje = dir.join("job.paje");
    let out = export(&["-f", "paje", "--sites", traces, "-o", paje.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&paje).unwrap();
    assert!(text.contains("%EventDef PajePushState 22\n"), "no push-with-site definition");
    let sited = text.lines().filter(|l| l.starts_with("22 ")).count();
    assert!(sited > 0 && text.lines().filter(|l| l.starts_with("22 ")).all(|l| l.ends_with(":9\"")));

    for format in ["picl", "otf2", "perfetto"] {
        let out = export(&["-f", format, "--sites", traces, "-o", dir.join(format).to_str().unwrap()]);
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{format}: a usage error: {said}");
        assert!(said.contains(&format!("--sites is an option of --format chrome and paje, not of {format}")), "{said}");
        assert!(!dir.join(format).exists(), "{format}: nothing is written");
    }
}

#[test]
fn from_and_to_choose_the_diagram_s_interval_and_bad_dates_are_refused() {
    let dir = scratch("interval");
    let traces = dir.join("traces");
    // 400 iterations of 20 µs: an 8 ms run.
    write_job(&traces, &SyntheticJob::new(2, 400)).unwrap();
    let traces = traces.to_str().unwrap();
    let page = dir.join("report.html");
    let page_arg = page.to_str().unwrap();
    let refused = dir.join("refused.html");
    let refused = refused.to_str().unwrap();

    let out = report(&[traces, "-o", page_arg, "--from", "2ms", "--to", "3.5ms"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(said.contains("those of the interval asked for, 2.000 ms to 3.500 ms"), "{said}");
    assert!(said.contains("The whole run (8.000 ms) is summarised per rank"), "{said}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("\"interval\":[2000000,3500000],\"detail\":[[2000000,3500000]]"), "the page's interval");

    for (args, error) in [
        (["--from", "2 weeks"], "unknown unit \"weeks\""),
        (["--to", "soon"], "expected a time like 1.5s"),
        (["--from", "-1ms"], "cannot be negative"),
    ] {
        let out = report(&[&[traces, "-o", refused][..], &args[..]].concat());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: a usage error: {stderr}");
        assert!(stderr.contains(error) && stderr.contains(&format!("'{} <TIME>'", args[0])), "{args:?}: {stderr}");
    }
    let out = report(&[traces, "-o", refused, "--from", "3ms", "--to", "2ms"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--to must come after --from"));
    let out = report(&[traces, "-o", refused, "--to", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--to must come after the run's start (--from, 0 by default)")
    );
    assert!(!PathBuf::from(refused).exists(), "nothing is written when the dates are refused");
}

/// The trace-event objects of a Chrome export, and its `otherData`.
fn chrome(path: &Path) -> (Vec<Value>, Value) {
    let json: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    (json["traceEvents"].as_array().unwrap().clone(), json["otherData"].clone())
}

/// A slice's lane, start and length (µs), name.
fn slice(e: &Value) -> (u64, String, String, String) {
    let text = |v: &Value| v.as_f64().map(|f| format!("{f:.3}")).unwrap_or_default();
    (e["tid"].as_u64().unwrap(), text(&e["ts"]), text(&e["dur"]), e["name"].as_str().unwrap().to_owned())
}

#[test]
fn export_from_and_to_write_the_interval_in_every_format() {
    let dir = scratch("export-interval");
    let traces = dir.join("traces");
    // 400 iterations of 20 µs; the interval starts and ends inside one.
    write_job(&traces, &SyntheticJob::new(4, 400)).unwrap();
    let traces = traces.to_str().unwrap();
    let path = |name: &str| dir.join(name).to_str().unwrap().to_owned();
    let interval = ["--from", "2.005ms", "--to", "3.507ms"];

    let out = export(&[traces, "-f", "chrome", "-o", &path("whole.json")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = export(&[&[traces, "-f", "chrome", "-o", &path("part.json")][..], &interval].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("the interval 2.005 ms to 3.507 ms: "), "{said}");
    assert!(said.contains("receives have their send before the interval, and no arrow"), "{said}");

    let (whole, _) = chrome(&dir.join("whole.json"));
    let (part, other) = chrome(&dir.join("part.json"));
    let origin = other["time_origin_ns"].as_u64().unwrap();
    assert_eq!(other["window_from_ns"].as_u64(), Some(origin + 2_005_000));
    assert_eq!(other["window_to_ns"].as_u64(), Some(origin + 3_507_000));
    // The slices: the whole run's that overlap the interval, same dates.
    let overlaps = |e: &&Value| {
        let (ts, dur) = (e["ts"].as_f64().unwrap_or(0.0), e["dur"].as_f64().unwrap_or(0.0));
        e["ph"] == "X" && ts < 3_507.0 && ts + dur >= 2_005.0
    };
    let mut want: Vec<_> = whole.iter().filter(overlaps).map(slice).collect();
    let mut got: Vec<_> = part.iter().filter(|e| e["ph"] == "X").map(slice).collect();
    want.sort();
    got.sort();
    assert!(!got.is_empty());
    assert_eq!(got, want);
    // Regions nest on each lane, and those open at the start are there.
    let mut depth: BTreeMap<u64, i64> = BTreeMap::new();
    for e in part.iter().filter(|e| e["ph"] == "B" || e["ph"] == "E") {
        let d = depth.entry(e["tid"].as_u64().unwrap()).or_default();
        *d += if e["ph"] == "B" { 1 } else { -1 };
        assert!(*d >= 0, "a region left before it is entered: {e}");
    }
    assert!(depth.values().all(|&d| d == 0), "regions left open: {depth:?}");
    assert!(part.iter().any(|e| e["ph"] == "B" && e["ts"].as_f64().unwrap() < 2_005.0), "the regions open at --from");
    // Every arrow has both ends.
    let ids = |ph: &str| part.iter().filter(|e| e["ph"] == ph).map(|e| e["id"].as_u64().unwrap()).collect::<Vec<_>>();
    assert!(!ids("f").is_empty());
    assert_eq!(ids("s").len(), ids("f").len());
    assert!(ids("f").iter().all(|id| ids("s").contains(id)));

    // The time-ordered formats: pj_dump reads the Pajé file whole.
    for (format, file) in [("perfetto", "part.pftrace"), ("paje", "part.paje"), ("picl", "part.trf"), ("otf2", "part")]
    {
        let out = export(&[&[traces, "-f", format, "-o", &path(file)][..], &interval].concat());
        assert!(out.status.success(), "{format}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stdout).contains("the interval 2.005 ms to 3.507 ms: "), "{format}");
    }
    let dump = Command::new("pj_dump").arg(path("part.paje")).output().expect("pj_dump (Debian pajeng) runs");
    assert!(dump.status.success(), "pj_dump: {}", String::from_utf8_lossy(&dump.stderr));
    let links = String::from_utf8_lossy(&dump.stdout).lines().filter(|l| l.starts_with("Link")).count();
    assert_eq!(links, ids("f").len(), "Pajé draws the arrows Chrome draws");

    // An interval past the run: an empty file, and the command says why.
    let out = export(&[traces, "-f", "chrome", "-o", &path("past.json"), "--from", "1s", "--to", "2s"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("the run ends at 8.000 ms, before the interval"), "{said}");
    let (past, _) = chrome(&dir.join("past.json"));
    assert!(past.iter().all(|e| e["ph"] == "M"), "only the process's name: {past:?}");

    let out = export(&[traces, "-f", "chrome", "-o", &path("refused.json"), "--from", "3ms", "--to", "2ms"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--to must come after --from"));
    assert!(!dir.join("refused.json").exists(), "nothing is written when the dates are refused");
}

#[test]
fn info_gives_the_recording_costs_and_a_merged_file_s_resume_points() {
    let dir = scratch("info");
    let traces = dir.join("traces");
    // 291 208 events: one resume point in a merge (every 262 144).
    write_job(&traces, &SyntheticJob::new(4, 8000)).unwrap();
    let (traces, merged) = (traces.to_str().unwrap(), dir.join("job.gtrace"));
    let out = trace("info", &["--ranks", traces]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = String::from_utf8_lossy(&out.stdout);
    // The synthetic recorder calibrated every kind at 10 ns.
    let costs =
        said.lines().filter(|l| l.trim_start().starts_with("recording cost (α): 10 ns each runtime call, ")).count();
    assert_eq!(costs, 4, "one line per rank file: {said}");
    assert!(!said.contains("resume point"), "per-rank files have none: {said}");

    let out = trace("merge", &[traces, "-o", merged.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = trace("info", &["--ranks", merged.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("\n    1 resume point: `export --from` starts at the last one before the interval\n"),
        "{said}"
    );
    // The ranks' recorders and α, not the merge's block size and rank 0's α.
    assert!(
        said.contains(
            "\n    merged in blocks of 8192 events; recorded with flush full, buffer 1024 events (every rank), "
        ),
        "{said}"
    );
    assert!(said.contains("\n      rank 3: 10 → 13 ns each runtime call, "), "{said}");
    let json: Value = serde_json::from_slice(&trace("info", &["--json", merged.to_str().unwrap()]).stdout).unwrap();
    assert_eq!(json["files"][0]["resume_points"], 1);
    assert_eq!(json["files"][0]["alpha_ns"]["send"], 10);
    for rank in 0..4 {
        assert_eq!(json["ranks"][rank]["alpha_ns"]["send"], 10, "rank {rank}");
        assert_eq!(json["ranks"][rank]["alpha_after_ns"]["send"], 10 + rank, "rank {rank}");
    }
}

#[test]
fn a_reader_that_goes_away_ends_a_tool_quietly() {
    let dir = scratch("pipe");
    let traces = dir.join("traces");
    write_job(&traces, &SyntheticJob::new(2, 2000)).unwrap();
    for tool in ["info", "check", "profile"] {
        let mut child = Command::new(GRAPPE)
            .args(["trace", tool, traces.to_str().unwrap()])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Closed before the tool has read the trace, so its first write fails.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{tool}: {said}");
        assert!(!said.contains("panicked"), "{tool}: {said}");
    }
}

/// `grappe trace check TRACES` from a shell that first runs `limit`.
fn check_under(limit: &str, traces: &Path) -> Output {
    let script = format!("{limit} && exec \"$0\" trace check \"$1\"");
    Command::new("sh").args(["-c", &script, GRAPPE]).arg(traces).output().expect("sh runs")
}

/// The tools open every rank's file at once: under a soft limit of open
/// files below the ranks (1024 on many systems), they lift it to the hard
/// one; when the hard one is too low, the error says which limit to raise.
#[test]
fn more_rank_files_than_the_soft_limit_of_open_files_are_read() {
    let dir = scratch("open-files");
    let traces = dir.join("traces");
    write_job(&traces, &SyntheticJob::new(48, 3)).unwrap();

    let lifted = check_under("ulimit -Sn 32", &traces);
    assert!(lifted.status.success(), "{}", String::from_utf8_lossy(&lifted.stderr));
    assert!(String::from_utf8_lossy(&lifted.stdout).contains("consistent"), "{lifted:?}");

    let capped = check_under("ulimit -n 32", &traces);
    let stderr = String::from_utf8_lossy(&capped.stderr);
    assert_eq!(capped.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("Too many open files"), "{stderr}");
    assert!(stderr.contains("may open 32 files") && stderr.contains("ulimit -Hn"), "{stderr}");
}

/// `grappe trace merge TRACES -o MERGED`, which must succeed; `merged`.
fn merge_to(traces: &Path, merged: &Path) -> PathBuf {
    let out = trace("merge", &[traces.to_str().unwrap(), "-o", merged.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    merged.to_owned()
}

/// An output that is one of the trace's own files is refused, and the
/// file is left as it was: `merge x.gtrace -o x.gtrace` used to empty it.
#[test]
fn a_tool_refuses_to_write_over_the_trace_it_reads() {
    let dir = scratch("over-input");
    let traces = dir.join("traces");
    write_job(&traces, &SyntheticJob::new(2, 10)).unwrap();
    let merged = merge_to(&traces, &dir.join("merged.gtrace"));
    let rank_file = traces.join("rank-00001.gtrace");
    for (input, output, whose) in [(&merged, &merged, "the merged trace"), (&traces, &rank_file, "the trace of rank 1")]
    {
        let before = std::fs::read(output).unwrap();
        let (input, output) = (input.to_str().unwrap(), output.to_str().unwrap());
        for (tool, args) in [
            ("merge", vec![input, "-o", output]),
            ("export", vec!["-f", "chrome", input, "-o", output]),
            ("report", vec![input, "-o", output]),
        ] {
            let out = trace(tool, &args);
            let said = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{tool} {args:?}: {said}");
            assert!(said.contains(&format!("{output}: is {whose} being read")), "{tool}: {said}");
            assert_eq!(std::fs::read(output).unwrap(), before, "{tool} changed {output}");
        }
    }
}

/// `check` says what a trace lacks: a merged file cut short (which read as
/// an empty, consistent trace), and the events a recorder dropped when its
/// buffer was full under flush policy `end`.
#[test]
fn check_names_a_cut_merged_file_and_the_events_a_full_buffer_dropped() {
    use grappe_trace::{FlushPolicy, Identity, RawEvent, Recorder, RecorderConfig};
    let dir = scratch("check-incomplete");
    let traces = dir.join("traces");
    write_job(&traces, &SyntheticJob::new(2, 10)).unwrap();
    let merged = merge_to(&traces, &dir.join("merged.gtrace"));
    let bytes = std::fs::read(&merged).unwrap();
    std::fs::write(&merged, &bytes[..bytes.len() - 1]).unwrap();
    let out = trace("check", &[merged.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("  - the merged file: file cut at offset "), "{said}");

    let full = dir.join("full");
    let config = RecorderConfig { dir: full.clone(), policy: FlushPolicy::End, buffer_events: 16, extra_cost_ns: 0 };
    let who = Identity { rank: 0, world_size: 1, process_ranks: vec![0], job: "drops".into(), thread: None };
    let mut recorder = Recorder::create(&config, who, None).unwrap();
    for _ in 0..40 {
        let now = recorder.now();
        recorder.record(RawEvent { start: now, end: now, kind: EventKind::Init.id(), ..RawEvent::default() });
    }
    recorder.finish().unwrap();
    let out = trace("check", &[full.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("  - rank 0: 24 events dropped when the recorder's buffer was full (flush policy end)"),
        "{said}"
    );
    // The exports and the profile say their figures are partial too.
    let dropped = "partial trace: rank 0: 24 events dropped";
    for format in ["chrome", "otf2"] {
        let out = export(&["-f", format, full.to_str().unwrap(), "-o", dir.join(format).to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && stderr.contains(&format!("note: {dropped}")), "{format}: {stderr}");
    }
    let out = trace("profile", &[merged.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("@ note: partial trace: the merged file: file cut at offset "), "{said}");
}

/// A merge of a cut per-rank file says so, and so does its merged file
/// for good: `check` and `info` on it name the rank and where its file
/// was cut (the merged file used to read as complete and consistent).
#[test]
fn a_merged_file_made_from_a_cut_one_says_so_in_check_and_info() {
    let dir = scratch("merge-cut");
    let traces = dir.join("traces");
    write_job(&traces, &SyntheticJob::new(2, 2000)).unwrap();
    let rank_file = traces.join("rank-00001.gtrace");
    let bytes = std::fs::read(&rank_file).unwrap();
    std::fs::write(&rank_file, &bytes[..bytes.len() / 2]).unwrap();
    let merged = dir.join("merged.gtrace");
    let out = trace("merge", &[traces.to_str().unwrap(), "-o", merged.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let cut = "rank 1's file, cut at offset ";
    assert!(said.contains(&format!("(made from {cut}")), "{said}");
    let out = trace("check", &[merged.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains(&format!("  - the merged file was made from {cut}")), "{said}");
    assert!(said.contains("its events stop there"), "{said}");
    let out = trace("info", &[merged.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!("\n  files:    one merged file, complete, made from incomplete files: {cut}")),
        "{said}"
    );
    assert!(said.contains("\n  dropped:  none; unknown for ranks 1 (no footer)\n"), "{said}");
    let out = trace("info", &["--ranks", merged.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains(&format!("complete, made from incomplete files: {cut}")), "{said}");
    assert!(said.contains(", 0 (by the complete rank files; unknown for the others) dropped, "), "{said}");
    // Merged again, the file keeps saying it.
    let again = dir.join("again.gtrace");
    assert!(trace("merge", &[merged.to_str().unwrap(), "-o", again.to_str().unwrap()]).status.success());
    let out = trace("check", &[again.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stdout).contains(cut), "{}", String::from_utf8_lossy(&out.stdout));
}

/// Each block's offset and payload length (blocks after the header:
/// magic, kind, length at +8..12, 16-byte header).
fn blocks_of(bytes: &[u8]) -> Vec<(usize, usize)> {
    let le = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    let (mut at, mut blocks) = (12 + le(8), Vec::new());
    while at < bytes.len() {
        blocks.push((at, le(at + 8)));
        at += 16 + le(at + 8);
    }
    blocks
}

/// A block length corrupted to run past the end of the file, whole
/// blocks after it, in a rank's file or a merged one: every tool fails
/// naming the file, the length's offset and where the next block is,
/// where they read the file as cut there and left out the rest.
#[test]
fn a_corrupt_block_length_is_an_error_not_a_cut() {
    let dir = scratch("corrupt-length");
    let traces = dir.join("traces");
    write_job(&traces, &SyntheticJob::new(2, 2000)).unwrap();
    let merged = merge_to(&traces, &dir.join("merged.gtrace"));
    let out = |name: &str| dir.join(name).to_str().unwrap().to_owned();
    for (file, input) in [(traces.join("rank-00001.gtrace"), &traces), (merged.clone(), &merged)] {
        let bytes = std::fs::read(&file).unwrap();
        let (start, len) = blocks_of(&bytes)[1];
        let mut bad = bytes.clone();
        bad[start + 8..start + 12].copy_from_slice(&(bytes.len() as u32).to_le_bytes());
        std::fs::write(&file, &bad).unwrap();
        let input = input.to_str().unwrap();
        let expected = format!(
            "{}: corrupt block at offset {}: expected a block length of {len} (the payload's checksum matches \
             its first {len} bytes, and a complete block follows them at offset {}), found {}: ",
            file.display(),
            start + 8,
            start + 16 + len,
            bytes.len()
        );
        for (tool, args) in [
            ("info", vec![input]),
            ("check", vec![input]),
            ("merge", vec![input, "-o", &out("again.gtrace")]),
            ("export", vec!["-f", "chrome", input, "-o", &out("out.json")]),
            ("export", vec!["-f", "chrome", "--from", "20ms", input, "-o", &out("out.json")]),
        ] {
            let said = trace(tool, &args);
            let stderr = String::from_utf8_lossy(&said.stderr);
            assert_eq!(said.status.code(), Some(2), "{tool} {args:?}: {stderr}");
            assert!(stderr.contains(&expected), "{tool} {args:?}: {stderr}");
            let stdout = String::from_utf8_lossy(&said.stdout);
            assert!(!stdout.contains("cut at offset"), "{tool} {args:?}: {stdout}");
        }
        std::fs::write(&file, &bytes).unwrap();
    }
}

/// Outputs that cannot be written are named: a full device, and a path
/// through a file where a directory should be.
#[test]
fn an_output_that_cannot_be_written_is_named() {
    let dir = scratch("unwritable");
    let traces = dir.join("traces");
    write_job(&traces, &SyntheticJob::new(2, 10)).unwrap();
    let traces = traces.to_str().unwrap();
    let out = export(&["-f", "chrome", traces, "-o", "/dev/full"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("cannot write /dev/full"), "{said}");
    let file = dir.join("a-file");
    std::fs::write(&file, "").unwrap();
    let under = file.join("job");
    let out = export(&["-f", "otf2", traces, "-o", under.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{said}");
    assert!(said.contains(&format!("{}: {} is a file, not a directory", under.display(), file.display())), "{said}");
}

/// `trace clock` on a merged file gives what it gave on the rank files it
/// was made from: each rank, and the statistics of the ranks the merge
/// estimated (it used to print neither).
#[test]
fn clock_on_a_merged_file_gives_the_statistics_the_merge_used() {
    let dir = scratch("clock-merged");
    let traces = dir.join("traces");
    write_job(&traces, &SyntheticJob::distorted(4, 300)).unwrap();
    let merged = merge_to(&traces, &dir.join("merged.gtrace"));
    let said = |input: &Path| {
        let out = trace("clock", &["--ranks", input.to_str().unwrap()]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let (direct, from_merged) = (said(&traces), said(&merged));
    assert!(
        from_merged.starts_with("a merged trace: its dates were made global by the merge (robust "),
        "{from_merged}"
    );
    assert!(from_merged.contains("\n  rank     2: global dates; at the merge: estimated (SBA)\n"), "{from_merged}");
    let statistics = |text: &str| text[text.find("Clock statistics").expect("a statistics table")..].to_owned();
    assert_eq!(statistics(&from_merged), statistics(&direct));
    assert_eq!(statistics(&direct).lines().filter(|l| l.starts_with("rank ")).count(), 4, "{direct}");
}

/// `--repair-tachyons` is taken by every tool that reads global time:
/// `check` and `merge` say what it moved, the merged file's dates keep
/// the repair and say so, and `--min-latency-ns` alone is refused.
#[test]
fn the_tachyon_repair_is_reported_and_kept_by_the_merge() {
    let dir = scratch("repair");
    let traces = dir.join("traces");
    write_job(&traces, &SyntheticJob::distorted(4, 50)).unwrap();
    let traces = traces.to_str().unwrap();
    // A minimum latency above the job's (about 100 ns) moves receives.
    let repair = ["--repair-tachyons", "--min-latency-ns", "20000"];
    let out = trace("check", &[&repair[..], &[traces]].concat());
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(
        said.contains(" receives ended later, after their send (controlled logical clock; largest move "),
        "{said}"
    );
    assert!(said.contains("smallest receive-end minus send-start: 20000 ns"), "{said}");

    let merged = dir.join("repaired.gtrace");
    let out = trace("merge", &[&repair[..], &[traces, "-o", merged.to_str().unwrap()]].concat());
    assert!(String::from_utf8_lossy(&out.stdout).contains("(controlled logical clock;"), "{out:?}");
    let info = String::from_utf8_lossy(&trace("info", &[merged.to_str().unwrap()]).stdout).into_owned();
    assert!(info.contains("tachyons repaired (controlled logical clock, minimum latency 20000 ns)"), "{info}");
    let out = trace("check", &[merged.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("smallest receive-end minus send-start: 20000 ns"));
    // The merge's own settings, repair included, are no settings asked anew.
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!said.contains("change only the clock statistics"), "{said}");

    let out = trace("check", &["--min-latency-ns", "5", traces]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--repair-tachyons"), "{out:?}");
}

/// ParaGraph numbers the user blocks of a PICL trace: the export says
/// which number is which.
#[test]
fn the_picl_export_names_its_user_blocks() {
    let dir = scratch("picl-legend");
    let traces = dir.join("traces");
    write_job(&traces, &SyntheticJob::new(2, 10)).unwrap();
    let out = export(&["-f", "picl", traces.to_str().unwrap(), "-o", dir.join("job.trf").to_str().unwrap()]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let legend = said.lines().find_map(|l| l.strip_prefix("  PICL user blocks: ")).unwrap_or_else(|| panic!("{said}"));
    assert_eq!(legend, "1 init, 2 region step, 3 finalize");
}

/// `grappe trace TOOL ARGS...`, killed and failed if it has not ended
/// after a minute (a tool that waits on a FIFO never ends).
fn trace_within_a_minute(tool: &str, args: &[&str]) -> Output {
    let mut child = Command::new(GRAPPE)
        .args(["trace", tool])
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the grappe binary runs");
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > std::time::Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("`grappe trace {tool} {args:?}` still runs after a minute");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// A FIFO named like a rank's file, in a trace directory or given as the
/// trace, is an error naming it: the tools used to wait for a writer.
#[test]
fn a_fifo_named_like_a_trace_is_refused_not_waited_on() {
    let dir = scratch("fifo");
    let traces = dir.join("traces");
    write_job(&traces, &SyntheticJob::new(2, 10)).unwrap();
    let fifo = traces.join("rank-00001.gtrace");
    std::fs::remove_file(&fifo).unwrap();
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo runs");
    assert!(made.success());
    let out = dir.join("out.json");
    let (traces, fifo_path, out) = (traces.to_str().unwrap(), fifo.to_str().unwrap(), out.to_str().unwrap());
    for (tool, args) in [
        ("info", vec![traces]),
        ("info", vec![fifo_path]),
        ("check", vec![traces]),
        ("export", vec!["-f", "chrome", traces, "-o", out]),
    ] {
        let said = trace_within_a_minute(tool, &args);
        let stderr = String::from_utf8_lossy(&said.stderr);
        assert_eq!(said.status.code(), Some(2), "{tool} {args:?}: {stderr}");
        assert!(stderr.contains(&format!("{fifo_path}: a FIFO (named pipe), not a regular file")), "{tool}: {stderr}");
    }
}

/// Progress is drawn on a terminal only: with stderr a pipe, the tools
/// write nothing there on a trace with nothing to note.
#[test]
fn no_progress_goes_into_a_pipe() {
    let dir = scratch("no-progress");
    let traces = dir.join("traces");
    write_job(&traces, &SyntheticJob::new(2, 3000)).unwrap();
    let out = |name: &str| dir.join(name).to_str().unwrap().to_owned();
    let traces = traces.to_str().unwrap();
    for (tool, args) in [
        ("info", vec![traces]),
        ("check", vec![traces]),
        ("profile", vec![traces]),
        ("merge", vec![traces, "-o", &out("merged.gtrace")]),
        ("export", vec!["-f", "paje", traces, "-o", &out("job.paje")]),
        ("report", vec![traces, "-o", &out("report.html")]),
    ] {
        let said = trace(tool, &args);
        assert!(said.status.success(), "{tool}: {}", String::from_utf8_lossy(&said.stderr));
        assert_eq!(String::from_utf8_lossy(&said.stderr), "", "{tool}");
        assert!(!said.stdout.contains(&b'\r') && !said.stdout.contains(&0x1b), "{tool}: {:?}", said.stdout);
    }
}

/// An output path that cannot be created is refused before the trace is
/// read, every tool saying "cannot create PATH: why": a missing
/// directory, a file where a directory should be, a directory where the
/// file should be, a directory nobody may write in (/sys, even for root).
#[test]
fn an_output_that_cannot_be_created_is_named_with_the_cause() {
    let dir = scratch("cannot-create");
    let traces = dir.join("traces");
    write_job(&traces, &SyntheticJob::new(2, 10)).unwrap();
    let file = dir.join("a-file");
    std::fs::write(&file, "").unwrap();
    let traces = traces.to_str().unwrap();
    let missing = dir.join("no/such/dir/out");
    let through_file = file.join("out");
    let cases = [
        (missing.clone(), format!("cannot create {}: {} does not exist", missing.display(), dir.join("no").display())),
        (
            through_file.clone(),
            format!("cannot create {}: {} is a file, not a directory", through_file.display(), file.display()),
        ),
        (dir.to_path_buf(), format!("cannot create {}: it is a directory", dir.display())),
        (PathBuf::from("/sys/grappe-out"), "cannot create /sys/grappe-out: ".to_owned()),
    ];
    for (output, expected) in cases {
        let output_text = output.to_str().unwrap();
        for (tool, args) in [
            ("merge", vec![traces, "-o", output_text]),
            ("report", vec![traces, "-o", output_text]),
            ("export", vec!["-f", "chrome", traces, "-o", output_text]),
            ("export", vec!["-f", "paje", traces, "-o", output_text]),
        ] {
            let said = trace(tool, &args);
            let stderr = String::from_utf8_lossy(&said.stderr);
            assert_eq!(said.status.code(), Some(2), "{tool} {args:?}: {stderr}");
            assert!(stderr.contains(&expected), "{tool} {args:?}: {stderr}");
        }
    }
}

/// An OTF2 archive that cannot be created names its path and why, not
/// the OTF2 call that failed, and the OTF2 library prints nothing of its
/// own.
#[test]
fn an_otf2_archive_that_cannot_be_created_is_named_with_the_cause() {
    let dir = scratch("otf2-cannot-create");
    let traces = dir.join("traces");
    write_job(&traces, &SyntheticJob::new(2, 10)).unwrap();
    for (output, expected) in [
        ("/sys/grappe-job", "cannot create /sys/grappe-job: "),
        ("/sys/grappe-dir/job", "cannot create /sys/grappe-dir: "),
    ] {
        let said = export(&["-f", "otf2", traces.to_str().unwrap(), "-o", output]);
        let stderr = String::from_utf8_lossy(&said.stderr);
        assert_eq!(said.status.code(), Some(2), "{output}: {stderr}");
        assert!(stderr.contains(expected), "{output}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "one line, no OTF2 message: {stderr}");
        assert!(!stderr.contains("OTF2_"), "{output}: {stderr}");
    }
}

/// `info` gives a summary whatever the ranks, its last line naming the
/// flag for the details; --ranks gives each file's details, --json
/// everything.
#[test]
fn info_summarizes_and_gives_each_rank_s_details_on_request() {
    let dir = scratch("info-summary");
    let traces = dir.join("traces");
    write_job(&traces, &SyntheticJob::new(48, 10)).unwrap();
    let traces = traces.to_str().unwrap();
    let out = trace("info", &[traces]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = said.lines().collect();
    assert!(lines.len() <= 10, "a summary: {said}");
    assert!(lines[0].starts_with("per-rank traces of job synthetic: 48 ranks, "), "{said}");
    for expected in [
        "  files:    48 complete",
        "  hosts:    synthetic (every rank)",
        "  clocks:   monotonic_raw (1.000 GHz), local dates (every rank)",
        "  dropped:  none",
        // The synthetic recorder: 10 ns before the run, 10 + rank after.
        "  α:        recording cost 10 ns an event, over the ranks and event kinds; 10-57 ns after the run \
         (moved during the run on ranks 4-47)",
    ] {
        assert!(lines.contains(&expected), "no line {expected:?} in {said}");
    }
    assert_eq!(
        lines.last().unwrap(),
        &format!(
            "each file's and rank's details (hosts, threads, buffers, α per event kind): grappe trace info --ranks {traces}"
        )
    );
    let out = trace("info", &["--ranks", traces]);
    let details = String::from_utf8_lossy(&out.stdout);
    let files = details.lines().filter(|l| l.starts_with("rank ") && l.contains(": ")).count();
    assert_eq!(files, 48, "{details}");
    let json: Value = serde_json::from_slice(&trace("info", &["--json", traces]).stdout).unwrap();
    assert_eq!(json["ranks"].as_array().unwrap().len(), 48);
    assert_eq!(json["files"].as_array().unwrap().len(), 48);
}

/// `clock` names the ranks put on the reference clock alike together
/// and gives the statistics of the least sure ranks, its last line naming
/// the flag for every rank; --ranks gives every rank's line and row.
#[test]
fn clock_summarizes_and_gives_every_rank_on_request() {
    let dir = scratch("clock-summary");
    let traces = dir.join("traces");
    write_job(&traces, &SyntheticJob::distorted(12, 20)).unwrap();
    let traces = traces.to_str().unwrap();
    let out = trace("clock", &[traces]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = String::from_utf8_lossy(&out.stdout);
    let rows = |text: &str| text.lines().filter(|l| l.starts_with("rank ")).count();
    assert!(said.contains("\n  rank 0: reference clock\n  ranks 1-11: estimated (SBA)\n"), "{said}");
    assert_eq!(rows(&said), 1 + 5, "the reference's row and the 5 least sure ranks': {said}");
    assert!(
        said.contains("(the 5 of 11 estimated ranks whose offset is least sure, widest interval first; no warnings)"),
        "{said}"
    );
    assert_eq!(
        said.lines().last().unwrap(),
        format!("every rank's line and statistics: grappe trace clock --ranks {traces}")
    );
    let out = trace("clock", &["--ranks", traces]);
    let every = String::from_utf8_lossy(&out.stdout);
    assert_eq!(every.lines().filter(|l| l.starts_with("  rank ")).count(), 12, "{every}");
    assert_eq!(rows(&every), 1 + 11, "{every}");
    assert!(!every.contains("--ranks"), "{every}");
}

/// `clock` reports how far each rank's dates can be trusted over the run,
/// in text and JSON, and exits 0 when every rank is put on rank 0's clock;
/// a rank that could not be (here: rank 0 took no clock samples) makes it
/// say which and exit 1, as its dates stay on its own clock.
#[test]
fn clock_gives_each_rank_s_trust_and_fails_when_a_rank_stays_uncorrected() {
    let dir = scratch("clock-trust");
    let traces = dir.join("traces");
    write_job(&traces, &SyntheticJob::distorted(3, 20)).unwrap();
    let traces = traces.to_str().unwrap();
    let out = trace("clock", &[traces]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("Dating trust: half-width of the 95% interval"), "{said}");
    let trust_rows: Vec<&str> = said.lines().filter(|l| l.starts_with("    rank ")).collect();
    assert_eq!(trust_rows.len(), 2, "{said}");
    for row in trust_rows {
        let numbers: Vec<f64> = row.split_whitespace().skip(2).take(3).map(|n| n.parse().unwrap()).collect();
        assert!(numbers.iter().all(|&us| us > 0.0 && us < 1_000.0), "{row}");
    }
    let out = trace("clock", &["--json", traces]);
    assert_eq!(out.status.code(), Some(0));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let trust = &json["report"]["trust"];
    assert_eq!(trust.as_array().map(Vec::len), Some(2), "{json}");
    assert!(trust[0]["worst_ns"].as_f64().unwrap() >= trust[0]["at_start_ns"].as_f64().unwrap());

    let unsampled = dir.join("unsampled");
    let mut job = SyntheticJob::distorted(3, 20);
    job.sample_points = 0;
    write_job(&unsampled, &job).unwrap();
    let out = trace("clock", &[unsampled.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("ranks 1-2 left on local time"), "{err}");
    assert!(err.contains("its dates are UNCORRECTED"), "{err}");
}

/// `check` with SB (dates extrapolated from the samples before the run)
/// warns of the ranks whose predicted dating error exceeds the smallest
/// message latency of the run; with SBA on the same trace it does not.
#[test]
fn check_warns_when_the_predicted_dating_error_exceeds_the_smallest_latency() {
    let dir = scratch("check-predicted");
    let traces = dir.join("traces");
    let mut job = SyntheticJob::distorted(4, 20_000);
    job.sample_points = 10;
    write_job(&traces, &job).unwrap();
    let traces = traces.to_str().unwrap();
    let out = trace("check", &["--strategy", "sb", traces]);
    let err = String::from_utf8_lossy(&out.stderr);
    for rank in 1..4 {
        let said = format!("grappe trace check: warning: rank {rank}: predicted dating error ");
        assert!(err.contains(&said), "{err}");
    }
    assert!(err.contains("exceeds the smallest message latency of the run"), "{err}");
    let out = trace("check", &[traces]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("predicted dating error"), "{err}");
}
