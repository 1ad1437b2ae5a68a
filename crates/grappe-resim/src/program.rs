//! The program a trace shows: each rank's events in its own order, linked
//! to each other by the messages and the collective instances that tie
//! the ranks together. The re-simulation walks these links.

use grappe_analysis::{Comms, Matcher, Message, TraceSet};
use grappe_trace::{ANY, Body, Event};
use rustc_hash::FxHashMap;

use crate::error::{ResimError, Result};

/// What ties an event to events of other ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    /// A local event: only its own rank's past dates it.
    None,
    /// It sends message `msg`.
    Send {
        /// Index in [`Program::messages`].
        msg: usize,
    },
    /// It completes the receipt of message `msg` (a receive, or a wait or
    /// test that completed a non-blocking receive).
    Recv {
        /// Index in [`Program::messages`].
        msg: usize,
    },
    /// It is this rank's part in a collective instance.
    Collective {
        /// Index in [`Program::instances`].
        instance: usize,
        /// Index of this part in the instance's parts.
        part: usize,
    },
}

/// An event and its link.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    /// The event, on global time.
    pub event: Event,
    /// Its link to other ranks.
    pub link: Link,
}

/// An event's place: its rank and its index in the rank's events.
pub type Place = (u32, usize);

/// One message of the trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageInfo {
    /// Where it was sent.
    pub send: Place,
    /// Where its receipt completed, if it did in the trace.
    pub recv: Option<Place>,
    /// Its size.
    pub bytes: u64,
    /// The receive that took it named no source (an `irecv` from any
    /// source; the trace of a blocking receive does not say).
    pub wildcard: bool,
}

/// One collective instance: the k-th collective of every member on one
/// communicator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instance {
    /// The members' parts, in the order they were met: every member
    /// with a trace (the whole trace is read before the traversal, so an
    /// instance waits for no member whose trace lacks it).
    pub parts: Vec<Place>,
}

/// Where each rank ran: its host and its process.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Placement {
    /// Host of each rank, by rank (empty string: unknown).
    pub host: Vec<String>,
    /// Process (pid) of each rank, by rank.
    pub process: Vec<u32>,
}

impl Placement {
    /// Every rank of `ranks` a process of its own on one host.
    pub fn one_host(ranks: u32) -> Placement {
        Placement { host: vec![String::new(); ranks as usize], process: (0..ranks).collect() }
    }

    /// Whether ranks `a` and `b` ran on one host.
    pub fn same_host(&self, a: u32, b: u32) -> bool {
        self.host.get(a as usize) == self.host.get(b as usize)
    }

    /// Whether ranks `a` and `b` ran in one process (threads).
    pub fn same_process(&self, a: u32, b: u32) -> bool {
        self.same_host(a, b) && self.process.get(a as usize) == self.process.get(b as usize)
    }
}

/// The linked events of every rank.
#[derive(Debug, Clone, Default)]
pub struct Program {
    /// Each rank's steps, by rank, in its recorded order.
    pub flows: Vec<Vec<Step>>,
    /// Every message.
    pub messages: Vec<MessageInfo>,
    /// Every collective instance.
    pub instances: Vec<Instance>,
    /// Where the ranks ran.
    pub placement: Placement,
    /// What the stream it was read from saw (the inputs' endings, for the
    /// output's footer); `None` for a program built from events.
    pub read_from: Option<grappe_analysis::StreamSummary>,
}

impl Program {
    /// Reads `set` on global time `time` into a program.
    pub fn read(set: &TraceSet, time: &grappe_analysis::GlobalTime) -> Result<Program> {
        let mut stream = grappe_analysis::CausalStream::open(set, time)?;
        let mut events = Vec::new();
        while let Some(linked) = stream.next_event()? {
            events.push(*linked.event);
        }
        let ranks = set.world_size().max(events.iter().map(|e| e.rank + 1).max().unwrap_or(0));
        let mut placement = Placement::one_host(ranks);
        for process in set.processes() {
            for &rank in &process.ranks {
                if let Some(slot) = placement.host.get_mut(rank as usize) {
                    *slot = process.host.clone();
                    placement.process[rank as usize] = process.pid;
                }
            }
        }
        let mut program = Program::link(events, placement)?;
        program.read_from = Some(stream.summary());
        Ok(program)
    }

