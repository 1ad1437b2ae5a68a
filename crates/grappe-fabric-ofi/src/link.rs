//! A link and its two halves, used like a mailbox pair: push on one side,
//! peek and consume on the other, as grappe's TCP links are.
//!
//! The halves share their endpoint: each call locks it, moves what its
//! completions allow ([`Endpoint::progress`](crate::Endpoint::progress)),
//! and acts on its own link. A record of one fragment is read in the
//! receive buffer it arrived in, which goes back to the provider (and
//! its credit to the peer) when the record is consumed.

use std::os::fd::RawFd;
use std::sync::Arc;

use crate::endpoint::{Fate, Shared, data_header};
use crate::error::{Ends, LinkError};
use crate::inbound::{Body, Record};
use crate::wire::{self, HEADER_BYTES, Kind};
use crate::{BACKLOG_LIMIT, MAX_PAYLOAD, Meta};

/// A link to one peer: records both ways.
///
/// Dropping both halves (or the link) sends the peer a `Bye`, after
/// which its reads end with [`LinkError::Closed`]; records not posted yet
/// are lost, so flush until [`Link::flush`] says none wait first.
#[derive(Debug)]
pub struct Link {
    out: LinkOut,
    inbox: LinkIn,
}

/// The sending half of a link.
#[derive(Debug)]
pub struct LinkOut {
    shared: Arc<Shared>,
    id: usize,
    ends: Ends,
    peer: String,
    /// Why the link broke or ended, set by the endpoint.
    fate: Arc<Fate>,
    /// A record this half refused to send (too large), which ends it.
    refused: Option<LinkError>,
    scratch: Vec<u8>,
}

/// The receiving half of a link.
#[derive(Debug)]
pub struct LinkIn {
    shared: Arc<Shared>,
    id: usize,
    head: Option<Record>,
    /// The link ended (closed, broken): it was reported once, and nothing
    /// more comes.
    ended: bool,
}

/// A record at the head of a [`LinkIn`], until [`Received::consume`].
#[derive(Debug)]
pub struct Received<'a> {
    link: &'a mut LinkIn,
}

/// A record at the head of a [`Link`], borrowed until [`Link::consume`].
#[derive(Debug, Clone, Copy)]
pub struct Incoming<'a> {
    meta: Meta,
    payload: &'a [u8],
}

impl Link {
    pub(crate) fn new(shared: Arc<Shared>, id: usize, fate: Arc<Fate>) -> Link {
        let (peer, ends) = {
            let core = shared.lock();
            (core.peer_text(id), core.ends(id))
        };
        let out = LinkOut { shared: Arc::clone(&shared), id, ends, peer, fate, refused: None, scratch: Vec::new() };
        Link { out, inbox: LinkIn { shared, id, head: None, ended: false } }
    }

    /// Appends a record. `Ok(false)`, nothing appended, when
    /// [`BACKLOG_LIMIT`] bytes or more wait for credits or for the
    /// provider: like a full mailbox, the caller retries later. A payload
    /// over [`MAX_PAYLOAD`] is an error, as is a broken link.
    pub fn try_push(&mut self, meta: Meta, payload: &[u8]) -> Result<bool, LinkError> {
        self.out.push(meta, payload.len(), Payload::<fn(&mut [u8])>::Copy(payload))
    }

    /// As [`Link::try_push`], the payload written by `fill` into a buffer
    /// of `len` bytes. `fill` is not called when the push is refused.
    pub fn try_push_with(&mut self, meta: Meta, len: usize, fill: impl FnOnce(&mut [u8])) -> Result<bool, LinkError> {
        self.out.push(meta, len, Payload::Fill(fill))
    }

    /// Posts what credits allow; `Ok(true)` when nothing waits to be
    /// posted or to complete.
    pub fn flush(&mut self) -> Result<bool, LinkError> {
        self.out.flush();
        match self.out.failure() {
            Some(error) => Err(error.clone()),
            None => Ok(!self.out.backlogged()),
        }
    }

    /// Payload bytes waiting for credits or for the provider.
    pub fn backlog_bytes(&self) -> usize {
        self.shared().lock().backlog_bytes(self.out.id)
    }

