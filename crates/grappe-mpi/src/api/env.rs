//! The environment: init and finalize, thread levels, abort, clocks,
//! names and versions.

use std::ffi::{c_char, c_double, c_int};

use grappe_comm::{ErrorHandler, Scope};
use grappe_runtime::{RankFailure, Runtime};

use crate::abi::{self, class};
use crate::errors::{MpiError, Result};
use crate::state::{self, CommEntry, Phase, State, Table};
use crate::{mpi_fn, weak_alias};

use super::put;

/// The thread level this version provides at most: every level, for
/// process ranks (see [`crate::waiting`] for what `MPI_THREAD_MULTIPLE`
/// changes).
const MAX_THREAD_LEVEL: c_int = abi::THREAD_MULTIPLE;

/// The library's version string.
const LIBRARY_VERSION: &str = concat!("grappe ", env!("CARGO_PKG_VERSION"), " (MPICH binary interface, MPI 4.0)");

mpi_fn! {
    /// `MPI_Init`: starts this process's rank of the job, at the thread
    /// level `GRAPPE_MPI_THREAD_LEVEL` names (`MPI_THREAD_SINGLE` unless
    /// set; MPICH's `MPIR_CVAR_DEFAULT_THREAD_LEVEL` does the same).
    fn MPI_Init / PMPI_Init(_argc: *mut c_int, _argv: *mut *mut *mut c_char) {
        init(init_level()?).map(|_| ())
    }
}

mpi_fn! {
    /// `MPI_Init_thread`: as `MPI_Init`; provides the level asked for.
    fn MPI_Init_thread / PMPI_Init_thread(
        _argc: *mut c_int,
        _argv: *mut *mut *mut c_char,
        required: c_int,
        provided: *mut c_int,
    ) {
        if !(abi::THREAD_SINGLE..=abi::THREAD_MULTIPLE).contains(&required) {
            return Err(MpiError::new(class::ARG, format!("thread level {required} is not one of MPI's")));
        }
        let level = init(required)?;
        // SAFETY: `provided` is the caller's output argument.
        unsafe { put(provided, level, "provided") }
    }
}

/// The thread level of `MPI_Init`, from `GRAPPE_MPI_THREAD_LEVEL`.
fn init_level() -> Result<c_int> {
    let levels = [
        ("single", abi::THREAD_SINGLE),
        ("funneled", abi::THREAD_FUNNELED),
        ("serialized", abi::THREAD_SERIALIZED),
        ("multiple", abi::THREAD_MULTIPLE),
    ];
    let level = grappe_settings::Vars::process().word("GRAPPE_MPI_THREAD_LEVEL", abi::THREAD_SINGLE, &levels);
    level.map_err(|e| MpiError::new(class::ARG, e.to_string()))
}

/// Starts the runtime and this process's one rank; the thread level given.
fn init(required: c_int) -> Result<c_int> {
    if state::phase() != Phase::Before {
        return Err(MpiError::new(class::OTHER, "MPI is already initialised (or was finalized): init is once"));
    }
    let runtime = match Runtime::from_environment() {
        Ok(runtime) => runtime,
        Err(e) => start_failed(&format!("cannot start the job: {e}")),
    };
    let rank = match runtime.start_only_rank() {
        Ok(rank) => rank,
        Err(RankFailure::Start(e)) => start_failed(&format!("rank {} failed: {e}", runtime.ranks().start)),
        Err(RankFailure::Handled) => runtime.exit_failed(),
    };
    let world = rank.world().clone();
    world.set_error_handler(ErrorHandler::Return);
    let me = world.split_for_runtime(Some(world.rank() as u32), 0)?.expect("every rank gives a color");
    let mut comms = Table::new();
    comms.insert(CommEntry::new(world.clone(), abi::ERRORS_ARE_FATAL, "MPI_COMM_WORLD"));
    comms.insert(CommEntry::new(me, abi::ERRORS_ARE_FATAL, "MPI_COMM_SELF"));
    let scope = Box::leak(Box::new(Scope::detached(world.rank_context().clone())));
    let thread_level = required.min(MAX_THREAD_LEVEL);
    // Whether any rank asked for MPI_THREAD_MULTIPLE decides, on every
    // rank alike, how blocking collectives run (see `waiting`).
    let highest = world.max_for_runtime(thread_level as u64)?;
    let multiple = thread_level == abi::THREAD_MULTIPLE;
    crate::waiting::set_levels(multiple, highest == abi::THREAD_MULTIPLE as u64);
    let bell = world.rank_context().engine().bell();
    // A traced rank's calls note their C caller (see `mpi_fn!`).
    crate::call::SITES_WANTED.store(world.rank_context().tracing(), std::sync::atomic::Ordering::Relaxed);
    state::install(
        State {
            runtime,
            rank: Some(rank),
            comms,
            requests: Table::new(),
            messages: Table::new(),
            ops: Table::new(),
            keyvals: Table::new(),
            type_attrs: Default::default(),
            win_attrs: Default::default(),
            groups: Table::new(),
            freed: Vec::new(),
            buffered: Vec::new(),
            scope,
            thread_level,
            main_thread: std::thread::current().id(),
            bell,
        },
        multiple,
    );
    Ok(thread_level)
}

