//! Collectives called with a count that one rank gets wrong, and what
//! every rank must see then: its right data or a
//! [`CollectiveMismatch`](grappe::Error::CollectiveMismatch) error, never
//! wrong data; and a revoked communicator afterwards, so that a barrier on
//! it fails on every rank rather than hangs.
//!
//! Rank `r`'s element `i` of block `b` is a hash of (seed, r, b, i), so
//! every rank can compute, from its own count alone, the result it would
//! get if all ranks had called with that count: its "right data". The
//! same scenarios run on thread ranks in-process (the proptests of
//! `tests/mismatch.rs`) and under `grappe run` in process and hybrid
//! modes (this directory's program), which prints one line per rank and
//! call for the test to judge.

// The program and the test each use a part of this module.
#![allow(dead_code)]

use std::fmt::Write as _;

use grappe::{BitXor, Communicator, Error, ErrorClass, Operation, UserOp};

/// The collectives that move data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coll {
    Bcast,
    Reduce,
    Allreduce,
    Gather,
    Gatherv,
    Scatter,
    Scatterv,
    Allgather,
    Allgatherv,
    Alltoall,
    Alltoallv,
    Scan,
    Exscan,
    ReduceScatter,
    ReduceScatterBlock,
}

pub const ALL: [Coll; 15] = [
    Coll::Bcast,
    Coll::Reduce,
    Coll::Allreduce,
    Coll::Gather,
    Coll::Gatherv,
    Coll::Scatter,
    Coll::Scatterv,
    Coll::Allgather,
    Coll::Allgatherv,
    Coll::Alltoall,
    Coll::Alltoallv,
    Coll::Scan,
    Coll::Exscan,
    Coll::ReduceScatter,
    Coll::ReduceScatterBlock,
];

/// One collective call in which rank `odd_rank` passes `odd_count` where
/// every other rank passes `count` (elements of 8 bytes per block, or for
/// each rank in the counts of the v-collectives).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scenario {
    pub coll: Coll,
    pub count: usize,
    pub odd_rank: usize,
    pub odd_count: usize,
    pub root: usize,
    /// Run on a communicator with the shared-memory arena (if the host
    /// has one left); otherwise on one without.
    pub arena: bool,
    /// Reductions with XOR; otherwise with a non-commutative operation.
    pub commutative: bool,
    pub seed: u64,
}

impl Scenario {
    /// The count rank `rank` passes.
    pub fn count_of(&self, rank: usize) -> usize {
        if rank == self.odd_rank { self.odd_count } else { self.count }
    }

    /// A scenario from 8 numbers: the collective's index in [`ALL`], then
    /// the fields in order (booleans as 0 or 1).
    pub fn parse(words: &[String]) -> Result<Scenario, String> {
        let nums: Vec<u64> =
            words.iter().map(|w| w.parse().map_err(|_| format!("not a number: {w}"))).collect::<Result<_, _>>()?;
        let [coll, count, odd_rank, odd_count, root, arena, commutative, seed] = nums[..] else {
            return Err(format!("a scenario is 8 numbers, got {}", nums.len()));
        };
        let coll = *ALL.get(coll as usize).ok_or(format!("no collective {coll}"))?;
        Ok(Scenario {
            coll,
            count: count as usize,
            odd_rank: odd_rank as usize,
            odd_count: odd_count as usize,
            root: root as usize,
            arena: arena != 0,
            commutative: commutative != 0,
            seed,
        })
    }

    /// The bytes a rank passing `count` names in its call, as the runtime
    /// reports it (`None` for the collectives whose sizes differ by rank).
    pub fn call_bytes(&self, count: usize, ranks: usize) -> Option<u64> {
        let bytes = (count * 8) as u64;
        match self.coll {
            Coll::Gatherv | Coll::Scatterv | Coll::Alltoallv => None,
            Coll::Alltoall | Coll::ReduceScatterBlock | Coll::Allgatherv | Coll::ReduceScatter => {
                Some(bytes * ranks as u64)
            }
            _ => Some(bytes),
        }
    }
}

/// What one rank saw of one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// The call returned its right data (or, for a call after the odd
    /// one, simply returned `Ok`).
    Right,
    /// The call returned `Ok` with data that is not this rank's right data.
    Wrong(String),
    /// The call failed with a collective mismatch.
    Mismatch(Report),
    /// Any other error.
    Other(String),
}

