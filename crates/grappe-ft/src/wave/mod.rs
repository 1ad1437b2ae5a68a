//! Coordinated checkpoint waves at the program's checkpoint points.
//!
//! The program calls [`Checkpointer::point`] where its state is whole (the
//! top of an iteration), the same number of times on every rank. The state
//! is the application's (serde). So a wave must happen at the *same* point
//! on every rank, and the ranks agree on that point cheaply:
//!
//! * most points cost one comparison. An agreement (a 24-byte allreduce on
//!   the protocol's own communicator) happens every `stride` points. The
//!   ranks choose the stride together so that agreements are about 10 ms
//!   apart.
//! * rank 0 asks for a wave in an agreement once the interval has passed
//!   (or `DIR/REQUEST` exists). Every rank then takes the wave at that same
//!   point.
//!
//! A wave starts with Chandy–Lamport markers on every channel. The
//! channels' state at the cut is the messages sent before the sender's
//! point and received after the receiver's: they are saved with the
//! rank's state.
//!
//! Then MPICH-V's two ways:
//! * **pcl** (blocking): each rank waits for the markers of all the
//!   others. The rings are FIFO per pair, so every message sent before a
//!   marker has then arrived, and those not received yet are the channels'
//!   state at the cut. A message still being sent at the point (a
//!   rendezvous from a pending `isend`) cannot be saved, so that wave is
//!   skipped on every rank, with a message naming the message. The image
//!   is stored locally and on the rank's checkpoint server; rank 0 commits
//!   the wave once every rank has stored it, and then everyone resumes.
//! * **vcl** (non-blocking Chandy–Lamport, see `vcl`): the rank encodes its
//!   state at the point, sends its markers and goes on computing while the
//!   engine logs every message that arrives from a peer before that peer's
//!   marker. Once all markers are in, the log joins the image and a
//!   background thread stores it. The wave is committed at the first
//!   agreement where every rank reports its image stored. No new wave
//!   starts before that.
//!
//! Either way the image holds the state, then the channels' messages,
//! which a restart puts back, in order, before anything else. How a wave
//! is committed, step by step, is in `commit`; how a job restarts, in
//! `restore`. Both hold whatever the crash: the commit record names only
//! waves every rank stored, and an image is deleted only once the record
//! no longer names its wave.

use std::time::{Duration, Instant};

use grappe_comm::{ANY_SOURCE, Communicator, Max};
use serde::Serialize;

use crate::client::check_servers;
use crate::error::{FtError, Result};
use crate::local::{self, CheckpointDir, CommitRecord};
use crate::settings::{FtSettings, Protocol};

mod commit;
mod restore;
mod storing;
mod team;
#[cfg(test)]
mod tests;
mod vcl;

use storing::{SavedMessage, Stored, Storing};
use team::Ranks;
use vcl::Background;

/// Tag of the markers on the protocol's communicator.
const MARKER: i32 = 1;
/// Agreements are spaced about this far apart.
const AGREEMENT_PERIOD: Duration = Duration::from_millis(10);
/// The largest stride, in points.
const MAX_STRIDE: u64 = 1 << 20;

/// What a rank's checkpointing did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FtStats {
    /// Waves taken by this rank.
    pub waves: u64,
    /// Waves committed.
    pub committed: u64,
    /// Waves skipped because a message was still being sent at the point.
    pub skipped: u64,
    /// Messages in transit at the cut, saved with this rank's images.
    pub saved_messages: u64,
    /// Time spent in waves at points (blocking part), seconds.
    pub wave_seconds: f64,
    /// Agreements made.
    pub agreements: u64,
    /// The wave this rank was restored from, if any.
    pub restored_from: Option<u64>,
}

/// A rank's part in the job's checkpoints.
pub struct Checkpointer {
    app: Communicator,
    ctl: Communicator,
    settings: Option<FtSettings>,
    dir: Option<CheckpointDir>,
    rank: usize,
    ranks: usize,
    points: u64,
    next_agreement: u64,
    stride: u64,
    last_agreement: (Instant, u64),
    /// The last wave number used (numbers go on across restarts, past
    /// every wave any file is left of).
    wave: u64,
    /// The tag of the current wave (rank 0 draws one per wave): every
    /// image of the wave carries it, so a restore never mixes images of two
    /// waves that had the same number.
    wave_tag: u32,
    /// The commit record, the same on every rank.
    record: CommitRecord,
    /// The record and the numbering are set up (by `restore`, or at the
    /// first agreement of a program that does not restore).
    recovered: bool,
    /// The servers that did not answer rank 0 at the start (empty on the
    /// other ranks): the restore does not wait for them again.
    silent_at_start: Vec<String>,
    last_wave_end: Instant,
    background: Option<Background>,
    /// The image buffer, kept from one wave to the next: a fresh one costs
    /// a page fault and a zeroed page per 4 KiB (0.2 s of CPU per 400 MB
    /// here, measured), every wave. The peak memory is the same either
    /// way; between waves the rank keeps its image's size.
    spare_image: Vec<u8>,
    stats: FtStats,
    /// Rank 0's lock on the directory.
    _lock: Option<nix::fcntl::Flock<std::fs::File>>,
}

