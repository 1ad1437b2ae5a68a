//! Traces recorded by the runtime: every kind of call appears with its
//! attributes, clock samples are taken before and after, files survive a
//! killed rank.

mod util;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use grappe::{ANY_SOURCE, Sum};
use grappe_trace::format::Footer;
use grappe_trace::{Body, CollectiveKind, Ending, Event, EventKind, TraceFile, file_for};

fn fresh_dir(name: &str) -> grappe_testkit::Scratch {
    grappe_testkit::scratch(&format!("tracing-{name}"))
}

fn read(path: &Path) -> (Vec<Event>, TraceFile) {
    let mut trace = TraceFile::open(path).unwrap_or_else(|e| panic!("{e}"));
    let mut events = Vec::new();
    while let Some(block) = trace.next_events().unwrap_or_else(|e| panic!("{e}")) {
        events.extend(block);
    }
    (events, trace)
}

#[test]
fn every_kind_of_call_is_recorded_with_its_attributes() {
    let dir = fresh_dir("kinds");
    grappe::testing::threads_traced(3, &dir, |world| {
        let me = world.rank();
        let _solve = world.region("solve");
        if me == 0 {
            world.send(&[1u64, 2, 3], 1, 7).unwrap();
            world.ssend(&[4u64], 1, 8).unwrap();
        } else if me == 1 {
            let mut buf = [0u64; 3];
            world.recv(&mut buf, 0, 7).unwrap();
            world.recv(&mut buf[..1], 0, 8).unwrap();
        }
        let out = [me as u32; 4];
        let mut incoming = [0u32; 4];
        world.scope(|s| {
            let right = (me + 1) % 3;
            let left = (me + 2) % 3;
            let r = world.irecv(s, &mut incoming, left, 9).unwrap();
            let w = world.isend(s, &out, right, 9).unwrap();
            r.wait().unwrap();
            w.wait().unwrap();
        });
        let mut total = 0.0;
        world.allreduce(&(me as f64), &mut total, Sum).unwrap();
        let half = world.split(Some((me % 2) as u32), 0).unwrap().unwrap();
        half.barrier().unwrap();
        world.trace_counter("iterations", 42);
        world.trace_event("checkpoint");
        if me == 2 {
            world.send(&5u8, 0, 3).unwrap();
        }
        if me == 0 {
            world.probe(ANY_SOURCE, 3).unwrap();
            let mut b = 0u8;
            world.recv(&mut b, ANY_SOURCE, 3).unwrap();
        }
    });

    let (rank0, trace0) = read(&file_for(&dir, 0));
    let (rank1, _) = read(&file_for(&dir, 1));
    let kinds = |events: &[Event]| events.iter().map(|e| e.body.kind()).collect::<Vec<_>>();
    assert!(matches!(rank0.first().map(|e| &e.body), Some(Body::Init)), "{:?}", kinds(&rank0));
    assert!(matches!(rank0.last().map(|e| &e.body), Some(Body::Finalize)), "{:?}", kinds(&rank0));
    assert!(rank0.iter().all(|e| e.rank == 0 && e.end >= e.start && e.alpha_ns > 0));
    // A call's start is read from the clock its end is (the recorder's),
    // so that records come in the order of their starts.
    for events in [&rank0, &rank1] {
        let order = events.windows(2).position(|w| w[0].start > w[1].start);
        assert_eq!(order, None, "a record starts before the one ahead of it: {:?}", order.map(|i| &events[i..i + 2]));
    }

    let send = rank0.iter().find_map(|e| match &e.body {
        Body::Send { dest: 1, tag: 7, bytes, seq, .. } => Some((*bytes, *seq)),
        _ => None,
    });
    assert_eq!(send, Some((24, 1)), "the send to rank 1, first of its channel");
    // The synchronous send says so, with the next sequence number; the standard one does not.
    assert!(rank0.iter().any(|e| matches!(e.body, Body::Send { dest: 1, tag: 8, seq: 2, sync: true, .. })));
    assert!(rank0.iter().any(|e| matches!(e.body, Body::Send { dest: 1, tag: 7, sync: false, .. })));
    let recv = rank1.iter().find_map(|e| match &e.body {
        Body::Recv { src: 0, tag: 7, bytes, .. } => Some(*bytes),
        _ => None,
    });
    assert_eq!(recv, Some(24));
    assert!(rank1.iter().any(|e| matches!(e.body, Body::Isend { dest: 2, tag: 9, bytes: 16, .. })));
    assert!(rank1.iter().any(|e| matches!(e.body, Body::Irecv { src: 0, tag: 9, .. })));
    assert!(rank1.iter().any(|e| matches!(&e.body, Body::Wait { completion, .. } if completion.is_recv && completion.src == 0 && completion.bytes == 16)));
    assert!(rank1.iter().any(|e| matches!(e.body, Body::Collective { op: CollectiveKind::Allreduce, bytes: 8, .. })));
    assert!(rank1.iter().any(|e| matches!(&e.body, Body::CommCreate { members, .. } if **members == [1])));
    assert!(rank0.iter().any(|e| matches!(&e.body, Body::CommCreate { members, .. } if **members == [0, 2])));
    assert!(rank0.iter().any(|e| matches!(&e.body, Body::RegionEnter { name, location } if &**name == "solve" && location.contains("tracing.rs"))));
    assert!(rank0.iter().any(|e| matches!(&e.body, Body::RegionLeave { name } if &**name == "solve")));
    assert!(rank0.iter().any(|e| matches!(&e.body, Body::Counter { name, value: 42 } if &**name == "iterations")));
    assert!(rank0.iter().any(|e| matches!(&e.body, Body::Point { name, .. } if &**name == "checkpoint")));
    assert!(rank0.iter().any(|e| matches!(&e.body, Body::Probe { found: Some(c), .. } if c.src == 2 && c.bytes == 1)));
    // The probe came first, so the message had arrived when the receive began.
    // It asked for any source, and says so; a receive from a named rank does not.
    assert!(rank0.iter().any(|e| matches!(e.body, Body::Recv { src: 2, tag: 3, arrived: true, any_source: true, .. })));
    assert!(rank1.iter().any(|e| matches!(e.body, Body::Recv { src: 0, tag: 7, any_source: false, .. })));

    // Rank 0, the reference, holds the clock samples of both phases.
    let samples = trace0.clock_samples();
    for peer in [1, 2] {
        for phase in [0, 1] {
            let n = samples.iter().filter(|s| s.peer == peer && s.phase == phase).count();
            assert_eq!(n, 5, "peer {peer}, phase {phase}");
        }
    }
    assert!(samples.iter().all(|s| s.t_send_ref <= s.t_recv_ref && s.t_recv_peer <= s.t_send_peer));
    assert!(matches!(trace0.ending(), Some(Ending::Complete(f)) if f.dropped == 0));
}

