//! A rank that polls (`test` or `iprobe` in a loop) for a message from a
//! rank that failed learns of the failure: a polling loop never sleeps, so
//! it cannot count on a timed-out sleep to look for dead peers.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc;
use std::time::Duration;

use grappe::{Communicator, Error};

/// Runs two thread ranks: rank 1 fails (panics) once both are connected,
/// rank 0 runs `poll` and reports what it returned. A hang fails the test.
fn rank_0_polls_for_a_failed_rank(poll: fn(&Communicator) -> grappe::Result<()>) -> String {
    let (report, reports) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = catch_unwind(AssertUnwindSafe(|| {
            grappe::testing::threads(2, |world: &Communicator| {
                world.barrier().unwrap();
                if world.rank() == 1 {
                    panic!("rank 1 fails while rank 0 polls for its message");
                }
                report.send(format!("{:?}", poll(world))).unwrap();
            })
        }));
    });
    reports.recv_timeout(Duration::from_secs(60)).expect("rank 0 still polls after 60 s: the failure went unseen")
}

#[test]
fn a_test_loop_sees_its_peer_failed() {
    let seen = rank_0_polls_for_a_failed_rank(|world| {
        let mut buf = [0u8; 8];
        world.scope(|s| {
            let mut request = world.irecv(s, &mut buf[..], 1, 3)?;
            while request.test()?.is_none() {}
            Ok(())
        })
    });
    assert!(seen.starts_with("Err(PeerDied { rank: 1, "), "{seen}");
}

#[test]
fn an_iprobe_loop_sees_its_peer_failed() {
    let seen = rank_0_polls_for_a_failed_rank(|world| {
        while world.iprobe(1, 3)?.is_none() {}
        Err(Error::Cancelled)
    });
    assert!(seen.starts_with("Err(PeerDied { rank: 1, "), "{seen}");
}
