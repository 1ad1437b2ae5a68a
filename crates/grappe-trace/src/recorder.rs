//! Recording a rank's events.
//!
//! The hot path ([`Recorder::record`]) appends a 56-byte [`RawEvent`] to a
//! preallocated buffer: no lock, no atomic, no encoding. When the buffer
//! is full the policy decides:
//!
//! * `end`: keep what fits, count the rest as dropped (no I/O at all
//!   during the run);
//! * `full`: encode and write the buffer to the rank's local file right
//!   away, bracketed by `FlushBegin`/`FlushEnd` events so that the flush
//!   time can be compensated like any other perturbation;
//! * `thread`: hand the buffer to a writer thread and continue with a
//!   spare one (waiting, between flush events, only if none is free).
//!
//! Dates are recorded in clock ticks and turned into nanoseconds (and,
//! for single-host tests of global time, distorted by a simulated clock)
//! when written.

use std::panic::Location;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use grappe_settings::{SettingError, Vars};

use crate::alpha::{self, CallCosts};
use crate::clock::TraceClock;
use crate::event::EventKind;
use crate::format::{
    Calibration, ClockInfo, ClockSample, Definition, Encoded, FileHeader, Footer, RankThread, VERSION, schema,
};
use crate::names::RecentNames;
use crate::raw::RawEvent;
use crate::site::RecentIds;
use crate::writer::TraceWriter;
use rustc_hash::FxHashMap;

/// Entries of the recent-sites table (a program's hot loop makes a few
/// calls; collisions only cost a map lookup).
const SITE_CACHE: usize = 64;

/// Entries of the recent-names table (the program's regions, points and
/// counters by call site; collisions only cost a map lookup).
const NAME_CACHE: usize = 64;

/// What to do when the buffer is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushPolicy {
    /// Drop further events (counted).
    End,
    /// Write the buffer now, between flush events.
    Full,
    /// Hand the buffer to a writer thread.
    Thread,
}

impl FlushPolicy {
    fn name(self) -> &'static str {
        match self {
            FlushPolicy::End => "end",
            FlushPolicy::Full => "full",
            FlushPolicy::Thread => "thread",
        }
    }
}

/// Where and how to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecorderConfig {
    /// Directory of the per-rank files (local storage).
    pub dir: PathBuf,
    /// Buffer policy.
    pub policy: FlushPolicy,
    /// Events per buffer.
    pub buffer_events: usize,
    /// A busy wait of this many nanoseconds added to the recording of
    /// every event (`GRAPPE_TRACE_EXTRA_COST_NS`): heavy instrumentation
    /// emulated, to try probe-effect compensation on. What each wait
    /// really took, measured as it runs, is counted in its event's α.
    pub extra_cost_ns: u32,
}

impl RecorderConfig {
    /// From the environment: `GRAPPE_TRACE=DIR` turns tracing on;
    /// `GRAPPE_TRACE_FLUSH=end|full|thread` (default `full`);
    /// `GRAPPE_TRACE_BUFFER=EVENTS` (default 65536, 3.5 MiB per rank);
    /// `GRAPPE_TRACE_EXTRA_COST_NS=N` (default 0, at most a second).
    pub fn from_env() -> Result<Option<RecorderConfig>, SettingError> {
        RecorderConfig::from_vars(Vars::process())
    }