/// A sendrecv's receive carries the `arrived` flag like any receive: set
/// when its message was there before the call, clear when the message
/// could only be sent after the call began. A wait's flag says whether
/// the message was there when the wait began (then the wait did not
/// wait for it): a rendezvous whose announcement was, and a message that
/// came after its irecv.
#[test]
fn receives_say_whether_their_message_had_arrived() {
    let dir = fresh_dir("arrived");
    grappe::testing::threads_traced(2, &dir, |world| {
        let (mut got, one) = (0u32, 1u32);
        let mut large = vec![0u8; 1 << 20];
        if world.rank() == 1 {
            world.send(&one, 0, 1).unwrap();
            world.recv(&mut got, 0, 2).unwrap();
            world.recv(&mut got, 0, 3).unwrap();
            world.send(&one, 0, 4).unwrap();
            world.send(&large[..], 0, 5).unwrap();
            world.send(&one, 0, 7).unwrap();
            world.send(&one, 0, 8).unwrap();
        } else {
            world.probe(1, 1).unwrap(); // tag 1 is here
            world.sendrecv(&one, 1, 2, &mut got, 1, 1).unwrap();
            // Rank 1 sends tag 4 only once it has this call's tag 3.
            world.sendrecv(&one, 1, 3, &mut got, 1, 4).unwrap();
            world.probe(1, 5).unwrap(); // the rendezvous is announced
            world.scope(|s| world.irecv(s, &mut large[..], 1, 5).unwrap().wait().map(drop)).unwrap();
            // Tag 7 is sent before tag 8: once tag 8 is in, so is tag 7,
            // which the wait then finds there though it came after the irecv.
            let mut early = 0u32;
            world.scope(|s| {
                let pending = world.irecv(s, &mut early, 1, 7).unwrap();
                world.recv(&mut got, 1, 8).unwrap();
                pending.wait().unwrap();
            });
        }
    });
    let (rank0, _) = read(&file_for(&dir, 0));
    let wait = |tag| {
        rank0.iter().find_map(|e| match &e.body {
            Body::Wait { completion, .. } if completion.tag == tag => Some((completion.bytes, completion.arrived)),
            _ => None,
        })
    };
    assert_eq!(wait(5), Some((1 << 20, true)), "the wait of the rendezvous receive");
    assert_eq!(wait(7), Some((4, true)), "the wait of a message that came after its irecv, before its wait");
    let flags: Vec<_> = rank0
        .iter()
        .filter_map(|e| match e.body {
            Body::Recv { src: 1, tag, arrived, sendrecv: true, .. } => Some((tag, arrived)),
            _ => None,
        })
        .collect();
    assert_eq!(flags, [(1, true), (4, false)]);
}

