//! Communicators: size and rank, dup, split, free, compare, names and
//! the predefined attributes.

use std::ffi::{c_char, c_int, c_void};

use crate::abi::{self, class};
use crate::errors::MpiError;
use crate::mpi_fn;
use crate::state;

use super::env::{copy_string, read_string};
use super::{get, put};

mpi_fn! {
    /// `MPI_Comm_size`.
    fn MPI_Comm_size / PMPI_Comm_size(comm: c_int, size: *mut c_int) {
        let state = state::lock("MPI_Comm_size")?;
        let n = crate::api::intercomm::local_size(&state.local_comm(comm)?.comm) as c_int;
        // SAFETY: the caller's output argument.
        unsafe { put(size, n, "size") }.map_err(|e| e.on(comm))
    }
}

mpi_fn! {
    /// `MPI_Comm_rank`.
    fn MPI_Comm_rank / PMPI_Comm_rank(comm: c_int, rank: *mut c_int) {
        let state = state::lock("MPI_Comm_rank")?;
        let me = state.local_comm(comm)?.comm.rank() as c_int;
        // SAFETY: the caller's output argument.
        unsafe { put(rank, me, "rank") }.map_err(|e| e.on(comm))
    }
}

mpi_fn! {
    /// `MPI_Comm_dup`: same group, new context; keeps the error handler.
    fn MPI_Comm_dup / PMPI_Comm_dup(comm: c_int, newcomm: *mut c_int) {
        // SAFETY: the caller's output argument: MPI_COMM_NULL if the dup fails.
        unsafe { put(newcomm, abi::COMM_NULL, "newcomm")? };
        let handle = duplicate("MPI_Comm_dup", comm)?;
        // SAFETY: the caller's output argument.
        unsafe { put(newcomm, handle, "newcomm") }
    }
}

/// A duplicate of `comm`, with its error handler, topology and attributes
/// (copied by their keys' callbacks, without the lock): its handle.
pub(super) fn duplicate(call: &str, comm: c_int) -> crate::errors::Result<c_int> {
    if crate::waiting::multiple() {
        return duplicate_outside(call, comm);
    }
    let handle = {
        let mut state = state::lock(call)?;
        let entry = state.comm(comm)?;
        let (handler, topology) = (entry.errhandler, entry.topology.clone());
        let dup = entry.comm.dup().map_err(|e| MpiError::from(e).on(comm))?;
        let handle = match dup.is_inter() {
            true => crate::api::intercomm::register(&mut state, dup, handler).map_err(|e| e.on(comm))?,
            false => state.add_comm(dup, handler),
        };
        let slot = state.comm_slot(handle)?;
        state.comms.get_mut(slot).expect("just added").topology = topology;
        handle
    };
    let copied =
        crate::api::attr::copy_attrs(crate::api::attr::Object::Comm(comm), crate::api::attr::Object::Comm(handle));
    if let Err(e) = copied {
        // A copy callback failed: the duplicate goes (as under MPICH, the
        // program gets MPI_COMM_NULL with the error).
        release(handle)?;
        return Err(e.on(comm));
    }
    Ok(handle)
}

/// [`duplicate`] under `MPI_THREAD_MULTIPLE`: an idup waited for with
/// the lock let go. A duplicate made under the lock would keep the
/// process's other threads out of MPI until the other members joined,
/// and they may be waiting for one of those threads: two threads of
/// each rank duplicating two communicators, in opposite orders on two
/// ranks, would wait for each other forever. The idup's agreement also
/// stays right beside other creations under way at the members.
fn duplicate_outside(call: &str, comm: c_int) -> crate::errors::Result<c_int> {
    let (mut handle, mut request) = (abi::COMM_NULL, abi::REQUEST_NULL);
    duplicate_later(call, comm, &mut handle, &mut request)?;
    crate::api::request::wait_own(call, request)?;
    Ok(handle)
}

