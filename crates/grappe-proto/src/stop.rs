//! A request, for the whole process, that the job stop: set by a signal
//! handler (SIGTERM from the launcher), seen by every engine of the
//! process the next time it checks its peers, which then fails with
//! [`Error::Stopped`](crate::Error::Stopped). Ranks waiting in runtime
//! calls so unwind and finish their traces before the process ends.

use std::sync::atomic::{AtomicI32, Ordering};

/// The signal that asked for the stop, 0 while none did.
static STOP_SIGNAL: AtomicI32 = AtomicI32::new(0);

/// Asks every engine of this process to stop, because of `signal`.
/// Async-signal-safe (one atomic store).
pub fn request(signal: i32) {
    STOP_SIGNAL.store(signal.max(1), Ordering::Release);
}

/// The signal that asked for the stop, if one did.
pub fn requested() -> Option<i32> {
    match STOP_SIGNAL.load(Ordering::Acquire) {
        0 => None,
        signal => Some(signal),
    }
}
