//! The streaming state of a profile: what one pass keeps.

use grappe_trace::{Body, Event, EventKind, Site};
use rustc_hash::FxHashMap;

use super::tables::{CallRow, CallStats, MatrixCell, Profile, RankRow, RegionRow, SiteRow, SizeBin};
use crate::calls::CallType;
use crate::collectives::{Entry, Instances};
use crate::failed::{FailedCalls, WHY};
use crate::matching::Message;
use crate::stream::{CausalStream, LinkedRef, merge_date};

/// Regions open at once on a rank, at most (deeper ones are not tracked).
const MAX_DEPTH: usize = 256;
/// Distinct regions tracked; further ones are not named (their calls
/// count as outside any region).
const MAX_REGIONS: usize = 100_000;
/// Events between two expiries of collective instances.
const EXPIRE_EVERY: u64 = 1024;

/// A profile being computed: feed it the causal stream's events in order
/// with [`Profiler::observe`], then [`Profiler::finish`]. Memory grows
/// with the ranks, the rank pairs that exchange, the distinct regions and
/// the collectives in flight, not with the events.
#[derive(Debug)]
pub struct Profiler {
    world_size: u32,
    events: u64,
    calls: FxHashMap<CallType, CallStats>,
    sites: FxHashMap<(CallType, Option<Site>, Option<u32>), CallStats>,
    regions: Regions,
    p2p_sizes: Histogram,
    collective_sizes: Histogram,
    matrix: FxHashMap<(u32, u32), (u64, u64)>,
    ranks: FxHashMap<u32, RankState>,
    collectives: Instances,
    unmatched_leaves: u64,
    too_deep: u64,
    /// Ranks that took turns on one processor.
    turns: Vec<Vec<u32>>,
    /// Calls that failed (a peer died, the job was stopped), for a note.
    failed: FailedCalls,
}

impl Profiler {
    /// A profiler for a job of `world_size` ranks, all of them traced.
    pub fn new(world_size: u32) -> Self {
        Profiler::with_instances(world_size, Instances::new(world_size.max(1)))
    }

    /// A profiler for a stream: a collective on the world involves the
    /// ranks that have a trace.
    pub fn for_stream(stream: &CausalStream, world_size: u32) -> Self {
        let profiler = Profiler::with_instances(world_size, Instances::for_stream(stream, world_size));
        Profiler { turns: stream.turn_taking().to_vec(), ..profiler }
    }

    fn with_instances(world_size: u32, collectives: Instances) -> Self {
        Profiler {
            world_size,
            events: 0,
            calls: FxHashMap::default(),
            sites: FxHashMap::default(),
            regions: Regions::default(),
            p2p_sizes: Histogram::default(),
            collective_sizes: Histogram::default(),
            matrix: FxHashMap::default(),
            ranks: FxHashMap::default(),
            collectives,
            unmatched_leaves: 0,
            too_deep: 0,
            turns: Vec::new(),
            failed: FailedCalls::new(FAILED_NAMED),
        }
    }

    /// Takes the next event of the causal stream.
    pub fn observe(&mut self, linked: LinkedRef<'_>) {
        let event = linked.event;
        self.events += 1;
        self.failed.observe(event);
        let state = self.ranks.entry(event.rank).or_default();
        let ended_before = state.last;
        let (start, end) = state.dates(event);
        // A rank's events come in its own order, so the event after a send
        // tells whether that send began a sendrecv: its receive is marked
        // and has the same dates. mpiP counts a sendrecv as one call.
        if let Some(held) = state.held_send.take() {
            if event.ends_sendrecv_of(&held.event) {
                self.sendrecv(held, event, linked.message, start, end);
                return self.expire_collectives(event);
            }
            self.call(CallType::Call(EventKind::Send), &held.event, &held.message, held.start, held.end);
        }
        let state = self.ranks.entry(event.rank).or_default();
        if matches!(event.body, Body::Send { .. }) {
            state.held_send = Some(HeldSend { event: *event, message: *linked.message, start, end });
            return self.expire_collectives(event);
        }
        match &event.body {
            Body::RegionEnter { name, location } => {
                let id = self.regions.intern(name, location);
                self.too_deep += u64::from(!state.enter(id, start, &mut self.regions));
            }
            Body::RegionLeave { name } => {
                self.unmatched_leaves += u64::from(!state.leave(name, start, &mut self.regions))
            }
            Body::FlushEnd => state.flush_ns = state.flush_ns.saturating_add(end - start),
            // The rank's time is the application's, as mpiP's AppTime:
            // from the end of init to the start of finalize (which hold
            // the runtime's start-up, teardown and clock sampling).
            Body::Init => state.app_from = Some(end),
            Body::Finalize => state.app_until = Some(start.max(ended_before)),
            Body::CommCreate { .. } => self.collectives.observe_creation(event.rank, &event.body),
            _ => {}
        }
        if let Some(call) = CallType::of(&event.body) {
            self.call(call, event, linked.message, start, end);
        }
        self.expire_collectives(event);
    }

