//! A link cut in its two directions, for an engine that holds its peers'
//! sending sides in one place and their receiving sides in another: both
//! halves are the same connection (the socket duplicated), each half uses
//! only its direction.
//!
//! The sending half remembers why the connection broke and refuses pushes
//! from then on, as a ring that is full forever: the engine learns of it
//! when it looks at its peers ([`LinkOut::failure`]), not in the middle of
//! every push.
//!
//! Halves may also stand for a connection not made yet
//! ([`LinkOut::pending`], [`LinkIn::pending`], see [`crate::pairing`]):
//! the sending half asks for the connection on its first push and refuses
//! pushes until it is made, as a full link does; both halves take their
//! side of the connection once it is.

use std::sync::Arc;

use crate::Meta;
use crate::error::LinkError;
use crate::link::Link;
use crate::pairing::Pairing;

/// The sending half of a link.
#[derive(Debug)]
pub struct LinkOut {
    /// `None` while the connection is not made.
    link: Option<Link>,
    failure: Option<LinkError>,
    /// The connection to take once it is made.
    pairing: Option<Arc<Pairing>>,
}

/// The receiving half of a link.
#[derive(Debug)]
pub struct LinkIn {
    /// `None` while the connection is not made.
    link: Option<Link>,
    /// The stream ended (closed, reset, or not records): it was reported
    /// once, and nothing more comes.
    ended: bool,
    /// The connection to take once it is made.
    pairing: Option<Arc<Pairing>>,
}

/// A record at the head of a [`LinkIn`], until [`Received::consume`].
#[derive(Debug)]
pub struct Received<'a> {
    link: &'a mut Link,
    meta: Meta,
}

impl Link {
    /// Cuts the link in its sending and receiving halves.
    pub fn split(self) -> Result<(LinkOut, LinkIn), LinkError> {
        let receiving = self.duplicate()?;
        Ok((
            LinkOut { link: Some(self), failure: None, pairing: None },
            LinkIn { link: Some(receiving), ended: false, pairing: None },
        ))
    }
}

impl LinkOut {
    /// The sending half of a connection made on demand, on the first push.
    pub fn pending(pairing: Arc<Pairing>) -> LinkOut {
        LinkOut { link: None, failure: None, pairing: Some(pairing) }
    }

    /// Appends a record; false if the backlog is full, the connection is
    /// not made yet, or it broke ([`LinkOut::failure`] then says why).
    pub fn try_push(&mut self, meta: Meta, payload: &[u8]) -> bool {
        match (&self.failure, &mut self.link) {
            (Some(_), _) => false,
            (None, Some(link)) => {
                let pushed = link.try_push(meta, payload);
                self.settle(pushed)
            }
            (None, None) => self.connect() && self.try_push(meta, payload),
        }
    }

    /// As [`LinkOut::try_push`], the payload in two parts (see
    /// [`Link::try_push_parts`]).
    pub fn try_push_parts(&mut self, meta: Meta, head: &[u8], body: &[u8]) -> bool {
        match (&self.failure, &mut self.link) {
            (Some(_), _) => false,
            (None, Some(link)) => {
                let pushed = link.try_push_parts(meta, head, body);
                self.settle(pushed)
            }
            (None, None) => self.connect() && self.try_push_parts(meta, head, body),
        }
    }

    /// As [`LinkOut::try_push`], the payload of `len` bytes written by `fill`.
    pub fn try_push_with(&mut self, meta: Meta, len: usize, fill: impl FnOnce(&mut [u8])) -> bool {
        match (&self.failure, &mut self.link) {
            (Some(_), _) => false,
            (None, Some(link)) => {
                let pushed = link.try_push_with(meta, len, fill);
                self.settle(pushed)
            }
            (None, None) => self.connect() && self.try_push_with(meta, len, fill),
        }
    }

    /// Writes what the socket takes of the backlog; true if anything went.
    /// A half whose connection is not made takes it if it is now (or
    /// learns that it failed).
    pub fn flush(&mut self) -> bool {
        if self.link.is_none() {
            self.take_pending();
        }
        if !self.backlogged() {
            return false;
        }
        let Some(link) = &mut self.link else { return false };
        let before = link.backlog_bytes();
        let flushed = link.flush();
        let after = link.backlog_bytes();
        self.settle(flushed);
        self.failure.is_none() && after < before
    }

