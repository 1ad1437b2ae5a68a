//! The rest of what real programs call: intercommunicator tests (grappe
//! has none), memory for MPI (`MPI_Alloc_mem`), buffered sends, and user
//! error handlers.

use std::ffi::{c_int, c_long, c_void};

use crate::abi::{self, class};
use crate::errors::{MpiError, Result};
use crate::state::{self, RequestEntry, RequestSlot};
use crate::types;
use crate::{counted_fn, mpi_fn};

use super::{Count, CountArg, outgoing, put};

mpi_fn! {
    /// `MPI_Comm_get_parent`: `MPI_COMM_NULL`, since no grappe process is
    /// started by `MPI_Comm_spawn` (which grappe does not provide).
    fn MPI_Comm_get_parent / PMPI_Comm_get_parent(parent: *mut c_int) {
        state::lock("MPI_Comm_get_parent")?;
        // SAFETY: the caller's output argument.
        unsafe { put(parent, abi::COMM_NULL, "parent") }
    }
}

mpi_fn! {
    /// `MPI_Alloc_mem`: memory from the C allocator.
    fn MPI_Alloc_mem / PMPI_Alloc_mem(size: c_long, _info: c_int, baseptr: *mut c_void) {
        if size < 0 {
            return Err(MpiError::new(class::ARG, format!("MPI_Alloc_mem: negative size {size}")));
        }
        // SAFETY: malloc of a non-negative size; a null result is checked.
        let memory = unsafe { libc::malloc((size as usize).max(1)) };
        if memory.is_null() {
            return Err(MpiError::new(class::NO_MEM, format!("MPI_Alloc_mem: cannot allocate {size} bytes")));
        }
        // SAFETY: `baseptr` is where MPI stores the pointer.
        unsafe { put(baseptr.cast::<*mut c_void>(), memory, "baseptr") }
    }
}

mpi_fn! {
    /// `MPI_Free_mem`.
    fn MPI_Free_mem / PMPI_Free_mem(base: *mut c_void) {
        // SAFETY: memory from MPI_Alloc_mem (malloc), as MPI requires.
        unsafe { libc::free(base) };
        Ok(())
    }
}

/// The buffer of `MPI_Buffer_attach`: where it is, its size, and the bytes
/// of buffered sends still counted against it.
#[derive(Debug, Default)]
struct Attached {
    at: usize,
    size: usize,
}

static ATTACHED: parking_lot::Mutex<Option<Attached>> = parking_lot::Mutex::new(None);

counted_fn! {
    /// `MPI_Buffer_attach`.
    fn MPI_Buffer_attach / PMPI_Buffer_attach, MPI_Buffer_attach_c / PMPI_Buffer_attach_c(buffer: *mut c_void, size: Int) {
        let mut attached = ATTACHED.lock();
        if attached.is_some() {
            return Err(MpiError::new(class::BUFFER, "a buffer is attached already (MPI_Buffer_detach it first)"));
        }
        *attached = Some(Attached { at: buffer as usize, size: size.wide().max(0) as usize });
        Ok(())
    }
}

counted_fn! {
    /// `MPI_Buffer_detach`: waits until every buffered send has gone.
    fn MPI_Buffer_detach / PMPI_Buffer_detach, MPI_Buffer_detach_c / PMPI_Buffer_detach_c(buffer: *mut c_void, size: *mut Int) {
        let Some(attached) = ATTACHED.lock().take() else {
            return Err(MpiError::new(class::BUFFER, "no buffer is attached"));
        };
        let mut state = state::lock(NAME)?;
        if crate::waiting::multiple() {
            let gone = |state: &mut crate::state::Locked| Ok(state.buffered.iter().all(|b| b.0.is_complete()).then_some(()));
            state = crate::waiting::until(NAME, state, gone)?.0;
        }
        for (request, keep, _) in std::mem::take(&mut state.buffered) {
            request.wait().map_err(MpiError::from)?;
            drop(keep);
        }
        // SAFETY: the caller's output arguments (`buffer` holds a pointer).
        unsafe {
            put(buffer.cast::<usize>(), attached.at, "buffer")?;
            put(size, Int::or_undefined(attached.size as u64), "size")
        }
    }
}

/// A buffered send: a copy goes out on its own; the attached buffer's
/// size bounds what may be outstanding, as MPI says.
#[allow(clippy::too_many_arguments)]
fn bsend(
    call: &str,
    buf: *const c_void,
    count: Count,
    datatype: c_int,
    dest: c_int,
    tag: c_int,
    comm: c_int,
) -> Result<()> {
    let mut state = state::lock(call)?;
    bsend_in(&mut state, call, buf, count, datatype, dest, tag, comm)
}

