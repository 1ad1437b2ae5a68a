//! The commit and restore protocols against random sequences of waves,
//! failed stores, crashes at every step, restarts, corrupted and lost
//! images, an unreadable record and servers that go away: the ranks are
//! threads, the images real files, the server a real one over TCP.
//!
//! A model follows what the job was told and when the commit point passed
//! (the record's durable write). After every step the record on disk is the
//! model's; at every restart the wave restored is the newest wave of the
//! model's record whose images every rank can read (found by reading the
//! files, not by the protocol), with the bytes that wave stored; a new
//! wave never takes a number that files are left of.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use proptest::prelude::*;

use super::commit::commit_wave;
use super::restore::recover;
use super::storing::Storing;
use super::team::{Step, Team};
use crate::client::CheckpointClient;
use crate::error::{FtError, Result};
use crate::local::{self, CheckpointDir, CommitRecord, RecordState};
use crate::server::{CheckpointServer, ServerConfig};
use crate::settings::{FtSettings, Protocol};

const RANKS: usize = 3;
const SECRET: &[u8] = b"protocol test secret";
const JOB: &str = "job";

// ---- the ranks as threads ----

/// The threads of one run of the job: collectives, and a crash injected
/// at a step, which every rank then sees at its next collective or step.
struct Room {
    crash: Option<(usize, Step)>,
    state: Mutex<RoomState>,
    turn: Condvar,
}

struct RoomState {
    generation: u64,
    slots: Vec<Option<Vec<u64>>>,
    arrived: usize,
    result: Vec<Vec<u64>>,
    crashed: bool,
    /// The steps each rank passed.
    passed: Vec<Vec<Step>>,
}

fn crashed() -> FtError {
    FtError::Invalid("the job crashed here (injected)".into())
}

impl Room {
    fn new(crash: Option<(usize, Step)>) -> Room {
        let state = RoomState {
            generation: 0,
            slots: vec![None; RANKS],
            arrived: 0,
            result: Vec::new(),
            crashed: false,
            passed: vec![Vec::new(); RANKS],
        };
        Room { crash, state: Mutex::new(state), turn: Condvar::new() }
    }

    /// Every rank's words, once all have given theirs.
    fn exchange(&self, rank: usize, mine: Vec<u64>) -> Result<Vec<Vec<u64>>> {
        let mut state = self.state.lock().unwrap();
        if state.crashed {
            return Err(crashed());
        }
        let generation = state.generation;
        state.slots[rank] = Some(mine);
        state.arrived += 1;
        if state.arrived == RANKS {
            state.result = state.slots.iter_mut().map(|s| s.take().expect("every rank gave")).collect();
            state.arrived = 0;
            state.generation += 1;
            self.turn.notify_all();
        }
        while state.generation == generation && !state.crashed {
            state = self.turn.wait(state).unwrap();
        }
        if state.generation == generation {
            return Err(crashed());
        }
        Ok(state.result.clone())
    }

    fn passed(&self, rank: usize, step: Step) -> bool {
        self.state.lock().unwrap().passed[rank].contains(&step)
    }

    fn crashed(&self) -> bool {
        self.state.lock().unwrap().crashed
    }
}

struct Member<'a> {
    room: &'a Room,
    rank: usize,
}

impl Team for Member<'_> {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        RANKS
    }

    fn all(&self, mine: bool) -> Result<bool> {
        Ok(self.room.exchange(self.rank, vec![u64::from(mine)])?.iter().all(|w| w[0] == 1))
    }

    fn max(&self, mine: u64) -> Result<u64> {
        Ok(self.room.exchange(self.rank, vec![mine])?.iter().map(|w| w[0]).max().unwrap_or(0))
    }

    fn share(&self, words: &mut [u64]) -> Result<()> {
        let all = self.room.exchange(self.rank, words.to_vec())?;
        words.copy_from_slice(&all[0]);
        Ok(())
    }

    fn reached(&self, step: Step) -> Result<()> {
        let mut state = self.room.state.lock().unwrap();
        // The step's action is done: a crash seen here comes after it.
        state.passed[self.rank].push(step);
        if state.crashed {
            return Err(crashed());
        }
        if self.room.crash == Some((self.rank, step)) {
            state.crashed = true;
            self.room.turn.notify_all();
            return Err(crashed());
        }
        Ok(())
    }
}

