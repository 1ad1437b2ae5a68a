//! Synthetic jobs: per-rank trace files of an iterative program with
//! known messages and known clock distortions, written in the real format
//! (feature `traces`).
//!
//! Tests use them where a property needs ground truth (every message of
//! the job is known, so matching must find them all; the clock distortion
//! is known, so global time must undo it), and benchmarks use them to get
//! traces of any size in seconds. Real runs are tested apart.
//!
//! Each iteration of each rank: a region, a ring exchange by
//! `isend`/`irecv`/`wait`, a `send`/`recv` pair with the neighbouring rank
//! (`rank ^ 1`), an allreduce every tenth iteration, a counter. Dates are
//! laid out on a true time line so that every message is causal.

use std::io;
use std::path::Path;

use grappe_trace::format::{Calibration, Encoded, FileHeader, VERSION, schema};
use grappe_trace::raw::{Interner, raw_of};
use grappe_trace::{
    ANY, Body, ClockInfo, ClockSample, CollectiveKind, Completion, EventKind, FileDefinitions, Footer, Site,
    TraceWriter,
};

/// What writing a job's files gives: an I/O error names the file.
pub type Result<T> = io::Result<T>;

/// `error`, saying which file it happened to.
fn naming(path: &Path, error: io::Error) -> io::Error {
    io::Error::new(error.kind(), format!("{}: {error}", path.display()))
}

/// The true time line starts here (ns), like a monotonic clock after boot.
pub const T0: u64 = 1_000_000_000_000;
/// True duration of one iteration (ns).
pub const ITERATION_NS: u64 = 20_000;
/// One-way latency of the clock samples (ns).
pub const SAMPLE_LATENCY_NS: u64 = 2_000;

/// One rank's clock: local = true + offset + drift·(true − T0).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SyntheticClock {
    /// Offset at T0, ns.
    pub offset_ns: i64,
    /// Drift, parts per million.
    pub drift_ppm: f64,
}

impl SyntheticClock {
    /// The local date of a true date.
    pub fn local(&self, t: u64) -> u64 {
        let drift = self.drift_ppm * 1e-6 * (t as f64 - T0 as f64);
        (t as i64 + self.offset_ns + drift.round() as i64) as u64
    }

    fn is_perfect(&self) -> bool {
        self.offset_ns == 0 && self.drift_ppm == 0.0
    }
}

/// What to generate.
#[derive(Debug, Clone)]
pub struct SyntheticJob {
    /// Ranks.
    pub ranks: u32,
    /// Iterations per rank.
    pub iterations: u64,
    /// Per-rank clocks (missing entries are perfect).
    pub clocks: Vec<SyntheticClock>,
    /// All ranks on one host (then perfect clocks count as shared).
    pub one_host: bool,
    /// Clock samples per peer and phase.
    pub sample_points: usize,
    /// Events per block.
    pub block_events: usize,
}

impl SyntheticJob {
    /// `ranks` ranks, `iterations` iterations, perfect clocks on one host.
    pub fn new(ranks: u32, iterations: u64) -> Self {
        SyntheticJob {
            ranks,
            iterations,
            clocks: Vec::new(),
            one_host: true,
            sample_points: 20,
            block_events: grappe_trace::RECORDER_BLOCK_EVENTS,
        }
    }

    /// The same on distinct hosts with clocks off by up to 3 ms and 80 ppm
    /// (so the tools must estimate global time).
    pub fn distorted(ranks: u32, iterations: u64) -> Self {
        const OFFSETS: [i64; 4] = [0, 3_000_000, -1_200_000, 450_000];
        const DRIFTS: [f64; 4] = [0.0, 80.0, -35.0, 12.5];
        let clocks = (0..ranks as usize)
            .map(|r| SyntheticClock { offset_ns: OFFSETS[r % 4], drift_ppm: DRIFTS[r % 4] })
            .collect();
        SyntheticJob { one_host: false, clocks, ..SyntheticJob::new(ranks, iterations) }
    }

    fn clock(&self, rank: u32) -> SyntheticClock {
        self.clocks.get(rank as usize).copied().unwrap_or_default()
    }

    /// Events of one rank.
    pub fn events_of(&self, rank: u32) -> u64 {
        let ring = if self.ranks > 1 { 4 } else { 0 };
        let pair = if rank ^ 1 < self.ranks { 2 } else { 0 };
        2 + self.iterations * (3 + ring + pair) + self.iterations.div_ceil(10)
    }

    /// Events of the job.
    pub fn events(&self) -> u64 {
        (0..self.ranks).map(|r| self.events_of(r)).sum()
    }

    /// Point-to-point messages of the job.
    pub fn messages(&self) -> u64 {
        if self.ranks < 2 {
            return 0;
        }
        let paired = (self.ranks - self.ranks % 2) as u64;
        self.iterations * (self.ranks as u64 + paired)
    }
}