    /// Links `events`, given in causal order (every send before its
    /// receive, each rank's events in its order), as
    /// [`grappe_analysis::CausalStream`] gives them.
    pub fn link(events: Vec<Event>, placement: Placement) -> Result<Program> {
        let ranks = placement.host.len().max(events.iter().map(|e| e.rank as usize + 1).max().unwrap_or(0));
        let mut program = Program { flows: vec![Vec::new(); ranks], placement, ..Program::default() };
        let mut matcher = Matcher::new();
        let mut by_id: FxHashMap<u64, usize> = FxHashMap::default();
        let mut comms = Comms::default();
        let mut open: FxHashMap<(u32, u64), usize> = FxHashMap::default();
        let mut nth: FxHashMap<(u32, u32), u64> = FxHashMap::default();
        // Requests of irecvs from any source, by (rank, request).
        let mut wildcard_requests: FxHashMap<(u32, u64), ()> = FxHashMap::default();
        for event in events {
            let rank = event.rank;
            let index = program.flows[rank as usize].len();
            comms.observe(rank, &event.body);
            let link = match matcher.observe(&event) {
                Message::Sent { id, .. } => {
                    let msg = program.messages.len();
                    by_id.insert(id, msg);
                    let bytes = grappe_analysis::matching::send_of(&event).map_or(0, |(_, bytes, _)| bytes);
                    program.messages.push(MessageInfo { send: (rank, index), recv: None, bytes, wildcard: false });
                    Link::Send { msg }
                }
                Message::Received { send, .. } => {
                    let msg = *by_id.get(&send.id).ok_or(ResimError::Inconsistent {
                        rank,
                        index,
                        what: "a receive matched a send the trace never gave",
                    })?;
                    let info = &mut program.messages[msg];
                    info.recv = Some((rank, index));
                    info.wildcard = completes_wildcard(&event, &wildcard_requests);
                    Link::Recv { msg }
                }
                _ => match event.body {
                    Body::Collective { comm, failed: false, .. } => {
                        let c = comms.resolve(rank, comm);
                        let k = nth.entry((rank, c)).or_insert(0);
                        let key = (c, *k);
                        *k += 1;
                        let instance = *open.entry(key).or_insert_with(|| {
                            program.instances.push(Instance { parts: Vec::new() });
                            program.instances.len() - 1
                        });
                        let parts = &mut program.instances[instance].parts;
                        parts.push((rank, index));
                        Link::Collective { instance, part: parts.len() - 1 }
                    }
                    Body::Irecv { src: ANY, request, .. } => {
                        wildcard_requests.insert((rank, request), ());
                        Link::None
                    }
                    _ => Link::None,
                },
            };
            program.flows[rank as usize].push(Step { event, link });
        }
        Ok(program)
    }

    /// Events of all ranks.
    pub fn events(&self) -> usize {
        self.flows.iter().map(Vec::len).sum()
    }

    /// The step at `place`.
    pub fn step(&self, (rank, index): Place) -> &Step {
        &self.flows[rank as usize][index]
    }
}

/// Whether `event` completes a receive posted from any source: a wait or
/// a test of an irecv from any source, or a blocking receive that asked
/// for any source.
fn completes_wildcard(event: &Event, wildcard_requests: &FxHashMap<(u32, u64), ()>) -> bool {
    match event.body {
        Body::Wait { request, .. } | Body::Test { request, .. } => {
            wildcard_requests.contains_key(&(event.rank, request))
        }
        Body::Recv { any_source, .. } => any_source,
        _ => false,
    }
}