/// A receive into too small a buffer fails, but it took its message off
/// the channel: it is recorded with the bytes the buffer took, blocking,
/// waited, tested or in a sendrecv (whose send is recorded too), so the
/// channel's later messages still pair with their sends, and `check`
/// shows each truncation as a size mismatch.
#[test]
fn a_truncated_receive_is_recorded_and_later_messages_pair_right() {
    let dir = fresh_dir("truncated");
    grappe::testing::threads_traced(2, &dir, |world| {
        let long = [7u64; 8];
        let mut short = [0u64; 1];
        let truncated = |r: grappe::Result<grappe::Status>| {
            assert!(matches!(r, Err(grappe::Error::Truncated { message_bytes: 64, .. })), "{r:?}")
        };
        if world.rank() == 0 {
            for tag in [1, 2, 3, 4] {
                world.send(&long, 1, tag).unwrap();
            }
            world.recv(&mut short, 1, 9).unwrap();
            world.send(&short, 1, 1).unwrap();
        } else {
            truncated(world.recv(&mut short, 0, 1));
            world.scope(|s| truncated(world.irecv(s, &mut short, 0, 2).unwrap().wait()));
            world.scope(|s| {
                let mut request = world.irecv(s, &mut short, 0, 3).unwrap();
                loop {
                    match request.test() {
                        Ok(None) => std::thread::yield_now(),
                        other => break truncated(other.map(|s| s.unwrap())),
                    }
                }
            });
            truncated(world.sendrecv(&[5u64], 0, 9, &mut short, 0, 4));
            world.recv(&mut short, 0, 1).unwrap();
        }
    });
    let (rank1, _) = read(&file_for(&dir, 1));
    let got: Vec<(u64, u64)> = rank1
        .iter()
        .filter_map(|e| match &e.body {
            Body::Recv { tag, bytes, .. } => Some((*tag as u64, *bytes)),
            Body::Wait { completion: c, .. } => Some((c.tag as u64, c.bytes)),
            Body::Test { completion: Some(c), .. } => Some((c.tag as u64, c.bytes)),
            _ => None,
        })
        .collect();
    assert_eq!(got, [(1, 8), (2, 8), (3, 8), (4, 8), (1, 8)], "tag and bytes of each receive");
    let set = grappe_analysis::TraceSet::open(&dir).unwrap();
    let time = grappe_analysis::GlobalTime::estimate(&set, &Default::default()).unwrap();
    let stream = grappe_analysis::CausalStream::open(&set, &time).unwrap();
    let report = grappe_analysis::check(stream, &mut |_| {}).unwrap();
    assert_eq!((report.messages, report.unmatched_receives, report.unreceived_sends), (6, 0, 0), "{report}");
    let sizes: Vec<(u64, u64)> = report.size_examples.iter().map(|m| (m.sent, m.received)).collect();
    assert_eq!((report.size_mismatches, sizes), (4, vec![(64, 8); 4]), "{report}");
}