/// Writes the job's files, `rank-NNNNN.gtrace`, in `dir`.
pub fn write_job(dir: &Path, job: &SyntheticJob) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| naming(dir, e))?;
    for rank in 0..job.ranks {
        let path = grappe_trace::file_for(dir, rank);
        write_rank(&path, job, rank).map_err(|e| naming(&path, e))?;
    }
    Ok(())
}

fn write_rank(path: &Path, job: &SyntheticJob, rank: u32) -> std::io::Result<()> {
    let clock = job.clock(rank);
    let mut writer = TraceWriter::create(path, &header(job, rank))?;
    if rank == 0 && job.ranks > 1 {
        writer.write_samples(&samples(job, 0))?;
    }
    let mut sites = [None; EventKind::ALL.len() + 1];
    for kind in EventKind::ALL {
        sites[kind as usize] = synthetic_site(kind);
    }
    let defs = FileDefinitions::default();
    let mut out = RankWriter { writer, defs, block: Vec::new(), job, rank, clock, sites };
    let mut seq = [0u64; 2];
    out.push(T0, T0, Body::Init)?;
    for i in 0..job.iterations {
        iteration(&mut out, i, &mut seq)?;
    }
    let end = T0 + job.iterations * ITERATION_NS;
    out.push(end, end, Body::Finalize)?;
    out.flush()?;
    let mut writer = out.writer;
    if rank == 0 && job.ranks > 1 {
        writer.write_samples(&samples(job, 1))?;
    }
    let footer = Footer { events: job.events_of(rank), alpha_after: Some(alpha_after(rank)), ..Footer::default() };
    writer.write_footer(&footer)
}

/// The α a synthetic rank measures after the run: 10 ns before it, as its
/// header says, and 10 + rank after, so each rank's can be told apart.
pub fn alpha_after(rank: u32) -> [u32; 32] {
    let mut alpha = [0u32; 32];
    for kind in EventKind::ALL {
        alpha[kind.id() as usize] = 10 + rank;
    }
    alpha
}

/// Writes one rank's file from given events, (start, end, body) with
/// local dates in ns, under `header`: for hand-made corner cases.
pub fn write_events(path: &Path, header: &FileHeader, events: &[(u64, u64, Body)]) -> Result<()> {
    let mut writer = write_unfinished(path, header, events)?;
    writer
        .write_footer(&Footer { events: events.len() as u64, dropped: 0, flushes: 0, ..Footer::default() })
        .map_err(|e| naming(path, e))
}

/// [`write_events`] as a killed rank leaves its file: the events it
/// flushed and no footer; with no events, the header alone (killed
/// before its first flush).
pub fn write_killed(path: &Path, header: &FileHeader, events: &[(u64, u64, Body)]) -> Result<()> {
    if events.is_empty() {
        return TraceWriter::create(path, header).map(drop).map_err(|e| naming(path, e));
    }
    write_unfinished(path, header, events).map(drop)
}

/// The header and the events in one block, not finished by a footer.
fn write_unfinished(path: &Path, header: &FileHeader, events: &[(u64, u64, Body)]) -> Result<TraceWriter> {
    let io = |e| naming(path, e);
    let rank = header.rank.unwrap_or(0);
    let mut writer = TraceWriter::create(path, header).map_err(io)?;
    let mut defs = FileDefinitions::default();
    let encoded: Vec<Encoded> = events
        .iter()
        .map(|&(start, end, ref body)| Encoded { rank, start, end, alpha_ns: 0, raw: raw_of(body, &mut defs) })
        .collect();
    writer.write_definitions(&defs.take_pending()).map_err(io)?;
    writer.write_events(encoded.into_iter()).map_err(io)?;
    Ok(writer)
}

struct RankWriter<'a> {
    writer: TraceWriter,
    defs: FileDefinitions,
    block: Vec<Encoded>,
    job: &'a SyntheticJob,
    rank: u32,
    clock: SyntheticClock,
    /// Call sites by kind id.
    sites: [Option<Site>; EventKind::ALL.len() + 1],
}

impl RankWriter<'_> {
    fn push(&mut self, start: u64, end: u64, body: Body) -> std::io::Result<()> {
        let mut raw = raw_of(&body, &mut self.defs);
        if let Some(site) = self.sites[body.kind() as usize] {
            raw.site = self.defs.site(site) + 1;
        }
        let (start, end) = (self.clock.local(start), self.clock.local(end));
        self.block.push(Encoded { rank: self.rank, start, end, alpha_ns: 10, raw });
        if self.block.len() >= self.job.block_events {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.block.is_empty() {
            return Ok(());
        }
        self.writer.write_definitions(&self.defs.take_pending())?;
        self.writer.write_events(self.block.drain(..))
    }
}