    /// The same, from `vars`.
    pub fn from_vars(vars: Vars<'_>) -> Result<Option<RecorderConfig>, SettingError> {
        let Some(dir) = vars.path("GRAPPE_TRACE") else { return Ok(None) };
        let policies = [FlushPolicy::End, FlushPolicy::Full, FlushPolicy::Thread].map(|p| (p.name(), p));
        let policy = vars.word("GRAPPE_TRACE_FLUSH", FlushPolicy::Full, &policies)?;
        let buffer_events: usize = vars.number("GRAPPE_TRACE_BUFFER", 65536, "a number of events")?;
        if buffer_events < MIN_BUFFER_EVENTS {
            let expected = format!("at least {MIN_BUFFER_EVENTS} events (a buffer's smallest size)");
            return Err(SettingError::new("GRAPPE_TRACE_BUFFER", buffer_events.to_string(), expected));
        }
        let extra_cost_ns: u32 = vars.number("GRAPPE_TRACE_EXTRA_COST_NS", 0, "nanoseconds (0 to 1000000000)")?;
        if extra_cost_ns > 1_000_000_000 {
            let expected = "nanoseconds (0 to 1000000000)";
            return Err(SettingError::new("GRAPPE_TRACE_EXTRA_COST_NS", extra_cost_ns.to_string(), expected));
        }
        Ok(Some(RecorderConfig { dir, policy, buffer_events, extra_cost_ns }))
    }
}

/// The smallest buffer a recorder takes.
const MIN_BUFFER_EVENTS: usize = 16;

/// A distortion applied to every recorded date (local nanoseconds in,
/// nanoseconds written out): the simulated clocks of single-host tests.
pub trait TimeMap: Send + Sync {
    /// The date written for a local date.
    fn map(&self, local_ns: u64) -> u64;
    /// What the distortion is, for the file header.
    fn describe(&self) -> String;
}

/// Who a recorder records for.
#[derive(Debug, Clone)]
pub struct Identity {
    /// World rank.
    pub rank: u32,
    /// Ranks in the job.
    pub world_size: u32,
    /// Ranks of this process.
    pub process_ranks: Vec<u32>,
    /// The job's id, the same for every rank of the job.
    pub job: String,
    /// The OS thread that runs the rank, if the caller knows it.
    pub thread: Option<RankThread>,
}

/// The per-rank recorder.
pub struct Recorder {
    rank: u32,
    clock: TraceClock,
    buf: Vec<RawEvent>,
    capacity: usize,
    /// The length at which the buffer is written out: one short of full
    /// when it is written during the run, so that the two events of a
    /// call that records two always fit before the flush (see
    /// [`Recorder::record_pair`]).
    flush_at: usize,
    policy: FlushPolicy,
    sink: Sink,
    strings: FxHashMap<String, u32>,
    locations: FxHashMap<usize, u32>,
    /// Site slot values by location address, so that a call's site costs
    /// a load and a compare.
    recent_sites: RecentIds<SITE_CACHE>,
    /// The ids of the program's event names by call site (see `names`).
    recent_names: RecentNames<NAME_CACHE>,
    pending: Vec<Definition>,
    next_members: u64,
    send_seq: Vec<u64>,
    next_request: u64,
    codec: Codec,
    footer: Footer,
    /// See [`RecorderConfig::extra_cost_ns`].
    extra_cost_ns: u32,
    /// With an extra cost, what the busy wait of each event in `buf`
    /// really took (ns, same index; empty without): a wait overshoots its
    /// length by a clock read or more, and one the scheduler interrupts
    /// lasts until the rank runs again, so the nominal length
    /// under-counts what the run spent.
    spent: Vec<u32>,
}

/// What turns raw records into encoded ones (shared with the writer thread).
#[derive(Clone)]
struct Codec {
    rank: u32,
    clock: TraceClock,
    /// α per kind, the cost of recording alone (an extra cost's busy
    /// wait, measured per event, is added to it by [`Codec::encode`]).
    alpha: [u32; 32],
    time_map: Option<Arc<dyn TimeMap>>,
}

impl Codec {
    fn date(&self, ticks: u64) -> u64 {
        let ns = self.clock.to_ns(ticks);
        self.time_map.as_ref().map_or(ns, |m| m.map(ns))
    }

    /// An event's dates, as the clock (real or simulated) gives them. A
    /// simulated clock's read noise may date a record before the one
    /// before it: that is what it simulates (clocks of other hosts read
    /// with noise), and `grappe trace check` must see it, so nothing puts
    /// them back in order. Only an end before its own start is raised to
    /// the start: the format stores a record's duration, unsigned.
    fn dates(&self, raw: &RawEvent) -> (u64, u64) {
        let (start, end) = (self.date(raw.start), self.date(raw.end.max(raw.start)));
        (start, end.max(start))
    }

