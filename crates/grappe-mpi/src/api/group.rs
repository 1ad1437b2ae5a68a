//! Groups: sets of ranks in order, made from communicators and from each
//! other; and the communicators made from them (`MPI_Comm_create`).
//! A group is the list of its members' world ranks.

use std::ffi::c_int;

use crate::abi::{self, class, kind};
use crate::errors::{MpiError, Result};
use crate::mpi_fn;
use crate::state::{self, Locked};

use super::{get, put};

/// The members of group `handle`.
pub(super) fn members(state: &Locked, handle: c_int) -> Result<Vec<usize>> {
    match handle {
        abi::GROUP_EMPTY => Ok(Vec::new()),
        abi::GROUP_NULL => Err(MpiError::new(class::GROUP, "MPI_GROUP_NULL is not a group")),
        _ => abi::direct_index(kind::GROUP, handle)
            .and_then(|slot| state.groups.get(slot))
            .cloned()
            .ok_or_else(|| MpiError::new(class::GROUP, format!("{handle:#x} is not a group handle (or was freed)"))),
    }
}

/// The handle of a new group (`MPI_GROUP_EMPTY` if it has no member).
fn add_group(state: &mut Locked, ranks: Vec<usize>) -> c_int {
    if ranks.is_empty() {
        return abi::GROUP_EMPTY;
    }
    abi::direct_handle(kind::GROUP, state.groups.insert(ranks))
}

/// The world ranks of communicator `comm`'s members.
pub(super) fn comm_members(comm: &grappe_comm::Communicator) -> Vec<usize> {
    (0..comm.size()).map(|r| comm.world_rank_of(r).expect("a rank of the communicator")).collect()
}

/// Writes a new group to `out`.
pub(super) fn give(state: &mut Locked, ranks: Vec<usize>, out: *mut c_int) -> Result<()> {
    let handle = add_group(state, ranks);
    // SAFETY: the caller's output argument.
    unsafe { put(out, handle, "newgroup") }
}

/// `n` ranks of a C array, each a rank of a group of `size`.
///
/// # Safety
/// `ranks` points to `n` ints.
unsafe fn rank_list<'a>(ranks: *const c_int, n: c_int, size: usize, what: &str) -> Result<&'a [c_int]> {
    if n < 0 {
        return Err(MpiError::new(class::ARG, format!("{what}: negative number of ranks {n}")));
    }
    if n == 0 {
        return Ok(&[]);
    }
    if ranks.is_null() {
        return Err(MpiError::new(class::ARG, format!("{what}: the array of ranks is NULL")));
    }
    // SAFETY: `n` ints, as the caller promised.
    let list = unsafe { std::slice::from_raw_parts(ranks, n as usize) };
    if let Some(bad) = list.iter().find(|&&r| r < 0 || r as usize >= size) {
        return Err(MpiError::new(class::RANK, format!("{what}: rank {bad} is not in a group of {size}")));
    }
    Ok(list)
}

mpi_fn! {
    /// `MPI_Comm_group`.
    fn MPI_Comm_group / PMPI_Comm_group(comm: c_int, group: *mut c_int) {
        let mut state = state::lock("MPI_Comm_group")?;
        let ranks = crate::api::intercomm::local_members(&state.comm(comm)?.comm);
        give(&mut state, ranks, group)
    }
}

mpi_fn! {
    /// `MPI_Group_size`.
    fn MPI_Group_size / PMPI_Group_size(group: c_int, size: *mut c_int) {
        let n = members(&state::lock("MPI_Group_size")?, group)?.len();
        // SAFETY: the caller's output argument.
        unsafe { put(size, n as c_int, "size") }
    }
}

mpi_fn! {
    /// `MPI_Group_rank`: `MPI_UNDEFINED` if this rank is not a member.
    fn MPI_Group_rank / PMPI_Group_rank(group: c_int, rank: *mut c_int) {
        let state = state::lock("MPI_Group_rank")?;
        let me = state.comm(abi::COMM_WORLD)?.comm.rank();
        let position = members(&state, group)?.iter().position(|&r| r == me);
        // SAFETY: the caller's output argument.
        unsafe { put(rank, position.map_or(abi::UNDEFINED, |p| p as c_int), "rank") }
    }
}