/// A split of intracommunicator `comm` (`MPI_Comm_split`, and
/// `MPI_Comm_create` and `MPI_Comm_split_type`, which are splits): the
/// handle of this rank's part, `MPI_COMM_NULL` if `color` is `None`.
/// Under `MPI_THREAD_MULTIPLE` the members agree as an idup's do, waited
/// for with the lock let go, for the reasons [`duplicate_outside`] gives.
pub(super) fn split_intra(call: &str, comm: c_int, color: Option<u32>, key: c_int) -> crate::errors::Result<c_int> {
    let mut state = state::lock(call)?;
    let entry = state.intra(comm)?;
    let (handler, parent) = (entry.errhandler, entry.comm.clone());
    let fail = |e: grappe_comm::Error| MpiError::from(e).on(comm);
    if !crate::waiting::multiple() {
        let part = parent.split(color, key).map_err(fail)?;
        return Ok(part.map_or(abi::COMM_NULL, |part| state.add_comm(part, handler)));
    }
    let (request, pending) = parent.start_split(state.scope, color, key).map_err(fail)?;
    let (mut state, (pending, parent)) =
        agreed_outside(call, state, request, (pending, parent)).map_err(|e| e.on(comm))?;
    let part = pending.finish();
    drop(parent);
    let message = "the context agreement of the split did not complete";
    let part = part.ok_or_else(|| MpiError::new(class::INTERN, message).on(comm))?;
    Ok(part.map_or(abi::COMM_NULL, |part| state.add_comm(part, handler)))
}

/// Waits for the agreement of `request` with the lock let go (see
/// [`crate::waiting`]); the lock again once it completed, with `keep`:
/// what the caller holds of the engine (communicators, pending
/// creations), which, as the request, is only dropped under the lock, so
/// that a failed wait drops it under the lock taken again.
pub(super) fn agreed_outside<K>(
    call: &str,
    state: state::Locked,
    request: grappe_comm::Request<'static>,
    keep: K,
) -> crate::errors::Result<(state::Locked, K)> {
    match crate::waiting::until(call, state, |_| Ok(request.is_complete().then_some(()))) {
        Ok((state, ())) => match request.wait() {
            Ok(_) => Ok((state, keep)),
            Err(error) => {
                drop(keep);
                drop(state);
                Err(MpiError::from(error))
            }
        },
        Err(error) => {
            match state::lock(call) {
                Ok(mut state) => {
                    state.freed.push((request, None, None));
                    drop(keep);
                }
                Err(_) => std::mem::forget((request, keep)),
            }
            Err(error)
        }
    }
}

/// Frees communicator `handle` and its slot: one whose attributes were
/// deleted, or one the library made but the program never got.
fn release(handle: c_int) -> crate::errors::Result<()> {
    let mut state = state::lock("MPI_Comm_free")?;
    let slot = state.comm_slot(handle)?;
    let entry = state.comms.remove(slot).expect("checked by comm_slot");
    entry.comm.free();
    if let Some(private) = entry.neighbours {
        private.free();
    }
    if let Some(parts) = entry.inter {
        crate::api::intercomm::unregister(&mut state, parts);
    }
    Ok(())
}

/// An `MPI_Comm_idup` under way: the agreement on the duplicate's
/// contexts (see `grappe_comm::PendingDup`), and the handle it takes.
pub struct DupUnderWay {
    /// The agreement's request; `None` once a wait for any of several
    /// requests completed it.
    pub request: Option<grappe_comm::Request<'static>>,
    /// The communicator duplicated.
    pub parent: c_int,
    /// The duplicate's handle, given to the program at the call (as MPICH
    /// does), usable once the request completed.
    pub handle: c_int,
    pub pending: grappe_comm::PendingDup,
}

