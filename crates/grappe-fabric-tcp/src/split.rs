//! A link cut in its two directions, for an engine that holds its peers'
//! sending sides in one place and their receiving sides in another: both
//! halves are the same connection (the socket duplicated), each half uses
//! only its direction.
//!
//! The sending half remembers why the connection broke and refuses pushes
//! from then on, as a ring that is full forever: the engine learns of it
//! when it looks at its peers ([`LinkOut::failure`]), not in the middle of
//! every push.

use crate::Meta;
use crate::error::LinkError;
use crate::link::Link;

/// The sending half of a link.
#[derive(Debug)]
pub struct LinkOut {
    link: Link,
    failure: Option<LinkError>,
}

/// The receiving half of a link.
#[derive(Debug)]
pub struct LinkIn {
    link: Link,
    /// The stream ended (closed, reset, or not records): it was reported
    /// once, and nothing more comes.
    ended: bool,
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
        Ok((LinkOut { link: self, failure: None }, LinkIn { link: receiving, ended: false }))
    }
}

impl LinkOut {
    /// Appends a record; false if the backlog is full or the connection
    /// broke ([`LinkOut::failure`] then says why).
    pub fn try_push(&mut self, meta: Meta, payload: &[u8]) -> bool {
        match self.failure {
            Some(_) => false,
            None => {
                let pushed = self.link.try_push(meta, payload);
                self.settle(pushed)
            }
        }
    }

    /// As [`LinkOut::try_push`], the payload of `len` bytes written by `fill`.
    pub fn try_push_with(&mut self, meta: Meta, len: usize, fill: impl FnOnce(&mut [u8])) -> bool {
        match self.failure {
            Some(_) => false,
            None => {
                let pushed = self.link.try_push_with(meta, len, fill);
                self.settle(pushed)
            }
        }
    }

    /// Writes what the socket takes of the backlog; true if anything went.
    pub fn flush(&mut self) -> bool {
        if !self.backlogged() {
            return false;
        }
        let before = self.link.backlog_bytes();
        let flushed = self.link.flush();
        self.settle(flushed);
        self.failure.is_none() && self.link.backlog_bytes() < before
    }

    /// True if bytes wait for the socket (never once the link broke: they
    /// will not go).
    pub fn backlogged(&self) -> bool {
        self.failure.is_none() && self.link.backlog_bytes() > 0
    }

    /// The sending half's socket, to watch for room.
    pub fn raw_fd(&self) -> std::os::fd::RawFd {
        self.link.raw_fd()
    }

    /// The release timer of a shaped link (see [`Link::release_timer_fd`]),
    /// to watch so that held frames go when they are due.
    pub fn release_timer_fd(&self) -> Option<std::os::fd::RawFd> {
        self.link.release_timer_fd()
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
                self.link.stop_shaping();
                false
            }
        }
    }
}

impl LinkIn {
    /// The receiving half's socket, to watch for data.
    pub fn raw_fd(&self) -> std::os::fd::RawFd {
        self.link.raw_fd()
    }

    /// The record at the head of the stream, if one is whole. The error
    /// of a stream that ended comes once; after it, nothing.
    pub fn peek(&mut self) -> Result<Option<Received<'_>>, LinkError> {
        if self.ended {
            return Ok(None);
        }
        let meta = match self.link.peek() {
            Ok(Some(record)) => record.meta(),
            Ok(None) => return Ok(None),
            Err(e) => {
                self.ended = true;
                return Err(e);
            }
        };
        Ok(Some(Received { link: &mut self.link, meta }))
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