mpi_fn! {
    /// `MPI_Group_incl`.
    fn MPI_Group_incl / PMPI_Group_incl(group: c_int, n: c_int, ranks: *const c_int, newgroup: *mut c_int) {
        let mut state = state::lock("MPI_Group_incl")?;
        let of = members(&state, group)?;
        // SAFETY: `n` ranks, as MPI requires.
        let list = unsafe { rank_list(ranks, n, of.len(), "MPI_Group_incl")? };
        let mut chosen = Vec::with_capacity(list.len());
        for &r in list {
            let world = of[r as usize];
            if chosen.contains(&world) {
                return Err(MpiError::new(class::RANK, format!("MPI_Group_incl: rank {r} is listed twice")));
            }
            chosen.push(world);
        }
        give(&mut state, chosen, newgroup)
    }
}

mpi_fn! {
    /// `MPI_Group_excl`.
    fn MPI_Group_excl / PMPI_Group_excl(group: c_int, n: c_int, ranks: *const c_int, newgroup: *mut c_int) {
        let mut state = state::lock("MPI_Group_excl")?;
        let of = members(&state, group)?;
        // SAFETY: `n` ranks, as MPI requires.
        let list = unsafe { rank_list(ranks, n, of.len(), "MPI_Group_excl")? };
        let kept = of.iter().enumerate().filter(|(i, _)| !list.contains(&(*i as c_int))).map(|(_, &w)| w).collect();
        give(&mut state, kept, newgroup)
    }
}

/// The ranks of `n` triplets `first, last, stride`.
///
/// # Safety
/// `ranges` points to `n` triplets of ints.
unsafe fn ranges_of(ranges: *const [c_int; 3], n: c_int, size: usize, what: &str) -> Result<Vec<usize>> {
    if n < 0 || (n > 0 && ranges.is_null()) {
        return Err(MpiError::new(class::ARG, format!("{what}: {n} ranges at {ranges:?}")));
    }
    let mut ranks = Vec::new();
    for i in 0..n as usize {
        // SAFETY: `n` triplets, as the caller promised.
        let [first, last, stride] = unsafe { ranges.add(i).read() };
        if stride == 0 {
            return Err(MpiError::new(class::ARG, format!("{what}: range {i} has stride 0")));
        }
        let mut r = first;
        while (stride > 0 && r <= last) || (stride < 0 && r >= last) {
            if r < 0 || r as usize >= size {
                return Err(MpiError::new(class::RANK, format!("{what}: rank {r} is not in a group of {size}")));
            }
            ranks.push(r as usize);
            r += stride;
        }
    }
    Ok(ranks)
}

mpi_fn! {
    /// `MPI_Group_range_incl`.
    fn MPI_Group_range_incl / PMPI_Group_range_incl(group: c_int, n: c_int, ranges: *const [c_int; 3], newgroup: *mut c_int) {
        let mut state = state::lock("MPI_Group_range_incl")?;
        let of = members(&state, group)?;
        // SAFETY: `n` triplets, as MPI requires.
        let ranks = unsafe { ranges_of(ranges, n, of.len(), "MPI_Group_range_incl")? };
        give(&mut state, ranks.into_iter().map(|r| of[r]).collect(), newgroup)
    }
}

mpi_fn! {
    /// `MPI_Group_range_excl`.
    fn MPI_Group_range_excl / PMPI_Group_range_excl(group: c_int, n: c_int, ranges: *const [c_int; 3], newgroup: *mut c_int) {
        let mut state = state::lock("MPI_Group_range_excl")?;
        let of = members(&state, group)?;
        // SAFETY: `n` triplets, as MPI requires.
        let out = unsafe { ranges_of(ranges, n, of.len(), "MPI_Group_range_excl")? };
        let kept = of.iter().enumerate().filter(|(i, _)| !out.contains(i)).map(|(_, &w)| w).collect();
        give(&mut state, kept, newgroup)
    }
}

