//! C programs on grappe's MPI library: the conformance tests of `tests/c`
//! (run by `tests/run-c-tests`) built with MPICH's `mpicc.mpich` and with
//! grappe's `mpicc`, under `grappe run`, MPICH's `mpiexec` and Slurm's
//! `srun`; MPICH's binary interface as a whole program exercises it
//! (`tests/c/abi_run.c`: datatypes, topologies, attributes, user
//! operations); what the library exports; mpi4py from PyPI; and what a
//! program that needs more than this version gives hears.
//!
//! Each test installs the library first (see `common::installed`).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use common::{grappe, installed, root};
use grappe_testkit::{describe, run_bounded, scratch};

/// `run-c-tests` with these arguments; its summary on success.
fn conformance(args: &[&str]) -> String {
    conformance_with(&[], args)
}

/// [`conformance`], with these variables set for the tests.
fn conformance_with(env: &[(&str, &str)], args: &[&str]) -> String {
    let mut command = Command::new("bash");
    command.arg(root().join("crates/grappe-mpi/tests/run-c-tests")).args(args);
    command.envs(env.iter().copied());
    let output = run_bounded(command, Duration::from_secs(900));
    let text = describe(&output);
    assert!(output.status.success(), "run-c-tests {args:?} failed:\n{text}");
    assert!(text.contains(" passed, 0 failed"), "no summary:\n{text}");
    text
}

fn lib(prefix: &Path) -> String {
    prefix.join("lib").display().to_string()
}

#[test]
fn mpich_built_c_tests_pass_under_grappe_run() {
    let prefix = installed();
    let launcher = format!("grappe:{}", grappe().display());
    conformance(&["--cc", "mpicc.mpich", "--launcher", &launcher, "--lib", &lib(&prefix), "--ranks", "1 2 3 4"]);
}

/// Every test again with `MPI_Init` at `MPI_THREAD_MULTIPLE`, where
/// blocking calls wait with the library's lock let go and blocking
/// collectives run as requests: the same results, statuses and errors.
#[test]
fn mpich_built_c_tests_pass_under_grappe_run_at_thread_multiple() {
    let prefix = installed();
    let launcher = format!("grappe:{}", grappe().display());
    let env = [("GRAPPE_MPI_THREAD_LEVEL", "multiple")];
    conformance_with(&env, &["--cc", "mpicc.mpich", "--launcher", &launcher, "--lib", &lib(&prefix), "--ranks", "2 4"]);
}

/// The point-to-point, collective and communicator tests on hosts
/// emulated by grappe (ranks of different hosts joined by TCP): among
/// them, `MPI_COMM_TYPE_SHARED` splits by host, each part a shared-memory
/// window's domain.
#[test]
fn mpich_built_c_tests_pass_across_emulated_hosts() {
    let prefix = installed();
    let launcher = format!("grappe:{}", grappe().display());
    let env = [("GRAPPE_EMULATED_HOSTS", "2")];
    let args = ["--cc", "mpicc.mpich", "--launcher", &launcher, "--lib", &lib(&prefix), "--ranks", "2 3 4"];
    conformance_with(&env, &[&args[..], &["comm", "p2p", "coll"]].concat());
}

#[test]
fn c_tests_built_with_grappe_s_mpicc_pass_under_grappe_run() {
    let prefix = installed();
    let mpicc = prefix.join("bin/mpicc").display().to_string();
    let launcher = format!("grappe:{}", grappe().display());
    conformance(&["--cc", &mpicc, "--launcher", &launcher, "--ranks", "2 3"]);
}

#[test]
fn mpich_built_c_tests_pass_on_grappe_s_library_under_mpiexec() {
    let prefix = installed();
    conformance(&["--cc", "mpicc.mpich", "--launcher", "mpiexec", "--lib", &lib(&prefix), "--ranks", "1 3"]);
}

#[test]
fn mpich_built_c_tests_pass_on_grappe_s_library_under_srun() {
    let prefix = installed();
    conformance(&["--cc", "mpicc.mpich", "--launcher", "srun", "--lib", &lib(&prefix), "--ranks", "1 4"]);
}

