//! The readiness watcher: one thread per process waits on an edge-triggered
//! epoll set of sockets and calls back with a socket's token when it becomes
//! readable, writable again or hung up, or when a shaped link's release
//! timer expires. The engine's callback rings the owning rank's doorbell,
//! so a rank asleep on its futex wakes for data that arrives by TCP as it
//! does for a mailbox record, and to send a held frame once it is due.

use std::os::fd::{AsFd, BorrowedFd, RawFd};
use std::sync::Arc;
use std::thread::JoinHandle;

use nix::errno::Errno;
use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};
use nix::sys::eventfd::{EfdFlags, EventFd};

use crate::error::LinkError;

/// The token of the watcher's own stop event: not available to callers.
pub const STOP_TOKEN: u64 = u64::MAX;

/// Events taken per `epoll_wait`.
const BATCH: usize = 64;

/// A callback for ready descriptors, called on the watcher's thread.
pub type ReadyFn = Box<dyn Fn(u64) + Send + Sync>;

/// The process's readiness watcher (see the module's documentation).
#[derive(Debug)]
pub struct Watch {
    epoll: Arc<Epoll>,
    stop: EventFd,
    thread: Option<JoinHandle<()>>,
}

impl Watch {
    /// Starts the thread; `ready(token)` is called (on that thread)
    /// whenever a watched descriptor becomes readable, writable again, or
    /// hung up.
    pub fn start(ready: ReadyFn) -> Result<Watch, LinkError> {
        let failed = |op| move |errno: Errno| LinkError::Watch { op, source: errno.into() };
        let epoll = Arc::new(Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC).map_err(failed("create an epoll set"))?);
        let stop = EventFd::from_flags(EfdFlags::EFD_CLOEXEC | EfdFlags::EFD_NONBLOCK)
            .map_err(failed("create its stop eventfd"))?;
        epoll
            .add(stop.as_fd(), EpollEvent::new(EpollFlags::EPOLLIN, STOP_TOKEN))
            .map_err(failed("watch its eventfd"))?;
        let waiting = Arc::clone(&epoll);
        let thread = std::thread::Builder::new()
            .name("grappe-tcp-watch".to_owned())
            .spawn(move || watch_loop(&waiting, &*ready))
            .map_err(|source| LinkError::Watch { op: "start its thread", source })?;
        Ok(Watch { epoll, stop, thread: Some(thread) })
    }

    /// Watches `fd`, reporting it as `token` (any value but [`STOP_TOKEN`]).
    /// `fd` must stay open until [`Watch::remove`] (or be closed, which
    /// ends the watch too).
    pub fn add(&self, fd: RawFd, token: u64) -> Result<(), LinkError> {
        if token == STOP_TOKEN {
            let source = std::io::Error::new(std::io::ErrorKind::InvalidInput, "u64::MAX is the watcher's own token");
            return Err(LinkError::Watch { op: "add a descriptor with the reserved token u64::MAX", source });
        }
        let flags = EpollFlags::EPOLLIN | EpollFlags::EPOLLOUT | EpollFlags::EPOLLRDHUP | EpollFlags::EPOLLET;
        // SAFETY: the borrow lives only for this epoll_ctl call, during which
        // the caller keeps `fd` open (its contract); a closed `fd` makes the
        // kernel answer EBADF, nothing worse.
        let fd = unsafe { BorrowedFd::borrow_raw(fd) };
        self.epoll
            .add(fd, EpollEvent::new(flags, token))
            .map_err(|errno| LinkError::Watch { op: "add a descriptor to its epoll set", source: errno.into() })
    }

    /// Watches `fd` for `interest`, reporting it as `token`, as
    /// [`Watch::add`] does for every event. [`Interest::ReadableOnce`]
    /// reports one event, then nothing until [`Watch::rearm`]: for a rank
    /// that polls its sockets itself while it runs, and wants a wake-up
    /// only once it goes to sleep (the watcher then costs the machine
    /// nothing per message).
    pub fn add_interest(&self, fd: RawFd, token: u64, interest: Interest) -> Result<(), LinkError> {
        if token == STOP_TOKEN {
            let source = std::io::Error::new(std::io::ErrorKind::InvalidInput, "u64::MAX is the watcher's own token");
            return Err(LinkError::Watch { op: "add a descriptor with the reserved token u64::MAX", source });
        }
        // SAFETY: as in `add`.
        let fd = unsafe { BorrowedFd::borrow_raw(fd) };
        self.epoll
            .add(fd, EpollEvent::new(interest.flags(), token))
            .map_err(|errno| LinkError::Watch { op: "add a descriptor to its epoll set", source: errno.into() })
    }

    /// Arms `fd`, added with [`Interest::ReadableOnce`], for one more event
    /// (reported at once if it is readable already).
    pub fn rearm(&self, fd: RawFd, token: u64) -> Result<(), LinkError> {
        // SAFETY: as in `add`.
        let fd = unsafe { BorrowedFd::borrow_raw(fd) };
        let mut event = EpollEvent::new(Interest::ReadableOnce.flags(), token);
        self.epoll
            .modify(fd, &mut event)
            .map_err(|errno| LinkError::Watch { op: "arm a descriptor again", source: errno.into() })
    }

    /// Stops watching `fd`. A callback the thread had already begun may
    /// still run once; none starts for events after this returns.
    pub fn remove(&self, fd: RawFd) {
        // SAFETY: as in `add`; an fd already closed left the set by itself
        // and the kernel's EBADF or ENOENT is ignored.
        let fd = unsafe { BorrowedFd::borrow_raw(fd) };
        let _ = self.epoll.delete(fd);
    }
}

/// What to watch a descriptor for (see [`Watch::add_interest`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interest {
    /// Readable or hung up, once per [`Watch::rearm`]; for a shaped link's
    /// [release timer](crate::Link::release_timer_fd), a held frame is due.
    ReadableOnce,
    /// Writable again after a write found the socket full (edge-triggered).
    Writable,
}

impl Interest {
    fn flags(self) -> EpollFlags {
        match self {
            Interest::ReadableOnce => EpollFlags::EPOLLIN | EpollFlags::EPOLLRDHUP | EpollFlags::EPOLLONESHOT,
            Interest::Writable => EpollFlags::EPOLLOUT | EpollFlags::EPOLLET,
        }
    }
}

impl Drop for Watch {
    /// Stops and joins the thread.
    fn drop(&mut self) {
        // An eventfd write fails only when the counter would overflow,
        // which one write of 1 cannot do.
        let _ = self.stop.write(1);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn watch_loop(epoll: &Epoll, ready: &(dyn Fn(u64) + Send + Sync)) {
    let mut events = [EpollEvent::empty(); BATCH];
    loop {
        let count = match epoll.wait(&mut events, EpollTimeout::NONE) {
            Ok(count) => count,
            Err(Errno::EINTR) => continue,
            // Only a bad epoll descriptor or event buffer fails here: a bug.
            Err(errno) => panic!("the readiness watcher's epoll_wait failed: {errno}"),
        };
        for event in &events[..count] {
            match event.data() {
                STOP_TOKEN => return,
                token => ready(token),
            }
        }
    }
}
