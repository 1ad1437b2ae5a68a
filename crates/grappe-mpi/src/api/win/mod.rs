//! One-sided communication (`MPI_Win_*`, `MPI_Put`, `MPI_Get`,
//! `MPI_Accumulate`...): windows, their attributes, names, hints and
//! error handlers, and active-target synchronization by `MPI_Win_fence`.
//!
//! Ranks have no thread that serves other ranks' accesses while the
//! program computes, so an access is not made when it is called: the
//! origin checks it, packs it and queues it, and the next fence (which
//! every rank of the window calls) carries every queued access to its
//! target over the window's own communicator. Each rank applies the
//! accesses aimed at it in origin-rank order, each origin's in the order
//! it made them, and sends back what gets and fetching accumulates read;
//! the fence returns once every rank has done so. Accumulates are thus
//! atomic per element as MPI requires: one thread applies them all.
//!
//! General active-target synchronization (`MPI_Win_post`, `_start`,
//! `_complete`, `_wait`) carries the same accesses by messages between
//! the ranks of the groups given. Passive target (`MPI_Win_lock`...) and
//! the request-based operations are in [`passive`]. Shared-memory windows
//! (`MPI_Win_allocate_shared`) are not implemented: they fail with
//! `MPI_ERR_UNSUPPORTED_OPERATION`, naming themselves.
//!
//! A window's errors go to its own handler, `MPI_ERRORS_ARE_FATAL`
//! unless the program sets another; a handle that names no window is an
//! `MPI_ERR_WIN` for the world's handler, found in the table before
//! anything is touched.

use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use crate::abi::{self, class, kind};
use crate::errors::{MpiError, Result};
use crate::reduce::OpCode;
use crate::state::{self, Table};
use crate::types::{self, Type};
use crate::{counted_fn, mpi_fn};

mod passive;

use std::collections::HashMap;

use super::env::{copy_string, read_string};
use super::file::collective::{self, MPI_BYTE};
use super::{Count, CountArg, get, put, widen};

/// `MPI_WIN_BASE` and the other predefined window attributes.
const WIN_BASE: c_int = 0x6600_0001;
const WIN_SIZE: c_int = 0x6600_0003;
const WIN_DISP_UNIT: c_int = 0x6600_0005;
const WIN_CREATE_FLAVOR: c_int = 0x6600_0007;
const WIN_MODEL: c_int = 0x6600_0009;

const FLAVOR_CREATE: c_int = 1;
const FLAVOR_ALLOCATE: c_int = 2;
const FLAVOR_DYNAMIC: c_int = 3;
const FLAVOR_SHARED: c_int = 4;
const WIN_UNIFIED: c_int = 2;

/// `MPI_MODE_NOSUCCEED`: the fence ends the epoch and opens none.
const MODE_NOSUCCEED: c_int = 16384;
/// Every assertion MPI defines.
const MODES: c_int = 1024 | 2048 | 4096 | 8192 | 16384;

/// A window: this rank's part of it and what it knows of the others'.
pub struct Window {
    /// The window's own communicator: a duplicate of the one it was made
    /// on, whose errors return, for the fence's exchanges.
    comm: c_int,
    rank: usize,
    size: usize,
    /// How this rank reaches the others' memory for passive target, or
    /// why it cannot.
    reach: std::result::Result<passive::Reach, String>,
    /// This rank's memory: where it starts (0 for a dynamic window,
    /// whose displacements are addresses) and its length.
    base: usize,
    /// The values the predefined attributes point to (which live as long
    /// as the window).
    len: isize,
    disp_unit: c_int,
    flavor: c_int,
    model: c_int,
    /// Every rank's size and displacement unit, by rank.
    extents: Vec<(u64, i64)>,
    /// The memory of `MPI_Win_allocate` or `MPI_Win_allocate_shared`.
    _memory: Option<Memory>,
    /// For a shared-memory window: where every rank's part is in this
    /// process, by rank.
    shared_bases: Vec<usize>,
    state: Mutex<WinState>,
}

/// What the calls on a window change.
struct WinState {
    errhandler: c_int,
    name: String,
    info: Vec<(String, String)>,
    /// An access and exposure epoch is open (a fence opened it).
    in_epoch: bool,
    /// The targets of the access epoch `MPI_Win_start` opened, by window rank.
    access: Option<Vec<usize>>,
    /// The origins of the exposure epoch `MPI_Win_post` opened whose
    /// accesses have not come yet, by window rank.
    exposure: Option<Vec<usize>>,
    /// The targets this rank holds a lock on (`MPI_Win_lock`): whether
    /// exclusive, and whether the lock word was taken (not under
    /// `MPI_MODE_NOCHECK`).
    locks: HashMap<usize, (bool, bool)>,
    /// `MPI_Win_lock_all` is in force: whether the lock words were taken.
    lock_all: Option<bool>,
    /// Accesses made since the last fence, in the order made.
    queued: Vec<Queued>,
    /// The regions of a dynamic window: start address and length.
    attached: Vec<(usize, usize)>,
    /// Sends of `MPI_Win_complete` still under way, with their buffers:
    /// accesses that only write, which their target takes in its
    /// `MPI_Win_wait`, perhaps after a message this rank sends later.
    sending: Vec<(c_int, Vec<u8>)>,
}

/// An access waiting for the next fence.
struct Queued {
    call: &'static str,
    target: usize,
    /// What travels to the target (see [`Access`]).
    record: Vec<u8>,
    /// Where what the target sends back goes: `count` elements of the
    /// datatype at the address.
    result: Option<(usize, usize, Type)>,
}

static WINDOWS: RwLock<Table<Arc<Window>>> = RwLock::new(Table::new());

/// `MPI_ERR_WIN` for a handle that names no window.
fn bad_handle(handle: c_int) -> MpiError {
    let message = match handle {
        abi::WIN_NULL => "MPI_WIN_NULL is not a window".to_owned(),
        other => format!("{other:#x} is not the handle of a window (never created, or freed already)"),
    };
    MpiError::new(class::WIN, message)
}

fn slot_of(handle: c_int) -> Option<usize> {
    abi::direct_index(kind::WIN, handle)
}

/// The window of `handle`, in a running library.
fn window(call: &str, handle: c_int) -> Result<Arc<Window>> {
    if state::phase() != state::Phase::Running {
        return Err(MpiError::new(class::OTHER, format!("{call} called outside MPI_Init and MPI_Finalize")));
    }
    slot_of(handle).and_then(|slot| WINDOWS.read().get(slot).cloned()).ok_or_else(|| bad_handle(handle))
}

/// Checks that `handle` names a window (for the attribute calls).
pub(crate) fn check(handle: c_int) -> Result<()> {
    slot_of(handle).and_then(|slot| WINDOWS.read().get(slot).map(|_| ())).ok_or_else(|| bad_handle(handle))
}

/// The error handler of window `handle`, if it exists.
pub(crate) fn errhandler_of(handle: c_int) -> Option<c_int> {
    let slot = slot_of(handle)?;
    WINDOWS.read().get(slot).map(|w| w.state.lock().errhandler)
}

/// Runs `body` on the window of `handle`; its errors go to the window's handler.
fn with_window<T>(call: &str, handle: c_int, body: impl FnOnce(&Window) -> Result<T>) -> Result<T> {
    let win = window(call, handle)?;
    body(&win).map_err(|e| e.on_win(handle))
}

