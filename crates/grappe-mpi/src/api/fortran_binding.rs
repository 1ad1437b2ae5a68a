//! The entry points MPICH's Fortran binding library (`libmpichfort.so.12`,
//! which every program built with `mpif77`/`mpif90.mpich` loads) calls
//! besides the `PMPI_` functions: attributes as Fortran sees them (integer
//! values, not addresses) and the proxies through which it calls Fortran
//! attribute callbacks. With them, Fortran programs built against MPICH
//! run on this library through MPICH's own Fortran layer.
//!
//! An attribute set from Fortran holds its integer value; C reading it gets
//! that value where MPICH would give the address of a copy (mixing
//! languages on one attribute is the only case that differs).

use std::ffi::{c_int, c_void};

use crate::abi::class;
use crate::call;
use crate::errors::MpiError;

use super::attr::{self, CopyProxy, DeleteProxy, Object};

/// MPICH's `MPIR_Attr_type`: how an attribute value is passed.
mod attr_type {
    use std::ffi::c_int;
    /// C: the value is a pointer.
    pub const PTR: c_int = 0;
}

/// Writes what Fortran reads for an attribute: `value` (a C attribute,
/// or the address of a predefined one's `int` when `predefined`) as an
/// address-sized integer, which MPICH's Fortran layer narrows itself for
/// `MPI_ATTR_GET`.
///
/// # Safety
/// `out` points to an `MPI_Aint` (or a `void *` when `kind` is `PTR`);
/// a predefined value points to an `int`.
unsafe fn put_for(kind: c_int, out: *mut c_void, value: *mut c_void, predefined: bool) -> crate::errors::Result<()> {
    if out.is_null() {
        return Err(MpiError::new(class::ARG, "attribute_val is NULL"));
    }
    let written = match (kind, predefined) {
        (attr_type::PTR, _) => value as isize,
        // SAFETY: a predefined attribute's value is the address of its int.
        (_, true) => unsafe { *value.cast::<c_int>() as isize },
        (_, false) => value as isize,
    };
    // SAFETY: as the caller promised.
    unsafe { out.cast::<isize>().write_unaligned(written) };
    Ok(())
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
        let (mut value, mut found): (*mut c_void, c_int) = (std::ptr::null_mut(), 0);
        let at = (&mut value as *mut *mut c_void).cast();
        super::comm::get_attr("MPI_Comm_get_attr", comm, keyval, at, &mut found)?;
        // SAFETY: the caller's output arguments.
        unsafe {
            if found != 0 {
                put_for(kind, attribute_val, value, !attr::is_user_keyval(keyval))?;
            }
            super::put(flag, found, "flag")
        }
    })
}

/// `MPII_Comm_set_attr`: `MPI_Comm_set_attr` and `MPI_Attr_put` from Fortran
/// (the value itself, as a pointer-sized integer).
///
/// # Safety
/// As `MPI_Comm_set_attr`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPII_Comm_set_attr(comm: c_int, keyval: c_int, value: *mut c_void, _kind: c_int) -> c_int {
    call::enter("MPI_Comm_set_attr", || attr::set_attr("MPI_Comm_set_attr", Object::Comm(comm), keyval, value))
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
        let found = {
            let state = crate::state::lock("MPI_Type_get_attr")?;
            attr::user_attr(&state, Object::Datatype(datatype), keyval)?
        };
        // SAFETY: the caller's output arguments.
        unsafe {
            if let Some(value) = found {
                put_for(kind, attribute_val, value as *mut c_void, false)?;
            }
            super::put(flag, found.is_some() as c_int, "flag")
        }
    })
}

/// `MPII_Type_set_attr`: `MPI_Type_set_attr` from Fortran.
///
/// # Safety
/// As `MPI_Type_set_attr`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPII_Type_set_attr(datatype: c_int, keyval: c_int, value: *mut c_void, _kind: c_int) -> c_int {
    call::enter("MPI_Type_set_attr", || attr::set_attr("MPI_Type_set_attr", Object::Datatype(datatype), keyval, value))
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
    kind: c_int,
) -> c_int {
    call::enter("MPI_Win_get_attr", || {
        let found = super::win::get_attr_for_fortran(win, keyval)?;
        // SAFETY: the caller's output arguments.
        unsafe {
            if let Some(value) = found {
                put_for(kind, attribute_val, value as *mut c_void, false).map_err(|e| e.on_win(win))?;
            }
            super::put(flag, found.is_some() as c_int, "flag").map_err(|e| e.on_win(win))
        }
    })
}

/// `MPII_Win_set_attr`: `MPI_Win_set_attr` from Fortran.
///
/// # Safety
/// As `MPI_Win_set_attr`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPII_Win_set_attr(win: c_int, keyval: c_int, value: *mut c_void, _kind: c_int) -> c_int {
    call::enter("MPI_Win_set_attr", || attr::set_attr("MPI_Win_set_attr", Object::Win(win), keyval, value))
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
