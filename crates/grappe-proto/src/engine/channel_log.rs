//! Logging the channels' state of a non-blocking checkpoint wave
//! (Chandy–Lamport, MPICH-V's vcl).
//!
//! After its local checkpoint a rank sends a marker on every channel and
//! goes on computing. A message that arrives from a source *before* that
//! source's marker was sent before the source's checkpoint and is received
//! after ours: it belongs to the cut, so a copy goes into the log. The
//! channels are FIFO per pair, so once a source's marker has arrived
//! nothing more of its pre-cut traffic can come, and once every marker has
//! arrived the log is whole.
//!
//! The engine only watches: markers and logged messages are still
//! delivered as usual (the markers to whoever receives them, the messages
//! to the application), so logging changes no result.

use super::{Book, Engine, StagingTarget};
use crate::InTransit;
use crate::matching::{Arrival, Body};
use crate::wire::{Envelope, Kind};

/// The log of one wave, open until every source's marker has arrived.
pub(crate) struct ChannelLog {
    /// Context and tag of the markers.
    marker: (u32, i32),
    /// Contexts not logged (the checkpoint protocol's own traffic).
    skip: Vec<u32>,
    /// Sources whose marker has not arrived yet.
    open: Vec<bool>,
    messages: Vec<InTransit>,
    /// Per source, the logged message still collecting fragments, with
    /// its announced length.
    staging: Vec<Option<(usize, usize)>>,
    /// Why the log cannot hold the cut, if it cannot.
    failure: Option<InTransitError>,
}

/// Bytes of the length field that opens a `FragFirst` payload.
const TOTAL_BYTES: usize = 8;

impl ChannelLog {
    fn is_marker(&self, eager: bool, ctx: u32, tag: i32) -> bool {
        eager && (ctx, tag) == self.marker
    }

    fn logs(&self, src: usize, ctx: u32) -> bool {
        self.open[src] && !self.skip.contains(&ctx)
    }

    fn is_whole(&self) -> bool {
        self.failure.is_some() || (!self.open.contains(&true) && self.staging.iter().all(Option::is_none))
    }

    fn fail(&mut self, why: InTransitError) {
        self.failure.get_or_insert(why);
    }

    /// Logs a message; it collects fragments until it has `total` bytes.
    fn push(&mut self, src: usize, (ctx, tag, src_comm): (u32, i32, u32), payload: Vec<u8>, total: usize) {
        if payload.len() < total {
            self.staging[src] = Some((self.messages.len(), total));
        }
        self.messages.push(InTransit { src_world: src as u32, src_comm, ctx, tag, payload });
    }

    /// An unexpected message that was already here when the log began.
    fn take_arrival(&mut self, src: usize, arrival: &Arrival) {
        if self.is_marker(matches!(arrival.body, Body::Eager(_)), arrival.ctx, arrival.tag) {
            self.open[src] = false;
            return;
        }
        if !self.logs(src, arrival.ctx) {
            return;
        }
        match arrival.body.held() {
            Some((data, total)) => self.push(src, (arrival.ctx, arrival.tag, arrival.src_comm), data.to_vec(), total),
            None => self.fail(InTransitError::RendezvousCrossed { source_rank: src, tag: arrival.tag }),
        }
    }

    /// A record from `src` being dispatched while the log is open.
    /// `payload` is the message's bytes for a hand-over record.
    fn observe(&mut self, src: usize, env: &Envelope, payload: &[u8]) {
        if self.is_marker(env.kind == Kind::Eager, env.ctx, env.tag) {
            self.open[src] = false;
            return;
        }
        if env.kind == Kind::Frag {
            if let Some((at, total)) = self.staging[src] {
                let data = &mut self.messages[at].payload;
                data.extend_from_slice(payload);
                if data.len() >= total {
                    self.staging[src] = None;
                }
            }
            return;
        }
        if !self.logs(src, env.ctx) {
            return;
        }
        let key = (env.ctx, env.tag, env.src);
        match env.kind {
            Kind::Eager | Kind::Handover => self.push(src, key, payload.to_vec(), payload.len()),
            Kind::FragFirst => match payload.split_first_chunk::<TOTAL_BYTES>() {
                Some((total, first)) => self.push(src, key, first.to_vec(), u64::from_le_bytes(*total) as usize),
                None => self.fail(InTransitError::ShortFragment { source_rank: src, bytes: payload.len() }),
            },
            Kind::Rts => self.fail(InTransitError::RendezvousCrossed { source_rank: src, tag: env.tag }),
            Kind::Frag | Kind::Fin | Kind::Revoke | Kind::Probe | Kind::ProbeReply | Kind::State => {}
            // A pulled message crossed the cut as its RTS, which failed the log.
            Kind::Pull | Kind::PullData => {}
            // Logged as their plain kinds (see `Book::dispatch`).
            Kind::SyncEager | Kind::SyncFragFirst => {}
        }
    }
}

