//! Generalized requests (`MPI_Grequest_start`): operations the program
//! runs itself (an I/O library's, often) behind a request that waits,
//! tests and the completion calls treat as any other. The program says
//! when the operation is over with `MPI_Grequest_complete`; a wait then
//! asks its query function for the status and its free function to let go
//! of its state. The callbacks run with the library's state let go, since
//! they may call MPI functions (`MPI_Status_set_elements`...).
//!
//! Below `MPI_THREAD_MULTIPLE` no call can overlap a wait, so nothing can
//! complete a generalized request while a wait is under way: a wait on
//! one that is not complete fails, saying so, instead of waiting forever.

use std::ffi::{c_int, c_void};

use crate::abi::{self, class, kind};
use crate::errors::{MpiError, Result, class_of_code, string_of_code};
use crate::mpi_fn;
use crate::state::{self, Generalized, GrequestCancel, GrequestFree, GrequestQuery, Locked, RequestEntry, RequestSlot};

use super::{empty_status, put};

mpi_fn! {
    /// `MPI_Grequest_start`.
    fn MPI_Grequest_start / PMPI_Grequest_start(
        query: Option<GrequestQuery>,
        free: Option<GrequestFree>,
        cancel: Option<GrequestCancel>,
        extra_state: *mut c_void,
        request: *mut c_int,
    ) {
        if request.is_null() {
            return Err(MpiError::new(class::ARG, "the request argument is NULL"));
        }
        let mut state = state::lock("MPI_Grequest_start")?;
        let extra_state = extra_state as usize;
        let started =
            Generalized { query, free, cancel, extra_state, complete: false, freed: false, fortran: false };
        let entry = RequestEntry::Generalized(Box::new(started));
        let handle = state.add_request(RequestSlot { now: Some(entry), persistent: None });
        // SAFETY: the caller's output argument, checked non-NULL.
        unsafe { put(request, handle, "request") }
    }
}

mpi_fn! {
    /// `MPI_Grequest_complete`: a wait on the request may now return; a
    /// request freed before is let go now.
    fn MPI_Grequest_complete / PMPI_Grequest_complete(request: c_int) {
        let mut state = state::lock("MPI_Grequest_complete")?;
        let slot = generalized_slot(&state, request)?;
        let Some(RequestEntry::Generalized(found)) = state.requests.get_mut(slot).and_then(|r| r.now.as_mut()) else {
            return Err(not_generalized(request));
        };
        if found.complete {
            return Err(MpiError::new(class::REQUEST, format!("generalized request {request:#x} was completed already")));
        }
        found.complete = true;
        if !found.freed {
            return Ok(());
        }
        let Some(RequestEntry::Generalized(found)) = state.requests.remove(slot).and_then(|r| r.now) else {
            return Err(not_generalized(request));
        };
        call_free(&mut state, &found)
    }
}

/// The slot of generalized request `handle`.
fn generalized_slot(state: &Locked, handle: c_int) -> Result<usize> {
    let slot = abi::direct_index(kind::REQUEST, handle).ok_or_else(|| not_generalized(handle))?;
    match state.requests.get(slot).and_then(|r| r.now.as_ref()) {
        Some(RequestEntry::Generalized(_)) => Ok(slot),
        _ => Err(not_generalized(handle)),
    }
}

fn not_generalized(handle: c_int) -> MpiError {
    MpiError::new(class::REQUEST, format!("{handle:#x} is not a generalized request (MPI_Grequest_start)"))
}

/// The error of a wait that would never end.
pub(super) fn not_complete() -> MpiError {
    MpiError::new(
        class::REQUEST,
        "waiting for a generalized request that MPI_Grequest_complete has not completed: below \
         MPI_THREAD_MULTIPLE no other call can run meanwhile to complete it, so the wait would never end",
    )
}

/// The status of a completed generalized request, from its query
/// function; if `free`, its free function is called after (the request
/// is gone).
pub(super) fn status_of(state: &mut Locked, found: &Generalized, free: bool) -> Result<abi::Status> {
    let mut status = empty_status();
    if let Some(query) = found.query {
        let extra = found.extra_state as *mut c_void;
        let fortran = found.fortran;
        // SAFETY: the program's function, with the arguments MPI defines
        // in the language it was started from.
        let code = state.let_go_during(|| unsafe { call_query(query, fortran, extra, &mut status) });
        callback_outcome(code, "query")?;
    }
    if free {
        call_free(state, found)?;
    }
    Ok(status)
}

/// Calls the request's free function.
fn call_free(state: &mut Locked, found: &Generalized) -> Result<()> {
    let Some(free) = found.free else { return Ok(()) };
    let extra = found.extra_state as *mut c_void;
    let fortran = found.fortran;
    // SAFETY: the program's function, with the argument MPI defines in the
    // language it was started from.
    let code = state.let_go_during(|| unsafe { call_free_fn(free, fortran, extra) });
    callback_outcome(code, "free")
}