/// `MPI_Comm_idup(_with_info)`: starts the agreement on the duplicate's
/// contexts, which the rank's progress moves on in any later call; the
/// handle is the program's at once, the communicator behind it is made
/// when the request completes (see [`finish_dup`]).
fn duplicate_later(call: &str, comm: c_int, newcomm: *mut c_int, request: *mut c_int) -> crate::errors::Result<()> {
    if request.is_null() {
        return Err(MpiError::new(class::REQUEST, format!("{call}: the request argument is NULL")));
    }
    // SAFETY: the caller's output argument: MPI_COMM_NULL if the idup fails.
    unsafe { put(newcomm, abi::COMM_NULL, "newcomm")? };
    let mut state = state::lock(call)?;
    let entry = state.comm(comm)?;
    let (handler, topology, parent) = (entry.errhandler, entry.topology.clone(), entry.comm.clone());
    // An intercommunicator's duplicate comes with the library's channel
    // beside it (see `intercomm::register`).
    let copies = if parent.is_inter() { 2 } else { 1 };
    let (started, pending) = parent.start_dup(state.scope, copies).map_err(|e| MpiError::from(e).on(comm))?;
    let handle = state.add_comm(parent, handler);
    let slot = state.comm_slot(handle)?;
    let entry = state.comms.get_mut(slot).expect("just added");
    (entry.topology, entry.pending) = (topology, true);
    let under_way = DupUnderWay { request: Some(started), parent: comm, handle, pending };
    let now = Some(state::RequestEntry::Dup(Box::new(under_way)));
    let request_handle = state.add_request(state::RequestSlot { now, persistent: None });
    // SAFETY: the caller's output arguments, `request` checked non-NULL.
    unsafe {
        put(newcomm, handle, "newcomm")?;
        put(request, request_handle, "request")
    }
}

/// Completes an `MPI_Comm_idup`: waits for its agreement, makes the
/// communicator behind its handle and copies the attributes (their
/// callbacks run without the lock). The handle goes if the agreement
/// failed.
pub(super) fn finish_dup(state: &mut state::Locked, dup: DupUnderWay) -> crate::errors::Result<abi::Status> {
    let DupUnderWay { request, parent, handle, pending } = dup;
    let slot = state.pending_comm_slot(handle).expect("an idup's handle stays pending until it completes");
    if let Some(Err(e)) = request.map(grappe_comm::Request::wait) {
        state.comms.remove(slot);
        return Err(MpiError::from(e).on(parent));
    }
    let Some(made) = pending.finish() else {
        state.comms.remove(slot);
        let message = "the context agreement of the duplicate did not complete";
        return Err(MpiError::new(class::INTERN, message).on(parent));
    };
    let mut made = made.into_iter();
    let dup = made.next().expect("one duplicate at least");
    if let Some(channel) = made.next() {
        crate::api::intercomm::attach_parts(state, slot, &dup, channel);
    }
    let entry = state.comms.get_mut(slot).expect("pending");
    (entry.comm, entry.pending) = (dup, false);
    let copied = state.let_go_during(|| {
        crate::api::attr::copy_attrs(crate::api::attr::Object::Comm(parent), crate::api::attr::Object::Comm(handle))
    });
    copied.map(|()| super::empty_status())
}

mpi_fn! {
    /// `MPI_Comm_idup` (see `duplicate_later`).
    fn MPI_Comm_idup / PMPI_Comm_idup(comm: c_int, newcomm: *mut c_int, request: *mut c_int) {
        duplicate_later("MPI_Comm_idup", comm, newcomm, request)
    }
}

mpi_fn! {
    /// `MPI_Comm_idup_with_info` (grappe takes no hints yet).
    fn MPI_Comm_idup_with_info / PMPI_Comm_idup_with_info(comm: c_int, _info: c_int, newcomm: *mut c_int, request: *mut c_int) {
        duplicate_later("MPI_Comm_idup_with_info", comm, newcomm, request)
    }
}

mpi_fn! {
    /// `MPI_Comm_split`: `MPI_UNDEFINED` as color gives `MPI_COMM_NULL`.
    fn MPI_Comm_split / PMPI_Comm_split(comm: c_int, color: c_int, key: c_int, newcomm: *mut c_int) {
        let color = match color {
            abi::UNDEFINED => None,
            c if c < 0 => {
                return Err(MpiError::new(class::ARG, format!("color {c} is negative and not MPI_UNDEFINED")).on(comm));
            }
            c => Some(c as u32),
        };
        if state::lock("MPI_Comm_split")?.comm(comm)?.comm.is_inter() {
            let handle = crate::api::intercomm::split("MPI_Comm_split", comm, color, key)?;
            // SAFETY: the caller's output argument.
            return unsafe { put(newcomm, handle, "newcomm") };
        }
        let handle = split_intra("MPI_Comm_split", comm, color, key)?;
        // SAFETY: the caller's output argument.
        unsafe { put(newcomm, handle, "newcomm") }
    }
}

