//! MPI 4's sessions, inside the world model: grappe starts its runtime
//! once, at `MPI_Init` (or `MPI_Init_thread`), and a session may be opened
//! between it and `MPI_Finalize`. A session sees two process sets,
//! `mpi://WORLD` and `mpi://SELF`; groups made from them give
//! communicators through `MPI_Comm_create_from_group`. Errors of calls on
//! a session go to the session's error handler.
//!
//! Sessions live beside the library's state, as windows do, so that the
//! error path finds a session's handler without the state's lock.

use std::ffi::{c_char, c_int};

use parking_lot::RwLock;

use crate::abi::{self, class, kind};
use crate::errors::{MpiError, Result};
use crate::mpi_fn;
use crate::state::{self, Table};

use super::env::{copy_string, read_string};
use super::misc::ErrhandlerFunction;
use super::{get, put};

/// A session: its error handler and the hints it was given.
struct Session {
    errhandler: c_int,
    info: Vec<(String, String)>,
}

static SESSIONS: RwLock<Table<Session>> = RwLock::new(Table::new());

/// The process sets every session sees.
const WORLD: &str = "mpi://WORLD";
const SELF: &str = "mpi://SELF";
const PSETS: [&str; 2] = [WORLD, SELF];

/// The error handler of session `handle`, if it is one.
pub(crate) fn errhandler_of(handle: c_int) -> Option<c_int> {
    let slot = abi::direct_index(kind::SESSION, handle)?;
    SESSIONS.read().get(slot).map(|session| session.errhandler)
}

/// The slot of session `handle`; `MPI_ERR_SESSION` naming it if it is none.
fn slot_of(handle: c_int) -> Result<usize> {
    let slot = abi::direct_index(kind::SESSION, handle).filter(|&slot| SESSIONS.read().get(slot).is_some());
    slot.ok_or_else(|| match handle {
        abi::SESSION_NULL => MpiError::new(class::SESSION, "MPI_SESSION_NULL is not a session"),
        other => MpiError::new(
            class::SESSION,
            format!("{other:#x} is not the handle of a session (never initialised, or finalized already)"),
        ),
    })
}

/// Runs `body` on session `handle`; its errors go to the session's handler.
fn with_session<T>(handle: c_int, body: impl FnOnce() -> Result<T>) -> Result<T> {
    slot_of(handle)?;
    body().map_err(|e| e.on_session(handle))
}

/// The name of a thread level, as the `thread_level` hint says it.
fn level_name(level: c_int) -> &'static str {
    match level {
        abi::THREAD_SINGLE => "MPI_THREAD_SINGLE",
        1 => "MPI_THREAD_FUNNELED",
        2 => "MPI_THREAD_SERIALIZED",
        _ => "MPI_THREAD_MULTIPLE",
    }
}

/// The members (world ranks) of process set `name`.
fn pset_members(name: &str) -> Result<Vec<usize>> {
    let state = state::lock("a process set")?;
    let world = &state.comm(abi::COMM_WORLD)?.comm;
    match name {
        WORLD => Ok((0..world.size()).collect()),
        SELF => Ok(vec![world.world_rank_of(world.rank()).map_err(MpiError::from)?]),
        other => {
            Err(MpiError::new(class::ARG, format!("{other:?} is not a process set (they are {WORLD} and {SELF})")))
        }
    }
}

mpi_fn! {
    /// `MPI_Session_init`: a session in the running library (after
    /// `MPI_Init`: grappe starts its runtime there).
    fn MPI_Session_init / PMPI_Session_init(info: c_int, errhandler: c_int, session: *mut c_int) {
        if state::phase() != state::Phase::Running {
            return Err(MpiError::new(
                class::OTHER,
                "a session is opened between MPI_Init (or MPI_Init_thread) and MPI_Finalize in grappe, \
                 which starts its runtime there",
            ));
        }
        crate::api::errh::check_handler(errhandler)?;
        let (hints, level) = {
            let state = state::lock("MPI_Session_init")?;
            let hints = match info {
                abi::INFO_NULL => Vec::new(),
                info => crate::api::info::entries(info)?,
            };
            (hints, state.thread_level)
        };
        let mut used: Vec<(String, String)> = hints.into_iter().filter(|(k, _)| k != "thread_level").collect();
        used.push(("thread_level".to_owned(), level_name(level).to_owned()));
        let slot = SESSIONS.write().insert(Session { errhandler, info: used });
        // SAFETY: the caller's output argument.
        unsafe { put(session, abi::direct_handle(kind::SESSION, slot), "session") }
    }
}

mpi_fn! {
    /// `MPI_Session_finalize`: the handle becomes `MPI_SESSION_NULL`.
    fn MPI_Session_finalize / PMPI_Session_finalize(session: *mut c_int) {
        // SAFETY: the caller's in-out argument.
        let handle = unsafe { get(session, "session")? };
        let slot = slot_of(handle)?;
        SESSIONS.write().remove(slot);
        // SAFETY: the caller's in-out argument.
        unsafe { put(session, abi::SESSION_NULL, "session") }
    }
}

