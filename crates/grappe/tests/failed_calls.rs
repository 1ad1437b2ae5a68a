//! The calls that fail because a peer died or the job was stopped are
//! recorded, marked failed, with the dates of their wait; the trace tools
//! show them, and never pair them with a message.

mod util;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use grappe_trace::{ANY, Body, CollectiveKind, Completion, Event, TraceFile, file_for};

/// The victim sleeps this long between the barrier all ranks pass and
/// its failure (see the `faulty` example): the least a survivor waits.
const VICTIM_SLEEPS: u64 = 300_000_000;

fn read(path: &Path) -> Vec<Event> {
    let mut trace = TraceFile::open(path).unwrap_or_else(|e| panic!("{e}"));
    let mut events = Vec::new();
    while let Some(block) = trace.next_events().unwrap_or_else(|e| panic!("{e}")) {
        events.extend(block);
    }
    events
}

/// `faulty` on 6 ranks, rank 2 failing with `fault`, the survivors waiting
/// for it in a receive (0), a sendrecv (1), a wait (3), a probe (4) and a
/// barrier (5), traced into `dir`.
fn run_faulty(fault: &str, layout: &[&str], dir: &Path) {
    let mut cmd = Command::new(util::grappe());
    cmd.env("GRAPPE_FAULT", fault).env("GRAPPE_FAULT_WAIT", "calls");
    cmd.arg("run").args(layout).arg("--trace").arg(dir).arg(util::example("faulty"));
    let output = util::run_bounded(cmd, Duration::from_secs(60));
    assert!(!output.status.success(), "{fault}: {}", util::describe(&output));
}

/// The one failed call of `rank`, after its first barrier, which it
/// waited in from before the victim failed: its body.
fn failed_call_of(dir: &Path, rank: u32) -> Body {
    let events = read(&file_for(dir, rank));
    let failed: Vec<&Event> = events.iter().filter(|e| e.body.failed()).collect();
    // A sendrecv is a send and a receive, both failed here.
    let calls = if rank == 1 { 2 } else { 1 };
    assert_eq!(failed.len(), calls, "rank {rank}: {failed:?}");
    let barrier = events.iter().find(|e| matches!(e.body, Body::Collective { failed: false, .. }));
    let barrier_end = barrier.unwrap_or_else(|| panic!("rank {rank}: no first barrier")).end;
    let call = failed[calls - 1];
    assert!(call.start >= barrier_end, "rank {rank}: {call:?} starts before the barrier's end {barrier_end}");
    // The call ends once the victim failed, which is VICTIM_SLEEPS after
    // the barrier whatever the load (a survivor descheduled after the
    // barrier starts its call late, but cannot end it early).
    let (waited, after_barrier) = (call.end - call.start, call.end - barrier_end);
    assert!(waited > 0, "rank {rank}: {call:?} did not wait");
    assert!(
        (VICTIM_SLEEPS * 2 / 3..10_000_000_000).contains(&after_barrier),
        "rank {rank}: {call:?} ended {after_barrier} ns after the barrier, for a victim that failed {VICTIM_SLEEPS} ns after it"
    );
    assert!(failed.iter().all(|e| (e.start, e.end) == (call.start, call.end)), "rank {rank}: {failed:?}");
    call.body
}

/// Whether every survivor (all ranks but the victim, 2) wrote its footer.
fn survivors_finished(dir: &Path) -> bool {
    [0, 1, 3, 4, 5].into_iter().all(|rank| {
        let Ok(mut trace) = TraceFile::open(&file_for(dir, rank)) else { return false };
        while let Ok(Some(_)) = trace.next_events() {}
        matches!(trace.ending(), Some(grappe_trace::Ending::Complete(_)))
    })
}

/// Each survivor's trace holds the call it was stuck in, failed, with
/// what it asked for.
fn assert_recorded(case: &str, dir: &Path) {
    let recv = failed_call_of(dir, 0);
    let asked = Body::Recv {
        src: 2,
        tag: 99,
        comm: 0,
        bytes: 0,
        arrived: false,
        sendrecv: false,
        failed: true,
        any_source: false,
    };
    assert_eq!(recv, asked, "{case}: rank 0");
    let half = failed_call_of(dir, 1);
    let asked = Body::Recv {
        src: 2,
        tag: 98,
        comm: 0,
        bytes: 0,
        arrived: false,
        sendrecv: true,
        failed: true,
        any_source: false,
    };
    assert_eq!(half, asked, "{case}: rank 1, a sendrecv's receive");
    let send = read(&file_for(dir, 1)).into_iter().find(|e| e.body.failed()).map(|e| e.body);
    let asked = Body::Send { dest: 2, tag: 98, comm: 0, bytes: 1 << 16, seq: 0, failed: true, sync: false };
    assert_eq!(send, Some(asked), "{case}: rank 1, a sendrecv's send");
    let waited_for = Completion { is_recv: true, src: 2, tag: 97, bytes: 0, arrived: false };
    assert!(
        matches!(failed_call_of(dir, 3), Body::Wait { completion, failed: true, .. } if completion == waited_for),
        "{case}: rank 3"
    );
    let probe = Body::Probe { src: 2, tag: 96, comm: 0, found: None, failed: true };
    assert_eq!(failed_call_of(dir, 4), probe, "{case}: rank 4");
    let barrier = Body::Collective { op: CollectiveKind::Barrier, comm: 0, root: ANY, bytes: 0, failed: true };
    assert_eq!(failed_call_of(dir, 5), barrier, "{case}: rank 5");
}

