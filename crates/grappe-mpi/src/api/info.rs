//! Info objects: keys and values a program passes as hints. grappe reads
//! none of them yet; they keep what is set, as MPI requires.
//!
//! MPI lets a program use info objects at any time, before `MPI_Init` and
//! after `MPI_Finalize` too (to pass hints to `MPI_Session_init`, or to
//! read `MPI_Info_create_env`), so they live beside the library's state,
//! in a table of their own.

use std::ffi::{c_char, c_int};

use parking_lot::Mutex;

use crate::abi::{self, class, kind};
use crate::errors::{MpiError, Result};
use crate::mpi_fn;
use crate::state::Table;

use super::env::{copy_string, read_string};
use super::{get, put};

/// An info object: its keys and values, in the order they were set.
type Entries = Vec<(String, String)>;

static INFOS: Mutex<Table<Entries>> = Mutex::new(Table::new());

/// The slot of info `handle`; `None` for `MPI_INFO_ENV`, which is empty.
fn slot_of(infos: &Table<Entries>, handle: c_int) -> Result<Option<usize>> {
    if handle == abi::INFO_ENV {
        return Ok(None);
    }
    match abi::direct_index(kind::INFO, handle) {
        Some(slot) if infos.get(slot).is_some() => Ok(Some(slot)),
        _ if handle == abi::INFO_NULL => Err(MpiError::new(class::ARG, "MPI_INFO_NULL is not an info object")),
        _ => Err(MpiError::new(class::ARG, format!("{handle:#x} is not an info handle (or was freed)"))),
    }
}

/// The keys and values of info `handle`.
pub(super) fn entries(handle: c_int) -> Result<Entries> {
    let infos = INFOS.lock();
    Ok(slot_of(&infos, handle)?.and_then(|slot| infos.get(slot)).cloned().unwrap_or_default())
}

/// A key, checked against `MPI_MAX_INFO_KEY`.
///
/// # Safety
/// `key` is NULL or NUL-terminated.
unsafe fn key_of(key: *const c_char) -> Result<String> {
    // SAFETY: as the caller promised.
    let key = unsafe { read_string(key, "key")? };
    if key.is_empty() || key.len() > abi::MAX_INFO_KEY {
        return Err(MpiError::new(class::ARG, format!("info key {key:?} is empty or longer than MPI_MAX_INFO_KEY")));
    }
    Ok(key)
}

/// The value of `key` in info `handle` (`MPI_INFO_NULL` holds none).
pub(super) fn value(handle: c_int, key: &str) -> Result<Option<String>> {
    if handle == abi::INFO_NULL {
        return Ok(None);
    }
    Ok(entries(handle)?.into_iter().find(|(k, _)| k == key).map(|(_, v)| v))
}

/// Runs `change` on the entries of info `handle`, which the program may
/// change (`MPI_INFO_ENV` it may not).
fn change<T>(handle: c_int, change: impl FnOnce(&mut Entries) -> Result<T>) -> Result<T> {
    let mut infos = INFOS.lock();
    let Some(slot) = slot_of(&infos, handle)? else {
        return Err(MpiError::new(class::ARG, "MPI_INFO_ENV cannot be changed"));
    };
    change(infos.get_mut(slot).expect("checked by slot_of"))
}

/// Sets `key` to `value` in info `handle`.
pub(super) fn set(handle: c_int, key: &str, value: &str) -> Result<()> {
    change(handle, |entries| {
        match entries.iter_mut().find(|(k, _)| k == key) {
            Some(entry) => entry.1 = value.to_owned(),
            None => entries.push((key.to_owned(), value.to_owned())),
        }
        Ok(())
    })
}

/// A new info object holding `entries`, its handle written to `out`.
pub(super) fn add(entries: Entries, out: *mut c_int) -> Result<()> {
    let handle = abi::direct_handle(kind::INFO, INFOS.lock().insert(entries));
    // SAFETY: the caller's output argument.
    unsafe { put(out, handle, "info") }
}

mpi_fn! {
    /// `MPI_Info_create`.
    fn MPI_Info_create / PMPI_Info_create(info: *mut c_int) {
        add(Vec::new(), info)
    }
}

mpi_fn! {
    /// `MPI_Info_dup`.
    fn MPI_Info_dup / PMPI_Info_dup(info: c_int, newinfo: *mut c_int) {
        add(entries(info)?, newinfo)
    }
}

mpi_fn! {
    /// `MPI_Info_set`.
    fn MPI_Info_set / PMPI_Info_set(info: c_int, key: *const c_char, value: *const c_char) {
        // SAFETY: NUL-terminated strings, as MPI requires.
        let (key, value) = unsafe { (key_of(key)?, read_string(value, "value")?) };
        set(info, &key, &value)
    }
}

mpi_fn! {
    /// `MPI_Info_delete`.
    fn MPI_Info_delete / PMPI_Info_delete(info: c_int, key: *const c_char) {
        // SAFETY: a NUL-terminated string, as MPI requires.
        let key = unsafe { key_of(key)? };
        change(info, |entries| {
            let before = entries.len();
            entries.retain(|(k, _)| *k != key);
            if entries.len() == before {
                return Err(MpiError::new(class::INFO_NOKEY, format!("info key {key:?} is not set")));
            }
            Ok(())
        })
    }
}