    /// The record of `raw`, whose recording spent `spent` ns more than
    /// recording costs (the measured busy wait of an extra cost).
    fn encode(&self, raw: &RawEvent, spent: u32) -> Encoded {
        let (start, end) = self.dates(raw);
        let alpha_ns = match EventKind::from_id(raw.kind) {
            // A flush's cost is its own duration, measured.
            Some(EventKind::FlushEnd) => end.saturating_sub(start).min(u32::MAX as u64) as u32,
            _ => self.alpha[raw.kind as usize % 32].saturating_add(spent),
        };
        Encoded { rank: self.rank, start, end, alpha_ns, raw: *raw }
    }
}

enum Sink {
    File(TraceWriter),
    Thread { jobs: SyncSender<Job>, spares: Receiver<Vec<RawEvent>>, writer: JoinHandle<std::io::Result<TraceWriter>> },
    Closed,
}

enum Job {
    /// Events, the extra cost each spent (empty: none), definitions.
    Events(Vec<RawEvent>, Vec<u32>, Vec<Definition>),
    Samples(Vec<ClockSample>),
}

impl Recorder {
    /// Creates the rank's file in `config.dir` and calibrates α.
    pub fn create(
        config: &RecorderConfig,
        who: Identity,
        time_map: Option<Arc<dyn TimeMap>>,
    ) -> std::io::Result<Recorder> {
        Recorder::create_with_call_costs(config, who, time_map, None)
    }

    /// [`Recorder::create`], with the costs of recording the runtime's
    /// calls measured in place for the α of calls, in place of the
    /// recorder's own tight loop (see [`alpha`]).
    pub fn create_with_call_costs(
        config: &RecorderConfig,
        who: Identity,
        time_map: Option<Arc<dyn TimeMap>>,
        calls: Option<CallCosts>,
    ) -> std::io::Result<Recorder> {
        if let Some(file) = config.dir.ancestors().find(|a| a.exists()).filter(|a| !a.is_dir()) {
            return Err(std::io::Error::other(format!("{} is a file, not a directory", file.display())));
        }
        std::fs::create_dir_all(&config.dir)?;
        let clock = TraceClock::shared();
        let loop_alpha = alpha::calibrate(clock);
        let measured = calls.map_or(loop_alpha, |calls| alpha::with_calls_measured(loop_alpha, &calls));
        // The header gives the nominal α (the extra cost at its length);
        // each record, what its event really spent.
        let nominal = alpha::with_extra_cost(measured, config.extra_cost_ns);
        let header = header(config, &who, clock, &nominal, time_map.as_deref());
        let writer = TraceWriter::create(&file_for(&config.dir, who.rank), &header)?;
        let codec = Codec { rank: who.rank, clock, alpha: measured, time_map };
        let sink = match config.policy {
            FlushPolicy::Thread => spawn_writer(writer, codec.clone(), config.buffer_events),
            _ => Sink::File(writer),
        };
        let mut recorder =
            Recorder::assemble(who.rank, who.world_size, config.buffer_events, config.policy, sink, codec);
        recorder.extra_cost_ns = config.extra_cost_ns;
        if config.extra_cost_ns > 0 {
            recorder.spent = Vec::with_capacity(config.buffer_events);
        }
        Ok(recorder)
    }

    /// A recorder that writes nothing: its events stay in a buffer of
    /// `capacity` (later ones are dropped) and go when it is dropped. For
    /// timing the runtime's recording in place, before the rank's real
    /// recorder exists.
    pub fn scratch(rank: u32, world_size: u32, capacity: usize) -> Recorder {
        let clock = TraceClock::shared();
        let codec = Codec { rank, clock, alpha: [0; 32], time_map: None };
        Recorder::assemble(rank, world_size, capacity, FlushPolicy::End, Sink::Closed, codec)
    }

