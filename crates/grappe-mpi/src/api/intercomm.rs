//! Intercommunicators: `MPI_Intercomm_create`, `MPI_Intercomm_merge`, the
//! remote group, and the collectives on an intercommunicator.
//!
//! Point-to-point on an intercommunicator is the communicator's own (see
//! `grappe_comm::intercomm`: its ranks are the remote group's). Each
//! intercommunicator has two communicators of the library's beside it,
//! under handles no program is given: its local group and a private
//! duplicate of it, the channel between the groups' leaders. A collective
//! on the intercommunicator is the collective on the local group and
//! messages on the channel, as MPICH builds them: a reduction is reduced
//! in the group that contributes, sent by its leader, and broadcast in the
//! group that receives it. The steps are the library's own functions,
//! called on those handles (whose errors return, to be raised on the
//! intercommunicator).

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};

use grappe_comm::{Communicator, InterRoot};

use crate::abi::{self, class};
use crate::errors::{MpiError, Result, class_of_code, string_of_code};
use crate::mpi_fn;
use crate::state::{self, Locked};
use crate::types;

use super::coll::{PMPI_Barrier, PMPI_Bcast_c, PMPI_Gather_c, PMPI_Reduce_c, PMPI_Scatter_c};
use super::p2p::{PMPI_Irecv_c, PMPI_Isend_c, PMPI_Recv_c, PMPI_Send_c, PMPI_Sendrecv_c};
use super::request::PMPI_Waitall;
use super::{Count, CountArray, put};

/// The library's communicators beside an intercommunicator.
#[derive(Debug, Clone, Copy)]
pub struct Inter {
    /// Its local group.
    pub local: c_int,
    /// The leaders' channel: a duplicate of the intercommunicator.
    pub channel: c_int,
}

/// Tag of the collectives' messages on the channel (which carries nothing
/// else, in the order every rank calls them).
const CHANNEL_TAG: c_int = 0;

/// Registers a new intercommunicator and the communicators beside it
/// (making the channel is collective over both groups): its handle.
pub(super) fn register(state: &mut Locked, inter: Communicator, errhandler: c_int) -> Result<c_int> {
    let channel = inter.dup()?;
    let handle = state.add_comm(inter.clone(), errhandler);
    let slot = state.comm_slot(handle)?;
    attach_parts(state, slot, &inter, channel);
    Ok(handle)
}

/// Gives the intercommunicator in `slot`, `inter`, the library's
/// communicators beside it: its local group and `channel`, a duplicate.
pub(super) fn attach_parts(state: &mut Locked, slot: usize, inter: &Communicator, channel: Communicator) {
    ANY.store(true, Ordering::Relaxed);
    let local = inter.local_comm().expect("an intercommunicator has a local group").clone();
    let parts = Inter {
        local: state.add_comm(local, abi::ERRORS_RETURN),
        channel: state.add_comm(channel, abi::ERRORS_RETURN),
    };
    state.comms.get_mut(slot).expect("a live slot").inter = Some(parts);
}

/// Frees the communicators beside an intercommunicator being freed.
pub(super) fn unregister(state: &mut Locked, parts: Inter) {
    for handle in [parts.local, parts.channel] {
        if let Ok(slot) = state.comm_slot(handle) {
            if let Some(entry) = state.comms.remove(slot) {
                entry.comm.free();
            }
        }
    }
}

/// The size of a communicator's local group (`MPI_Comm_size`).
pub(super) fn local_size(comm: &Communicator) -> usize {
    comm.local_comm().map_or_else(|| comm.size(), Communicator::size)
}

/// The world ranks of a communicator's local group (`MPI_Comm_group`).
pub(super) fn local_members(comm: &Communicator) -> Vec<usize> {
    crate::api::group::comm_members(comm.local_comm().unwrap_or(comm))
}

mpi_fn! {
    /// `MPI_Intercomm_create`: collective over `local_comm`; its rank
    /// `local_leader` reaches the other group's leader, rank
    /// `remote_leader` of `peer_comm` (significant there only), with `tag`.
    fn MPI_Intercomm_create / PMPI_Intercomm_create(
        local_comm: c_int,
        local_leader: c_int,
        peer_comm: c_int,
        remote_leader: c_int,
        tag: c_int,
        newintercomm: *mut c_int,
    ) {
        let mut state = state::lock("MPI_Intercomm_create")?;
        let entry = state.intra(local_comm)?;
        let on = |e: MpiError| e.on(local_comm);
        let (local, handler) = (entry.comm.clone(), entry.errhandler);
        let leader = crate::api::dest_rank(local_leader, &local).map_err(on)?.ok_or_else(|| {
            MpiError::new(class::RANK, "local_leader is MPI_PROC_NULL").on(local_comm)
        })?;
        let peer = match local.rank() == leader {
            true => leader_arguments(&state, peer_comm, remote_leader, tag).map(Some),
            false => Ok(None),
        };
        if crate::waiting::multiple() {
            let mine = local_members(&local);
            let peer = peer.and_then(|peer| match peer {
                None => Ok(None),
                Some((peer, remote)) => {
                    // Its own group's rank would never answer.
                    let world = peer.world_rank_of(remote).map_err(MpiError::from)?;
                    match mine.contains(&world) {
                        true => Err(MpiError::from(grappe_comm::Error::RemoteLeaderInGroup { rank: remote, world })),
                        false => Ok(Some((peer_comm, remote_leader))),
                    }
                }
            });
            // Communicators are the engine's: dropped under the lock only.
            let me = local.rank();
            drop(local);
            drop(state);
            let made = create_outside(local_comm, &mine, me, leader, peer, tag, handler);
            let handle = made.map_err(on)?;
            // SAFETY: the caller's output argument.
            return unsafe { put(newintercomm, handle, "newintercomm") };
        }
        let peer = match peer {
            Ok(peer) => peer,
            Err(error) => {
                // The leader takes part all the same, to tell its group it
                // failed: they would wait for it forever otherwise.
                let _ = local.intercomm_create(leader, None);
                return Err(error.on(local_comm));
            }
        };
        let inter = local
            .intercomm_create(leader, peer.as_ref().map(|(c, r)| (c, *r, tag)))
            .map_err(|e| MpiError::from(e).on(local_comm))?;
        let handle = register(&mut state, inter, handler).map_err(on)?;
        // SAFETY: the caller's output argument.
        unsafe { put(newintercomm, handle, "newintercomm") }
    }
}