/// The call site of a kind of call in the synthetic program: one line per
/// kind (`synthetic.rs:1003:9` for a send), none for init and finalize,
/// which the runtime records on its own.
pub fn synthetic_site(kind: EventKind) -> Option<Site> {
    match kind {
        EventKind::Init | EventKind::Finalize => None,
        kind if kind.is_call() => Site::of(&format!("synthetic.rs:{}:9", 1000 + kind.id())),
        _ => None,
    }
}

/// One iteration; `seq` counts sends to the right neighbour and the pair.
fn iteration(out: &mut RankWriter, i: u64, seq: &mut [u64; 2]) -> std::io::Result<()> {
    let (rank, n) = (out.rank, out.job.ranks);
    let t = T0 + i * ITERATION_NS;
    out.push(t, t, Body::RegionEnter { name: "step".into(), location: "synthetic.rs:1".into() })?;
    if n > 1 {
        let (right, left) = ((rank + 1) % n, (rank + n - 1) % n);
        let request = 2 * i;
        out.push(t + 100, t + 300, Body::Isend { dest: right, tag: 1, comm: 0, bytes: 64, seq: seq[0], request })?;
        seq[0] += 1;
        let irecv = Body::Irecv { src: left, tag: 1, comm: 0, request: request + 1 };
        out.push(t + 400, t + 500, irecv)?;
        let sent = Completion { is_recv: false, src: 0, tag: 1, bytes: 64, arrived: false };
        out.push(t + 5_000, t + 6_000, Body::Wait { request, comm: 0, completion: sent, failed: false })?;
        let got = Completion { is_recv: true, src: left, tag: 1, bytes: 64, arrived: true };
        out.push(t + 6_000, t + 7_000, Body::Wait { request: request + 1, comm: 0, completion: got, failed: false })?;
    }
    let partner = rank ^ 1;
    if partner < n {
        let bytes = 1024 + 8 * (i % 16);
        let send = |s: &mut [u64; 2]| {
            s[1] += 1;
            Body::Send { dest: partner, tag: 2, comm: 0, bytes, seq: s[1] - 1, failed: false, sync: false }
        };
        let recv = Body::Recv {
            src: partner,
            tag: 2,
            comm: 0,
            bytes,
            arrived: false,
            sendrecv: false,
            failed: false,
            any_source: false,
        };
        if rank % 2 == 0 {
            out.push(t + 8_000, t + 8_500, send(seq))?;
            out.push(t + 9_000, t + 11_000, recv)?;
        } else {
            out.push(t + 7_500, t + 8_800, recv)?;
            out.push(t + 9_200, t + 9_500, send(seq))?;
        }
    }
    if i % 10 == 0 {
        let allreduce = Body::Collective { op: CollectiveKind::Allreduce, comm: 0, root: ANY, bytes: 8, failed: false };
        out.push(t + 12_000, t + 15_000, allreduce)?;
    }
    out.push(t + 15_500, t + 15_500, Body::Counter { name: "residual".into(), value: (1000 / (i + 1)) as i64 })?;
    out.push(t + 16_000, t + 16_000, Body::RegionLeave { name: "step".into() })
}

/// Rank 0's ping-pongs with every peer: before the run (phase 0) or
/// after it (phase 1), one peer at a time, with a little jitter.
fn samples(job: &SyntheticJob, phase: u8) -> Vec<ClockSample> {
    let spacing = 50_000u64;
    let span = job.sample_points as u64 * spacing * job.ranks as u64;
    let mut t = if phase == 0 { T0 - span - 1_000_000 } else { T0 + job.iterations * ITERATION_NS + 1_000_000 };
    let reference = job.clock(0);
    let mut jitter = Jitter(0x9e37_79b9_7f4a_7c15);
    let mut out = Vec::new();
    for peer in 1..job.ranks {
        let clock = job.clock(peer);
        for _ in 0..job.sample_points {
            let (go, back, hold) = (jitter.latency(), jitter.latency(), 500);
            out.push(ClockSample {
                peer,
                phase,
                t_send_ref: reference.local(t),
                t_recv_peer: clock.local(t + go),
                t_send_peer: clock.local(t + go + hold),
                t_recv_ref: reference.local(t + go + hold + back),
            });
            t += spacing;
        }
    }
    out
}

/// Deterministic latency noise (xorshift; no need for a random crate to
/// spread sample latencies).
struct Jitter(u64);

impl Jitter {
    fn latency(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        SAMPLE_LATENCY_NS + self.0 % 200
    }
}