mpi_fn! {
    /// `MPI_Comm_free`: sets the handle to `MPI_COMM_NULL`.
    fn MPI_Comm_free / PMPI_Comm_free(comm: *mut c_int) {
        // SAFETY: the caller's in-out argument.
        let handle = unsafe { get(comm, "comm")? };
        if state::lock("MPI_Comm_free")?.comm_slot(handle)? < 2 {
            return Err(MpiError::new(class::COMM, "MPI_COMM_WORLD and MPI_COMM_SELF cannot be freed"));
        }
        crate::api::attr::delete_all(crate::api::attr::Object::Comm(handle))?;
        release(handle)?;
        // SAFETY: the caller's in-out argument.
        unsafe { put(comm, abi::COMM_NULL, "comm") }
    }
}

mpi_fn! {
    /// `MPI_Comm_disconnect`: once every rank of the communicator called
    /// it (its messages, sent by blocking calls or completed requests, are
    /// then all received), frees it. Collective.
    fn MPI_Comm_disconnect / PMPI_Comm_disconnect(comm: *mut c_int) {
        // SAFETY: the caller's in-out argument.
        let handle = unsafe { get(comm, "comm")? };
        if state::lock("MPI_Comm_disconnect")?.comm_slot(handle)? < 2 {
            return Err(MpiError::new(class::COMM, "MPI_COMM_WORLD and MPI_COMM_SELF cannot be disconnected"));
        }
        // SAFETY: plain values, as MPI_Barrier takes them.
        let rc = unsafe { crate::api::coll::PMPI_Barrier::body(handle) };
        if rc != abi::SUCCESS {
            return Err(MpiError::new(crate::errors::class_of_code(rc).unwrap_or(class::OTHER), format!("the barrier before the disconnection failed: {}", crate::errors::string_of_code(rc).unwrap_or_default())).on(handle));
        }
        // SAFETY: the caller's in-out argument, as MPI_Comm_free takes it.
        match unsafe { PMPI_Comm_free::body(comm) } {
            abi::SUCCESS => Ok(()),
            rc => Err(MpiError::new(crate::errors::class_of_code(rc).unwrap_or(class::OTHER), crate::errors::string_of_code(rc).unwrap_or_default()).on(handle)),
        }
    }
}

mpi_fn! {
    /// `MPI_Comm_compare`.
    fn MPI_Comm_compare / PMPI_Comm_compare(comm1: c_int, comm2: c_int, result: *mut c_int) {
        let state = state::lock("MPI_Comm_compare")?;
        let (a, b) = (&state.comm(comm1)?.comm, &state.comm(comm2)?.comm);
        // An intercommunicator's groups are compared one with the other's
        // (MPI: local with local, remote with remote); one is never like an
        // intracommunicator.
        let groups = |c: &grappe_comm::Communicator| -> Vec<Vec<usize>> {
            let remote = crate::api::group::comm_members(c);
            match c.local_comm() {
                Some(local) => vec![crate::api::group::comm_members(local), remote],
                None => vec![remote],
            }
        };
        let (ga, gb) = (groups(a), groups(b));
        let sorted_all = |g: &[Vec<usize>]| g.iter().cloned().map(sorted).collect::<Vec<_>>();
        let verdict = if comm1 == comm2 {
            abi::IDENT
        } else if ga == gb {
            abi::CONGRUENT
        } else if sorted_all(&ga) == sorted_all(&gb) {
            abi::SIMILAR
        } else {
            abi::UNEQUAL
        };
        // SAFETY: the caller's output argument.
        unsafe { put(result, verdict, "result") }
    }
}

fn sorted(mut v: Vec<usize>) -> Vec<usize> {
    v.sort_unstable();
    v
}