/// What a mismatch error says: the collective in which it was found, who
/// found it, and the calls it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub op: String,
    pub found_by: usize,
    pub calls: Vec<CallSeen>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallSeen {
    pub rank: usize,
    /// The collective of this call, if not the report's.
    pub op: Option<String>,
    pub bytes: Option<u64>,
    pub root: Option<usize>,
}

impl Seen {
    fn of_error(e: &Error) -> Seen {
        match e {
            Error::CollectiveMismatch(why) if e.class() == ErrorClass::Truncate => Seen::Mismatch(Report {
                op: why.op.to_string(),
                found_by: why.found_by,
                calls: why
                    .calls
                    .iter()
                    .map(|c| CallSeen {
                        rank: c.rank,
                        op: c.op.as_ref().map(|o| o.to_string()),
                        bytes: c.bytes,
                        root: c.root,
                    })
                    .collect(),
            }),
            other => Seen::Other(other.to_string()),
        }
    }

    fn write(&self) -> String {
        match self {
            Seen::Right => "right".into(),
            Seen::Wrong(why) => format!("wrong {why}"),
            Seen::Other(why) => format!("other {why}"),
            Seen::Mismatch(report) => {
                let mut line = format!("mismatch {} {}", report.op, report.found_by);
                let opt = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
                for c in &report.calls {
                    let op = c.op.as_deref().unwrap_or("-");
                    let _ = write!(line, " {}/{}/{}/{op}", c.rank, opt(c.bytes), opt(c.root.map(|r| r as u64)));
                }
                line
            }
        }
    }

    fn read(text: &str) -> Option<Seen> {
        let (word, rest) = text.split_once(' ').unwrap_or((text, ""));
        Some(match word {
            "right" => Seen::Right,
            "wrong" => Seen::Wrong(rest.into()),
            "other" => Seen::Other(rest.into()),
            "mismatch" => {
                let mut words = rest.split(' ');
                let op = words.next()?.to_string();
                let found_by = words.next()?.parse().ok()?;
                let opt = |w: &str| if w == "-" { Some(None) } else { w.parse().ok().map(Some) };
                let calls = words
                    .map(|w| {
                        let f: Vec<&str> = w.split('/').collect();
                        let [rank, bytes, root, op] = f[..] else { return None };
                        Some(CallSeen {
                            rank: rank.parse().ok()?,
                            op: (op != "-").then(|| op.to_string()),
                            bytes: opt(bytes)?,
                            root: opt(root)?.map(|r: u64| r as usize),
                        })
                    })
                    .collect::<Option<_>>()?;
                Seen::Mismatch(Report { op, found_by, calls })
            }
            _ => return None,
        })
    }
}

/// One rank's outcome of a scenario: the odd call, then a barrier on the
/// same communicator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub rank: usize,
    pub call: Seen,
    pub after: Seen,
}

impl Outcome {
    /// Two lines for case `case`: the call, then the barrier.
    pub fn lines(&self, case: usize) -> String {
        format!(
            "mismatch_check case={case} rank={} which=call seen={}\nmismatch_check case={case} rank={} which=after seen={}",
            self.rank,
            self.call.write(),
            self.rank,
            self.after.write()
        )
    }

    /// The outcomes of every case in `output` (lines of [`lines`](Self::lines)),
    /// by case; `Err` names a line that does not read.
    pub fn read_all(output: &str, cases: usize) -> Result<Vec<Vec<Outcome>>, String> {
        let mut all: Vec<Vec<Outcome>> = vec![Vec::new(); cases];
        for line in output.lines().filter(|l| l.starts_with("mismatch_check ")) {
            let bad = || format!("unreadable line: {line}");
            let (head, seen) = line.split_once(" seen=").ok_or_else(bad)?;
            let field = |key: &str| head.split(' ').find_map(|w| w.strip_prefix(key)).ok_or_else(bad);
            let case: usize = field("case=")?.parse().map_err(|_| bad())?;
            let rank: usize = field("rank=")?.parse().map_err(|_| bad())?;
            let seen = Seen::read(seen).ok_or_else(bad)?;
            let outcomes = all.get_mut(case).ok_or_else(bad)?;
            match (field("which=")?, outcomes.iter_mut().find(|o| o.rank == rank)) {
                ("call", None) => {
                    outcomes.push(Outcome { rank, call: seen, after: Seen::Other("no barrier line".into()) })
                }
                ("after", Some(o)) => o.after = seen,
                _ => return Err(bad()),
            }
        }
        Ok(all)
    }
}