/// A message of 2^31 + 16 bytes of `MPI_BYTE` (a count no `int` holds)
/// from rank 0 to rank 1 by `MPI_Send_c`/`MPI_Recv_c`, with the rest of
/// `largecount.c`'s checks: 2 GiB for each buffer, so once here rather
/// than in every conformance run.
#[test]
fn a_message_of_more_than_2_31_bytes_goes_through_the_large_count_functions() {
    let prefix = installed();
    let dir = scratch("largecount-big");
    let binary = compile_with_mpich("largecount", dir.path());
    let output = run_on_grappe(&prefix, 2, &[binary.to_str().unwrap(), "big"], &[]);
    let text = describe(&output);
    assert!(output.status.success(), "largecount big on 2 ranks:\n{text}");
    assert!(text.contains("largecount: all checks passed on 2 ranks"), "largecount big on 2 ranks:\n{text}");
}

/// Compiles `tests/c/NAME.c` with `mpicc.mpich` into `dir`.
fn compile_with_mpich(name: &str, dir: &Path) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c").join(format!("{name}.c"));
    let binary = dir.join(name);
    let output = Command::new("mpicc.mpich")
        .args(["-g", "-O2", "-o"])
        .arg(&binary)
        .arg(&source)
        .output()
        .expect("mpicc.mpich runs");
    assert!(output.status.success(), "mpicc.mpich {name}.c:\n{}", describe(&output));
    binary
}

/// `grappe run -n N program args` on the installed library.
fn run_on_grappe(prefix: &Path, n: usize, program: &[&str], extra_env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(grappe());
    command.args(["run", "-n", &n.to_string()]).args(program).env("LD_LIBRARY_PATH", lib(prefix));
    for (k, v) in extra_env {
        command.env(k, v);
    }
    run_bounded(command, Duration::from_secs(120))
}

/// The line of `source` that holds `marker`, 1-based.
fn line_of(source: &str, marker: &str) -> usize {
    source.lines().position(|line| line.contains(marker)).unwrap_or_else(|| panic!("no {marker:?} in the source")) + 1
}

/// A traced C program's calls are recorded at its own lines: each call
/// notes its return address, which the trace tools resolve from the
/// program's debug information. At every thread level: under
/// `MPI_THREAD_MULTIPLE` blocking calls run as requests, and are still
/// recorded as the blocking calls they are.
#[test]
fn a_traced_c_program_s_calls_are_recorded_at_its_own_lines() {
    let prefix = installed();
    let dir = scratch("traced-sites");
    let binary = compile_with_mpich("traced_sites", &dir);
    let source = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/traced_sites.c")).unwrap();
    for level in ["single", "multiple"] {
        let trace = dir.join(format!("trace-{level}"));
        let program = ["--trace", trace.to_str().unwrap(), binary.to_str().unwrap()];
        let output = run_on_grappe(&prefix, 2, &program, &[("GRAPPE_MPI_THREAD_LEVEL", level)]);
        assert!(output.status.success(), "traced_sites at {level}:\n{}", describe(&output));
        let mut profile = Command::new(grappe());
        profile.args(["trace", "profile", "--json"]).arg(&trace);
        let profile = run_bounded(profile, Duration::from_secs(60));
        assert!(profile.status.success(), "grappe trace profile:\n{}", describe(&profile));
        let json: serde_json::Value = serde_json::from_slice(&profile.stdout).expect("the profile is JSON");
        let sites: Vec<(String, String)> = json["sites"]
            .as_array()
            .expect("a list of sites")
            .iter()
            .map(|s| (s["call"].as_str().unwrap_or("").to_owned(), s["site"].as_str().unwrap_or("").to_owned()))
            .collect();
        for call in ["send", "recv", "allreduce", "barrier"] {
            let line = line_of(&source, &format!("/* site: {call} */"));
            let at: Vec<&String> = sites.iter().filter(|(c, _)| c == call).map(|(_, site)| site).collect();
            let expected = format!("traced_sites.c:{line}:");
            assert!(
                !at.is_empty() && at.iter().all(|site| site.contains(&expected)),
                "at {level}: {call} recorded at {at:?}, expected at {expected}; every site: {sites:?}"
            );
        }
    }
}

