//! Programs built against MPICH by others, run unchanged on grappe's
//! library: a Fortran program through MPICH's own Fortran library
//! (`libmpichfort.so.12`, which calls into this one), the ScaLAPACK
//! and BLACS test programs Debian ships built with MPICH (C and Fortran,
//! derived datatypes, user reductions on struct types, communicator
//! splits, `MPI_Abort`), a program on Debian's parallel HDF5 (MPI-IO),
//! coarray Fortran on Debian's OpenCoarrays with its own test programs
//! (MPI one-sided), NWChem (Global Arrays over ARMCI-MPI), BAGEL (threads
//! over `MPI_THREAD_MULTIPLE`), EZTrace's MPI module (the profiling
//! interface) and NetPIPE in its integrity mode.
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
    run_with_args(prefix, dir, n, program, &[])
}

/// `grappe run -n N program args...` in `dir`, on the installed library.
fn run_with_args(prefix: &Path, dir: &Path, n: usize, program: &str, args: &[&str]) -> Output {
    let mut command = Command::new(grappe());
    command.args(["run", "-n", &n.to_string(), program]).args(args);
    command.current_dir(dir).env("LD_LIBRARY_PATH", prefix.join("lib"));
    // ScaLAPACK's LU tester and BLACS's take 20-30 s on 4 ranks on a quiet
    // machine and 3 to 6 times that on one loaded 7 times over: the bound
    // catches a hang, not a slow machine.
    run_bounded(command, Duration::from_secs(400))
}

/// Runs `command` in `dir` to build `what`, which must succeed.
fn build(mut command: Command, dir: &Path, what: &str) {
    command.current_dir(dir);
    let output = run_bounded(command, Duration::from_secs(180));
    assert!(output.status.success(), "building {what}:\n{}", describe(&output));
}