/// [`bsend`] with the library's lock held (`MPI_Start` of a persistent
/// buffered send).
#[allow(clippy::too_many_arguments)]
pub(super) fn bsend_in(
    state: &mut crate::state::Locked,
    call: &str,
    buf: *const c_void,
    count: Count,
    datatype: c_int,
    dest: c_int,
    tag: c_int,
    comm: c_int,
) -> Result<()> {
    let capacity = ATTACHED.lock().as_ref().map(|a| a.size);
    let Some(capacity) = capacity else {
        return Err(
            MpiError::new(class::BUFFER, format!("{call} without an attached buffer (MPI_Buffer_attach)")).on(comm)
        );
    };
    state.comm(comm)?;
    let on = |e: MpiError| e.on(comm);
    let datatype = types::committed(datatype).map_err(on)?;
    // SAFETY: MPI's rule for a send buffer, copied before the call returns.
    let data = unsafe { outgoing(buf, count, &datatype, call) }.map_err(on)?.into_owned().into_boxed_slice();
    reap_buffered(state, false);
    let mut outstanding = buffered_bytes(state);
    // Sends the receivers took may not be known as complete yet (a
    // receiver's notice may still be on its way): look again, for a
    // moment, before refusing. Nothing here waits for a receive to be
    // posted, so the call stays local, as MPI wants of a buffered send.
    let deadline = std::time::Instant::now() + BSEND_PATIENCE;
    while outstanding + data.len() + 96 > capacity && !state.buffered.is_empty() {
        reap_buffered(state, true);
        outstanding = buffered_bytes(state);
        if std::time::Instant::now() >= deadline {
            break;
        }
        std::thread::yield_now();
    }
    let entry = state.comm(comm)?;
    if outstanding + data.len() + 96 > capacity {
        return Err(MpiError::new(
            class::BUFFER,
            format!(
                "{call}: {} bytes do not fit in the attached buffer of {capacity} ({outstanding} in use)",
                data.len()
            ),
        )
        .on(comm));
    }
    let tag = crate::api::send_tag(tag).map_err(on)?;
    let Some(dest) = crate::api::dest_rank(dest, &entry.comm).map_err(on)? else { return Ok(()) };
    // SAFETY: the copy is on the heap and kept with its request until it completes.
    let bytes: &'static [u8] = unsafe { &*(&*data as *const [u8]) };
    let request = entry.comm.isend(state.scope, bytes, dest, tag).map_err(|e| MpiError::from(e).on(comm))?;
    state.buffered.push((request, Some(data), None));
    Ok(())
}

/// How long a buffered send that does not fit looks for sends under way
/// to end before it refuses.
const BSEND_PATIENCE: std::time::Duration = std::time::Duration::from_millis(50);

/// Drops the buffered sends that are over, with their copies; with
/// `progress`, each is tested, which moves the engine on first. A send's
/// error, if any, has no one to report it to: MPI's buffered sends are fire
/// and forget.
fn reap_buffered(state: &mut crate::state::Locked, progress: bool) {
    let mut pending = Vec::new();
    for (mut request, keep, freed) in std::mem::take(&mut state.buffered) {
        let over = match progress {
            true => !matches!(request.test(), Ok(None)),
            false => request.is_complete(),
        };
        if !over {
            pending.push((request, keep, freed));
        } else if !progress {
            let _ = request.wait();
        }
    }
    state.buffered = pending;
}

/// The room the buffered sends under way take in the attached buffer.
fn buffered_bytes(state: &crate::state::Locked) -> usize {
    state.buffered.iter().map(|(_, keep, _)| keep.as_ref().map_or(0, |k| k.len()) + 96).sum()
}

counted_fn! {
    /// `MPI_Bsend`.
    fn MPI_Bsend / PMPI_Bsend, MPI_Bsend_c / PMPI_Bsend_c(buf: *const c_void, count: Int, datatype: c_int, dest: c_int, tag: c_int, comm: c_int) {
        bsend(NAME, buf, count.wide(), datatype, dest, tag, comm)
    }
}

counted_fn! {
    /// `MPI_Ibsend`: the copy is made at the call, so the request is complete at once.
    fn MPI_Ibsend / PMPI_Ibsend, MPI_Ibsend_c / PMPI_Ibsend_c(
        buf: *const c_void,
        count: Int,
        datatype: c_int,
        dest: c_int,
        tag: c_int,
        comm: c_int,
        request: *mut c_int,
    ) {
        bsend(NAME, buf, count.wide(), datatype, dest, tag, comm)?;
        let mut state = state::lock(NAME)?;
        let status = abi::Status { source: abi::ANY_SOURCE, tag: abi::ANY_TAG, ..Default::default() };
        let handle = state.add_request(RequestSlot { now: Some(RequestEntry::Done { status }), persistent: None });
        // SAFETY: the caller's output argument.
        unsafe { put(request, handle, "request") }
    }
}