/// Runs `f` on every rank, one thread each; their outcomes.
fn run_job<T: Send>(room: &Room, f: impl Fn(&dyn Team) -> Result<T> + Sync) -> Vec<Result<T>> {
    std::thread::scope(|scope| {
        let f = &f;
        let threads: Vec<_> = (0..RANKS).map(|rank| scope.spawn(move || f(&Member { room, rank }))).collect();
        threads.into_iter().map(|t| t.join().expect("a rank panicked")).collect()
    })
}

// ---- the job's files ----

/// A rank's state in a wave, different at each store (`epoch`).
fn state_of(wave: u64, rank: usize, epoch: u64) -> Vec<u8> {
    let seed = wave.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (rank as u64) << 40 ^ epoch.wrapping_mul(0xff51_afd7);
    (0..64 + (seed % 64)).map(|i| (seed.rotate_left(i as u32 % 64) ^ i) as u8).collect()
}

fn flip_middle(path: &Path) {
    if let Ok(mut bytes) = std::fs::read(path) {
        let middle = bytes.len() / 2 + 20;
        if middle < bytes.len() {
            bytes[middle] ^= 0x40;
            std::fs::write(path, bytes).unwrap();
        }
    }
}

/// A real server, and an address where nothing listens (the server gone).
struct Server {
    addr: String,
    gone: String,
    dir: PathBuf,
}

fn start_server(dir: PathBuf) -> Server {
    let config = ServerConfig::new(dir.clone(), "127.0.0.1:0".into(), SECRET.to_vec());
    let server = CheckpointServer::bind(config).unwrap();
    let addr = server.local_addr().to_string();
    std::thread::spawn(move || server.serve());
    let gone = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    Server { addr, gone, dir }
}

// ---- the model ----

#[derive(Clone, Debug)]
enum Op {
    /// A wave; `failing` does not store its image; the job crashes at a
    /// step of the commit.
    Wave { failing: Option<usize>, crash: Option<(usize, Step)> },
    /// The job restarts; it may crash once the restore chose its wave.
    Restart { crash: Option<usize> },
    /// A byte of a rank's local image of the newest (or the older) wave of
    /// the record flips.
    DamageLocal { rank: usize, newest: bool },
    /// The same on the server.
    DamageServer { rank: usize, newest: bool },
    /// A rank's node is lost with its local copies.
    LoseLocal { rank: usize },
    /// The record is overwritten with garbage.
    GarbleRecord,
    /// The server goes away or comes back.
    ServerDown(bool),
}

fn ops() -> impl Strategy<Value = Op> {
    let rank = 0..RANKS;
    let commit_crash = prop_oneof![
        (0..RANKS).prop_map(|r| (r, Step::Stored)),
        Just((0, Step::ServersCommitted)),
        Just((0, Step::Recorded)),
        (0..RANKS).prop_map(|r| (r, Step::Retired)),
        Just((0, Step::ServersKept)),
    ];
    prop_oneof![
        6 => (prop::option::weighted(0.2, rank.clone()), prop::option::weighted(0.25, commit_crash))
            .prop_map(|(failing, crash)| Op::Wave { failing, crash }),
        3 => prop::option::weighted(0.2, rank.clone()).prop_map(|crash| Op::Restart { crash }),
        4 => (rank.clone(), any::<bool>()).prop_map(|(rank, newest)| Op::DamageLocal { rank, newest }),
        2 => (rank.clone(), any::<bool>()).prop_map(|(rank, newest)| Op::DamageServer { rank, newest }),
        1 => rank.prop_map(|rank| Op::LoseLocal { rank }),
        1 => Just(Op::GarbleRecord),
        1 => any::<bool>().prop_map(Op::ServerDown),
    ]
}

