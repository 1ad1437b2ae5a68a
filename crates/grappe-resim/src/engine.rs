//! The traversal (Maillet §3.13, dependency-driven): each rank's events
//! in its own order, a rank going on while what its next event depends on
//! is known — a receive waits until its send has been dated, a collective
//! until every member has entered, a rendezvous send until its receive
//! has been. Each event is dated in two steps: its entry (CorrEvt, which
//! publishes a send's date) and its exit (the model of its kind).
//!
//! CorrEvt: ta(e) = tba + (t(e) − tb) − acc, with each rank's base (tb,
//! tba) and accumulator acc of the α recorded since the base. After a
//! synchronising exit (a receive, a rendezvous send, a collective) the
//! base moves to it and acc restarts at the exit's own α, which is spent
//! after it. A flush's end records its duration as its α: the flush is
//! removed like any other recording cost.

use std::fmt::Write as _;

use grappe_trace::{Body, CollectiveKind, EventKind};
use rustc_hash::FxHashMap;

use crate::error::{ResimError, Result};
use crate::fit::{Fits, arrival_flag};
use crate::model::{self, Case, CostModel, EagerLimits, Receive};
use crate::program::{Link, Place, Program};
use crate::summary::Summary;

/// Options of a traversal.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Correction or prediction.
    pub model: CostModel,
    /// The protocol's eager limits (rendezvous beyond).
    pub eager: EagerLimits,
}

/// The dates the traversal gave every event, by rank and index.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Dates {
    /// (start, end) of each event, ns of global time.
    pub of: Vec<Vec<(i64, i64)>>,
}

/// What a traversal produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The new dates.
    pub dates: Dates,
    /// The counts and run times.
    pub summary: Summary,
    /// One line per wildcard receive whose traced order was kept although
    /// another message would have come first after correction.
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, Copy, Default)]
struct Flow {
    tb: i64,
    tba: i64,
    acc: i64,
    cursor: usize,
    /// The event at the cursor has its start dated.
    entered: bool,
    last_end: i64,
    /// The α of a sendrecv's send half, paid with its receive half.
    pair_alpha: i64,
}

#[derive(Debug, Clone, Copy, Default)]
struct MsgState {
    /// ta of the send's start, once entered.
    send_start: Option<i64>,
    /// A rendezvous send's exit, set by its receive.
    rendezvous_exit: Option<i64>,
}

/// Re-simulates `program` under `options`.
pub fn run(program: &Program, options: &Options) -> Result<Outcome> {
    Traversal::new(program, options).run()
}

struct Traversal<'p> {
    program: &'p Program,
    options: Options,
    fits: Fits,
    flows: Vec<Flow>,
    messages: Vec<MsgState>,
    /// Entries of each instance so far, and its exits once computed.
    entered: Vec<usize>,
    exits: Vec<Option<Vec<i64>>>,
    /// Last failed test per (rank, request): (t, ta).
    failed_tests: FxHashMap<(u32, u64), (i64, i64)>,
    dates: Dates,
    summary: Summary,
    warnings: Vec<String>,
    /// Each rank's incoming messages in the order received (wildcard check).
    incoming: Vec<Vec<usize>>,
    /// Wildcard receives to check once every send is dated: (rank,
    /// message, its corrected arrival).
    wildcards: Vec<(u32, usize, i64)>,
}

impl<'p> Traversal<'p> {
    fn new(program: &'p Program, options: &Options) -> Self {
        let flows = program
            .flows
            .iter()
            .map(|steps| {
                let first = steps.first().map_or(0, |s| s.event.start as i64);
                Flow { tb: first, tba: first, last_end: i64::MIN, ..Flow::default() }
            })
            .collect();
        let mut incoming = vec![Vec::new(); program.flows.len()];
        let mut by_place: Vec<(Place, usize)> =
            program.messages.iter().enumerate().filter_map(|(m, info)| Some((info.recv?, m))).collect();
        by_place.sort_unstable();
        for ((rank, _), m) in by_place {
            incoming[rank as usize].push(m);
        }
        let mut traversal = Traversal {
            program,
            options: *options,
            fits: Fits::default(),
            flows,
            messages: vec![MsgState::default(); program.messages.len()],
            entered: vec![0; program.instances.len()],
            exits: vec![None; program.instances.len()],
            failed_tests: FxHashMap::default(),
            dates: Dates { of: program.flows.iter().map(|f| vec![(0, 0); f.len()]).collect() },
            summary: Summary::new(options.model, Fits::default()),
            warnings: Vec::new(),
            incoming,
            wildcards: Vec::new(),
        };
        traversal.fits = Fits::of(program, |msg| traversal.is_rendezvous(msg));
        traversal.summary.fits = traversal.fits;
        traversal
    }

