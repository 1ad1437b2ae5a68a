//! The launcher's wave scheduler (MPICH-V's checkpoint scheduler).
//!
//! It runs in `grappe run`, beside the job and across its restarts, and
//! asks for a wave by creating `DIR/REQUEST`: every interval, counted from
//! the end of the previous wave so that the ranks compute for a whole
//! interval between two however long waves take, and whenever the user
//! asks (`kill -USR1` on the launcher sets the flag it is given). Rank 0
//! takes the request at the next agreement (it becomes `DIR/WAVE`) and
//! removes it when the wave is over; the scheduler never asks twice at
//! once.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::local::CheckpointDir;

/// How often the scheduler looks at the directory and the flags.
const POLL: Duration = Duration::from_millis(5);

/// A running scheduler; dropping it stops it.
pub struct WaveScheduler {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl WaveScheduler {
    /// Starts asking for waves in `dir`: every `interval` if given, and
    /// each time `asked` is found set (it is then cleared).
    pub fn start(dir: PathBuf, interval: Option<Duration>, asked: Arc<AtomicBool>) -> std::io::Result<WaveScheduler> {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::Builder::new()
            .name("grappe-ckpt-scheduler".into())
            .spawn(move || schedule(&CheckpointDir::new(dir), interval, &asked, &stopped))?;
        Ok(WaveScheduler { stop, thread: Some(thread) })
    }
}

impl Drop for WaveScheduler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn schedule(dir: &CheckpointDir, interval: Option<Duration>, asked: &AtomicBool, stop: &AtomicBool) {
    let verbose = std::env::var_os("GRAPPE_FT_VERBOSE").is_some();
    let mut requested = 0u64;
    while !stop.load(Ordering::Relaxed) {
        if dir.wave_pending() {
            std::thread::sleep(POLL);
            continue;
        }
        let since = Instant::now();
        let mut on_request = false;
        while !stop.load(Ordering::Relaxed) && interval.is_none_or(|i| since.elapsed() < i) {
            if asked.swap(false, Ordering::Relaxed) {
                on_request = true;
                break;
            }
            std::thread::sleep(POLL);
        }
        if stop.load(Ordering::Relaxed) {
            return;
        }
        requested += 1;
        match dir.request_wave() {
            Ok(()) if verbose || on_request => {
                let why = if on_request { "on request" } else { "on the timer" };
                eprintln!("grappe: checkpoint wave asked for {why} ({requested} asked so far)");
            }
            Ok(()) => {}
            Err(e) => {
                eprintln!("grappe: cannot ask for a checkpoint wave: {e}");
                std::thread::sleep(interval.unwrap_or(Duration::from_secs(1)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
        let started = Instant::now();
        while !done() {
            assert!(started.elapsed() < Duration::from_secs(20), "never: {what}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn scratch(name: &str) -> grappe_testkit::Scratch {
        grappe_testkit::scratch(&format!("schedule-{name}"))
    }

    #[test]
    fn one_request_at_a_time_and_the_next_an_interval_after_the_wave() {
        let path = scratch("timer");
        let dir = CheckpointDir::new(path.to_path_buf());
        let interval = Duration::from_millis(40);
        let scheduler = WaveScheduler::start(path.to_path_buf(), Some(interval), Arc::default()).unwrap();
        for _ in 0..3 {
            wait_for("a request", || path.join("REQUEST").exists());
            assert!(dir.take_request(), "rank 0 takes it");
            // However long the wave, nothing more is asked meanwhile.
            std::thread::sleep(interval * 3);
            assert!(!path.join("REQUEST").exists(), "asked again during a wave");
            let over = Instant::now();
            dir.wave_over();
            wait_for("the next request", || path.join("REQUEST").exists());
            assert!(over.elapsed() >= interval, "asked {:?} after the wave, before the interval", over.elapsed());
        }
        drop(scheduler);
        let _ = std::fs::remove_dir_all(&path);
    }

    #[test]
    fn a_users_request_is_asked_for_at_once_without_a_timer() {
        let path = scratch("asked");
        let asked = Arc::new(AtomicBool::new(false));
        let scheduler = WaveScheduler::start(path.to_path_buf(), None, asked.clone()).unwrap();
        std::thread::sleep(Duration::from_millis(30));
        assert!(!path.join("REQUEST").exists(), "no timer, no request");
        asked.store(true, Ordering::Relaxed);
        wait_for("the request", || path.join("REQUEST").exists());
        assert!(!asked.load(Ordering::Relaxed), "the flag is cleared");
        drop(scheduler);
        let _ = std::fs::remove_dir_all(&path);
    }
}
