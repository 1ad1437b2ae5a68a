//! What a scope does with its requests when its closure fails, and what a
//! request that failed says afterwards: never a hang, never a buffer
//! touched after its scope.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Barrier;
use std::sync::mpsc;
use std::time::Duration;

use grappe::{Communicator, Error};

/// Runs `job` on a thread of its own and fails the test if it has not
/// ended after a minute: a hang becomes a failure.
fn bounded<R: Send + 'static>(what: &str, job: impl FnOnce() -> R + Send + 'static) -> R {
    let (done, outcome) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(catch_unwind(AssertUnwindSafe(job)));
    });
    match outcome.recv_timeout(Duration::from_secs(60)) {
        Ok(Ok(result)) => result,
        Ok(Err(panic)) => resume_unwind(panic),
        Err(_) => panic!("{what}: still running after 60 s"),
    }
}

/// Runs `body` on two thread ranks (bounded, see [`bounded`]) and returns
/// what each rank observed, in rank order. Rank 1 gives up its memory in
/// these cases: it is failed, so it ends there (a panic) rather than go on
/// to finalize, and the job fails; each rank reports before that.
fn observe(body: impl Fn(&Communicator) -> String + Send + Sync + 'static) -> Vec<String> {
    let (report, reports) = mpsc::channel();
    bounded("the job", move || {
        let _ = catch_unwind(AssertUnwindSafe(|| {
            grappe::testing::threads(2, |world: &Communicator| {
                // Both ranks connected before rank 1 fails: a rank that
                // connects after a peer failed gets `PeerDied` at once.
                world.barrier().unwrap();
                let seen = body(world);
                report.send((world.rank(), seen)).unwrap();
                assert_ne!(world.rank(), 1, "rank 1 failed: it ends here");
            })
        }));
    });
    let mut seen: Vec<(usize, String)> = reports.try_iter().collect();
    seen.sort();
    assert_eq!(seen.len(), 2, "every rank reports: {seen:?}");
    seen.into_iter().map(|(_, seen)| seen).collect()
}

/// Bigger than any eager limit: the isend waits for its receiver.
const LARGE: usize = 1 << 16;

/// An isend of rank 1 to rank 0 that rank 0 never receives, in a scope
/// whose closure fails: what comes out of the scope.
fn fail_with_an_unreceived_isend(world: &Communicator) -> grappe::Result<()> {
    let unreceived = vec![1u8; LARGE];
    world.scope(|s| {
        let _pending = world.isend(s, &unreceived[..], 0, 5)?;
        Err(Error::Cancelled)
    })
}

#[test]
fn a_failed_scope_gives_up_an_isend_nobody_receives_and_its_peers_see_the_rank_failed() {
    let seen = observe(|world| match world.rank() {
        1 => format!("{:?}", fail_with_an_unreceived_isend(world)),
        // Rank 0 never receives tag 5: it waits for rank 1 elsewhere.
        _ => format!("{:?}", world.barrier()),
    });
    assert_eq!(seen[1], "Err(Cancelled)", "the closure's error comes out of the scope");
    assert!(seen[0].starts_with("Err(PeerDied { rank: 1, "), "rank 0: {}", seen[0]);
}

#[test]
fn a_failed_scope_cancels_a_receive_and_the_rank_goes_on() {
    let received = bounded("a scope that failed with a posted receive", || {
        grappe::testing::threads(2, |world: &Communicator| {
            if world.rank() == 1 {
                let mut never = [0u8; 8];
                let failed: grappe::Result<()> = world.scope(|s| {
                    let _pending = world.irecv(s, &mut never[..], 0, 5)?;
                    Err(Error::Cancelled)
                });
                assert!(matches!(failed, Err(Error::Cancelled)));
                world.barrier().unwrap();
                // The message the cancelled receive did not take.
                let mut later = [0u8; 8];
                world.recv(&mut later[..], 0, 5).unwrap();
                return later;
            }
            world.barrier().unwrap();
            world.send(&[7u8; 8][..], 1, 5).unwrap();
            [0; 8]
        })
    });
    assert_eq!(received[1], [7u8; 8]);
}

#[test]
fn a_receive_whose_test_said_it_failed_says_so_again_when_waited_for() {
    let withdrawn = Barrier::new(2);
    let seen = observe(move |world| {
        if world.rank() == 1 {
            let _ = fail_with_an_unreceived_isend(world);
            withdrawn.wait();
            return String::new();
        }
        withdrawn.wait();
        let mut buf = vec![0u8; LARGE];
        let (tested, waited) = world
            .scope(|s| {
                let mut request = world.irecv(s, &mut buf[..], 1, 5)?;
                let tested = loop {
                    match request.test() {
                        Ok(None) => std::thread::yield_now(),
                        other => break other,
                    }
                };
                Ok::<_, Error>((format!("{tested:?}"), format!("{:?}", request.wait())))
            })
            .unwrap();
        format!("{tested}\n{waited}")
    });
    let (tested, waited) = seen[0].split_once('\n').unwrap();
    assert!(tested.starts_with("Err(PeerDied { rank: 1, "), "the test: {tested}");
    assert_eq!(waited, tested, "the wait reports the same failure");
}