    fn run(mut self) -> Result<Outcome> {
        loop {
            let mut moved = false;
            let mut done = true;
            for rank in 0..self.flows.len() {
                while self.flows[rank].cursor < self.program.flows[rank].len() {
                    if !self.advance(rank as u32) {
                        break;
                    }
                    moved = true;
                }
                done &= self.flows[rank].cursor == self.program.flows[rank].len();
            }
            if done {
                break;
            }
            if !moved {
                return Err(ResimError::Stuck { waiting: self.describe_waiting() });
            }
        }
        self.finish();
        Ok(Outcome { dates: self.dates, summary: self.summary, warnings: self.warnings })
    }

    /// Moves `rank` one half-step (entry or exit); false if it must wait.
    fn advance(&mut self, rank: u32) -> bool {
        let r = rank as usize;
        let index = self.flows[r].cursor;
        if !self.flows[r].entered {
            self.enter(rank, index);
            self.flows[r].entered = true;
            return true;
        }
        let Some(end) = self.exit(rank, index) else { return false };
        self.dates.of[r][index].1 = end;
        let flow = &mut self.flows[r];
        flow.last_end = end;
        flow.cursor += 1;
        flow.entered = false;
        true
    }

    /// CorrEvt at the rank's current base.
    fn corr_evt(&self, rank: u32, t: i64) -> i64 {
        let f = &self.flows[rank as usize];
        (f.tba + (t - f.tb) - f.acc).max(f.last_end)
    }

    fn enter(&mut self, rank: u32, index: usize) {
        let step = &self.program.flows[rank as usize][index];
        let e = &step.event;
        let start = match e.body {
            // A sendrecv's halves share their start.
            Body::Recv { sendrecv: true, .. } if index > 0 => self.dates.of[rank as usize][index - 1].0,
            _ => self.corr_evt(rank, e.start as i64),
        };
        self.dates.of[rank as usize][index].0 = start;
        match step.link {
            Link::Send { msg } => self.messages[msg].send_start = Some(start),
            Link::Collective { instance, .. } => self.entered[instance] += 1,
            _ => {}
        }
    }

    /// The exit's date, or `None` while what it depends on is not dated.
    fn exit(&mut self, rank: u32, index: usize) -> Option<i64> {
        let step = self.program.flows[rank as usize][index];
        let e = step.event;
        let (t_start, t_end) = (e.start as i64, e.end as i64);
        let ta_start = self.dates.of[rank as usize][index].0;
        let alpha = e.alpha_ns as i64;
        match step.link {
            Link::Send { .. } if self.is_sendrecv_send(rank, index) => {
                // Its exit is the receive half's: dated there.
                self.flows[rank as usize].pair_alpha = alpha;
                Some(ta_start)
            }
            Link::Send { msg } if self.is_rendezvous(msg) => {
                let end = self.messages[msg].rendezvous_exit?;
                self.sync_exit(rank, t_end, end, alpha);
                Some(end)
            }
            Link::Recv { msg } => {
                let send_start = self.messages[msg].send_start?;
                let end = self.receive(rank, index, msg, send_start);
                self.close_pair(rank, index, end);
                self.sync_exit(rank, t_end, end, alpha);
                Some(end)
            }
            Link::Collective { instance, part } => {
                if self.entered[instance] < self.program.instances[instance].parts.len() {
                    return None;
                }
                let end = self.collective_exit(instance, part);
                self.sync_exit(rank, t_end, end, alpha);
                Some(end)
            }
            _ => {
                let end = match e.body.kind() {
                    // The flush is removed: its duration is its α.
                    EventKind::FlushEnd => ta_start,
                    _ => ta_start + (t_end - t_start),
                };
                if let Body::Test { request, completion: None, failed: false, .. } = e.body {
                    self.failed_tests.insert((rank, request), (t_start, ta_start));
                }
                self.close_pair(rank, index, end);
                let flow = &mut self.flows[rank as usize];
                flow.acc += alpha + std::mem::take(&mut flow.pair_alpha);
                Some(end)
            }
        }
    }

    /// A sendrecv's receive half gives its end to the send half.
    fn close_pair(&mut self, rank: u32, index: usize, end: i64) {
        let steps = &self.program.flows[rank as usize];
        if index > 0 && steps[index].event.ends_sendrecv_of(&steps[index - 1].event) {
            self.dates.of[rank as usize][index - 1].1 = end;
        }
    }

    /// The base moves to a synchronising exit; acc restarts at its α.
    fn sync_exit(&mut self, rank: u32, t_end: i64, ta_end: i64, alpha: i64) {
        let flow = &mut self.flows[rank as usize];
        flow.tb = t_end;
        flow.tba = ta_end;
        flow.acc = alpha + std::mem::take(&mut flow.pair_alpha);
    }