struct Harness {
    settings: FtSettings,
    dir: CheckpointDir,
    server: Option<Server>,
    server_down: bool,
    /// The record the model expects, newest first.
    model: Vec<u64>,
    /// The record on disk was overwritten with garbage since.
    garbled: bool,
    /// The record the running job holds (None: the job is down).
    job_record: Option<CommitRecord>,
    last_wave: u64,
    /// The epoch of each wave's images.
    epochs: HashMap<u64, u64>,
    epoch: u64,
}

impl Harness {
    fn new(root: &Path, with_server: bool) -> Harness {
        let server = with_server.then(|| start_server(root.join("server")));
        let settings = FtSettings {
            dir: root.join("job"),
            interval: None,
            protocol: Protocol::Pcl,
            servers: Vec::new(),
            name: JOB.into(),
            secret: SECRET.to_vec(),
            server_timeout: Duration::from_secs(30),
            hold: None,
        };
        let dir = CheckpointDir::new(settings.dir.clone());
        Harness {
            settings,
            dir,
            server,
            server_down: false,
            model: Vec::new(),
            garbled: false,
            job_record: None,
            last_wave: 0,
            epochs: HashMap::new(),
            epoch: 0,
        }
    }

    /// The settings the job sees now.
    fn settings(&self) -> FtSettings {
        let mut settings = self.settings.clone();
        if let Some(server) = &self.server {
            settings.servers = vec![if self.server_down { server.gone.clone() } else { server.addr.clone() }];
        }
        settings
    }

    fn expected(&self, wave: u64, rank: usize) -> Vec<u8> {
        state_of(wave, rank, self.epochs[&wave])
    }

    /// Whether the rank's local copy of `wave` holds what the wave stored.
    fn local_intact(&self, rank: usize, wave: u64) -> bool {
        let path = self.dir.image_path(rank, wave);
        std::fs::read(&path).is_ok_and(|image| {
            local::decode(&image, wave, rank as u32, RANKS as u32, &path)
                .is_ok_and(|d| d.state == self.expected(wave, rank))
        })
    }

    /// Whether the server (if it is up) returns what the wave stored.
    fn server_intact(&self, rank: usize, wave: u64) -> bool {
        let Some(server) = self.server.as_ref().filter(|_| !self.server_down) else { return false };
        let mut image = Vec::new();
        let got =
            CheckpointClient::connect(&server.addr, JOB, SECRET).and_then(|mut c| c.get(wave, rank as u32, &mut image));
        got.is_ok()
            && local::decode(&image, wave, rank as u32, RANKS as u32, Path::new("server"))
                .is_ok_and(|d| d.state == self.expected(wave, rank))
    }

    fn restorable(&self, wave: u64) -> bool {
        (0..RANKS).all(|r| self.local_intact(r, wave) || self.server_intact(r, wave))
    }

    /// The waves a server holds for the job.
    fn server_waves(&self) -> BTreeSet<u64> {
        let Some(server) = &self.server else { return BTreeSet::new() };
        let Ok(entries) = std::fs::read_dir(server.dir.join(JOB)) else { return BTreeSet::new() };
        entries.flatten().filter_map(|e| e.file_name().to_str()?.strip_prefix("wave-")?.parse().ok()).collect()
    }

    /// The waves the record names or a rank holds a file of (a server
    /// that was not reachable at the last restart may hold older numbers
    /// again: the wave tags keep those apart).
    fn waves_in_use(&self) -> BTreeSet<u64> {
        let mut waves: BTreeSet<u64> = (0..RANKS).flat_map(|r| self.dir.local_waves(r)).collect();
        waves.extend((0..RANKS).map(|r| self.dir.newest_wave_number(r)).filter(|&w| w > 0));
        waves.extend(&self.model);
        waves
    }