/// `MPI_Byte` as a handle.
const BYTE: c_int = 0x4c00_010d;

/// The first word of what a leader hands its group when it failed.
const LEADER_FAILED: u64 = u64::MAX;

/// Numbers the intercommunicators whose creation a leader of this
/// process started (see [`create_outside`]).
static CREATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// `MPI_Intercomm_create` under `MPI_THREAD_MULTIPLE`, waiting with the
/// lock let go at every step, so that threads of a process may create
/// intercommunicators at once, whatever order other ranks' threads take:
/// the leaders exchange their groups (world ranks) and a number of the
/// creation over the peer communicator (`peer`: its handle and the
/// remote leader, or the leader's error), the leader hands the other
/// group to its own by a broadcast over `local`, the local group is
/// duplicated (an idup), and both groups agree on the new context among
/// themselves (`start_create_group` on the world, on a tag made of the
/// creation's number, from 2^30 up: `MPI_Comm_create_group` on the world
/// with such tags at the same time could meet it). The channel beside it
/// is an idup too.
fn create_outside(
    local_comm: c_int,
    mine: &[usize],
    me: usize,
    leader: usize,
    peer: Result<Option<(c_int, c_int)>>,
    tag: c_int,
    handler: c_int,
) -> Result<c_int> {
    const CALL: &str = "MPI_Intercomm_create";
    let world_size = state::lock(CALL)?.comm(abi::COMM_WORLD)?.comm.size();
    // The creation's number: this process's world rank and count of
    // creations, in 30 bits (unique among the first 1024 ranks' latest
    // 2^20 creations each).
    let created = CREATIONS.fetch_add(1, Ordering::Relaxed) & 0xf_ffff;
    let nonce = ((mine[me] as u64) << 20 | created) & ((1 << 30) - 1);
    // [count, world ranks..., creation number], room for any group.
    let words = world_size + 2;
    let mut theirs = vec![0u64; words];
    if me == leader {
        theirs = match peer.and_then(|peer| exchange_groups(peer, mine, nonce, tag, words)) {
            Ok(theirs) => theirs,
            Err(error) => {
                // The group hears of it, rather than waiting forever.
                let mut failed = vec![LEADER_FAILED; words];
                let _ = broadcast_words(local_comm, leader, &mut failed);
                return Err(error);
            }
        };
    }
    broadcast_words(local_comm, leader, &mut theirs)?;
    if theirs[0] == LEADER_FAILED {
        return Err(MpiError::from(grappe_comm::Error::LeaderFailed { leader: mine[leader] }));
    }
    let count = theirs[0] as usize;
    let remote: Vec<usize> = theirs[1..=count].iter().map(|&w| w as usize).collect();
    let agreement_tag = (1 << 30) | theirs[count + 1] as c_int;
    let mut both: Vec<usize> = mine.iter().chain(&remote).copied().collect();
    both.sort_unstable();
    // Every communicator and pending creation below is held only under the
    // lock (`agreed_outside` hands them back with it, or drops them under it).
    let state = state::lock(CALL)?;
    let (request, pending) = state.intra(local_comm)?.comm.start_dup(state.scope, 1).map_err(MpiError::from)?;
    let (state, pending) = crate::api::comm::agreed_outside(CALL, state, request, pending)?;
    let local_dup =
        pending.finish().and_then(|mut made| made.pop()).ok_or_else(|| unfinished("the local group's duplicate"))?;
    let started = state.comm(abi::COMM_WORLD)?.comm.start_create_group(state.scope, &both, agreement_tag);
    let (request, pending) = started.map_err(MpiError::from)?.expect("a member of its own intercommunicator");
    let (state, (pending, local_dup)) = crate::api::comm::agreed_outside(CALL, state, request, (pending, local_dup))?;
    let inter = pending.finish_inter(local_dup, remote).ok_or_else(|| unfinished("the context agreement"))?;
    let (request, pending) = inter.start_dup(state.scope, 1).map_err(MpiError::from)?;
    let (mut state, (pending, inter)) = crate::api::comm::agreed_outside(CALL, state, request, (pending, inter))?;
    let Some(channel) = pending.finish().and_then(|mut made| made.pop()) else {
        drop(inter);
        return Err(unfinished("the channel"));
    };
    let handle = state.add_comm(inter.clone(), handler);
    let slot = state.comm_slot(handle)?;
    attach_parts(&mut state, slot, &inter, channel);
    Ok(handle)
}

fn unfinished(what: &str) -> MpiError {
    MpiError::new(class::INTERN, format!("MPI_Intercomm_create: {what} did not complete"))
}

/// The leader's exchange in [`create_outside`]: sends `mine` and `nonce`
/// to the remote leader over the peer communicator and receives theirs
/// (`words` words at most); the other group's `[count, world ranks...,
/// the creation's number]`: the number of the group of the lowest world
/// rank.
fn exchange_groups(
    peer: Option<(c_int, c_int)>,
    mine: &[usize],
    nonce: u64,
    tag: c_int,
    words: usize,
) -> Result<Vec<u64>> {
    let (peer_comm, remote_leader) = peer.expect("the leader has its arguments");
    let mut offer: Vec<u64> = std::iter::once(mine.len() as u64).chain(mine.iter().map(|&w| w as u64)).collect();
    offer.push(nonce);
    let mut theirs = vec![0u64; words];
    let mut requests = [abi::REQUEST_NULL; 2];
    let bytes = |w: usize| (w * 8) as super::Count;
    // SAFETY: both buffers outlive the wait below.
    unsafe {
        step(PMPI_Irecv_c::body(
            theirs.as_mut_ptr().cast(),
            bytes(words),
            BYTE,
            remote_leader,
            tag,
            peer_comm,
            &mut requests[0],
        ))?;
        step(PMPI_Isend_c::body(
            offer.as_ptr().cast(),
            bytes(offer.len()),
            BYTE,
            remote_leader,
            tag,
            peer_comm,
            &mut requests[1],
        ))?;
        step(PMPI_Waitall::body(2, requests.as_mut_ptr(), abi::STATUS_IGNORE as *mut abi::Status))?;
    }
    let count = theirs[0] as usize;
    if count == 0 || count + 2 > words || theirs[1..=count].iter().any(|w| mine.contains(&(*w as usize))) {
        return Err(MpiError::new(
            class::RANK,
            format!(
                "MPI_Intercomm_create: the remote leader's group is not another group of this job: {:?}",
                &theirs[..(count + 1).min(words)]
            ),
        ));
    }
    // Both leaders keep the number of the group with the lowest world
    // rank (the groups are disjoint).
    let their_lowest = theirs[1..=count].iter().min().copied().unwrap_or(u64::MAX) as usize;
    if mine.iter().min().is_some_and(|&lowest| lowest < their_lowest) {
        theirs[count + 1] = nonce;
    }
    Ok(theirs)
}

