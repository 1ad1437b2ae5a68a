//! The way into every MPI function: its body runs under `catch_unwind`
//! (no Rust panic ever crosses the C boundary), and a failure goes to the
//! error handler that applies.

use std::ffi::c_int;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::abi::{self, class};
use crate::errors::{MpiError, Result, code_for};
use crate::state;

/// Runs the body of MPI function `name`: `MPI_SUCCESS`, or the error's
/// code if its handler returns errors; ends the job if its handler is
/// fatal.
pub fn enter(name: &'static str, body: impl FnOnce() -> Result<()>) -> c_int {
    let outcome = catch_unwind(AssertUnwindSafe(body));
    if SITES_WANTED.load(Ordering::Relaxed) {
        // The call is over: what the runtime records next is not its.
        grappe_comm::set_foreign_caller(0);
    }
    let error = match outcome {
        Ok(Ok(())) => return abi::SUCCESS,
        Ok(Err(error)) => error,
        Err(panic) => MpiError::new(class::INTERN, format!("internal error in grappe: {}", panic_text(&panic))),
    };
    raise(name, error)
}

/// What becomes of `error`, raised by `name`.
#[cold]
pub fn raise(name: &'static str, error: MpiError) -> c_int {
    // Helpers that name the call themselves ("MPI_Send: negative count")
    // would have it said twice.
    let message = error.message.strip_prefix(name).and_then(|rest| rest.strip_prefix(": ")).unwrap_or(&error.message);
    if let Some(file) = error.file {
        if let Some(code) = raise_on_file(name, message, &error, file) {
            return code;
        }
    }
    if let Some(win) = error.win {
        if let Some(code) = raise_on_win(name, message, &error, win) {
            return code;
        }
    }
    if let Some(session) = error.session {
        if let Some(code) = raise_on_session(name, message, &error, session) {
            return code;
        }
    }
    let Ok(state) = state::lock(name) else {
        // Before MPI_Init or after MPI_Finalize there is no handler, and no
        // job to stop: as MPICH does, the process ends.
        grappe_runtime::say(&format!("{name}: {message}"));
        std::process::exit(1);
    };
    let window_handler = error.win.and_then(crate::api::win::errhandler_of);
    let session_handler = error.session.and_then(crate::api::session::errhandler_of);
    let (handler, comm) = match (error.file, window_handler.or(session_handler)) {
        // A file's, a window's or a session's fatal handler ends the job as the world's does.
        (Some(_), _) | (_, Some(_)) => (abi::ERRORS_ARE_FATAL, state.comms.get(0).map(|world| &world.comm)),
        _ => state.errhandler_for(&error),
    };
    if let Some(function) = crate::api::user_handler(handler) {
        let code = code_for(&MpiError::new(error.class, format!("{name}: {message}")));
        let (mut c, mut passed) = (error.comm.unwrap_or(abi::COMM_WORLD), code);
        drop(state);
        // SAFETY: the program's handler, with the arguments MPI defines.
        unsafe { function(&mut c, &mut passed) };
        return code;
    }
    match (handler, comm) {
        (abi::ERRORS_RETURN, _) => code_for(&MpiError::new(error.class, format!("{name}: {message}"))),
        (_, Some(comm)) => comm.fail_fatally(name, &message),
        (_, None) => {
            grappe_runtime::say(&format!("fatal error in {name}: {message}"));
            std::process::exit(1)
        }
    }
}

/// The code of an error that file `file`'s handler (or `MPI_FILE_NULL`'s)
/// returns, after calling it if it is the program's; `None` if the
/// handler is fatal.
fn raise_on_file(name: &str, message: &str, error: &MpiError, file: usize) -> Option<c_int> {
    let handler = crate::io::errhandler_of(file);
    let function = crate::api::user_file_handler(handler);
    if handler != abi::ERRORS_RETURN && function.is_none() {
        return None;
    }
    let code = code_for(&MpiError::new(error.class, format!("{name}: {message}")));
    if let Some(function) = function {
        let (mut handle, mut passed) = (file, code);
        // SAFETY: the program's handler, with the arguments MPI defines.
        unsafe { function(&mut handle, &mut passed) };
    }
    Some(code)
}

