//! Outside test suites on grappe's library: mpi4py's own test suite, from
//! its source distribution on PyPI, run on MPICH and on grappe with the
//! same mpi4py wheel on 1, 2 and 4 ranks and compared test by test
//! (`tests/mpi4py/run-suite`); and the examples of the `mpi` crate
//! (rsmpi) from crates.io, built through grappe's `mpicc`
//! (`tests/rsmpi/run-examples`).

mod common;

use std::process::Command;
use std::time::Duration;

use common::{grappe, installed, root};
use grappe_testkit::{describe, run_bounded, target_dir};

#[test]
fn every_mpi4py_test_that_passes_on_mpich_passes_on_grappe_or_is_listed() {
    // The release library: the suite makes hundreds of thousands of calls,
    // which the debug build makes ten times slower.
    let prefix = target_dir().join("mpi-release");
    let build = Command::new("bash").arg(root().join("scripts/build-mpi")).arg("--prefix").arg(&prefix).output();
    let build = build.expect("scripts/build-mpi runs");
    assert!(build.status.success(), "scripts/build-mpi failed:\n{}", describe(&build));
    let mut suite = Command::new(root().join("crates/grappe-mpi/tests/mpi4py/run-suite"));
    // MPICH's outcomes on 4 ranks are recorded (run-suite says why).
    suite
        .args(["--ranks", "1,2,4", "--mpich-recorded", "4", "--grappe"])
        .arg(grappe())
        .arg("--lib")
        .arg(prefix.join("lib"));
    let output = run_bounded(suite, Duration::from_secs(1500));
    let text = describe(&output);
    assert!(output.status.success(), "mpi4py's suite differs from MPICH's:\n{text}");
    assert!(text.contains("every test that passes on MPICH passes on grappe"), "no verdict:\n{text}");
    println!("{text}");
}

#[test]
fn rsmpi_s_examples_build_through_grappe_s_mpicc_and_run_on_grappe() {
    let prefix = installed();
    let mut examples = Command::new("bash");
    examples.arg(root().join("crates/grappe-mpi/tests/rsmpi/run-examples")).arg(&prefix).arg(grappe());
    let output = run_bounded(examples, Duration::from_secs(1200));
    let text = describe(&output);
    assert!(output.status.success(), "rsmpi's examples on grappe:\n{text}");
    assert!(text.contains(" passed, 0 failed"), "no summary:\n{text}");
    println!("{text}");
}