    fn assemble(
        rank: u32,
        world_size: u32,
        buffer_events: usize,
        policy: FlushPolicy,
        sink: Sink,
        codec: Codec,
    ) -> Recorder {
        Recorder {
            rank,
            clock: codec.clock,
            buf: touched_buffer(buffer_events),
            capacity: buffer_events,
            flush_at: match policy {
                FlushPolicy::End => buffer_events,
                _ => buffer_events.saturating_sub(1).max(1),
            },
            policy,
            sink,
            strings: FxHashMap::default(),
            locations: FxHashMap::default(),
            recent_sites: RecentIds::default(),
            recent_names: RecentNames::default(),
            pending: Vec::new(),
            next_members: 0,
            send_seq: vec![0; world_size as usize],
            next_request: 0,
            codec,
            footer: Footer::default(),
            extra_cost_ns: 0,
            spent: Vec::new(),
        }
    }

    /// The recording rank.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// The clock the recorder dates with.
    pub fn clock(&self) -> TraceClock {
        self.clock
    }

    /// The current date, in ticks (pass it back in a [`RawEvent`]).
    #[inline(always)]
    pub fn now(&self) -> u64 {
        self.clock.now()
    }

    /// The current date as written in the trace (nanoseconds, simulated
    /// distortion included): for clock samples.
    pub fn now_ns(&self) -> u64 {
        self.codec.date(self.clock.now())
    }

    /// Appends an event. The hot path: a prefetch, a 56-byte store and two
    /// comparisons.
    /// The buffer is written out as soon as it fills (after the event that
    /// filled it, so that dates stay in order in the file).
    #[inline]
    pub fn record(&mut self, raw: RawEvent) {
        if self.extra_cost_ns > 0 {
            self.record_with_extra_cost(raw);
            return;
        }
        if self.buf.len() < self.capacity {
            prefetch_for_write(self.buf.as_ptr().wrapping_add(self.buf.len() + PREFETCH_AHEAD));
            self.buf.push(raw);
            if self.buf.len() >= self.flush_at {
                self.buffer_full();
            }
        } else {
            self.footer.dropped += 1; // policy `end` only
        }
    }

    /// Appends the two events of one call that share its start (a
    /// sendrecv's send and receive). No flush falls between them: a flush
    /// there would be dated after their start yet written before the
    /// second, and the file would go back in time.
    pub fn record_pair(&mut self, first: RawEvent, second: RawEvent) {
        let spent = if self.extra_cost_ns > 0 { self.spend_extra_cost(2) } else { 0 };
        if self.buf.len() + 2 <= self.capacity {
            if self.extra_cost_ns > 0 {
                // The pair's wait, shared: correction adds the two α.
                self.spent.extend([spent / 2, spent - spent / 2]);
            }
            prefetch_for_write(self.buf.as_ptr().wrapping_add(self.buf.len() + PREFETCH_AHEAD));
            self.buf.push(first);
            self.buf.push(second);
            if self.buf.len() >= self.flush_at {
                self.buffer_full();
            }
        } else {
            self.footer.dropped += 2; // policy `end` only
        }
    }

    /// The sequence number of the next send to `dest` (all communicators).
    #[inline]
    pub fn next_send_seq(&mut self, dest: u32) -> u64 {
        let slot = &mut self.send_seq[dest as usize];
        *slot += 1;
        *slot
    }

    /// A new id for a non-blocking request (links its post and its wait).
    pub fn next_request(&mut self) -> u64 {
        self.next_request += 1;
        self.next_request
    }

    /// The id of a string (region or counter name), defined on first use.
    pub fn intern(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.strings.get(s) {
            return id;
        }
        let id = self.strings.len() as u32;
        self.strings.insert(s.to_owned(), id);
        self.pending.push(Definition::String(id, s.to_owned()));
        id
    }

