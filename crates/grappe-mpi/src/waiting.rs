//! How a blocking call waits when other threads of the program may call
//! MPI meanwhile (`MPI_THREAD_MULTIPLE`).
//!
//! Every call holds the library's lock (see [`state`](crate::state)). A
//! blocking call that held it while it waited would keep the program's
//! other threads out of MPI, and a thread waiting for a message that
//! another thread of its process is about to send would wait forever. So
//! under `MPI_THREAD_MULTIPLE` a blocking call starts its operation as a
//! request and polls it, letting go of the lock between polls: it spins
//! a little, then yields, then sleeps. One sleeping waiter sleeps on the
//! rank's doorbell, where senders ring; the others sleep until a call of
//! another thread may have completed what they wait for: a call that let
//! go of the lock after making progress bumps a generation and wakes them
//! (and rings the doorbell for the first).
//!
//! At lower thread levels blocking calls wait inside the engine, lock
//! held, as they always did: nothing here costs them anything, but for
//! the blocking collectives of a job where some rank asked for
//! `MPI_THREAD_MULTIPLE`, which every rank then runs as requests.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};

use grappe_comm::RankBell;
use parking_lot::{Condvar, Mutex};

use crate::errors::{MpiError, Result};
use crate::state::{self, Locked};

/// Whether the library provides `MPI_THREAD_MULTIPLE` in this process.
static MULTIPLE: AtomicBool = AtomicBool::new(false);

/// Whether blocking collectives run as non-blocking ones waited for
/// outside the lock: set at init on every rank of the job alike when any
/// rank asked for `MPI_THREAD_MULTIPLE`, since the two ways of running a
/// collective do not meet.
static COLLECTIVES_AS_REQUESTS: AtomicBool = AtomicBool::new(false);

/// Bumped whenever a call lets go of the lock after it may have made progress.
static GENERATION: AtomicU64 = AtomicU64::new(0);
/// Waiters asleep on [`CHANGED`].
static SLEEPERS: AtomicUsize = AtomicUsize::new(0);
/// Taken by the one waiter asleep on the rank's doorbell.
static BELL_TAKEN: AtomicBool = AtomicBool::new(false);
static PARKED: Mutex<()> = Mutex::new(());
static CHANGED: Condvar = Condvar::new();

pub fn set_levels(multiple: bool, collectives_as_requests: bool) {
    MULTIPLE.store(multiple, SeqCst);
    COLLECTIVES_AS_REQUESTS.store(collectives_as_requests, SeqCst);
}

/// True if blocking calls wait outside the lock.
#[inline]
pub fn multiple() -> bool {
    MULTIPLE.load(std::sync::atomic::Ordering::Relaxed)
}

/// True if blocking collectives run as requests (see [`COLLECTIVES_AS_REQUESTS`]).
#[inline]
pub fn collectives_as_requests() -> bool {
    COLLECTIVES_AS_REQUESTS.load(std::sync::atomic::Ordering::Relaxed)
}

/// Said by a call letting go of the lock after it may have made progress:
/// waiters look again.
pub fn progress_made(bell: &RankBell) {
    GENERATION.fetch_add(1, SeqCst);
    if SLEEPERS.load(SeqCst) > 0 {
        // Taking the mutex orders this after a sleeper's look at the
        // generation, or before it: either it sees the new generation or
        // it is asleep and hears the notification.
        drop(PARKED.lock());
        CHANGED.notify_all();
    }
    if BELL_TAKEN.load(SeqCst) {
        bell.ring();
    }
}

/// Polls under the lock until `poll` yields a value (after a pass of the
/// engine's progress each time, but for a first look), letting go of the
/// lock between polls; returns the lock with the value. `call` names the
/// MPI function.
pub fn until<T>(
    call: &str,
    mut state: Locked,
    mut poll: impl FnMut(&mut Locked) -> Result<Option<T>>,
) -> Result<(Locked, T)> {
    // What completed as it started (an eager send) needs no pass of progress.
    if let Some(done) = poll(&mut state)? {
        return Ok((state, done));
    }
    let mut pause = Pause::new(state.bell.clone());
    loop {
        pause.before_poll();
        let seen = GENERATION.load(SeqCst);
        let polled = state.progress(pause.slept_long).and_then(|moved| Ok((moved, poll(&mut state)?)));
        match polled {
            Ok((_, Some(done))) => {
                pause.over();
                return Ok((state, done));
            }
            Err(error) => {
                pause.over();
                return Err(error);
            }
            Ok((moved, None)) => state.quiet = !moved,
        }
        drop(state);
        pause.between_polls(seen);
        state = state::lock(call)?;
    }
}

/// What a waiter does between two polls, as the engine's own waits do:
/// spin (not when ranks outnumber cores), yield for a while, then sleep,
/// on the rank's doorbell if no other waiter does, else until progress.
struct Pause {
    bell: RankBell,
    rounds: u32,
    yielding_since: Option<std::time::Instant>,
    /// This waiter sleeps after the next poll (decided before it, so that
    /// one that sleeps off the doorbell knows another waiter is on it).
    sleeps: bool,
    /// This waiter announced it sleeps on the doorbell next.
    on_bell: bool,
    /// The last sleep timed out: time to look for dead peers.
    slept_long: bool,
}

impl Pause {
    fn new(bell: RankBell) -> Pause {
        Pause { bell, rounds: 0, yielding_since: None, sleeps: false, on_bell: false, slept_long: false }
    }

    /// Before a poll: a waiter about to sleep on the doorbell says so
    /// first, so that a ring after the poll is not lost.
    fn before_poll(&mut self) {
        self.sleeps = self.yielding_since.is_some_and(|since| since.elapsed() >= self.bell.yield_for());
        self.on_bell = self.sleeps && BELL_TAKEN.compare_exchange(false, true, SeqCst, SeqCst).is_ok();
        if self.on_bell {
            self.bell.prepare();
        }
    }

    /// The wait is over (done or failed): withdraws a sleep announced.
    fn over(&mut self) {
        if self.on_bell {
            self.bell.cancel();
            BELL_TAKEN.store(false, SeqCst);
        }
    }

    /// Between two polls, the lock let go; `seen` is the generation
    /// before the last poll.
    fn between_polls(&mut self, seen: u64) {
        self.slept_long = false;
        if self.on_bell {
            self.slept_long = self.bell.sleep();
            BELL_TAKEN.store(false, SeqCst);
        } else if self.sleeps {
            self.slept_long = sleep_until_changed(seen, self.bell.timeout());
        } else if self.rounds < self.bell.spins() {
            std::hint::spin_loop();
        } else {
            self.yielding_since.get_or_insert_with(std::time::Instant::now);
            std::thread::yield_now();
        }
        self.rounds = self.rounds.saturating_add(1);
    }
}

/// Sleeps until the generation moves past `seen`, or for `timeout`; true
/// if it timed out.
fn sleep_until_changed(seen: u64, timeout: std::time::Duration) -> bool {
    let mut parked = PARKED.lock();
    SLEEPERS.fetch_add(1, SeqCst);
    let timed_out = GENERATION.load(SeqCst) == seen && CHANGED.wait_for(&mut parked, timeout).timed_out();
    SLEEPERS.fetch_sub(1, SeqCst);
    timed_out
}

/// An error for a call that the lock's release let another thread spoil:
/// the request it waited for was freed or completed by that thread, which
/// MPI forbids.
pub fn taken_meanwhile(call: &str, handle: std::ffi::c_int) -> MpiError {
    MpiError::new(
        crate::abi::class::REQUEST,
        format!("{call}: request {handle:#x} was completed or freed by another thread while this one waited for it"),
    )
}