/// `MPI_Cancel` of a generalized request: its cancel function is told
/// whether it completed.
pub(super) fn cancel(state: &mut Locked, found: &Generalized) -> Result<()> {
    let Some(cancel) = found.cancel else { return Ok(()) };
    let (extra, complete) = (found.extra_state as *mut c_void, found.complete as c_int);
    let fortran = found.fortran;
    // SAFETY: the program's function, with the arguments MPI defines in
    // the language it was started from.
    let code = state.let_go_during(|| unsafe { call_cancel(cancel, fortran, extra, complete) });
    callback_outcome(code, "cancel")
}

/// `MPII_Grequest_set_lang_f77`: MPICH's Fortran library says that the
/// request it has just started has Fortran callbacks (a handle that is not
/// a generalized request is left alone).
pub(super) fn set_fortran(request: c_int) -> Result<()> {
    let mut state = state::lock("MPI_Grequest_start")?;
    let Some(slot) = abi::direct_index(kind::REQUEST, request) else { return Ok(()) };
    if let Some(RequestEntry::Generalized(found)) = state.requests.get_mut(slot).and_then(|r| r.now.as_mut()) {
        found.fortran = true;
    }
    Ok(())
}

/// The Fortran forms of the three callbacks (MPICH's
/// `MPIR_Grequest_f77_*_function`): every argument by reference, the error
/// code written to the last. A Fortran status is the C one (MPICH's
/// `MPI_STATUS_SIZE` is 5, its layout `MPI_Status`'s).
type FortranQuery = unsafe extern "C" fn(extra_state: *mut c_void, status: *mut abi::Status, ierr: *mut c_int);
type FortranFree = unsafe extern "C" fn(extra_state: *mut c_void, ierr: *mut c_int);
type FortranCancel = unsafe extern "C" fn(extra_state: *mut c_void, complete: *mut c_int, ierr: *mut c_int);

/// Calls a query function in the language it was written in.
///
/// # Safety
/// `query` is the program's function of that language; `status` is
/// writable.
unsafe fn call_query(query: GrequestQuery, fortran: bool, extra: *mut c_void, status: *mut abi::Status) -> c_int {
    if !fortran {
        // SAFETY: as the caller promises.
        return unsafe { query(extra, status) };
    }
    // SAFETY: MPICH's Fortran library passed a Fortran subroutine as the C
    // function pointer (it casts it the same way); the call gives it the
    // arguments of its own form.
    let query: FortranQuery = unsafe { std::mem::transmute::<GrequestQuery, FortranQuery>(query) };
    let mut ierr = abi::SUCCESS;
    // SAFETY: as above; `ierr` lives across the call.
    unsafe { query(extra, status, &mut ierr) };
    ierr
}

/// Calls a free function in the language it was written in.
///
/// # Safety
/// `free` is the program's function of that language.
unsafe fn call_free_fn(free: GrequestFree, fortran: bool, extra: *mut c_void) -> c_int {
    if !fortran {
        // SAFETY: as the caller promises.
        return unsafe { free(extra) };
    }
    // SAFETY: a Fortran subroutine passed as the C pointer (see `call_query`).
    let free: FortranFree = unsafe { std::mem::transmute::<GrequestFree, FortranFree>(free) };
    let mut ierr = abi::SUCCESS;
    // SAFETY: as above; `ierr` lives across the call.
    unsafe { free(extra, &mut ierr) };
    ierr
}

/// Calls a cancel function in the language it was written in (Fortran's
/// `complete` is a `LOGICAL`, whose true gfortran writes as 1).
///
/// # Safety
/// `cancel` is the program's function of that language.
unsafe fn call_cancel(cancel: GrequestCancel, fortran: bool, extra: *mut c_void, complete: c_int) -> c_int {
    if !fortran {
        // SAFETY: as the caller promises.
        return unsafe { cancel(extra, complete) };
    }
    // SAFETY: a Fortran subroutine passed as the C pointer (see `call_query`).
    let cancel: FortranCancel = unsafe { std::mem::transmute::<GrequestCancel, FortranCancel>(cancel) };
    let (mut complete, mut ierr) = (complete, abi::SUCCESS);
    // SAFETY: as above; both integers live across the call.
    unsafe { cancel(extra, &mut complete, &mut ierr) };
    ierr
}

/// A callback's code: MPI passes a failure on as the call's error.
fn callback_outcome(code: c_int, which: &str) -> Result<()> {
    if code == abi::SUCCESS {
        return Ok(());
    }
    let class = class_of_code(code).unwrap_or(class::OTHER);
    let said = string_of_code(code).unwrap_or_else(|| format!("error code {code}"));
    Err(MpiError::new(class, format!("the generalized request's {which} function returned {code}: {said}")))
}