fn trace_tool(args: &[&str], dir: &Path) -> Output {
    let mut cmd = Command::new(util::grappe());
    cmd.arg("trace").args(args).arg(dir);
    util::run_bounded(cmd, Duration::from_secs(60))
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `check` lists the failed calls and matches none of them; `killed`:
/// the victim's file has no footer, the one problem of the trace.
fn assert_checked(case: &str, dir: &Path, killed: bool) {
    let out = trace_tool(&["check"], dir);
    let said = stdout(&out);
    assert!(said.contains("5 calls failed (a peer died or the job was stopped; not a problem"), "{case}: {said}");
    for call in [
        "rank 0: recv from rank 2 (",
        "rank 1: sendrecv with rank 2 (",
        "rank 3: wait for a receive from rank 2 (",
        "rank 4: probe from rank 2 (",
        "rank 5: barrier (",
    ] {
        assert!(said.contains(call), "{case}: no {call:?} in {said}");
    }
    assert!(!said.contains("receives with no send") && !said.contains("sends never received"), "{case}: {said}");
    match killed {
        true => {
            assert_eq!(out.status.code(), Some(1), "{case}: the killed rank's file is a problem: {said}");
            assert!(said.contains("without a footer (killed, or died outside the runtime): 2"), "{case}: {said}");
            let problems = said.split("problems:").nth(1).unwrap_or_default();
            assert_eq!(problems.lines().filter(|l| l.starts_with("  - ")).count(), 1, "{case}: {said}");
        }
        false => assert_eq!(out.status.code(), Some(0), "{case}: failed calls are no problem: {said}"),
    }
}

/// The profile counts them under their call and notes them; the exports
/// draw them, named failed, with no message.
fn assert_shown(case: &str, dir: &Path, scratch: &Path) {
    let said = stdout(&trace_tool(&["profile"], dir));
    assert!(said.contains("@ note: 5 calls failed (a peer died or the job was stopped)"), "{case}: {said}");
    assert!(said.contains("rank 0: recv from rank 2 ("), "{case}: {said}");
    let recv_row = said.lines().find(|l| l.starts_with("recv ")).unwrap_or_default();
    assert!(recv_row.split_whitespace().nth(1) == Some("1"), "{case}: one recv, the failed one: {recv_row:?}");

    let export = |format: &str, file: &str| {
        let path = scratch.join(file);
        let out = trace_tool(&["export", "-f", format, "-o", path.to_str().unwrap()], dir);
        assert!(out.status.success(), "{case}: {format}: {}", util::describe(&out));
        let outputs = [path.clone(), path.with_extension("otf2")];
        let file = outputs.iter().find(|p| p.is_file()).unwrap_or_else(|| panic!("{case}: {format}: no file"));
        (std::fs::read(file).unwrap(), stdout(&out))
    };
    let (chrome, _) = export("chrome", "trace.json");
    let chrome = String::from_utf8(chrome).unwrap();
    for name in ["recv (failed)", "sendrecv (failed)", "wait (failed)", "probe (failed)", "barrier (failed)"] {
        assert!(chrome.contains(&format!("\"name\":\"{name}\"")), "{case}: chrome has no {name}");
    }
    assert!(!chrome.contains("\"ph\":\"s\""), "{case}: a failed call has no flow");
    let (paje, _) = export("paje", "trace.paje");
    let paje = String::from_utf8(paje).unwrap();
    assert!(paje.contains("5 recv_failed CALL \"recv (failed)\""), "{case}: {paje}");
    assert!(paje.lines().any(|l| l.starts_with("12 ") && l.ends_with(" r0 CALL recv_failed")), "{case}: {paje}");
    let links = paje.lines().filter(|l| l.starts_with("16 ") || l.starts_with("19 ")).count();
    assert_eq!(links, 0, "{case}: a failed call has no link");
    let (picl, legend) = export("picl", "trace.trf");
    assert!(legend.contains("recv (failed)"), "{case}: {legend}");
    assert!(!String::from_utf8(picl).unwrap().contains(" -52 "), "{case}: a failed receive is no PICL receive");

    export("otf2", "job");
    let anchor = scratch.join("job.otf2");
    let otf2 = Command::new(util::system_command("otf2-print", "otf2-tools")).arg(&anchor).output().unwrap();
    let printed = stdout(&otf2);
    assert!(otf2.status.success(), "{case}: {}", util::describe(&otf2));
    let failures = printed.lines().filter(|l| l.contains("Parameter: \"call failed\"")).count();
    assert_eq!(failures, 5, "{case}: one `call failed` parameter per failed call: {printed}");
    for record in ["MPI_RECV", "MPI_SEND", "MPI_IRECV "] {
        assert!(!printed.lines().any(|l| l.starts_with(record)), "{case}: {record} of a failed call: {printed}");
    }
}

#[test]
fn the_call_each_survivor_was_stuck_in_is_recorded_failed_and_shown_by_the_tools() {
    // (fault, layout, whether the victim's file lacks its footer)
    let cases: [(&str, &[&str], bool); 2] =
        [("kill:2", &["-n", "6"], true), ("panic:2", &["-n", "6", "--threads-per-process", "2"], false)];
    for (fault, layout, killed) in cases {
        let case = format!("{fault} {}", layout.join(" "));
        let scratch = grappe_testkit::scratch(&format!("failed-calls-{}-{}", fault.replace(':', ""), layout.len()));
        let dir = scratch.join("trace");
        // A survivor gets 500 ms from the launcher's SIGTERM to write its
        // footer; on a loaded 2-core machine (6 processes, tests running
        // beside them) one may miss it and lose its buffered events, a
        // known limit. Run again then: the assertions below stay strict.
        for _ in 0..3 {
            let _ = std::fs::remove_dir_all(&dir);
            run_faulty(fault, layout, &dir);
            if survivors_finished(&dir) {
                break;
            }
        }
        assert_recorded(&case, &dir);
        assert_checked(&case, &dir, killed);
        assert_shown(&case, &dir, &scratch);
    }
}