/// The code of an error that window `win`'s handler returns, after
/// calling it if it is the program's; `None` if the handler is fatal (or
/// the window is gone).
fn raise_on_win(name: &str, message: &str, error: &MpiError, win: c_int) -> Option<c_int> {
    raise_to(name, message, error, win, crate::api::win::errhandler_of(win)?)
}

/// As [`raise_on_win`], for session `session`.
fn raise_on_session(name: &str, message: &str, error: &MpiError, session: c_int) -> Option<c_int> {
    raise_to(name, message, error, session, crate::api::session::errhandler_of(session)?)
}

/// The code of an error that `handler`, the handler of the object
/// `handle` names, returns, after calling it if it is the program's;
/// `None` if it is fatal.
fn raise_to(name: &str, message: &str, error: &MpiError, handle: c_int, handler: c_int) -> Option<c_int> {
    let function = crate::api::user_handler(handler);
    if handler != abi::ERRORS_RETURN && function.is_none() {
        return None;
    }
    let code = code_for(&MpiError::new(error.class, format!("{name}: {message}")));
    if let Some(function) = function {
        let (mut handle, mut passed) = (handle, code);
        // SAFETY: the program's handler, with the arguments MPI defines.
        unsafe { function(&mut handle, &mut passed) };
    }
    Some(code)
}

fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic".to_owned()
    }
}

/// Exports `PMPI_name` and a weak alias `MPI_name` (which a profiling
/// library may replace, calling `PMPI_name` itself). The alias is made in
/// assembly in the same module as the function, which must be in the same
/// object for `.set` to resolve.
#[macro_export]
#[doc(hidden)]
macro_rules! weak_alias {
    ($name:ident, $pname:ident) => {
        core::arch::global_asm!(concat!(
            ".weak ",
            stringify!($name),
            "\n.set ",
            stringify!($name),
            ", ",
            stringify!($pname)
        ));
    };
}

/// Whether calls note their caller's return address for the trace (set
/// at init when the rank records a trace): read by each function's entry
/// ([`mpi_fn!`]), in assembly.
#[doc(hidden)]
pub static SITES_WANTED: AtomicBool = AtomicBool::new(false);

/// Notes the return address of the MPI call under way on this thread, as
/// the site its trace records name (see `grappe_comm::set_foreign_caller`).
#[doc(hidden)]
pub extern "C" fn note_caller(address: usize) {
    grappe_comm::set_foreign_caller(address);
}

