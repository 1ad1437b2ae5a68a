//! Waiting for a rank's progress from a thread that does not hold its
//! engine. A C program's threads under `MPI_THREAD_MULTIPLE` let go of the
//! MPI library (and so of the engine) between two polls of what they wait
//! for, so that the program's other threads can call MPI meanwhile; while
//! they let go, one of them sleeps on the rank's doorbell, where senders
//! ring.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use grappe_fabric::doorbell::Wake;
use grappe_fabric::{Doorbell, HostMemory};
use grappe_sched::Snooze;

use super::Engine;
use crate::Result;

/// The doorbell of a rank, for any thread of its process. It holds the
/// host memory the doorbell lives in, which so stays mapped.
#[derive(Clone)]
pub struct RankBell {
    host: Arc<HostMemory>,
    index: usize,
    timeout: Duration,
    spins: u32,
    yield_for: Duration,
}

impl RankBell {
    fn bell(&self) -> &Doorbell {
        self.host.doorbell(self.index)
    }

    /// Step 1 of sleeping (see [`Doorbell::prepare`]): poll once more
    /// after this, then [`sleep`](Self::sleep) or [`cancel`](Self::cancel).
    pub fn prepare(&self) {
        self.bell().prepare();
    }

    /// Withdraws a [`prepare`](Self::prepare) after the last poll found
    /// what it waited for.
    pub fn cancel(&self) {
        self.bell().cancel();
    }

    /// Sleeps until someone rings, or for the engine's sleep timeout; true
    /// if it timed out (time to look for dead peers).
    pub fn sleep(&self) -> bool {
        self.bell().sleep(self.timeout) == Wake::TimedOut
    }

    /// Wakes the rank's sleeper, if any: its own process made progress
    /// the sleeper may be waiting for.
    pub fn ring(&self) {
        self.bell().ring();
    }

    /// How long a sleep lasts at most.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Polls a waiter spends spinning before it yields, as the engine's
    /// own waits do: none when the host's ranks outnumber its cores.
    pub fn spins(&self) -> u32 {
        self.spins
    }

    /// How long a waiter yields before it sleeps.
    pub fn yield_for(&self) -> Duration {
        self.yield_for
    }
}

impl Engine {
    /// The rank's doorbell, for threads that wait outside the engine.
    pub fn bell(&self) -> RankBell {
        let control = self.net.host.control(self.net.me_local);
        let index = control.bell.load(Ordering::Acquire) as usize;
        RankBell {
            host: Arc::clone(&self.net.host),
            index,
            timeout: self.wait.sleep_timeout,
            spins: self.wait.spin_iters,
            yield_for: self.wait.yield_for,
        }
    }

    /// One pass of progress for a thread that waits outside the engine:
    /// true if anything moved. After a sleep that timed out (`slept_long`)
    /// it looks for dead peers; otherwise a request that the job stop
    /// fails it, and dead peers are looked for once every sleep timeout,
    /// as in the engine's own waits.
    pub fn poll_outside(&mut self, slept_long: bool) -> Result<bool> {
        let moved = self.progress()?;
        match (slept_long, moved) {
            (true, _) => self.snoozed(Snooze::TimedOut)?,
            (false, false) => self.snoozed(Snooze::Continue)?,
            (false, true) => {}
        }
        Ok(moved)
    }
}
