//! A link: one connected, non-blocking TCP stream carrying records both
//! ways, used like a mailbox pair (push on one side, peek and consume on
//! the other).
//!
//! Sending writes straight to the socket; what the socket does not take
//! waits in a backlog that later pushes and [`Link::flush`] write first, so
//! records leave in order. A backlog past [`BACKLOG_LIMIT`] makes pushes
//! refuse, as a full mailbox does, until the peer reads.
//!
//! A link may emulate a slower network ([`Link::shape`], see
//! [`crate::shape`]) and may be cut from outside ([`Link::cutter`]), as a
//! failing network would: both are for tests and for users who need a
//! worse network than theirs. An unshaped link pays one branch per push
//! and per flush for them.

use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::socket::{MsgFlags, setsockopt, sockopt};

use crate::error::{Cut, LinkError};
use crate::frame::{FrameHeader, HEADER_BYTES, encode_header};
use crate::inbound::Inbound;
use crate::shape::{Shaper, Shaping};
use crate::{BACKLOG_LIMIT, MAX_PAYLOAD, Meta};

/// Socket buffer sizes asked for (the kernel may grant less: it caps them
/// at `net.core.wmem_max` / `rmem_max`).
const SOCKET_BUFFER_BYTES: usize = 4 << 20;

/// The fill buffer of [`Link::try_push_with`] is kept for the next record
/// up to this size, and given back above it.
const SCRATCH_KEEP: usize = 1 << 20;

/// Pieces of one write: the backlog's two halves, a frame header, a
/// payload in two parts.
const MAX_PIECES: usize = 5;

/// One connected, authenticated, non-blocking TCP stream to a peer rank.
///
/// Dropping a link closes the connection and loses its backlog: flush
/// until [`Link::flush`] says the backlog is empty first.
#[derive(Debug)]
pub struct Link {
    /// Shared with nobody but a [`Cutter`]'s weak reference.
    stream: Arc<TcpStream>,
    peer: SocketAddr,
    /// Frame bytes the socket has not taken yet, in stream order; on a
    /// shaped link, its last [`Shaper::held_bytes`] are not released yet.
    backlog: VecDeque<u8>,
    inbound: Inbound,
    scratch: Vec<u8>,
    /// Set by [`Link::shape`]: the link emulates a slower network.
    shaper: Option<Box<Shaper>>,
    /// Set once a [`Cutter`] exists.
    severance: Option<Arc<Severance>>,
}

/// What a link, its halves once split, and its cutter share.
#[derive(Debug)]
struct Severance {
    /// True once the cutter cut the connection.
    cut: AtomicBool,
    /// The sockets of the link and of its halves: the cutter shuts down
    /// one that is still open, but does not keep them open (a link
    /// dropped closes its connection as usual).
    sockets: Mutex<Vec<Weak<TcpStream>>>,
}

/// Cuts a link's connection from outside the link, as a failing network
/// would: both directions are shut down, so the link's owner reads the end
/// of the stream and fails to write ([`LinkError::Severed`] on both), and
/// the peer reads the end of the stream.
///
/// A cutter does not keep the connection open: once the link (both
/// halves, if split) is dropped, there is nothing to cut.
#[derive(Debug)]
pub struct Cutter {
    severance: Arc<Severance>,
    peer: SocketAddr,
}

impl Cutter {
    /// Shuts the connection down both ways. Cutting a connection that is
    /// closed already does nothing.
    pub fn cut(&self) -> Result<(), LinkError> {
        self.severance.cut.store(true, Ordering::SeqCst);
        let sockets = self.severance.sockets.lock().unwrap_or_else(PoisonError::into_inner);
        // Any of the descriptors shuts the one connection down.
        let Some(socket) = sockets.iter().find_map(Weak::upgrade) else { return Ok(()) };
        match socket.shutdown(Shutdown::Both) {
            Err(e) if e.kind() != io::ErrorKind::NotConnected => {
                Err(LinkError::Io { op: "cut the connection to", addr: self.peer, source: e })
            }
            _ => Ok(()),
        }
    }

    /// The peer of the link this cuts.
    pub fn peer_addr(&self) -> SocketAddr {
        self.peer
    }
}

/// A record at the head of a link's inbound stream, borrowed until
/// [`Link::consume`].
#[derive(Debug, Clone, Copy)]
pub struct Incoming<'a> {
    meta: Meta,
    payload: &'a [u8],
}

impl<'a> Incoming<'a> {
    /// The protocol words of the record.
    pub fn meta(&self) -> Meta {
        self.meta
    }

    /// The payload.
    pub fn payload(&self) -> &'a [u8] {
        self.payload
    }

    /// Payload length in bytes.
    pub fn len(&self) -> usize {
        self.payload.len()
    }

    /// True for an empty payload.
    pub fn is_empty(&self) -> bool {
        self.payload.is_empty()
    }
}