/// Broadcasts `words` from rank `root` of communicator `comm` (waited for
/// with the lock let go, as `MPI_Ibcast` and `MPI_Wait` do).
fn broadcast_words(comm: c_int, root: usize, words: &mut [u64]) -> Result<()> {
    let mut request = abi::REQUEST_NULL;
    // SAFETY: `words` outlives the wait below.
    unsafe {
        step(super::icoll::PMPI_Ibcast_c::body(
            words.as_mut_ptr().cast(),
            (words.len() * 8) as super::Count,
            BYTE,
            root as c_int,
            comm,
            &mut request,
        ))?;
        step(super::request::PMPI_Wait::body(&mut request, abi::STATUS_IGNORE as *mut abi::Status))
    }
}

/// The leader's own arguments of `MPI_Intercomm_create`: the peer
/// communicator and the remote leader's rank in it.
fn leader_arguments(
    state: &Locked,
    peer_comm: c_int,
    remote_leader: c_int,
    tag: c_int,
) -> Result<(Communicator, usize)> {
    let peer = state.comm(peer_comm)?.comm.clone();
    let remote = crate::api::dest_rank(remote_leader, &peer)?
        .ok_or_else(|| MpiError::new(class::RANK, "remote_leader is MPI_PROC_NULL"))?;
    if tag < 0 {
        return Err(MpiError::new(class::TAG, format!("tag {tag} is negative")));
    }
    Ok((peer, remote))
}

mpi_fn! {
    /// `MPI_Intercomm_merge`: the group passing `high` false first (if
    /// both pass the same, the group whose leader has the lower world rank).
    fn MPI_Intercomm_merge / PMPI_Intercomm_merge(intercomm: c_int, high: c_int, newintracomm: *mut c_int) {
        let mut state = state::lock("MPI_Intercomm_merge")?;
        let entry = state.comm(intercomm)?;
        let (handler, inter) = (entry.errhandler, entry.comm.clone());
        let on = |e: MpiError| e.on(intercomm);
        let merged = match crate::waiting::multiple() {
            false => inter.merge(high != 0).map_err(|e| on(e.into()))?,
            // Agreed as an idup, with the lock let go (see `comm::split_intra`).
            true => {
                let (request, pending) = inter.start_merge(state.scope, high != 0).map_err(|e| on(e.into()))?;
                let (locked, (pending, inter)) =
                    crate::api::comm::agreed_outside("MPI_Intercomm_merge", state, request, (pending, inter))
                        .map_err(on)?;
                state = locked;
                let merged = pending.finish();
                drop(inter);
                let message = "MPI_Intercomm_merge: the context agreement did not complete";
                merged.ok_or_else(|| on(MpiError::new(class::INTERN, message)))?
            }
        };
        let handle = state.add_comm(merged, handler);
        // SAFETY: the caller's output argument.
        unsafe { put(newintracomm, handle, "newintracomm") }
    }
}

mpi_fn! {
    /// `MPI_Comm_test_inter`.
    fn MPI_Comm_test_inter / PMPI_Comm_test_inter(comm: c_int, flag: *mut c_int) {
        let inter = state::lock("MPI_Comm_test_inter")?.local_comm(comm)?.comm.is_inter();
        // SAFETY: the caller's output argument.
        unsafe { put(flag, inter as c_int, "flag") }.map_err(|e| e.on(comm))
    }
}

/// The communicator of `comm` if it is an intercommunicator.
fn inter_comm(state: &Locked, comm: c_int) -> Result<&Communicator> {
    let found = &state.comm(comm)?.comm;
    match found.is_inter() {
        true => Ok(found),
        false => {
            Err(MpiError::new(class::COMM, format!("communicator {comm:#x} is not an intercommunicator")).on(comm))
        }
    }
}

mpi_fn! {
    /// `MPI_Comm_remote_size`.
    fn MPI_Comm_remote_size / PMPI_Comm_remote_size(comm: c_int, size: *mut c_int) {
        let n = inter_comm(&state::lock("MPI_Comm_remote_size")?, comm)?.size() as c_int;
        // SAFETY: the caller's output argument.
        unsafe { put(size, n, "size") }.map_err(|e| e.on(comm))
    }
}

mpi_fn! {
    /// `MPI_Comm_remote_group`.
    fn MPI_Comm_remote_group / PMPI_Comm_remote_group(comm: c_int, group: *mut c_int) {
        let mut state = state::lock("MPI_Comm_remote_group")?;
        let members = crate::api::group::comm_members(inter_comm(&state, comm)?);
        crate::api::group::give(&mut state, members, group).map_err(|e| e.on(comm))
    }
}

/// An intercommunicator's parts, for one of its collectives.
#[derive(Debug, Clone, Copy)]
pub(super) struct Parts {
    local: c_int,
    channel: c_int,
    /// This rank's rank in its group.
    rank: usize,
    local_size: usize,
    remote_size: usize,
}

impl Parts {
    fn leads(&self) -> bool {
        self.rank == 0
    }
}

