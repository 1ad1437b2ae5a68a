//! Forwarding the children's stdout and stderr, whole lines at a time, optionally labelled.
//!
//! One thread per stream of each child reads the pipe and writes complete lines to the sink in
//! one locked write each batch, so lines of different children never interleave mid-line and
//! the lines of one stream keep their order.

use super::OutputMode;
use std::io::{Read, Write};
use std::process::Child;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// A line longer than this is forwarded in pieces rather than buffered without bound.
const MAX_PENDING: usize = 64 * 1024;

/// Where forwarded output goes.
#[derive(Clone)]
enum Sink {
    Stdout,
    Stderr,
    Buffer(Arc<Mutex<Vec<u8>>>),
}

impl Sink {
    fn write(&self, bytes: &[u8]) {
        // The reader of our own stdout may be gone (`grappe run ... | head`); the job goes on.
        match self {
            Sink::Stdout => {
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(bytes).and_then(|()| out.flush());
            }
            Sink::Stderr => {
                let _ = std::io::stderr().lock().write_all(bytes);
            }
            Sink::Buffer(buffer) => buffer.lock().unwrap_or_else(PoisonError::into_inner).extend_from_slice(bytes),
        }
    }
}

/// The forwarding threads of a job and where they write.
pub(super) struct Forwarding {
    stdout: Sink,
    stderr: Sink,
    done_sender: Sender<()>,
    done: Receiver<()>,
    started: usize,
}

impl Forwarding {
    pub(super) fn new(mode: OutputMode) -> Forwarding {
        let (stdout, stderr) = match mode {
            OutputMode::Inherit => (Sink::Stdout, Sink::Stderr),
            OutputMode::Capture => (Sink::Buffer(Arc::default()), Sink::Buffer(Arc::default())),
        };
        let (done_sender, done) = channel();
        Forwarding { stdout, stderr, done_sender, done, started: 0 }
    }

    /// Starts forwarding the piped stdout and stderr of `child`, labelled with `label`.
    pub(super) fn forward_child(&mut self, child: &mut Child, label: Option<String>) -> std::io::Result<()> {
        if let Some(stdout) = child.stdout.take() {
            forward(stdout, label.clone(), self.stdout.clone(), self.done_sender.clone())?;
            self.started += 1;
        }
        if let Some(stderr) = child.stderr.take() {
            forward(stderr, label, self.stderr.clone(), self.done_sender.clone())?;
            self.started += 1;
        }
        Ok(())
    }

    /// A stream whose bytes arrive by [`OutputFeed::push`] (a process on another host, relayed by
    /// its agent) rather than from a pipe; counted like a piped stream until it is finished.
    pub(super) fn feed(&mut self, stderr: bool, label: Option<String>) -> OutputFeed {
        self.started += 1;
        let sink = match stderr {
            true => self.stderr.clone(),
            false => self.stdout.clone(),
        };
        OutputFeed { splitter: LineSplitter::new(label), sink, done: self.done_sender.clone() }
    }

    /// Forwards `source` (a remote shell's own stderr) to the stderr sink, labelled.
    pub(super) fn forward_stderr(&mut self, source: impl Read + Send + 'static, label: String) -> std::io::Result<()> {
        forward(source, Some(label), self.stderr.clone(), self.done_sender.clone())?;
        self.started += 1;
        Ok(())
    }

    /// Waits up to `patience` for every stream to reach end of file (a grandchild that
    /// inherited a pipe can hold it open forever), then returns what was captured.
    pub(super) fn finish(self, patience: Duration) -> (Vec<u8>, Vec<u8>) {
        let deadline = Instant::now() + patience;
        for _ in 0..self.started {
            if self.done.recv_timeout(deadline.saturating_duration_since(Instant::now())).is_err() {
                break;
            }
        }
        (self.stdout.captured(), self.stderr.captured())
    }
}

impl Sink {
    fn captured(&self) -> Vec<u8> {
        match self {
            Sink::Buffer(buffer) => buffer.lock().unwrap_or_else(PoisonError::into_inner).clone(),
            Sink::Stdout | Sink::Stderr => Vec::new(),
        }
    }
}

/// Output pushed in pieces, forwarded in whole labelled lines.
pub(super) struct OutputFeed {
    splitter: LineSplitter,
    sink: Sink,
    done: Sender<()>,
}

impl OutputFeed {
    pub(super) fn push(&mut self, bytes: &[u8]) {
        let sink = &self.sink;
        self.splitter.push(bytes, |chunk| sink.write(chunk));
    }