    /// True if bytes wait for the socket (never once the link broke: they
    /// will not go).
    pub fn backlogged(&self) -> bool {
        self.failure.is_none() && self.link.as_ref().is_some_and(|link| link.backlog_bytes() > 0)
    }

    /// True once the connection is made (even if it broke since): a half
    /// made by [`Link::split`] always is, a pending one once it took its
    /// connection, which this takes if it is made.
    pub fn is_connected(&mut self) -> bool {
        self.link.is_some() || self.take_pending()
    }

    /// The sending half's socket, to watch for room; `None` while the
    /// connection is not made.
    pub fn raw_fd(&self) -> Option<std::os::fd::RawFd> {
        self.link.as_ref().map(Link::raw_fd)
    }

    /// The release timer of a shaped link (see [`Link::release_timer_fd`]),
    /// to watch so that held frames go when they are due.
    pub fn release_timer_fd(&self) -> Option<std::os::fd::RawFd> {
        self.link.as_ref().and_then(Link::release_timer_fd)
    }

    /// Why the connection broke, if it did.
    pub fn failure(&self) -> Option<&LinkError> {
        self.failure.as_ref()
    }

    fn settle(&mut self, outcome: Result<bool, LinkError>) -> bool {
        match outcome {
            Ok(done) => done,
            Err(e) => {
                self.failure = Some(e);
                // Held frames will never go: a release timer left due
                // would wake the owner for nothing, again and again.
                if let Some(link) = &mut self.link {
                    link.stop_shaping();
                }
                false
            }
        }
    }

    /// A pending half: takes the connection if it is made (true), or asks
    /// for it (false, as a full link: the owner is woken once it is made).
    #[cold]
    fn connect(&mut self) -> bool {
        if self.take_pending() {
            return true;
        }
        if let (None, Some(pairing)) = (&self.failure, &self.pairing) {
            pairing.request();
        }
        // Made since the request, by a thread that does not wake us if we
        // do not sleep: look once more.
        self.take_pending()
    }

    /// Becomes the deposited half, or takes the failure; true if the
    /// connection is now made.
    fn take_pending(&mut self) -> bool {
        let Some(pairing) = &self.pairing else { return self.link.is_some() };
        match pairing.take_out() {
            Some(Ok(out)) => {
                *self = out;
                self.failure.is_none()
            }
            Some(Err(error)) => {
                self.failure = Some(error);
                self.pairing = None;
                false
            }
            None => false,
        }
    }
}

impl LinkIn {
    /// The receiving half of a connection made on demand: it reads nothing
    /// until the connection is made, by either side.
    pub fn pending(pairing: Arc<Pairing>) -> LinkIn {
        LinkIn { link: None, ended: false, pairing: Some(pairing) }
    }

    /// The receiving half's socket, to watch for data; `None` while the
    /// connection is not made.
    pub fn raw_fd(&self) -> Option<std::os::fd::RawFd> {
        self.link.as_ref().map(Link::raw_fd)
    }

    /// The record at the head of the stream, if one is whole. The error
    /// of a stream that ended comes once; after it, nothing.
    pub fn peek(&mut self) -> Result<Option<Received<'_>>, LinkError> {
        if self.ended {
            return Ok(None);
        }
        if self.link.is_none() && !self.take_pending() {
            return Ok(None);
        }
        let Some(link) = &mut self.link else { return Ok(None) };
        let meta = match link.peek() {
            Ok(Some(record)) => record.meta(),
            Ok(None) => return Ok(None),
            Err(e) => {
                self.ended = true;
                return Err(e);
            }
        };
        let link = self.link.as_mut().expect("a record was peeked on it");
        Ok(Some(Received { link, meta }))
    }

    /// Becomes the deposited half; true if the connection is now made.
    #[cold]
    fn take_pending(&mut self) -> bool {
        let Some(inbound) = self.pairing.as_ref().and_then(|pairing| pairing.take_inbound()) else { return false };
        *self = inbound;
        true
    }
}

impl Received<'_> {
    /// The record's protocol words.
    pub fn meta(&self) -> Meta {
        self.meta
    }

    /// The record's payload.
    pub fn payload(&self) -> &[u8] {
        self.link.head_payload()
    }

    /// Frees the record.
    pub fn consume(self) {
        self.link.consume();
    }
}