fn header(job: &SyntheticJob, rank: u32) -> FileHeader {
    let clock = job.clock(rank);
    let simulated = (!clock.is_perfect())
        .then(|| format!("synthetic: offset {} ns, drift {} ppm", clock.offset_ns, clock.drift_ppm));
    let host = if job.one_host { "synthetic".into() } else { format!("synthetic-{rank}") };
    let mut header = plain_header(rank, job.ranks, &host);
    header.clock.simulated = simulated;
    header.calibration = EventKind::ALL.iter().map(|k| Calibration { kind: k.name().into(), alpha_ns: 10 }).collect();
    header.buffer_events = job.block_events as u64;
    header
}

/// The header of a rank's file on `host`: raw monotonic clock in ns,
/// local dates, no calibration, 1024-event buffers flushed when full.
pub fn plain_header(rank: u32, world_size: u32, host: &str) -> FileHeader {
    FileHeader {
        format: VERSION,
        rank: Some(rank),
        world_size,
        job: "synthetic".into(),
        host: host.into(),
        pid: 1000 + rank,
        process_ranks: vec![rank],
        thread: None,
        clock: ClockInfo {
            source: "monotonic_raw".into(),
            ticks_per_second: 1e9,
            time_base: "local".into(),
            simulated: None,
            estimation: None,
            tsc: None,
        },
        calibration: Vec::new(),
        schema: schema(),
        flush_policy: "full".into(),
        buffer_events: 1024,
        started_unix_ns: 0,
        merged_from: Vec::new(),
    }
}

/// Two ranks swapping messages with sendrecv, for the corners of drawing
/// a sendrecv as one call (events as [`write_events`] takes them, dates
/// from `t0`):
/// - rank 0's first sendrecv (100–400 ns): its send and its receive
///   marked as the second half, with the same dates. Its message in was
///   sent at 120 ns, after the receive began (20 ns of waiting), and its
///   message out is received only at 500 ns, after the pair ended;
/// - then a send of no length (a coarse clock) at 500 ns, and a receive
///   marked as a sendrecv's second half but with other dates (700–800 ns):
///   two calls;
/// - rank 1 receives and sends plain, and leaves a send last (900–950 ns)
///   that nobody receives. Four messages are matched.
pub fn sendrecv_exchange(t0: u64) -> [Vec<(u64, u64, Body)>; 2] {
    let send = |dest, tag| Body::Send { dest, tag, comm: 0, bytes: 8, seq: 0, failed: false, sync: false };
    let recv = |src, tag, sendrecv| Body::Recv {
        src,
        tag,
        comm: 0,
        bytes: 8,
        arrived: false,
        sendrecv,
        failed: false,
        any_source: false,
    };
    let rank0 = vec![
        (t0, t0, Body::Init),
        (t0 + 100, t0 + 400, send(1, 1)),
        (t0 + 100, t0 + 400, recv(1, 2, true)),
        (t0 + 500, t0 + 500, send(1, 3)),
        (t0 + 700, t0 + 800, recv(1, 4, true)),
        (t0 + 2_000, t0 + 2_000, Body::Finalize),
    ];
    let rank1 = vec![
        (t0, t0, Body::Init),
        (t0 + 120, t0 + 180, send(0, 2)),
        (t0 + 200, t0 + 500, recv(0, 1, false)),
        (t0 + 550, t0 + 650, recv(0, 3, false)),
        (t0 + 650, t0 + 700, send(0, 4)),
        (t0 + 900, t0 + 950, send(0, 5)),
    ];
    [rank0, rank1]
}

/// Rank `rank`'s half of the world of [`write_split_job`], in
/// communicator rank order: the even ranks, or the odd ones.
pub fn split_half(rank: u32) -> Vec<u32> {
    if rank % 2 == 0 { vec![0, 2] } else { vec![1, 3] }
}

/// Writes in `dir` four ranks split into two disjoint communicators that
/// share context id 2 (as `split(rank % 2)` gives them). Each half
/// broadcasts from its rank 1 (world ranks 2 and 3). The halves
/// interleave: ranks 0, 1, 2, 3 enter at 1000, 1500, 3000, 3200 ns and
/// all leave at 6000 ns.
pub fn write_split_job(dir: &Path) -> Result<()> {
    const SPLIT: u32 = 2;
    std::fs::create_dir_all(dir).map_err(|e| naming(dir, e))?;
    for (r, entry) in [(0u32, 1000u64), (1, 1500), (2, 3000), (3, 3200)] {
        let events = vec![
            (100, 100, Body::Init),
            (200, 300, Body::CommCreate { comm: SPLIT, parent: 0, members: split_half(r).into() }),
            (
                entry,
                6000,
                Body::Collective { op: CollectiveKind::Bcast, comm: SPLIT, root: 1, bytes: 8, failed: false },
            ),
            (7000, 7000, Body::Finalize),
        ];
        write_events(&grappe_trace::file_for(dir, r), &plain_header(r, 4, "node-a"), &events)?;
    }
    Ok(())
}
