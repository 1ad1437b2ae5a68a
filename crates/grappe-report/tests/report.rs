//! The HTML report in a real browser: headless Chromium loads it, the
//! dumped DOM must say it rendered, the console must stay silent, and a
//! screenshot must show the diagram's colours. Chromium is required (run
//! scripts/install-deps); every run is bounded by `timeout`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use grappe_analysis::{GlobalOptions, GlobalTime, TraceSet, merge_to_file};
use grappe_report::{ReportOptions, ReportSummary, Window, write_report};
use grappe_testkit::synthetic::{
    SyntheticClock, SyntheticJob, plain_header, sendrecv_exchange, write_events, write_job,
};
use grappe_trace::{ANY, Body, CollectiveKind};
use serde_json::json;

/// Seconds a Chromium run may take before it is killed.
const CHROMIUM_SECONDS: u32 = 45;
/// Colours of the diagram (src/diagram.js).
const SEND: [u8; 3] = [0x1f, 0x6f, 0xd1];
const RECV: [u8; 3] = [0xe8, 0x82, 0x0c];
const COLLECTIVE: [u8; 3] = [0xc2, 0x40, 0x9f];
const SENDRECV: [u8; 3] = [0x14, 0xa0, 0xa0];
const RUNTIME: [u8; 3] = [0xc9, 0xb4, 0x58];
const FAILED: [u8; 3] = [0x00, 0x00, 0x00];

fn scratch(name: &str) -> grappe_testkit::Scratch {
    grappe_testkit::scratch(&format!("report-{name}"))
}

/// Writes a synthetic job in `dir/trace` and opens it on global time.
fn job_on_global_time(dir: &Path, job: &SyntheticJob) -> (TraceSet, GlobalTime) {
    let traces = dir.join("trace");
    write_job(&traces, job).unwrap();
    let set = TraceSet::open(&traces).unwrap();
    let time = GlobalTime::estimate(&set, &GlobalOptions::default()).unwrap();
    (set, time)
}

/// Writes a synthetic job and its report in `dir`.
fn report_of(dir: &Path, job: &SyntheticJob, options: &ReportOptions) -> (PathBuf, ReportSummary) {
    let (set, time) = job_on_global_time(dir, job);
    let out = dir.join("report.html");
    let mut read = 0;
    let summary = write_report(&set, &time, &out, options, &mut |n| read = n).unwrap();
    assert_eq!(read, 2 * job.events(), "two passes");
    (out, summary)
}

/// What a Chromium run printed.
struct Run {
    stdout: String,
    stderr: String,
}

impl Run {
    /// Console messages of the page (Chromium logs them as
    /// `[pid:tid:date:INFO:CONSOLE:line] "message", source: url (line)`;
    /// a report logs nothing, so any is an error).
    fn console(&self) -> Vec<&str> {
        self.stderr.lines().filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught")).collect()
    }
}

