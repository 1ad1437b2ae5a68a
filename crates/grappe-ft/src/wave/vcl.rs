//! vcl: the non-blocking wave (Chandy–Lamport with logged channels).
//!
//! At the point the rank encodes its state, asks its engine to log the
//! channels, sends its markers and returns to the application. Every
//! message that arrives from a peer before that peer's marker crossed the
//! cut (sent before the peer's point, received after ours): the engine
//! copies it into the log, and still delivers it. The markers of every
//! peer are in within microseconds of the point here, since the point was
//! agreed by an allreduce; over a network, or with a rank slow to reach
//! the point, the application keeps running meanwhile.
//!
//! The background moves on at agreements: once the log is whole it joins
//! the image and a thread stores it; once every rank has stored its image
//! the wave is committed.

use std::thread::JoinHandle;

use serde::Serialize;

use super::storing::{SavedMessage, Stored, Storing};
use super::{Checkpointer, MARKER};
use crate::error::{FtError, Result};

/// Where this rank's vcl wave stands.
pub(super) enum Background {
    /// Logging the channels until every peer's marker has arrived; the
    /// image holds the state.
    Logging { wave: u64, image: Vec<u8> },
    /// A thread stores the image.
    Storing { wave: u64, handle: JoinHandle<Stored> },
    /// This rank cannot store the wave (its channels could not be saved).
    Refused { wave: u64 },
}

impl Checkpointer {
    /// The local checkpoint of a vcl wave, at this point.
    pub(super) fn start_vcl<S: Serialize>(&mut self, state: &S) -> Result<()> {
        let wave = self.wave;
        let [p2p, coll, nbc] = self.ctl.context_ids();
        self.ctl
            .rank_context()
            .engine()
            .start_channel_log(p2p, MARKER, &[p2p, coll, nbc])
            .map_err(|e| self.runtime(e.into()))?;
        self.send_markers(wave)?;
        let image = self.encode_state(state)?;
        self.background = Some(Background::Logging { wave, image });
        Ok(())
    }

    /// Moves the background wave on: a whole log joins the image, which a
    /// thread then stores.
    pub(super) fn advance_background(&mut self) -> Result<()> {
        if !matches!(self.background, Some(Background::Logging { .. })) {
            return Ok(());
        }
        let log = {
            let mut engine = self.ctl.rank_context().engine();
            engine.progress().map_err(|e| self.runtime(e.into()))?;
            engine.take_channel_log()
        };
        let Some(log) = log else { return Ok(()) };
        let Some(Background::Logging { wave, mut image }) = self.background.take() else { unreachable!("logging") };
        // Every marker has arrived: take them off the queue.
        self.recv_markers(wave)?;
        let next = match log {
            Ok(messages) => {
                self.stats.saved_messages += messages.len() as u64;
                let channels: Vec<SavedMessage> = messages.into_iter().map(SavedMessage::from).collect();
                self.append_channels(&mut image, &channels)?;
                let settings = self.settings.clone().expect("waves only happen with settings");
                let store = Storing { settings, rank: self.rank, wave, image };
                let handle = std::thread::Builder::new()
                    .name(format!("grappe-ckpt-{}", self.rank))
                    .spawn(move || store.run())
                    .map_err(|e| FtError::Disk { path: "a storing thread".into(), source: e })?;
                Background::Storing { wave, handle }
            }
            Err(why) => {
                eprintln!("grappe: rank {}: checkpoint wave {wave} skipped: {why}", self.rank);
                self.stats.skipped += 1;
                Background::Refused { wave }
            }
        };
        self.background = Some(next);
        Ok(())
    }

    /// 1 while the background wave is still logging or being stored.
    pub(super) fn still_storing(&self) -> u64 {
        u64::from(match &self.background {
            Some(Background::Logging { .. }) => true,
            Some(Background::Storing { handle, .. }) => !handle.is_finished(),
            Some(Background::Refused { .. }) | None => false,
        })
    }

    /// Every rank is done with the background wave: commit it, or drop it
    /// if any failed. Collective.
    pub(super) fn settle_background(&mut self) -> Result<()> {
        let (wave, mine) = match self.background.take().expect("a background wave") {
            Background::Storing { wave, handle } => {
                let stored = handle.join().unwrap_or_else(|_| Stored {
                    outcome: Err(FtError::Invalid("the storing thread panicked".into())),
                    buffer: Vec::new(),
                });
                (wave, self.keep_buffer(stored))
            }
            Background::Refused { wave } => (wave, false),
            Background::Logging { .. } => unreachable!("settled only once every rank is done"),
        };
        self.commit(wave, mine)?;
        self.wave_over();
        Ok(())
    }
}