impl Checkpointer {
    /// The checkpointer of a rank of `world` (collective: every rank calls
    /// it), set up from the environment ([`FtSettings::from_env`]).
    pub fn new(world: &Communicator) -> Result<Checkpointer> {
        let settings = FtSettings::from_env()?;
        Checkpointer::with_settings(world, settings)
    }

    /// The same with explicit settings (`None`: points do nothing).
    pub fn with_settings(world: &Communicator, settings: Option<FtSettings>) -> Result<Checkpointer> {
        let ctl = world.dup_for_runtime().map_err(|source| FtError::Runtime { wave: 0, source })?;
        let silent_at_start = match &settings {
            Some(settings) => check_job_servers(&ctl, settings)?,
            None => Vec::new(),
        };
        let dir = settings.as_ref().map(|s| CheckpointDir::new(s.dir.clone()));
        let lock = match &dir {
            Some(dir) if world.rank() == 0 => {
                let lock = dir.lock()?;
                dir.wave_over(); // a wave cut short by a failure
                Some(lock)
            }
            _ => None,
        };
        let now = Instant::now();
        Ok(Checkpointer {
            app: world.clone(),
            ctl,
            rank: world.rank(),
            ranks: world.size(),
            points: 0,
            next_agreement: if settings.is_some() { 1 } else { u64::MAX },
            stride: 1,
            last_agreement: (now, 0),
            wave: 0,
            wave_tag: 0,
            record: CommitRecord::default(),
            recovered: false,
            silent_at_start,
            last_wave_end: now,
            background: None,
            spare_image: Vec::new(),
            stats: FtStats::default(),
            settings,
            dir,
            _lock: lock,
        })
    }

    /// What this rank's checkpointing did so far.
    pub fn stats(&self) -> &FtStats {
        &self.stats
    }

    /// A checkpoint point: `state` is the rank's whole state here. Costs a
    /// comparison unless an agreement or a wave falls on it.
    #[inline]
    pub fn point<S: Serialize>(&mut self, state: &S) -> Result<()> {
        self.points += 1;
        if self.points < self.next_agreement {
            return Ok(());
        }
        self.agree(state)
    }

    fn runtime(&self, source: grappe_comm::Error) -> FtError {
        FtError::Runtime { wave: self.wave, source }
    }

    /// The agreement: the next stride, whether a wave starts here, and
    /// whether a background wave can be committed.
    fn agree<S: Serialize>(&mut self, state: &S) -> Result<()> {
        if !self.recovered {
            let settings = self.settings.clone().expect("agreements only happen with settings");
            let ranks = Ranks { ctl: &self.ctl, wave: 0 };
            let recovery = restore::recover(&ranks, &settings, true, &self.silent_at_start)?;
            self.recovered(recovery.record, recovery.last_wave);
        }
        let settings = self.settings.as_ref().expect("agreements only happen with settings");
        let now = Instant::now();
        let (since, at) = self.last_agreement;
        let per_point = now.duration_since(since).as_secs_f64() / (self.points - at).max(1) as f64;
        let proposal = (AGREEMENT_PERIOD.as_secs_f64() / per_point.max(1e-9)).clamp(1.0, MAX_STRIDE as f64) as u64;
        let due = self.rank == 0
            && self.background.is_none()
            && (settings.interval.is_some_and(|i| now.duration_since(self.last_wave_end) >= i)
                || self.dir.as_ref().is_some_and(CheckpointDir::take_request));
        self.advance_background()?;
        let mut agreed = [0u64; 4];
        let tag = if due { u64::from(new_tag()) } else { 0 };
        let mine = [u64::from(due), proposal, self.still_storing(), tag];
        self.ctl.allreduce(&mine, &mut agreed, Max).map_err(|e| self.runtime(e))?;
        self.stats.agreements += 1;
        self.stride = agreed[1];
        self.next_agreement = self.points + self.stride;
        self.last_agreement = (Instant::now(), self.points);
        if self.background.is_some() && agreed[2] == 0 {
            self.settle_background()?;
        }
        if agreed[0] != 0 {
            self.wave_tag = agreed[3] as u32;
            self.take_wave(state)?;
        }
        Ok(())
    }