    fn apply(&mut self, op: &Op) {
        // A job that crashed restarts before its next wave (what happens
        // to the files meanwhile may happen while it is down).
        if self.job_record.is_none() && matches!(op, Op::Wave { .. }) {
            self.restart(None);
        }
        match op {
            Op::Wave { failing, crash } => self.wave(*failing, *crash),
            Op::Restart { crash } => self.restart(*crash),
            Op::DamageLocal { rank, newest } => {
                if let Some(&wave) = self.model.get(usize::from(!newest)) {
                    flip_middle(&self.dir.image_path(*rank, wave));
                }
            }
            Op::DamageServer { rank, newest } => {
                if let (Some(server), Some(&wave)) = (&self.server, self.model.get(usize::from(!newest))) {
                    flip_middle(&server.dir.join(JOB).join(format!("wave-{wave}/rank-{rank}.img")));
                }
            }
            Op::LoseLocal { rank } => {
                let _ = std::fs::remove_dir_all(self.settings.dir.join(format!("rank-{rank}")));
            }
            Op::GarbleRecord => {
                std::fs::create_dir_all(&self.settings.dir).unwrap();
                std::fs::write(self.dir.record_path(), "grappe committed waves: seven\n").unwrap();
                self.garbled = true;
            }
            Op::ServerDown(down) => self.server_down = *down && self.server.is_some(),
        }
        self.check_record(op);
    }

    /// The record on disk is the model's.
    fn check_record(&self, op: &Op) {
        if self.garbled {
            return;
        }
        let on_disk = match self.dir.read_record() {
            RecordState::Absent => Vec::new(),
            RecordState::Valid(record) => record.waves().to_vec(),
            RecordState::Unreadable(e) => panic!("after {op:?}: the record is unreadable: {e}"),
        };
        assert_eq!(on_disk, self.model, "after {op:?}: the record on disk is not the model's");
    }

    fn wave(&mut self, failing: Option<usize>, crash: Option<(usize, Step)>) {
        let wave = self.last_wave + 1;
        let left = self.waves_in_use();
        assert!(left.iter().all(|&w| w < wave), "wave {wave} is taken while files of waves {left:?} are left");
        self.last_wave = wave;
        self.epoch += 1;
        self.epochs.insert(wave, self.epoch);
        let settings = self.settings();
        let record = self.job_record.clone().expect("a running job");
        let room = Room::new(crash);
        let outcomes = run_job(&room, |team| {
            let rank = team.rank();
            let stored = failing != Some(rank) && {
                let state = state_of(wave, rank, self.epochs[&wave]);
                let mut image = Vec::new();
                let tag = self.epochs[&wave] as u32;
                local::start_image(&mut image, wave, rank as u32, RANKS as u32, tag, state.len());
                image.extend_from_slice(&state);
                Storing { settings: settings.clone(), rank, wave, image }.run().outcome.is_ok()
            };
            let mut record = record.clone();
            let committed = commit_wave(team, &settings, &mut record, wave, stored)?;
            Ok((committed, record))
        });
        let committed = room.passed(0, Step::Recorded);
        if committed {
            self.model.insert(0, wave);
            let older = self.model.iter().copied().filter(|&w| w < wave).take(1).collect::<Vec<_>>();
            self.model.truncate(1);
            self.model.extend(older);
            self.garbled = false;
        }
        if room.crashed() {
            self.job_record = None;
            return;
        }
        for (rank, outcome) in outcomes.into_iter().enumerate() {
            let (said, record) = outcome.unwrap_or_else(|e| panic!("rank {rank}: {e}"));
            assert_eq!(said, committed, "rank {rank} was told the wave is committed: {said}");
            assert_eq!(record.waves(), &self.model[..], "rank {rank}'s record");
            self.job_record = Some(record);
        }
        self.check_local_images_are_the_records();
        if committed {
            self.check_servers_keep_the_records();
        }
    }