/// A set operation on two groups; the result's order is the first's, then the second's.
fn combine(
    call: &str,
    group1: c_int,
    group2: c_int,
    newgroup: *mut c_int,
    keep: fn(&[usize], &[usize]) -> Vec<usize>,
) -> Result<()> {
    let mut state = state::lock(call)?;
    let (a, b) = (members(&state, group1)?, members(&state, group2)?);
    give(&mut state, keep(&a, &b), newgroup)
}

mpi_fn! {
    /// `MPI_Group_union`.
    fn MPI_Group_union / PMPI_Group_union(group1: c_int, group2: c_int, newgroup: *mut c_int) {
        combine("MPI_Group_union", group1, group2, newgroup, |a, b| {
            a.iter().chain(b.iter().filter(|r| !a.contains(r))).copied().collect()
        })
    }
}

mpi_fn! {
    /// `MPI_Group_intersection`.
    fn MPI_Group_intersection / PMPI_Group_intersection(group1: c_int, group2: c_int, newgroup: *mut c_int) {
        combine("MPI_Group_intersection", group1, group2, newgroup, |a, b| a.iter().filter(|r| b.contains(r)).copied().collect())
    }
}

mpi_fn! {
    /// `MPI_Group_difference`.
    fn MPI_Group_difference / PMPI_Group_difference(group1: c_int, group2: c_int, newgroup: *mut c_int) {
        combine("MPI_Group_difference", group1, group2, newgroup, |a, b| a.iter().filter(|r| !b.contains(r)).copied().collect())
    }
}