/// Runs `scenario` on this rank: the odd call on a new communicator over
/// the world's ranks (with or without arena), then a barrier on it.
pub fn run(scenario: &Scenario, world: &Communicator) -> Outcome {
    let comm = if scenario.arena { world.dup().expect("dup") } else { without_arena(world) };
    let call = match call(scenario, &comm) {
        Ok(seen) => seen,
        Err(e) => Seen::of_error(&e),
    };
    let after = match comm.barrier() {
        Ok(()) => Seen::Right,
        Err(e) => Seen::of_error(&e),
    };
    Outcome { rank: world.rank(), call, after }
}

/// A duplicate of `world` without an arena: communicators are created
/// until the host's arenas are all taken.
pub fn without_arena(world: &Communicator) -> Communicator {
    loop {
        let comm = world.dup().expect("dup");
        if !comm.has_shared_arena() {
            return comm;
        }
        world.split(Some(world.rank() as u32), 0).expect("split");
    }
}

/// Whether the ranks' outcomes of `scenario` on `ranks` ranks are what
/// the runtime promises; `Err` says what is not.
pub fn judge(s: &Scenario, ranks: usize, outcomes: &[Outcome]) -> Result<(), String> {
    let all: Vec<usize> = outcomes.iter().map(|o| o.rank).collect();
    if (0..ranks).any(|r| !all.contains(&r)) {
        return Err(format!("{s:?}: ranks {all:?} of {ranks} reported"));
    }
    for o in outcomes {
        match &o.call {
            Seen::Right => {}
            Seen::Mismatch(report) => {
                check_report(s, ranks, report).map_err(|e| format!("{s:?}: rank {}: {e}", o.rank))?
            }
            Seen::Wrong(why) => return Err(format!("{s:?}: rank {} returned Ok with wrong data: {why}", o.rank)),
            Seen::Other(why) => return Err(format!("{s:?}: rank {} failed with another error: {why}", o.rank)),
        }
        match &o.after {
            Seen::Mismatch(report) => {
                check_report(s, ranks, report).map_err(|e| format!("{s:?}: rank {} after: {e}", o.rank))?
            }
            other => return Err(format!("{s:?}: rank {}: the barrier after the odd call gave {other:?}", o.rank)),
        }
    }
    if outcomes.iter().all(|o| o.call == Seen::Right) {
        return Err(format!("{s:?}: no rank found the mismatch"));
    }
    Ok(())
}

/// A report names the odd rank (as a call or as its finder), and each
/// call it names is the scenario's collective with the size and root that
/// rank passed, or the barrier that follows it (a rank that went on to the
/// barrier meets the odd call there).
fn check_report(s: &Scenario, ranks: usize, report: &Report) -> Result<(), String> {
    if report.found_by >= ranks {
        return Err(format!("found by rank {} of {ranks}", report.found_by));
    }
    let odd = s.odd_rank;
    if report.found_by != odd && !report.calls.iter().any(|c| c.rank == odd) {
        return Err(format!("the report {report:?} does not name the odd rank {odd}"));
    }
    for c in &report.calls {
        let op = c.op.as_deref().unwrap_or(&report.op);
        let (want_bytes, want_root) = if s.coll.is_named(op) {
            (s.call_bytes(s.count_of(c.rank), ranks), s.coll.rooted().then_some(s.root % ranks))
        } else if op == "barrier" {
            (Some(0), None)
        } else {
            return Err(format!("the report {report:?} names a {op} for rank {}", c.rank));
        };
        if c.bytes.is_some() && c.bytes != want_bytes {
            return Err(format!(
                "rank {} called {op} with {want_bytes:?} bytes, the report says {:?}",
                c.rank, c.bytes
            ));
        }
        if c.root.is_some() && c.root != want_root {
            return Err(format!("rank {} called {op} with root {want_root:?}, the report says {:?}", c.rank, c.root));
        }
    }
    Ok(())
}

