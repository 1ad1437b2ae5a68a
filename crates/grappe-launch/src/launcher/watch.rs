//! Turning child deaths and signals to the launcher into [`JobEvent`]s, as they happen.
//!
//! A thread per child blocks in `waitid(WEXITED | WNOWAIT)`: it learns of the death at once and
//! leaves the child a zombie, so its pid (and process group id) cannot be reused by an unrelated
//! process before the launcher has finished signalling the job and reaps it.

use super::outcome::ExitKind;
use super::supervise::JobEvent;
use nix::errno::Errno;
use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
use nix::unistd::Pid;
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::{Handle, Signals};
use std::sync::mpsc::Sender;
use std::thread::JoinHandle;

/// Reports on `events` when process `process` (pid `pid`) dies, without reaping it.
pub(super) fn watch_exit(process: usize, pid: u32, events: Sender<JobEvent>) -> std::io::Result<()> {
    std::thread::Builder::new().name(format!("grappe-wait-{process}")).spawn(move || {
        let exit = wait_without_reaping(pid);
        // The launcher stops listening only once every child has been accounted for.
        let _ = events.send(JobEvent::Exited { process, exit });
    })?;
    Ok(())
}

pub(crate) fn wait_without_reaping(pid: u32) -> Result<ExitKind, String> {
    let pid = Pid::from_raw(i32::try_from(pid).map_err(|_| format!("pid {pid} out of range"))?);
    loop {
        match waitid(Id::Pid(pid), WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT) {
            Ok(WaitStatus::Exited(_, code)) => return Ok(ExitKind::Code(code)),
            Ok(WaitStatus::Signaled(_, signal, _)) => return Ok(ExitKind::Signal(signal as i32)),
            Ok(_) | Err(Errno::EINTR) => continue,
            Err(e) => return Err(format!("waitid failed: {e}")),
        }
    }
}

/// Forwards SIGINT and SIGTERM received by the launcher as [`JobEvent::Signal`] while alive.
///
/// The handlers stay installed after it is dropped (signal-hook cannot restore the previous
/// disposition safely), so only a launcher about to exit, like `grappe run`, should use it.
pub(super) struct SignalForwarder {
    handle: Handle,
    thread: Option<JoinHandle<()>>,
}

impl SignalForwarder {
    pub(super) fn start(events: Sender<JobEvent>) -> std::io::Result<SignalForwarder> {
        let mut signals = Signals::new([SIGINT, SIGTERM])?;
        let handle = signals.handle();
        let thread = std::thread::Builder::new().name("grappe-signals".to_owned()).spawn(move || {
            for signal in signals.forever() {
                if events.send(JobEvent::Signal(signal)).is_err() {
                    break;
                }
            }
        })?;
        Ok(SignalForwarder { handle, thread: Some(thread) })
    }
}

impl Drop for SignalForwarder {
    fn drop(&mut self) {
        self.handle.close();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
