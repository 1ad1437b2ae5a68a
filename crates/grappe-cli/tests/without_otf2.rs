//! A grappe built without OTF2 (`--no-default-features`, no libotf2
//! needed): `trace export -f otf2` says that this build lacks it and how
//! to get it, before reading any trace, and writes nothing; the other
//! formats still export. Built only without the `otf2` feature:
//!
//!     cargo nextest run -p grappe-cli --no-default-features --test without_otf2
//!
//! (scripts/test runs it).
#![cfg(not(feature = "otf2"))]

use std::process::Command;

use grappe_testkit::synthetic::{SyntheticJob, write_job};

const GRAPPE: &str = env!("CARGO_BIN_EXE_grappe");

#[test]
fn an_otf2_export_says_this_grappe_lacks_it_and_how_to_get_it() {
    let dir = grappe_testkit::scratch("cli-without-otf2");
    let traces = dir.join("traces");
    write_job(&traces, &SyntheticJob::new(2, 20)).unwrap();
    let export = |format: &str, output: &str| {
        let (traces, output) = (traces.to_str().unwrap(), dir.join(output));
        let args = ["trace", "export", "-f", format, traces, "-o", output.to_str().unwrap()];
        Command::new(GRAPPE).args(args).output().expect("the grappe binary runs")
    };

    let out = export("otf2", "job");
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("this grappe was built without OTF2"), "{said}");
    assert!(said.contains("apt-get install libopen-trace-format2-dev"), "{said}");
    assert!(said.contains("cargo build --release -p grappe-cli"), "{said}");
    assert!(!dir.join("job").exists() && !dir.join("job.otf2").exists(), "nothing is written");
    // Said before the traces are read: a path with none says the same.
    let none = Command::new(GRAPPE)
        .args(["trace", "export", "-f", "otf2", dir.join("none").to_str().unwrap(), "-o", "job"])
        .output()
        .expect("the grappe binary runs");
    assert!(String::from_utf8_lossy(&none.stderr).contains("this grappe was built without OTF2"));

    let out = export("chrome", "job.json");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(dir.join("job.json").is_file());
}

#[test]
fn the_help_still_lists_otf2() {
    let out = Command::new(GRAPPE).args(["trace", "export", "--help"]).output().expect("the grappe binary runs");
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && help.contains("otf2"), "{help}");
}