/// Each call records the line of the program that made it (mpiP's call
/// site), through the wrappers too (`wait_all`, a collective's body);
/// init and finalize, made by the runtime, have none.
#[test]
fn every_call_names_the_line_that_made_it() {
    let dir = fresh_dir("sites");
    let lines = grappe::testing::threads_traced(2, &dir, |world| {
        let me = world.rank();
        let mut lines = Vec::new();
        let mut mark = |kind: EventKind, line: u32| lines.push((kind, line));
        if me == 0 {
            mark(EventKind::Send, line!() + 1);
            world.send(&[1u64], 1, 7).unwrap();
        } else {
            mark(EventKind::Recv, line!() + 1);
            world.recv(&mut [0u64], 0, 7).unwrap();
        }
        let (out, mut incoming) = ([me as u32], [0u32]);
        world.scope(|s| {
            let peer = 1 - me;
            mark(EventKind::Irecv, line!() + 1);
            let r = world.irecv(s, &mut incoming, peer, 9).unwrap();
            mark(EventKind::Isend, line!() + 1);
            let w = world.isend(s, &out, peer, 9).unwrap();
            mark(EventKind::Wait, line!() + 1);
            grappe::wait_all([r, w]).unwrap();
        });
        let mut total = 0u64;
        mark(EventKind::Collective, line!() + 1);
        world.allreduce(&1u64, &mut total, Sum).unwrap();
        mark(EventKind::CommCreate, line!() + 1);
        world.dup().unwrap();
        lines
    });

    for (rank, lines) in lines.iter().enumerate() {
        let (events, _) = read(&file_for(&dir, rank as u32));
        for &(kind, line) in lines {
            let at = format!("{}:{line}:", file!());
            let sites: Vec<_> = events.iter().filter(|e| e.body.kind() == kind).map(|e| e.site).collect();
            assert!(!sites.is_empty(), "rank {rank}: no {kind:?}");
            for site in sites {
                let site = site.unwrap_or_else(|| panic!("rank {rank}: a {kind:?} without its site"));
                assert!(site.text().starts_with(&at), "rank {rank}: {kind:?} at {site}, not at {at}");
            }
        }
        for e in events.iter().filter(|e| matches!(e.body, Body::Init | Body::Finalize)) {
            assert_eq!(e.site, None, "rank {rank}: {:?} is the runtime's", e.body.kind());
        }
    }
}

