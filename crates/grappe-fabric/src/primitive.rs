//! The atomics and the futex that the ring and doorbell protocols are
//! written with.
//!
//! A normal build uses std's atomics and the Linux futex. A build with
//! `--cfg loom` (see `scripts/loom`) swaps in loom's atomics and a
//! mutex/condvar model of the futex, so that loom can run the same
//! protocol code under every interleaving it explores. Only the models in
//! the loom tests run in that build: loom's atomics must be created inside
//! a model, so memory mapped and zeroed by the host segment cannot hold
//! them.

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicU32, AtomicU64, fence};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU32, AtomicU64, fence};

pub(crate) use futex::Futex;

#[cfg(not(loom))]
mod futex {
    use std::sync::atomic::AtomicU32;
    use std::time::Duration;

    /// A 32-bit word that threads and processes can sleep on until it
    /// changes (shared futex operations: the word may sit in memory that
    /// several processes map).
    #[repr(transparent)]
    #[derive(Debug, Default)]
    pub(crate) struct Futex(AtomicU32);

    impl std::ops::Deref for Futex {
        type Target = AtomicU32;

        fn deref(&self) -> &AtomicU32 {
            &self.0
        }
    }

    impl Futex {
        /// Blocks while the word holds `expected`, at most `timeout`.
        /// Returns true on timeout; may also return early (spuriously).
        pub(crate) fn wait(&self, expected: u32, timeout: Duration) -> bool {
            let ts = libc::timespec {
                tv_sec: timeout.as_secs() as libc::time_t,
                tv_nsec: timeout.subsec_nanos() as libc::c_long,
            };
            // SAFETY: FUTEX_WAIT reads the aligned u32 behind the word, which
            // stays valid for the call; `ts` outlives the call.
            let rc = unsafe {
                libc::syscall(
                    libc::SYS_futex,
                    self.0.as_ptr(),
                    libc::FUTEX_WAIT,
                    expected,
                    &ts as *const libc::timespec,
                    std::ptr::null::<u32>(),
                    0u32,
                )
            };
            rc == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ETIMEDOUT)
        }

        /// Wakes every thread or process sleeping on the word.
        pub(crate) fn wake_all(&self) {
            // SAFETY: FUTEX_WAKE only uses the address as a key; it stays valid.
            unsafe {
                libc::syscall(libc::SYS_futex, self.0.as_ptr(), libc::FUTEX_WAKE, i32::MAX, 0usize, 0usize, 0u32);
            }
        }
    }
}

#[cfg(loom)]
mod futex {
    use loom::sync::atomic::AtomicU32;
    use loom::sync::{Condvar, Mutex};
    use std::sync::atomic::Ordering;
    use std::time::Duration;

    /// The futex as loom sees it: the kernel compares the word and queues
    /// the sleeper under one lock, and a wake takes the same lock, so a
    /// wake that follows a change of the word always finds the sleeper
    /// queued or the word changed. Timeouts are not modelled: a sleep that
    /// no wake ends is a deadlock, which loom reports (a lost wake-up).
    #[derive(Debug, Default)]
    pub(crate) struct Futex {
        word: AtomicU32,
        queue: Mutex<()>,
        woken: Condvar,
    }

    impl std::ops::Deref for Futex {
        type Target = AtomicU32;

        fn deref(&self) -> &AtomicU32 {
            &self.word
        }
    }

    impl Futex {
        pub(crate) fn wait(&self, expected: u32, _timeout: Duration) -> bool {
            let queued = self.queue.lock().unwrap();
            if self.word.load(Ordering::Relaxed) == expected {
                drop(self.woken.wait(queued).unwrap());
            }
            false
        }

        pub(crate) fn wake_all(&self) {
            let _queue = self.queue.lock().unwrap();
            self.woken.notify_all();
        }
    }
}
