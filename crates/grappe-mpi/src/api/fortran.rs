//! What the C header refers to for Fortran and for constants that are
//! objects: handle conversions (integer handles are the same in C and
//! Fortran under MPICH's interface), statuses, and the data symbols
//! (`MPI_UNWEIGHTED`, `MPI_F_STATUS_IGNORE`, `MPIR_Dup_fn` and others).

use std::ffi::{c_int, c_void};

use crate::abi::{self, class};
use crate::errors::{MpiError, Result};
use crate::{mpi_fn, weak_alias};

use super::get;

macro_rules! same_handle {
    ($($c2f:ident / $pc2f:ident, $f2c:ident / $pf2c:ident;)*) => {$(
        #[doc = concat!("`", stringify!($c2f), "`: a Fortran handle is the C handle.")]
        #[unsafe(no_mangle)]
        pub extern "C" fn $pc2f(handle: c_int) -> c_int {
            handle
        }
        weak_alias!($c2f, $pc2f);

        #[doc = concat!("`", stringify!($f2c), "`: a C handle is the Fortran handle.")]
        #[unsafe(no_mangle)]
        pub extern "C" fn $pf2c(handle: c_int) -> c_int {
            handle
        }
        weak_alias!($f2c, $pf2c);
    )*};
}

same_handle! {
    MPI_Comm_c2f / PMPI_Comm_c2f, MPI_Comm_f2c / PMPI_Comm_f2c;
    MPI_Type_c2f / PMPI_Type_c2f, MPI_Type_f2c / PMPI_Type_f2c;
    MPI_Group_c2f / PMPI_Group_c2f, MPI_Group_f2c / PMPI_Group_f2c;
    MPI_Info_c2f / PMPI_Info_c2f, MPI_Info_f2c / PMPI_Info_f2c;
    MPI_Request_c2f / PMPI_Request_c2f, MPI_Request_f2c / PMPI_Request_f2c;
    MPI_Op_c2f / PMPI_Op_c2f, MPI_Op_f2c / PMPI_Op_f2c;
    MPI_Errhandler_c2f / PMPI_Errhandler_c2f, MPI_Errhandler_f2c / PMPI_Errhandler_f2c;
    MPI_Win_c2f / PMPI_Win_c2f, MPI_Win_f2c / PMPI_Win_f2c;
    MPI_Message_c2f / PMPI_Message_c2f, MPI_Message_f2c / PMPI_Message_f2c;
}

