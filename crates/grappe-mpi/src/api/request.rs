//! Completing requests: wait and test, one, all, any or some of them;
//! freeing and cancelling.

use std::ffi::c_int;

use grappe_comm::Request;

use crate::abi::{self, class, kind};
use crate::errors::{MpiError, Result, code_for};
use crate::mpi_fn;
use crate::state::{self, Locked, Persistent, RequestEntry, RequestSlot};
use crate::waiting;

use super::p2p::not_a_request;
use super::{Incoming, empty_status, get, put, status_of, status_on_error, write_status};

/// The table slot of request `handle`; `None` for `MPI_REQUEST_NULL` and
/// for an inactive persistent request (which MPI's completion calls treat
/// alike).
fn slot_of(state: &Locked, handle: c_int) -> Result<Option<usize>> {
    if handle == abi::REQUEST_NULL {
        return Ok(None);
    }
    match abi::direct_index(kind::REQUEST, handle) {
        Some(slot) => match state.requests.get(slot) {
            Some(RequestSlot { now: Some(_), .. }) => Ok(Some(slot)),
            Some(RequestSlot { now: None, .. }) => Ok(None),
            None => Err(not_a_request(handle)),
        },
        _ => Err(not_a_request(handle)),
    }
}

/// The operation under way in `slot`.
fn now(state: &Locked, slot: usize) -> Option<&RequestEntry> {
    state.requests.get(slot).and_then(|r| r.now.as_ref())
}

fn now_mut(state: &mut Locked, slot: usize) -> Option<&mut RequestEntry> {
    state.requests.get_mut(slot).and_then(|r| r.now.as_mut())
}

/// The C status of a request, once it completes; a receive's packed
/// bytes unpacked into the program's elements.
fn finish(request: Request<'static>, comm: c_int, incoming: Option<Incoming<'static>>) -> Result<abi::Status> {
    let done = request.wait().map_err(|e| MpiError::from(e).on(comm))?;
    if let Some(incoming) = incoming {
        incoming.finish(done.bytes);
    }
    Ok(status_of(done))
}

/// Under `MPI_THREAD_MULTIPLE`: completes operations started as
/// requests for a blocking call, waiting for them with the lock let go
/// (see [`waiting`]); their statuses, in order. If the wait fails, the
/// requests are left to complete on their own, with their buffers.
pub(super) fn complete_outside(call: &str, state: Locked, entries: Vec<RequestEntry>) -> Result<Vec<abi::Status>> {
    let all_done = |_: &mut Locked| {
        let done = entries.iter().all(|entry| match entry {
            RequestEntry::Active { request, .. } => request.is_complete(),
            RequestEntry::Done { .. } => true,
            RequestEntry::Generalized(found) => found.complete,
            RequestEntry::Dup(dup) => dup.request.as_ref().is_none_or(Request::is_complete),
            // Blocking calls start no partitioned rounds.
            RequestEntry::Unready => true,
        });
        Ok(done.then_some(()))
    };
    match waiting::until(call, state, all_done) {
        Ok((state, ())) => {
            let statuses = entries.into_iter().map(|entry| match entry {
                RequestEntry::Done { status } => Ok(status),
                RequestEntry::Active { request, comm, keep, incoming } => {
                    let status = finish(request, comm, incoming);
                    drop(keep);
                    status
                }
                // A blocking call's own operations are the library's.
                RequestEntry::Generalized(_) | RequestEntry::Dup(_) | RequestEntry::Unready => Ok(empty_status()),
            });
            let statuses = statuses.collect();
            drop(state);
            statuses
        }
        Err(error) => {
            // The requests are the engine's: dropped under the lock only.
            match state::lock(call) {
                Ok(mut state) => {
                    for entry in entries {
                        if let RequestEntry::Active { request, keep, incoming, .. } = entry {
                            state.freed.push((request, keep, incoming));
                        }
                    }
                }
                Err(_) => std::mem::forget(entries),
            }
            Err(error)
        }
    }
}