    fn expire_collectives(&mut self, event: &Event) {
        if self.events % EXPIRE_EVERY == 0 {
            let ranks = &mut self.ranks;
            self.collectives.expire(merge_date(event), &mut |e, w| add_waiting(ranks, e, w));
        }
    }

    /// A sendrecv, from its two halves: one call, timed once, its bytes
    /// the sent ones (as mpiP counts them), the receive's wait for its
    /// message. If a half failed, the call waited all along, for a peer
    /// that died; its send counts only if it did not fail.
    fn sendrecv(&mut self, send: HeldSend, recv: &Event, message: &Message, start: u64, end: u64) {
        let Body::Send { dest, bytes, failed: send_failed, .. } = send.event.body else { return };
        let (start, end) = (start.min(send.start), end.max(send.end));
        let bytes = if send_failed { 0 } else { bytes };
        let state = self.count(CallType::Sendrecv, recv, start, end, bytes);
        match message {
            _ if send_failed || recv.body.failed() => state.late_sender(start, end, end),
            Message::Received { send, .. } => state.late_sender(start, end, send.start),
            _ => {}
        }
        if !send_failed {
            self.sent(recv.rank, dest, bytes);
        }
    }

    /// One runtime call, on its rank's (ordered) dates.
    fn call(&mut self, call: CallType, event: &Event, message: &Message, start: u64, end: u64) {
        let state = self.count(call, event, start, end, call_bytes(&event.body));
        if event.body.failed() {
            // Waiting all along, for a peer that died: no message sent, no
            // instance of a collective completed.
            return state.late_sender(start, end, end);
        }
        match &event.body {
            Body::Send { dest, bytes, .. } | Body::Isend { dest, bytes, .. } => self.sent(event.rank, *dest, *bytes),
            Body::Collective { comm, bytes, .. } => {
                let k = state.next_collective(*comm);
                let entry = Entry { rank: event.rank, start, end, from: state.reserve_waiting(start, end), tag: 0 };
                self.collective_sizes.add(*bytes);
                let ranks = &mut self.ranks;
                self.collectives.enter(*comm, k, entry, &mut |e, w| add_waiting(ranks, e, w));
            }
            _ => {
                if let Message::Received { send, .. } = message {
                    state.late_sender(start, end, send.start);
                }
            }
        }
    }

    /// Counts a call of `event`'s rank and site under `call`; the rank's state.
    fn count(&mut self, call: CallType, event: &Event, start: u64, end: u64, bytes: u64) -> &mut RankState {
        let state = self.ranks.entry(event.rank).or_default();
        let region = state.stack.last().map(|open| open.region);
        self.calls.entry(call).or_default().add(end - start, bytes);
        self.sites.entry((call, event.site, region)).or_default().add(end - start, bytes);
        state.add_call(start, end);
        state
    }

    /// A point-to-point message sent: the matrix and the size histogram.
    fn sent(&mut self, src: u32, dest: u32, bytes: u64) {
        let cell = self.matrix.entry((src, dest)).or_default();
        cell.0 += 1;
        cell.1 = cell.1.saturating_add(bytes);
        self.p2p_sizes.add(bytes);
    }