    /// The id of a source location (`file:line:column`).
    pub fn location(&mut self, location: &'static Location<'static>) -> u32 {
        let key = location as *const Location<'static> as usize;
        if let Some(&id) = self.locations.get(&key) {
            return id;
        }
        let id = self.intern(&format!("{}:{}:{}", location.file(), location.line(), location.column()));
        self.locations.insert(key, id);
        id
    }

    /// The ids of a user event's name and of the `location` that names it
    /// (a region, point or counter). On the hot path: the names recently
    /// given at each call site, the maps behind them.
    #[inline]
    pub fn name_at(&mut self, name: &str, location: &'static Location<'static>) -> (u32, u32) {
        self.cached_name(name, location, true)
    }

    /// The id of a counter's name, given at `location` (which its record
    /// does not hold: no location is defined for it).
    #[inline]
    pub fn counter_name_at(&mut self, name: &str, location: &'static Location<'static>) -> u32 {
        self.cached_name(name, location, false).0
    }

    #[inline(always)]
    fn cached_name(&mut self, name: &str, location: &'static Location<'static>, located: bool) -> (u32, u32) {
        let key = location as *const Location<'static> as usize;
        match self.recent_names.get(key, name) {
            Some(ids) => ids,
            None => self.name_miss(name, location, key, located),
        }
    }

    #[cold]
    fn name_miss(&mut self, name: &str, location: &'static Location<'static>, key: usize, located: bool) -> (u32, u32) {
        let ids = (self.intern(name), if located { self.location(location) } else { u32::MAX });
        self.recent_names.insert(key, name, ids);
        ids
    }

    /// The `site` slot of a call made at `location` (its string id plus
    /// one). On the hot path: a table of recent sites, the map behind it.
    #[inline]
    pub fn site(&mut self, location: &'static Location<'static>) -> u32 {
        let key = location as *const Location<'static> as usize;
        match self.recent_sites.get(key) {
            Some(site) => site,
            None => self.site_miss(location, key),
        }
    }

    #[cold]
    fn site_miss(&mut self, location: &'static Location<'static>, key: usize) -> u32 {
        let site = self.location(location) + 1;
        self.recent_sites.insert(key, site);
        site
    }

    /// The `site` slot of a call made from machine code at return address
    /// `address` (a C program's call into grappe's MPI library, see
    /// [`crate::code_site`]). On the hot path as [`site`](Self::site).
    #[inline]
    pub fn code_site(&mut self, address: usize) -> u32 {
        match self.recent_sites.get(address) {
            Some(site) => site,
            None => self.code_site_miss(address),
        }
    }

    #[cold]
    fn code_site_miss(&mut self, address: usize) -> u32 {
        // Keyed with the locations: a return address is in code, a
        // location in read-only data, so the two never meet.
        let id = match self.locations.get(&address) {
            Some(&id) => id,
            None => {
                let id = self.intern(&crate::code_site::text_of(address));
                self.locations.insert(address, id);
                id
            }
        };
        self.recent_sites.insert(address, id + 1);
        id + 1
    }

    /// The id of a member list (communicator members).
    pub fn members(&mut self, members: &[u32]) -> u64 {
        let id = self.next_members;
        self.next_members += 1;
        self.pending.push(Definition::Members(id, members.to_vec()));
        id
    }

    /// Writes clock samples (the reference rank, once per phase).
    pub fn write_samples(&mut self, samples: Vec<ClockSample>) -> std::io::Result<()> {
        match &mut self.sink {
            Sink::File(writer) => writer.write_samples(&samples),
            Sink::Thread { jobs, .. } => jobs.send(Job::Samples(samples)).map_err(|_| writer_gone()),
            Sink::Closed => Err(writer_gone()),
        }
    }

    /// [`Recorder::record`] with an extra cost: the busy wait, then the
    /// event with what the wait took.
    #[cold]
    fn record_with_extra_cost(&mut self, raw: RawEvent) {
        let spent = self.spend_extra_cost(1);
        if self.buf.len() < self.capacity {
            self.buf.push(raw);
            self.spent.push(spent);
            if self.buf.len() >= self.flush_at {
                self.buffer_full();
            }
        } else {
            self.footer.dropped += 1; // policy `end` only
        }
    }