/// Runs headless Chromium on `page` with `args`, under `timeout`.
fn chromium(dir: &Path, page: &str, args: &[&str]) -> Run {
    let version = Command::new("timeout").args(["20", "chromium", "--version"]).stdin(Stdio::null()).output();
    match version.map(|o| o.status.code()) {
        Ok(Some(0)) => {}
        Ok(Some(127)) => panic!("chromium is not installed: it is required by this test; run scripts/install-deps"),
        Ok(code) => panic!("`chromium --version` failed ({code:?}): run scripts/install-deps"),
        Err(e) => panic!("cannot run timeout(1) ({e}): coreutils are required"),
    }
    let profile = tempdir(dir, "chromium-profile");
    let output = Command::new("timeout")
        .args(["--kill-after=5", &CHROMIUM_SECONDS.to_string(), "chromium"])
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        .args(["--disable-dev-shm-usage", "--no-first-run", "--disable-extensions", "--hide-scrollbars"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(["--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000"])
        .args(args)
        .arg(page)
        .stdin(Stdio::null())
        .output()
        .expect("cannot run timeout(1)");
    let _ = std::fs::remove_dir_all(&profile);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_ne!(output.status.code(), Some(124), "chromium did not finish in {CHROMIUM_SECONDS} s; stderr:\n{stderr}");
    assert!(output.status.success(), "chromium failed ({}); stderr:\n{stderr}", output.status);
    Run { stdout: String::from_utf8_lossy(&output.stdout).into_owned(), stderr }
}

fn tempdir(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::create_dir_all(&path).unwrap();
    path
}

fn url(path: &Path) -> String {
    format!("file://{}", path.display())
}

/// Loads the page (`#selftest`: it drives its own controls, see
/// src/selftest.js), returns the DOM after its scripts ran; fails on a
/// console message or a missing `data-rendered="ok"`/`data-selftest="ok"`.
fn rendered_dom(dir: &Path, page: &Path) -> String {
    let run = chromium(dir, &format!("{}#selftest", url(page)), &["--dump-dom"]);
    assert!(run.console().is_empty(), "console messages:\n{}", run.console().join("\n"));
    let body = run.stdout.find("<body").map(|i| &run.stdout[i..]).unwrap_or("");
    let tag = &body[..body.find('>').unwrap_or(body.len())];
    assert!(!tag.contains("data-error"), "the page reported an error: {tag}");
    assert!(tag.contains("data-rendered=\"ok\""), "the page did not say it rendered: {tag}");
    assert!(tag.contains("data-selftest=\"ok\""), "zoom, pan, tooltips or reset failed: {tag}");
    run.stdout
}

/// Pixels of `png` within 10 of `colour` on every channel.
fn pixels_near(png: &Path, colour: [u8; 3]) -> usize {
    let mut decoder = png::Decoder::new(std::fs::File::open(png).unwrap());
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    assert!(channels >= 3, "a colour screenshot expected, got {:?}", info.color_type);
    buf[..info.buffer_size()]
        .chunks_exact(channels)
        .filter(|p| p.iter().zip(colour).all(|(&a, b)| a.abs_diff(b) <= 10))
        .count()
}

fn assert_self_contained(html: &str) {
    for external in ["http://", "https://", "<link", " src=", "@import", "url("] {
        assert!(!html.contains(external), "the report refers to something outside ({external:?})");
    }
}

#[test]
fn a_report_renders_in_chromium_without_console_errors_and_shows_every_section() {
    let dir = scratch("render");
    let job = SyntheticJob::new(4, 300);
    let (page, summary) = report_of(&dir, &job, &ReportOptions::default());
    // Calls (init and finalize among them) and regions: all events but
    // the counters.
    let regions = 4 * 300;
    assert_eq!(summary.selection.intervals, job.events() - 4 * 300 - regions);
    assert_eq!(summary.selection.kept, summary.selection.intervals);
    assert_eq!((summary.selection.messages, summary.selection.arrows), (job.messages(), job.messages()));
    assert_eq!(summary.detail_windows, [summary.run.map(|(a, b)| (a, b + 1)).unwrap()], "one window: the whole run");
    assert!(summary.check.problems().is_empty());
    let html = std::fs::read_to_string(&page).unwrap();
    assert_self_contained(&html);
    assert!(html.contains("<script type=\"application/json\" id=\"report-data\">"));

    let dom = rendered_dom(&dir, &page);
    for text in [
        "4 (4 traced)",
        "synthetic (ranks 0-3)",
        "Every call and region (",
        "is drawn one by one when you zoom in",
        "is summarised per rank",
        "Time per rank",
        "Calls by type",
        "allreduce",
        "Call sites",
        "innermost enclosing user region",
        "step",
        "synthetic.rs:1",
        "Message sizes",
        "1024–2047",
        "User regions by inclusive time",
        "Global time",
        "shares the reference",
        "Consistency check",
        "Consistent: no tachyon",
    ] {
        assert!(dom.contains(text), "{text:?} is not on the rendered page");
    }
}

#[test]
fn a_screenshot_shows_the_diagram_in_the_call_colours() {
    let dir = scratch("screenshot");
    let (page, _) = report_of(&dir, &SyntheticJob::new(4, 300), &ReportOptions::default());
    let png = dir.join("report.png");
    let shot = format!("--screenshot={}", png.display());
    let run = chromium(&dir, &url(&page), &[&shot, "--window-size=1400,1000"]);
    assert!(run.console().is_empty(), "console messages:\n{}", run.console().join("\n"));
    // The legend has a 14x10 swatch of each colour; the diagram's four
    // lanes of 300 iterations have many more pixels of them.
    for (name, colour) in [("send", SEND), ("recv", RECV), ("collective", COLLECTIVE)] {
        let n = pixels_near(&png, colour);
        assert!(n > 2_000, "{n} pixels of the {name} colour in {}", png.display());
    }
    // Zoomed on the first iteration (address #view=START,END, ns), every
    // call is wide: sends and receives fill whole bars.
    let zoomed = dir.join("zoomed.png");
    let shot = format!("--screenshot={}", zoomed.display());
    chromium(&dir, &format!("{}#view=0,20000", url(&page)), &[&shot, "--window-size=1400,1000"]);
    assert!(pixels_near(&zoomed, SEND) > 3_000, "{}", zoomed.display());
    assert!(pixels_near(&zoomed, RECV) > 5_000, "{}", zoomed.display());
}

/// A trace bigger than the page's bound: the page keeps within it, the
/// calls drawn one by one are those of windows spread over the whole run,
/// and the page says so.
#[test]
fn a_trace_bigger_than_the_page_s_bound_keeps_within_it_detailed_across_the_whole_run() {
    let dir = scratch("big");
    // Four hosts whose clocks are off by up to 3 ms and 80 ppm.
    let mut job = SyntheticJob::new(4, 3_000);
    job.one_host = false;
    job.clocks = [(0, 0.0), (3_000_000, 80.0), (-1_200_000, -35.0), (450_000, 12.5)]
        .map(|(offset_ns, drift_ppm)| SyntheticClock { offset_ns, drift_ppm })
        .to_vec();
    let max_bytes = 1_000_000;
    let options = ReportOptions { max_bytes, ..ReportOptions::default() };
    let (page, summary) = report_of(&dir, &job, &options);
    assert!(summary.bytes <= max_bytes, "{} bytes for at most {max_bytes}", summary.bytes);
    assert_eq!(std::fs::metadata(&page).unwrap().len(), summary.bytes);
    // Most of the bound is used.
    assert!(summary.bytes > max_bytes * 3 / 4, "{} bytes of {max_bytes}", summary.bytes);
    let s = summary.selection;
    assert!(s.intervals > 80_000 && s.kept > 5_000 && s.kept < s.intervals / 2, "{s:?}");
    assert!(s.arrows > 1_000 && s.arrows < s.messages, "{s:?}");
    // Windows from the start of the run to its end.
    let (first, last) = summary.run.unwrap();
    let windows = &summary.detail_windows;
    assert!(windows.len() >= 200, "{} windows", windows.len());
    assert_eq!(windows[0].0, first);
    assert!(windows.last().unwrap().0 > last - (last - first) / 100, "{:?} in {first}..{last}", windows.last());
    // The summary goes down to bins finer than an iteration (20 µs).
    let finest = summary.summary_levels.last().unwrap().0;
    assert!(finest < 20_000, "{:?}", summary.summary_levels);
    assert_eq!(summary.embedded.len(), 2, "{:?}", summary.embedded);
    let said = &summary.embedded[1];
    assert!(said.contains(&format!("{} of the trace's {} calls and regions", s.kept, s.intervals)), "{said}");
    assert!(said.contains("windows spread from 0.000 ms to"), "{said}");
    let dom = rendered_dom(&dir, &page);
    assert!(dom.contains("windows spread from"), "no word of what was embedded");
    assert!(dom.contains("Clock statistics, reference rank 0") && dom.contains("estimated (SBA)"), "no clock report");
    // The profile still covers the whole trace.
    assert_eq!(summary.profile.events, job.events());
    assert_eq!(summary.check.messages, job.messages());
}

/// A bound smaller than the page's least content is refused, saying how
/// much it needs; nothing is written.
#[test]
fn a_bound_too_small_for_the_page_is_refused_with_what_it_needs() {
    let dir = scratch("too-small");
    let (set, time) = job_on_global_time(&dir, &SyntheticJob::new(2, 100));
    let out = dir.join("report.html");
    let options = ReportOptions { max_bytes: 20_000, ..ReportOptions::default() };
    let error = write_report(&set, &time, &out, &options, &mut |_| {}).unwrap_err();
    let said = error.to_string();
    assert!(said.contains("more than the 20000 bytes it may take") && said.contains("--max-size"), "{said}");
    let grappe_report::ReportError::TooSmall { needed, .. } = error else { panic!("{error:?}") };
    assert!(needed > 20_000, "{needed}");
    assert!(!out.exists(), "nothing is written");
    // The size it needs is enough.
    let options = ReportOptions { max_bytes: needed, ..ReportOptions::default() };
    let summary = write_report(&set, &time, &out, &options, &mut |_| {}).unwrap();
    assert!(summary.bytes <= needed && summary.selection.kept == 0, "{} bytes, {:?}", summary.bytes, summary.selection);
}

#[test]
fn the_console_check_catches_a_script_error() {
    let dir = scratch("negative");
    let page = dir.join("broken.html");
    let html = "<!DOCTYPE html><html><body><script>undefinedFunction();</script></body></html>";
    std::fs::write(&page, html).unwrap();
    let run = chromium(&dir, &url(&page), &["--dump-dom"]);
    assert!(run.console().iter().any(|l| l.contains("undefinedFunction")), "stderr:\n{}", run.stderr);
}

#[test]
fn a_merged_trace_gets_the_same_report() {
    let dir = scratch("merged");
    let (set, time) = job_on_global_time(&dir, &SyntheticJob::new(3, 200));
    let merged = dir.join("merged.gtrace");
    merge_to_file(&set, &time, &merged, &mut |_| {}).unwrap();
    let options = ReportOptions::default();
    let direct = write_report(&set, &time, &dir.join("direct.html"), &options, &mut |_| {}).unwrap();
    let merged_set = TraceSet::open(&merged).unwrap();
    let merged_time = GlobalTime::estimate(&merged_set, &GlobalOptions::default()).unwrap();
    let from_merged = write_report(&merged_set, &merged_time, &dir.join("merged.html"), &options, &mut |_| {}).unwrap();
    assert_eq!(from_merged.profile, direct.profile);
    assert_eq!(
        (from_merged.selection.intervals, from_merged.selection.messages),
        (direct.selection.intervals, direct.selection.messages)
    );
    let html = std::fs::read_to_string(dir.join("merged.html")).unwrap();
    assert!(html.contains("one merged file") && html.contains("its dates are global already"));
}

#[test]
fn a_cut_file_and_a_missing_rank_still_give_a_report_that_says_so() {
    let dir = scratch("cut");
    let job = SyntheticJob { block_events: 256, ..SyntheticJob::new(4, 400) };
    let traces = dir.join("trace");
    write_job(&traces, &job).unwrap();
    let cut = grappe_trace::file_for(&traces, 2);
    let len = std::fs::metadata(&cut).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&cut).unwrap().set_len(len / 2).unwrap();
    std::fs::remove_file(grappe_trace::file_for(&traces, 3)).unwrap();
    let set = TraceSet::open(&traces).unwrap();
    let time = GlobalTime::estimate(&set, &GlobalOptions::default()).unwrap();
    let page = dir.join("report.html");
    let summary = write_report(&set, &time, &page, &ReportOptions::default(), &mut |_| {}).unwrap();
    // Rank 3's messages are counted apart; the sends to rank 2 after the cut are unreceived.
    assert!(summary.check.receives_from_untraced > 0 && summary.check.sends_to_untraced > 0);
    assert!(summary.check.unreceived_sends > 0);
    assert_eq!(summary.profile.ranks.len(), 3);
    let dom = rendered_dom(&dir, &page);
    assert!(dom.contains("4 (3 traced)"), "the header should count the traced ranks");
    assert!(dom.contains("<dt>Job</dt><dd>synthetic</dd>"), "the header should name the job");
    assert!(dom.contains("no trace for 1 of 4 ranks (3)"), "the missing rank is not noted");
    assert!(dom.contains("rank 2: file cut at offset"), "the cut file is not noted");
    assert!(dom.contains("sends never received"), "the problems are not listed");
    assert!(dom.contains("ranks with no trace (not checked)"), "the untraced ranks' messages are not counted apart");
}

/// A sendrecv's tooltip gives both halves: whom it sent to and received
/// from, bytes sent and received. The page's data lists the receive only
/// where it differs from the send (here: another rank, another size).
#[test]
fn a_sendrecv_s_tooltip_names_both_peers_and_both_sizes() {
    const T0: u64 = 5_000_000_000;
    let send = |dest, bytes| Body::Send { dest, tag: 1, comm: 0, bytes, seq: 0, failed: false, sync: false };
    let recv = |src, bytes, sendrecv| Body::Recv {
        src,
        tag: 1,
        comm: 0,
        bytes,
        arrived: false,
        sendrecv,
        failed: false,
        any_source: false,
    };
    let ranks = [
        vec![(T0, T0, Body::Init), (T0 + 100, T0 + 400, send(1, 8)), (T0 + 100, T0 + 400, recv(2, 24, true))],
        vec![(T0, T0, Body::Init), (T0 + 200, T0 + 450, recv(0, 8, false))],
        vec![(T0, T0, Body::Init), (T0 + 150, T0 + 160, send(0, 24))],
    ];
    let dir = scratch("sendrecv-tooltip");
    let (page, _) = report_of_handmade(&dir, &ranks);
    let rank0 = &page_data(&page)["diagram"]["lanes"][0];
    // Call 1: the sendrecv (call 0 is init).
    assert_eq!((&rank0["xi"], &rank0["xp"], &rank0["xb"]), (&json!([1]), &json!([2]), &json!([24])));

    let dom = rendered_dom(&dir, &page);
    let tip = dom.split("data-sendrecv-tip=\"").nth(1).and_then(|t| t.split('"').next()).expect("a sendrecv tooltip");
    assert!(tip.starts_with("sendrecv on rank 0"), "{tip}");
    assert!(tip.contains("to rank 1, from rank 2") && tip.contains("bytes sent 8, received 24"), "{tip}");
}

/// Writes hand-made per-rank traces (events as (start, end, body)) in
/// `dir`/trace and their report in `dir`/report.html.
fn report_of_handmade(dir: &Path, ranks: &[Vec<(u64, u64, Body)>]) -> (PathBuf, ReportSummary) {
    let traces = dir.join("trace");
    std::fs::create_dir_all(&traces).unwrap();
    for (rank, events) in ranks.iter().enumerate() {
        let header = plain_header(rank as u32, ranks.len() as u32, "hand");
        write_events(&grappe_trace::file_for(&traces, rank as u32), &header, events).unwrap();
    }
    let set = TraceSet::open(&traces).unwrap();
    let time = GlobalTime::estimate(&set, &GlobalOptions::default()).unwrap();
    let page = dir.join("report.html");
    let summary = write_report(&set, &time, &page, &ReportOptions::default(), &mut |_| {}).unwrap();
    (page, summary)
}

/// The data the page draws from (the JSON in its `report-data` script).
fn page_data(page: &Path) -> serde_json::Value {
    let html = std::fs::read_to_string(page).unwrap();
    let open = r#"<script type="application/json" id="report-data">"#;
    let start = html.find(open).expect("a report-data script") + open.len();
    let len = html[start..].find("</script>").unwrap();
    serde_json::from_str(&html[start..start + len]).expect("the page's data is JSON")
}

/// A send and the receive marked as its second half are one `sendrecv`
/// call of the diagram, drawn in its own colour, waiting as its receive
/// waited; the profile counts it once, and the diagram too.
#[test]
fn a_marked_sendrecv_is_one_call_of_the_diagram_in_its_own_colour() {
    let dir = scratch("sendrecv");
    let (page, summary) = report_of_handmade(&dir, &sendrecv_exchange(5_000_000_000));
    assert_eq!((summary.selection.intervals, summary.selection.kept, summary.selection.messages), (11, 11, 4));

    let data = page_data(&page);
    let diagram = &data["diagram"];
    let kind = |k: &serde_json::Value| diagram["kinds"][k.as_u64().unwrap() as usize]["name"].as_str().unwrap();
    let rank0 = &diagram["lanes"][0];
    let calls: Vec<(&str, u64, u64)> = (0..rank0["k"].as_array().unwrap().len())
        .map(|i| (kind(&rank0["k"][i]), rank0["d"][i].as_u64().unwrap(), rank0["w"][i].as_u64().unwrap()))
        .collect();
    // The pair's receive waited from 100 to 120, when its message was sent.
    assert_eq!(calls, [("init", 0, 0), ("sendrecv", 300, 20), ("send", 0, 0), ("recv", 100, 0), ("finalize", 0, 0)]);
    assert_eq!(diagram["arrows"]["r"].as_array().unwrap().len(), 4, "both messages of the pair are drawn");

    let png = dir.join("report.png");
    let shot = format!("--screenshot={}", png.display());
    let run = chromium(&dir, &url(&page), &[&shot, "--window-size=1400,1000"]);
    assert!(run.console().is_empty(), "console messages:\n{}", run.console().join("\n"));
    let n = pixels_near(&png, SENDRECV);
    assert!(n > 1_000, "{n} pixels of the sendrecv colour in {}", png.display());
}

/// Init and finalize hold the clock sampling (tens of ms in a real run):
/// the diagram draws them as calls in their own colour, not as compute.
#[test]
fn init_and_finalize_are_drawn_as_calls() {
    let dir = scratch("lifecycle");
    let t0 = 5_000_000_000;
    let send = Body::Send { dest: 1, tag: 0, comm: 0, bytes: 8, seq: 0, failed: false, sync: false };
    let recv = Body::Recv {
        src: 0,
        tag: 0,
        comm: 0,
        bytes: 8,
        arrived: false,
        sendrecv: false,
        failed: false,
        any_source: false,
    };
    let ranks = [
        vec![(t0, t0 + 3_000, Body::Init), (t0 + 3_000, t0 + 3_100, send), (t0 + 8_000, t0 + 10_000, Body::Finalize)],
        vec![(t0, t0 + 3_000, Body::Init), (t0 + 3_000, t0 + 3_200, recv), (t0 + 8_000, t0 + 10_000, Body::Finalize)],
    ];
    let (page, summary) = report_of_handmade(&dir, &ranks);
    assert_eq!((summary.selection.intervals, summary.selection.messages), (6, 1));
    let diagram = embedded_diagram(&page);
    let names: Vec<&str> = diagram["kinds"].as_array().unwrap().iter().map(|k| k["name"].as_str().unwrap()).collect();
    let category = |name: &str| {
        let k = diagram["kinds"].as_array().unwrap().iter().find(|k| k["name"] == name).expect(name);
        k["category"].as_str().unwrap().to_owned()
    };
    assert!(names.contains(&"init") && names.contains(&"finalize"), "{names:?}");
    assert_eq!((category("init"), category("finalize")), ("runtime".to_owned(), "runtime".to_owned()));
    let calls = spans(&diagram, "t", "d");
    for rank in [0, 1] {
        assert!(calls.contains(&(rank, 0, 3_000)), "rank {rank}'s init: {calls:?}");
        assert!(calls.contains(&(rank, 8_000, 10_000)), "rank {rank}'s finalize: {calls:?}");
    }
    let png = dir.join("report.png");
    let shot = format!("--screenshot={}", png.display());
    let run = chromium(&dir, &url(&page), &[&shot, "--window-size=1400,1000"]);
    assert!(run.console().is_empty(), "console messages:\n{}", run.console().join("\n"));
    let n = pixels_near(&png, RUNTIME);
    assert!(n > 2_000, "{n} pixels of the init/finalize colour in {}", png.display());
}

/// A call that failed (a peer died, the job was stopped) is a kind of its
/// own, marked failed and drawn black, all of it waiting, with no arrow;
/// its tooltip says it failed.
#[test]
fn a_failed_call_is_drawn_as_such_all_waiting() {
    const T0: u64 = 5_000_000_000;
    let recv = |failed| Body::Recv {
        src: 1,
        tag: 1,
        comm: 0,
        bytes: 0,
        arrived: false,
        sendrecv: false,
        failed,
        any_source: false,
    };
    let barrier = Body::Collective { op: CollectiveKind::Barrier, comm: 0, root: ANY, bytes: 0, failed: true };
    let ranks = [
        vec![(T0, T0, Body::Init), (T0 + 100, T0 + 900_000, recv(true))],
        vec![(T0, T0, Body::Init), (T0 + 200, T0 + 800_000, barrier)],
    ];
    let dir = scratch("failed");
    let (page, summary) = report_of_handmade(&dir, &ranks);
    assert_eq!(summary.selection.messages, 0);
    let diagram = &page_data(&page)["diagram"];
    assert_eq!(
        diagram["kinds"],
        json!([
            {"name": "init", "category": "runtime"},
            {"name": "recv", "category": "recv", "failed": true},
            {"name": "barrier", "category": "collective", "failed": true},
        ])
    );
    // Call 0 is init.
    let rank0 = &diagram["lanes"][0];
    assert_eq!((&rank0["k"][1], &rank0["d"][1], &rank0["w"][1]), (&json!(1), &json!(899_900), &json!(899_900)));

    let dom = rendered_dom(&dir, &page);
    assert!(dom.contains("failed call: a peer died or the job was stopped"), "the legend names them");
    let png = dir.join("report.png");
    let shot = format!("--screenshot={}", png.display());
    let run = chromium(&dir, &url(&page), &[&shot, "--window-size=1400,1000"]);
    assert!(run.console().is_empty(), "console messages:\n{}", run.console().join("\n"));
    let n = pixels_near(&png, FAILED);
    assert!(n > 1_000, "{n} pixels of the failed colour in {}", png.display());
}

/// The diagram's data the page embeds (`<script id="report-data">`).
fn embedded_diagram(page: &Path) -> serde_json::Value {
    let html = std::fs::read_to_string(page).unwrap();
    let open = "id=\"report-data\">";
    let start = html.find(open).expect("no embedded data") + open.len();
    let len = html[start..].find("</script>").unwrap();
    let mut data: serde_json::Value = serde_json::from_str(&html[start..start + len]).unwrap();
    data["diagram"].take()
}

/// Rank, start and end (ns from the diagram's origin) of each call
/// (`starts`, `durations` = "t", "d") or region ("rt", "rd") of `diagram`.
fn spans(diagram: &serde_json::Value, starts: &str, durations: &str) -> Vec<(u64, u64, u64)> {
    let numbers = |v: &serde_json::Value| v.as_array().unwrap().iter().map(|n| n.as_u64().unwrap()).collect::<Vec<_>>();
    let mut out = Vec::new();
    for lane in diagram["lanes"].as_array().unwrap() {
        let (rank, mut t) = (lane["rank"].as_u64().unwrap(), 0);
        for (delta, d) in numbers(&lane[starts]).into_iter().zip(numbers(&lane[durations])) {
            t += delta;
            out.push((rank, t, t + d));
        }
    }
    out.sort_unstable();
    out
}

/// `got` is `want`; says where they part if not (they are long).
fn assert_same_spans(what: &str, got: &[(u64, u64, u64)], want: &[(u64, u64, u64)]) {
    let first = got.iter().zip(want).position(|(a, b)| a != b).unwrap_or(got.len().min(want.len()));
    assert!(
        got == want,
        "{what}: {} kept, {} expected; first difference at {first}: {:?} kept, {:?} expected",
        got.len(),
        want.len(),
        got.get(first),
        want.get(first)
    );
}

#[test]
fn an_interval_asked_for_is_detailed_whole_and_alone() {
    let dir = scratch("interval");
    let (set, time) = job_on_global_time(&dir, &SyntheticJob::new(4, 1_000));
    let whole_page = dir.join("whole.html");
    let whole = write_report(&set, &time, &whole_page, &ReportOptions::default(), &mut |_| {}).unwrap();
    let all = embedded_diagram(&whole_page);
    let (origin, end) = (all["origin_ns"].as_u64().unwrap(), all["end"].as_u64().unwrap());
    // From the middle of a region, so that one is open across the start.
    let region = spans(&all, "rt", "rd").into_iter().find(|r| r.1 >= end * 2 / 5 && r.2 - r.1 >= 2).unwrap();
    let (from, to) = ((region.1 + region.2) / 2, end * 9 / 20);
    let window = Window { from, to };

    let page = dir.join("window.html");
    let options = ReportOptions { window, ..ReportOptions::default() };
    let summary = write_report(&set, &time, &page, &options, &mut |_| {}).unwrap();
    let part = embedded_diagram(&page);
    assert_eq!(part["origin_ns"].as_u64(), Some(origin), "the page keeps the run's origin");
    assert_eq!(summary.detail_windows, [(origin + from, origin + to)]);
    assert_eq!(part["interval"], json!([from, to]));
    assert_eq!(part["detail"], json!([[from, to]]));
    // Exactly the calls and regions of the whole diagram that overlap the
    // interval, regions entered before it included.
    let overlap = |v: Vec<(u64, u64, u64)>| -> Vec<_> { v.into_iter().filter(|s| s.2 >= from && s.1 < to).collect() };
    let (calls, regions) = (spans(&part, "t", "d"), spans(&part, "rt", "rd"));
    assert_same_spans("calls", &calls, &overlap(spans(&all, "t", "d")));
    assert_same_spans("regions", &regions, &overlap(spans(&all, "rt", "rd")));
    assert!(regions.iter().any(|r| r.1 < from), "no region open across the interval's start: a weak test");
    assert!(calls.len() > 1_000 && calls.len() * 10 < spans(&all, "t", "d").len(), "{} calls", calls.len());
    assert_eq!(summary.selection.kept, (calls.len() + regions.len()) as u64);
    assert_eq!(summary.selection.intervals, whole.selection.intervals);
    // Arrows end at receives kept, so inside the interval.
    let mut t = 0;
    for delta in part["arrows"]["t"].as_array().unwrap() {
        t += delta.as_u64().unwrap();
        assert!(t >= from, "an arrow ends at {t} ns, before the interval ({from} ns)");
    }
    assert!(summary.selection.arrows > 100);
    // The rest of the page covers the whole run, and the page says so.
    assert_eq!(summary.profile, whole.profile);
    let ms = |ns: u64| format!("{:.3} ms", ns as f64 / 1e6);
    let said = &summary.embedded[1];
    assert!(said.contains(&format!("those of the interval asked for, {} to {}", ms(from), ms(to))), "{said}");
    // It renders, and its reset goes back to the interval (the self-test).
    let dom = rendered_dom(&dir, &page);
    assert!(dom.contains("the interval asked for"));
}

/// The phased run: how long it lasts, and its calls' length (ns).
const PHASED_NS: u64 = 200_000_000;
const PHASED_CALL_NS: u64 = 2_000;
/// Colours of the states of the phased run (src/diagram.js).
const WAIT: [u8; 3] = [0x2e, 0x9e, 0x3e];
const PROBE: [u8; 3] = [0x8d, 0x5f, 0xc2];
const IRECV: [u8; 3] = [0xf5, 0xbd, 0x7a];
const COMPUTE: [u8; 3] = [0xe3, 0xe3, 0xe3];

/// A run whose activity changes over time in a known way, each phase one
/// state back to back: every rank waits (`wait` calls) in the first half;
/// then the even ranks probe and the odd ones compute (no call) until 90%
/// of the run; then every rank posts `irecv`s to the end. 320 000 calls:
/// more than a report used to draw (200 000, from the start).
fn phased_run(rank: u32) -> Vec<(u64, u64, Body)> {
    const T0: u64 = 5_000_000_000;
    let completion = grappe_trace::Completion { is_recv: false, src: 0, tag: 0, bytes: 0, arrived: false };
    let mut events = vec![(T0, T0, Body::Init)];
    let mut phase = |from: u64, to: u64, body: &dyn Fn(u64) -> Body| {
        for (i, t) in (from..to).step_by(PHASED_CALL_NS as usize).enumerate() {
            events.push((T0 + t, T0 + t + PHASED_CALL_NS, body(i as u64)));
        }
    };
    phase(0, PHASED_NS / 2, &|request| Body::Wait { request, comm: 0, completion, failed: false });
    if rank % 2 == 0 {
        phase(PHASED_NS / 2, PHASED_NS * 9 / 10, &|_| Body::Iprobe {
            src: ANY,
            tag: 0,
            comm: 0,
            found: None,
            failed: false,
        });
    }
    phase(PHASED_NS * 9 / 10, PHASED_NS, &|request| Body::Irecv { src: ANY, tag: 0, comm: 0, request });
    events.push((T0 + PHASED_NS, T0 + PHASED_NS, Body::Finalize));
    events
}

/// The state rank `rank` of the phased run is in at `t` (ns from its start).
fn phased_colour(rank: usize, t: f64) -> [u8; 3] {
    let run = PHASED_NS as f64;
    match t {
        t if t < run / 2.0 => WAIT,
        t if t < run * 0.9 && rank % 2 == 0 => PROBE,
        t if t < run * 0.9 => COMPUTE,
        _ => IRECV,
    }
}

/// Loads `page` in a frame of a page that, once it is drawn, sets the
/// diagram's view to each of `views` (ns from the run's start) and reads
/// back the canvas' pixels: per view and lane, at `SAMPLES` dates evenly
/// spread, and at the view's last pixel column. Returns (view, lane,
/// date, colour) samples. It uses only what the page has always had
/// (`GRAPPE.diagram`, its `setView`, `draw`, `x` and `bands`).
fn diagram_pixels(dir: &Path, page: &Path, views: &[(f64, f64)]) -> Vec<(usize, usize, f64, [u8; 3])> {
    const SAMPLES: usize = 150;
    let probe = dir.join("probe.html");
    let script = format!(
        r#"<!DOCTYPE html><html><body><iframe id="f" src="{}" style="width:1400px;height:900px;border:0"></iframe>
<script>
document.getElementById("f").onload = function () {{ setTimeout(function () {{
  const w = this.contentWindow, d = w.GRAPPE.diagram, out = [];
  {views}.forEach(function (view, v) {{
    d.setView(view[0], view[1]);
    d.draw();
    const times = [];
    for (let k = 0; k < {SAMPLES}; k++) times.push(d.v0 + ((k + 0.5) * (d.v1 - d.v0)) / {SAMPLES});
    times.push(d.timeAt(d.width - 1.5));
    const c = d.ctx.canvas, all = d.ctx.getImageData(0, 0, c.width, c.height).data;
    d.lanes.forEach(function (lane, i) {{
      const b = d.bands(i), y = Math.round(b.callY + b.callH * 0.6);
      for (const t of times) {{
        const o = (y * c.width + Math.round(d.x(t))) * 4;
        out.push([v, i, t, all[o], all[o + 1], all[o + 2]]);
      }}
    }});
  }});
  document.body.dataset.samples = JSON.stringify(out);
}}.bind(this), 0); }};
</script></body></html>"#,
        url(page),
        views = serde_json::to_string(&views.iter().map(|v| [v.0, v.1]).collect::<Vec<_>>()).unwrap(),
    );
    std::fs::write(&probe, script).unwrap();
    let run = chromium(dir, &url(&probe), &["--dump-dom", "--allow-file-access-from-files", "--window-size=1500,1000"]);
    // Chromium's hint that the probe reads the canvas back more than once.
    let console: Vec<&str> = run.console().into_iter().filter(|l| !l.contains("willReadFrequently")).collect();
    assert!(console.is_empty(), "console messages:\n{}", console.join("\n"));
    let samples = run.stdout.split("data-samples=\"").nth(1).and_then(|s| s.split('"').next());
    let samples = samples.unwrap_or_else(|| panic!("the probe read no pixels; stdout:\n{}", run.stdout));
    let samples: Vec<(usize, usize, f64, u8, u8, u8)> = serde_json::from_str(samples).unwrap();
    samples.into_iter().map(|(v, i, t, r, g, b)| (v, i, t, [r, g, b])).collect()
}

/// Checks that every sample shows the phased run's state at its date,
/// but those within `margin` ns of a change of phase (a pixel column that
/// holds both); returns how many were checked.
fn assert_phases(what: &str, samples: &[(usize, usize, f64, [u8; 3])], views: &[(f64, f64)]) -> usize {
    let run = PHASED_NS as f64;
    let mut checked = 0;
    let mut wrong = Vec::new();
    for &(v, lane, t, colour) in samples {
        let margin = 3.0 * (views[v].1 - views[v].0) / 1300.0;
        let near = |edge: f64| (t - edge).abs() < margin;
        if t < 0.0 || t > run - margin / 2.0 || near(run / 2.0) || near(run * 0.9) {
            continue;
        }
        checked += 1;
        let want = phased_colour(lane, t);
        if !want.iter().zip(colour).all(|(&a, b)| a.abs_diff(b) <= 10) {
            wrong.push(format!("view {v}, rank {lane}, at {:.3} ms: {colour:?} for {want:?}", t / 1e6));
        }
    }
    assert!(wrong.is_empty(), "{what}: {} of {checked} pixels wrong:\n{}", wrong.len(), wrong.join("\n"));
    checked
}

/// The whole run is drawn, whatever its length: on a run of 320 000 calls
/// whose activity changes over time in a known way, the diagram's pixels
/// show each rank's state at every date sampled, from the start to the
/// end of the run: at full zoom-out (the summary), zoomed in on a part
/// (the summary, finer) and on a few hundred calls (the calls one by one,
/// or the finest summary where they are not embedded), with the page
/// holding every call and with one that holds a fraction of them.
#[test]
fn the_diagram_shows_the_state_of_every_rank_across_the_whole_run() {
    let dir = scratch("phases");
    let ranks: Vec<Vec<(u64, u64, Body)>> = (0..4).map(phased_run).collect();
    let (page, summary) = report_of_handmade(&dir, &ranks);
    assert_eq!(summary.selection.intervals, 320_000 + 8);
    assert_eq!(summary.selection.kept, summary.selection.intervals, "every call fits in the default bound");
    let run = PHASED_NS as f64;
    let views = [
        (0.0, run),
        (0.4 * run, 0.6 * run),
        (0.85 * run, 0.95 * run),
        (0.25 * run, 0.25 * run + 200_000.0),
        (0.7 * run, 0.7 * run + 200_000.0),
        (run - 200_000.0, run),
    ];
    let samples = diagram_pixels(&dir, &page, &views);
    assert_eq!(samples.len(), views.len() * 4 * 151);
    let checked = assert_phases("every call embedded", &samples, &views);
    assert!(checked > views.len() * 4 * 140, "{checked} pixels checked");

    // A page of 1.5 MB: a fraction of the calls, in windows; the rest of
    // the run is drawn from the summary at every zoom.
    let small = dir.join("small.html");
    let set = TraceSet::open(&dir.join("trace")).unwrap();
    let time = GlobalTime::estimate(&set, &GlobalOptions::default()).unwrap();
    let options = ReportOptions { max_bytes: 1_500_000, ..ReportOptions::default() };
    let summary = write_report(&set, &time, &small, &options, &mut |_| {}).unwrap();
    assert!(summary.bytes <= 1_500_000, "{} bytes", summary.bytes);
    let s = summary.selection;
    assert!(s.kept > 10_000 && s.kept < s.intervals / 4, "{s:?}");
    let samples = diagram_pixels(&dir, &small, &views);
    assert_phases("a fraction embedded", &samples, &views);
}
