//! The launcher library with real child processes (pmi-probe) and captured output.

mod support;

use grappe_launch::launcher::{
    ExitKind, JobFailure, LaunchError, LaunchSpec, Layout, OutputMode, ProcessFailure, launch,
};
use std::path::Path;
use std::time::Duration;
use support::{assert_all_gone, ok_count, probe_lines};

fn probe_spec(ranks: usize, args: &[&str]) -> LaunchSpec {
    let mut spec = LaunchSpec::new(support::probe(), ranks);
    spec.args = args.iter().map(Into::into).collect();
    spec.output = OutputMode::Capture;
    spec.timeout = Some(Duration::from_secs(60)); // Only against a hang of the test itself.
    spec
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn four_processes_exchange_cards_over_pmi1() {
    let outcome = launch(&probe_spec(4, &[])).unwrap();
    let stdout = text(&outcome.stdout);
    assert!(outcome.success(), "{:?}\n{stdout}{}", outcome.failure, text(&outcome.stderr));
    assert_eq!(outcome.exit_code(), 0);
    let lines = probe_lines(&outcome.stdout);
    assert_eq!(lines.iter().map(|l| l.rank).collect::<Vec<_>>(), [0, 1, 2, 3]);
    for line in &lines {
        assert_eq!((line.size, line.kind.as_str()), (4, "pmi1"), "{line:?}");
        assert_eq!(line.job, outcome.job_id, "the kvsname is the job id");
        assert_eq!(line.ranks_per_process, 1);
    }
    assert_eq!(ok_count(&outcome.stdout), 4, "{stdout}");
    for record in &outcome.processes {
        assert_eq!(record.exit, Some(ExitKind::Code(0)));
        assert!(record.finalized);
    }
    assert_all_gone(&lines.iter().map(|l| l.pid).collect::<Vec<_>>());
}

#[test]
fn threads_per_process_gives_fewer_processes_with_blocks_of_ranks() {
    let mut spec = probe_spec(4, &[]);
    spec.layout = Layout::ThreadsPerProcess(2);
    spec.label = true;
    let outcome = launch(&spec).unwrap();
    assert!(outcome.success(), "{:?}", outcome.failure);
    let lines = probe_lines(&outcome.stdout);
    assert_eq!(lines.len(), 2, "{}", text(&outcome.stdout));
    assert!(lines.iter().all(|l| l.size == 2 && l.ranks_per_process == 2), "{lines:?}");
    let stdout = text(&outcome.stdout);
    for line in stdout.lines() {
        let expected = match line.contains("rank 0") {
            true => "[0-1] pmi-probe: ",
            false => "[2-3] pmi-probe: ",
        };
        assert!(line.starts_with(expected), "{line:?}");
    }
    let blocks: Vec<_> = outcome.processes.iter().map(|p| p.info.ranks.to_string()).collect();
    assert_eq!(blocks, ["0-1", "2-3"]);
}

#[test]
fn threads_layout_is_one_process_hosting_every_rank() {
    let mut spec = probe_spec(3, &[]);
    spec.layout = Layout::Threads;
    spec.label = true;
    let outcome = launch(&spec).unwrap();
    assert!(outcome.success(), "{:?}", outcome.failure);
    let lines = probe_lines(&outcome.stdout);
    assert_eq!(lines.len(), 1);
    assert_eq!((lines[0].size, lines[0].ranks_per_process), (1, 3));
    assert!(text(&outcome.stdout).lines().all(|l| l.starts_with("[0-2] ")));
}

#[test]
fn leftover_shared_memory_of_the_job_is_removed() {
    let outcome = launch(&probe_spec(2, &["--shm"])).unwrap();
    assert!(outcome.success(), "{:?}", outcome.failure);
    assert_eq!(outcome.removed_shm_files.len(), 2, "{:?}", outcome.removed_shm_files);
    for (rank, path) in outcome.removed_shm_files.iter().enumerate() {
        let name = format!("grappe-{}-probe-{rank}", outcome.job_id);
        assert_eq!(path, &Path::new("/dev/shm").join(name));
        assert!(!path.exists());
    }
}

#[test]
fn a_failing_process_is_reported_and_the_others_are_stopped() {
    let outcome = launch(&probe_spec(3, &["--fail", "2:exit3", "--shm"])).unwrap();
    let Some(JobFailure::Process { process, failure }) = &outcome.failure else { panic!("{:?}", outcome.failure) };
    assert_eq!((process.index, failure), (2, &ProcessFailure::Exited(3)));
    assert_eq!(outcome.exit_code(), 3);
    // The others were in the barrier waiting for rank 2: SIGTERM ended them.
    for record in outcome.processes.iter().filter(|p| p.info.index != 2) {
        assert_eq!(record.exit, Some(ExitKind::Signal(15)), "{record:?}");
    }
    assert_eq!(outcome.removed_shm_files.len(), 3, "cleanup after a failure too");
    assert_all_gone(&outcome.processes.iter().map(|p| p.info.pid).collect::<Vec<_>>());
}

#[test]
fn garbage_on_the_pmi_socket_is_a_protocol_failure() {
    let mut spec = LaunchSpec::new("bash", 2);
    spec.args = ["-c", "echo 'this is not PMI' >&$PMI_FD; sleep 30"].map(Into::into).to_vec();
    spec.output = OutputMode::Capture;
    let outcome = launch(&spec).unwrap();
    let failure = outcome.failure.expect("the job must fail");
    let line = failure.to_string();
    assert!(line.contains("malformed PMI-1 line") && line.contains("this"), "{line}");
    assert_eq!(failure.exit_code(), 1);
}

#[test]
fn a_program_that_cannot_run_is_refused_before_anything_starts() {
    let err = launch(&LaunchSpec::new("/nonexistent/grappe-prog", 2)).unwrap_err();
    assert!(matches!(err, LaunchError::ProgramNotFound { .. }), "{err}");
    assert!(err.to_string().contains("/nonexistent/grappe-prog"), "{err}");
    let mut spec = LaunchSpec::new(support::probe(), 3);
    spec.layout = Layout::ThreadsPerProcess(2);
    assert!(matches!(launch(&spec), Err(LaunchError::UnevenThreads { ranks: 3, per_process: 2 })));
}
