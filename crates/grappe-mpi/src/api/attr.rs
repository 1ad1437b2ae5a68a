//! Attributes on communicators and datatypes: keys with copy and delete
//! callbacks (`MPI_Comm_create_keyval`, `MPI_Type_create_keyval`), values
//! set, got and deleted, copied by `MPI_Comm_dup` and `MPI_Type_dup` and
//! deleted by `MPI_Comm_free` and `MPI_Type_free`; attributes on windows
//! (`MPI_Win_create_keyval`), deleted by `MPI_Win_free`.
//!
//! Callbacks run without the library's lock held, so that they may call
//! MPI themselves. The callbacks of the three kinds of objects have the
//! same C signature (the object's handle is an `int`).

use std::ffi::{c_int, c_void};

use crate::abi::{self, class};
use crate::errors::{MpiError, Result};
use crate::mpi_fn;
use crate::state::{self, AttrValue, Keyval, Locked};

use super::{get, put};

/// `MPI_Comm_copy_attr_function`.
pub type CopyFunction = unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
/// `MPI_Comm_delete_attr_function`.
pub type DeleteFunction = unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_void) -> c_int;

/// MPICH's `MPII_Attr_copy_proxy`: how a language binding library has its
/// copy callbacks called (user function, handle, key, extra state,
/// attribute type, value, copy out, flag out).
pub type CopyProxy = unsafe extern "C" fn(
    CopyFunction,
    c_int,
    c_int,
    *mut c_void,
    c_int,
    *mut c_void,
    *mut *mut c_void,
    *mut c_int,
) -> c_int;
/// MPICH's `MPII_Attr_delete_proxy` (user function, handle, key, attribute
/// type, value, extra state).
pub type DeleteProxy = unsafe extern "C" fn(DeleteFunction, c_int, c_int, c_int, *mut c_void, *mut c_void) -> c_int;

/// The attribute type given to proxies: MPICH's `MPIR_ATTR_AINT`, an
/// address-sized integer (the Fortran library's proxies pass the value on
/// as such whatever the type says).
const PROXY_ATTR_TYPE: c_int = 1;

/// Keyval handles: direct handles of type 9.
const KEYVAL_KIND: u32 = 0x9;

/// What attributes hang on.
#[derive(Debug, Clone, Copy)]
pub(super) enum Object {
    Comm(c_int),
    Datatype(c_int),
    Win(c_int),
}

impl Object {
    fn handle(self) -> c_int {
        match self {
            Object::Comm(h) | Object::Datatype(h) | Object::Win(h) => h,
        }
    }

    /// The error as this object's error handler sees it (a datatype's
    /// errors go to the world's).
    fn blame(self, error: MpiError) -> MpiError {
        match self {
            Object::Comm(comm) => error.on(comm),
            Object::Datatype(_) => error,
            Object::Win(win) => error.on_win(win),
        }
    }

    fn noun(self) -> &'static str {
        match self {
            Object::Comm(_) => "communicator",
            Object::Datatype(_) => "datatype",
            Object::Win(_) => "window",
        }
    }

    /// The object's attributes, after checking that it exists.
    fn attrs_mut(self, state: &mut Locked) -> Result<&mut Vec<(c_int, AttrValue)>> {
        match self {
            Object::Comm(comm) => {
                let slot = state.comm_slot(comm)?;
                Ok(&mut state.comms.get_mut(slot).expect("checked").attrs)
            }
            Object::Datatype(datatype) => {
                crate::types::lookup(datatype)?;
                Ok(state.type_attrs.entry(datatype).or_default())
            }
            Object::Win(win) => {
                super::win::check(win)?;
                Ok(state.win_attrs.entry(win).or_default())
            }
        }
    }

    fn attrs(self, state: &Locked) -> Result<&[(c_int, AttrValue)]> {
        match self {
            Object::Comm(comm) => Ok(&state.comm(comm)?.attrs),
            Object::Datatype(datatype) => {
                crate::types::lookup(datatype)?;
                Ok(state.type_attrs.get(&datatype).map_or(&[], Vec::as_slice))
            }
            Object::Win(win) => {
                super::win::check(win)?;
                Ok(state.win_attrs.get(&win).map_or(&[], Vec::as_slice))
            }
        }
    }
}