    /// A wave at this point, on every rank.
    fn take_wave<S: Serialize>(&mut self, state: &S) -> Result<()> {
        let started = Instant::now();
        self.wave += 1;
        self.stats.waves += 1;
        match self.settings.as_ref().expect("waves only happen with settings").protocol {
            Protocol::Pcl => {
                self.blocking_wave(state)?;
                self.wave_over();
            }
            Protocol::Vcl => self.start_vcl(state)?,
        }
        self.stats.wave_seconds += started.elapsed().as_secs_f64();
        // The interval runs from the end of a wave: however long waves
        // take, the ranks compute for an interval between two.
        self.last_wave_end = Instant::now();
        Ok(())
    }

    /// The image of this rank in the current wave, with `state` encoded
    /// (the channels' messages are appended before it is stored).
    fn encode_state<S: Serialize>(&mut self, state: &S) -> Result<Vec<u8>> {
        let (wave, rank) = (self.wave, self.rank);
        let state_error = |e: bincode::Error| FtError::State { rank, wave, what: "saved", detail: e.to_string() };
        let size = bincode::serialized_size(state).map_err(state_error)? as usize;
        let mut image = std::mem::take(&mut self.spare_image);
        local::start_image(&mut image, wave, rank as u32, self.ranks as u32, self.wave_tag, size);
        bincode::serialize_into(&mut image, state).map_err(state_error)?;
        Ok(image)
    }

    /// Keeps the buffer of a stored image for the next wave; whether the
    /// image was stored (a failure is reported here).
    fn keep_buffer(&mut self, stored: Stored) -> bool {
        self.spare_image = stored.buffer;
        if let Err(e) = &stored.outcome {
            eprintln!("grappe: rank {}: checkpoint wave {}: {e}", self.rank, self.wave);
        }
        stored.outcome.is_ok()
    }

    /// The record and the last wave number a restore set up.
    fn recovered(&mut self, record: CommitRecord, last_wave: u64) {
        self.record = record;
        self.wave = last_wave;
        self.recovered = true;
    }

    /// Commits the current wave if every rank stored it (collective).
    fn commit(&mut self, wave: u64, stored: bool) -> Result<()> {
        let settings = self.settings.as_ref().expect("commits only happen with settings");
        let committed = commit::commit_wave(&Ranks { ctl: &self.ctl, wave }, settings, &mut self.record, wave, stored)?;
        if committed {
            self.stats.committed += 1;
            if std::env::var_os("GRAPPE_FT_VERBOSE").is_some() && self.rank == 0 {
                eprintln!("grappe: checkpoint wave {wave} committed");
            }
        }
        Ok(())
    }

    /// Rank 0 tells the scheduler the wave is over.
    fn wave_over(&self) {
        if let (0, Some(dir)) = (self.rank, &self.dir) {
            dir.wave_over();
        }
    }

    /// Appends the channels' messages to an image.
    fn append_channels(&self, image: &mut Vec<u8>, channels: &[SavedMessage]) -> Result<()> {
        bincode::serialize_into(image, channels).map_err(|e| FtError::State {
            rank: self.rank,
            wave: self.wave,
            what: "saved",
            detail: e.to_string(),
        })
    }

    /// pcl: markers, channels drained, image stored, wave committed, all
    /// while the application waits.
    fn blocking_wave<S: Serialize>(&mut self, state: &S) -> Result<()> {
        let wave = self.wave;
        let Some(channels) = self.exchange_markers(wave)? else {
            self.stats.skipped += 1;
            return Ok(());
        };
        self.stats.saved_messages += channels.len() as u64;
        let mut image = self.encode_state(state)?;
        self.append_channels(&mut image, &channels)?;
        let settings = self.settings.clone().expect("waves only happen with settings");
        let stored = self.keep_buffer(Storing { settings, rank: self.rank, wave, image }.run());
        self.commit(wave, stored)
    }

