//! Attributes on communicators: keys with copy and delete callbacks
//! (`MPI_Comm_create_keyval`), values set, got and deleted, copied by
//! `MPI_Comm_dup` and deleted by `MPI_Comm_free`.
//!
//! Callbacks run without the library's lock held, so that they may call
//! MPI themselves.

use std::ffi::{c_int, c_void};

use crate::abi::{self, class};
use crate::errors::{MpiError, Result};
use crate::mpi_fn;
use crate::state::{self, Keyval, Locked};

use super::{get, put};

/// `MPI_Comm_copy_attr_function`.
pub type CopyFunction = unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
/// `MPI_Comm_delete_attr_function`.
pub type DeleteFunction = unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_void) -> c_int;

/// Keyval handles: direct handles of type 9.
const KEYVAL_KIND: u32 = 0x9;

fn keyval_slot(state: &Locked, keyval: c_int) -> Result<usize> {
    abi::direct_index(KEYVAL_KIND, keyval)
        .filter(|&slot| state.keyvals.get(slot).is_some())
        .ok_or_else(|| MpiError::new(class::KEYVAL, format!("{keyval:#x} is not an attribute key (or was freed)")))
}

fn create_keyval(
    call: &str,
    copy: Option<CopyFunction>,
    delete: Option<DeleteFunction>,
    keyval: *mut c_int,
    extra: *mut c_void,
) -> Result<()> {
    let mut state = state::lock(call)?;
    let slot = state.keyvals.insert(Keyval { copy, delete, extra_state: extra as usize });
    // SAFETY: the caller's output argument.
    unsafe { put(keyval, abi::direct_handle(KEYVAL_KIND, slot), "keyval") }
}

mpi_fn! {
    /// `MPI_Comm_create_keyval`.
    fn MPI_Comm_create_keyval / PMPI_Comm_create_keyval(
        copy: Option<CopyFunction>,
        delete: Option<DeleteFunction>,
        keyval: *mut c_int,
        extra_state: *mut c_void,
    ) {
        create_keyval("MPI_Comm_create_keyval", copy, delete, keyval, extra_state)
    }
}

mpi_fn! {
    /// `MPI_Keyval_create` (MPI-1's name).
    fn MPI_Keyval_create / PMPI_Keyval_create(
        copy: Option<CopyFunction>,
        delete: Option<DeleteFunction>,
        keyval: *mut c_int,
        extra_state: *mut c_void,
    ) {
        create_keyval("MPI_Keyval_create", copy, delete, keyval, extra_state)
    }
}

fn free_keyval(call: &str, keyval: *mut c_int) -> Result<()> {
    // SAFETY: the caller's in-out argument.
    let handle = unsafe { get(keyval, "keyval")? };
    let mut state = state::lock(call)?;
    let slot = keyval_slot(&state, handle)?;
    // Attributes set with it keep their key until deleted, as MPI says;
    // their callbacks are the key's, copied at set time, so the slot may go.
    state.keyvals.remove(slot);
    // SAFETY: the caller's in-out argument.
    unsafe { put(keyval, abi::KEYVAL_INVALID, "keyval") }
}

mpi_fn! {
    /// `MPI_Comm_free_keyval`.
    fn MPI_Comm_free_keyval / PMPI_Comm_free_keyval(keyval: *mut c_int) {
        free_keyval("MPI_Comm_free_keyval", keyval)
    }
}

mpi_fn! {
    /// `MPI_Keyval_free` (MPI-1's name).
    fn MPI_Keyval_free / PMPI_Keyval_free(keyval: *mut c_int) {
        free_keyval("MPI_Keyval_free", keyval)
    }
}

/// Sets an attribute; a value it replaces is deleted (its callback run).
fn set_attr(call: &str, comm: c_int, keyval: c_int, value: *mut c_void) -> Result<()> {
    let replaced = {
        let mut state = state::lock(call)?;
        let slot = keyval_slot(&state, keyval).map_err(|e| e.on(comm))?;
        let key = *state.keyvals.get(slot).expect("checked");
        let comm_slot = state.comm_slot(comm)?;
        let attrs = &mut state.comms.get_mut(comm_slot).expect("checked").attrs;
        let old = attrs.iter().position(|a| a.0 == keyval).map(|i| attrs.remove(i));
        attrs.push((keyval, value as usize));
        old.map(|(_, v)| (key, v))
    };
    match replaced {
        Some((key, old)) => run_delete(comm, keyval, key, old),
        None => Ok(()),
    }
}

/// Runs a key's delete callback on a value, without the lock.
fn run_delete(comm: c_int, keyval: c_int, key: Keyval, value: usize) -> Result<()> {
    let Some(delete) = key.delete else { return Ok(()) };
    // SAFETY: the program's callback, with the arguments MPI defines.
    let code = unsafe { delete(comm, keyval, value as *mut c_void, key.extra_state as *mut c_void) };
    match code {
        abi::SUCCESS => Ok(()),
        code => Err(MpiError::new(
            class::OTHER,
            format!("the delete callback of attribute key {keyval:#x} returned {code}"),
        )
        .on(comm)),
    }
}

