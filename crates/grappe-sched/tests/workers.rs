//! The scheduler runs many ranks on few workers without busy-waiting them
//! to death, reports panics per rank, and wakes sleeping workers.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use grappe_fabric::Doorbell;
use grappe_sched::{Backoff, WaitSettings, WorkerSpec, run_workers};

/// A sense-reversing barrier whose waiters use `Backoff` and whose last
/// arriver rings every worker's bell, as the runtime's collectives do.
struct Barrier<'a> {
    n: usize,
    arrived: AtomicUsize,
    generation: AtomicUsize,
    bells: &'a [Doorbell],
}

impl Barrier<'_> {
    fn wait(&self, bell: &Doorbell, settings: &WaitSettings) {
        let generation = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.n {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.store(generation + 1, Ordering::Release);
            self.bells.iter().for_each(Doorbell::ring);
            return;
        }
        let mut backoff = Backoff::new(bell, settings);
        while self.generation.load(Ordering::Acquire) == generation {
            backoff.snooze();
        }
    }
}

fn specs(ranks: usize, workers: usize, bells: &[Doorbell]) -> Vec<WorkerSpec<'_>> {
    (0..workers)
        .map(|w| WorkerSpec { ranks: (w..ranks).step_by(workers).collect(), bell: &bells[w], cpu: None })
        .collect()
}

#[test]
fn sixty_four_ranks_on_two_workers_complete_many_barriers() {
    let bells: Vec<Doorbell> = (0..2).map(|_| Doorbell::default()).collect();
    let barrier = Barrier { n: 64, arrived: AtomicUsize::new(0), generation: AtomicUsize::new(0), bells: &bells };
    let settings = WaitSettings { spin_iters: 0, ..WaitSettings::default() };
    let outcomes = run_workers(specs(64, 2, &bells), &settings, &|rank| {
        let bell = &bells[rank % 2];
        for _ in 0..500 {
            barrier.wait(bell, &settings);
        }
        rank * 2
    });
    assert_eq!(outcomes.len(), 64);
    for (i, outcome) in outcomes.iter().enumerate() {
        assert_eq!(outcome.rank, i);
        assert_eq!(*outcome.result.as_ref().expect("rank completed"), i * 2);
    }
    assert_eq!(barrier.generation.load(Ordering::Relaxed), 500);
}

#[test]
fn a_panicking_rank_is_reported_and_the_others_finish() {
    let bells: Vec<Doorbell> = (0..2).map(|_| Doorbell::default()).collect();
    let outcomes = run_workers(specs(6, 2, &bells), &WaitSettings::default(), &|rank| {
        if rank == 3 {
            panic!("rank three fails");
        }
        rank
    });
    let failed: Vec<usize> = outcomes.iter().filter(|o| o.result.is_err()).map(|o| o.rank).collect();
    assert_eq!(failed, vec![3]);
    let message = outcomes[3].result.as_ref().unwrap_err().downcast_ref::<&str>().copied();
    assert_eq!(message, Some("rank three fails"));
}

#[test]
fn a_sleeping_worker_is_woken_by_its_doorbell() {
    // Tiny spin and yield budgets force the waiting ranks into the futex
    // sleep; a thread outside the scheduler sets the flag and rings.
    let bells: Vec<Doorbell> = (0..1).map(|_| Doorbell::default()).collect();
    let flag = AtomicBool::new(false);
    let settings = WaitSettings {
        spin_iters: 0,
        yield_for: Duration::ZERO,
        sleep_timeout: Duration::from_secs(30),
        ..WaitSettings::default()
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(50));
            flag.store(true, Ordering::Release);
            bells[0].ring();
        });
        let outcomes = run_workers(specs(3, 1, &bells), &settings, &|_| {
            let mut backoff = Backoff::new(&bells[0], &settings);
            let mut timeouts = 0;
            while !flag.load(Ordering::Acquire) {
                if backoff.snooze() == grappe_sched::Snooze::TimedOut {
                    timeouts += 1;
                }
            }
            timeouts
        });
        for outcome in outcomes {
            assert_eq!(outcome.result.unwrap(), 0, "woken by the bell, not by the 30 s timeout");
        }
    });
}
