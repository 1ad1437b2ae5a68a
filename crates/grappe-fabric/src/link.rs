//! The link seam: how a rank's protocol engine reaches one peer.
//!
//! The engine (crate `grappe-proto`) is written once over records: a
//! [`Meta`] of protocol words and a payload. It pushes records to a peer
//! through that peer's [`Outbox`] and reads the peer's records from its
//! [`Inbox`]. What carries them is a closed set, matched on the hot path
//! without dynamic dispatch:
//!
//! * [`Outbox::Ring`] / [`Inbox::Ring`]: the mailbox rings of a rank of the
//!   same host, in the host segment ([`crate::ring`]);
//! * [`Outbox::Tcp`] / [`Inbox::Tcp`]: the two directions of one TCP
//!   connection to a rank of another host ([`grappe_fabric_tcp`]);
//! * `Outbox::Ofi` / `Inbox::Ofi` (cargo feature `libfabric`): a link over
//!   the process's libfabric endpoint to a rank of another host
//!   (`grappe_fabric_ofi`).
//!
//! Native remote reads and writes (cross-memory attach, single-copy
//! rendezvous) exist on the shared-memory link only; the engine moves large
//! messages over the other links as records.

use grappe_fabric_tcp::{LinkIn, LinkOut};

use crate::FabricError;
use crate::ring::{self, Consumer, Meta, Producer, Record};

/// Largest payload of one record on a network link (TCP or libfabric):
/// large messages go in fragments of this size, which keeps several in
/// flight (the libfabric link's default fragment is the same, so that a
/// record is one message).
pub const TCP_FRAGMENT: usize = 256 << 10;

/// The sending side of a link.
#[derive(Debug)]
pub enum Outbox {
    /// The mailbox ring this rank writes in a peer of its host.
    Ring(Producer),
    /// A connection to a rank of another host (boxed: a ring's producer
    /// is a few words, a connection's state much more).
    Tcp(Box<LinkOut>),
    /// A libfabric link to a rank of another host (boxed, as a connection).
    #[cfg(feature = "libfabric")]
    Ofi(Box<grappe_fabric_ofi::LinkOut>),
}

/// Why a network link takes nothing any more: its fabric's error.
pub type LinkFailure = dyn std::error::Error + Send + Sync + 'static;

impl Outbox {
    /// Appends a record, or returns false if the link takes nothing more
    /// right now (a full ring, a socket whose backlog is full, or a broken
    /// connection, which [`Outbox::failure`] then names).
    #[inline]
    pub fn try_push(&mut self, meta: Meta, payload: &[u8]) -> bool {
        match self {
            Outbox::Ring(ring) => ring.try_push(meta, payload),
            Outbox::Tcp(link) => link.try_push(meta, payload),
            #[cfg(feature = "libfabric")]
            Outbox::Ofi(link) => link.try_push(meta, payload),
        }
    }

    /// As [`Outbox::try_push`], the payload of `len` bytes written by `fill`.
    #[inline]
    pub fn try_push_with(&mut self, meta: Meta, len: usize, fill: impl FnOnce(&mut [u8])) -> bool {
        match self {
            Outbox::Ring(ring) => ring.try_push_with(meta, len, fill),
            Outbox::Tcp(link) => link.try_push_with(meta, len, fill),
            #[cfg(feature = "libfabric")]
            Outbox::Ofi(link) => link.try_push_with(meta, len, fill),
        }
    }

    /// As [`Outbox::try_push`], the payload in two parts, `head` then
    /// `body` (protocol bytes ahead of a message's data): a network link
    /// writes them with the record's header in one call, a ring copies
    /// them in place; neither joins them in a buffer first.
    #[inline]
    pub fn try_push_parts(&mut self, meta: Meta, head: &[u8], body: &[u8]) -> bool {
        let fill = |out: &mut [u8]| {
            let (front, rest) = out.split_at_mut(head.len());
            front.copy_from_slice(head);
            rest.copy_from_slice(body);
        };
        match self {
            Outbox::Ring(ring) => ring.try_push_with(meta, head.len() + body.len(), fill),
            Outbox::Tcp(link) => link.try_push_parts(meta, head, body),
            #[cfg(feature = "libfabric")]
            Outbox::Ofi(link) => link.try_push_with(meta, head.len() + body.len(), fill),
        }
    }

    /// Largest payload of one record.
    pub fn max_payload(&self) -> usize {
        match self {
            Outbox::Ring(ring) => ring::max_payload(ring.capacity()),
            Outbox::Tcp(_) => TCP_FRAGMENT,
            #[cfg(feature = "libfabric")]
            Outbox::Ofi(_) => TCP_FRAGMENT,
        }
    }