mpi_fn! {
    /// `MPI_Comm_set_attr`.
    fn MPI_Comm_set_attr / PMPI_Comm_set_attr(comm: c_int, keyval: c_int, value: *mut c_void) {
        set_attr("MPI_Comm_set_attr", comm, keyval, value)
    }
}

mpi_fn! {
    /// `MPI_Attr_put` (MPI-1's name).
    fn MPI_Attr_put / PMPI_Attr_put(comm: c_int, keyval: c_int, value: *mut c_void) {
        set_attr("MPI_Attr_put", comm, keyval, value)
    }
}

/// The value of a user attribute, if set.
pub(super) fn user_attr(state: &Locked, comm: c_int, keyval: c_int) -> Result<Option<usize>> {
    keyval_slot(state, keyval).map_err(|e| e.on(comm))?;
    Ok(state.comm(comm)?.attrs.iter().find(|a| a.0 == keyval).map(|a| a.1))
}

fn delete_attr(call: &str, comm: c_int, keyval: c_int) -> Result<()> {
    let (key, value) = {
        let mut state = state::lock(call)?;
        let slot = keyval_slot(&state, keyval).map_err(|e| e.on(comm))?;
        let key = *state.keyvals.get(slot).expect("checked");
        let comm_slot = state.comm_slot(comm)?;
        let attrs = &mut state.comms.get_mut(comm_slot).expect("checked").attrs;
        let Some(i) = attrs.iter().position(|a| a.0 == keyval) else {
            return Err(MpiError::new(
                class::KEYVAL,
                format!("attribute key {keyval:#x} is not set on this communicator"),
            )
            .on(comm));
        };
        (key, attrs.remove(i).1)
    };
    run_delete(comm, keyval, key, value)
}

mpi_fn! {
    /// `MPI_Comm_delete_attr`.
    fn MPI_Comm_delete_attr / PMPI_Comm_delete_attr(comm: c_int, keyval: c_int) {
        delete_attr("MPI_Comm_delete_attr", comm, keyval)
    }
}

mpi_fn! {
    /// `MPI_Attr_delete` (MPI-1's name).
    fn MPI_Attr_delete / PMPI_Attr_delete(comm: c_int, keyval: c_int) {
        delete_attr("MPI_Attr_delete", comm, keyval)
    }
}

/// Copies `old`'s attributes to `new` through their keys' copy callbacks
/// (`MPI_Comm_dup`), without the lock.
pub(super) fn copy_attrs(old: c_int, new: c_int) -> Result<()> {
    let attrs: Vec<(c_int, usize, Option<Keyval>)> = {
        let state = state::lock("MPI_Comm_dup")?;
        let entry = state.comm(old)?;
        entry
            .attrs
            .iter()
            .map(|&(k, v)| (k, v, abi::direct_index(KEYVAL_KIND, k).and_then(|s| state.keyvals.get(s).copied())))
            .collect()
    };
    let mut copied = Vec::new();
    for (keyval, value, key) in attrs {
        let Some(Keyval { copy: Some(copy), extra_state, .. }) = key else { continue };
        let mut out: *mut c_void = std::ptr::null_mut();
        let mut flag: c_int = 0;
        // SAFETY: the program's callback, with the arguments MPI defines.
        let code = unsafe {
            copy(
                old,
                keyval,
                extra_state as *mut c_void,
                value as *mut c_void,
                (&mut out as *mut *mut c_void).cast(),
                &mut flag,
            )
        };
        if code != abi::SUCCESS {
            return Err(MpiError::new(
                class::OTHER,
                format!("the copy callback of attribute key {keyval:#x} returned {code}"),
            )
            .on(old));
        }
        if flag != 0 {
            copied.push((keyval, out as usize));
        }
    }
    let mut state = state::lock("MPI_Comm_dup")?;
    let slot = state.comm_slot(new)?;
    state.comms.get_mut(slot).expect("checked").attrs = copied;
    Ok(())
}

/// Deletes every attribute of `comm` (`MPI_Comm_free`), without the lock.
pub(super) fn delete_all(comm: c_int) -> Result<()> {
    let attrs: Vec<(c_int, usize, Option<Keyval>)> = {
        let mut state = state::lock("MPI_Comm_free")?;
        let slot = state.comm_slot(comm)?;
        let attrs = std::mem::take(&mut state.comms.get_mut(slot).expect("checked").attrs);
        attrs
            .into_iter()
            .map(|(k, v)| (k, v, abi::direct_index(KEYVAL_KIND, k).and_then(|s| state.keyvals.get(s).copied())))
            .collect()
    };
    for (keyval, value, key) in attrs.into_iter().rev() {
        if let Some(key) = key {
            run_delete(comm, keyval, key, value)?;
        }
    }
    Ok(())
}