mpi_fn! {
    /// `MPI_Comm_set_name`.
    fn MPI_Comm_set_name / PMPI_Comm_set_name(comm: c_int, name: *const c_char) {
        // SAFETY: a NUL-terminated string, as MPI requires.
        let name = unsafe { read_string(name, "name")? };
        let mut state = state::lock("MPI_Comm_set_name")?;
        let slot = state.local_comm_slot(comm)?;
        state.comms.get_mut(slot).expect("checked by comm_slot").name = name;
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Comm_get_name`: empty for a communicator never named.
    fn MPI_Comm_get_name / PMPI_Comm_get_name(comm: c_int, name: *mut c_char, resultlen: *mut c_int) {
        let state = state::lock("MPI_Comm_get_name")?;
        let text = &state.local_comm(comm)?.name;
        // SAFETY: `name` holds MPI_MAX_OBJECT_NAME characters, as MPI requires.
        let len = unsafe { copy_string(text, name, abi::MAX_OBJECT_NAME, "name")? };
        // SAFETY: the caller's output argument.
        unsafe { put(resultlen, len, "resultlen") }
    }
}

/// The values of the predefined attributes, which MPI hands out by address.
static TAG_UB_VALUE: c_int = c_int::MAX;
static WTIME_IS_GLOBAL_VALUE: c_int = 0;
static HOST_VALUE: c_int = abi::PROC_NULL;
static IO_VALUE: c_int = abi::ANY_SOURCE;
static APPNUM_VALUE: c_int = 0;
static UNIVERSE_SIZE_VALUE: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

mpi_fn! {
    /// `MPI_Comm_get_attr`: the predefined attributes (`MPI_TAG_UB`,
    /// `MPI_WTIME_IS_GLOBAL`, `MPI_UNIVERSE_SIZE`, `MPI_APPNUM`, `MPI_HOST`,
    /// `MPI_IO`, `MPI_LASTUSEDCODE`) and those the program set.
    fn MPI_Comm_get_attr / PMPI_Comm_get_attr(comm: c_int, keyval: c_int, value: *mut c_void, flag: *mut c_int) {
        get_attr("MPI_Comm_get_attr", comm, keyval, value, flag)
    }
}

mpi_fn! {
    /// `MPI_Attr_get` (MPI-1's name).
    fn MPI_Attr_get / PMPI_Attr_get(comm: c_int, keyval: c_int, value: *mut c_void, flag: *mut c_int) {
        get_attr("MPI_Attr_get", comm, keyval, value, flag)
    }
}

pub(super) fn get_attr(
    call: &str,
    comm: c_int,
    keyval: c_int,
    value: *mut c_void,
    flag: *mut c_int,
) -> crate::errors::Result<()> {
    // MPICH's predefined keys come in pairs: C's (odd, `MPI_TAG_UB` is
    // 0x64400001) and Fortran's (the even one after it).
    let predefined_fortran = (keyval as u32 & 0xffff_fff0) == 0x6440_0000 && keyval & 0xf != 0 && keyval & 1 == 0;
    let keyval = if predefined_fortran { keyval - 1 } else { keyval };
    {
        let state = state::lock(call)?;
        let size = state.comm(abi::COMM_WORLD)?.comm.size();
        state.comm(comm)?;
        UNIVERSE_SIZE_VALUE.store(size as c_int, std::sync::atomic::Ordering::Relaxed);
        let address: *const c_int = match keyval {
            abi::TAG_UB => &TAG_UB_VALUE,
            abi::WTIME_IS_GLOBAL => &WTIME_IS_GLOBAL_VALUE,
            abi::HOST => &HOST_VALUE,
            abi::IO => &IO_VALUE,
            abi::APPNUM => &APPNUM_VALUE,
            abi::LASTUSEDCODE => crate::errors::LAST_USED_CODE.as_ptr(),
            abi::UNIVERSE_SIZE => UNIVERSE_SIZE_VALUE.as_ptr(),
            user => {
                let found = crate::api::attr::user_attr(&state, crate::api::attr::Object::Comm(comm), user)?;
                // SAFETY: the caller's output arguments; `value` is where
                // MPI stores the attribute (a pointer).
                unsafe {
                    if let Some(found) = found {
                        put(value.cast::<usize>(), found, "attribute_val")?;
                    }
                    return put(flag, found.is_some() as c_int, "flag");
                }
            }
        };
        // SAFETY: the caller's output arguments; `value` is where MPI
        // stores the attribute's address.
        unsafe {
            put(value.cast::<*const c_int>(), address, "attribute_val")?;
            put(flag, 1, "flag")
        }
    }
}