/// Whether the program ever made an intercommunicator: until it does, a
/// collective needs no look at its communicator to know it is an
/// intracommunicator (the look takes the state, twice the cost of a small
/// allreduce's C layer).
static ANY: AtomicBool = AtomicBool::new(false);

/// The parts of `comm` if it is an intercommunicator (`None` for an
/// intracommunicator, whose collectives go the usual way).
#[inline]
pub(super) fn parts(call: &str, comm: c_int) -> Result<Option<Parts>> {
    if !ANY.load(Ordering::Relaxed) {
        return Ok(None);
    }
    parts_of(call, comm)
}

fn parts_of(call: &str, comm: c_int) -> Result<Option<Parts>> {
    let state = state::lock(call)?;
    let entry = state.comm(comm)?;
    Ok(entry.inter.map(|inter| Parts {
        local: inter.local,
        channel: inter.channel,
        rank: entry.comm.rank(),
        local_size: local_size(&entry.comm),
        remote_size: entry.comm.size(),
    }))
}

/// The outcome of a step run through one of the library's functions on
/// the communicators beside the intercommunicator.
fn step(code: c_int) -> Result<()> {
    match code {
        abi::SUCCESS => Ok(()),
        code => Err(MpiError::new(
            class_of_code(code).unwrap_or(class::OTHER),
            string_of_code(code).unwrap_or_else(|| format!("error code {code}")),
        )),
    }
}

/// Where this rank stands in a rooted collective.
fn side(root: c_int, parts: &Parts) -> Result<InterRoot> {
    super::icoll_inter::root_of(root, parts.remote_size)
}

/// `MPI_IN_PLACE` has no meaning on an intercommunicator.
fn not_in_place(buf: *const c_void) -> Result<()> {
    super::icoll_inter::not_in_place(buf, "a buffer")
}

/// `count × n`, or an error naming the overflow.
fn times(count: Count, n: usize) -> Result<Count> {
    count
        .checked_mul(n as Count)
        .ok_or_else(|| MpiError::new(class::COUNT, format!("{count} elements for each of {n} ranks overflow a count")))
}

/// Room for `n` elements of `datatype` laid out as the datatype says,
/// aligned for any element.
struct Scratch {
    words: Vec<u128>,
    /// Where element 0 starts, from the allocation's start: minus the
    /// datatype's true lower bound.
    shift: isize,
}

impl Scratch {
    fn new(datatype: c_int, n: usize) -> Result<Scratch> {
        let datatype = types::committed(datatype)?;
        let bytes = match n {
            0 => 0,
            n => (n as isize - 1) * datatype.extent() + datatype.true_extent(),
        };
        let words = vec![0u128; (bytes.max(0) as usize).div_ceil(16)];
        Ok(Scratch { words, shift: -datatype.true_lb() })
    }

    fn ptr(&mut self) -> *mut c_void {
        self.words.as_mut_ptr().cast::<u8>().wrapping_offset(self.shift).cast()
    }
}

/// `MPI_Barrier` on an intercommunicator: no rank leaves before every
/// rank of both groups entered.
pub(super) fn barrier(parts: Parts) -> Result<()> {
    // SAFETY: the library's functions on its own communicators.
    unsafe {
        step(PMPI_Barrier::body(parts.local))?;
        if parts.leads() {
            let none = std::ptr::null_mut::<c_void>();
            step(PMPI_Sendrecv_c::body(
                none,
                0,
                crate::datatype::BYTE.handle,
                0,
                CHANNEL_TAG,
                none,
                0,
                crate::datatype::BYTE.handle,
                0,
                CHANNEL_TAG,
                parts.channel,
                abi::STATUS_IGNORE as *mut abi::Status,
            ))?;
        }
        step(PMPI_Barrier::body(parts.local))
    }
}

/// `MPI_Bcast` on an intercommunicator: from the root to the other group.
///
/// # Safety
/// As `MPI_Bcast`'s buffer.
pub(super) unsafe fn bcast(
    parts: Parts,
    buffer: *mut c_void,
    count: Count,
    datatype: c_int,
    root: c_int,
) -> Result<()> {
    // SAFETY: the caller's buffer, as MPI_Bcast's.
    unsafe {
        match side(root, &parts)? {
            InterRoot::Root => step(PMPI_Send_c::body(buffer, count, datatype, 0, CHANNEL_TAG, parts.channel)),
            InterRoot::Idle => Ok(()),
            InterRoot::Remote(root) => {
                if parts.leads() {
                    step(PMPI_Recv_c::body(
                        buffer,
                        count,
                        datatype,
                        root as c_int,
                        CHANNEL_TAG,
                        parts.channel,
                        ignore(),
                    ))?;
                }
                step(PMPI_Bcast_c::body(buffer, count, datatype, 0, parts.local))
            }
        }
    }
}

fn ignore() -> *mut abi::Status {
    abi::STATUS_IGNORE as *mut abi::Status
}

/// `MPI_Reduce` on an intercommunicator: the other group's elements,
/// reduced, to the root.
///
/// # Safety
/// As `MPI_Reduce`'s buffers.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn reduce(
    parts: Parts,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: Count,
    datatype: c_int,
    op: c_int,
    root: c_int,
) -> Result<()> {
    // SAFETY: the caller's buffers, as MPI_Reduce's.
    unsafe {
        match side(root, &parts)? {
            InterRoot::Root => {
                step(PMPI_Recv_c::body(recvbuf, count, datatype, 0, CHANNEL_TAG, parts.channel, ignore()))
            }
            InterRoot::Idle => Ok(()),
            InterRoot::Remote(root) => {
                not_in_place(sendbuf)?;
                let mut reduced = Scratch::new(datatype, if parts.leads() { count.max(0) as usize } else { 0 })?;
                step(PMPI_Reduce_c::body(sendbuf, reduced.ptr(), count, datatype, op, 0, parts.local))?;
                match parts.leads() {
                    true => step(PMPI_Send_c::body(
                        reduced.ptr(),
                        count,
                        datatype,
                        root as c_int,
                        CHANNEL_TAG,
                        parts.channel,
                    )),
                    false => Ok(()),
                }
            }
        }
    }
}

