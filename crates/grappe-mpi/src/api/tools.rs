//! The tool information interface (`MPI_T_`, MPI 4.0 chapter 15): what
//! profilers and libraries query about the library.
//!
//! grappe exposes its protocol settings as read-only control variables
//! (the values this rank's engine runs with, read from `GRAPPE_*` at
//! `MPI_Init`), in one category; it has no performance variables, no
//! enumerations, no events and no event sources. The functions never go
//! through an error handler, as MPI says of `MPI_T_`: they return
//! `MPI_SUCCESS` or an `MPI_T_ERR_` code, and work before `MPI_Init` and
//! after `MPI_Finalize` between `MPI_T_init_thread` and `MPI_T_finalize`
//! (reference counted). A control variable's value needs the running
//! library, its description does not.

use std::collections::BTreeSet;
use std::ffi::{CStr, c_char, c_int, c_long, c_ulong, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};

use parking_lot::Mutex;

use crate::abi;
use crate::state;

/// `MPI_T_ERR_` codes (MPICH's values) and the verbosity, binding and
/// scope constants grappe's variables use.
mod code {
    use std::ffi::c_int;

    pub const NOT_INITIALIZED: c_int = 60;
    pub const INVALID_INDEX: c_int = 62;
    pub const INVALID_HANDLE: c_int = 64;
    pub const INVALID_SESSION: c_int = 67;
    pub const CVAR_SET_NEVER: c_int = 69;
    pub const INVALID_NAME: c_int = 73;
    pub const INVALID: c_int = 74;
    /// `MPI_ERR_ARG`, for a NULL output argument (as MPICH returns).
    pub const ARG: c_int = crate::abi::class::ARG;

    pub const VERBOSITY_TUNER_BASIC: c_int = 224;
    pub const BIND_NO_OBJECT: c_int = 9700;
    pub const SCOPE_READONLY: c_int = 60439;
}

/// `MPI_INT` and `MPI_UNSIGNED_LONG`, the types of grappe's variables.
const MPI_INT: c_int = 0x4c00_0405;
const MPI_UNSIGNED_LONG: c_int = 0x4c00_0808;

/// What a call returns: `Err` holds an `MPI_T_ERR_` code (or `MPI_ERR_ARG`).
type Outcome = std::result::Result<(), c_int>;

/// A control variable: its name, description, and how to read it from
/// the engine's settings.
struct Cvar {
    name: &'static str,
    desc: &'static str,
    /// `MPI_INT` (read as `int`) or `MPI_UNSIGNED_LONG`.
    datatype: c_int,
    value: fn(&grappe_proto::ProtoSettings) -> u64,
}

const CVARS: &[Cvar] = &[
    Cvar {
        name: "GRAPPE_EAGER_MAX",
        desc: "largest message in bytes sent eagerly to a rank of another process; larger ones use rendezvous",
        datatype: MPI_UNSIGNED_LONG,
        value: |s| s.eager_max as u64,
    },
    Cvar {
        name: "GRAPPE_EAGER_MAX_THREADS",
        desc: "largest message in bytes sent eagerly between thread ranks of one process",
        datatype: MPI_UNSIGNED_LONG,
        value: |s| s.eager_max_threads as u64,
    },
    Cvar {
        name: "GRAPPE_RDV_CHUNK",
        desc: "bytes per rendezvous chunk",
        datatype: MPI_UNSIGNED_LONG,
        value: |s| s.rdv_chunk as u64,
    },
    Cvar {
        name: "GRAPPE_SINGLE_COPY",
        desc: "1 if large messages move with a single copy when the route allows it, 0 if staged through the mailboxes",
        datatype: MPI_INT,
        value: |s| u64::from(s.single_copy),
    },
];

/// The one category, which holds every control variable.
const CATEGORY: (&str, &str) = ("grappe_protocol", "settings of grappe's point-to-point protocols");

/// The interface's state: how many `MPI_T_init_thread` are not yet
/// finalized, and the handles and sessions handed out (their addresses:
/// a handle is a pointer to a boxed value, valid while listed here).
struct Tools {
    initialized: usize,
    cvar_handles: BTreeSet<usize>,
    sessions: BTreeSet<usize>,
}