impl Link {
    /// Wraps a connected stream: non-blocking, TCP_NODELAY, large
    /// SO_SNDBUF/SO_RCVBUF (4 MiB asked).
    pub fn new(stream: TcpStream) -> Result<Link, LinkError> {
        let peer = stream.peer_addr().map_err(|source| LinkError::Io {
            op: "configure the connection to",
            addr: stream.local_addr().unwrap_or(SocketAddr::from(([0, 0, 0, 0], 0))),
            source,
        })?;
        let configure = |source: io::Error| LinkError::Io { op: "configure the connection to", addr: peer, source };
        stream.set_nonblocking(true).map_err(configure)?;
        stream.set_nodelay(true).map_err(configure)?;
        setsockopt(&stream, sockopt::SndBuf, &SOCKET_BUFFER_BYTES).map_err(|e| configure(e.into()))?;
        setsockopt(&stream, sockopt::RcvBuf, &SOCKET_BUFFER_BYTES).map_err(|e| configure(e.into()))?;
        Ok(Link {
            stream: Arc::new(stream),
            peer,
            backlog: VecDeque::new(),
            inbound: Inbound::new(),
            scratch: Vec::new(),
            shaper: None,
            severance: None,
        })
    }

    /// Makes the link emulate a slower network from now on (see
    /// [`crate::shape`]): every frame pushed is held until the emulated
    /// line has carried it and `shaping.delay` has passed, then handed to
    /// the socket by [`Link::flush`]. Held frames count
    /// in [`Link::backlog_bytes`] and against [`BACKLOG_LIMIT`], as bytes
    /// waiting in a slow network's queues do. Watch
    /// [`Link::release_timer_fd`] to flush when a frame is due. Shaping a
    /// shaped link changes the shaping of the frames pushed from then on.
    pub fn shape(&mut self, shaping: Shaping) -> Result<(), LinkError> {
        match &mut self.shaper {
            Some(shaper) => shaper.set_shaping(shaping),
            None => {
                let shaper = Shaper::new(shaping).map_err(|errno| LinkError::Io {
                    op: "create the release timer of the link to",
                    addr: self.peer,
                    source: errno.into(),
                })?;
                self.shaper = Some(Box::new(shaper));
            }
        }
        Ok(())
    }

    /// The timer of a shaped link, readable while a held frame is due and
    /// not released by [`Link::flush`]: watch it (with
    /// [`Interest::ReadableOnce`](crate::Interest::ReadableOnce), armed
    /// before sleeping) to flush then. `None` for a link that is not shaped.
    pub fn release_timer_fd(&self) -> Option<RawFd> {
        self.shaper.as_ref().map(|shaper| shaper.timer_fd())
    }

    /// Stops shaping, closing the release timer; frames still held stay
    /// in the backlog, released. For a link that broke.
    pub(crate) fn stop_shaping(&mut self) {
        self.shaper = None;
    }

    /// A [`Cutter`] of this link's connection. Make it before
    /// [`Link::split`], so that both halves know a cut from a peer's
    /// close.
    pub fn cutter(&mut self) -> Cutter {
        let stream = &self.stream;
        let severance = self.severance.get_or_insert_with(|| {
            Arc::new(Severance { cut: AtomicBool::new(false), sockets: Mutex::new(vec![Arc::downgrade(stream)]) })
        });
        Cutter { severance: severance.clone(), peer: self.peer }
    }

    /// Appends a record. Writes straight to the socket (one writev of
    /// whatever is queued, the frame header and the payload); what the
    /// socket does not take is copied into the backlog.
    ///
    /// `Ok(false)`, nothing appended, when the backlog holds
    /// [`BACKLOG_LIMIT`] bytes or more even after writing what the socket
    /// takes of it: like a full mailbox, the caller retries later.
    /// A payload over [`MAX_PAYLOAD`] is an error.
    pub fn try_push(&mut self, meta: Meta, payload: &[u8]) -> Result<bool, LinkError> {
        self.try_push_parts(meta, &[], payload)
    }

    /// As [`Link::try_push`], the payload in two parts, `head` then
    /// `body` (a few protocol bytes ahead of a message's data): both go
    /// in the same write as the frame header, never joined in a buffer
    /// first.
    pub fn try_push_parts(&mut self, meta: Meta, head: &[u8], body: &[u8]) -> Result<bool, LinkError> {
        if !self.can_push(head.len() + body.len())? {
            return Ok(false);
        }
        self.send_frame(meta, [head, body])?;
        Ok(true)
    }

