//! Error handlers and error codes.

use std::ffi::{c_char, c_int};

use crate::abi::{self, class};
use crate::errors::{self, MpiError};
use crate::mpi_fn;
use crate::state;

use super::env::copy_string;
use super::{get, put};

/// A handler for communicators: a predefined one or one of
/// `MPI_Comm_create_errhandler`.
pub(crate) fn check_handler(handler: c_int) -> Result<(), MpiError> {
    match handler {
        user if crate::api::misc::is_user_handler(user) && crate::api::user_handler(user).is_none() => {
            Err(MpiError::new(
                class::ARG,
                format!("{user:#x} is an error handler for files (MPI_File_create_errhandler), not for communicators"),
            ))
        }
        other => check_any_handler(other),
    }
}

/// A predefined handler or a user handler of any kind.
pub(crate) fn check_any_handler(handler: c_int) -> Result<(), MpiError> {
    match handler {
        abi::ERRORS_ARE_FATAL | abi::ERRORS_RETURN | abi::ERRORS_ABORT => Ok(()),
        user if crate::api::misc::is_user_handler(user) => Ok(()),
        abi::ERRHANDLER_NULL => Err(MpiError::new(class::ARG, "MPI_ERRHANDLER_NULL is not an error handler")),
        other => Err(MpiError::new(class::ARG, format!("{other:#x} is not an error handler"))),
    }
}

mpi_fn! {
    /// `MPI_Comm_set_errhandler`.
    fn MPI_Comm_set_errhandler / PMPI_Comm_set_errhandler(comm: c_int, errhandler: c_int) {
        check_handler(errhandler).map_err(|e| e.on(comm))?;
        let mut state = state::lock("MPI_Comm_set_errhandler")?;
        let slot = state.local_comm_slot(comm)?;
        state.comms.get_mut(slot).expect("checked by comm_slot").errhandler = errhandler;
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Comm_get_errhandler`.
    fn MPI_Comm_get_errhandler / PMPI_Comm_get_errhandler(comm: c_int, errhandler: *mut c_int) {
        let state = state::lock("MPI_Comm_get_errhandler")?;
        let handler = state.local_comm(comm)?.errhandler;
        // SAFETY: the caller's output argument.
        unsafe { put(errhandler, handler, "errhandler") }
    }
}

mpi_fn! {
    /// `MPI_Errhandler_free`: the handle becomes `MPI_ERRHANDLER_NULL`.
    fn MPI_Errhandler_free / PMPI_Errhandler_free(errhandler: *mut c_int) {
        // SAFETY: the caller's in-out argument.
        let handler = unsafe { get(errhandler, "errhandler")? };
        check_any_handler(handler)?;
        // A user handler stays defined: MPI lets communicators that were
        // given it keep using it after the handle is freed.
        // SAFETY: the caller's in-out argument.
        unsafe { put(errhandler, abi::ERRHANDLER_NULL, "errhandler") }
    }
}

mpi_fn! {
    /// `MPI_Error_string`: what was wrong, with the numbers.
    fn MPI_Error_string / PMPI_Error_string(errorcode: c_int, string: *mut c_char, resultlen: *mut c_int) {
        let text = errors::string_of_code(errorcode)
            .ok_or_else(|| MpiError::new(class::ARG, format!("{errorcode} is not an error code")))?;
        // SAFETY: `string` holds MPI_MAX_ERROR_STRING characters, as MPI requires.
        let len = unsafe { copy_string(&text, string, abi::MAX_ERROR_STRING, "string")? };
        // SAFETY: the caller's output argument.
        unsafe { put(resultlen, len, "resultlen") }
    }
}

mpi_fn! {
    /// `MPI_Error_class`.
    fn MPI_Error_class / PMPI_Error_class(errorcode: c_int, errorclass: *mut c_int) {
        let found = errors::class_of_code(errorcode)
            .ok_or_else(|| MpiError::new(class::ARG, format!("{errorcode} is not an error code")))?;
        // SAFETY: the caller's output argument.
        unsafe { put(errorclass, found, "errorclass") }
    }
}

mpi_fn! {
    /// `MPI_Add_error_class`: a class of the program's, numbered after
    /// `MPI_ERR_LASTCODE`; `MPI_LASTUSEDCODE` follows it.
    fn MPI_Add_error_class / PMPI_Add_error_class(errorclass: *mut c_int) {
        state::lock("MPI_Add_error_class")?;
        // SAFETY: the caller's output argument.
        unsafe { put(errorclass, errors::add_class(), "errorclass") }
    }
}

mpi_fn! {
    /// `MPI_Add_error_code`: a code of class `errorclass`.
    fn MPI_Add_error_code / PMPI_Add_error_code(errorclass: c_int, errorcode: *mut c_int) {
        state::lock("MPI_Add_error_code")?;
        let code = errors::add_code(errorclass)?;
        // SAFETY: the caller's output argument.
        unsafe { put(errorcode, code, "errorcode") }
    }
}

mpi_fn! {
    /// `MPI_Add_error_string`: the string of a class or code the program added.
    fn MPI_Add_error_string / PMPI_Add_error_string(errorcode: c_int, string: *const c_char) {
        state::lock("MPI_Add_error_string")?;
        if string.is_null() {
            return Err(MpiError::new(class::ARG, "MPI_Add_error_string: the string is NULL"));
        }
        // SAFETY: a NUL-terminated C string, as MPI requires.
        let text = unsafe { std::ffi::CStr::from_ptr(string) }.to_string_lossy().into_owned();
        if text.len() >= abi::MAX_ERROR_STRING {
            return Err(MpiError::new(class::ARG, format!("MPI_Add_error_string: the string has {} characters, MPI_MAX_ERROR_STRING is {}", text.len(), abi::MAX_ERROR_STRING)));
        }
        errors::set_added_string(errorcode, text)
    }
}