/// Waits for request `handle`, one the library started for itself (a
/// blocking call made of a non-blocking one, as `MPI_Comm_dup` under
/// `MPI_THREAD_MULTIPLE`), with the lock let go meanwhile as `MPI_Wait`
/// does; frees it.
pub(super) fn wait_own(call: &str, handle: c_int) -> Result<abi::Status> {
    let state = state::lock(call)?;
    let slot = slot_of(&state, handle)?;
    let mut state = outside(call, state, &[slot], &[handle], true)?;
    match slot {
        None => Ok(empty_status()),
        Some(slot) => wait_slot(&mut state, slot).0,
    }
}

/// Waits for the operation in `slot`; frees the request unless it is
/// persistent (it becomes inactive). The status, and whether the handle
/// is now `MPI_REQUEST_NULL`.
fn wait_slot(state: &mut Locked, slot: usize) -> (Result<abi::Status>, bool) {
    let entry = state.requests.get_mut(slot).expect("a live slot");
    if let Some(RequestEntry::Generalized(found)) = &entry.now
        && !found.complete
    {
        return (Err(super::grequest::not_complete()), false);
    }
    if let Some(RequestEntry::Unready) = &entry.now {
        return (Err(super::partitioned::unready(state, slot)), false);
    }
    let partitioned = match &entry.persistent {
        Some(Persistent::Partitioned(round)) => Some(round.clone()),
        _ => None,
    };
    let now = entry.now.take().expect("an active request");
    let freed = entry.persistent.is_none();
    if freed {
        state.requests.remove(slot);
    }
    let status = match now {
        RequestEntry::Done { status } => Ok(status),
        RequestEntry::Active { request, comm, keep, incoming } => {
            let status = finish(request, comm, incoming);
            drop(keep);
            status
        }
        RequestEntry::Generalized(found) => super::grequest::status_of(state, &found, true),
        RequestEntry::Dup(dup) => super::comm::finish_dup(state, *dup),
        RequestEntry::Unready => Err(super::partitioned::unready(state, slot)),
    };
    match partitioned {
        Some(round) => (super::partitioned::finish_round(&round, status), freed),
        None => (status, freed),
    }
}

/// Whether the request in `slot` has completed (without waiting).
fn complete(state: &Locked, slot: usize) -> bool {
    match now(state, slot) {
        Some(RequestEntry::Active { request, .. }) => request.is_complete(),
        Some(RequestEntry::Generalized(found)) => found.complete,
        Some(RequestEntry::Dup(dup)) => dup.request.as_ref().is_none_or(Request::is_complete),
        Some(RequestEntry::Unready) => false,
        _ => true,
    }
}

/// Under `MPI_THREAD_MULTIPLE`, waits with the lock let go until all
/// (or, if not `all`, any) of the active requests in `slots` completed;
/// at lower levels returns at once, and the completion waits in the
/// engine. `handles` are the requests' handles, to name them.
fn outside(call: &str, state: Locked, slots: &[Option<usize>], handles: &[c_int], all: bool) -> Result<Locked> {
    if !waiting::multiple() {
        return Ok(state);
    }
    let (state, ()) = waiting::until(call, state, |state| {
        let (mut active, mut done) = (0, 0);
        for (&slot, &handle) in slots.iter().zip(handles) {
            let Some(slot) = slot else { continue };
            if now(state, slot).is_none() {
                return Err(waiting::taken_meanwhile(call, handle));
            }
            active += 1;
            done += complete(state, slot) as usize;
        }
        let ready = if all { done == active } else { done > 0 || active == 0 };
        Ok(ready.then_some(()))
    })?;
    Ok(state)
}