/// The slot of a key: one the program has not freed, or a freed one that
/// attributes still use (a program that kept the handle's value may still
/// get or delete them with it, as MPICH lets it).
fn keyval_slot(state: &Locked, keyval: c_int) -> Result<usize> {
    abi::direct_index(KEYVAL_KIND, keyval)
        .filter(|&slot| state.keyvals.get(slot).is_some())
        .ok_or_else(|| MpiError::new(class::KEYVAL, format!("{keyval:#x} is not an attribute key (or was freed)")))
}

/// The key of an attribute that exists, freed by the program or not.
fn attached_key(state: &Locked, keyval: c_int) -> Option<Keyval> {
    abi::direct_index(KEYVAL_KIND, keyval).and_then(|slot| state.keyvals.get(slot).copied())
}

/// Counts `n` more attributes set with `keyval`.
fn attach(state: &mut Locked, keyval: c_int, n: usize) {
    if let Some(key) = abi::direct_index(KEYVAL_KIND, keyval).and_then(|slot| state.keyvals.get_mut(slot)) {
        key.attached += n;
    }
}

/// Counts one attribute set with `keyval` fewer; a freed key goes with its
/// last attribute.
fn detach(state: &mut Locked, keyval: c_int) {
    let Some(slot) = abi::direct_index(KEYVAL_KIND, keyval) else { return };
    let Some(key) = state.keyvals.get_mut(slot) else { return };
    key.attached = key.attached.saturating_sub(1);
    if key.freed && key.attached == 0 {
        state.keyvals.remove(slot);
    }
}

