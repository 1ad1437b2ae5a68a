//! The entry points MPICH's Fortran binding library (`libmpichfort.so.12`,
//! which every program built with `mpif77`/`mpif90.mpich` loads) calls
//! besides the `PMPI_` functions: attributes as Fortran sees them (integer
//! values, not addresses) and the proxies through which it calls Fortran
//! attribute callbacks. With them, Fortran programs built against MPICH
//! run on this library through MPICH's own Fortran layer.
//!
//! An attribute set from Fortran holds its integer, which C reads through
//! its address, as MPI says; one set from C reads in Fortran as the
//! pointer's value.

use std::ffi::{c_int, c_void};

use crate::abi::class;
use crate::call;
use crate::errors::MpiError;

use super::attr::{self, CopyProxy, DeleteProxy, Object};
use crate::state::AttrValue;

/// MPICH's `MPIR_Attr_type`: how an attribute value is passed.
mod attr_type {
    use std::ffi::c_int;
    /// C: the value is a pointer.
    pub const PTR: c_int = 0;
}

/// Writes what Fortran reads for an attribute, an address-sized integer
/// (MPICH's Fortran layer narrows it itself for `MPI_ATTR_GET`).
///
/// # Safety
/// `out` points to an `MPI_Aint`.
unsafe fn put_integer(out: *mut c_void, value: isize) -> crate::errors::Result<()> {
    if out.is_null() {
        return Err(MpiError::new(class::ARG, "attribute_val is NULL"));
    }
    // SAFETY: as the caller promised.
    unsafe { out.cast::<isize>().write_unaligned(value) };
    Ok(())
}

/// A user attribute as the caller asks for it: as C sees it for MPICH's
/// `MPIR_ATTR_PTR`, else as Fortran does.
fn user_attr_as(call: &str, object: Object, keyval: c_int, kind: c_int) -> crate::errors::Result<Option<isize>> {
    let state = crate::state::lock(call)?;
    match kind {
        attr_type::PTR => Ok(attr::user_attr(&state, object, keyval)?.map(|value| value as isize)),
        _ => attr::user_attr_for_fortran(&state, object, keyval),
    }
}

/// Sets `flag`, and the value when found.
///
/// # Safety
/// The caller's output arguments: `attribute_val` an `MPI_Aint`.
unsafe fn put_found(found: Option<isize>, attribute_val: *mut c_void, flag: *mut c_int) -> crate::errors::Result<()> {
    // SAFETY: as the caller promised.
    unsafe {
        if let Some(value) = found {
            put_integer(attribute_val, value)?;
        }
        super::put(flag, found.is_some() as c_int, "flag")
    }
}

/// `MPII_Comm_get_attr`: `MPI_Comm_get_attr` and `MPI_Attr_get` from Fortran.
///
/// # Safety
/// As `MPI_Comm_get_attr`, with `attribute_val` an `MPI_Aint` for Fortran.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPII_Comm_get_attr(
    comm: c_int,
    keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
    kind: c_int,
) -> c_int {
    call::enter("MPI_Comm_get_attr", || {
        if attr::is_user_keyval(keyval) {
            let found = user_attr_as("MPI_Comm_get_attr", Object::Comm(comm), keyval, kind)?;
            // SAFETY: the caller's output arguments.
            return unsafe { put_found(found, attribute_val, flag) };
        }
        // A predefined attribute: C gets the address of its int.
        let (mut value, mut found): (*mut c_int, c_int) = (std::ptr::null_mut(), 0);
        let at = (&mut value as *mut *mut c_int).cast();
        super::comm::get_attr("MPI_Comm_get_attr", comm, keyval, at, &mut found)?;
        // SAFETY: a predefined attribute's value is the address of its
        // int, which lives as long as the library.
        let found = (found != 0).then(|| match kind {
            attr_type::PTR => value as isize,
            _ => unsafe { *value as isize },
        });
        // SAFETY: the caller's output arguments.
        unsafe { put_found(found, attribute_val, flag) }
    })
}