/// Below `MPI_THREAD_MULTIPLE` the library takes no lock (MPI's rule:
/// no two calls overlap); a program that breaks the rule gets a clear
/// error and a job that ends, not a corrupted state.
#[test]
fn calls_that_overlap_below_thread_multiple_end_the_job_with_the_reason() {
    let prefix = installed();
    let dir = scratch("misuse");
    let binary = compile_with_mpich("thread_misuse", dir.path());
    let output = run_on_grappe(&prefix, 1, &[binary.to_str().unwrap()], &[]);
    let text = describe(&output);
    assert!(!output.status.success(), "the job fails:\n{text}");
    assert!(text.contains("called while another call is inside the MPI library"), "the reason:\n{text}");
    assert!(text.contains("MPI_THREAD_MULTIPLE"), "what would allow it:\n{text}");
}

/// A wait for a generalized request that nothing can complete (below
/// `MPI_THREAD_MULTIPLE` no call runs during the wait) fails at once,
/// saying why, instead of hanging; once completed, the request is waited
/// for as usual.
#[test]
fn a_wait_for_a_generalized_request_nothing_can_complete_fails_instead_of_hanging() {
    let prefix = installed();
    let dir = scratch("grequest-misuse");
    let binary = compile_with_mpich("grequest_misuse", dir.path());
    let output = run_on_grappe(&prefix, 1, &[binary.to_str().unwrap()], &[]);
    let text = describe(&output);
    assert!(output.status.success(), "the program goes on:\n{text}");
    assert!(
        text.contains("returned: MPI_Wait: waiting for a generalized request that MPI_Grequest_complete"),
        "the reason:\n{text}"
    );
    assert!(text.contains("after completion: success, request freed"), "the wait after completion:\n{text}");
}

/// Remote leaders named in the wrong group: every rank's
/// `MPI_Intercomm_create` fails, the leaders saying why and their groups
/// told by them, instead of a job that waits forever.
#[test]
fn an_intercommunicator_with_a_leader_in_the_wrong_group_fails_on_every_rank() {
    leaders_in_the_wrong_group_fail(&[]);
}

/// The same at `MPI_THREAD_MULTIPLE`, where the leaders exchange their
/// groups and tell them with the library's lock let go.
#[test]
fn an_intercommunicator_with_a_leader_in_the_wrong_group_fails_on_every_rank_at_thread_multiple() {
    leaders_in_the_wrong_group_fail(&[("GRAPPE_MPI_THREAD_LEVEL", "multiple")]);
}

fn leaders_in_the_wrong_group_fail(env: &[(&str, &str)]) {
    let prefix = installed();
    let dir = scratch("intercomm-misuse");
    let binary = compile_with_mpich("intercomm_misuse", dir.path());
    let output = run_on_grappe(&prefix, 4, &[binary.to_str().unwrap()], env);
    let text = describe(&output);
    assert!(output.status.success(), "every rank returns:\n{text}");
    for leader in [0, 2] {
        let line = format!(
            "rank {leader}: MPI_Intercomm_create: remote leader {leader} of the peer communicator is world rank {leader}, a member of the local group"
        );
        assert!(text.contains(&line), "leader {leader}'s reason:\n{text}");
    }
    for member in [1, 3] {
        let line = format!(
            "rank {member}: MPI_Intercomm_create: the group's leader, world rank {}, could not join",
            member - 1
        );
        assert!(text.contains(&line), "member {member} told by its leader:\n{text}");
    }
}