/// `MPI_Comm_errhandler_function`.
pub type ErrhandlerFunction = unsafe extern "C" fn(*mut c_int, *mut c_int);

/// `MPI_File_errhandler_function`: its first argument points to the
/// file's handle, a pointer in MPICH's interface.
pub type FileErrhandlerFunction = unsafe extern "C" fn(*mut usize, *mut c_int);

/// A user error handler: the function, for the kind of object it was
/// made for (MPI calls it with a pointer to that object's handle, so one
/// kind's handler cannot serve another).
#[derive(Clone, Copy)]
enum UserHandler {
    Comm(ErrhandlerFunction),
    File(FileErrhandlerFunction),
}

/// User error handlers, by slot: direct handles of type 5.
static HANDLERS: parking_lot::RwLock<crate::state::Table<UserHandler>> =
    parking_lot::RwLock::new(crate::state::Table::new());

fn user(handle: c_int) -> Option<UserHandler> {
    abi::direct_index(abi::kind::ERRHANDLER, handle).and_then(|slot| HANDLERS.read().get(slot).copied())
}

/// The function of communicator error handler `handle`, if it is one.
pub fn user_handler(handle: c_int) -> Option<ErrhandlerFunction> {
    match user(handle)? {
        UserHandler::Comm(function) => Some(function),
        UserHandler::File(_) => None,
    }
}

/// The function of file error handler `handle` (`MPI_File_create_errhandler`), if it is one.
pub fn user_file_handler(handle: c_int) -> Option<FileErrhandlerFunction> {
    match user(handle)? {
        UserHandler::File(function) => Some(function),
        UserHandler::Comm(_) => None,
    }
}

/// Whether `handle` is a user error handler of any kind.
pub fn is_user_handler(handle: c_int) -> bool {
    user(handle).is_some()
}

fn add_handler(handler: UserHandler, errhandler: *mut c_int) -> Result<()> {
    let slot = HANDLERS.write().insert(handler);
    // SAFETY: the caller's output argument.
    unsafe { put(errhandler, abi::direct_handle(abi::kind::ERRHANDLER, slot), "errhandler") }
}

pub(super) fn create_errhandler(function: Option<ErrhandlerFunction>, errhandler: *mut c_int) -> Result<()> {
    let function = function.ok_or_else(|| MpiError::new(class::ARG, "the error handler function is NULL"))?;
    add_handler(UserHandler::Comm(function), errhandler)
}

/// `MPI_File_create_errhandler`'s work.
pub fn create_file_errhandler(function: Option<FileErrhandlerFunction>, errhandler: *mut c_int) -> Result<()> {
    let function = function.ok_or_else(|| MpiError::new(class::ARG, "the error handler function is NULL"))?;
    add_handler(UserHandler::File(function), errhandler)
}

mpi_fn! {
    /// `MPI_Comm_create_errhandler`.
    fn MPI_Comm_create_errhandler / PMPI_Comm_create_errhandler(function: Option<ErrhandlerFunction>, errhandler: *mut c_int) {
        create_errhandler(function, errhandler)
    }
}

mpi_fn! {
    /// `MPI_Errhandler_create` (MPI-1's name).
    fn MPI_Errhandler_create / PMPI_Errhandler_create(function: Option<ErrhandlerFunction>, errhandler: *mut c_int) {
        create_errhandler(function, errhandler)
    }
}

mpi_fn! {
    /// `MPI_Comm_call_errhandler`: what a failure with `errorcode` on
    /// `comm` would do.
    fn MPI_Comm_call_errhandler / PMPI_Comm_call_errhandler(comm: c_int, errorcode: c_int) {
        let handler = state::lock("MPI_Comm_call_errhandler")?.comm(comm)?.errhandler;
        if let Some(function) = user_handler(handler) {
            let (mut c, mut code) = (comm, errorcode);
            // SAFETY: the program's handler, with the arguments MPI defines.
            unsafe { function(&mut c, &mut code) };
            return Ok(());
        }
        match handler {
            abi::ERRORS_RETURN => Ok(()),
            _ => {
                let text = crate::errors::string_of_code(errorcode).unwrap_or_default();
                Err(MpiError::new(class::OTHER, format!("error {errorcode} raised by the program: {text}")).on(comm))
            }
        }
    }
}