/// `MPII_Comm_set_attr`: `MPI_Comm_set_attr` and `MPI_Attr_put` from Fortran
/// (the value itself, an integer).
///
/// # Safety
/// As `MPI_Comm_set_attr`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPII_Comm_set_attr(comm: c_int, keyval: c_int, value: *mut c_void, _kind: c_int) -> c_int {
    call::enter("MPI_Comm_set_attr", || attr::set_attr("MPI_Comm_set_attr", Object::Comm(comm), keyval, integer(value)))
}

/// A value Fortran sets: the integer itself, passed as a pointer.
fn integer(value: *mut c_void) -> AttrValue {
    AttrValue::Integer(Box::new(value as isize))
}

/// `MPII_Type_get_attr`: `MPI_Type_get_attr` from Fortran.
///
/// # Safety
/// As `MPI_Type_get_attr`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPII_Type_get_attr(
    datatype: c_int,
    keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
    kind: c_int,
) -> c_int {
    call::enter("MPI_Type_get_attr", || {
        let found = user_attr_as("MPI_Type_get_attr", Object::Datatype(datatype), keyval, kind)?;
        // SAFETY: the caller's output arguments.
        unsafe { put_found(found, attribute_val, flag) }
    })
}

/// `MPII_Type_set_attr`: `MPI_Type_set_attr` from Fortran.
///
/// # Safety
/// As `MPI_Type_set_attr`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPII_Type_set_attr(datatype: c_int, keyval: c_int, value: *mut c_void, _kind: c_int) -> c_int {
    call::enter("MPI_Type_set_attr", || {
        attr::set_attr("MPI_Type_set_attr", Object::Datatype(datatype), keyval, integer(value))
    })
}

/// `MPII_Win_get_attr`: `MPI_Win_get_attr` from Fortran (the predefined
/// attributes' values, not their addresses).
///
/// # Safety
/// As `MPI_Win_get_attr`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPII_Win_get_attr(
    win: c_int,
    keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
    _kind: c_int,
) -> c_int {
    call::enter("MPI_Win_get_attr", || {
        let found = super::win::get_attr_for_fortran(win, keyval)?;
        // SAFETY: the caller's output arguments.
        unsafe { put_found(found, attribute_val, flag).map_err(|e| e.on_win(win)) }
    })
}

/// `MPII_Win_set_attr`: `MPI_Win_set_attr` from Fortran.
///
/// # Safety
/// As `MPI_Win_set_attr`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPII_Win_set_attr(win: c_int, keyval: c_int, value: *mut c_void, _kind: c_int) -> c_int {
    call::enter("MPI_Win_set_attr", || attr::set_attr("MPI_Win_set_attr", Object::Win(win), keyval, integer(value)))
}

/// `MPII_Keyval_set_proxy`: the key's callbacks are Fortran subroutines,
/// called through these functions of the Fortran library, which pass
/// their arguments by reference.
///
/// # Safety
/// The proxies are MPICH's `MPII_Attr_copy_proxy`/`_delete_proxy`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPII_Keyval_set_proxy(keyval: c_int, copy: Option<CopyProxy>, delete: Option<DeleteProxy>) {
    // MPICH's function returns nothing: an unknown key is ignored as there.
    let _ = attr::set_proxies(keyval, copy, delete);
}

/// `MPII_Grequest_set_lang_f77`: the generalized request the Fortran
/// library has just started has Fortran callbacks, called with Fortran's
/// arguments by reference.
#[unsafe(no_mangle)]
pub extern "C" fn MPII_Grequest_set_lang_f77(request: c_int) {
    // MPICH's function returns nothing; a handle that is not a generalized
    // request (the start failed, and said so) is ignored as there.
    let _ = call::enter("MPI_Grequest_start", || super::grequest::set_fortran(request));
}