    /// As [`Link::try_push`], the payload written by `fill` into a buffer
    /// of `len` bytes. `fill` is not called when the push is refused.
    pub fn try_push_with(&mut self, meta: Meta, len: usize, fill: impl FnOnce(&mut [u8])) -> Result<bool, LinkError> {
        if !self.can_push(len)? {
            return Ok(false);
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        scratch.resize(len, 0);
        fill(&mut scratch);
        let sent = self.send_frame(meta, [&[], &scratch]);
        if scratch.capacity() <= SCRATCH_KEEP {
            self.scratch = scratch;
        }
        sent.map(|()| true)
    }

    /// Writes what the socket takes of the backlog; `Ok(true)` when the
    /// backlog is empty.
    pub fn flush(&mut self) -> Result<bool, LinkError> {
        let released = match &mut self.shaper {
            None => self.backlog.len(),
            Some(shaper) => {
                shaper.release_due(Instant::now()).map_err(|errno| timer_error(self.peer, errno))?;
                self.backlog.len() - shaper.held_bytes()
            }
        };
        self.write_backlog(released)?;
        Ok(self.backlog.is_empty())
    }

    /// Bytes waiting in the backlog for the socket (held ones included, on
    /// a shaped link).
    pub fn backlog_bytes(&self) -> usize {
        self.backlog.len()
    }

    /// The record at the head of the inbound stream, reading the socket
    /// (non-blocking) if no whole record is buffered; `Ok(None)` if none is
    /// complete yet. The borrow ends before [`Link::consume`].
    pub fn peek(&mut self) -> Result<Option<Incoming<'_>>, LinkError> {
        if !self.read_until_record()? {
            return Ok(None);
        }
        let Ok(Some(header)) = self.inbound.head() else {
            unreachable!("read_until_record saw a whole record at the head")
        };
        Ok(Some(Incoming { meta: header.meta, payload: self.inbound.payload() }))
    }

    /// Drops the record [`Link::peek`] returned.
    ///
    /// # Panics
    /// If `peek` did not return a record since the last `consume`.
    pub fn consume(&mut self) {
        self.inbound.consume();
    }

    /// Makes the connection fail once the peer has not answered for about
    /// `timeout` (whole seconds, at least 2): keepalive probes after a
    /// quarter of it idle, every eighth of it, as many as fit in it, and
    /// the same limit on data left unacknowledged. A host that vanishes
    /// without closing its connections (powered off, its link down) then
    /// breaks them, and the ranks waiting for it fail instead of waiting
    /// forever. A short timeout also breaks connections that a lossy
    /// network only slows down: retransmissions back off exponentially
    /// from 200 ms, so with 20% of packets lost one segment in a few
    /// hundred waits more than 2 s.
    pub fn detect_loss_after(&self, timeout: Duration) -> Result<(), LinkError> {
        let total = timeout.as_secs().max(2) as u32;
        let idle = (total / 4).max(1);
        let interval = (total / 8).max(1);
        let probes = ((total - idle) / interval).max(1);
        let millis = total.saturating_mul(1000);
        let configure = |e: Errno| LinkError::Io { op: "set the loss timeout of", addr: self.peer, source: e.into() };
        setsockopt(&self.stream, sockopt::KeepAlive, &true).map_err(configure)?;
        setsockopt(&self.stream, sockopt::TcpKeepIdle, &idle).map_err(configure)?;
        setsockopt(&self.stream, sockopt::TcpKeepInterval, &interval).map_err(configure)?;
        setsockopt(&self.stream, sockopt::TcpKeepCount, &probes).map_err(configure)?;
        setsockopt(&self.stream, sockopt::TcpUserTimeout, &millis).map_err(configure)
    }

    /// The payload of the record [`Link::peek`] returned last.
    pub(crate) fn head_payload(&self) -> &[u8] {
        self.inbound.payload()
    }

    /// A second link on the same connection (the socket duplicated), with
    /// its own backlog and inbound buffer: for [`Link::split`].
    pub(crate) fn duplicate(&self) -> Result<Link, LinkError> {
        let stream = self.stream.try_clone().map_err(|source| LinkError::Io {
            op: "duplicate the connection to",
            addr: self.peer,
            source,
        })?;
        let mut link = Link::new(stream)?;
        if let Some(severance) = &self.severance {
            severance.sockets.lock().unwrap_or_else(PoisonError::into_inner).push(Arc::downgrade(&link.stream));
            link.severance = Some(severance.clone());
        }
        Ok(link)
    }

    /// The socket, to watch for readiness.
    pub fn raw_fd(&self) -> RawFd {
        self.stream.as_raw_fd()
    }

    /// The peer's address.
    pub fn peer_addr(&self) -> SocketAddr {
        self.peer
    }