static TOOLS: Mutex<Tools> =
    Mutex::new(Tools { initialized: 0, cvar_handles: BTreeSet::new(), sessions: BTreeSet::new() });

/// A control variable handle: the variable's index.
pub struct CvarHandle(usize);

/// A performance variable session (grappe has no performance variables:
/// a session holds no handles).
pub struct Session;

/// Runs the body of `MPI_T_` function: under `catch_unwind` (a panic
/// becomes `MPI_T_ERR_INVALID`), after checking that the interface is
/// initialised unless `any_time`.
fn run(any_time: bool, body: impl FnOnce(&mut Tools) -> Outcome) -> c_int {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let mut tools = TOOLS.lock();
        if !any_time && tools.initialized == 0 {
            return Err(code::NOT_INITIALIZED);
        }
        body(&mut tools)
    }));
    match outcome {
        Ok(Ok(())) => abi::SUCCESS,
        Ok(Err(code)) => code,
        Err(_) => code::INVALID,
    }
}

/// Writes `value` to output argument `out`; `MPI_ERR_ARG` if it is NULL.
///
/// # Safety
/// `out` is NULL or points to a writable `T`.
unsafe fn put<T>(out: *mut T, value: T) -> Outcome {
    if out.is_null() {
        return Err(code::ARG);
    }
    // SAFETY: non-NULL, writable as the caller promised.
    unsafe { out.write(value) };
    Ok(())
}

/// Writes `value` to optional output argument `out` (NULL: not wanted).
///
/// # Safety
/// As [`put`].
unsafe fn put_if<T>(out: *mut T, value: T) {
    if !out.is_null() {
        // SAFETY: non-NULL, writable as the caller promised.
        unsafe { out.write(value) };
    }
}

/// Returns string `text` by MPI's rules for `MPI_T_` strings: a NULL
/// `len` skips it; a NULL `buf` or a `*len` of 0 only sets `*len` to the
/// length it needs (terminating NUL included); else at most `*len - 1`
/// characters are copied, NUL-terminated, and `*len` is set to what was
/// written, NUL included.
///
/// # Safety
/// `len` is NULL or points to an `int`; `buf` is NULL or holds `*len` bytes.
unsafe fn put_string(text: &str, buf: *mut c_char, len: *mut c_int) -> Outcome {
    if len.is_null() {
        return Ok(());
    }
    // SAFETY: non-NULL, an int as the caller promised.
    let room = unsafe { len.read() };
    if room < 0 {
        return Err(code::INVALID);
    }
    if buf.is_null() || room == 0 {
        // SAFETY: as above.
        unsafe { len.write(text.len() as c_int + 1) };
        return Ok(());
    }
    let copied = text.len().min(room as usize - 1);
    // SAFETY: `buf` holds `room` bytes, and `copied + 1 <= room`.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), copied);
        buf.add(copied).write(0);
        len.write(copied as c_int + 1);
    }
    Ok(())
}

/// The name a C string argument gives; `MPI_ERR_ARG` if NULL.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
unsafe fn name_arg<'a>(name: *const c_char) -> std::result::Result<&'a [u8], c_int> {
    if name.is_null() {
        return Err(code::ARG);
    }
    // SAFETY: NUL-terminated, as the caller promised.
    Ok(unsafe { CStr::from_ptr(name) }.to_bytes())
}

/// Control variable `index`, if it exists.
fn cvar(index: c_int) -> std::result::Result<&'static Cvar, c_int> {
    usize::try_from(index).ok().and_then(|i| CVARS.get(i)).ok_or(code::INVALID_INDEX)
}

/// The only category index, 0.
fn category(index: c_int) -> Outcome {
    match index {
        0 => Ok(()),
        _ => Err(code::INVALID_INDEX),
    }
}