/// Defines MPI function `MPI_name` (as `PMPI_name` and its weak alias):
/// its arguments, and a body that returns `Result<()>`, run by [`enter`].
///
/// The body is the function `PMPI_name::body`. On x86-64 `PMPI_name`
/// itself is a few instructions of assembly in front of it: Rust cannot
/// read its own return address, which traces record as the C caller's
/// site, and the instructions can before jumping to the body (with the
/// caller's arguments untouched, so that the body returns straight to the
/// caller). When no trace is recorded they cost a load and a branch.
#[macro_export]
#[doc(hidden)]
macro_rules! mpi_fn {
    ($(#[$doc:meta])* fn $name:ident / $pname:ident ($($arg:ident : $ty:ty),* $(,)?) $body:block) => {
        $(#[$doc])*
        #[allow(non_snake_case)]
        pub mod $pname {
            #[allow(unused_imports)]
            use super::*;

            /// The function's body (see `mpi_fn!`).
            #[allow(clippy::missing_safety_doc)]
            pub unsafe extern "C" fn body($($arg: $ty),*) -> std::ffi::c_int {
                $crate::call::enter(stringify!($name), move || $body)
            }
        }
        $crate::entry!($name, $pname, ($($arg: $ty),*));
    };
}

/// Defines MPI function `MPI_name` and its large-count form `MPI_name_c`
/// (MPI 4) from one body, as two [`mpi_fn!`]s. The arguments whose type
/// the two forms differ in are written with the types `Int` (a count:
/// `int`, or `MPI_Count` in the `_c` form) and `Disp` (a displacement of
/// a v-collective or a window's unit: `int`, or `MPI_Aint`); `NAME` is
/// the function's name, for messages. The body converts counts with
/// `CountArg::wide` (or `widen!`) for the functions the two share; a
/// `calling Alias = int_path, c_path;` clause names, as `Alias`, a
/// function of each form (e.g. the non-blocking collective that a
/// persistent one starts).
#[macro_export]
#[doc(hidden)]
macro_rules! counted_fn {
    (
        $(#[$doc:meta])*
        fn $name:ident / $pname:ident, $cname:ident / $pcname:ident ($($arg:ident : $ty:ty),* $(,)?)
        $(calling $alias:ident = $ipath:path, $cpath:path;)?
        $body:block
    ) => {
        #[allow(non_snake_case, dead_code, unused_imports)]
        mod $name {
            use super::*;
            $(use $ipath as $alias;)?
            type Int = std::ffi::c_int;
            type Disp = std::ffi::c_int;
            const NAME: &str = stringify!($name);
            $crate::mpi_fn! { $(#[$doc])* fn $name / $pname ($($arg: $ty),*) $body }
        }
        #[allow(non_snake_case, dead_code, unused_imports)]
        mod $cname {
            use super::*;
            $(use $cpath as $alias;)?
            type Int = i64;
            type Disp = i64;
            const NAME: &str = stringify!($cname);
            $crate::mpi_fn! {
                /// The large-count form (MPI 4): see the `int` form.
                fn $cname / $pcname ($($arg: $ty),*) $body
            }
        }
        #[allow(unused_imports)]
        pub(crate) use self::$name::$pname;
        #[allow(unused_imports)]
        pub(crate) use self::$cname::$pcname;
    };
}

/// The exported `PMPI_name`, which notes its caller for traces, then
/// jumps to `PMPI_name::body`, and the weak alias `MPI_name`.
#[cfg(target_arch = "x86_64")]
#[macro_export]
#[doc(hidden)]
macro_rules! entry {
    ($name:ident, $pname:ident, ($($arg:ident : $ty:ty),*)) => {
        // Keeps the six argument registers across the call that notes the
        // caller (no MPI function takes floating-point arguments); the
        // seventh word keeps the stack 16-byte aligned for that call.
        core::arch::global_asm!(
            concat!(".globl ", stringify!($pname)),
            concat!(".type ", stringify!($pname), ",@function"),
            concat!(stringify!($pname), ":"),
            ".cfi_startproc",
            "cmp byte ptr [rip + {wanted}], 0",
            "je {body}",
            "push rdi", ".cfi_adjust_cfa_offset 8",
            "push rsi", ".cfi_adjust_cfa_offset 8",
            "push rdx", ".cfi_adjust_cfa_offset 8",
            "push rcx", ".cfi_adjust_cfa_offset 8",
            "push r8", ".cfi_adjust_cfa_offset 8",
            "push r9", ".cfi_adjust_cfa_offset 8",
            "mov rdi, [rsp + 48]",
            "sub rsp, 8", ".cfi_adjust_cfa_offset 8",
            "call {note}",
            "add rsp, 8", ".cfi_adjust_cfa_offset -8",
            "pop r9", ".cfi_adjust_cfa_offset -8",
            "pop r8", ".cfi_adjust_cfa_offset -8",
            "pop rcx", ".cfi_adjust_cfa_offset -8",
            "pop rdx", ".cfi_adjust_cfa_offset -8",
            "pop rsi", ".cfi_adjust_cfa_offset -8",
            "pop rdi", ".cfi_adjust_cfa_offset -8",
            "jmp {body}",
            ".cfi_endproc",
            concat!(".size ", stringify!($pname), ", . - ", stringify!($pname)),
            concat!(".weak ", stringify!($name)),
            concat!(".set ", stringify!($name), ", ", stringify!($pname)),
            wanted = sym $crate::call::SITES_WANTED,
            note = sym $crate::call::note_caller,
            body = sym $pname::body,
        );
    };
}

/// Elsewhere `PMPI_name` calls its body, and traces name no C caller.
#[cfg(not(target_arch = "x86_64"))]
#[macro_export]
#[doc(hidden)]
macro_rules! entry {
    ($name:ident, $pname:ident, ($($arg:ident : $ty:ty),*)) => {
        #[unsafe(no_mangle)]
        #[allow(clippy::missing_safety_doc)]
        pub unsafe extern "C" fn $pname($($arg: $ty),*) -> std::ffi::c_int {
            // SAFETY: the caller's promises are the body's.
            unsafe { $pname::body($($arg),*) }
        }
        $crate::weak_alias!($name, $pname);
    };
}