fn run_traced_jacobi(ranks: &str, dir: &Path) {
    let mut cmd = Command::new(util::grappe());
    cmd.args(["run", "-n", ranks, "--trace"]).arg(dir).arg(util::example("jacobi")).args(["64", "50"]);
    let output = util::run_bounded(cmd, Duration::from_secs(60));
    assert!(output.status.success(), "{}", util::describe(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("trace in"), "{}", util::describe(&output));
}

/// Every rank's file is complete and names one job; a rerun with fewer
/// ranks into the same directory replaces all of the earlier run's files
/// (and leaves other files alone).
/// A communicator the program creates names the program's line; the one
/// the checkpointer creates for itself names none, like init and finalize.
#[test]
fn a_communicator_the_runtime_creates_has_no_call_site() {
    let dir = fresh_dir("runtime-dup");
    grappe::testing::threads_traced(2, &dir, |world| {
        let _ft = grappe::ft::Checkpointer::with_settings(world, None).unwrap();
        let _mine = world.dup().unwrap();
    });
    let (events, _) = read(&file_for(&dir, 0));
    let sites: Vec<_> = events
        .iter()
        .filter(|e| matches!(e.body, Body::CommCreate { .. }))
        .map(|e| e.site.map(|s| s.text().to_owned()))
        .collect();
    assert_eq!(sites.len(), 2, "{sites:?}");
    assert_eq!(sites[0], None, "the checkpointer's communicator");
    assert!(sites[1].as_deref().is_some_and(|s| s.starts_with(file!())), "the program's dup: {sites:?}");
}

#[test]
fn grappe_run_trace_writes_a_complete_file_per_rank() {
    let dir = fresh_dir("run");
    run_traced_jacobi("3", &dir);
    let mut jobs = Vec::new();
    for rank in 0..3 {
        let (events, trace) = read(&file_for(&dir, rank));
        let sendrecvs = events.iter().filter(|e| matches!(e.body, Body::Send { .. })).count();
        assert!(sendrecvs >= 50, "rank {rank}: {sendrecvs} sends for 50 iterations of halo exchange");
        // Jacobi only calls sendrecv: each send is followed by the receive
        // marked as its second half, with the same dates and call site.
        let pairs = events
            .windows(2)
            .filter(|w| {
                matches!(w[0].body, Body::Send { .. }) && matches!(w[1].body, Body::Recv { sendrecv: true, .. })
            })
            .filter(|w| (w[0].start, w[0].end, w[0].site) == (w[1].start, w[1].end, w[1].site))
            .count();
        assert_eq!(pairs, sendrecvs, "rank {rank}: sends not followed by their sendrecv's receive");
        assert!(matches!(trace.ending(), Some(Ending::Complete(_))), "rank {rank}: {:?}", trace.ending());
        assert_eq!(trace.header().rank, Some(rank));
        assert_eq!(trace.header().world_size, 3);
        // A process rank runs alone on its process's thread.
        let thread = trace.header().thread.clone().expect("the file names the rank's thread");
        assert!(thread.tid > 0 && thread.ranks == [rank], "rank {rank}: {thread:?}");
        jobs.push(trace.header().job.clone());
    }
    assert!(!jobs[0].is_empty() && jobs.iter().all(|j| *j == jobs[0]), "job ids {jobs:?}");

    std::fs::write(dir.join("notes.txt"), "mine").unwrap();
    run_traced_jacobi("2", &dir);
    let rerun: Vec<_> = (0..2).map(|rank| read(&file_for(&dir, rank)).1.header().job.clone()).collect();
    assert!(rerun[0] == rerun[1] && rerun[0] != jobs[0], "job ids {rerun:?} after {jobs:?}");
    assert!(!file_for(&dir, 2).exists(), "the earlier run's rank 2 is left among the new files");
    assert!(dir.join("notes.txt").exists(), "a file not a trace was removed");
}

/// Each file names the OS thread that ran its rank (the thread the rank's
/// calls ran on), and the ranks that thread ran: thread ranks that
/// outnumber workers take turns on one.
#[test]
fn each_file_names_the_thread_that_ran_its_rank() {
    let dir = fresh_dir("threads");
    let tids = grappe::testing::threads_traced(5, &dir, |_| {
        let link = std::fs::read_link("/proc/thread-self").unwrap();
        link.file_name().unwrap().to_str().unwrap().parse::<u32>().unwrap()
    });
    let headers: Vec<_> = (0..5).map(|rank| read(&file_for(&dir, rank)).1.header().clone()).collect();
    for (rank, header) in (0..).zip(&headers) {
        let thread = header.thread.as_ref().expect("the file names the rank's thread");
        assert_eq!(thread.tid, tids[rank as usize], "rank {rank}: not the thread its calls ran on");
        let same_thread: Vec<u32> = (0..5).filter(|&r| tids[r as usize] == thread.tid).collect();
        assert_eq!(thread.ranks, same_thread, "rank {rank}: the ranks its thread ran");
        assert_eq!(header.pid, headers[0].pid);
    }
}

/// Small buffers flushed during the run, wherever their boundaries fall
/// among a sendrecv's two records: every file stays in date order (a
/// flush once landed between them and `grappe trace check` saw a record
/// go back in time).
#[test]
fn flushes_keep_every_rank_s_records_in_date_order() {
    for buffer in ["16", "17", "23"] {
        let dir = fresh_dir(&format!("order-{buffer}"));
        let mut cmd = Command::new(util::grappe());
        cmd.env("GRAPPE_TRACE_BUFFER", buffer);
        cmd.args(["run", "-n", "3", "--trace"]).arg(&dir).arg(util::example("jacobi")).args(["32", "60"]);
        let output = util::run_bounded(cmd, Duration::from_secs(60));
        assert!(output.status.success(), "{}", util::describe(&output));
        for rank in 0..3 {
            let (events, trace) = read(&file_for(&dir, rank));
            let flushes = match trace.ending() {
                Some(Ending::Complete(footer)) => footer.flushes,
                other => panic!("rank {rank}: {other:?}"),
            };
            assert!(flushes > 5, "rank {rank}: the buffer of {buffer} events flushed {flushes} times");
            for w in events.windows(2) {
                assert!(w[1].start >= w[0].start, "rank {rank}, buffer {buffer}: {:?} after {:?}", w[1], w[0]);
            }
        }
    }
}

#[test]
fn a_killed_rank_leaves_every_flushed_block_readable() {
    let dir = fresh_dir("killed");
    let mut cmd = Command::new(util::grappe());
    cmd.env("GRAPPE_FAULT", "kill:1").env("GRAPPE_TRACE_BUFFER", "16");
    cmd.args(["run", "-n", "3", "--trace"]).arg(&dir).arg(util::example("faulty"));
    let output = util::run_bounded(cmd, Duration::from_secs(60));
    assert!(!output.status.success(), "{}", util::describe(&output));
    let (events, trace) = read(&file_for(&dir, 1));
    assert!(matches!(events.first().map(|e| &e.body), Some(Body::Init)), "the killed rank's start is readable");
    let points = events.iter().filter(|e| matches!(e.body, Body::Point { .. })).count();
    // 100 points in 16-event buffers: all but the unflushed tail survive.
    assert!((84..=100).contains(&points), "{points} of the 100 events recorded before the kill were readable");
    assert!(
        matches!(trace.ending(), Some(Ending::Unfinished { .. }) | Some(Ending::Cut { .. })),
        "no footer for a killed rank: {:?}",
        trace.ending()
    );
}

/// When a rank dies, the ranks that survive it, waiting for it in a
/// receive or a barrier, still end their traces with a footer and every
/// event they recorded (the launcher stops them with SIGTERM; a rank of
/// the failed process sees the failure itself), while the job fails as
/// fast and with the same diagnostic. As processes, as threads of two
/// processes, and with a panic that leaves its process's other rank alive.
#[test]
fn the_survivors_of_a_failed_rank_complete_their_traces() {
    // (fault, layout, the ranks that must end their files, the diagnostic)
    type Case<'a> = (&'a str, &'a [&'a str], &'a [u32], [&'a str; 2]);
    let cases: [Case; 3] = [
        ("kill:2", &["-n", "4"], &[0, 1, 3], ["rank 2", "signal 9"]),
        ("kill:2", &["-n", "4", "--threads-per-process", "2"], &[0, 1], ["ranks 2-3", "signal 9"]),
        ("panic:2", &["-n", "4", "--threads-per-process", "2"], &[0, 1, 2, 3], ["rank 2 failed", "was told to panic"]),
    ];
    for (fault, layout, survivors, diagnostic) in cases {
        let case = format!("{fault} {}", layout.join(" "));
        let dir = fresh_dir(&format!("survivors-{}-{}", fault.replace(':', ""), layout.len()));
        let mut cmd = Command::new(util::grappe());
        cmd.env("GRAPPE_FAULT", fault);
        // The survivors end their traces after SIGTERM: give them time to
        // on a loaded machine (the job still fails at once).
        cmd.arg("run").args(layout).args(["--kill-grace", "10s"]).arg("--trace").arg(&dir);
        cmd.arg(util::example("faulty"));
        let started = std::time::Instant::now();
        let output = util::run_bounded(cmd, Duration::from_secs(60));
        let took = started.elapsed();
        assert!(!output.status.success(), "{case}: {}", util::describe(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(diagnostic.iter().all(|d| stderr.contains(d)), "{case}: {stderr}");
        // The victim fails 0.3 s after the start of its body.
        assert!(took < Duration::from_secs(10), "{case}: the job took {took:?} to fail");
        for &rank in survivors {
            let (events, trace) = read(&file_for(&dir, rank));
            assert!(
                matches!(events.first().map(|e| &e.body), Some(Body::Init)),
                "{case}: rank {rank} lost its events: {} left",
                events.len()
            );
            assert!(
                events.iter().any(|e| matches!(e.body, Body::Collective { op: CollectiveKind::Barrier, .. })),
                "{case}: rank {rank} lost its first barrier"
            );
            assert!(
                matches!(trace.ending(), Some(Ending::Complete(_))),
                "{case}: rank {rank} has no footer: {:?}",
                trace.ending()
            );
        }
        if fault.starts_with("panic") {
            let (events, _) = read(&file_for(&dir, 2));
            let points = events.iter().filter(|e| matches!(e.body, Body::Point { .. })).count();
            assert_eq!(points, 100, "{case}: the panicking rank's events before its failure");
        }
    }
}

/// The recorder keeps the last name given at each call site: names that
/// change at one site (built at run time, in reused memory) must each be
/// written as given, with the site's location.
#[test]
fn names_that_change_at_one_call_site_are_recorded_as_given() {
    let dir = fresh_dir("names");
    // Names of one length, so that only their content tells them apart.
    let phases = ["solve", "write", "solve", "solve", "check", "write"];
    grappe::testing::threads_traced(1, &dir, |world| {
        let mut name = String::new();
        for (i, phase) in phases.into_iter().enumerate() {
            // The same buffer each time: a name is known by its content.
            name.clear();
            name.push_str(phase);
            let _r = world.region(&name);
            world.trace_event(&name);
            world.trace_counter(&name, i as i64);
        }
    });
    let (events, _) = read(&file_for(&dir, 0));
    let (mut regions, mut points, mut counters, mut locations) = (vec![], vec![], vec![], vec![]);
    for e in &events {
        match &e.body {
            Body::RegionEnter { name, location } => {
                regions.push(name.as_str());
                locations.push(location.as_str());
            }
            Body::Point { name, location } => {
                points.push(name.as_str());
                locations.push(location.as_str());
            }
            Body::Counter { name, value } => counters.push((name.as_str(), *value)),
            _ => {}
        }
    }
    assert_eq!(regions, phases);
    assert_eq!(points, phases);
    assert_eq!(counters, phases.iter().enumerate().map(|(i, &p)| (p, i as i64)).collect::<Vec<_>>());
    let file = file!();
    let (region_at, point_at) = (locations[0], locations[1]);
    assert!(region_at.starts_with(file) && point_at.starts_with(file) && region_at != point_at, "{locations:?}");
    assert!(locations.chunks(2).all(|pair| pair == [region_at, point_at]), "{locations:?}");
}

/// A rank times what recording adds to its calls before it records: the
/// calls it makes for that leave no message, no event and no recorder
/// behind, and can be timed again.
#[test]
fn timing_the_recording_of_calls_leaves_the_rank_as_it_was() {
    let left_over = grappe::testing::threads(2, |world| {
        let costs = [world.measure_call_recording().unwrap(), world.measure_call_recording().unwrap()];
        assert!(!world.rank_context().tracing(), "rank {}: still recording", world.rank());
        world.barrier().unwrap();
        (costs, world.iprobe(ANY_SOURCE, grappe::ANY_TAG).unwrap())
    });
    for (rank, (costs, message)) in left_over.into_iter().enumerate() {
        for c in costs {
            assert!([c.blocking, c.probe, c.nonblocking].iter().all(|&ns| ns >= 1), "rank {rank}: {c:?}");
        }
        assert_eq!(message, None, "rank {rank}: a message was left behind");
    }
}

/// Each call kind carries the α measured in place for its group (blocking
/// calls, probes, non-blocking calls; calls not timed take the blocking
/// calls'), and the calls timed for it are not in the trace.
#[test]
fn calls_carry_the_alpha_measured_in_place_before_and_after_the_run_and_its_calls_are_not_recorded() {
    let dir = fresh_dir("call-alpha");
    grappe::testing::threads_traced(2, &dir, |world| {
        let peer = 1 - world.rank();
        world.send(&[1u8], peer, 5).unwrap();
        let mut b = [0u8];
        world.recv(&mut b, peer, 5).unwrap();
    });
    for rank in 0..2 {
        let (events, trace) = read(&file_for(&dir, rank));
        let before = |kind: EventKind| {
            let found = trace.header().calibration.iter().find(|c| c.kind == kind.name());
            found.unwrap_or_else(|| panic!("rank {rank}: no α for {kind:?}")).alpha_ns
        };
        // Measured again, the same way, when the rank finished.
        let Some(Ending::Complete(Footer { alpha_after: Some(after), .. })) = trace.ending() else {
            panic!("rank {rank}: no α after the run in {:?}", trace.ending())
        };
        let after = |kind: EventKind| after[kind.id() as usize];
        for (when, alpha_of) in [("before", &before as &dyn Fn(EventKind) -> u32), ("after", &after)] {
            let same = |kinds: &[EventKind]| {
                let alphas: Vec<u32> = kinds.iter().map(|&k| alpha_of(k)).collect();
                assert!(
                    alphas.iter().all(|&a| a == alphas[0] && a > 0),
                    "rank {rank} {when}: {kinds:?} have {alphas:?}"
                );
            };
            same(&[
                EventKind::Send,
                EventKind::Recv,
                EventKind::Init,
                EventKind::Finalize,
                EventKind::Collective,
                EventKind::CommCreate,
            ]);
            same(&[EventKind::Probe, EventKind::Iprobe]);
            same(&[EventKind::Isend, EventKind::Irecv, EventKind::Wait, EventKind::Test]);
            same(&[EventKind::Point, EventKind::Counter, EventKind::RegionEnter]);
        }
        let to_self = events.iter().filter(|e| matches!(e.body, Body::Send { dest, .. } if dest == rank)).count();
        assert_eq!(to_self, 0, "rank {rank}: the timed sends to self were recorded");
        let sends: Vec<_> = events.iter().filter(|e| matches!(e.body, Body::Send { .. })).collect();
        assert!(matches!(sends[..], [e] if matches!(e.body, Body::Send { seq: 1, .. })), "rank {rank}: {sends:?}");
    }
}

/// The clock sampling phases are the runtime's work: each is inside the
/// init or the finalize (as Score-P synchronises clocks inside `MPI_Init`
/// and `MPI_Finalize`), so that no profile counts them as the program's.
#[test]
fn the_clock_sampling_phases_are_inside_the_init_and_the_finalize() {
    let dir = fresh_dir("sync-inside");
    grappe::testing::threads_traced(2, &dir, |world| world.barrier().unwrap());
    for rank in 0..2 {
        let (events, _) = read(&file_for(&dir, rank));
        let (init, finalize) = (events.first().unwrap(), events.last().unwrap());
        assert_eq!((init.body, finalize.body), (Body::Init, Body::Finalize), "rank {rank}: {events:?}");
        assert!(init.end < finalize.start, "rank {rank}: {init:?} {finalize:?}");
    }
    // Rank 0 dates both ends of every exchange.
    let (events, trace) = read(&file_for(&dir, 0));
    let (init, finalize) = (events.first().unwrap(), events.last().unwrap());
    let samples = trace.clock_samples();
    assert_eq!(samples.iter().filter(|s| s.phase == 0).count(), 5, "{samples:?}");
    assert_eq!(samples.iter().filter(|s| s.phase == 1).count(), 5, "{samples:?}");
    for s in samples {
        let call = if s.phase == 0 { init } else { finalize };
        assert!(call.start <= s.t_send_ref && s.t_recv_ref <= call.end, "{s:?} outside {call:?}");
    }
}

/// A job whose trace directory cannot be made fails naming it, and does
/// not then point the user at a trace that is not there.
#[test]
fn a_trace_directory_that_cannot_be_made_fails_the_job_and_no_trace_is_announced() {
    let mut cmd = Command::new(util::grappe());
    cmd.args(["run", "-n", "2", "--trace", "/proc/grappe-no-such-dir"]).arg(util::example("jacobi")).args(["16", "2"]);
    let output = util::run_bounded(cmd, Duration::from_secs(60));
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{}", util::describe(&output));
    assert!(said.contains("cannot create the trace of rank"), "{said}");
    assert!(said.contains("grappe: no trace was written in /proc/grappe-no-such-dir\n"), "{said}");
    assert!(!said.contains("trace in"), "{said}");
}

/// A trace setting the runtime does not understand fails the job naming
/// the variable and what it takes: an unknown clock was silently the
/// default, and fewer than 3 sampling points silently 3.
#[test]
fn bad_clock_and_sampling_settings_fail_the_job_with_what_they_take() {
    let dir = fresh_dir("bad-settings");
    for (var, value, expected) in [
        ("GRAPPE_TRACE_CLOCK", "bogus", "GRAPPE_TRACE_CLOCK=\"bogus\": expected monotonic_raw or tsc"),
        (
            "GRAPPE_TRACE_SYNC_POINTS",
            "2",
            "GRAPPE_TRACE_SYNC_POINTS=\"2\": expected at least 3 exchanges a phase, which a clock fit needs",
        ),
    ] {
        let mut cmd = Command::new(util::grappe());
        cmd.args(["run", "-n", "2", "--trace"])
            .arg(&*dir)
            .arg(util::example("jacobi"))
            .args(["16", "2"])
            .env(var, value);
        let output = util::run_bounded(cmd, Duration::from_secs(60));
        let said = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{var}: {}", util::describe(&output));
        assert!(said.contains(expected), "{var}: {said}");
    }
}
