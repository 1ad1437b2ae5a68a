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
        let started = Generalized { query, free, cancel, extra_state: extra_state as usize, complete: false, freed: false };
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
        // SAFETY: the program's function, with the arguments MPI defines.
        let code = state.let_go_during(|| unsafe { query(extra, &mut status) });
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
    // SAFETY: the program's function, with the argument MPI defines.
    let code = state.let_go_during(|| unsafe { free(extra) });
    callback_outcome(code, "free")
}

/// `MPI_Cancel` of a generalized request: its cancel function is told
/// whether it completed.
pub(super) fn cancel(state: &mut Locked, found: &Generalized) -> Result<()> {
    let Some(cancel) = found.cancel else { return Ok(()) };
    let (extra, complete) = (found.extra_state as *mut c_void, found.complete as c_int);
    // SAFETY: the program's function, with the arguments MPI defines.
    let code = state.let_go_during(|| unsafe { cancel(extra, complete) });
    callback_outcome(code, "cancel")
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
