//! What a blocked rank does between two polls of its wait condition.

use std::time::Instant;

use grappe_fabric::Doorbell;
use grappe_fabric::doorbell::Wake;

use crate::WaitSettings;
use crate::worker;

/// What the caller should do after [`Backoff::snooze`]: poll again, and,
/// after a timeout, also check that the peers it waits for are alive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Snooze {
    /// Poll again.
    Continue,
    /// A long sleep timed out: poll again and look for dead peers.
    TimedOut,
}

/// The waiting state of one blocking call. Create one per wait, call
/// [`snooze`](Self::snooze) after every poll that found nothing, drop it
/// when the wait is over.
#[derive(Debug)]
pub struct Backoff<'a> {
    bell: &'a Doorbell,
    settings: &'a WaitSettings,
    snoozes: u32,
    yield_start: Option<Instant>,
    prepared: bool,
}

impl<'a> Backoff<'a> {
    /// A fresh wait. `bell` is the doorbell of the calling rank's worker.
    #[inline]
    pub fn new(bell: &'a Doorbell, settings: &'a WaitSettings) -> Backoff<'a> {
        Backoff { bell, settings, snoozes: 0, yield_start: None, prepared: false }
    }

    /// Gives way after an unsuccessful poll.
    ///
    /// Inside a worker hosting several ranks this switches to the next rank
    /// (the worker decides when to sleep). A rank alone on its thread spins,
    /// then yields to the OS, then sleeps on its doorbell; the poll after a
    /// call that announced the sleep is the final re-check.
    #[inline]
    pub fn snooze(&mut self) -> Snooze {
        let fresh = self.snoozes == 0;
        self.snoozes = self.snoozes.saturating_add(1);
        if let Some(resume) = worker::suspend_if_shared(fresh) {
            return resume;
        }
        self.alone()
    }

    fn alone(&mut self) -> Snooze {
        if self.prepared {
            self.prepared = false;
            self.snoozes = 1;
            self.yield_start = None;
            return match self.bell.sleep(self.settings.sleep_timeout) {
                Wake::TimedOut => Snooze::TimedOut,
                Wake::Rung | Wake::Woken => Snooze::Continue,
            };
        }
        if self.snoozes <= self.settings.spin_iters {
            std::hint::spin_loop();
            return Snooze::Continue;
        }
        // Reading the clock costs about as much as a poll: look at it only
        // every few yields (a yield takes a microsecond or more).
        let yields = self.snoozes - self.settings.spin_iters;
        if yields % 32 == 1 {
            let start = *self.yield_start.get_or_insert_with(Instant::now);
            if start.elapsed() >= self.settings.yield_for {
                self.bell.prepare();
                self.prepared = true;
                return Snooze::Continue;
            }
        }
        std::thread::yield_now();
        Snooze::Continue
    }
}

impl Drop for Backoff<'_> {
    fn drop(&mut self) {
        if self.prepared {
            self.bell.cancel();
        }
    }
}