    fn is_sendrecv_send(&self, rank: u32, index: usize) -> bool {
        let steps = &self.program.flows[rank as usize];
        steps.get(index + 1).is_some_and(|next| next.event.ends_sendrecv_of(&steps[index].event))
    }

    /// A blocking send of more than the eager limit, taken by a blocking
    /// receive: the two calls end together (the rendezvous model). Other
    /// sends are asynchronous: they end when their data left.
    fn is_rendezvous(&self, msg: usize) -> bool {
        let info = &self.program.messages[msg];
        let Some(recv) = info.recv else { return false };
        let (send, recv_step) = (self.program.step(info.send), self.program.step(recv));
        let blocking_send =
            matches!(send.event.body, Body::Send { .. }) && !self.is_sendrecv_send(info.send.0, info.send.1);
        let blocking_recv = matches!(recv_step.event.body, Body::Recv { sendrecv: false, .. });
        let limit = if self.program.placement.same_process(info.send.0, recv.0) {
            self.options.eager.between_threads
        } else {
            self.options.eager.between_processes
        };
        // A synchronous send waits for its receive whatever its size.
        let sync = matches!(send.event.body, Body::Send { sync: true, .. });
        blocking_send && blocking_recv && (sync || info.bytes > limit)
    }

    fn same_host(&self, msg: usize) -> bool {
        let info = &self.program.messages[msg];
        info.recv.is_none_or(|recv| self.program.placement.same_host(info.send.0, recv.0))
    }

    /// The end of the receive of `msg` at (rank, index).
    fn receive(&mut self, rank: u32, index: usize, msg: usize, ta_send: i64) -> i64 {
        let info = self.program.messages[msg];
        let send = self.program.step(info.send).event;
        let e = self.program.flows[rank as usize][index].event;
        let ta_start = self.dates.of[rank as usize][index].0;
        let transit = model::transit_of(&self.options.model, &self.fits, self.same_host(msg), info.bytes);
        if self.is_rendezvous(msg) {
            let send_in = ((send.start as i64, ta_send), send.end as i64);
            let recv_in = ((e.start as i64, ta_start), e.end as i64);
            let transfer = match self.options.model {
                CostModel::Predict(_) => transit,
                CostModel::Correct(_) => None,
            };
            let (es, er) = model::rendezvous(send_in, recv_in, transfer);
            self.messages[msg].rendezvous_exit = Some(es);
            self.summary.count(Case::Rendezvous);
            self.check_causality(ta_send, er);
            return er;
        }
        let request = match e.body {
            Body::Wait { request, .. } | Body::Test { request, .. } => Some(request),
            _ => None,
        };
        let r = Receive {
            send: (send.start as i64, ta_send),
            start: (e.start as i64, ta_start),
            end: e.end as i64,
            arrived: arrival_flag(&e.body).unwrap_or(false),
            bytes: info.bytes,
            failed_test: request.and_then(|q| self.failed_tests.remove(&(rank, q))),
        };
        let decided = match (self.options.model, transit) {
            (CostModel::Correct(mode), Some(transit)) => {
                // What Sarukkai–Malony would have needed, for comparison.
                if r.start.0 >= r.send.0 {
                    self.summary.sarukkai_malony_model_uses += 1;
                }
                model::decide(mode, &r, transit, &self.fits.copy)
            }
            (CostModel::Predict(_), Some(transit)) => model::predict(&r, transit, &self.fits.copy),
            // A prediction keeps what was measured where no model is
            // given: MINSIM on the trace's own fits.
            (_, None) => {
                let transit = self.fits.transit.at(info.bytes);
                model::decide(model::Mode::MinSim, &r, transit, &self.fits.copy)
            }
        };
        self.summary.count(decided.case);
        self.summary.arrived_measured += u64::from(r.arrived);
        self.summary.arrived_after += u64::from(decided.available <= r.start.1);
        if info.wildcard {
            self.wildcards.push((rank, msg, decided.available));
        }
        self.check_causality(ta_send, decided.end);
        decided.end
    }

    fn check_causality(&mut self, ta_send: i64, ta_recv_end: i64) {
        if ta_recv_end < ta_send {
            self.summary.causality_violations_after += 1;
        }
    }

