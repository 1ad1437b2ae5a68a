//! MPI 4's partitioned point-to-point communication (`MPI_Psend_init`,
//! `MPI_Precv_init`, `MPI_Pready*`, `MPI_Parrived`): persistent requests
//! whose buffer is `partitions` × `count` elements, started by
//! `MPI_Start`, completed by the wait and test calls.
//!
//! Each round is two messages on the communicator's partitioned context
//! (which only partitioned receives match): at `MPI_Start` the sender
//! sends a header, its partition count and bytes per partition, and once
//! every partition is marked ready the whole buffer goes as one message.
//! The receiver posts both receives at `MPI_Start`; a partition has
//! arrived (`MPI_Parrived`) once the data message is in the buffer, and
//! the round's completion checks the header against its own partitioning:
//! the sides may cut the message differently, but messages of different
//! sizes fail there, naming both, instead of leaving either side waiting.

use std::cell::RefCell;
use std::ffi::{c_int, c_long, c_void};
use std::rc::Rc;

use grappe_comm::{Request, Source};

use crate::abi::{self, class, kind};
use crate::errors::{MpiError, Result};
use crate::state::{self, Locked, Persistent, RequestEntry, RequestSlot};
use crate::types;

use super::p2p::{Posted, irecv, isend, not_a_request};
use super::{dest_rank, put, source_rank};

/// A partitioned request's arguments and the state of its round.
pub struct Partitioned {
    pub send: bool,
    /// The buffer, which MPI says stays valid until the request is freed.
    buf: *mut c_void,
    partitions: usize,
    /// Elements per partition.
    count: c_int,
    datatype: c_int,
    /// Destination or source: a rank of `comm`.
    peer: usize,
    tag: c_int,
    pub comm: c_int,
    /// Send: the partitions marked ready in this round.
    ready: Vec<bool>,
    /// Receive: the round's header receive, and where it lands.
    header: Option<(Request<'static>, Box<[u8]>)>,
}

/// A partitioned request, shared by its slot's persistent part and the round.
pub type Shared = Rc<RefCell<Partitioned>>;

/// The header's length: partition count and bytes per partition, as u64s.
const HEADER: usize = 16;

impl Partitioned {
    /// Bytes per partition, packed.
    fn partition_bytes(&self) -> Result<u64> {
        let datatype = types::committed(self.datatype)?;
        Ok(datatype.packed_len(self.count as usize) as u64)
    }