mpi_fn! {
    /// `MPI_Session_get_info`: the hints the session was given, and its
    /// `thread_level`.
    fn MPI_Session_get_info / PMPI_Session_get_info(session: c_int, info_used: *mut c_int) {
        let slot = slot_of(session)?;
        let used = SESSIONS.read().get(slot).map(|s| s.info.clone()).unwrap_or_default();
        with_session(session, || crate::api::info::add(used, info_used))
    }
}

mpi_fn! {
    /// `MPI_Session_get_num_psets`: `mpi://WORLD` and `mpi://SELF`.
    fn MPI_Session_get_num_psets / PMPI_Session_get_num_psets(session: c_int, _info: c_int, npset_names: *mut c_int) {
        // SAFETY: the caller's output argument.
        with_session(session, || unsafe { put(npset_names, PSETS.len() as c_int, "npset_names") })
    }
}

mpi_fn! {
    /// `MPI_Session_get_nth_pset`: with `*pset_len` 0, only the length of
    /// the name (with its NUL); else the name, cut to `*pset_len - 1`
    /// characters.
    fn MPI_Session_get_nth_pset / PMPI_Session_get_nth_pset(session: c_int, _info: c_int, n: c_int, pset_len: *mut c_int, pset_name: *mut c_char) {
        with_session(session, || {
            let name = usize::try_from(n).ok().and_then(|n| PSETS.get(n)).ok_or_else(|| {
                MpiError::new(class::ARG, format!("process set {n} does not exist (there are {})", PSETS.len()))
            })?;
            // SAFETY: the caller's in-out argument.
            let room = unsafe { get(pset_len, "pset_len")? };
            if room > 0 {
                let room = (room as usize).min(abi::MAX_PSET_NAME_LEN);
                // SAFETY: `pset_name` holds `*pset_len` characters, as MPI requires.
                unsafe { copy_string(&name[..name.len().min(room - 1)], pset_name, room, "pset_name")? };
            }
            // SAFETY: the caller's in-out argument.
            unsafe { put(pset_len, name.len() as c_int + 1, "pset_len") }
        })
    }
}

mpi_fn! {
    /// `MPI_Session_get_pset_info`: the set's `mpi_size`.
    fn MPI_Session_get_pset_info / PMPI_Session_get_pset_info(session: c_int, pset_name: *const c_char, info: *mut c_int) {
        with_session(session, || {
            // SAFETY: a NUL-terminated string, as MPI requires.
            let name = unsafe { read_string(pset_name, "pset_name")? };
            let size = pset_members(&name)?.len();
            crate::api::info::add(vec![("mpi_size".to_owned(), size.to_string())], info)
        })
    }
}

mpi_fn! {
    /// `MPI_Group_from_session_pset`.
    fn MPI_Group_from_session_pset / PMPI_Group_from_session_pset(session: c_int, pset_name: *const c_char, newgroup: *mut c_int) {
        with_session(session, || {
            // SAFETY: a NUL-terminated string, as MPI requires.
            let name = unsafe { read_string(pset_name, "pset_name")? };
            let members = pset_members(&name)?;
            crate::api::group::give(&mut state::lock("MPI_Group_from_session_pset")?, members, newgroup)
        })
    }
}

mpi_fn! {
    /// `MPI_Comm_create_from_group`: collective over the group's members,
    /// which the calling rank must be one of. (`stringtag` tells apart
    /// creations that threads of one rank make at once, which the thread
    /// levels grappe provides rule out.)
    fn MPI_Comm_create_from_group / PMPI_Comm_create_from_group(group: c_int, stringtag: *const c_char, _info: c_int, errhandler: c_int, newcomm: *mut c_int) {
        // SAFETY: a NUL-terminated string, as MPI requires.
        let tag = unsafe { read_string(stringtag, "stringtag")? };
        if tag.len() >= abi::MAX_PSET_NAME_LEN {
            return Err(MpiError::new(class::ARG, format!("stringtag of {} characters is longer than MPI_MAX_STRINGTAG_LEN", tag.len())));
        }
        crate::api::errh::check_handler(errhandler)?;
        let state = state::lock("MPI_Comm_create_from_group")?;
        let members = crate::api::group::members(&state, group)?;
        let world = state.comm(abi::COMM_WORLD)?.comm.clone();
        let me = world.world_rank_of(world.rank()).map_err(MpiError::from)?;
        if !members.contains(&me) {
            return Err(MpiError::new(class::GROUP, format!("world rank {me} calls MPI_Comm_create_from_group with a group it is not a member of")));
        }
        // World ranks are the ranks of MPI_COMM_WORLD.
        let (mut state, created) = crate::api::group::create_group_agreed("MPI_Comm_create_from_group", state, world, &members, 0)?;
        let handle = created.map_or(abi::COMM_NULL, |comm| state.add_comm(comm, errhandler));
        // SAFETY: the caller's output argument.
        unsafe { put(newcomm, handle, "newcomm") }
    }
}