/// A start that failed: as for `grappe::run`, the process says why and ends.
fn start_failed(message: &str) -> ! {
    grappe_runtime::say(message);
    grappe_runtime::exit_failed()
}

mpi_fn! {
    /// `MPI_Finalize`: the attributes of `MPI_COMM_SELF`, then of
    /// `MPI_COMM_WORLD`, deleted with their callbacks while MPI still works
    /// (libraries hook their own clean-up there, MPI-3.1 §8.7.1), the
    /// rank's trace completed, a barrier with every other rank, and the
    /// process manager told.
    fn MPI_Finalize / PMPI_Finalize() {
        let state = state::lock("MPI_Finalize")?;
        drop(state);
        for comm in [abi::COMM_SELF, abi::COMM_WORLD] {
            // A callback's error cannot stop the finalization (the other
            // ranks are in it): the callback has said what it wanted.
            let _ = crate::api::attr::delete_all(crate::api::attr::Object::Comm(comm));
        }
        let mut state = state::take().expect("locked just before");
        let rank = state.rank.take().expect("finalized once");
        state.requests = Table::new();
        state.comms = Table::new();
        if let Err(RankFailure::Handled | RankFailure::Start(_)) = rank.finish(&state.runtime) {
            state.runtime.exit_failed();
        }
        let state = *state;
        if let Err(e) = state.runtime.finalize() {
            start_failed(&format!("process manager: {e}"));
        }
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Initialized`.
    fn MPI_Initialized / PMPI_Initialized(flag: *mut c_int) {
        // SAFETY: the caller's output argument.
        unsafe { put(flag, (state::phase() != Phase::Before) as c_int, "flag") }
    }
}

mpi_fn! {
    /// `MPI_Finalized`.
    fn MPI_Finalized / PMPI_Finalized(flag: *mut c_int) {
        // SAFETY: the caller's output argument.
        unsafe { put(flag, (state::phase() == Phase::Finalized) as c_int, "flag") }
    }
}

mpi_fn! {
    /// `MPI_Query_thread`.
    fn MPI_Query_thread / PMPI_Query_thread(provided: *mut c_int) {
        let level = state::lock("MPI_Query_thread")?.thread_level;
        // SAFETY: the caller's output argument.
        unsafe { put(provided, level, "provided") }
    }
}

mpi_fn! {
    /// `MPI_Is_thread_main`.
    fn MPI_Is_thread_main / PMPI_Is_thread_main(flag: *mut c_int) {
        let main = state::lock("MPI_Is_thread_main")?.main_thread == std::thread::current().id();
        // SAFETY: the caller's output argument.
        unsafe { put(flag, main as c_int, "flag") }
    }
}

mpi_fn! {
    /// `MPI_Abort`: ends every process of the job with exit status `code`,
    /// whichever the communicator.
    fn MPI_Abort / PMPI_Abort(comm: c_int, code: c_int) {
        let state = state::lock("MPI_Abort")?;
        let entry = state.comm(comm).or_else(|_| state.comm(abi::COMM_WORLD))?;
        entry.comm.abort(code)
    }
}

/// `MPI_Wtime`: seconds on the host's monotonic clock, which every process
/// of the host shares.
#[unsafe(no_mangle)]
pub extern "C" fn PMPI_Wtime() -> c_double {
    match nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC) {
        Ok(now) => now.tv_sec() as f64 + now.tv_nsec() as f64 * 1e-9,
        Err(_) => 0.0,
    }
}
weak_alias!(MPI_Wtime, PMPI_Wtime);

/// `MPI_Wtick`: the resolution of `MPI_Wtime`.
#[unsafe(no_mangle)]
pub extern "C" fn PMPI_Wtick() -> c_double {
    match nix::time::clock_getres(nix::time::ClockId::CLOCK_MONOTONIC) {
        Ok(res) => (res.tv_sec() as f64 + res.tv_nsec() as f64 * 1e-9).max(1e-9),
        Err(_) => 1e-9,
    }
}
weak_alias!(MPI_Wtick, PMPI_Wtick);

mpi_fn! {
    /// `MPI_Get_processor_name`: the host name.
    fn MPI_Get_processor_name / PMPI_Get_processor_name(name: *mut c_char, resultlen: *mut c_int) {
        let host = nix::unistd::gethostname().map_err(|e| MpiError::new(class::OTHER, format!("gethostname: {e}")))?;
        // SAFETY: `name` holds MPI_MAX_PROCESSOR_NAME characters, as MPI requires.
        let len = unsafe { copy_string(&host.to_string_lossy(), name, abi::MAX_PROCESSOR_NAME, "name")? };
        // SAFETY: the caller's output argument.
        unsafe { put(resultlen, len, "resultlen") }
    }
}

mpi_fn! {
    /// `MPI_Get_version`: MPI 4.0 (dynamic processes aside: see docs/mpi.md).
    fn MPI_Get_version / PMPI_Get_version(version: *mut c_int, subversion: *mut c_int) {
        // SAFETY: the caller's output arguments.
        unsafe {
            put(version, 4, "version")?;
            put(subversion, 0, "subversion")
        }
    }
}

mpi_fn! {
    /// `MPI_Get_library_version`.
    fn MPI_Get_library_version / PMPI_Get_library_version(version: *mut c_char, resultlen: *mut c_int) {
        // SAFETY: `version` holds MPI_MAX_LIBRARY_VERSION_STRING characters, as MPI requires.
        let len = unsafe { copy_string(LIBRARY_VERSION, version, abi::MAX_LIBRARY_VERSION_STRING, "version")? };
        // SAFETY: the caller's output argument.
        unsafe { put(resultlen, len, "resultlen") }
    }
}

/// Copies `text` (cut to `max - 1` bytes) and a NUL to `out`; its length.
///
/// # Safety
/// `out` is NULL or points to `max` writable bytes.
pub(super) unsafe fn copy_string(text: &str, out: *mut c_char, max: usize, what: &str) -> Result<c_int> {
    if out.is_null() {
        return Err(MpiError::new(class::ARG, format!("{what} is NULL")));
    }
    let bytes = &text.as_bytes()[..text.len().min(max - 1)];
    // SAFETY: `max` writable bytes at `out`, as the caller promised;
    // `bytes.len() + 1 <= max`.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), out.cast::<u8>(), bytes.len());
        out.add(bytes.len()).write(0);
    }
    Ok(bytes.len() as c_int)
}

/// Reads a C string argument.
///
/// # Safety
/// `text` is NULL or a NUL-terminated string.
pub(super) unsafe fn read_string(text: *const c_char, what: &str) -> Result<String> {
    if text.is_null() {
        return Err(MpiError::new(class::ARG, format!("{what} is NULL")));
    }
    // SAFETY: non-null and NUL-terminated, as the caller promised.
    Ok(unsafe { std::ffi::CStr::from_ptr(text) }.to_string_lossy().into_owned())
}

/// `MPI_Aint_add`: `base + disp`.
#[unsafe(no_mangle)]
pub extern "C" fn PMPI_Aint_add(base: std::ffi::c_long, disp: std::ffi::c_long) -> std::ffi::c_long {
    base.wrapping_add(disp)
}
weak_alias!(MPI_Aint_add, PMPI_Aint_add);

/// `MPI_Aint_diff`: `addr1 - addr2`.
#[unsafe(no_mangle)]
pub extern "C" fn PMPI_Aint_diff(addr1: std::ffi::c_long, addr2: std::ffi::c_long) -> std::ffi::c_long {
    addr1.wrapping_sub(addr2)
}
weak_alias!(MPI_Aint_diff, PMPI_Aint_diff);

/// `MPI_Pcontrol`: profiling control, which grappe's tracing does not
/// take from the program: nothing to do. (Variadic in C; the extra
/// arguments are the caller's to place and remove.)
#[unsafe(no_mangle)]
pub extern "C" fn PMPI_Pcontrol(_level: c_int) -> c_int {
    abi::SUCCESS
}
weak_alias!(MPI_Pcontrol, PMPI_Pcontrol);