mpi_fn! {
    /// `MPI_Errhandler_set` (MPI-1's `MPI_Comm_set_errhandler`).
    fn MPI_Errhandler_set / PMPI_Errhandler_set(comm: c_int, errhandler: c_int) {
        // SAFETY: plain values, as MPI_Comm_set_errhandler takes them.
        match unsafe { crate::api::errh::PMPI_Comm_set_errhandler::body(comm, errhandler) } {
            abi::SUCCESS => Ok(()),
            code => Err(MpiError::new(crate::errors::class_of_code(code).unwrap_or(class::OTHER), crate::errors::string_of_code(code).unwrap_or_default())),
        }
    }
}

mpi_fn! {
    /// `MPI_Errhandler_get` (MPI-1's `MPI_Comm_get_errhandler`).
    fn MPI_Errhandler_get / PMPI_Errhandler_get(comm: c_int, errhandler: *mut c_int) {
        let handler = state::lock("MPI_Errhandler_get")?.comm(comm)?.errhandler;
        // SAFETY: the caller's output argument.
        unsafe { put(errhandler, handler, "errhandler") }
    }
}

mpi_fn! {
    /// `MPI_Comm_get_info`: a new, empty info object (grappe takes no hints yet).
    fn MPI_Comm_get_info / PMPI_Comm_get_info(comm: c_int, info: *mut c_int) {
        state::lock("MPI_Comm_get_info")?.comm(comm)?;
        // The output is checked here, so that a NULL one is the caller's
        // MPI_ERR_ARG, not a failure of the info object made for it.
        if info.is_null() {
            return Err(MpiError::new(class::ARG, "info_used is NULL"));
        }
        // SAFETY: the caller's output argument, not NULL.
        crate::errors::check_code(unsafe { crate::api::info::PMPI_Info_create::body(info) })
    }
}

mpi_fn! {
    /// `MPI_Comm_set_info`: grappe takes no hints yet.
    fn MPI_Comm_set_info / PMPI_Comm_set_info(comm: c_int, _info: c_int) {
        state::lock("MPI_Comm_set_info")?.comm(comm)?;
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Status_set_elements`: the status of `count` elements of `datatype`.
    fn MPI_Status_set_elements / PMPI_Status_set_elements(status: *mut abi::Status, datatype: c_int, count: c_int) {
        set_elements(status, datatype, count as i64)
    }
}

mpi_fn! {
    /// `MPI_Status_set_elements_x`.
    fn MPI_Status_set_elements_x / PMPI_Status_set_elements_x(status: *mut abi::Status, datatype: c_int, count: c_long) {
        set_elements(status, datatype, count)
    }
}

fn set_elements(status: *mut abi::Status, datatype: c_int, count: i64) -> Result<()> {
    let found = types::lookup(datatype)?;
    if count < 0 || status.is_null() {
        return Err(MpiError::new(class::ARG, format!("MPI_Status_set_elements: count {count} or a NULL status")));
    }
    let base = found.base().map_or(found.size(), |(b, _)| b.size) as u64;
    // SAFETY: a writable status, non-null.
    unsafe { (*status).set_bytes(count as u64 * base) };
    Ok(())
}

mpi_fn! {
    /// `MPI_Status_set_cancelled`.
    fn MPI_Status_set_cancelled / PMPI_Status_set_cancelled(status: *mut abi::Status, flag: c_int) {
        if status.is_null() {
            return Err(MpiError::new(class::ARG, "MPI_Status_set_cancelled: a NULL status"));
        }
        // SAFETY: a writable status, non-null.
        unsafe { (*status).set_cancelled(flag != 0) };
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Type_extent` (removed in MPI-3, still called).
    fn MPI_Type_extent / PMPI_Type_extent(datatype: c_int, extent: *mut c_long) {
        let found = types::lookup(datatype)?;
        // SAFETY: the caller's output argument.
        unsafe { put(extent, found.extent() as c_long, "extent") }
    }
}

mpi_fn! {
    /// `MPI_Type_lb` (removed in MPI-3, still called).
    fn MPI_Type_lb / PMPI_Type_lb(datatype: c_int, lb: *mut c_long) {
        let found = types::lookup(datatype)?;
        // SAFETY: the caller's output argument.
        unsafe { put(lb, found.lb() as c_long, "lb") }
    }
}

mpi_fn! {
    /// `MPI_Type_ub` (removed in MPI-3, still called).
    fn MPI_Type_ub / PMPI_Type_ub(datatype: c_int, ub: *mut c_long) {
        let found = types::lookup(datatype)?;
        // SAFETY: the caller's output argument.
        unsafe { put(ub, (found.lb() + found.extent()) as c_long, "ub") }
    }
}