    /// The emulated instrumentation cost of `events` events: a busy wait
    /// (a sleep would let the core go, which heavy instrumentation does
    /// not) on the trace's clock, from its first read to its last. Returns
    /// what it took, ns: at least its length, more by the last clock
    /// read's overshoot and by any time the scheduler took the core away.
    #[cold]
    fn spend_extra_cost(&self, events: u32) -> u32 {
        let length = u64::from(self.extra_cost_ns) * u64::from(events);
        let from = self.clock.to_ns(self.clock.now());
        loop {
            let spent = self.clock.to_ns(self.clock.now()).saturating_sub(from);
            if spent >= length {
                return spent.min(u64::from(u32::MAX)) as u32;
            }
            std::hint::spin_loop();
        }
    }

    /// Measures α again, at the end of the run, for the footer: the
    /// recorder's own loops, and `calls` (what recording added to the
    /// runtime's calls, measured in place as at the start) for the calls.
    /// Timing takes a few milliseconds; call it once the program's last
    /// event is recorded.
    pub fn calibrate_after(&mut self, calls: Option<CallCosts>) {
        let loop_alpha = alpha::calibrate(self.clock);
        let measured = calls.map_or(loop_alpha, |calls| alpha::with_calls_measured(loop_alpha, &calls));
        self.footer.alpha_after = Some(alpha::with_extra_cost(measured, self.extra_cost_ns));
    }

    /// Writes everything left and the footer; the file is then complete.
    pub fn finish(&mut self) -> std::io::Result<Footer> {
        self.flush()?;
        let mut writer = match std::mem::replace(&mut self.sink, Sink::Closed) {
            Sink::File(writer) => writer,
            Sink::Thread { jobs, writer, .. } => {
                drop(jobs);
                writer.join().map_err(|_| std::io::Error::other("trace writer thread panicked"))??
            }
            Sink::Closed => return Err(writer_gone()),
        };
        writer.write_footer(&self.footer)?;
        Ok(self.footer.clone())
    }

    /// The buffer just filled: write it out between flush events, unless
    /// the policy keeps it to the end (then later events are dropped).
    #[cold]
    fn buffer_full(&mut self) {
        if self.policy == FlushPolicy::End {
            return;
        }
        let begin = self.clock.now();
        let written = self.flush();
        let end = self.clock.now();
        self.footer.flushes += 1;
        self.buf.push(RawEvent { start: begin, end: begin, kind: EventKind::FlushBegin.id(), ..RawEvent::default() });
        self.buf.push(RawEvent { start: begin, end, kind: EventKind::FlushEnd.id(), ..RawEvent::default() });
        if self.extra_cost_ns > 0 {
            // The flush's events spend no extra cost: their writes are it.
            self.spent.extend([0, 0]);
        }
        if let Err(e) = written {
            // Recording must not kill the program: say it once, then drop.
            eprintln!("grappe: rank {}: cannot write its trace ({e}); further events are dropped", self.rank);
            self.policy = FlushPolicy::End;
        }
    }