    /// Writes what the link holds back (a socket's backlog, a libfabric
    /// link's messages waiting for credits); true if anything went out.
    pub fn flush(&mut self) -> bool {
        match self {
            Outbox::Ring(_) => false,
            Outbox::Tcp(link) => link.flush(),
            #[cfg(feature = "libfabric")]
            Outbox::Ofi(link) => link.flush(),
        }
    }

    /// True if the link holds bytes it has not written yet (a libfabric
    /// link: or messages posted and not completed, which move only while
    /// someone reads the endpoint's completions, so the rank keeps
    /// flushing).
    pub fn backlogged(&self) -> bool {
        match self {
            Outbox::Ring(_) => false,
            Outbox::Tcp(link) => link.backlogged(),
            #[cfg(feature = "libfabric")]
            Outbox::Ofi(link) => link.backlogged(),
        }
    }

    /// True if the link is connected (even if it broke since): false for
    /// a network link made on demand that was not made (no record asked
    /// for it and the peer did not connect, or connecting failed). Takes
    /// the connection if it is made.
    pub fn is_connected(&mut self) -> bool {
        match self {
            Outbox::Ring(_) => true,
            Outbox::Tcp(link) => link.is_connected(),
            #[cfg(feature = "libfabric")]
            Outbox::Ofi(_) => true,
        }
    }

    /// Why the link takes nothing any more, if it broke.
    pub fn failure(&self) -> Option<&LinkFailure> {
        match self {
            Outbox::Ring(_) => None,
            Outbox::Tcp(link) => link.failure().map(|e| e as &LinkFailure),
            #[cfg(feature = "libfabric")]
            Outbox::Ofi(link) => link.failure().map(|e| e as &LinkFailure),
        }
    }
}

/// The receiving side of a link.
#[derive(Debug)]
pub enum Inbox {
    /// The mailbox ring a peer of this host writes.
    Ring(Consumer),
    /// A connection to a rank of another host (boxed, as for [`Outbox`]).
    Tcp(Box<LinkIn>),
    /// A libfabric link to a rank of another host (boxed, as for [`Outbox`]).
    #[cfg(feature = "libfabric")]
    Ofi(Box<grappe_fabric_ofi::LinkIn>),
}

/// A record at the head of an [`Inbox`].
#[derive(Debug)]
pub enum Incoming<'a> {
    /// A record in a mailbox ring.
    Ring(Record<'a>),
    /// A record read from a socket.
    Tcp(grappe_fabric_tcp::Received<'a>),
    /// A record read from a libfabric link.
    #[cfg(feature = "libfabric")]
    Ofi(grappe_fabric_ofi::Received<'a>),
}

impl Inbox {
    /// The record at the head of the link, if one is whole; an error if
    /// the link broke (the peer closed it, or sent what is not a record).
    #[inline]
    pub fn peek(&mut self) -> Result<Option<Incoming<'_>>, FabricError> {
        match self {
            Inbox::Ring(ring) => Ok(ring.peek().map(Incoming::Ring)),
            Inbox::Tcp(link) => Ok(link.peek()?.map(Incoming::Tcp)),
            #[cfg(feature = "libfabric")]
            Inbox::Ofi(link) => Ok(link.peek()?.map(Incoming::Ofi)),
        }
    }
}

impl Incoming<'_> {
    /// The record's protocol words.
    #[inline]
    pub fn meta(&self) -> Meta {
        match self {
            Incoming::Ring(record) => record.meta(),
            Incoming::Tcp(record) => record.meta(),
            #[cfg(feature = "libfabric")]
            Incoming::Ofi(record) => record.meta(),
        }
    }

    /// The record's payload.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        match self {
            Incoming::Ring(record) => record.payload(),
            Incoming::Tcp(record) => record.payload(),
            #[cfg(feature = "libfabric")]
            Incoming::Ofi(record) => record.payload(),
        }
    }

    /// Frees the record; true if the peer waits for the space and must be
    /// woken (a ring's producer; a socket's sender is woken by the socket).
    #[inline]
    #[must_use = "a producer waiting for space must be woken"]
    pub fn consume(self) -> bool {
        match self {
            Incoming::Ring(record) => record.consume(),
            Incoming::Tcp(record) => {
                record.consume();
                false
            }
            #[cfg(feature = "libfabric")]
            Incoming::Ofi(record) => {
                record.consume();
                false
            }
        }
    }
}