    /// After a wave (committed or not) or a restore that went through: no
    /// rank holds images outside the record.
    fn check_local_images_are_the_records(&self) {
        for rank in 0..RANKS {
            let extra: Vec<u64> = self.dir.local_waves(rank).into_iter().filter(|w| !self.model.contains(w)).collect();
            assert!(extra.is_empty(), "rank {rank} keeps waves {extra:?} outside the record {:?}", self.model);
        }
    }

    /// After a commit or a restore that went through: no server that is up
    /// holds waves outside the record.
    fn check_servers_keep_the_records(&self) {
        if !self.server_down {
            let extra: Vec<u64> = self.server_waves().into_iter().filter(|w| !self.model.contains(w)).collect();
            assert!(extra.is_empty(), "the server keeps waves {extra:?} outside the record {:?}", self.model);
        }
    }

    fn restart(&mut self, crash: Option<usize>) {
        let (candidates, from_images): (Vec<u64>, bool) = if self.garbled {
            let mut all: Vec<u64> =
                (0..RANKS).flat_map(|r| self.dir.local_waves(r)).collect::<BTreeSet<_>>().into_iter().collect();
            all.reverse();
            (all, true)
        } else {
            (self.model.clone(), false)
        };
        let expected = candidates.iter().copied().find(|&w| self.restorable(w));
        let settings = self.settings();
        let room = Room::new(crash.map(|rank| (rank, Step::Chosen)));
        let outcomes = run_job(&room, |team| recover(team, &settings, false, &[]));
        if room.crashed() {
            self.job_record = None;
            return;
        }
        self.model = match expected {
            Some(wave) if from_images => vec![wave],
            Some(wave) => {
                let older = self.model.iter().copied().find(|&w| w < wave);
                std::iter::once(wave).chain(older).collect()
            }
            None => Vec::new(),
        };
        self.garbled = false;
        for (rank, outcome) in outcomes.into_iter().enumerate() {
            let recovery = outcome.unwrap_or_else(|e| panic!("rank {rank}: {e}"));
            let restored = recovery.restored.map(|(wave, state)| (wave, state == self.expected(wave, rank)));
            assert_eq!(
                restored,
                expected.map(|w| (w, true)),
                "rank {rank} restored another wave than the newest every rank can read (candidates {candidates:?})"
            );
            assert_eq!(recovery.record.waves(), &self.model[..], "rank {rank}'s record after the restart");
            self.last_wave = recovery.last_wave;
            self.job_record = Some(recovery.record);
        }
        self.check_local_images_are_the_records();
        self.check_servers_keep_the_records();
    }
}

/// A scratch directory in memory when the machine has one: the protocol
/// fsyncs every step, which a disk makes slow and tmpfs free.
fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    let builder = tempfile::Builder::new().prefix("grappe-ft-protocol-").to_owned();
    if shm.is_dir() { builder.tempdir_in(shm) } else { builder.tempdir() }.expect("a scratch directory")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn the_record_and_the_images_agree_and_the_newest_intact_committed_wave_is_restored(
        with_server in any::<bool>(),
        ops in prop::collection::vec(ops(), 1..40),
    ) {
        let root = scratch();
        let mut harness = Harness::new(root.path(), with_server);
        for op in &ops {
            harness.apply(op);
        }
        // However it ended, a restart finds the newest intact committed wave.
        harness.restart(None);
    }
}