#[test]
fn a_whole_mpich_program_of_every_group_runs_unchanged() {
    let prefix = installed();
    let dir = scratch("abi-run");
    let binary = compile_with_mpich("abi_run", dir.path());
    for n in [2, 3] {
        let output = run_on_grappe(&prefix, n, &[binary.to_str().unwrap()], &[]);
        let text = describe(&output);
        assert!(output.status.success(), "abi_run on {n} ranks:\n{text}");
        assert!(text.contains(&format!("checks passed on {n} ranks")), "abi_run on {n} ranks:\n{text}");
    }
}

#[test]
fn the_library_exports_mpich_s_functions_as_weak_mpi_and_strong_pmpi_symbols() {
    let prefix = installed();
    let output = Command::new("nm").args(["-D", "--defined-only"]).arg(prefix.join("lib/libmpi.so.12")).output();
    let symbols = String::from_utf8(output.expect("nm runs").stdout).expect("text");
    let listed = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("abi/functions.txt")).unwrap();
    let names: Vec<&str> = listed.lines().filter(|l| l.starts_with("MPI_")).collect();
    assert!(names.len() > 400, "{} functions listed", names.len());
    for name in names {
        assert!(symbols.contains(&format!(" W {name}\n")), "{name} is not a weak symbol of libmpi.so.12");
        assert!(symbols.contains(&format!(" T P{name}\n")), "P{name} is not a symbol of libmpi.so.12");
    }
    for object in ["MPI_UNWEIGHTED", "MPI_F_STATUS_IGNORE", "MPIR_Dup_fn"] {
        assert!(symbols.contains(&format!(" {object}\n")), "{object} is missing");
    }
    let leaked: Vec<&str> = symbols
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .filter(|s| !s.starts_with("MPI") && !s.starts_with("PMPI"))
        .collect();
    assert!(leaked.is_empty(), "symbols other than MPI's are exported: {:?}", &leaked[..leaked.len().min(10)]);
}

#[test]
fn an_unsupported_function_fails_with_its_name_and_ends_the_job_by_default() {
    let prefix = installed();
    let dir = scratch("unsupported");
    let binary = compile_with_mpich("unsupported", dir.path());
    let returned = run_on_grappe(&prefix, 2, &[binary.to_str().unwrap()], &[]);
    let text = describe(&returned);
    assert!(returned.status.success(), "under MPI_ERRORS_RETURN:\n{text}");
    assert!(text.contains("as expected") && text.contains("MPI_Open_port"), "{text}");
    let fatal = run_on_grappe(&prefix, 2, &[binary.to_str().unwrap(), "fatal"], &[]);
    let text = describe(&fatal);
    assert!(!fatal.status.success(), "the default handler must end the job:\n{text}");
    assert!(text.contains("fatal error in MPI_Open_port") && text.contains("not supported"), "{text}");
}

/// A file's error handler, or `MPI_FILE_NULL`'s, set to
/// `MPI_ERRORS_ARE_FATAL` ends the job at a file error, naming the call
/// and the file (the default for files is `MPI_ERRORS_RETURN`).
#[test]
fn a_fatal_error_handler_on_files_ends_the_job_naming_the_call_and_the_file() {
    let prefix = installed();
    let dir = scratch("io-fatal");
    let binary = compile_with_mpich("io_fatal", dir.path());
    let missing = dir.path().join("missing.dat");
    let output = run_on_grappe(&prefix, 2, &[binary.to_str().unwrap(), "open", missing.to_str().unwrap()], &[]);
    let text = describe(&output);
    assert!(!output.status.success() && !text.contains("survived"), "the job goes on:\n{text}");
    assert!(text.contains("fatal error in MPI_File_open") && text.contains("missing.dat"), "{text}");
    let read_only = dir.path().join("read-only.dat");
    let output = run_on_grappe(&prefix, 2, &[binary.to_str().unwrap(), "write", read_only.to_str().unwrap()], &[]);
    let text = describe(&output);
    assert!(!output.status.success() && !text.contains("survived"), "the job goes on:\n{text}");
    assert!(
        text.contains("fatal error in MPI_File_write_at") && text.contains("read-only.dat was opened MPI_MODE_RDONLY"),
        "{text}"
    );
}