    /// Writes the buffer (and pending definitions) out.
    fn flush(&mut self) -> std::io::Result<()> {
        let defs = std::mem::take(&mut self.pending);
        self.footer.events += self.buf.len() as u64;
        match &mut self.sink {
            Sink::File(writer) => {
                writer.write_definitions(&defs)?;
                let written = write_events(writer, &self.codec, &self.buf, &self.spent);
                self.buf.clear();
                self.spent.clear();
                written
            }
            Sink::Thread { jobs, spares, .. } => {
                let spare = spares.recv().map_err(|_| writer_gone())?;
                let full = std::mem::replace(&mut self.buf, spare);
                let room = self.spent.capacity();
                let spent = std::mem::replace(&mut self.spent, Vec::with_capacity(room));
                jobs.send(Job::Events(full, spent, defs)).map_err(|_| writer_gone())
            }
            Sink::Closed => Err(writer_gone()),
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        if !matches!(self.sink, Sink::Closed) {
            let _ = self.finish();
        }
    }
}

fn writer_gone() -> std::io::Error {
    std::io::Error::other("the trace writer stopped")
}

/// The writer thread: encodes and writes full buffers, hands them back.
fn spawn_writer(mut writer: TraceWriter, codec: Codec, buffer_events: usize) -> Sink {
    let (jobs, inbox) = sync_channel::<Job>(2);
    let (give_back, spares) = sync_channel::<Vec<RawEvent>>(2);
    give_back.send(touched_buffer(buffer_events)).expect("fresh channel");
    let handle = std::thread::Builder::new()
        .name(format!("grappe-trace-{}", codec.rank))
        .spawn(move || {
            for job in inbox {
                match job {
                    Job::Events(mut events, spent, defs) => {
                        writer.write_definitions(&defs)?;
                        write_events(&mut writer, &codec, &events, &spent)?;
                        events.clear();
                        let _ = give_back.send(events);
                    }
                    Job::Samples(samples) => writer.write_samples(&samples)?,
                }
            }
            Ok(writer)
        })
        .expect("cannot start the trace writer thread");
    Sink::Thread { jobs, spares, writer: handle }
}

/// Writes `events`, each with the extra cost `spent` gives it at its
/// index (none if `spent` is empty).
fn write_events(writer: &mut TraceWriter, codec: &Codec, events: &[RawEvent], spent: &[u32]) -> std::io::Result<()> {
    debug_assert!(spent.is_empty() || spent.len() == events.len());
    writer.write_indexed_event_blocks(events.len(), |i| codec.encode(&events[i], spent.get(i).copied().unwrap_or(0)))
}

/// The file of rank `rank` in `dir`.
pub fn file_for(dir: &Path, rank: u32) -> PathBuf {
    dir.join(format!("rank-{rank:05}.gtrace"))
}

/// The rank of a per-rank file, by its name ([`file_for`]'s): `None` for
/// any other file.
pub fn rank_of_file(path: &Path) -> Option<u32> {
    rank_digits(path)?.parse().ok()
}

/// The digits of a per-rank file's name (five at least).
fn rank_digits(path: &Path) -> Option<&str> {
    let name = path.file_name()?.to_str()?;
    let digits = name.strip_prefix("rank-")?.strip_suffix(".gtrace")?;
    (digits.len() >= 5 && digits.bytes().all(|b| b.is_ascii_digit())).then_some(digits)
}

/// Removes the per-rank files ([`file_for`]'s names) an earlier run left
/// in `dir`, so that a new run with fewer ranks leaves none of them
/// among its own; other files stay. Returns how many were removed; the
/// error names the file that could not be.
pub fn remove_rank_files(dir: &Path) -> std::io::Result<usize> {
    let named = |e: std::io::Error| std::io::Error::new(e.kind(), format!("{}: {e}", dir.display()));
    let entries = match std::fs::read_dir(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        other => other.map_err(named)?,
    };
    let mut removed = 0;
    for entry in entries {
        let path = entry.map_err(named)?.path();
        if rank_digits(&path).is_some() {
            std::fs::remove_file(&path)
                .map_err(|e| std::io::Error::new(e.kind(), format!("cannot remove {}: {e}", path.display())))?;
            removed += 1;
        }
    }
    Ok(removed)
}

fn header(
    config: &RecorderConfig,
    who: &Identity,
    clock: TraceClock,
    alpha: &[u32; 32],
    time_map: Option<&dyn TimeMap>,
) -> FileHeader {
    FileHeader {
        format: VERSION,
        rank: Some(who.rank),
        world_size: who.world_size,
        job: who.job.clone(),
        host: std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default().trim().to_owned(),
        pid: std::process::id(),
        process_ranks: who.process_ranks.clone(),
        thread: who.thread.clone(),
        clock: ClockInfo {
            source: clock.source_name().to_owned(),
            ticks_per_second: clock.ticks_per_second(),
            time_base: "local".to_owned(),
            simulated: time_map.map(TimeMap::describe),
            estimation: None,
            tsc: clock.tsc_anchor(),
        },
        calibration: EventKind::ALL
            .iter()
            .map(|k| Calibration { kind: k.name().to_owned(), alpha_ns: alpha[k.id() as usize] })
            .collect(),
        schema: schema(),
        flush_policy: config.policy.name().to_owned(),
        buffer_events: config.buffer_events as u64,
        started_unix_ns: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64),
        merged_from: Vec::new(),
    }
}