/// `MPI_Allreduce` on an intercommunicator: each group gets the other's
/// elements, reduced.
///
/// # Safety
/// As `MPI_Allreduce`'s buffers.
pub(super) unsafe fn allreduce(
    parts: Parts,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: Count,
    datatype: c_int,
    op: c_int,
) -> Result<()> {
    not_in_place(sendbuf)?;
    let mut reduced = Scratch::new(datatype, if parts.leads() { count.max(0) as usize } else { 0 })?;
    // SAFETY: the caller's buffers, as MPI_Allreduce's; the scratch holds
    // `count` elements at the leader.
    unsafe {
        step(PMPI_Reduce_c::body(sendbuf, reduced.ptr(), count, datatype, op, 0, parts.local))?;
        if parts.leads() {
            let (to, from) = (reduced.ptr(), recvbuf);
            step(PMPI_Sendrecv_c::body(
                to,
                count,
                datatype,
                0,
                CHANNEL_TAG,
                from,
                count,
                datatype,
                0,
                CHANNEL_TAG,
                parts.channel,
                ignore(),
            ))?;
        }
        step(PMPI_Bcast_c::body(recvbuf, count, datatype, 0, parts.local))
    }
}

/// `MPI_Gather` on an intercommunicator: the other group's blocks, in its
/// rank order, to the root.
///
/// # Safety
/// As `MPI_Gather`'s buffers.
pub(super) unsafe fn gather(
    parts: Parts,
    (sendbuf, sendcount, sendtype): (*const c_void, Count, c_int),
    (recvbuf, recvcount, recvtype): (*mut c_void, Count, c_int),
    root: c_int,
) -> Result<()> {
    // SAFETY: the caller's buffers, as MPI_Gather's.
    unsafe {
        match side(root, &parts)? {
            InterRoot::Root => {
                let all = times(recvcount, parts.remote_size)?;
                step(PMPI_Recv_c::body(recvbuf, all, recvtype, 0, CHANNEL_TAG, parts.channel, ignore()))
            }
            InterRoot::Idle => Ok(()),
            InterRoot::Remote(root) => {
                not_in_place(sendbuf)?;
                let all = times(sendcount, parts.local_size)?;
                let mut gathered = Scratch::new(sendtype, if parts.leads() { all.max(0) as usize } else { 0 })?;
                let to = gathered.ptr();
                step(PMPI_Gather_c::body(sendbuf, sendcount, sendtype, to, sendcount, sendtype, 0, parts.local))?;
                match parts.leads() {
                    true => step(PMPI_Send_c::body(to, all, sendtype, root as c_int, CHANNEL_TAG, parts.channel)),
                    false => Ok(()),
                }
            }
        }
    }
}

/// `MPI_Scatter` on an intercommunicator: the root's blocks to the other
/// group, in its rank order.
///
/// # Safety
/// As `MPI_Scatter`'s buffers.
pub(super) unsafe fn scatter(
    parts: Parts,
    (sendbuf, sendcount, sendtype): (*const c_void, Count, c_int),
    (recvbuf, recvcount, recvtype): (*mut c_void, Count, c_int),
    root: c_int,
) -> Result<()> {
    // SAFETY: the caller's buffers, as MPI_Scatter's.
    unsafe {
        match side(root, &parts)? {
            InterRoot::Root => {
                let all = times(sendcount, parts.remote_size)?;
                step(PMPI_Send_c::body(sendbuf, all, sendtype, 0, CHANNEL_TAG, parts.channel))
            }
            InterRoot::Idle => Ok(()),
            InterRoot::Remote(root) => {
                not_in_place(recvbuf)?;
                let all = times(recvcount, parts.local_size)?;
                let mut blocks = Scratch::new(recvtype, if parts.leads() { all.max(0) as usize } else { 0 })?;
                let from = blocks.ptr();
                if parts.leads() {
                    step(PMPI_Recv_c::body(from, all, recvtype, root as c_int, CHANNEL_TAG, parts.channel, ignore()))?;
                }
                step(PMPI_Scatter_c::body(from, recvcount, recvtype, recvbuf, recvcount, recvtype, 0, parts.local))
            }
        }
    }
}

/// `MPI_Allgather` on an intercommunicator: each group gets the other's
/// blocks, in its rank order.
///
/// # Safety
/// As `MPI_Allgather`'s buffers.
pub(super) unsafe fn allgather(
    parts: Parts,
    (sendbuf, sendcount, sendtype): (*const c_void, Count, c_int),
    (recvbuf, recvcount, recvtype): (*mut c_void, Count, c_int),
) -> Result<()> {
    not_in_place(sendbuf)?;
    let (mine, theirs) = (times(sendcount, parts.local_size)?, times(recvcount, parts.remote_size)?);
    let mut gathered = Scratch::new(sendtype, if parts.leads() { mine.max(0) as usize } else { 0 })?;
    let to = gathered.ptr();
    // SAFETY: the caller's buffers, as MPI_Allgather's; the scratch holds
    // the group's blocks at the leader.
    unsafe {
        step(PMPI_Gather_c::body(sendbuf, sendcount, sendtype, to, sendcount, sendtype, 0, parts.local))?;
        if parts.leads() {
            step(PMPI_Sendrecv_c::body(
                to,
                mine,
                sendtype,
                0,
                CHANNEL_TAG,
                recvbuf,
                theirs,
                recvtype,
                0,
                CHANNEL_TAG,
                parts.channel,
                ignore(),
            ))?;
        }
        step(PMPI_Bcast_c::body(recvbuf, theirs, recvtype, 0, parts.local))
    }
}