    /// Checks the size, and makes the backlog go under the limit if the
    /// socket takes enough of it.
    fn can_push(&mut self, len: usize) -> Result<bool, LinkError> {
        if len > MAX_PAYLOAD {
            return Err(LinkError::TooLarge { peer: self.peer, len, max: MAX_PAYLOAD });
        }
        Ok(self.backlog.len() < BACKLOG_LIMIT || (self.flush()? || self.backlog.len() < BACKLOG_LIMIT))
    }

    /// Writes what the socket takes of the first `released` bytes of the
    /// backlog.
    fn write_backlog(&mut self, released: usize) -> Result<(), LinkError> {
        let (front, back) = self.backlog.as_slices();
        let front = &front[..front.len().min(released)];
        let back = &back[..released - front.len()];
        let written = self.send(&[front, back])?;
        self.backlog.drain(..written);
        Ok(())
    }

    /// Sends a frame whose payload is `parts` end to end: at once on a
    /// plain link, held on a shaped one.
    fn send_frame(&mut self, meta: Meta, parts: [&[u8]; 2]) -> Result<(), LinkError> {
        let len = parts[0].len() + parts[1].len();
        let header = encode_header(&FrameHeader { len: len as u32, meta });
        match &mut self.shaper {
            None => self.write_frame(&header, parts),
            Some(shaper) => {
                self.backlog.extend(&header);
                parts.iter().for_each(|part| self.backlog.extend(*part));
                let peer = self.peer;
                shaper.hold(HEADER_BYTES + len, Instant::now()).map_err(|errno| timer_error(peer, errno))
            }
        }
    }

    /// The error of a stream that ended: the peer closed it, unless a
    /// [`Cutter`] did.
    fn ended(&self, cut: Option<Cut>) -> LinkError {
        match &self.severance {
            Some(severance) if severance.cut.load(Ordering::SeqCst) => LinkError::Severed { peer: self.peer },
            _ => LinkError::Closed { peer: self.peer, cut },
        }
    }

    /// Writes the backlog, then the frame, in one call; queues the rest.
    fn write_frame(&mut self, header: &[u8], [head, body]: [&[u8]; 2]) -> Result<(), LinkError> {
        let (front, back) = self.backlog.as_slices();
        let mut written = self.send(&[front, back, header, head, body])?;
        let from_backlog = written.min(self.backlog.len());
        self.backlog.drain(..from_backlog);
        written -= from_backlog;
        for piece in [header, head, body] {
            let sent = written.min(piece.len());
            self.backlog.extend(&piece[sent..]);
            written -= sent;
        }
        Ok(())
    }

    /// One `sendmsg` of `pieces`: the bytes the socket took, 0 if it is
    /// full. `MSG_NOSIGNAL`: a closed peer is an error here, not a
    /// SIGPIPE that kills a process whose host program never ignored it.
    fn send(&self, pieces: &[&[u8]]) -> Result<usize, LinkError> {
        let mut slices = [IoSlice::new(&[]); MAX_PIECES];
        let mut count = 0;
        for piece in pieces.iter().filter(|piece| !piece.is_empty()) {
            slices[count] = IoSlice::new(piece);
            count += 1;
        }
        let slices = &slices[..count];
        if slices.is_empty() {
            return Ok(0);
        }
        let flags = MsgFlags::MSG_NOSIGNAL | MsgFlags::MSG_DONTWAIT;
        loop {
            match nix::sys::socket::sendmsg::<()>(self.raw_fd(), slices, &[], flags, None) {
                Ok(n) => return Ok(n),
                Err(Errno::EAGAIN) => return Ok(0),
                Err(Errno::EINTR) => continue,
                Err(Errno::EPIPE | Errno::ECONNRESET) => return Err(self.ended(None)),
                Err(errno) => return Err(LinkError::Io { op: "write to", addr: self.peer, source: errno.into() }),
            }
        }
    }

    /// Reads until a whole record is at the head (true) or the socket has
    /// nothing more now (false).
    fn read_until_record(&mut self) -> Result<bool, LinkError> {
        loop {
            match self.inbound.head() {
                Ok(Some(_)) => return Ok(true),
                Ok(None) => {}
                Err(bad) => return Err(LinkError::Frame { peer: self.peer, offset: bad.offset, detail: bad.detail }),
            }
            match self.inbound.read_from(&mut &*self.stream) {
                Ok(0) => return Err(self.ended(self.inbound.cut())),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return Err(self.ended(self.inbound.cut())),
                Err(source) => return Err(LinkError::Io { op: "read from", addr: self.peer, source }),
            }
        }
    }
}

fn timer_error(peer: SocketAddr, errno: Errno) -> LinkError {
    LinkError::Io { op: "set the release timer of the link to", addr: peer, source: errno.into() }
}
