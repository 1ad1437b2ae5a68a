//! `grappe trace export` end to end, the real binary on a synthetic job:
//! what `--sites` adds, and which formats refuse it.

use std::path::PathBuf;
use std::process::{Command, Output};

use grappe_analysis::synthetic::{SyntheticJob, write_job};

const GRAPPE: &str = env!("CARGO_BIN_EXE_grappe");

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("grappe-cli-export-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn export(args: &[&str]) -> Output {
    Command::new(GRAPPE).args(["trace", "export"]).args(args).output().expect("the grappe binary runs")
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