    /// The record at the head of the link, if one is whole; an error
    /// once the link broke or the peer closed it (the records it sent
    /// before are read first).
    pub fn peek(&mut self) -> Result<Option<Incoming<'_>>, LinkError> {
        if !self.inbox.fill_head()? {
            return Ok(None);
        }
        let record = self.inbox.head.as_ref().expect("fill_head found a record");
        Ok(Some(Incoming { meta: record.meta, payload: record.payload() }))
    }

    /// Drops the record [`Link::peek`] returned.
    ///
    /// # Panics
    /// If `peek` did not return a record since the last `consume`.
    pub fn consume(&mut self) {
        self.inbox.consume_head();
    }

    /// Cuts the link in its sending and receiving halves.
    pub fn split(self) -> (LinkOut, LinkIn) {
        (self.out, self.inbox)
    }

    /// The endpoint's completion descriptor (shared by its links), if the
    /// provider has one.
    pub fn raw_fd(&self) -> Option<RawFd> {
        self.shared().wait_fd
    }

    /// The peer's address, as libfabric writes it.
    pub fn peer(&self) -> &str {
        &self.out.peer
    }

    /// The link's ends.
    pub fn ends(&self) -> Ends {
        self.out.ends
    }

    fn shared(&self) -> &Shared {
        &self.out.shared
    }
}

