//! The MPI functions, by group, and what they share: reading C buffers,
//! ranks and statuses.

mod coll;
mod comm;
mod env;
mod errh;
mod fortran;
mod group;
mod info;
mod p2p;
mod request;

use std::ffi::{c_int, c_void};

use grappe_comm::{Communicator, Source, Tag};

use crate::abi::{self, class};
use crate::datatype::Datatype;
use crate::errors::{MpiError, Result};

/// The bytes of `count` elements of `datatype` at `buf`, to send.
///
/// # Safety
/// `buf` must point to `count` elements of `datatype`, readable while the
/// slice lives (MPI's rule for a send buffer).
unsafe fn send_bytes<'a>(buf: *const c_void, count: c_int, datatype: &Datatype, what: &str) -> Result<&'a [u8]> {
    let len = datatype.span(count, what)?;
    if len == 0 {
        return Ok(&[]);
    }
    if buf.is_null() {
        return Err(MpiError::new(class::BUFFER, format!("{what}: a NULL buffer for {count} elements")));
    }
    // SAFETY: non-null, `len` bytes readable as the caller promised.
    Ok(unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), len) })
}

/// The bytes of `count` elements of `datatype` at `buf`, to receive into.
///
/// # Safety
/// `buf` must point to `count` elements of `datatype`, writable and not
/// otherwise accessed while the slice lives (MPI's rule for a receive buffer).
unsafe fn recv_bytes<'a>(buf: *mut c_void, count: c_int, datatype: &Datatype, what: &str) -> Result<&'a mut [u8]> {
    let len = datatype.span(count, what)?;
    if len == 0 {
        return Ok(&mut []);
    }
    if buf.is_null() {
        return Err(MpiError::new(class::BUFFER, format!("{what}: a NULL buffer for {count} elements")));
    }
    // SAFETY: non-null, `len` bytes writable as the caller promised.
    Ok(unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), len) })
}

/// A destination rank: `None` for `MPI_PROC_NULL`.
fn dest_rank(dest: c_int, comm: &Communicator) -> Result<Option<usize>> {
    match dest {
        abi::PROC_NULL => Ok(None),
        d if d < 0 || d as usize >= comm.size() => Err(MpiError::new(
            class::RANK,
            format!("rank {dest} is not a rank of the communicator (size {})", comm.size()),
        )),
        d => Ok(Some(d as usize)),
    }
}

/// A source selector: `None` for `MPI_PROC_NULL`.
fn source_rank(source: c_int, comm: &Communicator) -> Result<Option<Source>> {
    match source {
        abi::ANY_SOURCE => Ok(Some(Source::Any)),
        other => Ok(dest_rank(other, comm)?.map(Source::Rank)),
    }
}

/// A receive's tag selector.
fn recv_tag(tag: c_int) -> Result<Tag> {
    match tag {
        abi::ANY_TAG => Ok(Tag::Any),
        t if t < 0 => Err(MpiError::new(class::TAG, format!("tag {tag} is negative and not MPI_ANY_TAG"))),
        t => Ok(Tag::Is(t)),
    }
}

/// A send's tag.
fn send_tag(tag: c_int) -> Result<c_int> {
    match tag {
        t if t < 0 => Err(MpiError::new(class::TAG, format!("tag {tag} is negative"))),
        t => Ok(t),
    }
}

/// The C status of a message received.
fn status_of(status: grappe_comm::Status) -> abi::Status {
    let mut c = abi::Status { source: status.source as c_int, tag: status.tag, ..abi::Status::default() };
    c.set_bytes(status.bytes as u64);
    c
}

/// The status of a receive from `MPI_PROC_NULL`.
fn proc_null_status() -> abi::Status {
    abi::Status { source: abi::PROC_NULL, tag: abi::ANY_TAG, ..abi::Status::default() }
}

/// The status of a completed send, or of a request with nothing to say.
fn empty_status() -> abi::Status {
    abi::Status { source: abi::ANY_SOURCE, tag: abi::ANY_TAG, ..abi::Status::default() }
}

/// Writes `status` to `out` unless it is `MPI_STATUS_IGNORE` (or NULL).
/// The error field is left as it was, as MPICH does: only functions that
/// complete several requests set it.
///
/// # Safety
/// `out` is `MPI_STATUS_IGNORE`, NULL, or points to a writable `MPI_Status`.
unsafe fn write_status(out: *mut abi::Status, status: abi::Status) {
    if out.is_null() || out as usize == abi::STATUS_IGNORE {
        return;
    }
    // SAFETY: a writable status, as the caller promised.
    let out = unsafe { &mut *out };
    let error = out.error;
    *out = abi::Status { error, ..status };
}

/// Writes `value` to an output argument, refusing NULL.
///
/// # Safety
/// `out` is NULL or points to a writable `T`.
unsafe fn put<T>(out: *mut T, value: T, what: &str) -> Result<()> {
    if out.is_null() {
        return Err(MpiError::new(class::ARG, format!("{what} is NULL")));
    }
    // SAFETY: non-null and writable, as the caller promised.
    unsafe { out.write(value) };
    Ok(())
}

/// Reads an input argument passed by pointer, refusing NULL.
///
/// # Safety
/// `arg` is NULL or points to a readable `T`.
unsafe fn get<T: Copy>(arg: *const T, what: &str) -> Result<T> {
    if arg.is_null() {
        return Err(MpiError::new(class::ARG, format!("{what} is NULL")));
    }
    // SAFETY: non-null and readable, as the caller promised.
    Ok(unsafe { arg.read() })
}