/// The handles of an array of `count` requests.
///
/// # Safety
/// `requests` points to `count` request handles.
unsafe fn handles<'a>(requests: *mut c_int, count: c_int) -> Result<&'a mut [c_int]> {
    if count < 0 {
        return Err(MpiError::new(class::COUNT, format!("negative count of requests {count}")));
    }
    if count == 0 {
        return Ok(&mut []);
    }
    if requests.is_null() {
        return Err(MpiError::new(class::ARG, "the array of requests is NULL"));
    }
    // SAFETY: `count` handles, as the caller promised.
    Ok(unsafe { std::slice::from_raw_parts_mut(requests, count as usize) })
}

/// The status slot `i` of an array of statuses (NULL for `MPI_STATUSES_IGNORE`).
fn status_at(statuses: *mut abi::Status, i: usize) -> *mut abi::Status {
    if statuses.is_null() || statuses as usize == abi::STATUS_IGNORE {
        return std::ptr::null_mut();
    }
    // SAFETY: an array of as many statuses as requests, as MPI requires.
    unsafe { statuses.add(i) }
}

mpi_fn! {
    /// `MPI_Wait`.
    fn MPI_Wait / PMPI_Wait(request: *mut c_int, status: *mut abi::Status) {
        // SAFETY: the caller's request handle.
        let handle = unsafe { get(request, "request")? };
        let state = state::lock("MPI_Wait")?;
        let slot = slot_of(&state, handle)?;
        let mut state = outside("MPI_Wait", state, &[slot], &[handle], true)?;
        let done = match slot {
            None => empty_status(),
            Some(slot) => {
                let (done, freed) = wait_slot(&mut state, slot);
                if freed {
                    // SAFETY: the caller's request handle.
                    unsafe { put(request, abi::REQUEST_NULL, "request")? };
                }
                // SAFETY: the caller's status or MPI_STATUS_IGNORE.
                unsafe { status_on_error(status, done)? }
            }
        };
        // SAFETY: the caller's status or MPI_STATUS_IGNORE.
        unsafe { write_status(status, done) };
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Test`.
    fn MPI_Test / PMPI_Test(request: *mut c_int, flag: *mut c_int, status: *mut abi::Status) {
        // SAFETY: the caller's request handle.
        let handle = unsafe { get(request, "request")? };
        let mut state = state::lock("MPI_Test")?;
        let slot = slot_of(&state, handle)?;
        if let Some(slot) = slot {
            if !test_progress(&mut state, slot)? {
                // SAFETY: the caller's output argument.
                return unsafe { put(flag, 0, "flag") };
            }
        }
        let done = match slot {
            None => empty_status(),
            Some(slot) => {
                let (done, freed) = wait_slot(&mut state, slot);
                if freed {
                    // SAFETY: the caller's request handle.
                    unsafe { put(request, abi::REQUEST_NULL, "request")? };
                }
                // SAFETY: the caller's status or MPI_STATUS_IGNORE.
                unsafe { status_on_error(status, done)? }
            }
        };
        // SAFETY: the caller's output arguments.
        unsafe {
            put(flag, 1, "flag")?;
            write_status(status, done);
        }
        Ok(())
    }
}

/// Tests the request in `slot` (making progress): true if it completed,
/// and then its entry holds its status (or, if it failed, the request that
/// reports the failure when waited for).
pub(super) fn test_progress(state: &mut Locked, slot: usize) -> Result<bool> {
    let request = match now_mut(state, slot) {
        Some(RequestEntry::Active { request, comm, .. }) => (request, comm),
        Some(RequestEntry::Generalized(found)) => return Ok(found.complete),
        // Completed by the wait or test that frees it (`finish_dup`).
        Some(RequestEntry::Dup(dup)) => return test_dup(dup),
        Some(RequestEntry::Unready) => return Ok(false),
        _ => return Ok(true),
    };
    let (request, comm) = request;
    let comm = *comm;
    match request.test() {
        Ok(None) => Ok(false),
        Ok(Some(done)) => {
            let status = status_of(done);
            let entry = std::mem::replace(now_mut(state, slot).expect("live"), RequestEntry::Done { status });
            if let RequestEntry::Active { request, keep, incoming, .. } = entry {
                drop(request);
                if let Some(incoming) = incoming {
                    incoming.finish(done.bytes);
                }
                drop(keep);
            }
            Ok(true)
        }
        // The request's own failure: complete (its wait reports it).
        Err(_) if request.is_complete() => Ok(true),
        Err(e) => Err(MpiError::from(e).on(comm)),
    }
}

/// Whether the agreement of an `MPI_Comm_idup` is over (making progress).
fn test_dup(dup: &mut super::DupUnderWay) -> Result<bool> {
    let Some(request) = &mut dup.request else { return Ok(true) };
    match request.test() {
        Ok(done) => Ok(done.is_some()),
        // The request's own failure: complete (its wait reports it).
        Err(_) if request.is_complete() => Ok(true),
        Err(e) => Err(MpiError::from(e).on(dup.parent)),
    }
}

mpi_fn! {
    /// `MPI_Waitall`: on failures, `MPI_ERR_IN_STATUS` and each status's
    /// error field says which.
    fn MPI_Waitall / PMPI_Waitall(count: c_int, requests: *mut c_int, statuses: *mut abi::Status) {
        // SAFETY: `count` handles, as MPI requires.
        let handles = unsafe { handles(requests, count)? };
        let state = state::lock("MPI_Waitall")?;
        let slots = handles.iter().map(|&h| slot_of(&state, h)).collect::<Result<Vec<_>>>()?;
        let mut state = outside("MPI_Waitall", state, &slots, handles, true)?;
        let mut outcomes = Vec::with_capacity(slots.len());
        for (i, slot) in slots.into_iter().enumerate() {
            let outcome = match slot {
                None => Ok(empty_status()),
                Some(slot) => {
                    let (done, freed) = wait_slot(&mut state, slot);
                    if freed {
                        handles[i] = abi::REQUEST_NULL;
                    }
                    done
                }
            };
            outcomes.push(outcome);
        }
        drop(state);
        let requests = outcomes.len();
        report_all(outcomes, statuses, requests)
    }
}

/// Writes the statuses of several completions, of a call given `requests`
/// requests; with failures among them, sets every status's error field and
/// returns `MPI_ERR_IN_STATUS` (or the one error, when the call had one
/// request).
fn report_all(outcomes: Vec<Result<abi::Status>>, statuses: *mut abi::Status, requests: usize) -> Result<()> {
    let failed = outcomes.iter().filter(|o| o.is_err()).count();
    if failed > 0 && requests == 1 {
        return outcomes.into_iter().next().expect("one").map(|_| ());
    }
    let mut first: Option<MpiError> = None;
    for (i, outcome) in outcomes.into_iter().enumerate() {
        let out = status_at(statuses, i);
        match outcome {
            Ok(status) => {
                // SAFETY: the caller's array of statuses, or none.
                unsafe { write_status(out, status) };
                if failed > 0 && !out.is_null() {
                    // SAFETY: as above, non-null.
                    unsafe { (*out).error = abi::SUCCESS };
                }
            }
            Err(error) => {
                if let Some(status) = error.status {
                    // SAFETY: the caller's array of statuses, or none.
                    unsafe { write_status(out, status) };
                }
                if !out.is_null() {
                    // SAFETY: as above, non-null.
                    unsafe { (*out).error = code_for(&error) };
                }
                first.get_or_insert(error);
            }
        }
    }
    match first {
        None => Ok(()),
        Some(error) => {
            let message = format!("{failed} of the requests failed, the first: {}", error.message);
            let in_status = MpiError::new(class::IN_STATUS, message);
            Err(match error.comm {
                Some(comm) => in_status.on(comm),
                None => in_status,
            })
        }
    }
}

mpi_fn! {
    /// `MPI_Testall`: completes them all if all have completed.
    fn MPI_Testall / PMPI_Testall(count: c_int, requests: *mut c_int, flag: *mut c_int, statuses: *mut abi::Status) {
        // SAFETY: `count` handles, as MPI requires.
        let handles = unsafe { handles(requests, count)? };
        let mut state = state::lock("MPI_Testall")?;
        let slots = handles.iter().map(|&h| slot_of(&state, h)).collect::<Result<Vec<_>>>()?;
        let mut all = true;
        for slot in slots.iter().flatten() {
            all &= test_progress(&mut state, *slot)?;
        }
        if !all {
            // SAFETY: the caller's output argument.
            return unsafe { put(flag, 0, "flag") };
        }
        let mut outcomes = Vec::with_capacity(slots.len());
        for (i, slot) in slots.into_iter().enumerate() {
            outcomes.push(match slot {
                None => Ok(empty_status()),
                Some(slot) => {
                    let (done, freed) = wait_slot(&mut state, slot);
                    if freed {
                        handles[i] = abi::REQUEST_NULL;
                    }
                    done
                }
            });
        }
        drop(state);
        // SAFETY: the caller's output argument.
        unsafe { put(flag, 1, "flag")? };
        let requests = outcomes.len();
        report_all(outcomes, statuses, requests)
    }
}

/// What a request lent to `grappe_comm::wait_any` leaves in its slot's
/// place meanwhile.
enum Lent {
    Active { keep: Option<Box<[u8]>>, incoming: Option<Incoming<'static>> },
    Dup(Box<super::DupUnderWay>),
}

/// Waits until one of the requests in `slots` completes (or none is
/// active): its index in `slots`.
fn wait_any(state: &mut Locked, slots: &[Option<usize>]) -> Result<Option<usize>> {
    let active: Vec<(usize, usize)> = slots.iter().enumerate().filter_map(|(i, s)| s.map(|s| (i, s))).collect();
    if active.is_empty() {
        return Ok(None);
    }
    if let Some(&(i, _)) = active.iter().find(|&&(_, slot)| complete(state, slot)) {
        return Ok(Some(i));
    }
    // Every active request is under way: lend them to grappe's wait_any,
    // which sleeps until one completes, then put them back.
    let mut lent = Vec::with_capacity(active.len());
    let mut origins = Vec::with_capacity(active.len());
    for &(i, slot) in &active {
        let entry = state.requests.get_mut(slot).expect("active");
        match entry.now.take() {
            Some(RequestEntry::Active { request, comm, keep, incoming }) => {
                lent.push(request);
                origins.push((i, slot, comm, Lent::Active { keep, incoming }));
            }
            Some(RequestEntry::Dup(mut dup)) => {
                let comm = dup.parent;
                lent.push(dup.request.take().expect("not complete, so still under way"));
                origins.push((i, slot, comm, Lent::Dup(dup)));
            }
            // Only operations in the engine are lent: generalized
            // requests and partitioned sends not ready stay.
            other => entry.now = other,
        }
    }
    if lent.is_empty() {
        // Only generalized requests and partitioned sends not ready, none complete.
        let unready = active.iter().find(|&&(_, slot)| matches!(now(state, slot), Some(RequestEntry::Unready)));
        return Err(match unready {
            Some(&(_, slot)) => super::partitioned::unready(state, slot),
            None => super::grequest::not_complete(),
        });
    }
    let outcome = grappe_comm::wait_any(&mut lent);
    let (index, done) = match outcome {
        Ok((index, status)) => (Some(index), Ok(status)),
        Err(e) => (None, Err(e)),
    };
    let mut put_back = lent.into_iter();
    let mut chosen = None;
    let first_comm = origins.first().map_or(abi::COMM_WORLD, |o| o.2);
    for (k, (i, slot, comm, lent)) in origins.into_iter().enumerate() {
        let back = match lent {
            Lent::Active { keep, incoming } if Some(k) == index => {
                let got = *done.as_ref().expect("completed");
                if let Some(incoming) = incoming {
                    incoming.finish(got.bytes);
                }
                drop(keep);
                RequestEntry::Done { status: status_of(got) }
            }
            // Completed: its communicator is made by the wait that frees it.
            Lent::Dup(dup) if Some(k) == index => RequestEntry::Dup(dup),
            Lent::Active { keep, incoming } => {
                let request = put_back.next().expect("one per request not completed");
                RequestEntry::Active { request, comm, keep, incoming }
            }
            Lent::Dup(mut dup) => {
                dup.request = Some(put_back.next().expect("one per request not completed"));
                RequestEntry::Dup(dup)
            }
        };
        chosen = chosen.or((Some(k) == index).then_some(i));
        state.requests.get_mut(slot).expect("lent").now = Some(back);
    }
    match done {
        Ok(_) => Ok(chosen),
        Err(e) => Err(MpiError::from(e).on(first_comm)),
    }
}

mpi_fn! {
    /// `MPI_Waitany`: `MPI_UNDEFINED` as index if no request is active.
    fn MPI_Waitany / PMPI_Waitany(count: c_int, requests: *mut c_int, index: *mut c_int, status: *mut abi::Status) {
        // SAFETY: `count` handles, as MPI requires.
        let handles = unsafe { handles(requests, count)? };
        let state = state::lock("MPI_Waitany")?;
        let slots = handles.iter().map(|&h| slot_of(&state, h)).collect::<Result<Vec<_>>>()?;
        let mut state = outside("MPI_Waitany", state, &slots, handles, false)?;
        let (which, done) = match wait_any(&mut state, &slots)? {
            None => (abi::UNDEFINED, empty_status()),
            Some(i) => {
                let (done, freed) = wait_slot(&mut state, slots[i].expect("active"));
                if freed {
                    handles[i] = abi::REQUEST_NULL;
                }
                (i as c_int, done?)
            }
        };
        // SAFETY: the caller's output arguments.
        unsafe {
            put(index, which, "index")?;
            write_status(status, done);
        }
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Testany`.
    fn MPI_Testany / PMPI_Testany(
        count: c_int,
        requests: *mut c_int,
        index: *mut c_int,
        flag: *mut c_int,
        status: *mut abi::Status,
    ) {
        // SAFETY: `count` handles, as MPI requires.
        let handles = unsafe { handles(requests, count)? };
        let mut state = state::lock("MPI_Testany")?;
        let slots = handles.iter().map(|&h| slot_of(&state, h)).collect::<Result<Vec<_>>>()?;
        if slots.iter().all(Option::is_none) {
            // SAFETY: the caller's output arguments.
            unsafe {
                put(index, abi::UNDEFINED, "index")?;
                put(flag, 1, "flag")?;
                write_status(status, empty_status());
            }
            return Ok(());
        }
        for (i, slot) in slots.iter().enumerate() {
            let Some(slot) = *slot else { continue };
            if test_progress(&mut state, slot)? {
                let (done, freed) = wait_slot(&mut state, slot);
                if freed {
                    handles[i] = abi::REQUEST_NULL;
                }
                let done = done?;
                // SAFETY: the caller's output arguments.
                unsafe {
                    put(index, i as c_int, "index")?;
                    put(flag, 1, "flag")?;
                    write_status(status, done);
                }
                return Ok(());
            }
        }
        // SAFETY: the caller's output arguments.
        unsafe {
            put(index, abi::UNDEFINED, "index")?;
            put(flag, 0, "flag")
        }
    }
}

/// Completes every request of `slots` that has completed: how many
/// written to `outcount`, their indices to `indices` and statuses to
/// `statuses`. With failures among them, `MPI_ERR_IN_STATUS` after all of
/// them are written: MPI's program learns which failed from the statuses
/// of the indices it was given.
///
/// # Safety
/// `indices` and `statuses` hold as many entries as `slots` (or `statuses`
/// is `MPI_STATUSES_IGNORE`); `outcount` is the caller's.
unsafe fn complete_some(
    state: &mut Locked,
    slots: &[Option<usize>],
    handles: &mut [c_int],
    (outcount, indices): (*mut c_int, *mut c_int),
    statuses: *mut abi::Status,
) -> Result<()> {
    let mut outcomes = Vec::new();
    for (i, slot) in slots.iter().enumerate() {
        let Some(slot) = *slot else { continue };
        if test_progress(state, slot)? {
            let (done, freed) = wait_slot(state, slot);
            if freed {
                handles[i] = abi::REQUEST_NULL;
            }
            // SAFETY: as many indices as requests, as the caller promised.
            unsafe { indices.add(outcomes.len()).write(i as c_int) };
            outcomes.push(done);
        }
    }
    // SAFETY: the caller's output argument.
    unsafe { put(outcount, outcomes.len() as c_int, "outcount")? };
    report_all(outcomes, statuses, slots.len())
}

macro_rules! some_fn {
    ($(#[$doc:meta])* $name:ident / $pname:ident, $wait:expr) => {
        mpi_fn! {
            $(#[$doc])*
            fn $name / $pname(
                incount: c_int,
                requests: *mut c_int,
                outcount: *mut c_int,
                indices: *mut c_int,
                statuses: *mut abi::Status,
            ) {
                // SAFETY: `incount` handles, as MPI requires.
                let handles = unsafe { handles(requests, incount)? };
                let mut state = state::lock(stringify!($name))?;
                let slots = handles.iter().map(|&h| slot_of(&state, h)).collect::<Result<Vec<_>>>()?;
                if slots.iter().all(Option::is_none) {
                    // SAFETY: the caller's output argument.
                    return unsafe { put(outcount, abi::UNDEFINED, "outcount") };
                }
                if $wait {
                    state = outside(stringify!($name), state, &slots, handles, false)?;
                    wait_any(&mut state, &slots)?;
                }
                if indices.is_null() {
                    return Err(MpiError::new(class::ARG, "the array of indices is NULL"));
                }
                // SAFETY: arrays of `incount` entries, as MPI requires.
                unsafe { complete_some(&mut state, &slots, handles, (outcount, indices), statuses) }
            }
        }
    };
}

some_fn!(
    /// `MPI_Waitsome`.
    MPI_Waitsome / PMPI_Waitsome,
    true
);
some_fn!(
    /// `MPI_Testsome`.
    MPI_Testsome / PMPI_Testsome,
    false
);

mpi_fn! {
    /// `MPI_Request_free`: the request completes on its own.
    fn MPI_Request_free / PMPI_Request_free(request: *mut c_int) {
        // SAFETY: the caller's request handle.
        let handle = unsafe { get(request, "request")? };
        let mut state = state::lock("MPI_Request_free")?;
        if handle == abi::REQUEST_NULL {
            return Err(MpiError::new(class::REQUEST, "MPI_REQUEST_NULL cannot be freed"));
        }
        let slot = abi::direct_index(kind::REQUEST, handle).ok_or_else(|| not_a_request(handle))?;
        if let Some(RequestEntry::Generalized(found)) = state.requests.get_mut(slot).and_then(|r| r.now.as_mut())
            && !found.complete
        {
            // It goes when MPI_Grequest_complete completes it.
            found.freed = true;
            // SAFETY: the caller's request handle.
            return unsafe { put(request, abi::REQUEST_NULL, "request") };
        }
        if let Some(RequestEntry::Dup(dup)) = now(&state, slot) {
            let parent = dup.parent;
            return Err(MpiError::new(
                class::REQUEST,
                format!(
                    "request {handle:#x} is an MPI_Comm_idup's, a non-blocking collective's, which MPI forbids \
                     freeing: complete it with MPI_Wait or MPI_Test"
                ),
            )
            .on(parent));
        }
        let entry = state.requests.remove(slot).ok_or_else(|| not_a_request(handle))?;
        match &entry.persistent {
            Some(Persistent::Partitioned(round)) => crate::api::partitioned::release(&mut state, round),
            Some(Persistent::P2p(p)) => crate::api::p2p::release_kept_type(p),
            _ => {}
        }
        if let Some(RequestEntry::Generalized(found)) = &entry.now {
            // SAFETY: the caller's request handle.
            unsafe { put(request, abi::REQUEST_NULL, "request")? };
            return crate::api::grequest::status_of(&mut state, found, true).map(|_| ());
        }
        if let Some(RequestEntry::Active { request, keep, incoming, .. }) = entry.now {
            state.freed.push((request, keep, incoming));
        }
        // SAFETY: the caller's request handle.
        unsafe { put(request, abi::REQUEST_NULL, "request") }
    }
}

mpi_fn! {
    /// `MPI_Cancel`: a receive not matched yet is cancelled (its wait then
    /// says so, `MPI_Test_cancelled`); anything else completes as usual.
    fn MPI_Cancel / PMPI_Cancel(request: *mut c_int) {
        // SAFETY: the caller's request handle.
        let handle = unsafe { get(request, "request")? };
        let mut state = state::lock("MPI_Cancel")?;
        let Some(slot) = slot_of(&state, handle)? else {
            return Err(MpiError::new(class::REQUEST, "MPI_REQUEST_NULL cannot be cancelled"));
        };
        let persistent = state.requests.get(slot).and_then(|r| r.persistent.as_ref());
        let partitioned = matches!(persistent, Some(Persistent::Partitioned(_)));
        let cancelled = match now_mut(&mut state, slot) {
            // A partitioned round is two messages: it completes as usual.
            Some(RequestEntry::Active { .. }) if partitioned => false,
            Some(RequestEntry::Active { request, .. }) => request.cancel(),
            Some(RequestEntry::Generalized(found)) => {
                let found = **found;
                return crate::api::grequest::cancel(&mut state, &found);
            }
            _ => false,
        };
        if cancelled {
            let mut status = empty_status();
            status.set_cancelled(true);
            *now_mut(&mut state, slot).expect("active") = RequestEntry::Done { status };
        }
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Test_cancelled`.
    fn MPI_Test_cancelled / PMPI_Test_cancelled(status: *const abi::Status, flag: *mut c_int) {
        // SAFETY: the caller's status.
        let status = unsafe { get(status, "status")? };
        // SAFETY: the caller's output argument.
        unsafe { put(flag, status.cancelled() as c_int, "flag") }
    }
}

mpi_fn! {
    /// `MPI_Request_get_status`: tests without freeing.
    fn MPI_Request_get_status / PMPI_Request_get_status(request: c_int, flag: *mut c_int, status: *mut abi::Status) {
        let mut state = state::lock("MPI_Request_get_status")?;
        let done = match slot_of(&state, request)? {
            None => Some(empty_status()),
            Some(slot) => match test_progress(&mut state, slot)? {
                false => None,
                // Completed: its entry holds its status (or its failure),
                // for the wait or test that frees it.
                true => match now(&state, slot) {
                    Some(RequestEntry::Done { status }) => Some(*status),
                    Some(RequestEntry::Generalized(found)) => {
                        let found = **found;
                        Some(crate::api::grequest::status_of(&mut state, &found, false)?)
                    }
                    _ => Some(empty_status()),
                },
            },
        };
        // SAFETY: the caller's output arguments.
        unsafe {
            put(flag, done.is_some() as c_int, "flag")?;
            if let Some(done) = done {
                write_status(status, done);
            }
        }
        Ok(())
    }
}