/// `MPI_Alltoall` on an intercommunicator: block `j` of every rank to
/// rank `j` of the other group, all at once.
///
/// # Safety
/// As `MPI_Alltoall`'s buffers.
pub(super) unsafe fn alltoall(
    parts: Parts,
    (sendbuf, sendcount, sendtype): (*const c_void, Count, c_int),
    (recvbuf, recvcount, recvtype): (*mut c_void, Count, c_int),
) -> Result<()> {
    not_in_place(sendbuf)?;
    let (send_extent, recv_extent) = (types::committed(sendtype)?.extent(), types::committed(recvtype)?.extent());
    let mut requests = vec![abi::REQUEST_NULL; 2 * parts.remote_size];
    // SAFETY: the caller's buffers hold one block per rank of the remote
    // group, as MPI_Alltoall's; every request completes below.
    unsafe {
        for peer in 0..parts.remote_size {
            let at = |buf: *const c_void, count: Count, extent: isize| {
                buf.cast::<u8>().wrapping_offset(peer as isize * count as isize * extent).cast::<c_void>()
            };
            let (to, from) = (at(sendbuf, sendcount, send_extent), at(recvbuf, recvcount, recv_extent).cast_mut());
            let (recv_request, send_request) = requests[2 * peer..].split_at_mut(1);
            let peer = peer as c_int;
            step(PMPI_Irecv_c::body(
                from,
                recvcount,
                recvtype,
                peer,
                CHANNEL_TAG,
                parts.channel,
                &mut recv_request[0],
            ))?;
            step(PMPI_Isend_c::body(to, sendcount, sendtype, peer, CHANNEL_TAG, parts.channel, &mut send_request[0]))?;
        }
        let statuses = abi::STATUS_IGNORE as *mut abi::Status;
        step(PMPI_Waitall::body(requests.len() as c_int, requests.as_mut_ptr(), statuses))
    }
}

/// The error of a call that grappe does not run on an intercommunicator.
pub(crate) fn unsupported(comm: c_int) -> MpiError {
    MpiError::new(
        class::COMM,
        format!(
            "communicator {comm:#x} is an intercommunicator, on which grappe supports point-to-point, \
             MPI_Comm_size/rank/group/remote_size/remote_group/dup/split/create/free, MPI_Intercomm_merge and the collectives \
             MPI defines on them (all but Scan and Exscan, blocking or not), not this call"
        ),
    )
    .on(comm)
}

/// One block of a collective that goes rank to rank: `count` elements
/// of `datatype` at `buf`, to or from rank `peer` of the remote group.
#[derive(Clone, Copy)]
struct Block {
    buf: *mut c_void,
    count: Count,
    datatype: c_int,
    peer: usize,
}

/// Sends and receives every block at once over the channel, and waits
/// for them all: the v-collectives, where each rank's blocks have their
/// own sizes, go rank to rank.
///
/// # Safety
/// Each block lies in its caller's buffer, readable (sends) or writable
/// (receives).
unsafe fn exchange(parts: &Parts, sends: &[Block], recvs: &[Block]) -> Result<()> {
    let mut requests = vec![abi::REQUEST_NULL; sends.len() + recvs.len()];
    let (recv_requests, send_requests) = requests.split_at_mut(recvs.len());
    // SAFETY: as the caller promised; every request completes below.
    unsafe {
        for (block, request) in recvs.iter().zip(recv_requests) {
            let (peer, channel) = (block.peer as c_int, parts.channel);
            step(PMPI_Irecv_c::body(block.buf, block.count, block.datatype, peer, CHANNEL_TAG, channel, request))?;
        }
        for (block, request) in sends.iter().zip(send_requests) {
            let (peer, channel) = (block.peer as c_int, parts.channel);
            step(PMPI_Isend_c::body(block.buf, block.count, block.datatype, peer, CHANNEL_TAG, channel, request))?;
        }
        step(PMPI_Waitall::body(requests.len() as c_int, requests.as_mut_ptr(), ignore()))
    }
}

/// The blocks of `counts[r]` elements at `displs[r]` (in elements of
/// `datatype`) of `buf`, one per rank of the remote group.
///
/// # Safety
/// `counts` and `displs` point to one int per rank of the remote group.
unsafe fn blocks(
    parts: &Parts,
    buf: *const c_void,
    counts: CountArray,
    displs: CountArray,
    datatype: c_int,
) -> Result<Vec<Block>> {
    let n = parts.remote_size;
    // SAFETY: one count and one displacement per remote rank, as the caller promised.
    let (counts, displs) = unsafe { (super::coll::ints(counts, n, "counts")?, displs.values(n, "displs")?) };
    let extent = types::committed(datatype)?.extent();
    Ok((0..n)
        .map(|peer| Block {
            buf: buf.cast::<u8>().wrapping_offset(displs[peer] as isize * extent).cast_mut().cast(),
            count: counts[peer],
            datatype,
            peer,
        })
        .collect())
}

/// The same block for every rank of the remote group.
fn to_everyone(parts: &Parts, buf: *const c_void, count: Count, datatype: c_int) -> Vec<Block> {
    (0..parts.remote_size).map(|peer| Block { buf: buf.cast_mut(), count, datatype, peer }).collect()
}

/// `MPI_Gatherv` on an intercommunicator: each rank of the other group
/// sends its block straight to the root.
///
/// # Safety
/// As `MPI_Gatherv`'s buffers and arrays.
pub(super) unsafe fn gatherv(
    parts: Parts,
    (sendbuf, sendcount, sendtype): (*const c_void, Count, c_int),
    (recvbuf, recvcounts, displs, recvtype): (*mut c_void, CountArray, CountArray, c_int),
    root: c_int,
) -> Result<()> {
    // SAFETY: the caller's buffers and arrays, as MPI_Gatherv's.
    unsafe {
        match side(root, &parts)? {
            InterRoot::Root => exchange(&parts, &[], &blocks(&parts, recvbuf, recvcounts, displs, recvtype)?),
            InterRoot::Idle => Ok(()),
            InterRoot::Remote(root) => {
                not_in_place(sendbuf)?;
                let mine = Block { buf: sendbuf.cast_mut(), count: sendcount, datatype: sendtype, peer: root };
                exchange(&parts, &[mine], &[])
            }
        }
    }
}