mpi_fn! {
    /// `MPI_Status_c2f`: a Fortran status is the five integers of the C one.
    fn MPI_Status_c2f / PMPI_Status_c2f(c_status: *const abi::Status, f_status: *mut abi::Status) {
        refuse_ignore_values(c_status, "c_status")?;
        refuse_fortran_ignore_values(f_status, "f_status")?;
        // SAFETY: the caller's statuses.
        let status = unsafe { get(c_status, "c_status")? };
        if f_status.is_null() {
            return Err(MpiError::new(class::ARG, "f_status is NULL"));
        }
        // SAFETY: a writable Fortran status (MPI_STATUS_SIZE integers), non-null.
        unsafe { f_status.write_unaligned(status) };
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Status_f2c`.
    fn MPI_Status_f2c / PMPI_Status_f2c(f_status: *const abi::Status, c_status: *mut abi::Status) {
        refuse_fortran_ignore_values(f_status, "f_status")?;
        refuse_ignore_values(c_status, "c_status")?;
        if f_status.is_null() || c_status.is_null() {
            return Err(MpiError::new(class::ARG, "a status is NULL"));
        }
        // SAFETY: the caller's statuses, non-null.
        unsafe { c_status.write(f_status.read_unaligned()) };
        Ok(())
    }
}

/// MPI's ignore values are no statuses to convert: `MPI_STATUS_IGNORE`
/// and `MPI_STATUSES_IGNORE` (`(MPI_Status *) 1`) for C.
fn refuse_ignore_values<T>(status: *const T, name: &str) -> Result<()> {
    match status as usize == abi::STATUS_IGNORE {
        true => Err(MpiError::new(class::ARG, format!("{name} is MPI_STATUS_IGNORE, not a status to convert"))),
        false => Ok(()),
    }
}

/// As [`refuse_ignore_values`], for Fortran's: the addresses of
/// `MPI_STATUS_IGNORE` and `MPI_STATUSES_IGNORE` that the Fortran library
/// set in `MPI_F_STATUS_IGNORE` and `MPI_F_STATUSES_IGNORE`.
fn refuse_fortran_ignore_values<T>(status: *const T, name: &str) -> Result<()> {
    let status = status as *const c_void;
    // SAFETY: plain reads of pointers written once, when the Fortran
    // library started, before any MPI call.
    let (one, many) = unsafe { (*MPI_F_STATUS_IGNORE.0.get(), *MPI_F_STATUSES_IGNORE.0.get()) };
    if status == one || status == many {
        let which = if status == one { "MPI_F_STATUS_IGNORE" } else { "MPI_F_STATUSES_IGNORE" };
        return Err(MpiError::new(class::ARG, format!("{name} is {which}, not a status to convert")));
    }
    Ok(())
}

/// A pointer that C reads from a data symbol: MPICH's header declares
/// these as `int *const` objects compared by address.
#[repr(transparent)]
pub struct Address(pub(crate) *const c_void);

// SAFETY: the pointers are never written, and point at statics.
unsafe impl Sync for Address {}

static UNWEIGHTED_TARGET: c_int = 0;
static WEIGHTS_EMPTY_TARGET: c_int = 0;
static F_STATUS_IGNORE_TARGET: [c_int; 5] = [0; 5];
static F_STATUSES_IGNORE_TARGET: [c_int; 5] = [0; 5];

/// `MPI_UNWEIGHTED`.
#[unsafe(no_mangle)]
pub static MPI_UNWEIGHTED: Address = Address(&UNWEIGHTED_TARGET as *const c_int as *const c_void);
/// `MPI_WEIGHTS_EMPTY`.
#[unsafe(no_mangle)]
pub static MPI_WEIGHTS_EMPTY: Address = Address(&WEIGHTS_EMPTY_TARGET as *const c_int as *const c_void);
/// A pointer that C reads from a data symbol and that MPICH's Fortran
/// binding library (`libmpichfort.so.12`) sets when it starts, to the
/// addresses of its own Fortran constants: a writable object, unlike
/// [`Address`] (which the linker puts in memory made read-only after
/// relocation).
#[repr(transparent)]
pub struct FortranAddress(std::cell::UnsafeCell<*const c_void>);

// SAFETY: written once, by the Fortran library's initialisation before
// any MPI call; grappe only reads them, in the status conversions.
unsafe impl Sync for FortranAddress {}

/// `MPI_F_STATUS_IGNORE`.
#[unsafe(no_mangle)]
pub static MPI_F_STATUS_IGNORE: FortranAddress =
    FortranAddress(std::cell::UnsafeCell::new(&F_STATUS_IGNORE_TARGET as *const [c_int; 5] as *const c_void));
/// `MPI_F_STATUSES_IGNORE`.
#[unsafe(no_mangle)]
pub static MPI_F_STATUSES_IGNORE: FortranAddress =
    FortranAddress(std::cell::UnsafeCell::new(&F_STATUSES_IGNORE_TARGET as *const [c_int; 5] as *const c_void));
/// `MPI_F08_STATUS_IGNORE` (Fortran 2008 bindings, which grappe does not
/// provide: the object exists so that programs link).
#[unsafe(no_mangle)]
pub static MPI_F08_STATUS_IGNORE: Address = Address(&F_STATUS_IGNORE_TARGET as *const [c_int; 5] as *const c_void);
/// `MPI_F08_STATUSES_IGNORE`.
#[unsafe(no_mangle)]
pub static MPI_F08_STATUSES_IGNORE: Address = Address(&F_STATUSES_IGNORE_TARGET as *const [c_int; 5] as *const c_void);
/// `MPI_T_PVAR_ALL_HANDLES`: a value no handle takes (see `api::tools`).
#[unsafe(no_mangle)]
pub static MPI_T_PVAR_ALL_HANDLES: Address = Address(std::ptr::null::<c_void>().wrapping_sub(1));

/// Whether `weights` is `MPI_UNWEIGHTED`.
pub fn unweighted(weights: *const c_int) -> bool {
    std::ptr::eq(weights, &UNWEIGHTED_TARGET)
}

/// `MPIR_Dup_fn`, which MPICH's `MPI_*_DUP_FN` macros name: the
/// attribute's copy is the same value.
///
/// # Safety
/// `attribute_val_out` points to a `void *` and `flag` to an `int`, as MPI's
/// copy callbacks receive them.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPIR_Dup_fn(
    _handle: c_int,
    _keyval: c_int,
    _extra_state: *mut c_void,
    attribute_val_in: *mut c_void,
    attribute_val_out: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    if attribute_val_out.is_null() || flag.is_null() {
        return class::ARG;
    }
    // SAFETY: as the caller promised.
    unsafe {
        attribute_val_out.cast::<*mut c_void>().write(attribute_val_in);
        flag.write(1);
    }
    abi::SUCCESS
}