    /// Writes the partial last line and counts the stream as done.
    pub(super) fn finish(mut self) {
        let sink = &self.sink;
        self.splitter.finish(|chunk| sink.write(chunk));
        let _ = self.done.send(());
    }
}

/// Copies `source` to `sink` until end of file, prefixing every line with `label`, then sends
/// on `done`.
fn forward(
    mut source: impl Read + Send + 'static,
    label: Option<String>,
    sink: Sink,
    done: Sender<()>,
) -> std::io::Result<()> {
    std::thread::Builder::new().name("grappe-output".to_owned()).spawn(move || {
        let mut splitter = LineSplitter::new(label);
        let mut buffer = [0u8; 8192];
        loop {
            match source.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => splitter.push(&buffer[..n], |chunk| sink.write(chunk)),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        splitter.finish(|chunk| sink.write(chunk));
        // The launcher may have stopped waiting for us; that is fine.
        let _ = done.send(());
    })?;
    Ok(())
}

/// Cuts a byte stream into lines and labels them.
pub(crate) struct LineSplitter {
    label: Option<Vec<u8>>,
    pending: Vec<u8>,
}

impl LineSplitter {
    pub(crate) fn new(label: Option<String>) -> LineSplitter {
        LineSplitter { label: label.map(String::into_bytes), pending: Vec::new() }
    }

    /// Adds `bytes` and emits every line they complete, as one chunk.
    pub(crate) fn push(&mut self, bytes: &[u8], mut emit: impl FnMut(&[u8])) {
        self.pending.extend_from_slice(bytes);
        if let Some(last_newline) = self.pending.iter().rposition(|&b| b == b'\n') {
            let complete: Vec<u8> = self.pending.drain(..=last_newline).collect();
            emit(&self.labelled(&complete));
        }
        if self.pending.len() >= MAX_PENDING {
            self.finish(emit);
        }
    }

    /// Emits what is left, a partial last line; labelled output gets a newline added so that
    /// the next label starts a line.
    pub(crate) fn finish(&mut self, mut emit: impl FnMut(&[u8])) {
        if self.pending.is_empty() {
            return;
        }
        let mut rest = std::mem::take(&mut self.pending);
        if self.label.is_some() {
            rest.push(b'\n');
        }
        emit(&self.labelled(&rest));
    }

    /// `lines` (each ending in `\n`) with the label before each.
    fn labelled(&self, lines: &[u8]) -> Vec<u8> {
        let Some(label) = &self.label else {
            return lines.to_vec();
        };
        let mut out = Vec::with_capacity(lines.len() + label.len() * 4);
        for line in lines.split_inclusive(|&b| b == b'\n') {
            out.extend_from_slice(label);
            out.extend_from_slice(line);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(label: Option<&str>, pieces: &[&[u8]]) -> (Vec<u8>, usize) {
        let mut splitter = LineSplitter::new(label.map(str::to_owned));
        let mut out = Vec::new();
        let mut chunks = 0;
        for piece in pieces {
            splitter.push(piece, |chunk| {
                out.extend_from_slice(chunk);
                chunks += 1;
            });
        }
        splitter.finish(|chunk| {
            out.extend_from_slice(chunk);
            chunks += 1;
        });
        (out, chunks)
    }

    #[test]
    fn labels_start_every_line_even_across_reads() {
        let (out, _) = run(Some("[2] "), &[b"hel", b"lo\nwor", b"ld\n", b"a\nb\n"]);
        assert_eq!(out, b"[2] hello\n[2] world\n[2] a\n[2] b\n");
    }

    #[test]
    fn partial_last_line_is_flushed_and_terminated_when_labelled() {
        assert_eq!(run(Some("[0-3] "), &[b"done\nno newline"]).0, b"[0-3] done\n[0-3] no newline\n");
        assert_eq!(run(None, &[b"done\nno newline"]).0, b"done\nno newline");
    }

    #[test]
    fn unlabelled_output_passes_through_unchanged() {
        let (out, chunks) = run(None, &[b"a\nb", b"c\n"]);
        assert_eq!(out, b"a\nbc\n");
        assert_eq!(chunks, 2);
    }

    #[test]
    fn endless_lines_are_forwarded_in_bounded_pieces() {
        let long = vec![b'x'; MAX_PENDING + 10];
        let (out, chunks) = run(Some("[1] "), &[&long]);
        assert_eq!(chunks, 1);
        assert_eq!(out.len(), 4 + long.len() + 1);
    }
}