    /// The profile of the events observed.
    pub fn finish(mut self) -> Profile {
        self.failed.finish();
        let held: Vec<HeldSend> = self.ranks.values_mut().filter_map(|s| s.held_send.take()).collect();
        for send in held {
            self.call(CallType::Call(EventKind::Send), &send.event, &send.message, send.start, send.end);
        }
        let ranks = &mut self.ranks;
        self.collectives.drain(&mut |e, w| add_waiting(ranks, e, w));
        let mut unclosed = 0;
        for state in self.ranks.values_mut() {
            unclosed += state.stack.len() as u64;
            state.close_all(&mut self.regions);
        }
        let notes = self.notes(unclosed);
        let mut rank_rows: Vec<RankRow> = self.ranks.iter().map(|(&rank, s)| s.row(rank)).collect();
        rank_rows.sort_by_key(|r| r.rank);
        let start_ns = self.ranks.values().filter_map(RankState::app_start).min().unwrap_or(0);
        let end_ns = self.ranks.values().map(RankState::app_end).max().unwrap_or(0);
        let mut calls: Vec<CallRow> = self.calls.iter().map(|(&call, &stats)| CallRow { call, stats }).collect();
        calls.sort_by(|a, b| b.stats.total_ns.cmp(&a.stats.total_ns).then(a.call.cmp(&b.call)));
        let mut sites: Vec<SiteRow> =
            self.sites.iter().map(|(&(call, site, region), &stats)| self.site(call, site, region, stats)).collect();
        sites.sort_by(|a, b| {
            b.stats.total_ns.cmp(&a.stats.total_ns).then(a.call.cmp(&b.call)).then_with(|| a.site.cmp(&b.site))
        });
        let mut matrix: Vec<MatrixCell> = self
            .matrix
            .iter()
            .map(|(&(src, dst), &(messages, bytes))| MatrixCell { src, dst, messages, bytes })
            .collect();
        matrix.sort_by_key(|c| (c.src, c.dst));
        let region_count = self.regions.rows.len();
        let mut regions = std::mem::take(&mut self.regions.rows);
        regions.sort_by(|a, b| b.inclusive_ns.cmp(&a.inclusive_ns).then(b.count.cmp(&a.count)));
        regions.truncate(Profile::REGIONS_KEPT);
        Profile {
            world_size: self.world_size,
            events: self.events,
            start_ns,
            span_ns: end_ns.saturating_sub(start_ns),
            aggregate_ns: rank_rows.iter().fold(0, |a, r| a.saturating_add(r.total_ns)),
            calls,
            sites,
            p2p_sizes: self.p2p_sizes.bins(),
            collective_sizes: self.collective_sizes.bins(),
            ranks: rank_rows,
            matrix,
            regions,
            region_count,
            notes,
        }
    }

    fn site(&self, call: CallType, site: Option<Site>, region: Option<u32>, stats: CallStats) -> SiteRow {
        let row = region.and_then(|r| self.regions.rows.get(r as usize));
        SiteRow {
            call,
            site: site.map(|s| s.text().to_owned()),
            region: row.map(|r| r.name.clone()),
            location: row.map(|r| r.location.clone()),
            stats,
        }
    }

    fn notes(&self, unclosed: u64) -> Vec<String> {
        let mut notes = Vec::new();
        if self.collectives.incomplete > 0 {
            notes.push(format!(
                "{} collective instances lacked a member (a rank's trace is cut or absent): their waiting \
                 counts the entries present",
                self.collectives.incomplete
            ));
        }
        if unclosed > 0 {
            notes.push(format!("{unclosed} regions were still open at their rank's last event (closed there)"));
        }
        if self.unmatched_leaves > 0 {
            notes.push(format!("{} region leaves had no matching enter (ignored)", self.unmatched_leaves));
        }
        if self.too_deep > 0 {
            notes.push(format!("{} regions nested deeper than {MAX_DEPTH} were not tracked", self.too_deep));
        }
        if !self.turns.is_empty() {
            notes.push(turn_taking_note(&self.turns));
        }
        if self.failed.count() > 0 {
            notes.push(failed_note(&self.failed));
        }
        let flush = self.ranks.values().fold(0u64, |a, s| a.saturating_add(s.flush_ns));
        if flush > 0 {
            notes.push(format!("trace-buffer flushes took {:.3} ms in all (counted as compute)", flush as f64 / 1e6));
        }
        notes
    }
}

/// Failed calls named in the note, at most.
const FAILED_NAMED: usize = 8;