    /// The elements of the whole buffer.
    fn total(&self) -> i64 {
        self.count as i64 * self.partitions as i64
    }
}

/// Defines `MPI_Psend_init` or `MPI_Precv_init`.
macro_rules! init_fn {
    ($(#[$doc:meta])* $name:ident / $pname:ident, $send:expr) => {
        crate::mpi_fn! {
            $(#[$doc])*
            fn $name / $pname(
                buf: *mut c_void,
                partitions: c_int,
                count: c_long,
                datatype: c_int,
                peer: c_int,
                tag: c_int,
                comm: c_int,
                _info: c_int,
                request: *mut c_int,
            ) {
                let call = stringify!($name);
                let args = Args { send: $send, buf, partitions, count, datatype, peer, tag, comm };
                init(call, args, request).map_err(|e| e.on(comm))
            }
        }
    };
}

init_fn!(
    /// `MPI_Psend_init`.
    MPI_Psend_init / PMPI_Psend_init,
    true
);
init_fn!(
    /// `MPI_Precv_init` (a specific source and tag: MPI allows no wildcards here).
    MPI_Precv_init / PMPI_Precv_init,
    false
);

/// The arguments of `MPI_Psend_init` and `MPI_Precv_init`.
struct Args {
    send: bool,
    buf: *mut c_void,
    partitions: c_int,
    count: c_long,
    datatype: c_int,
    peer: c_int,
    tag: c_int,
    comm: c_int,
}

/// A partitioned request, inactive until started, checked now.
fn init(call: &str, args: Args, request: *mut c_int) -> Result<()> {
    if request.is_null() {
        return Err(MpiError::new(class::REQUEST, format!("{call}: the request argument is NULL")));
    }
    let mut state = state::lock(call)?;
    let entry = state.intra(args.comm)?;
    let partitions = usize::try_from(args.partitions)
        .map_err(|_| MpiError::new(class::ARG, format!("{call}: negative number of partitions {}", args.partitions)))?;
    let count = c_int::try_from(args.count)
        .ok()
        .filter(|&c| c >= 0 && (c as i64) * (partitions as i64) <= c_int::MAX as i64)
        .ok_or_else(|| {
            MpiError::new(
                class::COUNT,
                format!(
                    "{call}: {partitions} partitions of {} elements: negative or too many (at most 2^31-1 in all)",
                    args.count
                ),
            )
        })?;
    types::committed(args.datatype)?;
    let peer = match args.send {
        true => dest_rank(args.peer, &entry.comm)?,
        false => match source_rank(args.peer, &entry.comm)? {
            Some(Source::Rank(rank)) => Some(rank),
            Some(Source::Any) => {
                return Err(MpiError::new(class::RANK, format!("{call}: MPI_ANY_SOURCE is not allowed")));
            }
            None => None,
        },
    };
    let peer =
        peer.ok_or_else(|| MpiError::new(class::RANK, format!("{call}: MPI_PROC_NULL is not a partitioned peer")))?;
    if args.tag < 0 {
        return Err(MpiError::new(class::TAG, format!("{call}: tag {} (a specific tag is needed)", args.tag)));
    }
    let round = Partitioned {
        send: args.send,
        buf: args.buf,
        partitions,
        count,
        datatype: args.datatype,
        peer,
        tag: args.tag,
        comm: args.comm,
        ready: vec![false; partitions],
        header: None,
    };
    let persistent = Some(Persistent::Partitioned(Rc::new(RefCell::new(round))));
    let handle = state.add_request(RequestSlot { now: None, persistent });
    // SAFETY: the caller's output argument, checked non-NULL.
    unsafe { put(request, handle, "request") }
}

/// Starts a round of the partitioned request in `slot` (`MPI_Start`).
pub(super) fn start(state: &mut Locked, slot: usize, shared: &Shared) -> Result<()> {
    let mut round = shared.borrow_mut();
    let started = match round.send {
        true => start_send(state, &mut round)?,
        false => start_recv(state, &mut round)?,
    };
    state.requests.get_mut(slot).expect("checked by the caller").now = Some(started);
    Ok(())
}

/// Sends the header; the data waits for the partitions (none: it goes now).
fn start_send(state: &mut Locked, round: &mut Partitioned) -> Result<RequestEntry> {
    round.ready.fill(false);
    let mut header = Vec::with_capacity(HEADER);
    header.extend_from_slice(&(round.partitions as u64).to_ne_bytes());
    header.extend_from_slice(&round.partition_bytes()?.to_ne_bytes());
    let header = header.into_boxed_slice();
    // SAFETY: the header is on the heap, kept with its request (in
    // `state.freed`) until the send is over.
    let bytes: &'static [u8] = unsafe { &*(&*header as *const [u8]) };
    let scope = state.scope;
    let request = state.comm(round.comm)?.comm.isend_partitioned(scope, bytes, round.peer, round.tag)?;
    state.freed.push((request, Some(header), None));
    match round.partitions {
        0 => send_data(state, round),
        _ => Ok(RequestEntry::Unready),
    }
}

/// Sends the whole buffer, every partition being ready.
fn send_data(state: &mut Locked, round: &Partitioned) -> Result<RequestEntry> {
    let (buf, total, datatype, peer, tag, comm) =
        (round.buf, round.total(), round.datatype, round.peer as c_int, round.tag, round.comm);
    // SAFETY: MPI's rule: the buffer stays valid until the request is
    // freed, and untouched once its partitions are marked ready.
    unsafe { isend(state, "MPI_Pready", Posted::Partitioned, false, buf, total, datatype, peer, tag, comm) }
}

/// Posts the receives of the header and of the data.
fn start_recv(state: &mut Locked, round: &mut Partitioned) -> Result<RequestEntry> {
    let mut header = vec![0u8; HEADER].into_boxed_slice();
    // SAFETY: the header is on the heap, kept with its request in the
    // round until the round completes (or in `state.freed`).
    let bytes: &'static mut [u8] = unsafe { &mut *(&mut *header as *mut [u8]) };
    let scope = state.scope;
    let request = state.comm(round.comm)?.comm.irecv_partitioned(scope, bytes, round.peer, round.tag)?;
    round.header = Some((request, header));
    let (buf, total, datatype, peer, tag, comm) =
        (round.buf, round.total(), round.datatype, round.peer as c_int, round.tag, round.comm);
    // SAFETY: MPI's rule: the buffer stays valid until the request is
    // freed, and untouched while it is active.
    unsafe { irecv(state, "MPI_Start", Posted::Partitioned, buf, total, datatype, peer, tag, comm) }
}

/// The end of a round, when the wait or test calls complete it: a
/// receive checks the sender's header against its own partitioning
/// before `status`, the data's outcome, counts.
pub(super) fn finish_round(shared: &Shared, status: Result<abi::Status>) -> Result<abi::Status> {
    let mut round = shared.borrow_mut();
    let Some((request, header)) = round.header.take() else {
        return status;
    };
    let comm = round.comm;
    request.wait().map_err(|e| MpiError::from(e).on(comm))?;
    let word = |i: usize| u64::from_ne_bytes(header[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
    let (sent_partitions, sent_bytes) = (word(0), word(1));
    let bytes = round.partition_bytes().map_err(|e| e.on(comm))?;
    // MPI 4 lets the two sides cut the message into different numbers of
    // partitions: only the whole message's size must agree (as MPICH checks).
    if sent_partitions * sent_bytes != round.partitions as u64 * bytes {
        return Err(MpiError::new(
            class::OTHER,
            format!(
                "the partitioned send from rank {} (tag {}) has {sent_partitions} partitions of {sent_bytes} bytes, \
                 this receive {} partitions of {bytes} bytes",
                round.peer, round.tag, round.partitions
            ),
        )
        .on(comm));
    }
    status
}

/// What `MPI_Request_free` leaves to complete on its own: the header
/// receive of a round under way.
pub(super) fn release(state: &mut Locked, shared: &Shared) {
    if let Some((request, header)) = shared.borrow_mut().header.take() {
        state.freed.push((request, Some(header), None));
    }
}

/// The error of a wait that nothing can end: a partitioned send whose
/// partitions are not all marked ready, below `MPI_THREAD_MULTIPLE` (no
/// other thread can mark them).
pub(super) fn unready(state: &Locked, slot: usize) -> MpiError {
    let Some(Persistent::Partitioned(shared)) = state.requests.get(slot).and_then(|r| r.persistent.as_ref()) else {
        return MpiError::new(class::REQUEST, "a partitioned send is not ready");
    };
    let round = shared.borrow();
    let missing: Vec<String> =
        round.ready.iter().enumerate().filter(|(_, ready)| !**ready).map(|(p, _)| p.to_string()).take(8).collect();
    MpiError::new(
        class::REQUEST,
        format!(
            "the partitioned send can never complete: partitions {} (of {}) are not marked ready (MPI_Pready)",
            missing.join(", "),
            round.partitions
        ),
    )
    .on(round.comm)
}

/// The partitioned request of `handle`, which must be a send (`send`) or a receive.
fn partitioned(state: &Locked, handle: c_int, send: bool) -> Result<(usize, Shared)> {
    let slot = abi::direct_index(kind::REQUEST, handle).ok_or_else(|| not_a_request(handle))?;
    let entry = state.requests.get(slot).ok_or_else(|| not_a_request(handle))?;
    match &entry.persistent {
        Some(Persistent::Partitioned(shared)) if shared.borrow().send == send => Ok((slot, shared.clone())),
        _ => {
            let what = if send { "partitioned send (MPI_Psend_init)" } else { "partitioned receive (MPI_Precv_init)" };
            Err(MpiError::new(class::REQUEST, format!("request {handle:#x} is not a {what}")))
        }
    }
}

/// Checks partition `p` of a request of `partitions`: `MPI_ERR_OTHER` out
/// of range, as MPICH has it.
fn check_partition(p: c_int, partitions: usize) -> Result<usize> {
    usize::try_from(p).ok().filter(|&p| p < partitions).ok_or_else(|| {
        MpiError::new(class::OTHER, format!("partition {p} is out of range: the request has {partitions} partitions"))
    })
}

/// Marks `parts` of the partitioned send `handle` ready, all or none; the
/// last one sends the data.
fn mark_ready(call: &str, handle: c_int, parts: impl Iterator<Item = c_int>) -> Result<()> {
    let mut state = state::lock(call)?;
    let (slot, shared) = partitioned(&state, handle, true)?;
    let comm = shared.borrow().comm;
    let on = |e: MpiError| e.on(comm);
    if state.requests.get(slot).is_some_and(|r| r.now.is_none()) {
        return Err(on(MpiError::new(class::REQUEST, format!("request {handle:#x} is inactive (MPI_Start it first)"))));
    }
    let mut round = shared.borrow_mut();
    let mut ready = round.ready.clone();
    for p in parts {
        let p = check_partition(p, round.partitions).map_err(on)?;
        if std::mem::replace(&mut ready[p], true) {
            return Err(on(MpiError::new(class::OTHER, format!("partition {p} is marked ready twice in this round"))));
        }
    }
    round.ready = ready;
    if round.ready.iter().all(|&r| r) {
        let sent = send_data(&mut state, &round)?;
        state.requests.get_mut(slot).expect("checked above").now = Some(sent);
    }
    Ok(())
}

crate::mpi_fn! {
    /// `MPI_Pready`.
    fn MPI_Pready / PMPI_Pready(partition: c_int, request: c_int) {
        mark_ready("MPI_Pready", request, std::iter::once(partition))
    }
}

crate::mpi_fn! {
    /// `MPI_Pready_range`: partitions `low` to `high`, both included.
    fn MPI_Pready_range / PMPI_Pready_range(low: c_int, high: c_int, request: c_int) {
        if low > high {
            let message = format!("MPI_Pready_range: low partition {low} is above high partition {high}");
            return Err(MpiError::new(class::ARG, message));
        }
        mark_ready("MPI_Pready_range", request, low..=high)
    }
}

crate::mpi_fn! {
    /// `MPI_Pready_list`.
    fn MPI_Pready_list / PMPI_Pready_list(length: c_int, partitions: *const c_int, request: c_int) {
        let n = crate::api::count_of(length, "MPI_Pready_list")?;
        // SAFETY: MPI's rule: `length` partition numbers.
        let list = unsafe { crate::api::c_array(partitions, n, "the array of partitions") }?;
        mark_ready("MPI_Pready_list", request, list.iter().copied())
    }
}

crate::mpi_fn! {
    /// `MPI_Parrived`: whether partition `partition` is in the receive
    /// buffer (all of them are once the data message is).
    fn MPI_Parrived / PMPI_Parrived(request: c_int, partition: c_int, flag: *mut c_int) {
        let mut state = state::lock("MPI_Parrived")?;
        let (slot, shared) = partitioned(&state, request, false)?;
        let (partitions, comm) = (shared.borrow().partitions, shared.borrow().comm);
        check_partition(partition, partitions).map_err(|e| e.on(comm))?;
        if state.requests.get(slot).is_some_and(|r| r.now.is_none()) {
            let inactive = format!("request {request:#x} is inactive (MPI_Start it first)");
            return Err(MpiError::new(class::REQUEST, inactive).on(comm));
        }
        let arrived = crate::api::request::test_progress(&mut state, slot)?;
        // SAFETY: the caller's output argument.
        unsafe { put(flag, arrived as c_int, "flag") }
    }
}