/// Why the messages in transit at a checkpoint cannot be saved: one of
/// them is not whole in this rank's memory (sources in world numbering).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InTransitError {
    /// A message that arrived in part: its sender is still sending it (a
    /// rendezvous still in its sender's buffer, a staged message still
    /// coming).
    #[error("a {bytes}-byte message from rank {source_rank} (tag {tag}) is still being sent")]
    StillSending {
        /// The sender.
        source_rank: usize,
        /// Its tag.
        tag: i32,
        /// Its length.
        bytes: usize,
    },
    /// A staged message was being received into a posted receive when the
    /// log began: its first bytes are in the user's buffer, not the log.
    #[error("a staged message from rank {source_rank} was being received at the checkpoint")]
    StagedReceive {
        /// The sender.
        source_rank: usize,
    },
    /// A first fragment too short for its length field.
    #[error("a short first fragment ({bytes} bytes) from rank {source_rank}")]
    ShortFragment {
        /// The sender.
        source_rank: usize,
        /// The fragment's bytes.
        bytes: usize,
    },
    /// A rendezvous message's bytes stay in its sender's buffer until it
    /// is received, so the log cannot hold one.
    #[error("a rendezvous message from rank {source_rank} (tag {tag}) crossed the checkpoint")]
    RendezvousCrossed {
        /// The sender.
        source_rank: usize,
        /// Its tag.
        tag: i32,
    },
}

impl Engine {
    /// Starts logging the channels after this rank's local checkpoint:
    /// every message that arrived, or arrives, from a source before its
    /// marker — an eager message of context `marker_ctx` and tag
    /// `marker_tag` — is copied into the log, except those of the contexts
    /// in `skip`. This rank's own channel to itself has no marker: what is
    /// on it now is all pre-cut. Call it before sending this wave's markers.
    pub fn start_channel_log(&mut self, marker_ctx: u32, marker_tag: i32, skip: &[u32]) -> crate::Result<()> {
        self.progress()?;
        let sources = self.inbound.len();
        let mut log = ChannelLog {
            marker: (marker_ctx, marker_tag),
            skip: skip.to_vec(),
            open: vec![true; sources],
            messages: Vec::new(),
            staging: vec![None; sources],
            failure: None,
        };
        for (src, target) in self.book.staging_in.iter().enumerate() {
            if matches!(target, Some(StagingTarget::Request(_))) {
                log.fail(InTransitError::StagedReceive { source_rank: src });
            }
        }
        for (src, arrival) in self.book.unexpected.in_order() {
            log.take_arrival(src, arrival);
        }
        log.open[self.me] = false;
        self.book.log = Some(Box::new(log));
        Ok(())
    }

    /// The log once every marker has arrived (it then stops): the messages
    /// of the cut in arrival order, or why they cannot be saved. `None`
    /// while a marker is still missing, or if no log was started.
    pub fn take_channel_log(&mut self) -> Option<std::result::Result<Vec<InTransit>, InTransitError>> {
        if !self.book.log.as_ref()?.is_whole() {
            return None;
        }
        let log = self.book.log.take()?;
        Some(match log.failure {
            Some(why) => Err(why),
            None => Ok(log.messages),
        })
    }
}

impl Book {
    /// Shows a dispatched record to the channel log, if one is open.
    /// `payload` is the record's, or the message's bytes for a hand-over.
    #[inline]
    pub(super) fn log_record(&mut self, src: usize, env: &Envelope, payload: &[u8]) {
        if let Some(log) = &mut self.log {
            log.observe(src, env, payload);
        }
    }
}