    /// Sends this wave's marker to every other rank and takes theirs:
    /// every message sent before them has then arrived (the rings are FIFO
    /// per pair), and those not received yet are the channels' state at the
    /// cut, returned to be saved. `None` if some rank holds a message that
    /// is not whole yet (a rendezvous whose sender is still sending crosses
    /// the point): the wave is skipped everywhere.
    fn exchange_markers(&mut self, wave: u64) -> Result<Option<Vec<SavedMessage>>> {
        self.send_markers(wave)?;
        self.recv_markers(wave)?;
        let channels = self.ctl.rank_context().engine().in_transit(&self.ctl.context_ids());
        if let Err(reason) = &channels {
            eprintln!("grappe: rank {}: checkpoint wave {wave} skipped: {reason} at the checkpoint point", self.rank);
        }
        let mut any = [0u64];
        self.ctl.allreduce(&[u64::from(channels.is_err())], &mut any, Max).map_err(|e| self.runtime(e))?;
        Ok(match channels {
            Ok(messages) if any[0] == 0 => Some(messages.into_iter().map(SavedMessage::from).collect()),
            _ => None,
        })
    }

    fn send_markers(&self, wave: u64) -> Result<()> {
        for peer in (0..self.ranks).filter(|&p| p != self.rank) {
            self.ctl.send(&[wave], peer, MARKER).map_err(|e| self.runtime(e))?;
        }
        Ok(())
    }

    /// Takes every other rank's marker of `wave`.
    fn recv_markers(&self, wave: u64) -> Result<()> {
        for _ in 1..self.ranks {
            let mut marker = [0u64];
            let status = self.ctl.recv(&mut marker, ANY_SOURCE, MARKER).map_err(|e| self.runtime(e))?;
            if marker[0] != wave {
                return Err(FtError::Invalid(format!(
                    "rank {}: marker of wave {} from rank {} during wave {wave}",
                    self.rank, marker[0], status.source
                )));
            }
        }
        Ok(())
    }

    /// The end of the rank's work: a background wave is finished and
    /// settled (collective).
    pub fn finish(mut self) -> Result<FtStats> {
        if self.background.is_some() {
            loop {
                self.advance_background()?;
                if self.still_storing() == 0 {
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            self.settle_background()?;
        }
        Ok(self.stats)
    }

    /// With `GRAPPE_FT_HOLD=FILE`, waits at a last point until FILE exists
    /// (checked by rank 0), taking waves meanwhile: a fault-injection test
    /// can then land its kills before the job ends, however fast the
    /// machine. Collective; nothing to do without the setting.
    pub fn hold<S: Serialize>(&mut self, state: &S) -> Result<()> {
        let Some(gate) = self.settings.as_ref().and_then(|s| s.hold.clone()) else { return Ok(()) };
        loop {
            self.point(state)?;
            let open = self.rank == 0 && gate.exists();
            let mut any = [0u64];
            self.ctl.allreduce(&[u64::from(open)], &mut any, Max).map_err(|e| self.runtime(e))?;
            if any[0] == 1 {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// A wave's tag: random, never 0 (the tag of images older than tags).
fn new_tag() -> u32 {
    let mut bytes = [0u8; 4];
    getrandom::fill(&mut bytes).expect("the system's random source works");
    u32::from_le_bytes(bytes).max(1)
}

/// Rank 0 connects to the job's servers as its waves will: a server that
/// refuses the job (its secret, its name) stops it at once, on every rank,
/// rather than letting it run unprotected; one that does not answer is
/// said once (the waves are not committed until it does). The servers that
/// did not answer, on rank 0.
fn check_job_servers(ctl: &Communicator, settings: &FtSettings) -> Result<Vec<String>> {
    if settings.servers.is_empty() {
        return Ok(Vec::new());
    }
    let mut silent = Vec::new();
    let mut refused = [0u64];
    let mut refusal = None;
    if ctl.rank() == 0 {
        let check = check_servers(settings, ctl.size());
        for (server, e) in &check.unreachable {
            eprintln!(
                "grappe: checkpoint server {server} cannot be reached ({e}): the job is unprotected until it answers \
                 (its waves are not committed)"
            );
        }
        silent = check.unreachable.into_iter().map(|(server, _)| server).collect();
        refusal = check.refused.into_iter().next();
        refused[0] = u64::from(refusal.is_some());
    }
    ctl.bcast(&mut refused[..], 0).map_err(|source| FtError::Runtime { wave: 0, source })?;
    if refused[0] == 0 {
        return Ok(silent);
    }
    let (server, refusal) = refusal.map(|(server, e)| (server, Box::new(e))).unzip();
    Err(FtError::JobRefused { server, refusal })
}
