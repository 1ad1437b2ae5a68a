//! The C side of grappe's MPI library, checked from the test suite: `include/mpi.h` against
//! MPICH's header (values, types, prototypes) and against MPICH's library, and the tree
//! `scripts/build-mpi` lays out with its `mpicc`/`mpicxx` wrappers. Each test runs one script of
//! this directory, which can also be run by hand; a script prints what it checked, or what differs
//! and fails. They need gcc, g++, patchelf, MPICH and Open MPI (`scripts/install-deps`); the ones
//! that run MPI programs bound them with `timeout`.

use std::path::Path;
use std::process::Command;

fn run_script(name: &str) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join(name);
    let output =
        Command::new("bash").arg(&script).output().unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{} failed ({}):\n{stdout}{stderr}", script.display(), output.status);
    print!("{stdout}");
}

#[test]
fn header_values_and_types_are_mpichs() {
    run_script("abi-values.sh");
}

#[test]
fn header_prototypes_are_mpichs_and_cover_mpi_3_1() {
    run_script("abi-prototypes.sh");
}

#[test]
fn programs_built_with_the_header_run_on_mpichs_library() {
    run_script("abi-mpich-run.sh");
}

#[test]
fn build_mpi_lays_out_a_tree_the_wrappers_build_against() {
    run_script("install-layout.sh");
}
