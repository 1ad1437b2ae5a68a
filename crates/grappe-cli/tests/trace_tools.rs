//! The trace tools end to end, the real binary on synthetic jobs: what
//! `export --sites` adds and which formats refuse it; the interval
//! `report --from/--to` details and the dates it refuses.

use std::path::PathBuf;
use std::process::{Command, Output};

use grappe_analysis::synthetic::{SyntheticJob, write_job};

const GRAPPE: &str = env!("CARGO_BIN_EXE_grappe");

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("grappe-cli-trace-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
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

    for format in ["picl", "otf2"] {
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
    assert!(said.contains("The diagram shows 2.000 ms to 3.500 ms of the"), "{said}");
    assert!(said.contains("the interval asked for"), "{said}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("\"window_start\":2000000,\"window_end\":3500000"), "the page's window");

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
    assert!(!PathBuf::from(refused).exists(), "nothing is written when the dates are refused");
    std::fs::remove_dir_all(&dir).unwrap();
}