impl Incoming<'_> {
    /// The protocol words of the record.
    pub fn meta(&self) -> Meta {
        self.meta
    }

    /// The payload.
    pub fn payload(&self) -> &[u8] {
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

impl LinkOut {
    /// Appends a record; false if the backlog is full or the link broke
    /// ([`LinkOut::failure`] then says why).
    pub fn try_push(&mut self, meta: Meta, payload: &[u8]) -> bool {
        self.push(meta, payload.len(), Payload::<fn(&mut [u8])>::Copy(payload)).unwrap_or(false)
    }

    /// As [`LinkOut::try_push`], the payload of `len` bytes written by `fill`.
    pub fn try_push_with(&mut self, meta: Meta, len: usize, fill: impl FnOnce(&mut [u8])) -> bool {
        self.push(meta, len, Payload::Fill(fill)).unwrap_or(false)
    }

    /// Posts what credits allow; true if anything left the backlog.
    pub fn flush(&mut self) -> bool {
        if self.failure().is_some() {
            return false;
        }
        let mut core = self.shared.lock();
        let before = core.backlog_bytes(self.id);
        core.flush(self.id);
        core.backlog_bytes(self.id) < before
    }

    /// True if messages wait for credits, for the provider, or to
    /// complete: the caller flushes until false (the provider moves data
    /// only when its completions are read). Never once the link broke.
    pub fn backlogged(&self) -> bool {
        self.failure().is_none() && self.shared.lock().sending(self.id)
    }

    /// The endpoint's completion descriptor (shared by its links), if the
    /// provider has one.
    pub fn raw_fd(&self) -> Option<RawFd> {
        self.shared.wait_fd
    }

    /// Why the link takes nothing any more, if it broke or the peer
    /// closed it.
    pub fn failure(&self) -> Option<&LinkError> {
        self.refused.as_ref().or_else(|| self.fate.broken.get()).or_else(|| self.fate.peer_closed.get())
    }

    /// The peer's address, as libfabric writes it.
    pub fn peer(&self) -> &str {
        &self.peer
    }

    fn push<F: FnOnce(&mut [u8])>(
        &mut self,
        meta: Meta,
        len: usize,
        payload: Payload<'_, F>,
    ) -> Result<bool, LinkError> {
        if let Some(error) = self.failure() {
            return Err(error.clone());
        }
        if len > MAX_PAYLOAD {
            let error = LinkError::TooLarge { peer: self.peer.clone(), len, max: MAX_PAYLOAD };
            self.refused = Some(error.clone());
            return Err(error);
        }
        let (fragment, spare) = {
            let mut core = self.shared.lock();
            if core.backlog_bytes(self.id) >= BACKLOG_LIMIT {
                core.flush(self.id);
                if core.backlog_bytes(self.id) >= BACKLOG_LIMIT {
                    return Ok(false);
                }
            }
            let fragments = len.div_ceil(core.fragment()).max(1);
            (core.fragment(), (0..fragments).map(|_| core.data_buffer()).collect::<Vec<_>>())
        };
        let messages = self.build(meta, len, fragment, spare, payload);
        let mut core = self.shared.lock();
        if let Some(error) = self.failure() {
            return Err(error.clone());
        }
        core.queue(self.id, messages, Kind::Data);
        Ok(true)
    }

    /// The messages of a record: headers, and the payload copied in, or
    /// written by `fill` (in place when it fits one message).
    fn build<F: FnOnce(&mut [u8])>(
        &mut self,
        meta: Meta,
        len: usize,
        fragment: usize,
        mut buffers: Vec<Box<[u8]>>,
        payload: Payload<'_, F>,
    ) -> Vec<(Box<[u8]>, usize)> {
        let ends = self.ends;
        if buffers.len() == 1 {
            let mut buf = buffers.pop().expect("one buffer");
            wire::encode(&data_header(ends, meta, len, Kind::Data), &mut buf);
            let room = &mut buf[HEADER_BYTES..HEADER_BYTES + len];
            match payload {
                Payload::Copy(bytes) => room.copy_from_slice(bytes),
                Payload::Fill(fill) => fill(room),
            }
            return vec![(buf, HEADER_BYTES + len)];
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        let bytes = match payload {
            Payload::Copy(bytes) => bytes,
            Payload::Fill(fill) => {
                scratch.clear();
                scratch.resize(len, 0);
                fill(&mut scratch);
                &scratch[..]
            }
        };
        let messages = bytes
            .chunks(fragment)
            .zip(buffers)
            .enumerate()
            .map(|(i, (chunk, mut buf))| {
                let kind = if i == 0 { Kind::Data } else { Kind::More };
                wire::encode(&data_header(ends, meta, len, kind), &mut buf);
                buf[HEADER_BYTES..HEADER_BYTES + chunk.len()].copy_from_slice(chunk);
                (buf, HEADER_BYTES + chunk.len())
            })
            .collect();
        if scratch.capacity() <= 4 * fragment {
            self.scratch = scratch;
        }
        messages
    }
}

/// Where a pushed record's payload comes from.
enum Payload<'a, F> {
    /// Copied from the caller's bytes, straight into the messages.
    Copy(&'a [u8]),
    /// Written by the caller in place (through a scratch buffer when the
    /// record takes several messages).
    Fill(F),
}

impl LinkIn {
    /// The record at the head of the link, if one is whole. The error of
    /// a link that ended comes once; after it, nothing.
    pub fn peek(&mut self) -> Result<Option<Received<'_>>, LinkError> {
        match self.fill_head() {
            Ok(true) => Ok(Some(Received { link: self })),
            Ok(false) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// The endpoint's completion descriptor (shared by its links), if the
    /// provider has one.
    pub fn raw_fd(&self) -> Option<RawFd> {
        self.shared.wait_fd
    }

    /// True if the caller may sleep until [`LinkIn::raw_fd`] is readable
    /// (see [`Endpoint::try_wait`](crate::Endpoint::try_wait)).
    pub fn try_wait(&self) -> Result<bool, LinkError> {
        if self.head.is_some() {
            return Ok(false);
        }
        self.shared.try_wait()
    }

    /// Takes the next record from the endpoint if none is at the head;
    /// true if one is.
    fn fill_head(&mut self) -> Result<bool, LinkError> {
        if self.head.is_some() {
            return Ok(true);
        }
        if self.ended {
            return Ok(false);
        }
        match self.shared.lock().take(self.id) {
            Ok(record) => {
                self.head = record;
                Ok(self.head.is_some())
            }
            Err(error) => {
                self.ended = true;
                Err(error)
            }
        }
    }

    fn consume_head(&mut self) {
        let record = self.head.take().expect("consume without a record: peek returned none");
        if let Body::Slot { buf, .. } = record.body {
            self.shared.lock().give_back(self.id, buf);
        }
    }
}

impl Received<'_> {
    /// The record's protocol words.
    pub fn meta(&self) -> Meta {
        self.record().meta
    }

    /// The record's payload.
    pub fn payload(&self) -> &[u8] {
        self.record().payload()
    }

    /// Frees the record.
    pub fn consume(self) {
        self.link.consume_head();
    }

    fn record(&self) -> &Record {
        self.link.head.as_ref().expect("a received record is at the head")
    }
}

impl Drop for LinkOut {
    fn drop(&mut self) {
        self.shared.lock().drop_half(self.id);
    }
}

impl Drop for LinkIn {
    fn drop(&mut self) {
        let mut core = self.shared.lock();
        if let Some(Record { body: Body::Slot { buf, .. }, .. }) = self.head.take() {
            core.give_back(self.id, buf);
        }
        core.drop_half(self.id);
    }
}
