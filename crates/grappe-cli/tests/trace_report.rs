//! `grappe trace report --from/--to` end to end, the real binary on a
//! synthetic job: the interval it details, and the dates it refuses.

use std::path::PathBuf;
use std::process::{Command, Output};

use grappe_analysis::synthetic::{SyntheticJob, write_job};

const GRAPPE: &str = env!("CARGO_BIN_EXE_grappe");

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("grappe-cli-report-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn report(args: &[&str]) -> Output {
    Command::new(GRAPPE).args(["trace", "report"]).args(args).output().expect("the grappe binary runs")
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