/// `2 calls failed (a peer died or the job was stopped), counted as
/// waiting: rank 0: recv from rank 2 (a.rs:3:9) for 1.002 s; rank 1: ...`.
fn failed_note(failed: &FailedCalls) -> String {
    let named: Vec<String> = failed
        .examples()
        .iter()
        .map(|call| format!("{} for {:.3} ms", call.what(), call.duration_ns() as f64 / 1e6))
        .collect();
    let more = failed.count() - named.len() as u64;
    let more = if more > 0 { format!("; and {more} more") } else { String::new() };
    format!("{} calls failed ({WHY}), their time counted as waiting: {}{more}", failed.count(), named.join("; "))
}

/// What turn-taking means for the profile's times.
fn turn_taking_note(turns: &[Vec<u32>]) -> String {
    format!(
        "{}: a call of one of them lasts while the others run, so its time and waiting include theirs",
        crate::set::turn_taking_text(turns)
    )
}

fn add_waiting(ranks: &mut FxHashMap<u32, RankState>, entry: &Entry, waiting: u64) {
    if let Some(state) = ranks.get_mut(&entry.rank) {
        state.waiting_ns = state.waiting_ns.saturating_add(waiting);
    }
}

/// The bytes a call moves (see the module documentation): none for a
/// failed call.
fn call_bytes(body: &Body) -> u64 {
    match body {
        _ if body.failed() => 0,
        Body::Send { bytes, .. }
        | Body::Recv { bytes, .. }
        | Body::Isend { bytes, .. }
        | Body::Collective { bytes, .. } => *bytes,
        Body::Wait { completion, .. } | Body::Test { completion: Some(completion), .. } if completion.is_recv => {
            completion.bytes
        }
        _ => 0,
    }
}

/// A region activation.
#[derive(Debug, Clone, Copy)]
struct Open {
    region: u32,
    enter: u64,
}

/// One rank's accumulators. Its dates are made non-decreasing (a record
/// starting before the previous one is moved to it), which makes the
/// running union of the calls exact. Waiting is counted in pieces that
/// lie within a call and start past `wait_until`, which then moves past
/// them: disjoint pieces of the calls' union, so waiting ≤ calls ≤ total
/// whatever the input.
#[derive(Debug, Default)]
struct RankState {
    events: u64,
    first: Option<u64>,
    last: u64,
    last_start: u64,
    /// The end of its init and the start of its finalize, if seen.
    app_from: Option<u64>,
    app_until: Option<u64>,
    /// Union of the calls: counted up to `calls_until`.
    calls_until: u64,
    calls_ns: u64,
    /// Waiting: counted (or reserved for a collective) up to `wait_until`.
    wait_until: u64,
    waiting_ns: u64,
    flush_ns: u64,
    stack: Vec<Open>,
    collectives: FxHashMap<u32, u64>,
    /// A send held back until the rank's next event says whether it was
    /// the first half of a sendrecv.
    held_send: Option<HeldSend>,
}

/// A send and its ordered dates, not counted yet.
#[derive(Debug, Clone, Copy)]
struct HeldSend {
    event: Event,
    message: Message,
    start: u64,
    end: u64,
}

impl RankState {
    /// The event's dates, ordered; updates the rank's span.
    fn dates(&mut self, e: &Event) -> (u64, u64) {
        let start = e.start.max(self.last_start);
        let end = e.end.max(start);
        self.last_start = start;
        self.first.get_or_insert(start);
        self.last = self.last.max(end);
        self.events += 1;
        (start, end)
    }

    fn add_call(&mut self, start: u64, end: u64) {
        self.calls_ns += end.saturating_sub(start.max(self.calls_until));
        self.calls_until = self.calls_until.max(end);
    }

    /// A matched receive: waiting until its send started.
    fn late_sender(&mut self, start: u64, end: u64, send_start: u64) {
        let (from, until) = (start.max(self.wait_until), end.min(send_start));
        if until > from {
            self.waiting_ns += until - from;
            self.wait_until = until;
        }
    }

    /// A collective's waiting is known later: reserve its interval.
    fn reserve_waiting(&mut self, start: u64, end: u64) -> u64 {
        let from = start.max(self.wait_until);
        self.wait_until = self.wait_until.max(end);
        from
    }

    fn next_collective(&mut self, comm: u32) -> u64 {
        let k = self.collectives.entry(comm).or_default();
        *k += 1;
        *k - 1
    }

