//! Programs built against MPICH by others, run unchanged on grappe's
//! library: a Fortran program through MPICH's own Fortran library
//! (`libmpichfort.so.12`, which calls into this one), and the ScaLAPACK
//! and BLACS test programs Debian ships built with MPICH (C and Fortran,
//! derived datatypes, user reductions on struct types, communicator
//! splits, `MPI_Abort`).
//!
//! Each test installs the library first (see `common::installed`).

mod common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use common::{grappe, installed};
use grappe_testkit::{describe, run_bounded, scratch};

/// `grappe run -n N ./program` in `dir`, on the installed library.
fn run_on_grappe(prefix: &Path, dir: &Path, n: usize, program: &str) -> Output {
    let mut command = Command::new(grappe());
    command.args(["run", "-n", &n.to_string(), program]).current_dir(dir).env("LD_LIBRARY_PATH", prefix.join("lib"));
    run_bounded(command, Duration::from_secs(180))
}

/// Compiles `tests/fortran/NAME.f90` with `mpif90.mpich` into `dir`; checks
/// that the program loads MPICH's Fortran library.
fn compile_fortran(name: &str, dir: &Path) {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fortran").join(format!("{name}.f90"));
    let mut compile = Command::new("mpif90.mpich");
    // -w: gfortran warns that MPI's choice buffers take several types.
    compile.args(["-g", "-w", "-o", name]).arg(&source).current_dir(dir);
    let output = run_bounded(compile, Duration::from_secs(120));
    assert!(output.status.success(), "mpif90.mpich {name}.f90:\n{}", describe(&output));
    let linked =
        String::from_utf8_lossy(&Command::new("ldd").arg(dir.join(name)).output().unwrap().stdout).into_owned();
    assert!(linked.contains("libmpichfort.so.12"), "{name} uses MPICH's Fortran library:\n{linked}");
}

#[test]
fn a_fortran_program_built_with_mpif90_mpich_runs_through_mpich_s_fortran_library() {
    let prefix = installed();
    let dir = scratch("fortran");
    compile_fortran("conformance", &dir);
    for n in 1..=4 {
        let output = run_on_grappe(&prefix, &dir, n, "./conformance");
        let text = describe(&output);
        assert!(output.status.success(), "on {n} ranks:\n{text}");
        assert!(text.contains(&format!("fortran: all checks passed on {n} ranks")), "on {n} ranks:\n{text}");
        assert!(!text.contains("FAIL"), "on {n} ranks:\n{text}");
    }
}

#[test]
fn a_fortran_2008_program_runs_through_mpich_s_mpi_f08_module() {
    let prefix = installed();
    let dir = scratch("fortran-2008");
    compile_fortran("f08", &dir);
    for n in [1, 3] {
        let output = run_on_grappe(&prefix, &dir, n, "./f08");
        let text = describe(&output);
        assert!(output.status.success(), "on {n} ranks:\n{text}");
        assert!(text.contains(&format!("fortran 2008: all checks passed on {n} ranks")), "on {n} ranks:\n{text}");
    }
}

/// Debian's ScaLAPACK test programs built with MPICH, with their input
/// files (links into /usr/share in the package, copied as files).
fn scalapack_tests() -> grappe_testkit::Scratch {
    let dir = scratch("scalapack");
    let installed = "/usr/lib/x86_64-linux-gnu/scalapack/mpich-tests/.";
    let status = Command::new("cp").args(["-rL", installed]).arg(dir.path()).status().expect("cp runs");
    assert!(status.success(), "copy {installed} (scripts/install-deps installs scalapack-mpi-test)");
    dir
}

#[test]
fn scalapack_s_own_tests_built_with_mpich_pass_on_grappe() {
    let prefix = installed();
    let dir = scalapack_tests();
    // LU, QR, inverse, symmetric eigenproblems, SVD, Hessenberg, in the
    // four precisions between them. Not the Cholesky testers (x?llt) nor
    // the single-precision LU one (xslu): their iterative refinement
    // (psporfs_, psgerfs_) hands pslacon_ a local it never set (valgrind
    // --track-origins: created by a stack allocation in psgerfs_), so
    // which collectives a rank calls next depends on what earlier calls
    // left on its stack, and ranks can part ways.
    for test in ["xdlu", "xzlu", "xcqr", "xdinv", "xdsep", "xzheevr", "xdsvd", "xdhrd"] {
        let output = run_on_grappe(&prefix, &dir, 4, &format!("./{test}"));
        let text = describe(&output);
        assert!(output.status.success(), "{test} on 4 ranks:\n{text}");
        let passed = text.lines().any(|l| {
            (l.contains("tests completed and passed residual checks") && !l.trim_start().starts_with("0 "))
                || l.starts_with("Passed")
        });
        assert!(passed, "{test}: no passing test reported:\n{text}");
        let failed = text.lines().any(|l| {
            (l.contains("completed and failed") && !l.trim_start().starts_with("0 ")) || l.starts_with("FAILED")
        });
        assert!(!failed, "{test}: a test failed:\n{text}");
    }
}

/// BLACS's testers (C and Fortran interfaces): point-to-point and
/// broadcasts of every shape, sums and absolute max/min (user operations
/// on struct datatypes), then `BLACS_ABORT`, which must end the job.
#[test]
fn the_blacs_testers_built_with_mpich_pass_and_their_abort_ends_the_job() {
    let prefix = installed();
    let dir = scalapack_tests();
    let blacs = dir.join("BLACS");
    for tester in ["xCbtest", "xFbtest"] {
        let output = run_on_grappe(&prefix, &blacs, 4, &format!("./{tester}"));
        let text = describe(&output);
        let summaries: Vec<&str> = text.lines().filter(|l| l.contains(" TESTS;")).collect();
        // SDRV and BSBR for 5 types, SUM/AMX/AMN for 4 (the integer one too).
        assert_eq!(summaries.len(), 22, "{tester}: every group of tests reports:\n{text}");
        for summary in &summaries {
            assert!(summary.trim_end().ends_with(" 0 FAILED."), "{tester}: {summary}\n{text}");
        }
        assert!(text.contains("PASSED  BLACS_SET/BLACS_GET TESTS"), "{tester}:\n{text}");
        // The last test is BLACS_ABORT: the job ends, with an error status.
        assert!(!output.status.success(), "{tester}: BLACS_ABORT ends the job with an error:\n{text}");
        assert!(text.contains("aborts the job"), "{tester}: grappe says who aborted:\n{text}");
    }
}