mpi_fn! {
    /// `MPI_Session_create_errhandler`: a handler called as a
    /// communicator's is, with the session.
    fn MPI_Session_create_errhandler / PMPI_Session_create_errhandler(function: Option<ErrhandlerFunction>, errhandler: *mut c_int) {
        crate::api::misc::create_errhandler(function, errhandler)
    }
}

mpi_fn! {
    /// `MPI_Session_set_errhandler`.
    fn MPI_Session_set_errhandler / PMPI_Session_set_errhandler(session: c_int, errhandler: c_int) {
        let slot = slot_of(session)?;
        crate::api::errh::check_handler(errhandler).map_err(|e| e.on_session(session))?;
        if let Some(entry) = SESSIONS.write().get_mut(slot) {
            entry.errhandler = errhandler;
        }
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Session_get_errhandler`.
    fn MPI_Session_get_errhandler / PMPI_Session_get_errhandler(session: c_int, errhandler: *mut c_int) {
        slot_of(session)?;
        let handler = errhandler_of(session).unwrap_or(abi::ERRORS_ARE_FATAL);
        // SAFETY: the caller's output argument.
        unsafe { put(errhandler, handler, "errhandler") }
    }
}

mpi_fn! {
    /// `MPI_Session_call_errhandler`: what a failure with `errorcode` on
    /// the session would do.
    fn MPI_Session_call_errhandler / PMPI_Session_call_errhandler(session: c_int, errorcode: c_int) {
        slot_of(session)?;
        let handler = errhandler_of(session).unwrap_or(abi::ERRORS_ARE_FATAL);
        if let Some(function) = crate::api::user_handler(handler) {
            let (mut s, mut code) = (session, errorcode);
            // SAFETY: the program's handler, with the arguments MPI defines.
            unsafe { function(&mut s, &mut code) };
            return Ok(());
        }
        match handler {
            abi::ERRORS_RETURN => Ok(()),
            _ => {
                let text = crate::errors::string_of_code(errorcode).unwrap_or_default();
                Err(MpiError::new(class::OTHER, format!("error {errorcode} raised by the program: {text}")).on_session(session))
            }
        }
    }
}

mpi_fn! {
    /// `MPI_Info_create_env`: how the program was started, as
    /// `MPI_INFO_ENV` would say it: `command` and `argv` from the arguments
    /// given, `maxprocs` the number of processes the job was started with,
    /// `host`, `arch`, `wdir`. Like the other info functions it may be
    /// called before `MPI_Init` and after `MPI_Finalize`, and says the same
    /// then; no `thread_level`, which MPI reserves for a level asked for
    /// when the program was launched (grappe's launchers take none).
    fn MPI_Info_create_env / PMPI_Info_create_env(argc: c_int, argv: *const *const c_char, info: *mut c_int) {
        let mut args = Vec::new();
        if argc > 0 && !argv.is_null() {
            for i in 0..argc as usize {
                // SAFETY: `argv` holds `argc` strings, as for main's.
                let arg = unsafe { *argv.add(i) };
                if arg.is_null() {
                    break;
                }
                // SAFETY: a NUL-terminated string.
                args.push(unsafe { read_string(arg, "argv")? });
            }
        }
        let mut entries = Vec::new();
        if let Some((command, rest)) = args.split_first() {
            entries.push(("command".to_owned(), command.clone()));
            entries.push(("argv".to_owned(), rest.join(" ")));
        }
        entries.push(("maxprocs".to_owned(), launched_processes()?.to_string()));
        if let Ok(host) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
            entries.push(("host".to_owned(), host.trim().to_owned()));
        }
        entries.push(("arch".to_owned(), std::env::consts::ARCH.to_owned()));
        if let Ok(dir) = std::env::current_dir() {
            entries.push(("wdir".to_owned(), dir.display().to_string()));
        }
        crate::api::info::add(entries, info)
    }
}

/// How many MPI processes the job was started with: the world's size while
/// the library runs; before `MPI_Init` and after `MPI_Finalize`, what the
/// process manager told the process (`PMI_SIZE` processes of
/// `GRAPPE_RANKS_PER_PROCESS` ranks each), or 1 for a process started alone.
fn launched_processes() -> Result<usize> {
    if state::phase() == state::Phase::Running {
        return Ok(state::lock("MPI_Info_create_env")?.comm(abi::COMM_WORLD)?.comm.size());
    }
    let count = |name: &str| std::env::var(name).ok().and_then(|v| v.trim().parse::<usize>().ok());
    Ok(count("PMI_SIZE").unwrap_or(1) * count("GRAPPE_RANKS_PER_PROCESS").unwrap_or(1))
}
