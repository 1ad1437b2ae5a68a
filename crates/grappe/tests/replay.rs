//! `grappe run --record-matches F` and `--replay-matches F`: a replay
//! makes every wildcard receive match what it matched in the recorded
//! run, and a program that does not follow the log fails, naming the rank
//! and the call, instead of waiting forever.

mod util;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use grappe_trace::{Body, TraceFile, file_for};

const LIMIT: Duration = Duration::from_secs(120);
const TASKS: &str = "120";
const WORK: &str = "3000";

fn master_worker(flags: &[&std::ffi::OsStr], tasks: &str, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(util::grappe());
    cmd.args(["run", "-n", "4"]).args(flags).arg(util::example("master_worker")).args([tasks, WORK]);
    cmd.envs(env.iter().copied());
    util::run_bounded(cmd, LIMIT)
}

/// (source, tag) of each receive rank `rank` recorded, in its order.
fn received(dir: &Path, rank: u32) -> Vec<(u32, i32)> {
    let mut trace = TraceFile::open(&file_for(dir, rank)).unwrap_or_else(|e| panic!("{e}"));
    let mut out = Vec::new();
    while let Some(block) = trace.next_events().unwrap_or_else(|e| panic!("{e}")) {
        for event in block {
            if let Body::Recv { src, tag, comm: 0, .. } = event.body {
                out.push((src, tag));
            }
        }
    }
    out
}

/// (source, tag) matched by each line of a rank's match log.
fn logged(base: &Path, rank: usize) -> Vec<(u32, i32)> {
    let text = std::fs::read_to_string(format!("{}.{rank}", base.display())).expect("a match log per rank");
    text.lines()
        .skip(1)
        .map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            (f[3].parse().unwrap(), f[4].parse().unwrap())
        })
        .collect()
}

fn stdout_field(output: &Output, field: &str) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout);
    stdout
        .split_whitespace()
        .find_map(|w| w.strip_prefix(field))
        .unwrap_or_else(|| panic!("no {field}: {stdout}"))
        .into()
}

#[test]
fn a_replayed_master_worker_run_matches_what_the_recorded_run_matched_rank_by_rank() {
    let scratch = grappe_testkit::scratch("replay");
    let (log, first, again) = (scratch.join("matches"), scratch.join("first"), scratch.join("again"));
    let record = master_worker(
        &["--record-matches".as_ref(), log.as_os_str(), "--trace".as_ref(), first.as_os_str()],
        TASKS,
        &[],
    );
    assert!(record.status.success(), "{}", util::describe(&record));
    for rank in 0..4 {
        assert_eq!(logged(&log, rank), received(&first, rank as u32), "rank {rank}: the log is what the trace saw");
    }
    assert_eq!(logged(&log, 0).len(), 120, "the master logged one wildcard receive per result");
    // The replay is traced, with a heavy cost per event: its timing differs,
    // its path must not.
    let replay = master_worker(
        &["--replay-matches".as_ref(), log.as_os_str(), "--trace".as_ref(), again.as_os_str()],
        TASKS,
        &[("GRAPPE_TRACE_EXTRA_COST_NS", "20000")],
    );
    assert!(replay.status.success(), "{}", util::describe(&replay));
    for rank in 0..4u32 {
        assert_eq!(received(&again, rank), received(&first, rank), "rank {rank}: the replay's receives");
    }
    assert_eq!(stdout_field(&replay, "tasks_per_worker="), stdout_field(&record, "tasks_per_worker="));
    assert_eq!(stdout_field(&replay, "checksum="), stdout_field(&record, "checksum="));
}

#[test]
fn a_program_that_outruns_or_contradicts_the_log_fails_naming_rank_and_call() {
    let scratch = grappe_testkit::scratch("replay-diverge");
    let log = scratch.join("matches");
    let record = master_worker(&["--record-matches".as_ref(), log.as_os_str()], TASKS, &[]);
    assert!(record.status.success(), "{}", util::describe(&record));

    // More tasks: the master's log runs out at its 120th wildcard receive,
    // unless a worker sees first a task where its log says "stop".
    let more = master_worker(&["--replay-matches".as_ref(), log.as_os_str()], "200", &[]);
    assert!(!more.status.success(), "{}", util::describe(&more));
    let stderr = String::from_utf8_lossy(&more.stderr);
    let master_ran_out = stderr.contains("rank 0: wildcard call #120") && stderr.contains("the log ran out");
    let worker_saw_a_task = stderr.contains("the log says source 0 tag 2, but the next message from 0 has tag 1");
    assert!(master_ran_out || worker_saw_a_task, "{stderr}");

    // A log whose first line asks another selector than the program does.
    let text = std::fs::read_to_string(format!("{}.0", log.display())).unwrap();
    let changed = text.replacen(" * 3 ", " * 4 ", 1);
    std::fs::write(format!("{}.0", log.display()), changed).unwrap();
    let other = master_worker(&["--replay-matches".as_ref(), log.as_os_str()], TASKS, &[]);
    assert!(!other.status.success(), "{}", util::describe(&other));
    let stderr = String::from_utf8_lossy(&other.stderr);
    assert!(stderr.contains("rank 0: wildcard call #0") && stderr.contains("any source, tag 4"), "{stderr}");
}

#[test]
fn a_replay_whose_ranks_wait_for_each_other_fails_instead_of_hanging() {
    let scratch = grappe_testkit::scratch("replay-stall");
    let log = scratch.join("matches");
    let record = master_worker(&["--record-matches".as_ref(), log.as_os_str()], TASKS, &[]);
    assert!(record.status.success(), "{}", util::describe(&record));
    // Fewer tasks: a worker's log says "a task" where the master sends "stop",
    // or waits for a task that never comes.
    let fewer =
        master_worker(&["--replay-matches".as_ref(), log.as_os_str()], "40", &[("GRAPPE_REPLAY_PATIENCE_S", "2")]);
    assert!(!fewer.status.success(), "{}", util::describe(&fewer));
    let stderr = String::from_utf8_lossy(&fewer.stderr);
    assert!(stderr.contains("cannot follow the match log") && stderr.contains("wildcard call #"), "{stderr}");
}

#[test]
fn a_missing_log_is_refused_at_start_with_its_path() {
    let scratch = grappe_testkit::scratch("replay-missing");
    let log = scratch.join("nothing");
    let output = master_worker(&["--replay-matches".as_ref(), log.as_os_str()], TASKS, &[]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("cannot replay the match log")
            && stderr.contains("nothing.")
            && stderr.contains("No such file"),
        "{stderr}"
    );
}