/// The sequence, step by step: a fallback from a corrupt wave must
/// not leave a record naming a deleted wave, and the intact wave before
/// must survive the next wave and its corruption.
#[test]
fn a_fallback_keeps_the_intact_wave_through_the_next_commit_and_its_corruption() {
    let root = scratch();
    let mut harness = Harness::new(root.path(), false);
    for _ in 0..3 {
        harness.apply(&Op::Wave { failing: None, crash: None });
    }
    assert_eq!(harness.model, vec![3, 2]);
    harness.apply(&Op::DamageLocal { rank: 2, newest: true });
    harness.apply(&Op::Restart { crash: None });
    assert_eq!(harness.model, vec![2], "wave 3 cannot be restored by rank 2");
    harness.apply(&Op::Wave { failing: None, crash: None });
    assert_eq!(harness.model, vec![4, 2], "the new wave and the intact one before it");
    harness.apply(&Op::DamageLocal { rank: 2, newest: true });
    harness.apply(&Op::Restart { crash: None });
    assert_eq!(harness.model, vec![2], "wave 2 is still there to go back to");
}

/// A crash between the servers' commit and the record's: the wave is not
/// committed, the record and the servers keep the waves before, and the
/// next wave takes a new number.
#[test]
fn a_crash_between_the_servers_commit_and_the_record_loses_nothing() {
    let root = scratch();
    let mut harness = Harness::new(root.path(), true);
    harness.apply(&Op::Wave { failing: None, crash: None });
    harness.apply(&Op::Wave { failing: None, crash: None });
    harness.apply(&Op::Wave { failing: None, crash: Some((0, Step::ServersCommitted)) });
    assert_eq!(harness.model, vec![2, 1]);
    assert!(harness.server_waves().contains(&3), "wave 3 is on the server, committed there");
    harness.apply(&Op::LoseLocal { rank: 1 });
    harness.apply(&Op::Restart { crash: None });
    assert_eq!(harness.model, vec![2, 1], "restored from wave 2, rank 1 from its server");
    assert_eq!(harness.server_waves(), BTreeSet::from([1, 2]), "the server dropped wave 3");
    assert_eq!(harness.last_wave, 3, "numbered past the wave left on the server");
    harness.apply(&Op::Wave { failing: None, crash: None });
    assert_eq!(harness.model, vec![4, 2]);
}

/// An unreadable record: the newest wave whose images are all intact is
/// restored, and the record is whole again.
#[test]
fn an_unreadable_record_restores_the_newest_wave_with_every_image_intact() {
    let root = scratch();
    let mut harness = Harness::new(root.path(), false);
    harness.apply(&Op::Wave { failing: None, crash: None });
    harness.apply(&Op::Wave { failing: None, crash: None });
    harness.apply(&Op::DamageLocal { rank: 0, newest: true });
    harness.apply(&Op::GarbleRecord);
    harness.apply(&Op::Restart { crash: None });
    assert_eq!(harness.model, vec![1]);
    assert!(matches!(harness.dir.read_record(), RecordState::Valid(r) if r.waves() == [1]));
}

/// A program that does not restore starts over: nothing is restored, the
/// record is emptied and the images deleted, and wave numbers go on.
#[test]
fn a_fresh_start_over_checkpoints_empties_the_record_and_numbers_on() {
    let root = scratch();
    let mut harness = Harness::new(root.path(), true);
    harness.apply(&Op::Wave { failing: None, crash: None });
    harness.apply(&Op::Wave { failing: None, crash: None });
    let settings = harness.settings();
    let room = Room::new(None);
    for (rank, outcome) in run_job(&room, |team| recover(team, &settings, true, &[])).into_iter().enumerate() {
        let recovery = outcome.unwrap();
        assert!(recovery.restored.is_none(), "rank {rank} restored a wave");
        assert_eq!(recovery.record, CommitRecord::default());
        assert_eq!(recovery.last_wave, 2, "rank {rank}: the next wave is 3");
        assert!(harness.dir.local_waves(rank).is_empty(), "rank {rank} kept its images");
    }
    assert!(matches!(harness.dir.read_record(), RecordState::Valid(r) if r.waves().is_empty()));
    assert!(harness.server_waves().is_empty(), "the server kept the job's waves");
}