    /// The conservative approximation keeps the message a wildcard
    /// receive took in the trace; warns when another message for this
    /// rank, on the same communicator, from another source, taken later
    /// in the trace, would be available first after correction (checked
    /// once the traversal has dated every send).
    fn check_wildcard(&mut self, rank: u32, msg: usize, available: i64) {
        let body_of = |m: usize| self.program.step(self.program.messages[m].send).event.body;
        let (Body::Isend { comm, .. } | Body::Send { comm, .. }) = body_of(msg) else { return };
        let src = self.program.messages[msg].send.0;
        let incoming = &self.incoming[rank as usize];
        let at = incoming.iter().position(|&m| m == msg).unwrap_or(incoming.len());
        for &other in incoming.iter().skip(at + 1).take(64) {
            let info = self.program.messages[other];
            let same_comm =
                matches!(body_of(other), Body::Isend { comm: c, .. } | Body::Send { comm: c, .. } if c == comm);
            let sent = self.dates.of[info.send.0 as usize][info.send.1].0;
            let transit = model::transit_of(&self.options.model, &self.fits, self.same_host(other), info.bytes)
                .unwrap_or_else(|| self.fits.transit.at(info.bytes));
            if same_comm && info.send.0 != src && sent + transit < available {
                self.summary.wildcard_orders_imposed += 1;
                self.warnings.push(format!(
                    "rank {rank}: a receive from any source keeps the message of rank {src} it took in the trace, \
                     though after correction the message of rank {} (sent at {} ns) would be there first",
                    info.send.0, sent
                ));
                return;
            }
        }
    }

    /// The exit of a member (`part`) of a collective instance; every
    /// member's is computed once, when the first asks.
    fn collective_exit(&mut self, instance: usize, part: usize) -> i64 {
        if let Some(exits) = &self.exits[instance] {
            return exits[part];
        }
        let parts: Vec<((i64, i64), i64)> = self.program.instances[instance]
            .parts
            .iter()
            .map(|&(rank, index)| {
                let e = self.program.flows[rank as usize][index].event;
                ((e.start as i64, self.dates.of[rank as usize][index].0), e.end as i64)
            })
            .collect();
        let extra = self.collective_network_cost(instance);
        let exits = model::barrier(&parts, extra);
        self.summary.count(Case::Collective);
        let exit = exits[part];
        self.exits[instance] = Some(exits);
        exit
    }

    /// A prediction adds, to a collective spanning hosts, the network's
    /// time for this rank's part (none otherwise): for an all-to-all, whose
    /// recorded bytes are the whole send buffer, P − 1 pairwise rounds of
    /// one block each; for an allgather, whose bytes are one rank's
    /// contribution, ⌈log₂ P⌉ latencies and the other P − 1 contributions
    /// on the wire; for the others (trees, recursive doubling), ⌈log₂ P⌉
    /// rounds of the message.
    fn collective_network_cost(&self, instance: usize) -> i64 {
        let CostModel::Predict(net) = self.options.model else { return 0 };
        let parts = &self.program.instances[instance].parts;
        let first = parts[0].0;
        if parts.iter().all(|&(r, _)| self.program.placement.same_host(first, r)) {
            return 0;
        }
        let (op, bytes) = match self.program.step(parts[0]).event.body {
            Body::Collective { op, bytes, .. } => (Some(op), bytes),
            _ => (None, 0),
        };
        let p = parts.len() as u64;
        let rounds = (p as f64).log2().ceil() as i64;
        let link = net.between_hosts;
        match op {
            Some(CollectiveKind::Alltoall | CollectiveKind::Alltoallv) => (p as i64 - 1) * link.at(bytes / p),
            Some(CollectiveKind::Allgather | CollectiveKind::Allgatherv) => {
                rounds * link.at(0) + (link.ns_per_byte * ((p - 1) * bytes) as f64).round() as i64
            }
            _ => rounds * link.at(bytes),
        }
    }

    fn describe_waiting(&self) -> String {
        let mut text = String::new();
        for (rank, flow) in self.flows.iter().enumerate() {
            let Some(step) = self.program.flows[rank].get(flow.cursor) else { continue };
            let _ = write!(text, "rank {rank} at event {} ({}); ", flow.cursor, step.event.body.kind().name());
        }
        text
    }

    fn finish(&mut self) {
        for (rank, msg, available) in std::mem::take(&mut self.wildcards) {
            self.check_wildcard(rank, msg, available);
        }
        self.summary.events = self.program.events() as u64;
        let mut corrected = 0;
        for (rank, steps) in self.program.flows.iter().enumerate() {
            for (index, step) in steps.iter().enumerate() {
                let (s, e) = self.dates.of[rank][index];
                if (s, e) != (step.event.start as i64, step.event.end as i64) {
                    corrected += 1;
                }
            }
        }
        self.summary.events_corrected = corrected;
        self.summary.traced_run_time_s = crate::run_time::measured(self.program);
        self.summary.new_run_time_s = crate::run_time::of(self.program, &self.dates);
        self.summary.ranks = crate::run_time::by_rank(self.program, &self.dates);
    }
}
