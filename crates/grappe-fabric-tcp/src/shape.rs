//! A slower network, emulated inside a link's sending side: where `tc
//! netem` is not available, a link can hold each frame back as a slower
//! line and a longer path would.
//!
//! A shaped link appends every frame to its backlog as usual, but marks it
//! *held* until its release time; only released bytes go to the socket.
//! A frame's release time is when an emulated line of
//! [`Shaping::rate`] bytes per second, busy with the frames before it,
//! finishes carrying it, plus [`Shaping::delay`]. Release times grow with
//! the frames' order, so the held frames are a queue and the first is
//! always the next due: records keep their order.
//!
//! A rank that sleeps while its frames are held must wake when the first
//! is due: the shaper keeps a timer (a `timerfd`) set to that time, which
//! the readiness watcher reports like a socket. The timer is readable
//! exactly while a held frame is due and not released: setting it for the
//! next frame clears its past expiry, and it is cleared when the last
//! held frame goes. So a rank may arm the watcher for it only when it
//! goes to sleep ([`Interest::ReadableOnce`]), as for its sockets, and
//! still wake for a frame that fell due while it ran. The timer is set
//! again only when the first held frame changes, so a rank that polls its
//! links in a loop makes no system call per poll.
//!
//! [`Interest::ReadableOnce`]: crate::Interest::ReadableOnce

use std::collections::VecDeque;
use std::num::NonZeroU64;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};

/// How a shaped link emulates a slower network (see the module's
/// documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shaping {
    /// One-way latency added to every frame.
    pub delay: Duration,
    /// The emulated line's rate in bytes per second (frame headers
    /// included); `None`: as fast as the socket takes them.
    pub rate: Option<NonZeroU64>,
}

impl Shaping {
    /// The time the emulated line takes to carry `bytes` (rounded up, so
    /// that no amount of bytes goes faster than the rate).
    pub fn line_time(&self, bytes: usize) -> Duration {
        match self.rate {
            None => Duration::ZERO,
            Some(rate) => {
                let nanos = (bytes as u128 * 1_000_000_000).div_ceil(u128::from(rate.get()));
                Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
            }
        }
    }
}

/// The held frames of a shaped link and the timer that wakes their owner.
#[derive(Debug)]
pub(crate) struct Shaper {
    shaping: Shaping,
    /// Release time and frame bytes of each held frame, in stream order:
    /// they are the last `held_bytes` bytes of the link's backlog.
    held: VecDeque<(Instant, usize)>,
    held_bytes: usize,
    /// When the emulated line is done with the frames given to it so far.
    line_free: Instant,
    timer: TimerFd,
    /// The release time the timer is set for.
    armed: Option<Instant>,
}

impl Shaper {
    pub fn new(shaping: Shaping) -> Result<Shaper, Errno> {
        let timer = TimerFd::new(ClockId::CLOCK_MONOTONIC, TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC)?;
        let now = Instant::now();
        Ok(Shaper { shaping, held: VecDeque::new(), held_bytes: 0, line_free: now, timer, armed: None })
    }

    pub fn set_shaping(&mut self, shaping: Shaping) {
        self.shaping = shaping;
    }

    /// Holds a frame of `bytes`, just appended to the backlog at `now`.
    pub fn hold(&mut self, bytes: usize, now: Instant) -> Result<(), Errno> {
        let carried = self.line_free.max(now) + self.shaping.line_time(bytes);
        self.line_free = carried;
        let release = carried + self.shaping.delay;
        self.held.push_back((release, bytes));
        self.held_bytes += bytes;
        if self.held.len() == 1 {
            self.arm(release, now)?;
        }
        Ok(())
    }

    /// Releases the frames due at `now`, and sets the timer for the next
    /// (or clears it if none is held).
    pub fn release_due(&mut self, now: Instant) -> Result<(), Errno> {
        while let Some(&(release, bytes)) = self.held.front() {
            if release > now {
                if self.armed != Some(release) {
                    self.arm(release, now)?;
                }
                return Ok(());
            }
            self.held.pop_front();
            self.held_bytes -= bytes;
        }
        if self.armed.take().is_some() {
            // Disarming clears a past expiry: the timer is not readable
            // while nothing is held.
            self.timer.unset()?;
        }
        Ok(())
    }

    /// Bytes at the end of the backlog that are not released yet.
    pub fn held_bytes(&self) -> usize {
        self.held_bytes
    }

    pub fn timer_fd(&self) -> RawFd {
        self.timer.as_fd().as_raw_fd()
    }

    /// Sets the timer to expire at `release` (relative to `now`: an
    /// `Instant` has no absolute value to give the kernel; the timer
    /// starts after `now` was read, so it never expires early). Setting
    /// the timer also clears a past expiry, so the next one is a new
    /// event for the watcher.
    fn arm(&mut self, release: Instant, now: Instant) -> Result<(), Errno> {
        // A zero one-shot would disarm the timer: wait at least 1 ns.
        let wait = release.saturating_duration_since(now).max(Duration::from_nanos(1));
        self.timer.set(Expiration::OneShot(TimeSpec::from_duration(wait)), TimerSetTimeFlags::empty())?;
        self.armed = Some(release);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shaper(delay_us: u64, rate: Option<u64>) -> Shaper {
        let rate = rate.map(|r| NonZeroU64::new(r).unwrap());
        Shaper::new(Shaping { delay: Duration::from_micros(delay_us), rate }).unwrap()
    }

    #[test]
    fn a_frame_is_released_after_its_delay_and_not_before() {
        let mut s = shaper(1000, None);
        let t0 = Instant::now();
        s.hold(100, t0).unwrap();
        s.release_due(t0 + Duration::from_micros(999)).unwrap();
        assert_eq!(s.held_bytes(), 100);
        s.release_due(t0 + Duration::from_micros(1000)).unwrap();
        assert_eq!(s.held_bytes(), 0);
    }

    #[test]
    fn the_line_carries_frames_one_after_another_at_its_rate() {
        // 1000 bytes per second: a 500-byte frame takes 0.5 s, the next
        // one begins when the first is carried.
        let mut s = shaper(0, Some(1000));
        let t0 = Instant::now();
        s.hold(500, t0).unwrap();
        s.hold(500, t0).unwrap();
        s.release_due(t0 + Duration::from_millis(499)).unwrap();
        assert_eq!(s.held_bytes(), 1000);
        s.release_due(t0 + Duration::from_millis(500)).unwrap();
        assert_eq!(s.held_bytes(), 500);
        s.release_due(t0 + Duration::from_millis(999)).unwrap();
        assert_eq!(s.held_bytes(), 500);
        s.release_due(t0 + Duration::from_millis(1000)).unwrap();
        assert_eq!(s.held_bytes(), 0);
        // An idle line does not bank time for later frames.
        let later = t0 + Duration::from_secs(10);
        s.hold(500, later).unwrap();
        s.release_due(later + Duration::from_millis(499)).unwrap();
        assert_eq!(s.held_bytes(), 500);
    }

    #[test]
    fn line_time_rounds_up() {
        let shaping = Shaping { delay: Duration::ZERO, rate: NonZeroU64::new(3) };
        assert_eq!(shaping.line_time(1), Duration::from_nanos(333_333_334));
        assert_eq!(Shaping { rate: None, ..shaping }.line_time(1 << 30), Duration::ZERO);
    }
}