/// Memory the library allocated for a window.
enum Memory {
    /// `MPI_Win_allocate`'s, 8-byte aligned.
    Heap(#[allow(dead_code)] Box<[u64]>),
    /// `MPI_Win_allocate_shared`'s: every rank's part, mapped by each.
    Shared(#[allow(dead_code)] passive::Segment),
}

/// What a window is made with.
struct Making {
    base: usize,
    len: isize,
    disp_unit: c_int,
    flavor: c_int,
    memory: Option<Memory>,
    shared_bases: Vec<usize>,
}

/// Makes a window over `comm` (collective): its handle.
/// The window hints MPI defines (MPI-4.0 12.2): the ones a window keeps
/// and `MPI_Win_get_info` gives back; any other key is ignored, as MPI
/// says unknown hints are.
const WINDOW_HINTS: [&str; 7] = [
    "no_locks",
    "accumulate_ordering",
    "accumulate_ops",
    "mpi_accumulate_granularity",
    "same_size",
    "same_disp_unit",
    "alloc_shared_noncontig",
];

/// The hints of info object `info` that windows know.
fn window_hints(info: c_int) -> Result<Vec<(String, String)>> {
    Ok(match info {
        abi::INFO_NULL => Vec::new(),
        other => crate::api::info::entries(other)?
            .into_iter()
            .filter(|(key, _)| WINDOW_HINTS.contains(&key.as_str()))
            .collect(),
    })
}

fn create(call: &str, comm: c_int, info: c_int, making: Making) -> Result<c_int> {
    let (private, rank, size, hints) = {
        let mut state = state::lock(call)?;
        let hints = window_hints(info)?;
        let entry = state.intra(comm)?;
        let (rank, size) = (entry.comm.rank(), entry.comm.size());
        let dup = entry.comm.dup().map_err(|e| MpiError::from(e).on(comm))?;
        (state.add_comm(dup, abi::ERRORS_RETURN), rank, size, hints)
    };
    let all = collective::allgather(private, &[making.len as i64, making.disp_unit as i64], size)?;
    let extents = all.chunks(2).map(|pair| (pair[0] as u64, pair[1])).collect();
    let reach = passive::reach(private, rank, size, making.base)?;
    let window = Window {
        comm: private,
        rank,
        size,
        reach,
        base: making.base,
        len: making.len,
        disp_unit: making.disp_unit,
        flavor: making.flavor,
        model: WIN_UNIFIED,
        extents,
        _memory: making.memory,
        shared_bases: making.shared_bases,
        state: Mutex::new(WinState {
            errhandler: abi::ERRORS_ARE_FATAL,
            name: String::new(),
            info: hints,
            in_epoch: false,
            access: None,
            exposure: None,
            locks: HashMap::new(),
            lock_all: None,
            queued: Vec::new(),
            attached: Vec::new(),
            sending: Vec::new(),
        }),
    };
    let slot = WINDOWS.write().insert(Arc::new(window));
    Ok(abi::direct_handle(kind::WIN, slot))
}

/// A window's displacement unit (an `MPI_Aint` in the `_c` forms), as
/// the `int` the window keeps (`MPI_WIN_DISP_UNIT`).
fn window_unit(unit: impl CountArg) -> Result<c_int> {
    let unit = unit.wide();
    c_int::try_from(unit).map_err(|_| {
        MpiError::new(class::ARG, format!("the displacement unit {unit} is beyond the int range of grappe's windows"))
    })
}

fn check_size(size: isize, disp_unit: c_int) -> Result<()> {
    if size < 0 {
        return Err(MpiError::new(class::ARG, format!("the window size {size} is negative")));
    }
    if disp_unit <= 0 {
        return Err(MpiError::new(class::ARG, format!("the displacement unit {disp_unit} is not positive")));
    }
    Ok(())
}

counted_fn! {
    /// `MPI_Win_create`: a window over `size` bytes at `base` on each rank (collective).
    fn MPI_Win_create / PMPI_Win_create, MPI_Win_create_c / PMPI_Win_create_c(base: *mut c_void, size: isize, disp_unit: Disp, info: c_int, comm: c_int, win: *mut c_int) {
        let disp_unit = window_unit(disp_unit).map_err(|e| e.on(comm))?;
        check_size(size, disp_unit).map_err(|e| e.on(comm))?;
        if win.is_null() {
            return Err(MpiError::new(class::ARG, "the window handle argument is NULL").on(comm));
        }
        let making = Making { base: base as usize, len: size, disp_unit, flavor: FLAVOR_CREATE, memory: None, shared_bases: Vec::new() };
        let handle = create(NAME, comm, info, making).map_err(|e| e.on(comm))?;
        // SAFETY: the caller's output argument, checked non-NULL.
        unsafe { win.write(handle) };
        Ok(())
    }
}

counted_fn! {
    /// `MPI_Win_allocate`: a window over `size` bytes the library allocates (collective).
    fn MPI_Win_allocate / PMPI_Win_allocate, MPI_Win_allocate_c / PMPI_Win_allocate_c(size: isize, disp_unit: Disp, info: c_int, comm: c_int, baseptr: *mut c_void, win: *mut c_int) {
        let disp_unit = window_unit(disp_unit).map_err(|e| e.on(comm))?;
        check_size(size, disp_unit).map_err(|e| e.on(comm))?;
        if win.is_null() || baseptr.is_null() {
            return Err(MpiError::new(class::ARG, "the window handle or base pointer argument is NULL").on(comm));
        }
        let mut memory = vec![0u64; (size as usize).div_ceil(8).max(1)].into_boxed_slice();
        let base = memory.as_mut_ptr() as usize;
        let making = Making { base, len: size, disp_unit, flavor: FLAVOR_ALLOCATE, memory: Some(Memory::Heap(memory)), shared_bases: Vec::new() };
        let handle = create(NAME, comm, info, making).map_err(|e| e.on(comm))?;
        // SAFETY: the caller's output arguments, checked non-NULL; MPI's
        // `baseptr` is a `void **` passed as `void *`.
        unsafe {
            baseptr.cast::<usize>().write(base);
            win.write(handle);
        }
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Win_create_dynamic`: a window of no memory, which
    /// `MPI_Win_attach` gives regions (collective).
    fn MPI_Win_create_dynamic / PMPI_Win_create_dynamic(info: c_int, comm: c_int, win: *mut c_int) {
        if win.is_null() {
            return Err(MpiError::new(class::ARG, "the window handle argument is NULL").on(comm));
        }
        let making = Making { base: 0, len: 0, disp_unit: 1, flavor: FLAVOR_DYNAMIC, memory: None, shared_bases: Vec::new() };
        let handle = create("MPI_Win_create_dynamic", comm, info, making).map_err(|e| e.on(comm))?;
        // SAFETY: the caller's output argument, checked non-NULL.
        unsafe { win.write(handle) };
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Win_attach`: `size` bytes at `base` become part of a dynamic window.
    fn MPI_Win_attach / PMPI_Win_attach(win: c_int, base: *mut c_void, size: isize) {
        with_window("MPI_Win_attach", win, |w| {
            if w.flavor != FLAVOR_DYNAMIC {
                return Err(MpiError::new(class::RMA_FLAVOR, "only a window of MPI_Win_create_dynamic takes attached memory"));
            }
            if size < 0 {
                return Err(MpiError::new(class::ARG, format!("the size {size} is negative")));
            }
            let (start, len) = (base as usize, size as usize);
            let mut state = w.state.lock();
            if state.attached.iter().any(|&(s, l)| start < s + l && s < start + len) {
                return Err(MpiError::new(class::RMA_ATTACH, format!("{len} bytes at {start:#x} overlap memory attached already")));
            }
            state.attached.push((start, len));
            if let Ok(reach) = &w.reach {
                reach.publish_regions(w.rank, &state.attached);
            }
            Ok(())
        })
    }
}

mpi_fn! {
    /// `MPI_Win_detach`: the region attached at `base` leaves the window.
    fn MPI_Win_detach / PMPI_Win_detach(win: c_int, base: *const c_void) {
        with_window("MPI_Win_detach", win, |w| {
            if w.flavor != FLAVOR_DYNAMIC {
                return Err(MpiError::new(class::RMA_FLAVOR, "only a window of MPI_Win_create_dynamic has attached memory"));
            }
            let mut state = w.state.lock();
            let Some(i) = state.attached.iter().position(|&(s, _)| s == base as usize) else {
                return Err(MpiError::new(class::RMA_ATTACH, format!("no memory is attached at {:#x}", base as usize)));
            };
            state.attached.remove(i);
            if let Ok(reach) = &w.reach {
                reach.publish_regions(w.rank, &state.attached);
            }
            Ok(())
        })
    }
}

mpi_fn! {
    /// `MPI_Win_free` (collective): fails with `MPI_ERR_RMA_SYNC` if
    /// accesses made since the last fence were never completed.
    fn MPI_Win_free / PMPI_Win_free(win: *mut c_int) {
        // SAFETY: the caller's in-out argument.
        let handle = unsafe { get(win, "win")? };
        let w = window("MPI_Win_free", handle)?;
        let (pending, open) = {
            let state = w.state.lock();
            let locked = state.lock_all.is_some() || !state.locks.is_empty();
            (state.queued.len(), state.access.is_some() || state.exposure.is_some() || locked)
        };
        if open {
            let error = "an epoch of MPI_Win_start, MPI_Win_post or MPI_Win_lock is still open (call MPI_Win_complete, MPI_Win_wait or MPI_Win_unlock first)";
            return Err(MpiError::new(class::RMA_SYNC, error).on_win(handle));
        }
        if pending > 0 {
            let error = format!("{pending} accesses made since the last MPI_Win_fence were never completed (call MPI_Win_fence before MPI_Win_free)");
            return Err(MpiError::new(class::RMA_SYNC, error).on_win(handle));
        }
        // The accesses sent by MPI_Win_complete reach their targets,
        // whose MPI_Win_wait comes before their MPI_Win_free.
        let sending = std::mem::take(&mut w.state.lock().sending);
        finish_sends(sending).map_err(|e| e.on_win(handle))?;
        // No rank frees its memory while another may still reach it.
        collective::barrier(w.comm).map_err(|e| e.on_win(handle))?;
        crate::api::attr::delete_all(crate::api::attr::Object::Win(handle)).map_err(|e| e.on_win(handle))?;
        if let Some(slot) = slot_of(handle) {
            WINDOWS.write().remove(slot);
        }
        let mut comm = w.comm;
        // SAFETY: a communicator handle the library made.
        crate::errors::check_code(unsafe { crate::api::comm::PMPI_Comm_free::body(&mut comm) })?;
        // SAFETY: the caller's in-out argument.
        unsafe { put(win, abi::WIN_NULL, "win") }
    }
}

mpi_fn! {
    /// `MPI_Win_get_group`: the group of the window's ranks.
    fn MPI_Win_get_group / PMPI_Win_get_group(win: c_int, group: *mut c_int) {
        let w = window("MPI_Win_get_group", win)?;
        let mut state = state::lock("MPI_Win_get_group")?;
        let members = crate::api::group::comm_members(&state.comm(w.comm)?.comm);
        crate::api::group::give(&mut state, members, group).map_err(|e| e.on_win(win))
    }
}

mpi_fn! {
    /// `MPI_Win_get_attr`: the predefined attributes, or the program's.
    fn MPI_Win_get_attr / PMPI_Win_get_attr(win: c_int, keyval: c_int, value: *mut c_void, flag: *mut c_int) {
        let found = get_attr(win, keyval)?;
        // SAFETY: the caller's output arguments; `value` is where MPI
        // stores the attribute (a pointer).
        unsafe {
            if let Some(found) = found {
                put(value.cast::<usize>(), found, "attribute_val").map_err(|e| e.on_win(win))?;
            }
            put(flag, found.is_some() as c_int, "flag").map_err(|e| e.on_win(win))
        }
    }
}

/// The value of attribute `keyval` of window `win`, as C gets it: the
/// base itself, pointers to the other predefined values, the program's
/// values.
pub(crate) fn get_attr(win: c_int, keyval: c_int) -> Result<Option<usize>> {
    let w = window("MPI_Win_get_attr", win)?;
    let predefined = match keyval {
        WIN_BASE => Some(w.base),
        WIN_SIZE => Some(&w.len as *const isize as usize),
        WIN_DISP_UNIT => Some(&w.disp_unit as *const c_int as usize),
        WIN_CREATE_FLAVOR => Some(&w.flavor as *const c_int as usize),
        WIN_MODEL => Some(&w.model as *const c_int as usize),
        _ => None,
    };
    match predefined {
        Some(found) => Ok(Some(found)),
        None => {
            let state = state::lock("MPI_Win_get_attr")?;
            crate::api::attr::user_attr(&state, crate::api::attr::Object::Win(win), keyval)
        }
    }
}

/// The value of attribute `keyval` as Fortran gets it (an integer): the
/// predefined values themselves, the program's values as set.
pub(crate) fn get_attr_for_fortran(win: c_int, keyval: c_int) -> Result<Option<isize>> {
    // MPICH's predefined keys come in pairs: C's (odd, `MPI_WIN_BASE` is
    // 0x66000001) and Fortran's (the even one after it).
    let fortran_key = (keyval as u32 & 0xffff_fff0) == 0x6600_0000 && keyval & 0xf != 0 && keyval & 1 == 0;
    let keyval = if fortran_key { keyval - 1 } else { keyval };
    if !matches!(keyval, WIN_BASE | WIN_SIZE | WIN_DISP_UNIT | WIN_CREATE_FLAVOR | WIN_MODEL) {
        window("MPI_Win_get_attr", win)?;
        let state = state::lock("MPI_Win_get_attr")?;
        return crate::api::attr::user_attr_for_fortran(&state, crate::api::attr::Object::Win(win), keyval);
    }
    let found = get_attr(win, keyval)?;
    // SAFETY: `get_attr` gives pointers to the window's own values, which
    // live while the caller's handle does.
    Ok(found.map(|value| unsafe {
        match keyval {
            WIN_SIZE => *(value as *const isize),
            WIN_DISP_UNIT | WIN_CREATE_FLAVOR | WIN_MODEL => *(value as *const c_int) as isize,
            _ => value as isize,
        }
    }))
}

mpi_fn! {
    /// `MPI_Win_set_name`.
    fn MPI_Win_set_name / PMPI_Win_set_name(win: c_int, name: *const c_char) {
        with_window("MPI_Win_set_name", win, |w| {
            // SAFETY: a NUL-terminated string, as MPI requires.
            let name = unsafe { read_string(name, "win_name")? };
            w.state.lock().name = name;
            Ok(())
        })
    }
}

mpi_fn! {
    /// `MPI_Win_get_name`: empty for a window never named.
    fn MPI_Win_get_name / PMPI_Win_get_name(win: c_int, name: *mut c_char, resultlen: *mut c_int) {
        with_window("MPI_Win_get_name", win, |w| {
            let text = w.state.lock().name.clone();
            // SAFETY: `name` holds MPI_MAX_OBJECT_NAME characters, as MPI requires.
            let len = unsafe { copy_string(&text, name, abi::MAX_OBJECT_NAME, "win_name")? };
            // SAFETY: the caller's output argument.
            unsafe { put(resultlen, len, "resultlen") }
        })
    }
}

mpi_fn! {
    /// `MPI_Win_set_info`: hints, kept and given back by `MPI_Win_get_info`.
    fn MPI_Win_set_info / PMPI_Win_set_info(win: c_int, info: c_int) {
        let w = window("MPI_Win_set_info", win)?;
        let hints = window_hints(info).map_err(|e| e.on_win(win))?;
        let mut state = w.state.lock();
        for (key, value) in hints {
            match state.info.iter_mut().find(|(k, _)| *k == key) {
                Some(entry) => entry.1 = value,
                None => state.info.push((key, value)),
            }
        }
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Win_get_info`: a new info object holding the window's hints.
    fn MPI_Win_get_info / PMPI_Win_get_info(win: c_int, info_used: *mut c_int) {
        let w = window("MPI_Win_get_info", win)?;
        let hints = w.state.lock().info.clone();
        crate::api::info::add(hints, info_used).map_err(|e| e.on_win(win))
    }
}

mpi_fn! {
    /// `MPI_Win_create_errhandler`: a handler called as a communicator's is.
    fn MPI_Win_create_errhandler / PMPI_Win_create_errhandler(function: Option<crate::api::misc::ErrhandlerFunction>, errhandler: *mut c_int) {
        crate::api::misc::create_errhandler(function, errhandler)
    }
}

mpi_fn! {
    /// `MPI_Win_set_errhandler`.
    fn MPI_Win_set_errhandler / PMPI_Win_set_errhandler(win: c_int, errhandler: c_int) {
        with_window("MPI_Win_set_errhandler", win, |w| {
            if crate::api::misc::is_user_handler(errhandler) && crate::api::user_handler(errhandler).is_none() {
                return Err(MpiError::new(class::ARG, format!("{errhandler:#x} is an error handler for files, not for windows")));
            }
            crate::api::errh::check_any_handler(errhandler)?;
            w.state.lock().errhandler = errhandler;
            Ok(())
        })
    }
}

mpi_fn! {
    /// `MPI_Win_get_errhandler`.
    fn MPI_Win_get_errhandler / PMPI_Win_get_errhandler(win: c_int, errhandler: *mut c_int) {
        with_window("MPI_Win_get_errhandler", win, |w| {
            let handler = w.state.lock().errhandler;
            // SAFETY: the caller's output argument.
            unsafe { put(errhandler, handler, "errhandler") }
        })
    }
}

mpi_fn! {
    /// `MPI_Win_call_errhandler`: what a failure with `errorcode` on the
    /// window would do.
    fn MPI_Win_call_errhandler / PMPI_Win_call_errhandler(win: c_int, errorcode: c_int) {
        let handler = window("MPI_Win_call_errhandler", win)?.state.lock().errhandler;
        if let Some(function) = crate::api::user_handler(handler) {
            let (mut w, mut code) = (win, errorcode);
            // SAFETY: the program's handler, with the arguments MPI defines.
            unsafe { function(&mut w, &mut code) };
            return Ok(());
        }
        if handler == abi::ERRORS_RETURN {
            return Ok(());
        }
        let text = crate::errors::string_of_code(errorcode).unwrap_or_else(|| format!("error code {errorcode}"));
        let class = crate::errors::class_of_code(errorcode).unwrap_or(class::OTHER);
        Err(MpiError::new(class, text).on_win(win))
    }
}

/// The kinds of access, as they travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Kind {
    Put = 0,
    Get = 1,
    Accumulate = 2,
    GetAccumulate = 3,
    CompareAndSwap = 4,
}

impl Kind {
    fn from_byte(byte: u8) -> Option<Kind> {
        [Kind::Put, Kind::Get, Kind::Accumulate, Kind::GetAccumulate, Kind::CompareAndSwap]
            .into_iter()
            .find(|k| *k as u8 == byte)
    }

    /// Whether the target sends back what it read.
    fn reads(self) -> bool {
        matches!(self, Kind::Get | Kind::GetAccumulate | Kind::CompareAndSwap)
    }
}

/// An access as the target applies it: where, in which layout, and with
/// which data. It travels as its fields in order, integers in the
/// machine's byte order (every rank of a job runs on one architecture).
#[derive(Debug)]
struct Access {
    kind: Kind,
    /// The operation (accumulates) and the predefined datatype the
    /// target's elements are made of.
    op: c_int,
    base: c_int,
    /// Where the first element starts, in bytes from the window's base
    /// (for a dynamic window, from address 0).
    offset: i64,
    count: u64,
    extent: i64,
    /// The target datatype's blocks: offset and length.
    blocks: Vec<(i64, u64)>,
    /// The origin's packed elements (a compare-and-swap's: the new value,
    /// then the value compared).
    data: Vec<u8>,
}

impl Access {
    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(48 + self.blocks.len() * 16 + self.data.len());
        out.push(self.kind as u8);
        out.extend_from_slice(&self.op.to_ne_bytes());
        out.extend_from_slice(&self.base.to_ne_bytes());
        for n in [self.offset, self.count as i64, self.extent, self.blocks.len() as i64] {
            out.extend_from_slice(&n.to_ne_bytes());
        }
        for &(offset, len) in &self.blocks {
            out.extend_from_slice(&offset.to_ne_bytes());
            out.extend_from_slice(&len.to_ne_bytes());
        }
        out.extend_from_slice(&(self.data.len() as u64).to_ne_bytes());
        out.extend_from_slice(&self.data);
        out
    }

    /// The access at the start of `bytes`, and the bytes after it.
    fn decode(bytes: &[u8]) -> Option<(Access, &[u8])> {
        let mut reader = Reader(bytes);
        let kind = Kind::from_byte(reader.take(1)?[0])?;
        let op = c_int::from_ne_bytes(reader.take(4)?.try_into().ok()?);
        let base = c_int::from_ne_bytes(reader.take(4)?.try_into().ok()?);
        let (offset, count, extent, nblocks) =
            (reader.i64()?, reader.i64()? as u64, reader.i64()?, reader.i64()? as usize);
        let mut blocks = Vec::with_capacity(nblocks.min(1 << 16));
        for _ in 0..nblocks {
            blocks.push((reader.i64()?, reader.i64()? as u64));
        }
        let len = reader.i64()? as usize;
        let data = reader.take(len)?.to_vec();
        Some((Access { kind, op, base, offset, count, extent, blocks, data }, reader.0))
    }

    /// The byte ranges it touches, from the window's base, in element order.
    fn pieces(&self) -> impl Iterator<Item = (i64, usize)> + '_ {
        (0..self.count as i64).flat_map(move |i| {
            self.blocks.iter().map(move |&(offset, len)| (self.offset + i * self.extent + offset, len as usize))
        })
    }

    /// The same bytes as [`Access::pieces`], in the same order, with the
    /// pieces that follow each other in memory joined: what moves the data.
    /// An array of a million integers is then one run, not a million
    /// pieces of four bytes (each an iovec for the kernel to walk).
    fn runs(&self) -> impl Iterator<Item = (i64, usize)> + '_ {
        let whole = self.tiled();
        let joined = whole.is_none().then(|| Joined { pieces: self.pieces(), next: None });
        whole.into_iter().chain(joined.into_iter().flatten())
    }

    /// The one run of the whole access when its elements tile memory (an
    /// element's blocks fill its extent, end to end): found without
    /// walking the elements one by one.
    fn tiled(&self) -> Option<(i64, usize)> {
        let mut element = Joined { pieces: self.blocks.iter().map(|&(at, len)| (at, len as usize)), next: None };
        match (element.next(), element.next()) {
            (Some((0, len)), None) if self.count > 0 && len > 0 && len as i64 == self.extent => {
                Some((self.offset, len * self.count as usize))
            }
            _ => None,
        }
    }

    fn packed_len(&self) -> usize {
        self.count as usize * self.blocks.iter().map(|b| b.1 as usize).sum::<usize>()
    }
}

/// Byte ranges with each range that starts where the one before ends
/// joined to it.
struct Joined<I> {
    pieces: I,
    /// The range read past the end of the run given last.
    next: Option<(i64, usize)>,
}

impl<I: Iterator<Item = (i64, usize)>> Iterator for Joined<I> {
    type Item = (i64, usize);

    fn next(&mut self) -> Option<(i64, usize)> {
        let (at, mut len) = self.next.take().or_else(|| self.pieces.next())?;
        for (next_at, next_len) in self.pieces.by_ref() {
            if next_at != at + len as i64 {
                self.next = Some((next_at, next_len));
                break;
            }
            len += next_len;
        }
        Some((at, len))
    }
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn i64(&mut self) -> Option<i64> {
        Some(i64::from_ne_bytes(self.take(8)?.try_into().ok()?))
    }
}

/// What an access does at a rank: its checked arguments.
struct Origin<'a> {
    call: &'static str,
    win: c_int,
    target_rank: c_int,
    target_disp: isize,
    target_count: Count,
    target_datatype: c_int,
    /// The origin's elements to send, packed.
    data: Vec<u8>,
    /// The elements the target's read goes to.
    result: Option<(usize, usize, Type)>,
    /// The operation and the origin's base datatype it must agree with.
    op: Option<(c_int, Option<&'a crate::datatype::Datatype>)>,
    kind: Kind,
}

/// The packed elements at `buf`.
///
/// # Safety
/// `buf` holds `count` elements of `datatype`, as MPI requires.
unsafe fn pack(buf: *const c_void, count: Count, datatype: c_int, what: &str) -> Result<(Vec<u8>, Type)> {
    let datatype = types::committed(datatype)?;
    // SAFETY: as the caller promised.
    let data = unsafe { crate::api::outgoing(buf, count, &datatype, what)? }.into_owned();
    Ok((data, datatype))
}

/// Queues an access after checking it: the rank, the epoch, the
/// datatypes, the operation and (where the target's size is known) the
/// range.
fn queue(origin: Origin) -> Result<()> {
    let Origin { call, win, target_rank, target_disp, target_count, target_datatype, data, result, op, kind } = origin;
    with_window(call, win, |w| {
        let ttype = types::committed(target_datatype)?;
        let count = crate::api::count_of(target_count, call)?;
        let allowed = {
            let state = w.state.lock();
            let started = state.access.as_ref().is_some_and(|group| {
                target_rank == abi::PROC_NULL || usize::try_from(target_rank).is_ok_and(|t| group.contains(&t))
            });
            let locked = state.lock_all.is_some()
                || usize::try_from(target_rank).is_ok_and(|t| state.locks.contains_key(&t))
                || (target_rank == abi::PROC_NULL && !state.locks.is_empty());
            state.in_epoch || started || locked
        };
        if !allowed {
            return Err(MpiError::new(
                class::RMA_SYNC,
                format!(
                    "no access epoch to target rank {target_rank} is open on the window (MPI_Win_fence, MPI_Win_start with a group holding it, or MPI_Win_lock on it opens one): displacement {target_disp}, count {count}"
                ),
            ));
        }
        if target_rank == abi::PROC_NULL {
            return Ok(());
        }
        let target = usize::try_from(target_rank).ok().filter(|&r| r < w.size).ok_or_else(|| {
            MpiError::new(
                class::RANK,
                format!("target rank {target_rank} is not a rank of the window (size {})", w.size),
            )
        })?;
        // A put or get moves bytes, whatever the elements; only an
        // accumulate combines them, as elements of one predefined datatype.
        let tbase = ttype.base().map(|(base, _)| base);
        let mut op_handle = 0;
        if let Some((handle, origin_base)) = op {
            check_combining(call, handle, origin_base, &ttype, count)?;
            op_handle = handle;
        }
        let (_, disp_unit) = w.extents[target];
        let access = Access {
            kind,
            op: op_handle,
            base: tbase.map_or(0, |base| base.handle),
            offset: target_disp as i64 * if w.flavor == FLAVOR_DYNAMIC { 1 } else { disp_unit },
            count: count as u64,
            extent: ttype.extent() as i64,
            blocks: ttype.blocks().iter().map(|b| (b.offset as i64, b.len as u64)).collect(),
            data,
        };
        let needed = access.packed_len();
        let sent = match kind {
            Kind::Put | Kind::Accumulate | Kind::GetAccumulate => access.data.len(),
            Kind::Get => needed,
            Kind::CompareAndSwap => access.data.len() / 2,
        };
        if sent != needed && !(kind == Kind::GetAccumulate && op_handle == NO_OP) {
            return Err(MpiError::new(
                class::TYPE,
                format!(
                    "the origin gives {sent} bytes, the target's {count} elements of {} hold {needed}",
                    described(&ttype)
                ),
            ));
        }
        if let Some((_, rcount, rtype)) = &result {
            if rtype.packed_len(*rcount) != needed {
                return Err(MpiError::new(
                    class::TYPE,
                    format!(
                        "the result buffer holds {} bytes, the target's {count} elements of {} hold {needed}",
                        rtype.packed_len(*rcount),
                        described(&ttype)
                    ),
                ));
            }
        }
        if w.flavor != FLAVOR_DYNAMIC {
            let size = w.extents[target].0 as i64;
            if let Some((at, len)) = access.runs().find(|&(at, len)| at < 0 || at + len as i64 > size) {
                return Err(MpiError::new(
                    class::RMA_RANGE,
                    format!(
                        "target rank {target}, displacement {target_disp}, count {count}: bytes {at}..{} are outside its window of {size} bytes",
                        at + len as i64
                    ),
                ));
            }
        }
        if w.holds_lock_on(target) {
            return w.now(call, target, &access, result);
        }
        w.state.lock().queued.push(Queued { call, target, record: access.encode(), result });
        Ok(())
    })
}

/// The predefined datatype an accumulate's origin elements are made of,
/// checked: elements of several (a struct of an `MPI_INT` and an
/// `MPI_FLOAT`) cannot be combined; an origin of no byte combines nothing.
fn combined_base(call: &str, origin: &Type, bytes: usize) -> Result<Option<&'static crate::datatype::Datatype>> {
    match origin.base() {
        Some((base, _)) => Ok(Some(base)),
        None if bytes == 0 => Ok(None),
        None => Err(MpiError::new(
            class::TYPE,
            format!("{call}: the origin datatype {} is not made of one predefined datatype", described(origin)),
        )),
    }
}

/// Checks what an accumulate combines: a predefined operation, valid on
/// the target's elements, which are of one predefined datatype, the
/// origin's too. An access of no element combines nothing: any operation
/// and any datatypes go, as on MPICH.
fn check_combining(
    call: &str,
    handle: c_int,
    origin_base: Option<&crate::datatype::Datatype>,
    ttype: &Type,
    count: usize,
) -> Result<()> {
    if crate::api::coll::user_op(handle)?.is_some() {
        return Err(MpiError::new(class::OP, format!("{call} takes only predefined operations, not {handle:#x}")));
    }
    let code = OpCode::lookup(handle)?;
    if count == 0 || ttype.size() == 0 {
        return Ok(());
    }
    let (tbase, _) = ttype.base().ok_or_else(|| {
        MpiError::new(
            class::TYPE,
            format!("{call}: the target datatype {} is not made of one predefined datatype", described(ttype)),
        )
    })?;
    code.check(tbase)?;
    match origin_base {
        Some(origin_base) if origin_base.handle != tbase.handle && code != OpCode::NoOp => Err(MpiError::new(
            class::TYPE,
            format!("the origin's elements ({}) and the target's ({}) differ", origin_base.name, tbase.name),
        )),
        _ => Ok(()),
    }
}

/// A datatype as an error names it: its name, or what it is when it
/// has none (derived datatypes start without one).
fn described(datatype: &Type) -> String {
    match datatype.name() {
        name if name.is_empty() => "(an unnamed derived datatype)".to_owned(),
        name => name,
    }
}

/// `MPI_NO_OP`.
const NO_OP: c_int = 0x5800_000e;

counted_fn! {
    /// `MPI_Put`: completes at the next fence.
    fn MPI_Put / PMPI_Put, MPI_Put_c / PMPI_Put_c(origin_addr: *const c_void, origin_count: Int, origin_datatype: c_int, target_rank: c_int, target_disp: isize, target_count: Int, target_datatype: c_int, win: c_int) {
        widen!(origin_count, target_count);
        put_access(NAME, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, win)
    }
}

#[allow(clippy::too_many_arguments)]
fn put_access(
    call: &'static str,
    origin_addr: *const c_void,
    origin_count: Count,
    origin_datatype: c_int,
    target_rank: c_int,
    target_disp: isize,
    target_count: Count,
    target_datatype: c_int,
    win: c_int,
) -> Result<()> {
    // SAFETY: the origin buffer holds its elements, as MPI requires.
    let (data, _) = unsafe { pack(origin_addr, origin_count, origin_datatype, call) }.map_err(|e| e.on_win(win))?;
    queue(Origin {
        call,
        win,
        target_rank,
        target_disp,
        target_count,
        target_datatype,
        data,
        result: None,
        op: None,
        kind: Kind::Put,
    })
}

counted_fn! {
    /// `MPI_Get`: the origin's elements are written at the next fence.
    fn MPI_Get / PMPI_Get, MPI_Get_c / PMPI_Get_c(origin_addr: *mut c_void, origin_count: Int, origin_datatype: c_int, target_rank: c_int, target_disp: isize, target_count: Int, target_datatype: c_int, win: c_int) {
        widen!(origin_count, target_count);
        get_access(NAME, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, win)
    }
}

#[allow(clippy::too_many_arguments)]
fn get_access(
    call: &'static str,
    origin_addr: *mut c_void,
    origin_count: Count,
    origin_datatype: c_int,
    target_rank: c_int,
    target_disp: isize,
    target_count: Count,
    target_datatype: c_int,
    win: c_int,
) -> Result<()> {
    let result = Some(result_of(origin_addr, origin_count, origin_datatype, call).map_err(|e| e.on_win(win))?);
    queue(Origin {
        call,
        win,
        target_rank,
        target_disp,
        target_count,
        target_datatype,
        data: Vec::new(),
        result,
        op: None,
        kind: Kind::Get,
    })
}

/// Where the elements a target sends back go, checked.
fn result_of(addr: *mut c_void, count: Count, datatype: c_int, what: &str) -> Result<(usize, usize, Type)> {
    let datatype = types::committed(datatype)?;
    let count = crate::api::count_of(count, what)?;
    if addr.is_null() && count > 0 && datatype.size() > 0 && datatype.true_lb() == 0 {
        return Err(MpiError::new(class::BUFFER, format!("{what}: a NULL buffer for {count} elements")));
    }
    Ok((addr as usize, count, datatype))
}

counted_fn! {
    /// `MPI_Accumulate`: `target = target op origin`, element by element, at the next fence.
    fn MPI_Accumulate / PMPI_Accumulate, MPI_Accumulate_c / PMPI_Accumulate_c(origin_addr: *const c_void, origin_count: Int, origin_datatype: c_int, target_rank: c_int, target_disp: isize, target_count: Int, target_datatype: c_int, op: c_int, win: c_int) {
        widen!(origin_count, target_count);
        accumulate_access(NAME, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, op, win)
    }
}

#[allow(clippy::too_many_arguments)]
fn accumulate_access(
    call: &'static str,
    origin_addr: *const c_void,
    origin_count: Count,
    origin_datatype: c_int,
    target_rank: c_int,
    target_disp: isize,
    target_count: Count,
    target_datatype: c_int,
    op: c_int,
    win: c_int,
) -> Result<()> {
    // SAFETY: the origin buffer holds its elements, as MPI requires.
    let (data, otype) = unsafe { pack(origin_addr, origin_count, origin_datatype, call) }.map_err(|e| e.on_win(win))?;
    let obase = combined_base(call, &otype, data.len()).map_err(|e| e.on_win(win))?;
    queue(Origin {
        call,
        win,
        target_rank,
        target_disp,
        target_count,
        target_datatype,
        data,
        result: None,
        op: Some((op, obase)),
        kind: Kind::Accumulate,
    })
}

counted_fn! {
    /// `MPI_Get_accumulate`: reads the target's elements, then accumulates.
    fn MPI_Get_accumulate / PMPI_Get_accumulate, MPI_Get_accumulate_c / PMPI_Get_accumulate_c(origin_addr: *const c_void, origin_count: Int, origin_datatype: c_int, result_addr: *mut c_void, result_count: Int, result_datatype: c_int, target_rank: c_int, target_disp: isize, target_count: Int, target_datatype: c_int, op: c_int, win: c_int) {
        widen!(origin_count, result_count, target_count);
        get_accumulate_access(NAME, origin_addr, origin_count, origin_datatype, result_addr, result_count, result_datatype, target_rank, target_disp, target_count, target_datatype, op, win)
    }
}

#[allow(clippy::too_many_arguments)]
fn get_accumulate_access(
    call: &'static str,
    origin_addr: *const c_void,
    origin_count: Count,
    origin_datatype: c_int,
    result_addr: *mut c_void,
    result_count: Count,
    result_datatype: c_int,
    target_rank: c_int,
    target_disp: isize,
    target_count: Count,
    target_datatype: c_int,
    op: c_int,
    win: c_int,
) -> Result<()> {
    let (data, obase) = match op {
        NO_OP => (Vec::new(), None),
        _ => {
            // SAFETY: the origin buffer holds its elements, as MPI requires.
            let (data, otype) =
                unsafe { pack(origin_addr, origin_count, origin_datatype, call) }.map_err(|e| e.on_win(win))?;
            let obase = combined_base(call, &otype, data.len()).map_err(|e| e.on_win(win))?;
            (data, obase)
        }
    };
    let result = Some(result_of(result_addr, result_count, result_datatype, call).map_err(|e| e.on_win(win))?);
    queue(Origin {
        call,
        win,
        target_rank,
        target_disp,
        target_count,
        target_datatype,
        data,
        result,
        op: Some((op, obase)),
        kind: Kind::GetAccumulate,
    })
}

mpi_fn! {
    /// `MPI_Fetch_and_op`: `MPI_Get_accumulate` of one element.
    fn MPI_Fetch_and_op / PMPI_Fetch_and_op(origin_addr: *const c_void, result_addr: *mut c_void, datatype: c_int, target_rank: c_int, target_disp: isize, op: c_int, win: c_int) {
        let call = "MPI_Fetch_and_op";
        let (data, obase) = match op {
            NO_OP => (Vec::new(), None),
            _ => {
                // SAFETY: one element at the origin, as MPI requires.
                let (data, otype) = unsafe { pack(origin_addr, 1, datatype, call) }.map_err(|e| e.on_win(win))?;
                (data, otype.base().map(|b| b.0))
            }
        };
        let result = Some(result_of(result_addr, 1, datatype, call).map_err(|e| e.on_win(win))?);
        queue(Origin { call, win, target_rank, target_disp, target_count: 1, target_datatype: datatype, data, result, op: Some((op, obase)), kind: Kind::GetAccumulate })
    }
}

mpi_fn! {
    /// `MPI_Compare_and_swap`: the target's element becomes the origin's
    /// if it equals `compare_addr`'s; the old value goes to `result_addr`.
    fn MPI_Compare_and_swap / PMPI_Compare_and_swap(origin_addr: *const c_void, compare_addr: *const c_void, result_addr: *mut c_void, datatype: c_int, target_rank: c_int, target_disp: isize, win: c_int) {
        let call = "MPI_Compare_and_swap";
        let predefined = crate::datatype::predefined(datatype).filter(|d| !matches!(d.kind, crate::datatype::Kind::Pair(_) | crate::datatype::Kind::F32 | crate::datatype::Kind::F64 | crate::datatype::Kind::LongDouble | crate::datatype::Kind::Complex32 | crate::datatype::Kind::Complex64));
        if predefined.is_none() {
            return Err(MpiError::new(class::TYPE, format!("{call} takes an integer, logical or byte datatype, not {datatype:#x}")).on_win(win));
        }
        // SAFETY: one element at each, as MPI requires.
        let (mut data, _) = unsafe { pack(origin_addr, 1, datatype, call) }.map_err(|e| e.on_win(win))?;
        // SAFETY: as above.
        let (compare, _) = unsafe { pack(compare_addr, 1, datatype, call) }.map_err(|e| e.on_win(win))?;
        data.extend_from_slice(&compare);
        let result = Some(result_of(result_addr, 1, datatype, call).map_err(|e| e.on_win(win))?);
        queue(Origin { call, win, target_rank, target_disp, target_count: 1, target_datatype: datatype, data, result, op: None, kind: Kind::CompareAndSwap })
    }
}

/// What a target sends back for each access: whether it was applied,
/// then what it read (for the kinds that read).
const APPLIED: u8 = 0;
const OUT_OF_RANGE: u8 = 1;

impl Window {
    /// Whether bytes `at..at + len` from the base are this rank's memory.
    fn holds(&self, attached: &[(usize, usize)], at: i64, len: usize) -> bool {
        match self.flavor {
            FLAVOR_DYNAMIC => {
                let start = at as usize;
                at >= 0 && attached.iter().any(|&(s, l)| start >= s && start + len <= s + l)
            }
            _ => at >= 0 && at + len as i64 <= self.len as i64,
        }
    }

    /// Applies one access to this rank's memory: its reply.
    fn apply(&self, access: &Access, attached: &[(usize, usize)]) -> Vec<u8> {
        // A dynamic window's element must lie in one region attached; the
        // other windows are one region, checked by runs.
        let outside = match self.flavor {
            FLAVOR_DYNAMIC => access.pieces().any(|(at, len)| !self.holds(attached, at, len)),
            _ => access.runs().any(|(at, len)| !self.holds(attached, at, len)),
        };
        if outside {
            return vec![OUT_OF_RANGE];
        }
        let memory = |at: i64| (self.base as i64 + at) as usize as *mut u8;
        let mut current = Vec::with_capacity(access.packed_len());
        for (at, len) in access.runs() {
            // SAFETY: inside this rank's window memory, checked above,
            // which the program leaves alone during the fence.
            current.extend_from_slice(unsafe { std::slice::from_raw_parts(memory(at), len) });
        }
        let mut reply = vec![APPLIED];
        if access.kind.reads() {
            reply.extend_from_slice(&current);
        }
        if let Some(new) = new_value(access, &current) {
            let mut at_data = 0;
            for (at, len) in access.runs() {
                // SAFETY: as above.
                unsafe { std::ptr::copy_nonoverlapping(new[at_data..].as_ptr(), memory(at), len) };
                at_data += len;
            }
        }
        reply
    }
}

impl Window {
    /// Applies the accesses of `origin`, as they came: the replies.
    fn apply_all(&self, origin: usize, mut bytes: &[u8]) -> Result<Vec<u8>> {
        let attached = self.state.lock().attached.clone();
        let mut replies = Vec::new();
        while !bytes.is_empty() {
            let Some((access, rest)) = Access::decode(bytes) else {
                return Err(MpiError::new(class::INTERN, format!("a malformed access from rank {origin}")));
            };
            replies.extend_from_slice(&self.apply(&access, &attached));
            bytes = rest;
        }
        Ok(replies)
    }
}

/// What an access leaves at the target where `current` was, packed:
/// `None` if it changes nothing.
fn new_value(access: &Access, current: &[u8]) -> Option<Vec<u8>> {
    match access.kind {
        Kind::Get => None,
        Kind::Put => Some(access.data.clone()),
        Kind::CompareAndSwap => {
            let (value, compare) = access.data.split_at(access.data.len() / 2);
            (current == compare).then(|| value.to_vec())
        }
        Kind::Accumulate | Kind::GetAccumulate => combined(access, current),
    }
}

/// `current op origin`, packed: `None` for `MPI_NO_OP`.
fn combined(access: &Access, current: &[u8]) -> Option<Vec<u8>> {
    let code = OpCode::lookup(access.op).ok()?;
    match code {
        OpCode::NoOp => None,
        OpCode::Replace => Some(access.data.clone()),
        _ => {
            let base = crate::datatype::predefined(access.base)?;
            let (combine, _) =
                crate::api::icoll::combine_of(access.op, None, access.base, &Type::Predefined(base)).ok()?;
            // `combine(input, inout)` leaves `input ∘ inout` in `inout`.
            let mut result = access.data.clone();
            combine(current, &mut result);
            Some(result)
        }
    }
}

/// The fence's work: every rank's queued accesses to their targets,
/// applied there, and what they read back to their origins.
///
/// The accesses go in rounds of at most [`ROUND_BYTES`] each way, so that
/// an epoch of many large reads (MPICH's manyget: 100000 gets of 128 KiB)
/// does not hold every answer in memory at once; every rank takes part
/// in as many rounds as the rank that needs most, one at least (the
/// fence synchronizes the ranks even without accesses).
fn fence(w: &Window) -> Result<()> {
    let queued = std::mem::take(&mut w.state.lock().queued);
    let rounds = rounds(&queued, ROUND_BYTES);
    let counts = collective::allgather(w.comm, &[rounds.len() as i64], w.size)?;
    let needed = counts.into_iter().max().unwrap_or(1).max(1) as usize;
    let mut first_error = None;
    for round in 0..needed {
        let accesses = rounds.get(round).map_or(&[][..], |r| &queued[r.clone()]);
        if let Err(error) = fence_round(w, accesses)? {
            first_error.get_or_insert(error);
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// Bytes of accesses and of answers one round of a fence carries from a
/// rank at most (but for a single access larger than that, which goes
/// alone).
const ROUND_BYTES: usize = 64 << 20;

/// `queued` cut, in order, into rounds of at most `limit` bytes sent and
/// answered.
fn rounds(queued: &[Queued], limit: usize) -> Vec<std::ops::Range<usize>> {
    let mut rounds = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, access) in queued.iter().enumerate() {
        let answer = access.result.as_ref().map_or(0, |(_, count, datatype)| datatype.packed_len(*count));
        let size = access.record.len() + answer;
        if i > start && bytes + size > limit {
            rounds.push(start..i);
            (start, bytes) = (i, 0);
        }
        bytes += size;
    }
    if start < queued.len() {
        rounds.push(start..queued.len());
    }
    rounds
}

/// One round of a fence: the outer error stops the fence (the ranks are
/// out of step), the inner one is a refused access to report.
fn fence_round(w: &Window, queued: &[Queued]) -> Result<Result<()>> {
    let mut outgoing = vec![Vec::new(); w.size];
    for access in queued {
        outgoing[access.target].extend_from_slice(&access.record);
    }
    let incoming = collective::exchange(w.comm, &outgoing, MPI_BYTE)?;
    let replies =
        incoming.iter().enumerate().map(|(origin, bytes)| w.apply_all(origin, bytes)).collect::<Result<Vec<_>>>()?;
    let answers = collective::exchange(w.comm, &replies, MPI_BYTE)?;
    Ok(deliver(w, queued, &answers))
}

/// Writes what the targets read to the origin's buffers; the first
/// access a target refused, as an error.
fn deliver(w: &Window, queued: &[Queued], answers: &[Vec<u8>]) -> Result<()> {
    let mut at = vec![0usize; w.size];
    let mut first_error = None;
    for access in queued {
        let answer = answers[access.target].get(at[access.target]..).unwrap_or(&[]);
        at[access.target] += 1;
        if answer.first() == Some(&OUT_OF_RANGE) {
            let (decoded, _) = Access::decode(&access.record).expect("encoded here");
            first_error.get_or_insert_with(|| {
                MpiError::new(
                    class::RMA_RANGE,
                    format!(
                        "{} to target rank {} at byte offset {} ({} elements) reached outside the target's window (no memory attached there)",
                        access.call, access.target, decoded.offset, decoded.count
                    ),
                )
            });
            continue;
        }
        let Some((addr, count, datatype)) = &access.result else { continue };
        let (decoded, _) = Access::decode(&access.record).expect("encoded here");
        let len = decoded.packed_len();
        let data = &answers[access.target][at[access.target]..at[access.target] + len];
        at[access.target] += len;
        let room = datatype.packed_len(*count);
        // SAFETY: the origin's result buffer holds `count` elements, as MPI requires.
        unsafe { datatype.unpack(&data[..len.min(room)], *addr as *mut u8) };
    }
    first_error.map_or(Ok(()), Err)
}

mpi_fn! {
    /// `MPI_Win_fence` (collective): completes every access made since
    /// the last fence, and opens an epoch unless `MPI_MODE_NOSUCCEED`.
    fn MPI_Win_fence / PMPI_Win_fence(assert: c_int, win: c_int) {
        with_window("MPI_Win_fence", win, |w| {
            check_assert(assert)?;
            let done = fence(w);
            w.state.lock().in_epoch = assert & MODE_NOSUCCEED == 0;
            done
        })
    }
}

/// Tags of the messages of general active-target synchronization, on the
/// window's communicator: an origin's accesses to a target, and what the
/// target sends back.
const ACCESSES_TAG: c_int = 1;
const REPLIES_TAG: c_int = 2;

/// The window ranks of the members of `group`.
fn window_ranks(call: &str, w: &Window, group: c_int) -> Result<Vec<usize>> {
    let state = state::lock(call)?;
    let members = crate::api::group::members(&state, group)?;
    let ranks = crate::api::group::comm_members(&state.comm(w.comm)?.comm);
    members
        .iter()
        .map(|world| {
            ranks.iter().position(|r| r == world).ok_or_else(|| {
                MpiError::new(class::GROUP, format!("world rank {world} of the group is not a rank of the window"))
            })
        })
        .collect()
}

/// Sends `bytes` to window rank `dest`; the send stays in `sends` (with
/// its buffer) until [`finish_sends`].
fn send_bytes(w: &Window, dest: usize, tag: c_int, bytes: Vec<u8>, sends: &mut Vec<(c_int, Vec<u8>)>) -> Result<()> {
    let len = c_int::try_from(bytes.len())
        .map_err(|_| MpiError::new(class::COUNT, format!("{} bytes of accesses for one rank", bytes.len())))?;
    let mut request = abi::REQUEST_NULL;
    // SAFETY: `bytes` stays alive (in `sends`) until the send completes.
    let code = unsafe {
        crate::api::p2p::PMPI_Isend::body(
            bytes.as_ptr().cast(),
            len,
            MPI_BYTE,
            dest as c_int,
            tag,
            w.comm,
            &mut request,
        )
    };
    crate::errors::check_code(code)?;
    sends.push((request, bytes));
    Ok(())
}

/// The sends of `sends` that have not completed yet.
fn unfinished_sends(sends: Vec<(c_int, Vec<u8>)>) -> Result<Vec<(c_int, Vec<u8>)>> {
    let mut unfinished = Vec::new();
    for (mut request, bytes) in sends {
        let mut flag = 0;
        // SAFETY: the request of a send whose buffer `bytes` is, kept until it completes.
        let code = unsafe {
            crate::api::request::PMPI_Test::body(&mut request, &mut flag, abi::STATUS_IGNORE as *mut abi::Status)
        };
        crate::errors::check_code(code)?;
        if flag == 0 {
            unfinished.push((request, bytes));
        }
    }
    Ok(unfinished)
}

fn finish_sends(sends: Vec<(c_int, Vec<u8>)>) -> Result<()> {
    let mut requests: Vec<c_int> = sends.iter().map(|s| s.0).collect();
    // SAFETY: the requests of the sends, whose buffers `sends` keeps until then.
    let code = unsafe {
        crate::api::request::PMPI_Waitall::body(
            requests.len() as c_int,
            requests.as_mut_ptr(),
            abi::STATUS_IGNORE as *mut abi::Status,
        )
    };
    drop(sends);
    crate::errors::check_code(code)
}

/// The message from window rank `source` with `tag`, if it has come.
fn try_receive(w: &Window, source: usize, tag: c_int) -> Result<Option<Vec<u8>>> {
    let (mut flag, mut status) = (0, abi::Status::default());
    // SAFETY: output arguments of this frame.
    let code = unsafe { crate::api::p2p::PMPI_Iprobe::body(source as c_int, tag, w.comm, &mut flag, &mut status) };
    crate::errors::check_code(code)?;
    if flag == 0 {
        return Ok(None);
    }
    let len = status.bytes() as usize;
    let mut bytes = vec![0u8; len];
    // SAFETY: `bytes` holds the message's `len` bytes.
    let code = unsafe {
        crate::api::p2p::PMPI_Recv::body(
            bytes.as_mut_ptr().cast(),
            len as c_int,
            MPI_BYTE,
            source as c_int,
            tag,
            w.comm,
            abi::STATUS_IGNORE as *mut abi::Status,
        )
    };
    crate::errors::check_code(code)?;
    Ok(Some(bytes))
}

/// Applies the accesses of the exposure epoch's origins that have come
/// and answers them: whether every origin has been served.
fn serve_exposure(w: &Window, sends: &mut Vec<(c_int, Vec<u8>)>) -> Result<bool> {
    let Some(waiting) = w.state.lock().exposure.clone() else { return Ok(true) };
    let mut still = Vec::new();
    let mut refused = None;
    for origin in waiting {
        match try_receive(w, origin, ACCESSES_TAG)? {
            Some(bytes) => {
                let replies = w.apply_all(origin, &bytes)?;
                if reads_any(&bytes) {
                    send_bytes(w, origin, REPLIES_TAG, replies, sends)?;
                } else if let Some(error) = refusal(origin, &bytes, &replies) {
                    // The origin waits for no answer: the error is the target's.
                    refused.get_or_insert(error);
                }
            }
            None => still.push(origin),
        }
    }
    let done = still.is_empty();
    w.state.lock().exposure = Some(still);
    refused.map_or(Ok(done), Err)
}

/// Whether any of the accesses in `bytes` reads the target (its origin
/// then waits for the answer; otherwise it waits for nothing, as MPI lets
/// `MPI_Win_complete` return before the target has done anything).
fn reads_any(mut bytes: &[u8]) -> bool {
    while let Some((access, rest)) = Access::decode(bytes) {
        if access.kind.reads() {
            return true;
        }
        bytes = rest;
    }
    false
}

/// The error of the first access of `bytes` that `replies` says fell
/// outside this rank's memory.
fn refusal(origin: usize, mut bytes: &[u8], replies: &[u8]) -> Option<MpiError> {
    for &status in replies {
        let (access, rest) = Access::decode(bytes)?;
        if status == OUT_OF_RANGE {
            return Some(MpiError::new(
                class::RMA_RANGE,
                format!(
                    "an access of origin rank {origin} at byte offset {} ({} elements) reached outside this rank's window (no memory attached there)",
                    access.offset, access.count
                ),
            ));
        }
        bytes = rest;
    }
    None
}

mpi_fn! {
    /// `MPI_Win_post`: opens an exposure epoch to the origins of `group`.
    fn MPI_Win_post / PMPI_Win_post(group: c_int, assert: c_int, win: c_int) {
        with_window("MPI_Win_post", win, |w| {
            check_assert(assert)?;
            let origins = window_ranks("MPI_Win_post", w, group)?;
            let mut state = w.state.lock();
            if state.exposure.is_some() {
                return Err(MpiError::new(class::RMA_SYNC, "an exposure epoch of MPI_Win_post is open already"));
            }
            state.exposure = Some(origins);
            Ok(())
        })
    }
}

mpi_fn! {
    /// `MPI_Win_start`: opens an access epoch to the targets of `group`.
    fn MPI_Win_start / PMPI_Win_start(group: c_int, assert: c_int, win: c_int) {
        with_window("MPI_Win_start", win, |w| {
            check_assert(assert)?;
            let targets = window_ranks("MPI_Win_start", w, group)?;
            let mut state = w.state.lock();
            if state.access.is_some() {
                return Err(MpiError::new(class::RMA_SYNC, "an access epoch of MPI_Win_start is open already"));
            }
            state.access = Some(targets);
            Ok(())
        })
    }
}

mpi_fn! {
    /// `MPI_Win_complete`: carries the epoch's accesses to their targets
    /// and waits for what they read; serves this rank's own exposure
    /// epoch meanwhile, so that ranks that access each other both go on.
    fn MPI_Win_complete / PMPI_Win_complete(win: c_int) {
        with_window("MPI_Win_complete", win, |w| {
            let (targets, queued) = {
                let mut state = w.state.lock();
                let Some(targets) = state.access.take() else {
                    return Err(MpiError::new(class::RMA_SYNC, "no access epoch of MPI_Win_start is open"));
                };
                (targets, std::mem::take(&mut state.queued))
            };
            let mut sends = Vec::new();
            for &target in &targets {
                let bytes: Vec<u8> = queued.iter().filter(|q| q.target == target).flat_map(|q| q.record.iter().copied()).collect();
                send_bytes(w, target, ACCESSES_TAG, bytes, &mut sends)?;
            }
            let mut answers = vec![Vec::new(); w.size];
            // Only targets that read send an answer (see `reads_any`).
            let mut waiting: Vec<usize> =
                targets.into_iter().filter(|&t| queued.iter().any(|q| q.target == t && q.result.is_some())).collect();
            while !waiting.is_empty() {
                let mut still = Vec::new();
                for target in waiting {
                    match try_receive(w, target, REPLIES_TAG)? {
                        Some(bytes) => answers[target] = bytes,
                        None => still.push(target),
                    }
                }
                waiting = still;
                if !waiting.is_empty() {
                    serve_exposure(w, &mut sends)?;
                    std::thread::yield_now();
                }
            }
            // The origin's buffers were copied into the messages: the
            // epoch is over whether or not the targets took them yet
            // (MPI's example of a target receiving a message from this
            // rank before its MPI_Win_wait needs that).
            let earlier = std::mem::take(&mut w.state.lock().sending);
            let unfinished = unfinished_sends(earlier.into_iter().chain(sends).collect())?;
            w.state.lock().sending = unfinished;
            deliver(w, &queued, &answers)
        })
    }
}

mpi_fn! {
    /// `MPI_Win_wait`: applies the accesses of every origin of the
    /// exposure epoch, then closes it.
    fn MPI_Win_wait / PMPI_Win_wait(win: c_int) {
        with_window("MPI_Win_wait", win, |w| {
            if w.state.lock().exposure.is_none() {
                return Err(MpiError::new(class::RMA_SYNC, "no exposure epoch of MPI_Win_post is open"));
            }
            let mut sends = Vec::new();
            while !serve_exposure(w, &mut sends)? {
                std::thread::yield_now();
            }
            w.state.lock().exposure = None;
            finish_sends(sends)
        })
    }
}

mpi_fn! {
    /// `MPI_Win_test`: `MPI_Win_wait` if every origin's accesses have
    /// come, else `flag` false and the epoch stays open.
    fn MPI_Win_test / PMPI_Win_test(win: c_int, flag: *mut c_int) {
        with_window("MPI_Win_test", win, |w| {
            if w.state.lock().exposure.is_none() {
                return Err(MpiError::new(class::RMA_SYNC, "no exposure epoch of MPI_Win_post is open"));
            }
            let mut sends = Vec::new();
            let done = serve_exposure(w, &mut sends)?;
            if done {
                w.state.lock().exposure = None;
            }
            finish_sends(sends)?;
            // SAFETY: the caller's output argument.
            unsafe { put(flag, done as c_int, "flag") }
        })
    }
}

fn check_assert(assert: c_int) -> Result<()> {
    match assert & !MODES {
        0 => Ok(()),
        _ => Err(MpiError::new(class::ARG, format!("{assert:#x} is not a combination of MPI_MODE_* assertions"))),
    }
}

impl Window {
    /// Whether this rank holds a passive-target lock on `target`.
    fn holds_lock_on(&self, target: usize) -> bool {
        let state = self.state.lock();
        state.lock_all.is_some() || state.locks.contains_key(&target)
    }

    /// Makes an access of a passive-target epoch now, writing what it
    /// read to the origin's result buffer.
    fn now(&self, call: &str, target: usize, access: &Access, result: Option<(usize, usize, Type)>) -> Result<()> {
        let reach = self.reach.as_ref().map_err(|why| unreachable_target(call, target, why))?;
        if self.flavor == FLAVOR_DYNAMIC {
            reach.check_attached(target, access, call)?;
        }
        let read = reach.apply(target, access, call)?;
        if let Some((addr, count, datatype)) = result {
            let room = datatype.packed_len(count);
            // SAFETY: the origin's result buffer holds `count` elements, as MPI requires.
            unsafe { datatype.unpack(&read[..read.len().min(room)], addr as *mut u8) };
        }
        Ok(())
    }

    /// The lock-free reach of this window, or why passive target cannot be.
    fn reach_for(&self, call: &str, target: usize) -> Result<&passive::Reach> {
        self.reach.as_ref().map_err(|why| unreachable_target(call, target, why))
    }

    /// A target rank of the window, checked.
    fn target(&self, rank: c_int) -> Result<usize> {
        usize::try_from(rank).ok().filter(|&r| r < self.size).ok_or_else(|| {
            MpiError::new(class::RANK, format!("target rank {rank} is not a rank of the window (size {})", self.size))
        })
    }
}

fn unreachable_target(call: &str, target: usize, why: &str) -> MpiError {
    MpiError::new(
        class::UNSUPPORTED_OPERATION,
        format!("{call}: passive-target synchronization on target rank {target} is not available: {why}"),
    )
}

/// `MPI_MODE_NOCHECK`: no other rank holds a conflicting lock, so none is taken.
const MODE_NOCHECK: c_int = 1024;

mpi_fn! {
    /// `MPI_Win_lock`: an exclusive or shared lock on `rank`'s window.
    fn MPI_Win_lock / PMPI_Win_lock(lock_type: c_int, rank: c_int, assert: c_int, win: c_int) {
        with_window("MPI_Win_lock", win, |w| {
            check_assert(assert)?;
            let exclusive = match lock_type {
                passive::LOCK_EXCLUSIVE => true,
                passive::LOCK_SHARED => false,
                other => return Err(MpiError::new(class::ARG, format!("{other} is neither MPI_LOCK_EXCLUSIVE nor MPI_LOCK_SHARED"))),
            };
            let target = w.target(rank)?;
            let reach = w.reach_for("MPI_Win_lock", target)?;
            {
                let state = w.state.lock();
                if state.locks.contains_key(&target) || state.lock_all.is_some() {
                    return Err(MpiError::new(class::RMA_SYNC, format!("this rank holds a lock on target rank {target} already")));
                }
            }
            let take = assert & MODE_NOCHECK == 0;
            if take {
                reach.lock(target, exclusive);
            }
            w.state.lock().locks.insert(target, (exclusive, take));
            Ok(())
        })
    }
}

mpi_fn! {
    /// `MPI_Win_unlock`: the accesses to `rank` are complete (they were
    /// when called), and the lock goes.
    fn MPI_Win_unlock / PMPI_Win_unlock(rank: c_int, win: c_int) {
        with_window("MPI_Win_unlock", win, |w| {
            let target = w.target(rank)?;
            let Some((exclusive, taken)) = w.state.lock().locks.remove(&target) else {
                return Err(MpiError::new(class::RMA_SYNC, format!("this rank holds no lock on target rank {target} (MPI_Win_lock)")));
            };
            if taken {
                w.reach_for("MPI_Win_unlock", target)?.unlock(target, exclusive);
            }
            Ok(())
        })
    }
}

mpi_fn! {
    /// `MPI_Win_lock_all`: a shared lock on every rank's window.
    fn MPI_Win_lock_all / PMPI_Win_lock_all(assert: c_int, win: c_int) {
        with_window("MPI_Win_lock_all", win, |w| {
            check_assert(assert)?;
            let reach = w.reach_for("MPI_Win_lock_all", w.rank)?;
            {
                let state = w.state.lock();
                if state.lock_all.is_some() || !state.locks.is_empty() {
                    return Err(MpiError::new(class::RMA_SYNC, "this rank holds locks on the window already"));
                }
            }
            let take = assert & MODE_NOCHECK == 0;
            if take {
                (0..w.size).for_each(|target| reach.lock(target, false));
            }
            w.state.lock().lock_all = Some(take);
            Ok(())
        })
    }
}

mpi_fn! {
    /// `MPI_Win_unlock_all`.
    fn MPI_Win_unlock_all / PMPI_Win_unlock_all(win: c_int) {
        with_window("MPI_Win_unlock_all", win, |w| {
            let Some(taken) = w.state.lock().lock_all.take() else {
                return Err(MpiError::new(class::RMA_SYNC, "MPI_Win_lock_all is not in force on this window"));
            };
            if taken {
                let reach = w.reach_for("MPI_Win_unlock_all", w.rank)?;
                (0..w.size).for_each(|target| reach.unlock(target, false));
            }
            Ok(())
        })
    }
}

/// Checks that a passive-target epoch to `rank` (any rank: `None`) is
/// open: accesses complete when called, so a flush has nothing more to do.
fn flushed(call: &'static str, win: c_int, rank: Option<c_int>) -> Result<()> {
    with_window(call, win, |w| {
        let target = rank.map(|r| w.target(r)).transpose()?;
        let state = w.state.lock();
        let open = state.lock_all.is_some()
            || match target {
                Some(t) => state.locks.contains_key(&t),
                None => !state.locks.is_empty(),
            };
        if !open {
            let whom = target.map_or("any rank".to_owned(), |t| format!("target rank {t}"));
            return Err(MpiError::new(
                class::RMA_SYNC,
                format!("no passive-target epoch to {whom} is open (MPI_Win_lock)"),
            ));
        }
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        Ok(())
    })
}

mpi_fn! {
    /// `MPI_Win_flush`.
    fn MPI_Win_flush / PMPI_Win_flush(rank: c_int, win: c_int) {
        flushed("MPI_Win_flush", win, Some(rank))
    }
}

mpi_fn! {
    /// `MPI_Win_flush_local`.
    fn MPI_Win_flush_local / PMPI_Win_flush_local(rank: c_int, win: c_int) {
        flushed("MPI_Win_flush_local", win, Some(rank))
    }
}

mpi_fn! {
    /// `MPI_Win_flush_all`.
    fn MPI_Win_flush_all / PMPI_Win_flush_all(win: c_int) {
        flushed("MPI_Win_flush_all", win, None)
    }
}

mpi_fn! {
    /// `MPI_Win_flush_local_all`.
    fn MPI_Win_flush_local_all / PMPI_Win_flush_local_all(win: c_int) {
        flushed("MPI_Win_flush_local_all", win, None)
    }
}

mpi_fn! {
    /// `MPI_Win_sync`: the window's memory as other processes left it
    /// (a full memory barrier: the model is unified).
    fn MPI_Win_sync / PMPI_Win_sync(win: c_int) {
        window("MPI_Win_sync", win)?;
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }
}

/// Checks that the request-based `call` is made in a passive-target
/// epoch to `target_rank`, as MPI requires.
fn in_passive_epoch(call: &'static str, win: c_int, target_rank: c_int) -> Result<()> {
    with_window(call, win, |w| {
        if target_rank == abi::PROC_NULL {
            return Ok(());
        }
        let target = w.target(target_rank)?;
        match w.holds_lock_on(target) {
            true => Ok(()),
            false => Err(MpiError::new(
                class::RMA_SYNC,
                format!(
                    "request-based accesses are allowed only in a passive-target epoch (MPI_Win_lock), and target rank {target} is not locked"
                ),
            )),
        }
    })
}

/// A request that is complete (request-based accesses complete when made).
fn completed_request(call: &str, request: *mut c_int) -> Result<()> {
    let mut state = state::lock(call)?;
    let status = crate::api::empty_status();
    let handle =
        state.add_request(state::RequestSlot { now: Some(state::RequestEntry::Done { status }), persistent: None });
    // SAFETY: the caller's output argument.
    unsafe { put(request, handle, "request") }
}

counted_fn! {
    /// `MPI_Rput`: `MPI_Put` in a passive-target epoch, with a request.
    fn MPI_Rput / PMPI_Rput, MPI_Rput_c / PMPI_Rput_c(origin_addr: *const c_void, origin_count: Int, origin_datatype: c_int, target_rank: c_int, target_disp: isize, target_count: Int, target_datatype: c_int, win: c_int, request: *mut c_int) {
        widen!(origin_count, target_count);
        in_passive_epoch(NAME, win, target_rank)?;
        put_access(NAME, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, win)?;
        completed_request(NAME, request)
    }
}

counted_fn! {
    /// `MPI_Rget`: `MPI_Get` in a passive-target epoch, with a request.
    fn MPI_Rget / PMPI_Rget, MPI_Rget_c / PMPI_Rget_c(origin_addr: *mut c_void, origin_count: Int, origin_datatype: c_int, target_rank: c_int, target_disp: isize, target_count: Int, target_datatype: c_int, win: c_int, request: *mut c_int) {
        widen!(origin_count, target_count);
        in_passive_epoch(NAME, win, target_rank)?;
        get_access(NAME, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, win)?;
        completed_request(NAME, request)
    }
}

counted_fn! {
    /// `MPI_Raccumulate`: `MPI_Accumulate` in a passive-target epoch, with a request.
    fn MPI_Raccumulate / PMPI_Raccumulate, MPI_Raccumulate_c / PMPI_Raccumulate_c(origin_addr: *const c_void, origin_count: Int, origin_datatype: c_int, target_rank: c_int, target_disp: isize, target_count: Int, target_datatype: c_int, op: c_int, win: c_int, request: *mut c_int) {
        widen!(origin_count, target_count);
        in_passive_epoch(NAME, win, target_rank)?;
        accumulate_access(NAME, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, op, win)?;
        completed_request(NAME, request)
    }
}

counted_fn! {
    /// `MPI_Rget_accumulate`: `MPI_Get_accumulate` in a passive-target epoch, with a request.
    fn MPI_Rget_accumulate / PMPI_Rget_accumulate, MPI_Rget_accumulate_c / PMPI_Rget_accumulate_c(origin_addr: *const c_void, origin_count: Int, origin_datatype: c_int, result_addr: *mut c_void, result_count: Int, result_datatype: c_int, target_rank: c_int, target_disp: isize, target_count: Int, target_datatype: c_int, op: c_int, win: c_int, request: *mut c_int) {
        widen!(origin_count, result_count, target_count);
        in_passive_epoch(NAME, win, target_rank)?;
        get_accumulate_access(NAME, origin_addr, origin_count, origin_datatype, result_addr, result_count, result_datatype, target_rank, target_disp, target_count, target_datatype, op, win)?;
        completed_request(NAME, request)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn kind() -> impl Strategy<Value = Kind> {
        prop::sample::select(vec![Kind::Put, Kind::Get, Kind::Accumulate, Kind::GetAccumulate, Kind::CompareAndSwap])
    }

    prop_compose! {
        fn access()(
            kind in kind(),
            op in any::<c_int>(),
            base in any::<c_int>(),
            offset in any::<i64>(),
            count in 0u64..1000,
            extent in any::<i64>(),
            blocks in prop::collection::vec((any::<i64>(), 0u64..1 << 40), 0..8),
            data in prop::collection::vec(any::<u8>(), 0..64),
        ) -> Access {
            Access { kind, op, base, offset, count, extent, blocks, data }
        }
    }

    proptest! {
        /// Accesses travel back to back: each decodes as it was encoded,
        /// and a cut message decodes to no access rather than a wrong one.
        #[test]
        fn accesses_decode_as_encoded(accesses in prop::collection::vec(access(), 1..5), cut in any::<prop::sample::Index>()) {
            let bytes: Vec<u8> = accesses.iter().flat_map(Access::encode).collect();
            let mut rest = bytes.as_slice();
            for access in &accesses {
                let (decoded, after) = Access::decode(rest).expect("a whole access");
                prop_assert_eq!(decoded.encode(), access.encode());
                rest = after;
            }
            prop_assert!(rest.is_empty());
            let first = accesses[0].encode();
            let short = &first[..cut.index(first.len())];
            prop_assert!(Access::decode(short).is_none());
        }
    }

    #[test]
    fn pieces_follow_the_target_datatype_element_by_element() {
        let access = Access {
            kind: Kind::Put,
            op: 0,
            base: 0,
            offset: 100,
            count: 2,
            extent: 20,
            blocks: vec![(0, 4), (8, 4)],
            data: Vec::new(),
        };
        let pieces: Vec<(i64, usize)> = access.pieces().collect();
        assert_eq!(pieces, vec![(100, 4), (108, 4), (120, 4), (128, 4)]);
        assert_eq!(access.packed_len(), 16);
    }

    #[test]
    fn fence_rounds_keep_to_their_bytes_and_the_order() {
        let queued = |sizes: &[(usize, usize)]| -> Vec<Queued> {
            sizes
                .iter()
                .map(|&(record, read)| Queued {
                    call: "MPI_Get",
                    target: 0,
                    record: vec![0; record],
                    result: (read > 0)
                        .then(|| (0, read, Type::Predefined(crate::datatype::predefined(MPI_BYTE).unwrap()))),
                })
                .collect()
        };
        assert_eq!(rounds(&queued(&[]), 100), Vec::<std::ops::Range<usize>>::new());
        assert_eq!(rounds(&queued(&[(10, 0), (10, 0), (10, 0)]), 100), vec![0..3]);
        assert_eq!(rounds(&queued(&[(10, 40), (10, 40), (10, 40)]), 100), vec![0..2, 2..3]);
        assert_eq!(rounds(&queued(&[(10, 500), (10, 0), (10, 500)]), 100), vec![0..1, 1..2, 2..3]);
        assert_eq!(rounds(&queued(&[(50, 0), (50, 0), (1, 0)]), 100), vec![0..2, 2..3]);
    }

    #[test]
    fn runs_join_the_pieces_that_touch() {
        let access = |count, extent, blocks: Vec<(i64, u64)>| Access {
            kind: Kind::Put,
            op: 0,
            base: 0,
            offset: 100,
            count,
            extent,
            blocks,
            data: Vec::new(),
        };
        let runs = |a: &Access| a.runs().collect::<Vec<_>>();
        assert_eq!(runs(&access(1000, 4, vec![(0, 4)])), vec![(100, 4000)]);
        assert_eq!(runs(&access(2, 20, vec![(0, 4), (8, 4)])), vec![(100, 4), (108, 4), (120, 4), (128, 4)]);
        assert_eq!(runs(&access(3, 8, vec![(0, 4), (4, 4)])), vec![(100, 24)]);
        assert_eq!(runs(&access(2, 12, vec![(4, 8), (0, 4)])), vec![(104, 8), (100, 4), (116, 8), (112, 4)]);
        assert_eq!(runs(&access(0, 4, vec![(0, 4)])), vec![]);
        assert_eq!(runs(&access(2, 8, vec![(4, 4), (0, 4)])), vec![(104, 4), (100, 4), (112, 4), (108, 4)]);
        assert_eq!(runs(&access(2, -8, vec![(0, 8)])), vec![(100, 8), (92, 8)]);
    }

    proptest! {
        /// Runs cover the same bytes as the pieces, in the same order.
        #[test]
        fn runs_cover_the_pieces_bytes_in_order(
            count in 0u64..6,
            extent in -16i64..40,
            blocks in proptest::collection::vec((-8i64..32, 0u64..9), 0..5),
        ) {
            let access = Access { kind: Kind::Put, op: 0, base: 0, offset: 64, count, extent, blocks, data: Vec::new() };
            let bytes = |ranges: Vec<(i64, usize)>| -> Vec<i64> {
                ranges.into_iter().flat_map(|(at, len)| at..at + len as i64).collect()
            };
            prop_assert_eq!(bytes(access.runs().collect()), bytes(access.pieces().collect()));
            let runs: Vec<_> = access.runs().collect();
            for pair in runs.windows(2) {
                prop_assert_ne!(pair[0].0 + pair[0].1 as i64, pair[1].0, "runs that touch are joined");
            }
        }
    }

    #[test]
    fn compare_and_swap_writes_only_on_a_match_and_no_op_writes_nothing() {
        let swap = |current: [u8; 4], compare: [u8; 4]| {
            let data = [[9u8, 9, 9, 9], compare].concat();
            let access = Access {
                kind: Kind::CompareAndSwap,
                op: 0,
                base: 0,
                offset: 0,
                count: 1,
                extent: 4,
                blocks: vec![(0, 4)],
                data,
            };
            new_value(&access, &current)
        };
        assert_eq!(swap([1, 2, 3, 4], [1, 2, 3, 4]), Some(vec![9, 9, 9, 9]));
        assert_eq!(swap([1, 2, 3, 4], [0, 2, 3, 4]), None);
        let no_op = Access {
            kind: Kind::GetAccumulate,
            op: NO_OP,
            base: 0,
            offset: 0,
            count: 1,
            extent: 4,
            blocks: vec![(0, 4)],
            data: Vec::new(),
        };
        assert_eq!(new_value(&no_op, &[1, 2, 3, 4]), None);
    }
}

/// Where each rank's part of a shared-memory window starts in its
/// segment: parts of `sizes` bytes, each at a multiple of 64; and the
/// segment's length.
fn shared_layout(sizes: &[i64]) -> (Vec<usize>, usize) {
    let mut at = 0usize;
    let offsets = sizes
        .iter()
        .map(|&size| {
            let start = at;
            at += (size.max(0) as usize).div_ceil(64) * 64;
            start
        })
        .collect();
    (offsets, at)
}

/// Maps a segment of `len` bytes on every rank of `comm` (collective;
/// every rank on this host).
fn shared_segment(comm: c_int, rank: usize, size: usize, len: usize) -> Result<passive::Segment> {
    let hosts = collective::allgather(comm, &[passive::host_id()], size)?;
    if let Some(other) = hosts.iter().position(|&h| h != hosts[0]) {
        return Err(MpiError::new(
            class::RMA_SHARED,
            format!(
                "rank {other} of the communicator is not on rank 0's host: a shared-memory window needs every rank on one host"
            ),
        ));
    }
    let mut id = [std::process::id() as i64 ^ (super::file::unique_id() << 16)];
    collective::bcast(comm, &mut id, 0)?;
    let path = passive::segment_path("shared-win", id[0]);
    let made = (rank == 0).then(|| passive::Segment::map_bytes(&path, len, true));
    collective::barrier(comm)?;
    let mapped = made.unwrap_or_else(|| passive::Segment::map_bytes(&path, len, false));
    let failed = collective::allgather(comm, &[mapped.is_err() as i64], size)?;
    if rank == 0 {
        let _ = std::fs::remove_file(&path);
    }
    match failed.iter().position(|&f| f != 0) {
        None => Ok(mapped.expect("checked on every rank")),
        Some(bad) => {
            Err(MpiError::new(class::RMA_SHARED, format!("rank {bad} could not map the window's memory ({path})")))
        }
    }
}

counted_fn! {
    /// `MPI_Win_allocate_shared`: a window whose parts are in one segment
    /// of shared memory every rank maps (collective; ranks of one host).
    fn MPI_Win_allocate_shared / PMPI_Win_allocate_shared, MPI_Win_allocate_shared_c / PMPI_Win_allocate_shared_c(size: isize, disp_unit: Disp, info: c_int, comm: c_int, baseptr: *mut c_void, win: *mut c_int) {
        let disp_unit = window_unit(disp_unit).map_err(|e| e.on(comm))?;
        check_size(size, disp_unit).map_err(|e| e.on(comm))?;
        if win.is_null() || baseptr.is_null() {
            return Err(MpiError::new(class::ARG, "the window handle or base pointer argument is NULL").on(comm));
        }
        let (rank, nranks) = {
            let state = state::lock(NAME)?;
            let entry = state.intra(comm)?;
            // Every rank sees the same hosts: all fail alike, none waits.
            if entry.comm.spans_hosts() {
                return Err(MpiError::new(
                    class::RMA_SHARED,
                    "the communicator's ranks run on more than one host, which share no memory \
                     (split it with MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) first)",
                )
                .on(comm));
            }
            (entry.comm.rank(), entry.comm.size())
        };
        let sizes = collective::allgather(comm, &[size as i64], nranks).map_err(|e| e.on(comm))?;
        let (offsets, len) = shared_layout(&sizes);
        let segment = shared_segment(comm, rank, nranks, len).map_err(|e| e.on(comm))?;
        let shared_bases: Vec<usize> = offsets.iter().map(|&o| segment.start() + o).collect();
        let base = shared_bases[rank];
        let making = Making { base, len: size, disp_unit, flavor: FLAVOR_SHARED, memory: Some(Memory::Shared(segment)), shared_bases };
        let handle = create(NAME, comm, info, making).map_err(|e| e.on(comm))?;
        // SAFETY: the caller's output arguments, checked non-NULL; MPI's
        // `baseptr` is a `void **` passed as `void *`.
        unsafe {
            baseptr.cast::<usize>().write(base);
            win.write(handle);
        }
        Ok(())
    }
}

counted_fn! {
    /// `MPI_Win_shared_query`: where rank `rank`'s part of a shared-memory
    /// window is in this process (`MPI_PROC_NULL`: the first part that has bytes).
    fn MPI_Win_shared_query / PMPI_Win_shared_query, MPI_Win_shared_query_c / PMPI_Win_shared_query_c(win: c_int, rank: c_int, size: *mut isize, disp_unit: *mut Disp, baseptr: *mut c_void) {
        with_window(NAME, win, |w| {
            if w.flavor != FLAVOR_SHARED {
                return Err(MpiError::new(class::RMA_FLAVOR, "only a window of MPI_Win_allocate_shared has shared memory to query"));
            }
            let target = match rank {
                abi::PROC_NULL => w.extents.iter().position(|e| e.0 > 0).unwrap_or(0),
                other => w.target(other)?,
            };
            let (bytes, unit) = w.extents[target];
            // SAFETY: the caller's output arguments; `baseptr` is a `void **`.
            unsafe {
                put(size, bytes as isize, "size")?;
                put(disp_unit, unit as Disp, "disp_unit")?;
                put(baseptr.cast::<usize>(), w.shared_bases[target], "baseptr")
            }
        })
    }
}