/// A source file of these tests, `tests/RELATIVE`.
fn source(relative: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join(relative)
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

#[test]
fn fortran_generalized_request_callbacks_take_their_arguments_by_reference() {
    let prefix = installed();
    let dir = scratch("fortran-grequest");
    compile_fortran("grequest", &dir);
    for n in [1, 2] {
        let output = run_on_grappe(&prefix, &dir, n, "./grequest");
        let text = describe(&output);
        assert!(output.status.success(), "on {n} ranks:\n{text}");
        assert!(
            text.contains(&format!("fortran generalized requests: all checks passed on {n} ranks")),
            "on {n} ranks:\n{text}"
        );
    }
}

#[test]
fn a_fortran_attribute_reads_in_c_through_its_address() {
    let prefix = installed();
    let dir = scratch("fortran-attr-languages");
    compile_fortran("attr_languages", &dir);
    for n in [1, 3] {
        let output = run_on_grappe(&prefix, &dir, n, "./attr_languages");
        let text = describe(&output);
        assert!(output.status.success(), "on {n} ranks:\n{text}");
        let verdict = format!("fortran attributes across languages: all checks passed on {n} ranks");
        assert!(text.contains(&verdict), "on {n} ranks:\n{text}");
    }
}

#[test]
fn fortran_pair_types_and_sized_types_reduce() {
    let prefix = installed();
    let dir = scratch("fortran-reductions");
    compile_fortran("reductions", &dir);
    for n in [1, 3] {
        let output = run_on_grappe(&prefix, &dir, n, "./reductions");
        let text = describe(&output);
        assert!(output.status.success(), "on {n} ranks:\n{text}");
        assert!(text.contains(&format!("fortran reductions: all checks passed on {n} ranks")), "on {n} ranks:\n{text}");
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

/// `h5dump ARGS file`'s output.
fn h5dump(args: &[&str], file: &Path) -> String {
    let mut command = Command::new("h5dump");
    command.args(args).arg(file);
    let output = run_bounded(command, Duration::from_secs(60));
    assert!(output.status.success(), "h5dump {args:?}:\n{}", describe(&output));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Parallel HDF5 (Debian's `libhdf5-mpich`, which does its I/O through
/// MPI-IO): `tests/hdf5/phdf5.c` writes 2-D datasets by row blocks and
/// by interleaved columns, contiguous, chunked and compressed (filtered
/// chunks are written collectively only: HDF5 gathers them to owners),
/// collectively and independently, with attributes and a compound type,
/// then reads them back in another decomposition and checks every value.
/// h5dump, a program of its own, reads the file back too.
#[test]
fn a_parallel_hdf5_program_built_with_h5pcc_mpich_writes_files_h5dump_reads() {
    let prefix = installed();
    let dir = scratch("hdf5");
    let mut compile = Command::new("h5pcc.mpich");
    compile.args(["-g", "-o", "phdf5"]).arg(source("hdf5/phdf5.c"));
    build(compile, &dir, "phdf5.c with h5pcc.mpich (scripts/install-deps installs libhdf5-mpich-dev)");
    for n in 1..=4 {
        let file = dir.join(format!("phdf5-{n}.h5"));
        let output = run_with_args(&prefix, &dir, n, "./phdf5", &[file.to_str().unwrap()]);
        let text = describe(&output);
        assert!(output.status.success(), "on {n} ranks:\n{text}");
        assert!(text.contains(&format!("phdf5: all checks passed on {n} ranks")), "on {n} ranks:\n{text}");
        let ranks = h5dump(&["-a", "/ranks"], &file);
        assert!(ranks.contains(&format!("(0): {n}")), "the file's attribute ranks is {n}:\n{ranks}");
        // The last row's last value, written by the last rank's column
        // (columns_collective: dataset 6) and compressed (dataset 5).
        let last_row = 6 * n - 1;
        for (dataset, which) in [("columns_collective", 6), ("compressed", 5)] {
            let values =
                h5dump(&["-d", &format!("/grid/{dataset}"), "-s", &format!("{last_row},9"), "-c", "1,1"], &file);
            let want = format!("({last_row},9): {}", which * 100_000 + last_row * 100 + 9);
            assert!(values.contains(&want), "{dataset} on {n} ranks: no {want:?} in\n{values}");
        }
    }
    let filters = h5dump(&["-p", "-H", "-d", "/grid/compressed"], &dir.join("phdf5-4.h5"));
    assert!(filters.contains("COMPRESSION DEFLATE"), "the compressed dataset is deflated:\n{filters}");
}

/// OpenCoarrays' compiler wrapper and test programs for MPICH.
const OPENCOARRAYS: &str = "/usr/lib/x86_64-linux-gnu/open-coarrays/mpich/bin";

/// Coarray Fortran (gfortran `-fcoarray=lib` on Debian's OpenCoarrays,
/// built with MPICH): `tests/coarrays/caf.f90`'s puts and gets of
/// scalars, strided sections and 2-D sections, collectives, allocatable
/// coarrays, locks, atomics (add, fetch-and-add, compare-and-swap),
/// events and `sync images`, checked on every image. OpenCoarrays runs
/// them as MPI one-sided calls in passive-target epochs (`Win_lock_all`,
/// `Win_lock`, `Put`, `Get`, `Accumulate`, `Fetch_and_op`,
/// `Compare_and_swap`, `Win_flush`) on windows of `Win_allocate`,
/// `Win_create` and `Win_create_dynamic`.
#[test]
fn a_coarray_fortran_program_runs_on_opencoarrays_mpich_library() {
    let prefix = installed();
    let dir = scratch("coarrays");
    let mut compile = Command::new(format!("{OPENCOARRAYS}/caf"));
    compile.args(["-g", "-w", "-o", "caf"]).arg(source("coarrays/caf.f90"));
    build(compile, &dir, "caf.f90 with OpenCoarrays' caf (scripts/install-deps installs libcoarrays-mpich-dev)");
    for n in 1..=4 {
        let output = run_on_grappe(&prefix, &dir, n, "./caf");
        let text = describe(&output);
        assert!(output.status.success(), "on {n} images:\n{text}");
        assert!(text.contains(&format!("caf: all checks passed on {n} images")), "on {n} images:\n{text}");
        assert!(!text.contains("FAIL"), "on {n} images:\n{text}");
    }
}

/// OpenCoarrays' own test programs, as Debian builds them with MPICH,
/// each at an image count it runs at. Left out: the `image_fail*` ones
/// (they need OpenCoarrays built with failed-images support, which
/// Debian's is not: their failing image kills itself), `issue-488` (it
/// stops at a Fortran read error on MPICH too), `increment_my_neighbor`
/// (its images get and put their neighbours' coarrays without a `sync
/// all` after the coarrays' initial values are set, which race: it
/// fails now and then on MPICH as on grappe), and, for time, the three
/// slowest (`alloc_comp_multidim_shape`, `get_array`, `send_array`:
/// hundreds of thousands of element-wise lock, get, unlock; they pass,
/// in 5 to 50 s on 2 to 4 images, where MPICH's library takes over 60 s),
/// and `coarray_burgers_pde` (its images read their neighbours' halo
/// values across the periodic boundary, image 1 from the last image and
/// back, but synchronise only with images `me-1` and `me+1`, never across
/// that boundary: a race of the program's, which gives a wrong profile
/// about one run in twenty).
fn opencoarrays_tests_at(images: usize) -> Vec<String> {
    const LEFT_OUT: [&str; 6] = [
        "issue-488-multi-dim-cobounds",
        "coarray_burgers_pde",
        "increment_my_neighbor",
        "alloc_comp_multidim_shape",
        "get_array",
        "send_array",
    ];
    // Those that need exactly 2 images, or at least 8; the others run on 4.
    const AT_2: [&str; 2] = ["issue-515-mimic-mpi-gatherv", "issue-552-send_by_ref-singleton"];
    const AT_8: [&str; 3] = ["sync_team", "team_number", "teams_subset"];
    let images_for = |name: &str| {
        if AT_2.contains(&name) {
            2
        } else if AT_8.contains(&name) {
            8
        } else {
            4
        }
    };
    let dir = Path::new(OPENCOARRAYS).join("OpenCoarrays-2.10.1-tests");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{} ({e}): scripts/install-deps installs libcoarrays-mpich-dev", dir.display()))
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !name.starts_with("image_fail") && !LEFT_OUT.contains(&name.as_str()))
        .filter(|name| images_for(name) == images)
        .collect();
    names.sort();
    names.into_iter().map(|name| dir.join(name).display().to_string()).collect()
}

#[test]
fn opencoarrays_own_test_programs_built_with_mpich_pass_on_grappe() {
    let prefix = installed();
    let dir = scratch("opencoarrays-tests");
    let mut ran = 0;
    for images in [2, 4, 8] {
        for program in opencoarrays_tests_at(images) {
            let output = run_on_grappe(&prefix, &dir, images, &program);
            let text = describe(&output);
            assert!(output.status.success(), "{program} on {images} images:\n{text}");
            // issue-493 ends with STOP on some images, which OpenCoarrays
            // makes MPI_Abort(MPI_COMM_WORLD, 0): a normal end, status 0.
            if program.ends_with("issue-493-coindex-slice") {
                assert!(text.contains("aborts the job with exit code 0"), "{program}:\n{text}");
            } else {
                assert!(text.to_lowercase().contains("test passed"), "{program} on {images} images:\n{text}");
            }
            ran += 1;
        }
    }
    assert!(ran >= 75, "only {ran} of OpenCoarrays' test programs ran");
}

/// The energy NWChem prints on the line that starts with `label`.
fn energy(output: &str, label: &str) -> f64 {
    let line =
        output.lines().find(|l| l.trim_start().starts_with(label)).unwrap_or_else(|| panic!("no {label}:\n{output}"));
    line.rsplit('=').next().unwrap().trim().parse().unwrap_or_else(|e| panic!("{line:?}: {e}"))
}

/// NWChem built with MPICH (its Global Arrays run over ARMCI-MPI: MPI
/// windows with `Win_allocate`, passive-target `Put`/`Get`/`Accumulate`
/// of subarray and hindexed datatypes, `Get_accumulate`, `Fetch_and_op`
/// counters for load balancing): a water SCF and DFT energy
/// (`tests/nwchem/h2o.nw`) on 2 and 3 ranks. The reference energies are
/// what MPICH's own library gives on one rank (on 2 ranks its SCF fails to
/// converge: "ga_iter_lsolve: convergence stagnant").
#[test]
fn nwchem_built_with_mpich_computes_water_s_energies_on_grappe() {
    let prefix = installed();
    let dir = scratch("nwchem");
    std::fs::copy(source("nwchem/h2o.nw"), dir.join("h2o.nw")).expect("copy h2o.nw");
    for n in [2, 3] {
        let output = run_with_args(&prefix, &dir, n, "nwchem.mpich", &["h2o.nw"]);
        let text = describe(&output);
        assert!(output.status.success(), "on {n} ranks (scripts/install-deps installs nwchem-mpich):\n{text}");
        let scf = energy(&text, "Total SCF energy");
        let dft = energy(&text, "Total DFT energy");
        assert!((scf - -76.010481566235).abs() < 1e-8, "SCF energy on {n} ranks: {scf}\n{text}");
        assert!((dft - -76.408740811105).abs() < 1e-7, "DFT energy on {n} ranks: {dft}\n{text}");
    }
}

/// NetPIPE as Debian builds it with MPICH (`NPmpich2`), in its integrity
/// mode (`-i`: every message of every size checked byte for byte, sizes
/// from 1 byte to the bound and 3 bytes either side of each power of two):
/// blocking ping-pong, preposted receives (`-a`) with buffers at odd
/// offsets (`-O 1,3`), synchronous sends (`-S`), and both directions at
/// once (`-2 -a`) on 2 ranks.
#[test]
fn netpipe_built_with_mpich_passes_its_integrity_checks_on_grappe() {
    let prefix = installed();
    let dir = scratch("netpipe");
    let modes: [&[&str]; 4] = [
        &["-u", "1048576"],
        &["-a", "-O", "1,3", "-u", "262144"],
        &["-S", "-u", "262144"],
        &["-2", "-a", "-u", "65536"],
    ];
    for mode in modes {
        let mut args = vec!["-i", "-o", "np.out"];
        args.extend_from_slice(mode);
        let output = run_with_args(&prefix, &dir, 2, "NPmpich2", &args);
        let text = describe(&output);
        assert!(output.status.success(), "NPmpich2 {args:?} (scripts/install-deps installs netpipe-mpich2):\n{text}");
        // One line per size, from each rank under `-2`.
        let sizes = text.lines().filter(|l| l.contains("bytes") && l.contains("-->")).count();
        let passed = text.matches("Integrity check passed").count();
        assert!(sizes >= 20 && passed == sizes, "NPmpich2 {args:?}: {passed} of {sizes} sizes passed:\n{text}");
    }
}

/// The number after `label` on the first line that has it.
fn value_after(output: &str, label: &str) -> f64 {
    let line = output.lines().find(|l| l.contains(label)).unwrap_or_else(|| panic!("no {label}:\n{output}"));
    let rest = &line[line.find(label).unwrap() + label.len()..];
    rest.split_whitespace().next().unwrap().parse().unwrap_or_else(|e| panic!("{line:?}: {e}"))
}

/// BAGEL built with MPICH (`bagel`, quantum chemistry whose ranks each run
/// a pool of threads over MPI at `MPI_THREAD_MULTIPLE`): water's HF, MP2,
/// CASSCF energies and HF gradient (`tests/bagel/h2o.json`) on 3 ranks.
/// The reference values are what MPICH's own library gives on 3 and 4
/// ranks.
#[test]
fn bagel_built_with_mpich_computes_water_s_energies_and_gradient_on_grappe() {
    let prefix = installed();
    let dir = scratch("bagel");
    std::fs::copy(source("bagel/h2o.json"), dir.join("h2o.json")).expect("copy h2o.json");
    let output = run_with_args(&prefix, &dir, 3, "BAGEL", &["h2o.json"]);
    let text = describe(&output);
    assert!(output.status.success(), "scripts/install-deps installs bagel:\n{text}");
    assert!(text.contains("METHOD: FORCE"), "every step ran:\n{text}");
    let mp2 = value_after(&text, "MP2 total energy:");
    assert!((mp2 - -76.1613550504).abs() < 1e-9, "MP2 energy {mp2}\n{text}");
    // The last converged line of each SCF-like step: iteration, (state,) energy.
    let energies: Vec<f64> = text
        .lines()
        .filter_map(|l| {
            let fields: Vec<&str> = l.split_whitespace().collect();
            fields.iter().find(|f| f.starts_with("-7") && f.contains('.')).and_then(|f| f.parse().ok())
        })
        .collect();
    for expected in [-75.96120099, -76.01092981] {
        assert!(energies.iter().any(|e| (e - expected).abs() < 1e-8), "no energy {expected} in {energies:?}\n{text}");
    }
    let gradient: Vec<f64> = text
        .lines()
        .skip_while(|l| !l.contains("Nuclear energy gradient"))
        .filter_map(|l| match l.split_whitespace().collect::<Vec<_>>()[..] {
            ["x" | "y" | "z", value] => value.parse().ok(),
            _ => None,
        })
        .take(9)
        .collect();
    let expected = [0.0, 0.0, 0.0007888115, 0.0, -0.0048743447, -0.0003944058, 0.0, 0.0048743447, -0.0003944058];
    assert_eq!(gradient.len(), 9, "the gradient of three atoms:\n{text}");
    for (got, want) in gradient.iter().zip(expected) {
        assert!((got - want).abs() < 1e-9, "gradient {gradient:?}, expected {expected:?}\n{text}");
    }
}

/// EZTrace's MPI module built with MPICH (`libeztrace-mpich.so`, which
/// `eztrace -t mpich` preloads: it defines the `MPI_` functions, records
/// each call and calls the library's `PMPI_` one) traces a program on 3
/// ranks under grappe: the program's result is right, and the OTF2 trace
/// it writes (read back with `otf2-print`) holds every rank's calls, 4 a
/// round for 10 rounds.
#[test]
fn eztrace_built_with_mpich_traces_a_program_through_the_profiling_interface() {
    let prefix = installed();
    let dir = scratch("eztrace");
    let mut compile = Command::new("mpicc.mpich");
    compile.args(["-g", "-o", "calls"]).arg(source("eztrace/calls.c"));
    build(compile, &dir, "eztrace/calls.c");
    let output = run_with_args(&prefix, &dir, 3, "eztrace", &["-t", "mpich", "-o", "trace", "./calls"]);
    let text = describe(&output);
    assert!(output.status.success(), "scripts/install-deps installs eztrace:\n{text}");
    assert!(text.contains("sum of ranks 3"), "{text}");
    let archive = dir.join("trace/calls_trace/eztrace_log.otf2");
    let read = Command::new("otf2-print").arg(&archive).output().expect("otf2-print runs");
    assert!(read.status.success(), "otf2-print {}:\n{}", archive.display(), String::from_utf8_lossy(&read.stderr));
    let events = String::from_utf8_lossy(&read.stdout).into_owned();
    let enters = events.lines().filter(|l| l.starts_with("ENTER")).count();
    let leaves = events.lines().filter(|l| l.starts_with("LEAVE")).count();
    // Per rank: 4 calls a round, and EZTrace's own "Working" and "EZTrace finalize" regions.
    assert_eq!((enters, leaves), (3 * (4 * 10 + 2), 3 * (4 * 10 + 2)), "{events}");
    let definitions = Command::new("otf2-print").arg("-G").arg(&archive).output().expect("otf2-print -G runs");
    let definitions = String::from_utf8_lossy(&definitions.stdout).into_owned();
    for call in ["MPI_Sendrecv", "MPI_Iallreduce", "MPI_Wait", "MPI_Barrier"] {
        assert!(definitions.contains(&format!("Name: \"{call}\"")), "no region {call}:\n{definitions}");
    }
}