/// `MPI_Scatterv` on an intercommunicator: the root sends each rank of
/// the other group its block.
///
/// # Safety
/// As `MPI_Scatterv`'s buffers and arrays.
pub(super) unsafe fn scatterv(
    parts: Parts,
    (sendbuf, sendcounts, displs, sendtype): (*const c_void, CountArray, CountArray, c_int),
    (recvbuf, recvcount, recvtype): (*mut c_void, Count, c_int),
    root: c_int,
) -> Result<()> {
    // SAFETY: the caller's buffers and arrays, as MPI_Scatterv's.
    unsafe {
        match side(root, &parts)? {
            InterRoot::Root => exchange(&parts, &blocks(&parts, sendbuf, sendcounts, displs, sendtype)?, &[]),
            InterRoot::Idle => Ok(()),
            InterRoot::Remote(root) => {
                not_in_place(recvbuf)?;
                let mine = Block { buf: recvbuf, count: recvcount, datatype: recvtype, peer: root };
                exchange(&parts, &[], &[mine])
            }
        }
    }
}

/// `MPI_Allgatherv` on an intercommunicator: every rank sends its block
/// to every rank of the other group.
///
/// # Safety
/// As `MPI_Allgatherv`'s buffers and arrays.
pub(super) unsafe fn allgatherv(
    parts: Parts,
    (sendbuf, sendcount, sendtype): (*const c_void, Count, c_int),
    (recvbuf, recvcounts, displs, recvtype): (*mut c_void, CountArray, CountArray, c_int),
) -> Result<()> {
    not_in_place(sendbuf)?;
    // SAFETY: the caller's buffers and arrays, as MPI_Allgatherv's.
    unsafe {
        let recvs = blocks(&parts, recvbuf, recvcounts, displs, recvtype)?;
        exchange(&parts, &to_everyone(&parts, sendbuf, sendcount, sendtype), &recvs)
    }
}

/// `MPI_Alltoallv` on an intercommunicator.
///
/// # Safety
/// As `MPI_Alltoallv`'s buffers and arrays.
pub(super) unsafe fn alltoallv(
    parts: Parts,
    (sendbuf, sendcounts, sdispls, sendtype): (*const c_void, CountArray, CountArray, c_int),
    (recvbuf, recvcounts, rdispls, recvtype): (*mut c_void, CountArray, CountArray, c_int),
) -> Result<()> {
    not_in_place(sendbuf)?;
    // SAFETY: the caller's buffers and arrays, as MPI_Alltoallv's.
    unsafe {
        let sends = blocks(&parts, sendbuf, sendcounts, sdispls, sendtype)?;
        exchange(&parts, &sends, &blocks(&parts, recvbuf, recvcounts, rdispls, recvtype)?)
    }
}

/// `MPI_Alltoallw` on an intercommunicator: displacements in bytes, a
/// datatype per block.
///
/// # Safety
/// As `MPI_Alltoallw`'s buffers and arrays.
pub(super) unsafe fn alltoallw(
    parts: Parts,
    (sendbuf, sendcounts, sdispls, sendtypes): (*const c_void, CountArray, CountArray, *const c_int),
    (recvbuf, recvcounts, rdispls, recvtypes): (*mut c_void, CountArray, CountArray, *const c_int),
) -> Result<()> {
    not_in_place(sendbuf)?;
    let n = parts.remote_size;
    let byte_blocks = |buf: *const c_void, counts: CountArray, displs: CountArray, datatypes: *const c_int| {
        // SAFETY: one count, displacement and datatype per remote rank, as
        // MPI_Alltoallw's caller promised.
        let (counts, displs, datatypes) = unsafe {
            (
                super::coll::ints(counts, n, "counts")?,
                displs.values(n, "displs")?,
                super::c_array(datatypes, n, "types")?,
            )
        };
        Ok::<_, MpiError>(
            (0..n)
                .map(|peer| Block {
                    buf: buf.cast::<u8>().wrapping_offset(displs[peer] as isize).cast_mut().cast(),
                    count: counts[peer],
                    datatype: datatypes[peer],
                    peer,
                })
                .collect::<Vec<_>>(),
        )
    };
    let sends = byte_blocks(sendbuf, sendcounts, sdispls, sendtypes)?;
    let recvs = byte_blocks(recvbuf, recvcounts, rdispls, recvtypes)?;
    // SAFETY: the caller's buffers, as MPI_Alltoallw's.
    unsafe { exchange(&parts, &sends, &recvs) }
}

/// `MPI_Reduce_scatter` (`counts`: one per local rank) and
/// `MPI_Reduce_scatter_block` (`counts` `None`: `recvcount` each) on an
/// intercommunicator: each group's elements, reduced in the group, are
/// scattered over the other group (whose total count MPI requires to be
/// the same).
///
/// # Safety
/// As `MPI_Reduce_scatter`'s buffers and counts.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn reduce_scatter(
    parts: Parts,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    counts: Option<CountArray>,
    recvcount: Count,
    datatype: c_int,
    op: c_int,
) -> Result<()> {
    not_in_place(sendbuf)?;
    let counts: Vec<Count> = match counts {
        // SAFETY: one count per local rank, as the caller promised.
        Some(counts) => unsafe { super::coll::ints(counts, parts.local_size, "recvcounts")? },
        None => vec![recvcount; parts.local_size],
    };
    let total = counts.iter().try_fold(0 as Count, |sum, &c| sum.checked_add(c));
    let total = total.ok_or_else(|| MpiError::new(class::COUNT, "the counts' sum overflows a count"))?;
    let displs: Vec<Count> = counts.iter().scan(0, |at, &c| Some(std::mem::replace(at, *at + c))).collect();
    let room = if parts.leads() { total as usize } else { 0 };
    let (mut reduced, mut theirs) = (Scratch::new(datatype, room)?, Scratch::new(datatype, room)?);
    let (mine_at, theirs_at) = (reduced.ptr(), theirs.ptr());
    // SAFETY: the caller's buffers, as MPI_Reduce_scatter's; the scratches
    // hold `total` elements at the leader.
    unsafe {
        step(PMPI_Reduce_c::body(sendbuf, mine_at, total, datatype, op, 0, parts.local))?;
        if parts.leads() {
            let (channel, tag) = (parts.channel, CHANNEL_TAG);
            step(PMPI_Sendrecv_c::body(
                mine_at,
                total,
                datatype,
                0,
                tag,
                theirs_at,
                total,
                datatype,
                0,
                tag,
                channel,
                ignore(),
            ))?;
        }
        let mine = counts[parts.rank];
        step(super::coll::PMPI_Scatterv_c::body(
            theirs_at,
            counts.as_ptr(),
            displs.as_ptr(),
            datatype,
            recvbuf,
            mine,
            datatype,
            0,
            parts.local,
        ))
    }
}