/// A window's handler is `MPI_ERRORS_ARE_FATAL` by default, whatever its
/// communicator's: an access past the target's window ends the job,
/// naming the call, the target rank and the displacement.
#[test]
fn a_window_s_default_handler_ends_the_job_naming_the_call_and_the_target() {
    let prefix = installed();
    let dir = scratch("rma-fatal");
    let binary = compile_with_mpich("rma_fatal", dir.path());
    let output = run_on_grappe(&prefix, 2, &[binary.to_str().unwrap()], &[]);
    let text = describe(&output);
    assert!(!output.status.success() && !text.contains("survived"), "the job goes on:\n{text}");
    assert!(text.contains("fatal error in MPI_Put") && text.contains("target rank 1, displacement 7"), "{text}");
}

#[test]
fn a_c_program_as_thread_ranks_is_refused_with_the_reason() {
    let prefix = installed();
    let dir = scratch("threads");
    let binary = compile_with_mpich("env", dir.path());
    let output = run_on_grappe(&prefix, 2, &["--threads", binary.to_str().unwrap()], &[]);
    let text = describe(&output);
    assert!(!output.status.success(), "{text}");
    assert!(text.contains("runs one rank per process") && text.contains("hosts 2 ranks"), "{text}");
}

#[test]
fn mpi4py_from_pypi_runs_on_grappe() {
    let prefix = installed();
    let dir = scratch("mpi4py");
    let script = dir.path().join("prog.py");
    std::fs::write(
        &script,
        "from mpi4py import MPI\n\
         comm = MPI.COMM_WORLD\n\
         r, n = comm.Get_rank(), comm.Get_size()\n\
         total = comm.allreduce(r, op=MPI.SUM)\n\
         obj = comm.bcast({'x': [1, 2, 3]} if r == 0 else None, root=0)\n\
         got = comm.sendrecv(r, dest=(r + 1) % n, source=(r - 1) % n)\n\
         assert MPI.Get_library_version().startswith('grappe')\n\
         print('rank', r, 'of', n, 'total', total, 'obj', obj['x'], 'got', got, flush=True)\n",
    )
    .unwrap();
    let libmpi = prefix.join("lib/libmpi.so.12").display().to_string();
    let output = run_on_grappe(&prefix, 3, &["python3", script.to_str().unwrap()], &[("MPI4PY_LIBMPI", &libmpi)]);
    let text = describe(&output);
    assert!(output.status.success(), "{text}");
    for r in 0..3 {
        let expected = format!("rank {r} of 3 total 3 obj [1, 2, 3] got {}", (r + 2) % 3);
        assert!(text.contains(&expected), "missing {expected:?}:\n{text}");
    }
}

#[test]
fn a_c_rank_is_bound_to_its_core_as_a_rust_rank_is() {
    let prefix = installed();
    let dir = scratch("affinity");
    let binary = compile_with_mpich("affinity", dir.path());
    let output = run_on_grappe(&prefix, 2, &[binary.to_str().unwrap()], &[]);
    let text = describe(&output);
    assert!(output.status.success(), "{text}");
    for rank in 0..2 {
        assert!(text.contains(&format!("rank {rank} runs on 1 cpus")), "rank {rank} is not bound:\n{text}");
    }
    let unbound = run_on_grappe(&prefix, 2, &[binary.to_str().unwrap()], &[("GRAPPE_BIND", "none")]);
    let text = describe(&unbound);
    let cpus = grappe_testkit_cpus();
    assert!(text.contains(&format!("rank 0 runs on {cpus} cpus")), "GRAPPE_BIND=none leaves it unbound:\n{text}");
}

/// The CPUs this test may run on (what an unbound rank inherits).
fn grappe_testkit_cpus() -> usize {
    let set = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).expect("this thread's affinity");
    (0..nix::sched::CpuSet::count()).filter(|&cpu| set.is_set(cpu).unwrap_or(false)).count()
}