mpi_fn! {
    /// `MPI_Group_translate_ranks`: `MPI_UNDEFINED` for a rank not in the
    /// second group, `MPI_PROC_NULL` for `MPI_PROC_NULL`.
    fn MPI_Group_translate_ranks / PMPI_Group_translate_ranks(
        group1: c_int,
        n: c_int,
        ranks1: *const c_int,
        group2: c_int,
        ranks2: *mut c_int,
    ) {
        let state = state::lock("MPI_Group_translate_ranks")?;
        let (a, b) = (members(&state, group1)?, members(&state, group2)?);
        if n < 0 || (n > 0 && (ranks1.is_null() || ranks2.is_null())) {
            return Err(MpiError::new(class::ARG, format!("MPI_Group_translate_ranks: {n} ranks at {ranks1:?} -> {ranks2:?}")));
        }
        for i in 0..n as usize {
            // SAFETY: `n` ranks in and out, as MPI requires.
            let r = unsafe { ranks1.add(i).read() };
            let translated = match r {
                abi::PROC_NULL => abi::PROC_NULL,
                r if r < 0 || r as usize >= a.len() => {
                    return Err(MpiError::new(class::RANK, format!("MPI_Group_translate_ranks: rank {r} is not in a group of {}", a.len())));
                }
                r => b.iter().position(|&w| w == a[r as usize]).map_or(abi::UNDEFINED, |p| p as c_int),
            };
            // SAFETY: as above.
            unsafe { ranks2.add(i).write(translated) };
        }
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Group_compare`.
    fn MPI_Group_compare / PMPI_Group_compare(group1: c_int, group2: c_int, result: *mut c_int) {
        let state = state::lock("MPI_Group_compare")?;
        let (a, b) = (members(&state, group1)?, members(&state, group2)?);
        let verdict = if a == b {
            abi::IDENT
        } else if a.len() == b.len() && a.iter().all(|r| b.contains(r)) {
            abi::SIMILAR
        } else {
            abi::UNEQUAL
        };
        // SAFETY: the caller's output argument.
        unsafe { put(result, verdict, "result") }
    }
}

mpi_fn! {
    /// `MPI_Group_free`: the handle becomes `MPI_GROUP_NULL`.
    fn MPI_Group_free / PMPI_Group_free(group: *mut c_int) {
        // SAFETY: the caller's in-out argument.
        let handle = unsafe { get(group, "group")? };
        let mut state = state::lock("MPI_Group_free")?;
        if handle != abi::GROUP_EMPTY {
            members(&state, handle)?;
            let slot = abi::direct_index(kind::GROUP, handle).expect("checked by members");
            state.groups.remove(slot);
        }
        // SAFETY: the caller's in-out argument.
        unsafe { put(group, abi::GROUP_NULL, "group") }
    }
}

mpi_fn! {
    /// `MPI_Comm_create`: collective over `comm`; members of `group` get
    /// the new communicator (in the group's order), the others
    /// `MPI_COMM_NULL`.
    fn MPI_Comm_create / PMPI_Comm_create(comm: c_int, group: c_int, newcomm: *mut c_int) {
        let state = state::lock("MPI_Comm_create")?;
        if state.comm(comm)?.comm.is_inter() {
            // Each group passes a group of its own ranks: the members of
            // both make an intercommunicator, as a split with one color.
            let ranks = members(&state, group).map_err(|e| e.on(comm))?;
            let local = crate::api::intercomm::local_members(&state.comm(comm)?.comm);
            if let Some(stranger) = ranks.iter().find(|r| !local.contains(r)) {
                return Err(MpiError::new(class::GROUP, format!("MPI_Comm_create: world rank {stranger} of the group is not in the local group")).on(comm));
            }
            let me = local[state.comm(comm)?.comm.rank()];
            let position = ranks.iter().position(|&r| r == me);
            drop(state);
            let handle = crate::api::intercomm::split("MPI_Comm_create", comm, position.map(|_| 0), position.unwrap_or(0) as c_int)?;
            // SAFETY: the caller's output argument.
            return unsafe { put(newcomm, handle, "newcomm") };
        }
        let entry = state.intra(comm)?;
        let ranks = members(&state, group).map_err(|e| e.on(comm))?;
        let of = comm_members(&entry.comm);
        if let Some(stranger) = ranks.iter().find(|r| !of.contains(r)) {
            return Err(MpiError::new(class::GROUP, format!("MPI_Comm_create: world rank {stranger} of the group is not in the communicator")).on(comm));
        }
        let me = of[entry.comm.rank()];
        let position = ranks.iter().position(|&r| r == me);
        // Ranks may pass disjoint groups (MPI 2.2), one communicator each:
        // a group's smallest world rank tells it from the others.
        let color = position.and_then(|_| ranks.iter().min()).map(|&lowest| lowest as u32);
        drop(state);
        let handle = crate::api::comm::split_intra("MPI_Comm_create", comm, color, position.unwrap_or(0) as c_int)?;
        // SAFETY: the caller's output argument.
        unsafe { put(newcomm, handle, "newcomm") }
    }
}

mpi_fn! {
    /// `MPI_Comm_create_group`: collective over the group's members only;
    /// a rank outside the group gets `MPI_COMM_NULL`. `tag` tells apart
    /// the creations that threads of one rank make at once, at
    /// `MPI_THREAD_MULTIPLE`. The members agree on its context as an
    /// idup's do, apart from the communicator's other agreements: a member
    /// may have started an `MPI_Comm_idup` of the communicator that the
    /// others only start after this call (the call is not one of the
    /// communicator's collectives), which a blocking agreement, waiting
    /// for this rank's idups first, would never see end.
    fn MPI_Comm_create_group / PMPI_Comm_create_group(comm: c_int, group: c_int, tag: c_int, newcomm: *mut c_int) {
        let mut state = state::lock("MPI_Comm_create_group")?;
        let entry = state.intra(comm)?;
        if tag < 0 {
            return Err(MpiError::new(class::TAG, format!("MPI_Comm_create_group: tag {tag} is negative")).on(comm));
        }
        let ranks = members(&state, group).map_err(|e| e.on(comm))?;
        let of = comm_members(&entry.comm);
        let mut positions = Vec::with_capacity(ranks.len());
        for world in &ranks {
            let Some(position) = of.iter().position(|r| r == world) else {
                return Err(MpiError::new(class::GROUP, format!("MPI_Comm_create_group: world rank {world} of the group is not in the communicator")).on(comm));
            };
            positions.push(position);
        }
        let handler = entry.errhandler;
        let parent = entry.comm.clone();
        let (locked, created) = create_group_agreed("MPI_Comm_create_group", state, parent, &positions, tag).map_err(|e| e.on(comm))?;
        state = locked;
        let handle = match created {
            Some(created) => state.add_comm(created, handler),
            None => abi::COMM_NULL,
        };
        // SAFETY: the caller's output argument.
        unsafe { put(newcomm, handle, "newcomm") }
    }
}

/// A communicator of `positions` (ranks of `parent`, in the new one's
/// order) that only they make, `None` at a rank outside them: the members
/// agree on its context as an idup's do, at `tag`, outside the lock (see
/// `comm::split_intra`), apart from the other agreements under way (the
/// blocking `create_group` waits for this rank's pending idups first, which
/// the other members may only start after this call, and never returns).
pub(super) fn create_group_agreed(
    call: &str,
    state: Locked,
    parent: grappe_comm::Communicator,
    positions: &[usize],
    tag: c_int,
) -> Result<(Locked, Option<grappe_comm::Communicator>)> {
    let Some((request, pending)) = parent.start_create_group(state.scope, positions, tag).map_err(MpiError::from)?
    else {
        return Ok((state, None));
    };
    let (state, (pending, parent)) = crate::api::comm::agreed_outside(call, state, request, (pending, parent))?;
    let made = pending.finish();
    drop(parent);
    let message = "the context agreement of the communicator did not complete";
    Ok((state, Some(made.ok_or_else(|| MpiError::new(class::INTERN, message))?)))
}

/// The info key naming a hardware resource (MPI 4), and the one resource
/// grappe knows: the memory its ranks on one host share.
const HW_RESOURCE_TYPE: &str = "mpi_hw_resource_type";
const SHARED_MEMORY: &str = "mpi_shared_memory";

mpi_fn! {
    /// `MPI_Comm_split_type`: `MPI_COMM_TYPE_SHARED` groups the ranks that
    /// share memory, those of one host. MPI 4's `MPI_COMM_TYPE_HW_GUIDED`
    /// does too when the info's `mpi_hw_resource_type` is
    /// `mpi_shared_memory`, the one resource grappe knows (any other value,
    /// or none, gives `MPI_COMM_NULL`); `MPI_COMM_TYPE_HW_UNGUIDED` splits a
    /// communicator that spans hosts by host, naming the resource in the
    /// info, and gives `MPI_COMM_NULL` to one inside a host (no smaller
    /// resource is known).
    fn MPI_Comm_split_type / PMPI_Comm_split_type(comm: c_int, split_type: c_int, key: c_int, info: c_int, newcomm: *mut c_int) {
        let color = {
            let state = state::lock("MPI_Comm_split_type")?;
            let on_host = |state: &Locked| state.comm(comm).map(|entry| Some(entry.comm.host_color()));
            match split_type {
                abi::UNDEFINED => None,
                abi::COMM_TYPE_SHARED => on_host(&state)?,
                abi::COMM_TYPE_HW_GUIDED => {
                    let resource = crate::api::info::value(info, HW_RESOURCE_TYPE).map_err(|e| e.on(comm))?;
                    match resource {
                        Some(resource) if resource == SHARED_MEMORY => on_host(&state)?,
                        _ => None,
                    }
                }
                abi::COMM_TYPE_HW_UNGUIDED if state.comm(comm)?.comm.spans_hosts() => {
                    if info != abi::INFO_NULL {
                        crate::api::info::set(info, HW_RESOURCE_TYPE, SHARED_MEMORY).map_err(|e| e.on(comm))?;
                    }
                    on_host(&state)?
                }
                abi::COMM_TYPE_HW_UNGUIDED => None,
                other => return Err(MpiError::new(class::ARG, format!("split type {other} is not MPI_COMM_TYPE_SHARED, MPI_COMM_TYPE_HW_GUIDED, MPI_COMM_TYPE_HW_UNGUIDED or MPI_UNDEFINED")).on(comm)),
            }
        };
        if state::lock("MPI_Comm_split_type")?.comm(comm)?.comm.is_inter() {
            let handle = crate::api::intercomm::split("MPI_Comm_split_type", comm, color, key)?;
            // SAFETY: the caller's output argument.
            return unsafe { put(newcomm, handle, "newcomm") };
        }
        let handle = crate::api::comm::split_intra("MPI_Comm_split_type", comm, color, key)?;
        // SAFETY: the caller's output argument.
        unsafe { put(newcomm, handle, "newcomm") }
    }
}