impl Coll {
    /// The collective's name, and the name of its family of tags (which a
    /// report gives for a call known from one of its messages).
    fn names(self) -> (&'static str, &'static str) {
        match self {
            Coll::Bcast => ("bcast", "bcast"),
            Coll::Reduce => ("reduce", "reduce"),
            Coll::Allreduce => ("allreduce", "allreduce"),
            Coll::Gather => ("gather", "gather"),
            Coll::Gatherv => ("gatherv", "gather"),
            Coll::Scatter => ("scatter", "scatter"),
            Coll::Scatterv => ("scatterv", "scatter"),
            Coll::Allgather => ("allgather", "allgather"),
            Coll::Allgatherv => ("allgatherv", "allgather"),
            Coll::Alltoall => ("alltoall", "alltoall"),
            Coll::Alltoallv => ("alltoallv", "alltoall"),
            Coll::Scan => ("scan", "scan"),
            Coll::Exscan => ("exscan", "scan"),
            Coll::ReduceScatter => ("reduce_scatter", "reduce_scatter"),
            Coll::ReduceScatterBlock => ("reduce_scatter_block", "reduce_scatter"),
        }
    }

    fn is_named(self, op: &str) -> bool {
        let (name, family) = self.names();
        op == name || op == family
    }

    fn rooted(self) -> bool {
        matches!(self, Coll::Bcast | Coll::Reduce | Coll::Gather | Coll::Gatherv | Coll::Scatter | Coll::Scatterv)
    }
}