/// `MPI_Comm_split` on an intercommunicator: the ranks of each color, in
/// both groups, make an intercommunicator of their own (`MPI_COMM_NULL`
/// for `MPI_UNDEFINED` and for a color the other group does not have).
/// Each group learns the other's colors and keys through the leaders,
/// splits its local group, and each color's two parts join as
/// `MPI_Intercomm_create` joins groups, their leaders meeting on the
/// channel.
pub(super) fn split(call: &str, comm: c_int, color: Option<u32>, key: c_int) -> Result<c_int> {
    let parts = parts(call, comm)?.ok_or_else(|| unsupported(comm))?;
    let mine = [color.map_or(-1, |c| c as c_int), key];
    let mut local = vec![0 as c_int; 2 * parts.local_size];
    let mut remote = vec![0 as c_int; 2 * parts.remote_size];
    let (ln, rn) = (local.len() as Count, remote.len() as Count);
    let int = MPI_INT;
    // SAFETY: the library's functions on its own communicators, with
    // buffers of the lengths given.
    unsafe {
        let at = local.as_mut_ptr().cast();
        step(super::coll::PMPI_Allgather::body(mine.as_ptr().cast(), 2, int, at, 2, int, parts.local))?;
        if parts.leads() {
            let theirs = remote.as_mut_ptr().cast();
            step(PMPI_Sendrecv_c::body(
                at,
                ln,
                int,
                0,
                CHANNEL_TAG,
                theirs,
                rn,
                int,
                0,
                CHANNEL_TAG,
                parts.channel,
                ignore(),
            ))?;
        }
        step(PMPI_Bcast_c::body(remote.as_mut_ptr().cast(), rn, int, 0, parts.local))?;
    }
    let mut state = state::lock(call)?;
    let handler = state.comm(comm)?.errhandler;
    let (local_comm, channel) = (state.comm(parts.local)?.comm.clone(), state.comm(parts.channel)?.comm.clone());
    let fail = |e: grappe_comm::Error| MpiError::from(e).on(comm);
    let Some(part) = local_comm.split(color, key).map_err(fail)? else { return Ok(abi::COMM_NULL) };
    let mut matching: Vec<(c_int, usize)> =
        remote.chunks_exact(2).enumerate().filter(|(_, e)| e[0] == mine[0]).map(|(r, e)| (e[1], r)).collect();
    matching.sort_unstable();
    let Some(&(_, remote_leader)) = matching.first() else {
        part.free();
        return Ok(abi::COMM_NULL);
    };
    let peer = (part.rank() == 0).then_some((&channel, remote_leader, SPLIT_TAG));
    let joined = part.intercomm_create(0, peer).map_err(fail);
    part.free();
    register(&mut state, joined?, handler)
}

/// MPICH's `MPI_INT`.
const MPI_INT: c_int = 0x4c000405;

/// Tag of the leaders' meeting on the channel when an intercommunicator
/// is split (the collectives use [`CHANNEL_TAG`]).
const SPLIT_TAG: c_int = 1;

mpi_fn! {
    /// `MPI_Intercomm_create_from_groups` (MPI 4): the union of both
    /// groups agrees on a communicator of its own through the world, as
    /// `MPI_Comm_create_group` does, and the local group joins the remote
    /// one through it. `stringtag` and `info` are not needed to keep
    /// concurrent creations apart: each creation's messages go between its
    /// own members only.
    fn MPI_Intercomm_create_from_groups / PMPI_Intercomm_create_from_groups(
        local_group: c_int,
        local_leader: c_int,
        remote_group: c_int,
        remote_leader: c_int,
        _stringtag: *const std::ffi::c_char,
        _info: c_int,
        errhandler: c_int,
        newintercomm: *mut c_int,
    ) {
        let mut state = state::lock("MPI_Intercomm_create_from_groups")?;
        let (local, remote) = (crate::api::group::members(&state, local_group)?, crate::api::group::members(&state, remote_group)?);
        let world = state.comm(abi::COMM_WORLD)?.comm.clone();
        let me = world.rank();
        let leader_of = |group: &[usize], leader: c_int, what: &str| {
            usize::try_from(leader).ok().filter(|&l| l < group.len()).ok_or_else(|| {
                MpiError::new(class::RANK, format!("{what} {leader} is not a rank of its group (size {})", group.len()))
            })
        };
        let (local_leader, remote_leader) = (leader_of(&local, local_leader, "local_leader")?, leader_of(&remote, remote_leader, "remote_leader")?);
        let Some(my_rank) = local.iter().position(|&w| w == me) else {
            return Err(MpiError::new(class::GROUP, format!("world rank {me} is not in local_group")));
        };
        if local.iter().any(|w| remote.contains(w)) {
            return Err(MpiError::new(class::GROUP, "local_group and remote_group share ranks"));
        }
        let mut union: Vec<usize> = local.iter().chain(&remote).copied().collect();
        union.sort_unstable();
        let fail = |e: grappe_comm::Error| MpiError::from(e);
        let both = world.create_group(&union).map_err(fail)?.expect("a member of the union");
        let own = world.create_group(&local).map_err(fail)?.expect("a member of the local group");
        let peer_rank = union.binary_search(&remote[remote_leader]).expect("the remote leader is in the union");
        let peer = (my_rank == local_leader).then_some((&both, peer_rank, 0));
        let inter = own.intercomm_create(local_leader, peer).map_err(fail);
        both.free();
        own.free();
        let handle = register(&mut state, inter?, errhandler)?;
        // SAFETY: the caller's output argument.
        unsafe { put(newintercomm, handle, "newintercomm") }
    }
}
