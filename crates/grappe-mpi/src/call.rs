//! The way into every MPI function: its body runs under `catch_unwind`
//! (no Rust panic ever crosses the C boundary), and a failure goes to the
//! error handler that applies.

use std::ffi::c_int;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::abi::{self, class};
use crate::errors::{MpiError, Result, code_for};
use crate::state;

/// Runs the body of MPI function `name`: `MPI_SUCCESS`, or the error's
/// code if its handler returns errors; ends the job if its handler is
/// fatal.
pub fn enter(name: &'static str, body: impl FnOnce() -> Result<()>) -> c_int {
    let error = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => return abi::SUCCESS,
        Ok(Err(error)) => error,
        Err(panic) => MpiError::new(class::INTERN, format!("internal error in grappe: {}", panic_text(&panic))),
    };
    raise(name, error)
}

/// What becomes of `error`, raised by `name`.
#[cold]
pub fn raise(name: &'static str, error: MpiError) -> c_int {
    let Ok(state) = state::lock(name) else {
        // Before MPI_Init or after MPI_Finalize there is no handler, and no
        // job to stop: as MPICH does, the process ends.
        eprintln!("grappe: {name}: {}", error.message);
        std::process::exit(1);
    };
    let (handler, comm) = state.errhandler_for(&error);
    if let Some(function) = crate::api::user_handler(handler) {
        let code = code_for(&MpiError::new(error.class, format!("{name}: {}", error.message)));
        let (mut c, mut passed) = (error.comm.unwrap_or(abi::COMM_WORLD), code);
        drop(state);
        // SAFETY: the program's handler, with the arguments MPI defines.
        unsafe { function(&mut c, &mut passed) };
        return code;
    }
    match (handler, comm) {
        (abi::ERRORS_RETURN, _) => code_for(&MpiError::new(error.class, format!("{name}: {}", error.message))),
        (_, Some(comm)) => comm.fail_fatally(name, &error.message),
        (_, None) => {
            eprintln!("grappe: fatal error in {name}: {}", error.message);
            std::process::exit(1)
        }
    }
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

/// Defines MPI function `MPI_name` (as `PMPI_name` and its weak alias):
/// its arguments, and a body that returns `Result<()>`, run by [`enter`].
#[macro_export]
#[doc(hidden)]
macro_rules! mpi_fn {
    ($(#[$doc:meta])* fn $name:ident / $pname:ident ($($arg:ident : $ty:ty),* $(,)?) $body:block) => {
        $(#[$doc])*
        #[unsafe(no_mangle)]
        #[allow(clippy::missing_safety_doc)]
        pub unsafe extern "C" fn $pname($($arg: $ty),*) -> std::ffi::c_int {
            $crate::call::enter(stringify!($name), move || $body)
        }
        $crate::weak_alias!($name, $pname);
    };
}
