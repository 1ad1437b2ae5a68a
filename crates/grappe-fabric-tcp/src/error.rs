//! Errors of a TCP link. Each names the peer (its address) and carries the
//! numbers that explain the failure: the stream offset of a bad frame, the
//! bytes a cut record misses, the handshake phase that timed out.

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use crate::frame::FrameError;

/// What went wrong on a link, its listener or the readiness watcher.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LinkError {
    /// A system call on a socket failed.
    #[error("cannot {op} {addr}: {source}")]
    Io {
        /// What was being done: "read from", "write to", "connect to",
        /// "bind", "accept on", "configure the connection to".
        op: &'static str,
        /// The peer, or the local address for `bind` and `accept on`.
        addr: SocketAddr,
        /// The system's answer.
        #[source]
        source: std::io::Error,
    },
    /// The peer closed the connection (or reset it).
    #[error("peer {peer} closed the connection{}", cut_text(cut))]
    Closed {
        /// The peer.
        peer: SocketAddr,
        /// The record the peer was sending when it closed, if it had begun one.
        cut: Option<Cut>,
    },
    /// The connection was cut on purpose by a [`Cutter`](crate::Cutter),
    /// to emulate a network that fails.
    #[error("the connection to {peer} was cut by fault injection")]
    Severed {
        /// The peer.
        peer: SocketAddr,
    },
    /// The peer sent bytes that are not a frame.
    #[error("peer {peer} sent a bad frame at stream offset {offset}: {detail}")]
    Frame {
        /// The peer.
        peer: SocketAddr,
        /// Where the frame starts in the inbound stream (bytes since the
        /// handshake).
        offset: u64,
        /// What is wrong with it.
        detail: FrameError,
    },
    /// A record given to send is larger than [`MAX_PAYLOAD`](crate::MAX_PAYLOAD).
    #[error("record of {len} bytes for peer {peer} exceeds the largest payload a link carries, {max} bytes")]
    TooLarge {
        /// The peer it was meant for.
        peer: SocketAddr,
        /// Its payload bytes.
        len: usize,
        /// [`MAX_PAYLOAD`](crate::MAX_PAYLOAD).
        max: usize,
    },
    /// The peer broke the handshake's format: not this protocol, or
    /// another version of it.
    #[error("handshake with {peer} failed {phase}: {detail}")]
    Handshake {
        /// The peer.
        peer: SocketAddr,
        /// Where the handshake was.
        phase: Phase,
        /// What was read instead of what was expected.
        detail: String,
    },
    /// One side could not prove that it holds the job's secret.
    #[error("peer {peer} is not authenticated: {detail}")]
    Auth {
        /// The peer.
        peer: SocketAddr,
        /// Who failed to prove what.
        detail: String,
    },
    /// The peer did not go on with the handshake in time.
    #[error("handshake with {peer} timed out after {after:?} {phase}")]
    Timeout {
        /// The peer.
        peer: SocketAddr,
        /// Where the handshake was.
        phase: Phase,
        /// The time allowed for the whole handshake.
        after: Duration,
    },
    /// The readiness watcher's epoll or eventfd failed.
    #[error("readiness watcher cannot {op}: {source}")]
    Watch {
        /// What it was doing.
        op: &'static str,
        /// The system's answer.
        #[source]
        source: std::io::Error,
    },
}

/// A record cut by the end of the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cut {
    /// Stream offset where the record starts.
    pub offset: u64,
    /// The payload length its header announced, if the header arrived whole.
    pub announced: Option<u32>,
    /// Bytes of the frame (header included) that arrived.
    pub received: usize,
    /// Bytes of the frame (header included) that never arrived; for a cut
    /// header, the header's missing bytes.
    pub missing: usize,
}

impl LinkError {
    /// True if the peer closed the connection between two records: the
    /// end of its stream, an error only if more was expected.
    pub fn is_clean_close(&self) -> bool {
        matches!(self, LinkError::Closed { cut: None, .. })
    }

    /// True if the error is the peer's doing during a handshake (it did
    /// not authenticate, spoke another protocol, went silent): the
    /// listener refused that peer and stays usable.
    pub fn is_from_peer(&self) -> bool {
        matches!(
            self,
            LinkError::Auth { .. } | LinkError::Handshake { .. } | LinkError::Timeout { .. } | LinkError::Closed { .. }
        )
    }

    /// True if the peer refused the connection: nobody listens at its
    /// address (yet).
    pub fn is_refused(&self) -> bool {
        matches!(self, LinkError::Io { source, .. } if source.kind() == std::io::ErrorKind::ConnectionRefused)
    }
}

impl fmt::Display for Cut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Cut { offset, received, missing, .. } = *self;
        match self.announced {
            Some(len) => write!(
                f,
                "the record at stream offset {offset} ({len} payload bytes) misses {missing} bytes: \
                 {received} of its frame arrived"
            ),
            None => {
                write!(f, "the frame header at stream offset {offset} misses {missing} bytes: {received} of it arrived")
            }
        }
    }
}

fn cut_text(cut: &Option<Cut>) -> String {
    match cut {
        Some(cut) => format!(" in the middle of a record: {cut}"),
        None => String::new(),
    }
}

/// The steps of the connection handshake, for errors that say where it
/// stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Opening the TCP connection.
    Connecting,
    /// Sending the connecting side's hello and nonce.
    SendingHello,
    /// Waiting for the connecting side's hello and nonce.
    WaitingHello,
    /// Sending the accepting side's nonce.
    SendingNonce,
    /// Waiting for the accepting side's nonce.
    WaitingNonce,
    /// Sending the connecting side's proof.
    SendingProof,
    /// Waiting for the connecting side's proof.
    WaitingProof,
    /// Sending the accepting side's verdict and proof.
    SendingVerdict,
    /// Waiting for the accepting side's verdict and proof.
    WaitingVerdict,
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Phase::Connecting => "while connecting",
            Phase::SendingHello => "while sending the hello",
            Phase::WaitingHello => "while waiting for the hello",
            Phase::SendingNonce => "while sending the accepting side's nonce",
            Phase::WaitingNonce => "while waiting for the accepting side's nonce",
            Phase::SendingProof => "while sending the connecting side's proof",
            Phase::WaitingProof => "while waiting for the connecting side's proof",
            Phase::SendingVerdict => "while sending the verdict",
            Phase::WaitingVerdict => "while waiting for the verdict",
        })
    }
}

/// A job secret that cannot be read from its hexadecimal form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    /// Not 64 characters.
    #[error("a job secret is 64 hexadecimal digits, this one has {chars} characters")]
    Length {
        /// Characters given.
        chars: usize,
    },
    /// A character that is not a hexadecimal digit.
    #[error("character {at} of the job secret is {found:?}, not a hexadecimal digit")]
    Digit {
        /// Its position (in characters).
        at: usize,
        /// The character.
        found: char,
    },
}
