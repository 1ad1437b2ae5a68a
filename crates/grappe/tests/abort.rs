//! Ending a job from a rank: `Communicator::abort` (MPI_Abort) ends every
//! process with its exit code under `grappe run`, MPICH's `mpiexec` and
//! Slurm's `srun`; a communicator whose errors are fatal ends the job at
//! its first error (MPI_ERRORS_ARE_FATAL), and returns errors otherwise
//! (MPI_ERRORS_RETURN, the default). Either says so in one line naming the
//! rank and the code or error, and keeps the rank's trace.

mod util;

use std::process::{Command, Output};
use std::time::Duration;

use grappe::{Communicator, Error, ErrorHandler};

const LIMIT: Duration = Duration::from_secs(60);

/// `faulty` with `fault` (and `extra` environment) under `launcher`.
fn faulty(mut launcher: Command, fault: &str, extra: &[(&str, &str)]) -> Output {
    launcher.env("GRAPPE_FAULT", fault).envs(extra.iter().copied()).arg(util::example("faulty"));
    util::run_bounded(launcher, LIMIT)
}

fn grappe_run(args: &[&str]) -> Command {
    let mut cmd = Command::new(util::grappe());
    cmd.arg("run").args(args).args(["--timeout", "20s"]);
    cmd
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The lines that start with `grappe: `.
fn grappe_lines(output: &Output) -> Vec<String> {
    stderr(output).lines().filter(|line| line.starts_with("grappe: ")).map(str::to_owned).collect()
}

#[test]
fn an_abort_ends_the_job_with_its_code_under_grappe_run() {
    for (layout, process) in [
        (&["-n", "3"][..], "rank 1 ("),
        (&["-n", "3", "--threads"], "ranks 0-2 (process 0, "),
        (&["-n", "4", "--threads-per-process", "2"], "ranks 0-1 (process 0, "),
    ] {
        let output = faulty(grappe_run(layout), "abort:1:5", &[]);
        let said = util::describe(&output);
        assert_eq!(output.status.code(), Some(5), "{layout:?}: {said}");
        let lines = grappe_lines(&output);
        assert!(lines.contains(&"grappe: rank 1 aborts the job with exit code 5".to_owned()), "{layout:?}: {said}");
        let launcher = format!("grappe: {process}pid ");
        let stopped = lines.iter().find(|line| line.ends_with("; stopping the job"));
        assert!(
            stopped.is_some_and(|line| line.starts_with(&launcher)
                && line.ends_with(") called PMI abort with exit code 5; stopping the job")),
            "{layout:?}: the launcher names the aborting process: {said}"
        );
    }
}

/// Hydra exits with the abort's code. (It may kill the job before it has
/// forwarded the rank's line, as it may MPICH's own `Abort(5) on node 1`:
/// the line is not asserted here.)
#[test]
fn an_abort_ends_the_job_with_its_code_under_mpich_mpiexec() {
    let mut mpiexec = Command::new(util::system_command("mpiexec.mpich", "mpich"));
    mpiexec.args(["-n", "3"]);
    let output = faulty(mpiexec, "abort:1:5", &[]);
    assert_eq!(output.status.code(), Some(5), "{}", util::describe(&output));
}

/// Slurm kills the whole step on a PMI-2 abort and exits with the status
/// of the tasks it killed (137), as it does for MPICH's own MPI_Abort; the
/// aborting task exits with the code, which srun reports.
#[test]
fn an_abort_ends_the_slurm_step_and_its_task_exits_with_the_code() {
    let conf = std::env::var("SLURM_CONF").unwrap_or_else(|_| {
        panic!("SLURM_CONF is not set: start the test Slurm with ../shared/slurm/slurm-ci.sh start (scripts/test does)")
    });
    let mut srun = Command::new(util::system_command("srun", "slurm-wlm"));
    srun.env("SLURM_CONF", conf).args(["-n", "3", "--time=2"]);
    let output = faulty(srun, "abort:1:5", &[]);
    let said = util::describe(&output);
    assert!(!output.status.success(), "{said}");
    assert!(grappe_lines(&output).contains(&"grappe: rank 1 aborts the job with exit code 5".to_owned()), "{said}");
    assert!(stderr(&output).contains("task 1: Exited with exit code 5"), "{said}");
}

#[test]
fn an_aborting_rank_keeps_its_trace() {
    for fault in ["abort:1:5", "fatal:1"] {
        let dir = grappe_testkit::scratch(&format!("abort-trace-{}", fault.replace(':', "-")));
        let output = faulty(grappe_run(&["-n", "2", "--trace", &dir.path().to_string_lossy()]), fault, &[]);
        assert!(!output.status.success(), "{fault}: {}", util::describe(&output));
        let mut trace = grappe_trace::TraceFile::open(&grappe_trace::file_for(dir.path(), 1))
            .unwrap_or_else(|e| panic!("{fault}: rank 1's trace: {e}"));
        while trace.next_events().unwrap_or_else(|e| panic!("{fault}: {e}")).is_some() {}
        assert!(
            matches!(trace.ending(), Some(grappe_trace::Ending::Complete(_))),
            "{fault}: the aborting rank's trace is finished: {:?}",
            trace.ending()
        );
    }
}

#[test]
fn a_fatal_error_ends_the_job_naming_the_rank_and_the_error() {
    let output = faulty(grappe_run(&["-n", "3"]), "fatal:1", &[]);
    let said = util::describe(&output);
    assert_eq!(output.status.code(), Some(grappe::FATAL_ERROR_EXIT_CODE), "{said}");
    let lines = grappe_lines(&output);
    let diagnostic = "grappe: rank 1 aborts the job: fatal error in send: invalid rank 3 for a communicator of size 3";
    assert!(lines.contains(&diagnostic.to_owned()), "{said}");
    assert!(lines.iter().any(|line| line.ends_with("called PMI abort with exit code 1; stopping the job")), "{said}");
}

/// Every rank's errors are fatal; rank 1 panics. The others' calls fail
/// because of it: they stop, and the job is reported in rank 1's name, not
/// aborted in theirs.
#[test]
fn a_fatal_error_that_follows_another_failure_does_not_take_its_place() {
    let output = faulty(grappe_run(&["-n", "3"]), "panic:1", &[("GRAPPE_FAULT_ERRORS", "fatal")]);
    let said = util::describe(&output);
    assert_eq!(output.status.code(), Some(1), "{said}");
    let lines = grappe_lines(&output);
    assert!(lines.iter().any(|line| line.starts_with("grappe: rank 1 failed: panicked")), "{said}");
    let stopped: Vec<&String> = lines.iter().filter(|line| line.ends_with("; stopping the job")).collect();
    assert!(
        stopped.len() == 1
            && stopped[0].starts_with("grappe: rank 1 (pid ")
            && stopped[0].contains("exited with status 1"),
        "{said}"
    );
    for line in lines.iter().filter(|line| line.starts_with("grappe: rank 0 ") || line.starts_with("grappe: rank 2 ")) {
        assert!(line.contains(" stopped: fatal error in "), "{said}");
    }
}

#[test]
fn errors_are_returned_by_default_and_new_communicators_take_their_parents_handler() {
    let handlers = grappe::testing::threads(2, |world: &Communicator| {
        assert_eq!(world.error_handler(), ErrorHandler::Return);
        let refused = world.send(&0u8, 2, 0);
        assert!(matches!(refused, Err(Error::InvalidRank { rank: 2, size: 2 })), "{refused:?}");
        let default_dup = world.dup().unwrap().error_handler();
        world.set_error_handler(ErrorHandler::Fatal);
        let fatal_dup = world.dup().unwrap().error_handler();
        let fatal_split = world.split(Some(0), 0).unwrap().unwrap().error_handler();
        world.set_error_handler(ErrorHandler::Return);
        (default_dup, fatal_dup, fatal_split, world.error_handler())
    });
    for got in handlers {
        assert_eq!(got, (ErrorHandler::Return, ErrorHandler::Fatal, ErrorHandler::Fatal, ErrorHandler::Return));
    }
}