/// The value of `cvar` in the running library: the settings its rank's
/// engine runs with. `MPI_T_ERR_INVALID` before `MPI_Init` and after
/// `MPI_Finalize`, when there is no engine.
fn cvar_value(cvar: &Cvar) -> std::result::Result<u64, c_int> {
    let state = state::lock("MPI_T_cvar_read").map_err(|_| code::INVALID)?;
    let world = &state.comms.get(0).ok_or(code::INVALID)?.comm;
    let settings = *world.rank_context().engine().settings();
    Ok((cvar.value)(&settings))
}

/// Defines `MPI_T_name` as `PMPI_T_name` and its weak alias. `any time`:
/// callable before `MPI_T_init_thread`; the body gets the interface's
/// state and returns an [`Outcome`].
macro_rules! tool_fn {
    ($(#[$doc:meta])* fn $name:ident / $pname:ident ($($arg:ident : $ty:ty),* $(,)?)
     $(any $any:ident)? |$tools:ident| $body:block) => {
        $(#[$doc])*
        #[unsafe(no_mangle)]
        #[allow(clippy::missing_safety_doc, unused_variables)]
        pub unsafe extern "C" fn $pname($($arg: $ty),*) -> c_int {
            run(tool_fn!(@any $($any)?), move |$tools: &mut Tools| $body)
        }
        $crate::weak_alias!($name, $pname);
    };
    (@any time) => { true };
    (@any) => { false };
}

tool_fn! {
    /// `MPI_T_init_thread`: counted; every thread level is provided.
    fn MPI_T_init_thread / PMPI_T_init_thread(required: c_int, provided: *mut c_int) any time |tools| {
        let level = match (abi::THREAD_SINGLE..=abi::THREAD_MULTIPLE).contains(&required) {
            true => required,
            false => abi::THREAD_MULTIPLE,
        };
        // SAFETY: the caller's output argument.
        unsafe { put(provided, level) }?;
        tools.initialized += 1;
        Ok(())
    }
}

tool_fn! {
    /// `MPI_T_finalize`: the last one frees every handle and session.
    fn MPI_T_finalize / PMPI_T_finalize() |tools| {
        tools.initialized -= 1;
        if tools.initialized == 0 {
            for handle in std::mem::take(&mut tools.cvar_handles) {
                // SAFETY: a handle listed is a live box (see `Tools`).
                drop(unsafe { Box::from_raw(handle as *mut CvarHandle) });
            }
            for session in std::mem::take(&mut tools.sessions) {
                // SAFETY: as above.
                drop(unsafe { Box::from_raw(session as *mut Session) });
            }
        }
        Ok(())
    }
}

// ---- Enumerations: grappe's variables use none ----

tool_fn! {
    /// `MPI_T_enum_get_info`: no enumeration exists.
    fn MPI_T_enum_get_info / PMPI_T_enum_get_info(
        enumtype: *mut c_void,
        num: *mut c_int,
        name: *mut c_char,
        name_len: *mut c_int,
    ) |tools| {
        Err(code::INVALID_HANDLE)
    }
}

tool_fn! {
    /// `MPI_T_enum_get_item`: no enumeration exists.
    fn MPI_T_enum_get_item / PMPI_T_enum_get_item(
        enumtype: *mut c_void,
        index: c_int,
        value: *mut c_int,
        name: *mut c_char,
        name_len: *mut c_int,
    ) |tools| {
        Err(code::INVALID_HANDLE)
    }
}

// ---- Control variables ----

tool_fn! {
    /// `MPI_T_cvar_get_num`.
    fn MPI_T_cvar_get_num / PMPI_T_cvar_get_num(num: *mut c_int) |tools| {
        // SAFETY: the caller's output argument.
        unsafe { put(num, CVARS.len() as c_int) }
    }
}

tool_fn! {
    /// `MPI_T_cvar_get_info`: read-only, bound to no object, no enumeration.
    fn MPI_T_cvar_get_info / PMPI_T_cvar_get_info(
        index: c_int,
        name: *mut c_char,
        name_len: *mut c_int,
        verbosity: *mut c_int,
        datatype: *mut c_int,
        enumtype: *mut *mut c_void,
        desc: *mut c_char,
        desc_len: *mut c_int,
        bind: *mut c_int,
        scope: *mut c_int,
    ) |tools| {
        let cvar = cvar(index)?;
        // SAFETY: the caller's output arguments, each NULL or valid.
        unsafe {
            put_string(cvar.name, name, name_len)?;
            put_string(cvar.desc, desc, desc_len)?;
            put_if(verbosity, code::VERBOSITY_TUNER_BASIC);
            put_if(datatype, cvar.datatype);
            put_if(enumtype, std::ptr::null_mut());
            put_if(bind, code::BIND_NO_OBJECT);
            put_if(scope, code::SCOPE_READONLY);
        }
        Ok(())
    }
}

tool_fn! {
    /// `MPI_T_cvar_get_index`.
    fn MPI_T_cvar_get_index / PMPI_T_cvar_get_index(name: *const c_char, index: *mut c_int) |tools| {
        // SAFETY: a C string, as MPI requires.
        let wanted = unsafe { name_arg(name) }?;
        let found = CVARS.iter().position(|c| c.name.as_bytes() == wanted).ok_or(code::INVALID_NAME)?;
        // SAFETY: the caller's output argument.
        unsafe { put(index, found as c_int) }
    }
}

tool_fn! {
    /// `MPI_T_cvar_handle_alloc`: one value per variable, bound to no object.
    fn MPI_T_cvar_handle_alloc / PMPI_T_cvar_handle_alloc(
        index: c_int,
        obj_handle: *mut c_void,
        handle: *mut *mut CvarHandle,
        count: *mut c_int,
    ) |tools| {
        cvar(index)?;
        if handle.is_null() || count.is_null() {
            return Err(code::ARG);
        }
        let fresh = Box::into_raw(Box::new(CvarHandle(index as usize)));
        tools.cvar_handles.insert(fresh as usize);
        // SAFETY: checked non-NULL above.
        unsafe {
            handle.write(fresh);
            count.write(1);
        }
        Ok(())
    }
}

tool_fn! {
    /// `MPI_T_cvar_handle_free`: sets the handle to `MPI_T_CVAR_HANDLE_NULL`.
    fn MPI_T_cvar_handle_free / PMPI_T_cvar_handle_free(handle: *mut *mut CvarHandle) |tools| {
        if handle.is_null() {
            return Err(code::ARG);
        }
        // SAFETY: checked non-NULL; the caller's handle.
        let given = unsafe { handle.read() };
        if !tools.cvar_handles.remove(&(given as usize)) {
            return Err(code::INVALID_HANDLE);
        }
        // SAFETY: listed, so a live box (see `Tools`), now unlisted.
        drop(unsafe { Box::from_raw(given) });
        // SAFETY: as above.
        unsafe { handle.write(std::ptr::null_mut()) };
        Ok(())
    }
}

/// The variable of a handle handed out and not freed.
fn cvar_of(tools: &Tools, handle: *const CvarHandle) -> std::result::Result<&'static Cvar, c_int> {
    if !tools.cvar_handles.contains(&(handle as usize)) {
        return Err(code::INVALID_HANDLE);
    }
    // SAFETY: listed, so a live box (see `Tools`).
    let index = unsafe { (*handle).0 };
    Ok(&CVARS[index])
}

tool_fn! {
    /// `MPI_T_cvar_read`: an `int` or an `unsigned long`, as the variable's type says.
    fn MPI_T_cvar_read / PMPI_T_cvar_read(handle: *mut CvarHandle, buf: *mut c_void) |tools| {
        let cvar = cvar_of(tools, handle)?;
        if buf.is_null() {
            return Err(code::ARG);
        }
        let value = cvar_value(cvar)?;
        // SAFETY: MPI's rule: `buf` holds one value of the variable's type.
        unsafe {
            match cvar.datatype {
                MPI_INT => buf.cast::<c_int>().write(value as c_int),
                _ => buf.cast::<c_ulong>().write(value as c_ulong),
            }
        }
        Ok(())
    }
}

tool_fn! {
    /// `MPI_T_cvar_write`: every variable is read-only (set by the environment at start-up).
    fn MPI_T_cvar_write / PMPI_T_cvar_write(handle: *mut CvarHandle, buf: *const c_void) |tools| {
        cvar_of(tools, handle)?;
        Err(code::CVAR_SET_NEVER)
    }
}

// ---- Performance variables: none, but sessions exist ----

tool_fn! {
    /// `MPI_T_pvar_get_num`: grappe has no performance variable.
    fn MPI_T_pvar_get_num / PMPI_T_pvar_get_num(num: *mut c_int) |tools| {
        // SAFETY: the caller's output argument.
        unsafe { put(num, 0) }
    }
}

tool_fn! {
    /// `MPI_T_pvar_get_info`: no index is valid.
    fn MPI_T_pvar_get_info / PMPI_T_pvar_get_info(
        index: c_int,
        name: *mut c_char,
        name_len: *mut c_int,
        verbosity: *mut c_int,
        var_class: *mut c_int,
        datatype: *mut c_int,
        enumtype: *mut *mut c_void,
        desc: *mut c_char,
        desc_len: *mut c_int,
        bind: *mut c_int,
        readonly: *mut c_int,
        continuous: *mut c_int,
        atomic: *mut c_int,
    ) |tools| {
        Err(code::INVALID_INDEX)
    }
}

tool_fn! {
    /// `MPI_T_pvar_get_index`: no name matches.
    fn MPI_T_pvar_get_index / PMPI_T_pvar_get_index(name: *const c_char, var_class: c_int, index: *mut c_int) |tools| {
        // SAFETY: a C string, as MPI requires.
        unsafe { name_arg(name) }?;
        Err(code::INVALID_NAME)
    }
}

tool_fn! {
    /// `MPI_T_pvar_session_create`.
    fn MPI_T_pvar_session_create / PMPI_T_pvar_session_create(session: *mut *mut Session) |tools| {
        if session.is_null() {
            return Err(code::ARG);
        }
        let fresh = Box::into_raw(Box::new(Session));
        tools.sessions.insert(fresh as usize);
        // SAFETY: checked non-NULL.
        unsafe { session.write(fresh) };
        Ok(())
    }
}

tool_fn! {
    /// `MPI_T_pvar_session_free`: sets the session to `MPI_T_PVAR_SESSION_NULL`.
    fn MPI_T_pvar_session_free / PMPI_T_pvar_session_free(session: *mut *mut Session) |tools| {
        if session.is_null() {
            return Err(code::ARG);
        }
        // SAFETY: checked non-NULL; the caller's session.
        let given = unsafe { session.read() };
        if !tools.sessions.remove(&(given as usize)) {
            return Err(code::INVALID_SESSION);
        }
        // SAFETY: listed, so a live box, now unlisted.
        drop(unsafe { Box::from_raw(given) });
        // SAFETY: as above.
        unsafe { session.write(std::ptr::null_mut()) };
        Ok(())
    }
}

/// Checks a session argument: `MPI_T_ERR_INVALID_SESSION` if it is not one.
fn session(tools: &Tools, session: *mut Session) -> Outcome {
    match tools.sessions.contains(&(session as usize)) {
        true => Ok(()),
        false => Err(code::INVALID_SESSION),
    }
}

/// Whether `handle` is `MPI_T_PVAR_ALL_HANDLES`.
fn all_handles(handle: *mut c_void) -> bool {
    handle == super::fortran::MPI_T_PVAR_ALL_HANDLES.0.cast_mut()
}

tool_fn! {
    /// `MPI_T_pvar_handle_alloc`: no index is valid.
    fn MPI_T_pvar_handle_alloc / PMPI_T_pvar_handle_alloc(
        s: *mut Session,
        index: c_int,
        obj_handle: *mut c_void,
        handle: *mut *mut c_void,
        count: *mut c_int,
    ) |tools| {
        session(tools, s)?;
        Err(code::INVALID_INDEX)
    }
}

tool_fn! {
    /// `MPI_T_pvar_handle_free`: no handle exists.
    fn MPI_T_pvar_handle_free / PMPI_T_pvar_handle_free(s: *mut Session, handle: *mut *mut c_void) |tools| {
        session(tools, s)?;
        Err(code::INVALID_HANDLE)
    }
}

/// `MPI_T_pvar_start`, `_stop` and `_reset`: on `MPI_T_PVAR_ALL_HANDLES`
/// they act on every handle of the session, which has none; no other
/// handle exists.
fn on_all_handles(tools: &Tools, s: *mut Session, handle: *mut c_void) -> Outcome {
    session(tools, s)?;
    match all_handles(handle) {
        true => Ok(()),
        false => Err(code::INVALID_HANDLE),
    }
}

tool_fn! {
    /// `MPI_T_pvar_start`.
    fn MPI_T_pvar_start / PMPI_T_pvar_start(s: *mut Session, handle: *mut c_void) |tools| {
        on_all_handles(tools, s, handle)
    }
}

tool_fn! {
    /// `MPI_T_pvar_stop`.
    fn MPI_T_pvar_stop / PMPI_T_pvar_stop(s: *mut Session, handle: *mut c_void) |tools| {
        on_all_handles(tools, s, handle)
    }
}

tool_fn! {
    /// `MPI_T_pvar_reset`.
    fn MPI_T_pvar_reset / PMPI_T_pvar_reset(s: *mut Session, handle: *mut c_void) |tools| {
        on_all_handles(tools, s, handle)
    }
}

/// `MPI_T_pvar_read`, `_write` and `_readreset`: they take one handle,
/// and none exists (`MPI_T_PVAR_ALL_HANDLES` is not one).
fn one_handle(tools: &Tools, s: *mut Session) -> Outcome {
    session(tools, s)?;
    Err(code::INVALID_HANDLE)
}

tool_fn! {
    /// `MPI_T_pvar_read`.
    fn MPI_T_pvar_read / PMPI_T_pvar_read(s: *mut Session, handle: *mut c_void, buf: *mut c_void) |tools| {
        one_handle(tools, s)
    }
}

tool_fn! {
    /// `MPI_T_pvar_write`.
    fn MPI_T_pvar_write / PMPI_T_pvar_write(s: *mut Session, handle: *mut c_void, buf: *const c_void) |tools| {
        one_handle(tools, s)
    }
}

tool_fn! {
    /// `MPI_T_pvar_readreset`.
    fn MPI_T_pvar_readreset / PMPI_T_pvar_readreset(s: *mut Session, handle: *mut c_void, buf: *mut c_void) |tools| {
        one_handle(tools, s)
    }
}

// ---- Categories: one, of every control variable ----

tool_fn! {
    /// `MPI_T_category_get_num`.
    fn MPI_T_category_get_num / PMPI_T_category_get_num(num: *mut c_int) |tools| {
        // SAFETY: the caller's output argument.
        unsafe { put(num, 1) }
    }
}

tool_fn! {
    /// `MPI_T_category_get_info`.
    fn MPI_T_category_get_info / PMPI_T_category_get_info(
        index: c_int,
        name: *mut c_char,
        name_len: *mut c_int,
        desc: *mut c_char,
        desc_len: *mut c_int,
        num_cvars: *mut c_int,
        num_pvars: *mut c_int,
        num_categories: *mut c_int,
    ) |tools| {
        category(index)?;
        // SAFETY: the caller's output arguments, each NULL or valid.
        unsafe {
            put_string(CATEGORY.0, name, name_len)?;
            put_string(CATEGORY.1, desc, desc_len)?;
            put_if(num_cvars, CVARS.len() as c_int);
            put_if(num_pvars, 0);
            put_if(num_categories, 0);
        }
        Ok(())
    }
}

tool_fn! {
    /// `MPI_T_category_get_index`.
    fn MPI_T_category_get_index / PMPI_T_category_get_index(name: *const c_char, index: *mut c_int) |tools| {
        // SAFETY: a C string, as MPI requires.
        if unsafe { name_arg(name) }? != CATEGORY.0.as_bytes() {
            return Err(code::INVALID_NAME);
        }
        // SAFETY: the caller's output argument.
        unsafe { put(index, 0) }
    }
}

/// Writes the first `len` of `members` to `indices` (a category's lists).
///
/// # Safety
/// `indices` holds `len` ints.
unsafe fn put_indices(members: impl Iterator<Item = usize>, len: c_int, indices: *mut c_int) -> Outcome {
    let len = usize::try_from(len).map_err(|_| code::INVALID)?;
    for (i, member) in members.take(len).enumerate() {
        if indices.is_null() {
            return Err(code::ARG);
        }
        // SAFETY: `i < len`, within the caller's array.
        unsafe { indices.add(i).write(member as c_int) };
    }
    Ok(())
}

tool_fn! {
    /// `MPI_T_category_get_cvars`: every control variable, in index order.
    fn MPI_T_category_get_cvars / PMPI_T_category_get_cvars(index: c_int, len: c_int, indices: *mut c_int) |tools| {
        category(index)?;
        // SAFETY: MPI's rule: the array holds `len` ints.
        unsafe { put_indices(0..CVARS.len(), len, indices) }
    }
}

tool_fn! {
    /// `MPI_T_category_get_pvars`: the category has none.
    fn MPI_T_category_get_pvars / PMPI_T_category_get_pvars(index: c_int, len: c_int, indices: *mut c_int) |tools| {
        category(index)
    }
}

tool_fn! {
    /// `MPI_T_category_get_categories`: the category has none.
    fn MPI_T_category_get_categories / PMPI_T_category_get_categories(
        index: c_int,
        len: c_int,
        indices: *mut c_int,
    ) |tools| {
        category(index)
    }
}

tool_fn! {
    /// `MPI_T_category_get_events`: the category has none.
    fn MPI_T_category_get_events / PMPI_T_category_get_events(index: c_int, len: c_int, indices: *mut c_int) |tools| {
        category(index)
    }
}

tool_fn! {
    /// `MPI_T_category_get_num_events`.
    fn MPI_T_category_get_num_events / PMPI_T_category_get_num_events(index: c_int, num: *mut c_int) |tools| {
        category(index)?;
        // SAFETY: the caller's output argument.
        unsafe { put(num, 0) }
    }
}

tool_fn! {
    /// `MPI_T_category_changed`: the categories never change.
    fn MPI_T_category_changed / PMPI_T_category_changed(update_number: *mut c_int) |tools| {
        // SAFETY: the caller's output argument.
        unsafe { put(update_number, 0) }
    }
}

// ---- Events and their sources: none ----

tool_fn! {
    /// `MPI_T_event_get_num`.
    fn MPI_T_event_get_num / PMPI_T_event_get_num(num: *mut c_int) |tools| {
        // SAFETY: the caller's output argument.
        unsafe { put(num, 0) }
    }
}

tool_fn! {
    /// `MPI_T_event_get_info`: no index is valid.
    fn MPI_T_event_get_info / PMPI_T_event_get_info(
        index: c_int,
        name: *mut c_char,
        name_len: *mut c_int,
        verbosity: *mut c_int,
        datatypes: *mut c_int,
        displacements: *mut c_long,
        num_elements: *mut c_int,
        enumtype: *mut *mut c_void,
        info: *mut c_int,
        desc: *mut c_char,
        desc_len: *mut c_int,
        bind: *mut c_int,
    ) |tools| {
        Err(code::INVALID_INDEX)
    }
}

tool_fn! {
    /// `MPI_T_event_get_index`: no name matches.
    fn MPI_T_event_get_index / PMPI_T_event_get_index(name: *const c_char, index: *mut c_int) |tools| {
        // SAFETY: a C string, as MPI requires.
        unsafe { name_arg(name) }?;
        Err(code::INVALID_NAME)
    }
}

tool_fn! {
    /// `MPI_T_event_handle_alloc`: no index is valid.
    fn MPI_T_event_handle_alloc / PMPI_T_event_handle_alloc(
        index: c_int,
        obj_handle: *mut c_void,
        info: c_int,
        registration: *mut *mut c_void,
    ) |tools| {
        Err(code::INVALID_INDEX)
    }
}

/// Defines event functions whose first argument is a registration or an
/// event instance: none can exist, so each is `MPI_T_ERR_INVALID_HANDLE`.
macro_rules! no_event_handle {
    ($($(#[$doc:meta])* fn $name:ident / $pname:ident ($($arg:ident : $ty:ty),* $(,)?);)*) => {
        $(tool_fn! {
            $(#[$doc])*
            fn $name / $pname($($arg: $ty),*) |tools| {
                Err(code::INVALID_HANDLE)
            }
        })*
    };
}

no_event_handle! {
    /// `MPI_T_event_handle_free`.
    fn MPI_T_event_handle_free / PMPI_T_event_handle_free(
        registration: *mut c_void,
        user_data: *mut c_void,
        free_cb: *mut c_void,
    );
    /// `MPI_T_event_handle_get_info`.
    fn MPI_T_event_handle_get_info / PMPI_T_event_handle_get_info(registration: *mut c_void, info_used: *mut c_int);
    /// `MPI_T_event_handle_set_info`.
    fn MPI_T_event_handle_set_info / PMPI_T_event_handle_set_info(registration: *mut c_void, info: c_int);
    /// `MPI_T_event_register_callback`.
    fn MPI_T_event_register_callback / PMPI_T_event_register_callback(
        registration: *mut c_void,
        safety: c_int,
        info: c_int,
        user_data: *mut c_void,
        callback: *mut c_void,
    );
    /// `MPI_T_event_callback_get_info`.
    fn MPI_T_event_callback_get_info / PMPI_T_event_callback_get_info(
        registration: *mut c_void,
        safety: c_int,
        info_used: *mut c_int,
    );
    /// `MPI_T_event_callback_set_info`.
    fn MPI_T_event_callback_set_info / PMPI_T_event_callback_set_info(
        registration: *mut c_void,
        safety: c_int,
        info: c_int,
    );
    /// `MPI_T_event_set_dropped_handler`.
    fn MPI_T_event_set_dropped_handler / PMPI_T_event_set_dropped_handler(
        registration: *mut c_void,
        handler: *mut c_void,
    );
    /// `MPI_T_event_read` (an event instance exists only inside a callback).
    fn MPI_T_event_read / PMPI_T_event_read(instance: *mut c_void, element: c_int, buffer: *mut c_void);
    /// `MPI_T_event_copy`.
    fn MPI_T_event_copy / PMPI_T_event_copy(instance: *mut c_void, buffer: *mut c_void);
    /// `MPI_T_event_get_timestamp`.
    fn MPI_T_event_get_timestamp / PMPI_T_event_get_timestamp(instance: *mut c_void, timestamp: *mut c_long);
    /// `MPI_T_event_get_source`.
    fn MPI_T_event_get_source / PMPI_T_event_get_source(instance: *mut c_void, source: *mut c_int);
}

tool_fn! {
    /// `MPI_T_source_get_num`: no event source.
    fn MPI_T_source_get_num / PMPI_T_source_get_num(num: *mut c_int) |tools| {
        // SAFETY: the caller's output argument.
        unsafe { put(num, 0) }
    }
}

tool_fn! {
    /// `MPI_T_source_get_info`: no index is valid.
    fn MPI_T_source_get_info / PMPI_T_source_get_info(
        index: c_int,
        name: *mut c_char,
        name_len: *mut c_int,
        desc: *mut c_char,
        desc_len: *mut c_int,
        ordering: *mut c_int,
        ticks_per_second: *mut c_long,
        max_ticks: *mut c_long,
        info: *mut c_int,
    ) |tools| {
        Err(code::INVALID_INDEX)
    }
}

tool_fn! {
    /// `MPI_T_source_get_timestamp`: no index is valid.
    fn MPI_T_source_get_timestamp / PMPI_T_source_get_timestamp(index: c_int, timestamp: *mut c_long) |tools| {
        Err(code::INVALID_INDEX)
    }
}
