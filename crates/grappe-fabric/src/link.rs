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
//!   connection to a rank of another host ([`grappe_fabric_tcp`]).
//!
//! Native remote reads and writes (cross-memory attach, single-copy
//! rendezvous) exist on the shared-memory link only; the engine moves large
//! messages over the other links as records.

use grappe_fabric_tcp::{LinkIn, LinkOut};

use crate::FabricError;
use crate::ring::{self, Consumer, Meta, Producer, Record};

/// Largest payload of one record on a TCP link: large messages go in
/// fragments of this size, which keeps several in flight.
pub const TCP_FRAGMENT: usize = 256 << 10;

/// The sending side of a link.
#[derive(Debug)]
pub enum Outbox {
    /// The mailbox ring this rank writes in a peer of its host.
    Ring(Producer),
    /// A connection to a rank of another host (boxed: a ring's producer
    /// is a few words, a connection's state much more).
    Tcp(Box<LinkOut>),
}

impl Outbox {
    /// Appends a record, or returns false if the link takes nothing more
    /// right now (a full ring, a socket whose backlog is full, or a broken
    /// connection, which [`Outbox::failure`] then names).
    #[inline]
    pub fn try_push(&mut self, meta: Meta, payload: &[u8]) -> bool {
        match self {
            Outbox::Ring(ring) => ring.try_push(meta, payload),
            Outbox::Tcp(link) => link.try_push(meta, payload),
        }
    }

    /// As [`Outbox::try_push`], the payload of `len` bytes written by `fill`.
    #[inline]
    pub fn try_push_with(&mut self, meta: Meta, len: usize, fill: impl FnOnce(&mut [u8])) -> bool {
        match self {
            Outbox::Ring(ring) => ring.try_push_with(meta, len, fill),
            Outbox::Tcp(link) => link.try_push_with(meta, len, fill),
        }
    }

    /// Largest payload of one record.
    pub fn max_payload(&self) -> usize {
        match self {
            Outbox::Ring(ring) => ring::max_payload(ring.capacity()),
            Outbox::Tcp(_) => TCP_FRAGMENT,
        }
    }

    /// Writes what the link holds back (a socket's backlog); true if
    /// anything went out.
    pub fn flush(&mut self) -> bool {
        match self {
            Outbox::Ring(_) => false,
            Outbox::Tcp(link) => link.flush(),
        }
    }

    /// True if the link holds bytes it has not written yet.
    pub fn backlogged(&self) -> bool {
        match self {
            Outbox::Ring(_) => false,
            Outbox::Tcp(link) => link.backlogged(),
        }
    }

    /// Why the link takes nothing any more, if it broke.
    pub fn failure(&self) -> Option<&grappe_fabric_tcp::LinkError> {
        match self {
            Outbox::Ring(_) => None,
            Outbox::Tcp(link) => link.failure(),
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
}

/// A record at the head of an [`Inbox`].
#[derive(Debug)]
pub enum Incoming<'a> {
    /// A record in a mailbox ring.
    Ring(Record<'a>),
    /// A record read from a socket.
    Tcp(grappe_fabric_tcp::Received<'a>),
}

impl Inbox {
    /// The record at the head of the link, if one is whole; an error if
    /// the link broke (the peer closed it, or sent what is not a record).
    #[inline]
    pub fn peek(&mut self) -> Result<Option<Incoming<'_>>, FabricError> {
        match self {
            Inbox::Ring(ring) => Ok(ring.peek().map(Incoming::Ring)),
            Inbox::Tcp(link) => Ok(link.peek()?.map(Incoming::Tcp)),
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
        }
    }

    /// The record's payload.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        match self {
            Incoming::Ring(record) => record.payload(),
            Incoming::Tcp(record) => record.payload(),
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
        }
    }
}
