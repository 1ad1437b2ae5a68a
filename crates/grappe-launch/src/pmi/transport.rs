//! The client's end of the PMI socket: taking over the inherited descriptor, and reading and
//! writing whole messages of either wire format.
#![allow(unsafe_code)] // Only `take_inherited`: adopting the fd number the launcher gave us.

use super::PmiError;
use crate::env;
use crate::wire::{WireMessage, pmi2, simple};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once `PMI_FD` has been adopted, so that a second adoption cannot close it twice.
static INHERITED_FD_TAKEN: AtomicBool = AtomicBool::new(false);

/// A PMI socket with buffered reads.
#[derive(Debug)]
pub struct Connection {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl Connection {
    /// Wraps a connected socket (tests pass one end of a socketpair).
    pub fn new(stream: UnixStream) -> Result<Connection, PmiError> {
        let writer = stream.try_clone().map_err(PmiError::io("setup"))?;
        Ok(Connection { reader: BufReader::new(stream), writer })
    }

    /// Adopts the socket whose number is in `PMI_FD`. The process may do this only once.
    pub fn take_inherited() -> Result<Connection, PmiError> {
        let text = env::required_var(env::PMI_FD)?;
        let fd = RawFd::try_from(env::parse_usize(env::PMI_FD, &text)?).map_err(|_| env::BadEnv {
            var: env::PMI_FD,
            value: text.clone(),
            reason: "is not a file descriptor number",
        })?;
        let owned = adopt_fd(fd, &text)?;
        Connection::new(UnixStream::from(owned))
    }

    /// Sends one PMI-1 line.
    pub fn send_line(&mut self, message: &WireMessage, during: &'static str) -> Result<(), PmiError> {
        let line = simple::encode_line(message).map_err(PmiError::malformed(during))?;
        self.write_all(line.as_bytes(), during)
    }

    /// Receives one PMI-1 line.
    pub fn recv_line(&mut self, during: &'static str) -> Result<WireMessage, PmiError> {
        let mut line = Vec::new();
        let limit = simple::MAX_LINE as u64;
        let read = (&mut self.reader).take(limit).read_until(b'\n', &mut line).map_err(PmiError::io(during))?;
        if read == 0 || (!line.ends_with(b"\n") && line.len() < simple::MAX_LINE) {
            return Err(PmiError::ServerClosed { during });
        }
        simple::parse_line(&line).map_err(PmiError::malformed(during))
    }

    /// Sends one PMI-2 frame.
    pub fn send_frame(&mut self, message: &WireMessage, during: &'static str) -> Result<(), PmiError> {
        let frame = pmi2::encode_frame(message).map_err(PmiError::malformed(during))?;
        self.write_all(frame.as_bytes(), during)
    }

    /// Receives one PMI-2 frame.
    pub fn recv_frame(&mut self, during: &'static str) -> Result<WireMessage, PmiError> {
        let mut prefix = [0u8; pmi2::LENGTH_PREFIX];
        self.read_exact(&mut prefix, during)?;
        let len = pmi2::parse_length_prefix(&prefix).map_err(PmiError::malformed(during))?;
        let mut body = vec![0u8; len];
        self.read_exact(&mut body, during)?;
        pmi2::parse_body(&body).map_err(PmiError::malformed(during))
    }

    fn write_all(&mut self, bytes: &[u8], during: &'static str) -> Result<(), PmiError> {
        match self.writer.write_all(bytes) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(PmiError::ServerClosed { during }),
            other => other.map_err(PmiError::io(during)),
        }
    }

    fn read_exact(&mut self, buffer: &mut [u8], during: &'static str) -> Result<(), PmiError> {
        match self.reader.read_exact(buffer) {
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(PmiError::ServerClosed { during }),
            other => other.map_err(PmiError::io(during)),
        }
    }
}

/// Takes ownership of the inherited descriptor `fd` and marks it close-on-exec, so that programs
/// this process starts do not hold the launcher's socket open.
fn adopt_fd(fd: RawFd, text: &str) -> Result<OwnedFd, PmiError> {
    let bad = |reason| PmiError::from(env::BadEnv { var: env::PMI_FD, value: text.to_owned(), reason });
    // SAFETY: F_GETFD only reads the flags of descriptor `fd`; it fails with EBADF if `fd` is not
    // open and touches no memory.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
    if flags < 0 {
        return Err(bad("is not an open file descriptor"));
    }
    if INHERITED_FD_TAKEN.swap(true, Ordering::SeqCst) {
        return Err(bad("was already taken over by an earlier PMI connection"));
    }
    // SAFETY: `fd` is open (checked above), the launcher handed it to this process for PMI, and
    // the flag above guarantees no other OwnedFd in this process adopted it, so it is closed
    // exactly once, when this OwnedFd drops.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: F_SETFD on a descriptor we own changes only its close-on-exec flag.
    if unsafe { libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC) } < 0 {
        return Err(PmiError::Io { during: "setup", source: std::io::Error::last_os_error() });
    }
    Ok(owned)
}