mpi_fn! {
    /// `MPI_Info_get`: at most `valuelen` characters of the value.
    fn MPI_Info_get / PMPI_Info_get(info: c_int, key: *const c_char, valuelen: c_int, value: *mut c_char, flag: *mut c_int) {
        // SAFETY: a NUL-terminated string, as MPI requires.
        let key = unsafe { key_of(key)? };
        let found = entries(info)?.into_iter().find(|(k, _)| *k == key);
        // SAFETY: the caller's output arguments; `value` holds `valuelen + 1` characters.
        unsafe {
            put(flag, found.is_some() as c_int, "flag")?;
            if let Some((_, text)) = found {
                copy_string(&text, value, valuelen.max(0) as usize + 1, "value")?;
            }
        }
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Info_get_valuelen`.
    fn MPI_Info_get_valuelen / PMPI_Info_get_valuelen(info: c_int, key: *const c_char, valuelen: *mut c_int, flag: *mut c_int) {
        // SAFETY: a NUL-terminated string, as MPI requires.
        let key = unsafe { key_of(key)? };
        let found = entries(info)?.into_iter().find(|(k, _)| *k == key);
        // SAFETY: the caller's output arguments.
        unsafe {
            put(flag, found.is_some() as c_int, "flag")?;
            if let Some((_, text)) = found {
                put(valuelen, text.len() as c_int, "valuelen")?;
            }
        }
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Info_get_nkeys`.
    fn MPI_Info_get_nkeys / PMPI_Info_get_nkeys(info: c_int, nkeys: *mut c_int) {
        let n = entries(info)?.len();
        // SAFETY: the caller's output argument.
        unsafe { put(nkeys, n as c_int, "nkeys") }
    }
}

mpi_fn! {
    /// `MPI_Info_get_nthkey`.
    fn MPI_Info_get_nthkey / PMPI_Info_get_nthkey(info: c_int, n: c_int, key: *mut c_char) {
        let all = entries(info)?;
        let (k, _) = usize::try_from(n).ok().and_then(|i| all.get(i)).ok_or_else(|| {
            MpiError::new(class::ARG, format!("key number {n} of an info object with {} keys", all.len()))
        })?;
        // SAFETY: `key` holds MPI_MAX_INFO_KEY + 1 characters, as MPI requires.
        unsafe { copy_string(k, key, abi::MAX_INFO_KEY + 1, "key") }.map(|_| ())
    }
}

mpi_fn! {
    /// `MPI_Info_free`: the handle becomes `MPI_INFO_NULL`.
    fn MPI_Info_free / PMPI_Info_free(info: *mut c_int) {
        // SAFETY: the caller's in-out argument.
        let handle = unsafe { get(info, "info")? };
        let mut infos = INFOS.lock();
        if let Some(slot) = slot_of(&infos, handle)? {
            infos.remove(slot);
        }
        drop(infos);
        // SAFETY: the caller's in-out argument.
        unsafe { put(info, abi::INFO_NULL, "info") }
    }
}

mpi_fn! {
    /// `MPI_Comm_dup_with_info`: as `MPI_Comm_dup`, attributes and
    /// topology included (grappe takes no hints yet).
    fn MPI_Comm_dup_with_info / PMPI_Comm_dup_with_info(comm: c_int, _info: c_int, newcomm: *mut c_int) {
        // SAFETY: the caller's output argument: MPI_COMM_NULL if the dup fails.
        unsafe { put(newcomm, crate::abi::COMM_NULL, "newcomm")? };
        let handle = crate::api::comm::duplicate("MPI_Comm_dup_with_info", comm)?;
        // SAFETY: the caller's output argument.
        unsafe { put(newcomm, handle, "newcomm") }
    }
}

mpi_fn! {
    /// `MPI_Info_get_string` (MPI 4): the value, cut to `*buflen` bytes with
    /// its NUL; `*buflen` becomes the value's length plus one.
    fn MPI_Info_get_string / PMPI_Info_get_string(info: c_int, key: *const c_char, buflen: *mut c_int, value: *mut c_char, flag: *mut c_int) {
        // SAFETY: a NUL-terminated string, as MPI requires.
        let key = unsafe { key_of(key)? };
        // SAFETY: the caller's in-out argument.
        let room = unsafe { get(buflen, "buflen")? };
        let found = entries(info)?.into_iter().find(|(k, _)| *k == key);
        // SAFETY: the caller's output arguments; `value` holds `*buflen` bytes.
        unsafe {
            put(flag, found.is_some() as c_int, "flag")?;
            if let Some((_, text)) = found {
                if room > 0 {
                    copy_string(&text, value, room as usize, "value")?;
                }
                put(buflen, text.len() as c_int + 1, "buflen")?;
            }
        }
        Ok(())
    }
}