    fn enter(&mut self, region: u32, at: u64, regions: &mut Regions) -> bool {
        if self.stack.len() >= MAX_DEPTH {
            return false;
        }
        if let Some(row) = regions.rows.get_mut(region as usize) {
            row.count += 1;
        }
        self.stack.push(Open { region, enter: at });
        true
    }

    /// Leaves the innermost open region of that name, and any opened
    /// inside it and not left.
    fn leave(&mut self, name: &str, at: u64, regions: &mut Regions) -> bool {
        let named = |o: &Open| regions.rows.get(o.region as usize).is_some_and(|r| r.name == name);
        let Some(i) = self.stack.iter().rposition(named) else { return false };
        while self.stack.len() > i {
            self.close_top(at, regions);
        }
        true
    }

    fn close_all(&mut self, regions: &mut Regions) {
        let at = self.last;
        while !self.stack.is_empty() {
            if let Some(row) = self.stack.last().and_then(|o| regions.rows.get_mut(o.region as usize)) {
                row.unclosed += 1;
            }
            self.close_top(at, regions);
        }
    }

    fn close_top(&mut self, at: u64, regions: &mut Regions) {
        let Some(open) = self.stack.pop() else { return };
        let recursive = self.stack.iter().any(|o| o.region == open.region);
        if let (false, Some(row)) = (recursive, regions.rows.get_mut(open.region as usize)) {
            row.inclusive_ns = row.inclusive_ns.saturating_add(at.saturating_sub(open.enter));
        }
    }

    /// Where the rank's application time starts: the end of its init, or
    /// its first event.
    fn app_start(&self) -> Option<u64> {
        self.app_from.or(self.first)
    }

    /// Where it ends: the start of its finalize, or its last event's end.
    fn app_end(&self) -> u64 {
        self.app_until.unwrap_or(self.last)
    }

    fn row(&self, rank: u32) -> RankRow {
        let total_ns = self.app_end().saturating_sub(self.app_start().unwrap_or(self.last));
        let calls_ns = self.calls_ns.min(total_ns);
        let waiting_ns = self.waiting_ns.min(calls_ns);
        RankRow {
            rank,
            events: self.events,
            total_ns,
            calls_ns,
            waiting_ns,
            communication_ns: calls_ns - waiting_ns,
            compute_ns: total_ns - calls_ns,
            flush_ns: self.flush_ns,
        }
    }
}

/// The regions seen, numbered.
#[derive(Debug, Default)]
struct Regions {
    by_name: FxHashMap<String, Vec<(String, u32)>>,
    rows: Vec<RegionRow>,
}

impl Regions {
    fn intern(&mut self, name: &str, location: &str) -> u32 {
        let known = self.by_name.get(name).and_then(|v| v.iter().find(|(l, _)| l == location));
        if let Some((_, id)) = known {
            return *id;
        }
        if self.rows.len() >= MAX_REGIONS {
            return u32::MAX;
        }
        let id = self.rows.len() as u32;
        self.rows.push(RegionRow {
            name: name.to_owned(),
            location: location.to_owned(),
            count: 0,
            inclusive_ns: 0,
            unclosed: 0,
        });
        self.by_name.entry(name.to_owned()).or_default().push((location.to_owned(), id));
        id
    }
}

/// Counts and bytes by power-of-two size: bin `b` holds sizes with `b`
/// significant bits (bin 0: empty messages).
#[derive(Debug)]
struct Histogram([(u64, u64); 65]);

impl Default for Histogram {
    fn default() -> Self {
        Histogram([(0, 0); 65])
    }
}

impl Histogram {
    fn add(&mut self, bytes: u64) {
        let bin = &mut self.0[(u64::BITS - bytes.leading_zeros()) as usize];
        bin.0 += 1;
        bin.1 = bin.1.saturating_add(bytes);
    }

    fn bins(&self) -> Vec<SizeBin> {
        let bounds = |b: u32| match b {
            0 => (0, 0),
            64 => (1 << 63, u64::MAX),
            b => (1 << (b - 1), (1 << b) - 1),
        };
        (0u32..)
            .zip(self.0.iter())
            .filter(|(_, (count, _))| *count > 0)
            .map(|(b, &(count, bytes))| SizeBin { min: bounds(b).0, max: bounds(b).1, count, bytes })
            .collect()
    }
}