/// Element `i` of block `block` of rank `rank`.
fn value(seed: u64, rank: usize, block: usize, i: usize) -> u64 {
    let mut z = seed ^ (rank as u64) << 48 ^ (block as u64) << 32 ^ i as u64;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Affine maps x -> m x + k (mod 2^32) packed as (m << 32 | k), composed
/// left to right: associative, not commutative, every operand matters.
fn compose(acc: &mut u64, later: &u64) {
    let (m1, k1) = ((*acc >> 32) as u32, *acc as u32);
    let (m2, k2) = ((*later >> 32) as u32, *later as u32);
    *acc = (m1.wrapping_mul(m2) as u64) << 32 | m2.wrapping_mul(k1).wrapping_add(k2) as u64;
}

fn call(s: &Scenario, comm: &Communicator) -> grappe::Result<Seen> {
    if s.commutative { call_with(s, comm, BitXor) } else { call_with(s, comm, UserOp::non_commutative(compose)) }
}

/// Compares a result with this rank's right data.
fn verdict(got: &[u64], want: &[u64]) -> Seen {
    if got.len() != want.len() {
        return Seen::Wrong(format!("{} elements where {} were expected", got.len(), want.len()));
    }
    match got.iter().zip(want).position(|(g, w)| g != w) {
        None => Seen::Right,
        Some(i) => Seen::Wrong(format!("element {i} of {} differs", got.len())),
    }
}

fn fold<O: Operation<u64>>(op: &O, mut parts: impl Iterator<Item = Vec<u64>>) -> Vec<u64> {
    let mut acc = parts.next().expect("one part at least");
    for later in parts {
        op.combine(&mut acc, &later);
    }
    acc
}

/// This rank's call of the scenario's collective and its verdict.
fn call_with<O: Operation<u64>>(s: &Scenario, comm: &Communicator, op: O) -> grappe::Result<Seen> {
    let (n, me) = (comm.size(), comm.rank());
    let (c, root) = (s.count_of(me), s.root % n);
    let block =
        |rank: usize, b: usize, len: usize| -> Vec<u64> { (0..len).map(|i| value(s.seed, rank, b, i)).collect() };
    let blocks = |rank: usize, len: usize| -> Vec<u64> { (0..n).flat_map(|b| block(rank, b, len)).collect() };
    let every = |len: usize| -> Vec<u64> { (0..n).flat_map(|r| block(r, 0, len)).collect() };
    let counts = vec![c; n];
    let mine = block(me, 0, c);
    Ok(match s.coll {
        Coll::Bcast => {
            let mut buf = if me == root { mine } else { vec![0; c] };
            comm.bcast(&mut buf[..], root)?;
            verdict(&buf, &block(root, 0, c))
        }
        Coll::Reduce => {
            let mut recv = vec![0; if me == root { c } else { 0 }];
            comm.reduce(&mine[..], &mut recv[..], root, &op)?;
            if me == root { verdict(&recv, &fold(&op, (0..n).map(|r| block(r, 0, c)))) } else { Seen::Right }
        }
        Coll::Allreduce => {
            let mut recv = vec![0; c];
            comm.allreduce(&mine[..], &mut recv[..], &op)?;
            verdict(&recv, &fold(&op, (0..n).map(|r| block(r, 0, c))))
        }
        Coll::Gather | Coll::Gatherv => {
            let mut recv = vec![0; if me == root { n * c } else { 0 }];
            match s.coll {
                Coll::Gather => comm.gather(&mine[..], &mut recv[..], root)?,
                _ => comm.gatherv(&mine[..], &mut recv[..], if me == root { &counts } else { &[] }, root)?,
            }
            if me == root { verdict(&recv, &every(c)) } else { Seen::Right }
        }
        Coll::Scatter | Coll::Scatterv => {
            let send = if me == root { blocks(root, c) } else { Vec::new() };
            let mut recv = vec![0; c];
            match s.coll {
                Coll::Scatter => comm.scatter(&send[..], &mut recv[..], root)?,
                _ => comm.scatterv(&send[..], if me == root { &counts } else { &[] }, &mut recv[..], root)?,
            }
            verdict(&recv, &block(root, me, c))
        }
        Coll::Allgather | Coll::Allgatherv => {
            let mut recv = vec![0; n * c];
            match s.coll {
                Coll::Allgather => comm.allgather(&mine[..], &mut recv[..])?,
                _ => comm.allgatherv(&mine[..], &mut recv[..], &counts)?,
            }
            verdict(&recv, &every(c))
        }
        Coll::Alltoall | Coll::Alltoallv => {
            let send = blocks(me, c);
            let mut recv = vec![0; n * c];
            match s.coll {
                Coll::Alltoall => comm.alltoall(&send[..], &mut recv[..])?,
                _ => comm.alltoallv(&send[..], &counts, &mut recv[..], &counts)?,
            }
            verdict(&recv, &(0..n).flat_map(|src| block(src, me, c)).collect::<Vec<_>>())
        }
        Coll::Scan => {
            let mut recv = vec![0; c];
            comm.scan(&mine[..], &mut recv[..], &op)?;
            verdict(&recv, &fold(&op, (0..=me).map(|r| block(r, 0, c))))
        }
        Coll::Exscan => {
            let untouched = vec![7; c];
            let mut recv = untouched.clone();
            comm.exscan(&mine[..], &mut recv[..], &op)?;
            let want = if me == 0 { untouched } else { fold(&op, (0..me).map(|r| block(r, 0, c))) };
            verdict(&recv, &want)
        }
        Coll::ReduceScatter | Coll::ReduceScatterBlock => {
            let send = block(me, 0, n * c);
            let mut recv = vec![0; c];
            match s.coll {
                Coll::ReduceScatter => comm.reduce_scatter(&send[..], &mut recv[..], &counts, &op)?,
                _ => comm.reduce_scatter_block(&send[..], &mut recv[..], &op)?,
            }
            let total = fold(&op, (0..n).map(|r| block(r, 0, n * c)));
            verdict(&recv, &total[me * c..(me + 1) * c])
        }
    })
}

/// Element counts of every size class: empty, within the arena, eager
/// messages, past the thresholds of the large-message algorithms (and of
/// the eager limit).
pub fn count_in_class(class: usize, pick: u64) -> usize {
    let (low, high) = [(0, 0), (1, 4), (5, 40), (41, 400), (1537, 2100)][class % 5];
    low + (pick % (high - low + 1) as u64) as usize
}

/// A count other than `count`: one more, one less, none, or one of
/// another size class.
pub fn odd_count(count: usize, how: usize, pick: u64) -> usize {
    match how % 4 {
        0 => count + 1,
        1 if count > 0 => count - 1,
        2 if count > 0 => 0,
        _ => {
            let other = count_in_class((how / 4) % 5, pick);
            if other == count { count + 2 } else { other }
        }
    }
}

/// `cases` scenarios for `ranks` ranks drawn from `seed`: the arena ones
/// first (a job's host has a limited number of arenas, and the others
/// take them all).
pub fn sweep(seed: u64, ranks: usize, cases: usize) -> Vec<Scenario> {
    let mut all: Vec<Scenario> = (0..cases as u64)
        .map(|k| {
            let h = |salt: u64| value(seed, salt as usize, 7, k as usize);
            let count = count_in_class(h(1) as usize, h(2));
            Scenario {
                coll: ALL[(k as usize) % ALL.len()],
                count,
                odd_rank: (h(3) % ranks as u64) as usize,
                odd_count: odd_count(count, h(4) as usize, h(5)),
                root: (h(6) % ranks as u64) as usize,
                arena: h(7) % 2 == 0,
                commutative: h(8) % 3 != 0,
                seed: h(9),
            }
        })
        .collect();
    all.sort_by_key(|s| !s.arena);
    all
}