/// An empty buffer of `capacity` events whose pages are already mapped:
/// the first pass through a fresh buffer would otherwise take a page fault
/// every 85 events on the hot path, which is the perturbation we promise
/// not to add.
fn touched_buffer(capacity: usize) -> Vec<RawEvent> {
    let mut buf = Vec::with_capacity(capacity);
    for slot in buf.spare_capacity_mut() {
        slot.write(RawEvent::default());
    }
    buf
}

/// How many records ahead of the next one the buffer's line is asked for
/// (see [`prefetch_for_write`]).
const PREFETCH_AHEAD: usize = 8;

/// Asks for the line at `at` in a state it can be written in
/// (`PREFETCHW`). The buffer is far larger than any cache, so each record
/// stored would otherwise wait for its line to be read first: asking 8
/// records ahead took the store's part of a point event in a tight loop
/// from 3.1-4.1 ns to 2.1-2.5 (`record_cost`, BENCHMARKS.md). The address
/// may lie past the buffer's end: a prefetch is only a hint.
#[inline(always)]
fn prefetch_for_write(at: *const RawEvent) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHW reads and writes nothing and never faults, whatever
    // the address (CPUs without it take it as a NOP).
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_ET0 }>(at.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

/// A recorder interns the texts of the events it is given as raw records
/// (`raw::raw_of`), as the runtime's calls do.
impl crate::raw::Interner for Recorder {
    fn intern(&mut self, s: &str) -> u32 {
        Recorder::intern(self, s)
    }
    fn members(&mut self, members: &[u32]) -> u64 {
        Recorder::members(self, members)
    }
}

#[cfg(test)]
mod settings_tests {
    use std::ffi::OsString;

    use super::*;

    fn read(pairs: &[(&str, &str)]) -> Result<Option<RecorderConfig>, SettingError> {
        let lookup = |name: &str| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| OsString::from(*v));
        RecorderConfig::from_vars(Vars::from_lookup(&lookup))
    }

    #[test]
    fn tracing_is_on_with_a_directory_and_takes_its_settings() {
        assert_eq!(read(&[("GRAPPE_TRACE", ""), ("GRAPPE_TRACE_FLUSH", "bogus")]).unwrap(), None);
        let config = read(&[("GRAPPE_TRACE", "/t"), ("GRAPPE_TRACE_FLUSH", "thread"), ("GRAPPE_TRACE_BUFFER", "16")]);
        let config = config.unwrap().expect("on");
        assert_eq!((config.dir, config.policy, config.buffer_events), (PathBuf::from("/t"), FlushPolicy::Thread, 16));
    }

    #[test]
    fn a_bad_setting_names_the_variable_its_value_and_what_it_takes() {
        for (var, value, said) in [
            ("GRAPPE_TRACE_FLUSH", "often", "GRAPPE_TRACE_FLUSH=\"often\": expected end, full or thread"),
            ("GRAPPE_TRACE_BUFFER", "1M", "GRAPPE_TRACE_BUFFER=\"1M\": expected a number of events"),
            (
                "GRAPPE_TRACE_BUFFER",
                "15",
                "GRAPPE_TRACE_BUFFER=\"15\": expected at least 16 events (a buffer's smallest size)",
            ),
        ] {
            let error = read(&[("GRAPPE_TRACE", "/t"), (var, value)]).unwrap_err();
            assert_eq!(error.to_string(), said);
        }
    }
}