fn create_keyval(
    call: &str,
    copy: Option<CopyFunction>,
    delete: Option<DeleteFunction>,
    keyval: *mut c_int,
    extra: *mut c_void,
) -> Result<()> {
    let mut state = state::lock(call)?;
    let slot = state.keyvals.insert(Keyval {
        copy,
        delete,
        extra_state: extra as usize,
        proxies: (None, None),
        attached: 0,
        freed: false,
    });
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
    // Attributes set with it keep their key until deleted, as MPI says: the
    // key stays (unnamed) until its last attribute goes.
    let key = state.keyvals.get_mut(slot).expect("checked");
    if key.freed {
        return Err(MpiError::new(class::KEYVAL, format!("attribute key {handle:#x} was freed already")));
    }
    key.freed = true;
    if key.attached == 0 {
        state.keyvals.remove(slot);
    }
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

/// Whether `keyval` is a key the program made (not a predefined one).
pub(super) fn is_user_keyval(keyval: c_int) -> bool {
    abi::direct_index(KEYVAL_KIND, keyval).is_some()
}

/// Has a key's callbacks called through a binding library's proxies.
pub(super) fn set_proxies(keyval: c_int, copy: Option<CopyProxy>, delete: Option<DeleteProxy>) -> Result<()> {
    let mut state = state::lock("MPII_Keyval_set_proxy")?;
    let slot = keyval_slot(&state, keyval)?;
    state.keyvals.get_mut(slot).expect("checked").proxies = (copy, delete);
    Ok(())
}

/// Sets an attribute; a value it replaces is deleted (its callback run).
pub(super) fn set_attr(call: &str, object: Object, keyval: c_int, value: AttrValue) -> Result<()> {
    let replaced = {
        let mut state = state::lock(call)?;
        let slot = keyval_slot(&state, keyval).map_err(|e| object.blame(e))?;
        let key = *state.keyvals.get(slot).expect("checked");
        let attrs = object.attrs_mut(&mut state)?;
        let old = attrs.iter().position(|a| a.0 == keyval).map(|i| attrs.remove(i));
        attrs.push((keyval, value));
        if old.is_none() {
            attach(&mut state, keyval, 1);
        }
        old.map(|(_, v)| (key, v))
    };
    match replaced {
        Some((key, old)) => run_delete(object, keyval, key, &old),
        None => Ok(()),
    }
}

/// Runs a key's delete callback on a value, without the lock: a Fortran
/// callback (through its proxy) gets the value as Fortran sees it, a C one
/// as C does.
fn run_delete(object: Object, keyval: c_int, key: Keyval, value: &AttrValue) -> Result<()> {
    let Some(delete) = key.delete else { return Ok(()) };
    let (handle, extra) = (object.handle(), key.extra_state as *mut c_void);
    // SAFETY: the program's callback, with the arguments MPI defines, or
    // its binding library's proxy for it; an integer's cell lives across
    // the call.
    let code = unsafe {
        match key.proxies.1 {
            Some(proxy) => proxy(delete, handle, keyval, PROXY_ATTR_TYPE, value.for_fortran() as *mut c_void, extra),
            None => delete(handle, keyval, value.for_c() as *mut c_void, extra),
        }
    };
    match code {
        abi::SUCCESS => Ok(()),
        code => Err(object.blame(MpiError::new(
            class::OTHER,
            format!("the delete callback of attribute key {keyval:#x} returned {code}"),
        ))),
    }
}

mpi_fn! {
    /// `MPI_Comm_set_attr`.
    fn MPI_Comm_set_attr / PMPI_Comm_set_attr(comm: c_int, keyval: c_int, value: *mut c_void) {
        set_attr("MPI_Comm_set_attr", Object::Comm(comm), keyval, AttrValue::Pointer(value as usize))
    }
}

mpi_fn! {
    /// `MPI_Attr_put` (MPI-1's name).
    fn MPI_Attr_put / PMPI_Attr_put(comm: c_int, keyval: c_int, value: *mut c_void) {
        set_attr("MPI_Attr_put", Object::Comm(comm), keyval, AttrValue::Pointer(value as usize))
    }
}

/// The value of a user attribute as C gets it, if set.
pub(super) fn user_attr(state: &Locked, object: Object, keyval: c_int) -> Result<Option<usize>> {
    Ok(find_attr(state, object, keyval)?.map(AttrValue::for_c))
}

/// The value of a user attribute as Fortran gets it, if set.
pub(super) fn user_attr_for_fortran(state: &Locked, object: Object, keyval: c_int) -> Result<Option<isize>> {
    Ok(find_attr(state, object, keyval)?.map(AttrValue::for_fortran))
}

fn find_attr(state: &Locked, object: Object, keyval: c_int) -> Result<Option<&AttrValue>> {
    keyval_slot(state, keyval).map_err(|e| object.blame(e))?;
    Ok(object.attrs(state)?.iter().find(|a| a.0 == keyval).map(|a| &a.1))
}

fn delete_attr(call: &str, object: Object, keyval: c_int) -> Result<()> {
    let (key, value) = {
        let mut state = state::lock(call)?;
        let slot = keyval_slot(&state, keyval).map_err(|e| object.blame(e))?;
        let key = *state.keyvals.get(slot).expect("checked");
        let attrs = object.attrs_mut(&mut state)?;
        let Some(i) = attrs.iter().position(|a| a.0 == keyval) else {
            let noun = object.noun();
            let error = MpiError::new(class::KEYVAL, format!("attribute key {keyval:#x} is not set on this {noun}"));
            return Err(object.blame(error));
        };
        let value = attrs.remove(i).1;
        detach(&mut state, keyval);
        (key, value)
    };
    let deleted = run_delete(object, keyval, key, &value);
    if deleted.is_err() {
        // The callback refused: the attribute stays (as under MPICH; the
        // call is erroneous, MPI says).
        let mut state = state::lock(call)?;
        if let Ok(attrs) = object.attrs_mut(&mut state) {
            attrs.push((keyval, value));
            attach(&mut state, keyval, 1);
        }
    }
    deleted
}

mpi_fn! {
    /// `MPI_Comm_delete_attr`.
    fn MPI_Comm_delete_attr / PMPI_Comm_delete_attr(comm: c_int, keyval: c_int) {
        delete_attr("MPI_Comm_delete_attr", Object::Comm(comm), keyval)
    }
}

mpi_fn! {
    /// `MPI_Attr_delete` (MPI-1's name).
    fn MPI_Attr_delete / PMPI_Attr_delete(comm: c_int, keyval: c_int) {
        delete_attr("MPI_Attr_delete", Object::Comm(comm), keyval)
    }
}

/// Copies `old`'s attributes to `new` (an object of the same kind)
/// through their keys' copy callbacks (`MPI_Comm_dup`, `MPI_Type_dup`),
/// without the lock.
pub(super) fn copy_attrs(old: Object, new: Object) -> Result<()> {
    // Each attribute as both languages see it: the cell of an integer
    // stays with the old object, which lives across the copies.
    let attrs: Vec<(c_int, usize, isize, bool, Option<Keyval>)> = {
        let state = state::lock("a duplication")?;
        let attrs = old.attrs(&state)?.iter();
        attrs.map(|(k, v)| (*k, v.for_c(), v.for_fortran(), v.is_integer(), attached_key(&state, *k))).collect()
    };
    let mut copied = Vec::new();
    let mut copied_keys = Vec::new();
    for (keyval, for_c, for_fortran, integer, key) in attrs {
        let Some(whole_key @ Keyval { copy: Some(copy), extra_state, proxies, .. }) = key else { continue };
        let mut out: *mut c_void = std::ptr::null_mut();
        let mut flag: c_int = 0;
        let (handle, extra) = (old.handle(), extra_state as *mut c_void);
        // SAFETY: the program's callback, with the arguments MPI defines, or
        // its binding library's proxy for it (a Fortran callback gets the
        // value as Fortran sees it).
        let code = unsafe {
            match proxies.0 {
                Some(proxy) => {
                    proxy(copy, handle, keyval, extra, PROXY_ATTR_TYPE, for_fortran as *mut c_void, &mut out, &mut flag)
                }
                None => {
                    copy(handle, keyval, extra, for_c as *mut c_void, (&mut out as *mut *mut c_void).cast(), &mut flag)
                }
            }
        };
        if code != abi::SUCCESS {
            unwind_copies(new, &copied, &copied_keys);
            return Err(old.blame(MpiError::new(
                class::OTHER,
                format!("the copy callback of attribute key {keyval:#x} returned {code}"),
            )));
        }
        if flag != 0 {
            // The copy is of the kind of the original, as under MPICH.
            copied.push((keyval, AttrValue::new(integer, out as usize)));
            copied_keys.push(whole_key);
        }
    }
    let mut state = state::lock("a duplication")?;
    for &(keyval, _) in &copied {
        attach(&mut state, keyval, 1);
    }
    *new.attrs_mut(&mut state)? = copied;
    Ok(())
}

/// Deletes every attribute of `object` (`MPI_Comm_free`, `MPI_Type_free`),
/// without the lock.
/// Deletes, latest first, the attribute values copied for `new` before a
/// copy callback failed: the duplicate is not made, and what the earlier
/// callbacks made for it (a reference counted, memory allocated) is given
/// back through the keys' delete callbacks, as freeing the duplicate would.
/// The copy's failure is what the call reports: a delete callback failing
/// too is not.
fn unwind_copies(new: Object, copied: &[(c_int, AttrValue)], keys: &[Keyval]) {
    for ((keyval, value), key) in copied.iter().zip(keys).rev() {
        let _ = run_delete(new, *keyval, *key, value);
    }
}

pub(super) fn delete_all(object: Object) -> Result<()> {
    let attrs: Vec<(c_int, AttrValue, Option<Keyval>)> = {
        let mut state = state::lock("a free")?;
        let attrs = std::mem::take(object.attrs_mut(&mut state)?);
        match object {
            Object::Datatype(handle) => drop(state.type_attrs.remove(&handle)),
            Object::Win(handle) => drop(state.win_attrs.remove(&handle)),
            Object::Comm(_) => {}
        }
        let attrs: Vec<_> = attrs.into_iter().map(|(k, v)| (k, v, attached_key(&state, k))).collect();
        for &(keyval, _, _) in &attrs {
            detach(&mut state, keyval);
        }
        attrs
    };
    for (keyval, value, key) in attrs.into_iter().rev() {
        if let Some(key) = key {
            run_delete(object, keyval, key, &value)?;
        }
    }
    Ok(())
}

mpi_fn! {
    /// `MPI_Type_create_keyval`.
    fn MPI_Type_create_keyval / PMPI_Type_create_keyval(
        copy: Option<CopyFunction>,
        delete: Option<DeleteFunction>,
        keyval: *mut c_int,
        extra_state: *mut c_void,
    ) {
        create_keyval("MPI_Type_create_keyval", copy, delete, keyval, extra_state)
    }
}

mpi_fn! {
    /// `MPI_Type_free_keyval`.
    fn MPI_Type_free_keyval / PMPI_Type_free_keyval(keyval: *mut c_int) {
        free_keyval("MPI_Type_free_keyval", keyval)
    }
}

mpi_fn! {
    /// `MPI_Win_create_keyval`: a key for window attributes.
    fn MPI_Win_create_keyval / PMPI_Win_create_keyval(
        copy: Option<CopyFunction>,
        delete: Option<DeleteFunction>,
        keyval: *mut c_int,
        extra_state: *mut c_void,
    ) {
        create_keyval("MPI_Win_create_keyval", copy, delete, keyval, extra_state)
    }
}

mpi_fn! {
    /// `MPI_Win_free_keyval`.
    fn MPI_Win_free_keyval / PMPI_Win_free_keyval(keyval: *mut c_int) {
        free_keyval("MPI_Win_free_keyval", keyval)
    }
}

mpi_fn! {
    /// `MPI_Type_set_attr`.
    fn MPI_Type_set_attr / PMPI_Type_set_attr(datatype: c_int, keyval: c_int, value: *mut c_void) {
        set_attr("MPI_Type_set_attr", Object::Datatype(datatype), keyval, AttrValue::Pointer(value as usize))
    }
}

mpi_fn! {
    /// `MPI_Type_get_attr`.
    fn MPI_Type_get_attr / PMPI_Type_get_attr(datatype: c_int, keyval: c_int, value: *mut c_void, flag: *mut c_int) {
        let state = state::lock("MPI_Type_get_attr")?;
        let found = user_attr(&state, Object::Datatype(datatype), keyval)?;
        // SAFETY: the caller's output arguments; `value` is where MPI
        // stores the attribute (a pointer).
        unsafe {
            if let Some(found) = found {
                put(value.cast::<usize>(), found, "attribute_val")?;
            }
            put(flag, found.is_some() as c_int, "flag")
        }
    }
}

mpi_fn! {
    /// `MPI_Type_delete_attr`.
    fn MPI_Type_delete_attr / PMPI_Type_delete_attr(datatype: c_int, keyval: c_int) {
        delete_attr("MPI_Type_delete_attr", Object::Datatype(datatype), keyval)
    }
}

mpi_fn! {
    /// `MPI_Win_set_attr`.
    fn MPI_Win_set_attr / PMPI_Win_set_attr(win: c_int, keyval: c_int, value: *mut c_void) {
        set_attr("MPI_Win_set_attr", Object::Win(win), keyval, AttrValue::Pointer(value as usize))
    }
}

mpi_fn! {
    /// `MPI_Win_delete_attr`.
    fn MPI_Win_delete_attr / PMPI_Win_delete_attr(win: c_int, keyval: c_int) {
        delete_attr("MPI_Win_delete_attr", Object::Win(win), keyval)
    }
}
