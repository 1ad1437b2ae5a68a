//! Writing on another thread while the caller fills the next buffer.
//!
//! An `O_DIRECT` write returns when the device has the bytes, so a program
//! that formats and writes on one thread waits through every transfer.
//! With the writes on a thread of their own, formatting and transfers
//! overlap: a Chrome export of 18 M events to a file on ext4 took 30–43%
//! less wall time here (BENCHMARKS.md, "Trace tools").
//!
//! Buffers go back and forth without a copy: the caller fills an
//! [`AlignedBuf`], hands it over with [`Behind::write`], and takes an empty
//! one with [`Behind::empty`] (a new one while there are fewer than
//! [`BUFFERS`], else the first one the writer is done with).

use std::io::{self, Write};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread;

use crate::buf::AlignedBuf;

/// Buffers in all: one being filled, one being written, one ready.
pub const BUFFERS: usize = 3;

/// The caller's end: hands full buffers to the writer thread and takes
/// empty ones back.
pub struct Behind {
    full: SyncSender<(AlignedBuf, usize)>,
    empty: Receiver<io::Result<AlignedBuf>>,
    made: usize,
}

impl Behind {
    /// An empty buffer of `len` bytes or more (its content is whatever it
    /// held before). Waits for the writer when all [`BUFFERS`] are out;
    /// the writer's error, if it failed.
    pub fn empty(&mut self, len: usize) -> io::Result<AlignedBuf> {
        let mut buf = if self.made < BUFFERS {
            self.made += 1;
            AlignedBuf::new(len)
        } else {
            self.empty.recv().map_err(|_| stopped())??
        };
        buf.grow(len);
        Ok(buf)
    }

    /// Hands the first `len` bytes of `buf` to the writer, to be written
    /// after those handed before.
    pub fn write(&mut self, buf: AlignedBuf, len: usize) -> io::Result<()> {
        if self.full.send((buf, len)).is_ok() {
            return Ok(());
        }
        // The writer stopped on an error, which it sent back after the
        // buffers it had written.
        loop {
            match self.empty.recv() {
                Ok(Ok(_written)) => continue,
                Ok(Err(e)) => return Err(e),
                Err(_) => return Err(stopped()),
            }
        }
    }
}

/// Runs `fill` with a [`Behind`] whose buffers a thread writes to `out`,
/// in order; then waits for the last write and flushes `out`. The first
/// write error is returned even if `fill` did not see it.
pub fn write_behind<R>(out: &mut (dyn Write + Send), fill: impl FnOnce(&mut Behind) -> R) -> io::Result<R> {
    let (full_tx, full_rx) = sync_channel::<(AlignedBuf, usize)>(BUFFERS);
    let (empty_tx, empty_rx) = sync_channel(BUFFERS);
    thread::scope(|scope| {
        let writer = thread::Builder::new()
            .name("grappe-writer".into())
            .spawn_scoped(scope, move || write_all_of(out, full_rx, empty_tx))?;
        let mut behind = Behind { full: full_tx, empty: empty_rx, made: 0 };
        let result = fill(&mut behind);
        drop(behind);
        match writer.join() {
            Ok(written) => written.map(|()| result),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

/// The writer thread: writes each buffer, sends it back empty; stops at
/// the first error (sent back too).
fn write_all_of(
    out: &mut (dyn Write + Send),
    full: Receiver<(AlignedBuf, usize)>,
    empty: SyncSender<io::Result<AlignedBuf>>,
) -> io::Result<()> {
    for (buf, len) in full {
        if let Err(e) = out.write_all(&buf.bytes()[..len]) {
            let _ = empty.send(Err(copy_of(&e)));
            return Err(e);
        }
        // The caller may have stopped taking buffers (it is finishing).
        let _ = empty.try_send(Ok(buf));
    }
    out.flush()
}

/// The same error for the caller (`io::Error` is not `Clone`).
fn copy_of(e: &io::Error) -> io::Error {
    match e.raw_os_error() {
        Some(code) => io::Error::from_raw_os_error(code),
        None => io::Error::new(e.kind(), e.to_string()),
    }
}

fn stopped() -> io::Error {
    io::Error::other("the writer thread stopped")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fills buffers with a counter's bytes, `len` at a time.
    fn pattern(behind: &mut Behind, rounds: usize, len: usize) -> io::Result<Vec<u8>> {
        let mut expected = Vec::new();
        for round in 0..rounds {
            let mut buf = behind.empty(len)?;
            for (i, b) in buf.bytes_mut()[..len].iter_mut().enumerate() {
                *b = (round * 31 + i) as u8;
            }
            expected.extend_from_slice(&buf.bytes()[..len]);
            behind.write(buf, len)?;
        }
        Ok(expected)
    }

    #[test]
    fn buffers_are_written_in_order_and_reused() {
        let mut out = Vec::new();
        let expected = write_behind(&mut out, |b| {
            let expected = pattern(b, 20, 10_000)?;
            assert_eq!(b.made, BUFFERS, "buffers are recycled, not made anew");
            Ok::<_, io::Error>(expected)
        })
        .unwrap()
        .unwrap();
        assert_eq!(out, expected);
    }

    /// Takes `room` bytes, then fails.
    struct Full {
        room: usize,
        flushed: bool,
    }

    impl Write for Full {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            if self.room == 0 {
                return Err(io::Error::from_raw_os_error(nix::errno::Errno::ENOSPC as i32));
            }
            let n = b.len().min(self.room);
            self.room -= n;
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            self.flushed = true;
            Ok(())
        }
    }

    #[test]
    fn a_write_error_reaches_the_caller_and_the_result() {
        let mut out = Full { room: 25_000, flushed: false };
        let result = write_behind(&mut out, |b| pattern(b, 50, 10_000).map(|_| ()));
        let e = result.expect_err("the writer's error is returned");
        assert_eq!(e.raw_os_error(), Some(nix::errno::Errno::ENOSPC as i32));
        assert!(!out.flushed);
    }

    #[test]
    fn an_error_after_the_caller_is_done_is_still_returned() {
        let mut out = Full { room: 5_000, flushed: false };
        // One buffer, handed over without waiting for an empty one.
        let result = write_behind(&mut out, |b| pattern(b, 1, 10_000).map(|_| ()));
        assert_eq!(result.expect_err("error").raw_os_error(), Some(nix::errno::Errno::ENOSPC as i32));
    }

    #[test]
    fn the_output_is_flushed_at_the_end() {
        let mut out = Full { room: usize::MAX, flushed: false };
        write_behind(&mut out, |b| pattern(b, 3, 100)).unwrap().unwrap();
        assert!(out.flushed);
    }
}
