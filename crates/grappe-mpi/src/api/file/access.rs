//! Data access: reads and writes at explicit offsets, at the individual
//! file pointer and at the shared one, blocking, non-blocking and split
//! collective, with any memory datatype (packed and unpacked as sends and
//! receives do). The status counts the bytes moved, so `MPI_Get_count`
//! gives the elements.
//!
//! Collective reads (`_all`) are each rank's own read. Collective writes
//! whose ranks' data interleave are gathered into long runs first
//! ([`super::aggregate`]); others are each rank's own too. Non-blocking ones run to their end at the
//! call and hand out a complete request; split collectives run at the
//! begin call and give their status at the end call.

use std::ffi::{c_int, c_void};

use crate::abi::{self, class};
use crate::api::external32::{from_external32, to_external32};
use crate::errors::{MpiError, Result};
use crate::io::posix::{self, AccessError, RangeLock, mode};
use crate::io::view::Segment;
use crate::io::{OpenFile, View};
use crate::state::{self, RequestEntry, RequestSlot};
use crate::types::{self, Type};
use crate::{counted_fn, mpi_fn};

use super::super::{Count, CountArg, buffer_len, count_of, empty_status, incoming, outgoing, put, write_status};
use super::view::{explicit_offset, not_sequential};
use super::with_file;

/// Which way the data go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Direction {
    Read,
    Write,
}

/// Where an access starts.
#[derive(Debug, Clone, Copy)]
pub(super) enum Pointer {
    /// At this offset (etypes) of the view.
    At(i64),
    /// At the individual file pointer, which moves past the data.
    Individual,
    /// At the shared file pointer, which moves past the data.
    Shared,
    /// At the shared file pointer, in rank order (collective).
    Ordered,
}

/// The program's side of an access.
#[derive(Debug, Clone, Copy)]
pub(super) struct Memory {
    pub buf: *mut c_void,
    pub count: Count,
    pub datatype: c_int,
}

/// Whether every rank of the file's communicator makes the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Call {
    Independent,
    Collective,
}

/// An access checked against the file: the memory datatype and the
/// bytes (and etypes) it moves.
pub(super) struct Checked {
    datatype: Type,
    pub bytes: u64,
    pub etypes: u64,
}

impl Checked {
    pub fn datatype(&self) -> &Type {
        &self.datatype
    }
}

/// Checks that the file allows the access and that the data are whole etypes.
pub(super) fn check(file: &OpenFile, view: &View, direction: Direction, memory: Memory) -> Result<Checked> {
    match direction {
        Direction::Read if file.amode & mode::WRONLY != 0 => {
            return Err(MpiError::new(class::ACCESS, format!("{} was opened MPI_MODE_WRONLY", file.path.display())));
        }
        Direction::Write if file.amode & mode::RDONLY != 0 => {
            return Err(MpiError::new(class::READ_ONLY, format!("{} was opened MPI_MODE_RDONLY", file.path.display())));
        }
        _ => {}
    }
    let datatype = types::committed(memory.datatype)?;
    if view.is_external32() {
        super::view::external32_layout(&datatype, "the memory datatype of an access to an external32 view")?;
    }
    let bytes = buffer_len(&datatype, count_of(memory.count, "data access")?, "data access")? as u64;
    let esize = view.etype_size();
    if bytes % esize != 0 {
        return Err(MpiError::new(
            class::IO,
            format!(
                "{} elements of {} bytes are not a whole number of the view's etypes of {esize} bytes",
                memory.count,
                datatype.size()
            ),
        ));
    }
    Ok(Checked { datatype, bytes, etypes: bytes / esize })
}

/// The error of a failed read or write.
pub(super) fn access_error(file: &OpenFile, direction: Direction, failed: AccessError) -> MpiError {
    let verb = if direction == Direction::Read { "read" } else { "write" };
    MpiError::new(
        posix::class_of_errno(&failed.error),
        format!(
            "cannot {verb} {} bytes at byte {} of {}: {}",
            failed.len,
            failed.offset,
            file.path.display(),
            failed.error
        ),
    )
}

/// Moves the data of `memory` to or from positions `start..` (etypes) of
/// `view`: the bytes moved (a read stops where the file ends).
pub(super) fn transfer(
    file: &OpenFile,
    view: &View,
    direction: Direction,
    start: u64,
    memory: Memory,
    checked: &Checked,
) -> Result<u64> {
    if checked.bytes == 0 {
        return Ok(0);
    }
    let from = start * view.etype_size();
    let segments = || view.tiling.segments(from, checked.bytes);
    let atomic = file.state.lock().atomic;
    let _in_process = atomic.then(|| file.atomic_access.lock());
    let _range = match atomic {
        true => {
            let (first, end) = span(segments());
            let lock = RangeLock::take(&file.data, first, end - first, direction == Direction::Write);
            Some(lock.map_err(|e| posix::os_error("lock a byte range of", &file.path, &e))?)
        }
        false => None,
    };
    match direction {
        Direction::Write => {
            // SAFETY: the program's buffer holds `count` elements, as MPI requires.
            let data = unsafe { outgoing(memory.buf, memory.count, &checked.datatype, "data access")? };
            let data = match view.is_external32() {
                true => std::borrow::Cow::Owned(to_external32(&checked.datatype, &data)?),
                false => data,
            };
            posix::write_segments(&file.data, segments(), &data).map_err(|e| access_error(file, direction, e))?;
            Ok(checked.bytes)
        }
        Direction::Read => {
            // SAFETY: the program's buffer holds `count` elements, writable, as MPI requires.
            let mut into = unsafe { incoming(memory.buf, memory.count, &checked.datatype, "data access")? };
            let got = posix::read_segments(&file.data, segments(), into.bytes())
                .map_err(|e| access_error(file, direction, e))?;
            if view.is_external32() {
                from_external32(&checked.datatype, &mut into.bytes()[..got])?;
            }
            into.finish(got);
            Ok(got as u64)
        }
    }
}

/// The file bytes an access's ranges span, from the lowest to the end of
/// the highest: ranges go forward, but in a view whose filetype overlaps
/// itself (a file only read) they may go back.
fn span(segments: impl Iterator<Item = Segment>) -> (u64, u64) {
    segments.fold((u64::MAX, 0), |(first, end), s| (first.min(s.offset), end.max(s.end())))
}

/// The status of an access that moved `bytes`.
pub(super) fn status_of(bytes: u64) -> abi::Status {
    let mut status = empty_status();
    status.set_bytes(bytes);
    status
}

/// Runs an access on `file`: its status.
pub(super) fn run(
    file: &OpenFile,
    call: Call,
    direction: Direction,
    pointer: Pointer,
    memory: Memory,
) -> Result<abi::Status> {
    // Gathered writes move native bytes: an external32 view's are each rank's own.
    let gathered = call == Call::Collective
        && direction == Direction::Write
        && !file.state.lock().atomic
        && !file.view().is_external32();
    let moved = match pointer {
        Pointer::At(_) | Pointer::Individual if gathered => collective_write(file, pointer, memory)?,
        Pointer::At(offset) => {
            not_sequential(file)?;
            let view = file.view();
            let checked = check(file, &view, direction, memory)?;
            transfer(file, &view, direction, explicit_offset(offset)?, memory, &checked)?
        }
        Pointer::Individual => at_individual_pointer(file, direction, memory)?,
        Pointer::Shared => super::shared::at_shared_pointer(file, direction, memory)?,
        Pointer::Ordered => super::shared::ordered(file, direction, memory)?,
    };
    Ok(status_of(moved))
}

/// A collective write at an offset or at the individual pointer, whose
/// data the ranks may gather before writing (see [`super::aggregate`]).
fn collective_write(file: &OpenFile, pointer: Pointer, memory: Memory) -> Result<u64> {
    let view = file.view();
    let mut start = 0;
    let local = (|| {
        not_sequential(file)?;
        start = match pointer {
            Pointer::At(offset) => explicit_offset(offset)?,
            _ => file.state.lock().pointer,
        };
        let checked = check(file, &view, Direction::Write, memory)?;
        let segments = view.tiling.segments(start * view.etype_size(), checked.bytes).collect();
        Ok((checked, segments))
    })();
    let moved = super::aggregate::write_all(file, memory, local)?;
    if let Pointer::Individual = pointer {
        file.state.lock().pointer = start + moved / view.etype_size();
    }
    Ok(moved)
}

/// An access at the individual file pointer, which ends past the data moved.
fn at_individual_pointer(file: &OpenFile, direction: Direction, memory: Memory) -> Result<u64> {
    not_sequential(file)?;
    let (view, start) = {
        let state = file.state.lock();
        (state.view.clone(), state.pointer)
    };
    let checked = check(file, &view, direction, memory)?;
    let moved = transfer(file, &view, direction, start, memory, &checked)?;
    file.state.lock().pointer = start + moved / view.etype_size();
    Ok(moved)
}

/// A blocking access: its status written.
fn blocking(
    name: &str,
    call: Call,
    fh: usize,
    direction: Direction,
    pointer: Pointer,
    memory: Memory,
    status: *mut abi::Status,
) -> Result<()> {
    with_file(name, fh, |file| {
        let done = run(file, call, direction, pointer, memory)?;
        // SAFETY: the caller's status or MPI_STATUS_IGNORE.
        unsafe { write_status(status, done) };
        Ok(())
    })
}

/// A non-blocking access: it runs now, and the request is complete.
fn nonblocking(
    name: &str,
    call: Call,
    fh: usize,
    direction: Direction,
    pointer: Pointer,
    memory: Memory,
    request: *mut c_int,
) -> Result<()> {
    with_file(name, fh, |file| {
        if request.is_null() {
            return Err(MpiError::new(class::ARG, "the request argument is NULL"));
        }
        let done = run(file, call, direction, pointer, memory)?;
        let mut state = state::lock(name)?;
        let handle =
            state.add_request(RequestSlot { now: Some(RequestEntry::Done { status: done }), persistent: None });
        // SAFETY: the caller's output argument, checked non-NULL.
        unsafe { put(request, handle, "request") }
    })
}

/// The begin call of a split collective: it runs now; its end call gives
/// the status.
fn begin(name: &'static str, fh: usize, direction: Direction, pointer: Pointer, memory: Memory) -> Result<()> {
    let call = Call::Collective;
    with_file(name, fh, |file| {
        if let Some((under_way, _)) = file.state.lock().split {
            return Err(MpiError::new(
                class::IO,
                format!("a split collective ({under_way}) is under way on the file: its end call comes first"),
            ));
        }
        let done = run(file, call, direction, pointer, memory)?;
        file.state.lock().split = Some((name, done));
        Ok(())
    })
}

/// The end call of a split collective begun by `begun_by`.
fn end(call: &str, begun_by: &str, fh: usize, status: *mut abi::Status) -> Result<()> {
    with_file(call, fh, |file| {
        let mut state = file.state.lock();
        let done = match state.split {
            // Either form of the begin call: `MPI_File_read_all_begin` or `MPI_File_read_all_begin_c`.
            Some((under_way, done)) if under_way.strip_suffix("_c").unwrap_or(under_way) == begun_by => done,
            Some((under_way, _)) => {
                return Err(MpiError::new(
                    class::IO,
                    format!("the split collective under way on the file is {under_way}, which {call} does not end"),
                ));
            }
            None => {
                return Err(MpiError::new(
                    class::IO,
                    format!("no split collective is under way on the file ({begun_by} was not called)"),
                ));
            }
        };
        state.split = None;
        drop(state);
        // SAFETY: the caller's status or MPI_STATUS_IGNORE.
        unsafe { write_status(status, done) };
        Ok(())
    })
}

/// Blocking accesses at the file pointers: `(fh, buf, count, datatype, status)`.
macro_rules! blocking_fns {
    ($($(#[$doc:meta])* $name:ident / $pname:ident, $cname:ident / $pcname:ident: $call:ident $direction:ident $pointer:ident;)*) => {$(
        counted_fn! {
            $(#[$doc])*
            fn $name / $pname, $cname / $pcname(fh: usize, buf: *mut c_void, count: Int, datatype: c_int, status: *mut abi::Status) {
                let memory = Memory { buf, count: count.wide(), datatype };
                blocking(NAME, Call::$call, fh, Direction::$direction, Pointer::$pointer, memory, status)
            }
        }
    )*};
}

/// Blocking accesses at explicit offsets: `(fh, offset, buf, count, datatype, status)`.
macro_rules! blocking_at_fns {
    ($($(#[$doc:meta])* $name:ident / $pname:ident, $cname:ident / $pcname:ident: $call:ident $direction:ident;)*) => {$(
        counted_fn! {
            $(#[$doc])*
            fn $name / $pname, $cname / $pcname(fh: usize, offset: i64, buf: *mut c_void, count: Int, datatype: c_int, status: *mut abi::Status) {
                let memory = Memory { buf, count: count.wide(), datatype };
                blocking(NAME, Call::$call, fh, Direction::$direction, Pointer::At(offset), memory, status)
            }
        }
    )*};
}

/// Non-blocking accesses at the file pointers: `(fh, buf, count, datatype, request)`.
macro_rules! nonblocking_fns {
    ($($(#[$doc:meta])* $name:ident / $pname:ident, $cname:ident / $pcname:ident: $call:ident $direction:ident $pointer:ident;)*) => {$(
        counted_fn! {
            $(#[$doc])*
            fn $name / $pname, $cname / $pcname(fh: usize, buf: *mut c_void, count: Int, datatype: c_int, request: *mut c_int) {
                let memory = Memory { buf, count: count.wide(), datatype };
                nonblocking(NAME, Call::$call, fh, Direction::$direction, Pointer::$pointer, memory, request)
            }
        }
    )*};
}

/// Non-blocking accesses at explicit offsets: `(fh, offset, buf, count, datatype, request)`.
macro_rules! nonblocking_at_fns {
    ($($(#[$doc:meta])* $name:ident / $pname:ident, $cname:ident / $pcname:ident: $call:ident $direction:ident;)*) => {$(
        counted_fn! {
            $(#[$doc])*
            fn $name / $pname, $cname / $pcname(fh: usize, offset: i64, buf: *mut c_void, count: Int, datatype: c_int, request: *mut c_int) {
                let memory = Memory { buf, count: count.wide(), datatype };
                nonblocking(NAME, Call::$call, fh, Direction::$direction, Pointer::At(offset), memory, request)
            }
        }
    )*};
}

/// Begin calls of split collectives at the file pointers: `(fh, buf, count, datatype)`.
macro_rules! begin_fns {
    ($($(#[$doc:meta])* $name:ident / $pname:ident, $cname:ident / $pcname:ident: $direction:ident $pointer:ident;)*) => {$(
        counted_fn! {
            $(#[$doc])*
            fn $name / $pname, $cname / $pcname(fh: usize, buf: *mut c_void, count: Int, datatype: c_int) {
                begin(NAME, fh, Direction::$direction, Pointer::$pointer, Memory { buf, count: count.wide(), datatype })
            }
        }
    )*};
}

/// Begin calls of split collectives at explicit offsets: `(fh, offset, buf, count, datatype)`.
macro_rules! begin_at_fns {
    ($($(#[$doc:meta])* $name:ident / $pname:ident, $cname:ident / $pcname:ident: $direction:ident;)*) => {$(
        counted_fn! {
            $(#[$doc])*
            fn $name / $pname, $cname / $pcname(fh: usize, offset: i64, buf: *mut c_void, count: Int, datatype: c_int) {
                begin(NAME, fh, Direction::$direction, Pointer::At(offset), Memory { buf, count: count.wide(), datatype })
            }
        }
    )*};
}

/// End calls of split collectives: `(fh, buf, status)`.
macro_rules! end_fns {
    ($($(#[$doc:meta])* $name:ident / $pname:ident: $begin:ident;)*) => {$(
        mpi_fn! {
            $(#[$doc])*
            fn $name / $pname(fh: usize, _buf: *mut c_void, status: *mut abi::Status) {
                end(stringify!($name), stringify!($begin), fh, status)
            }
        }
    )*};
}

blocking_at_fns! {
    /// `MPI_File_read_at`.
    MPI_File_read_at / PMPI_File_read_at, MPI_File_read_at_c / PMPI_File_read_at_c: Independent Read;
    /// `MPI_File_read_at_all` (collective).
    MPI_File_read_at_all / PMPI_File_read_at_all, MPI_File_read_at_all_c / PMPI_File_read_at_all_c: Collective Read;
    /// `MPI_File_write_at`.
    MPI_File_write_at / PMPI_File_write_at, MPI_File_write_at_c / PMPI_File_write_at_c: Independent Write;
    /// `MPI_File_write_at_all` (collective).
    MPI_File_write_at_all / PMPI_File_write_at_all, MPI_File_write_at_all_c / PMPI_File_write_at_all_c: Collective Write;
}

blocking_fns! {
    /// `MPI_File_read`: at the individual file pointer.
    MPI_File_read / PMPI_File_read, MPI_File_read_c / PMPI_File_read_c: Independent Read Individual;
    /// `MPI_File_read_all` (collective): at the individual file pointer.
    MPI_File_read_all / PMPI_File_read_all, MPI_File_read_all_c / PMPI_File_read_all_c: Collective Read Individual;
    /// `MPI_File_write`: at the individual file pointer.
    MPI_File_write / PMPI_File_write, MPI_File_write_c / PMPI_File_write_c: Independent Write Individual;
    /// `MPI_File_write_all` (collective): at the individual file pointer.
    MPI_File_write_all / PMPI_File_write_all, MPI_File_write_all_c / PMPI_File_write_all_c: Collective Write Individual;
    /// `MPI_File_read_shared`: at the shared file pointer.
    MPI_File_read_shared / PMPI_File_read_shared, MPI_File_read_shared_c / PMPI_File_read_shared_c: Independent Read Shared;
    /// `MPI_File_write_shared`: at the shared file pointer.
    MPI_File_write_shared / PMPI_File_write_shared, MPI_File_write_shared_c / PMPI_File_write_shared_c: Independent Write Shared;
    /// `MPI_File_read_ordered` (collective): at the shared file pointer, in rank order.
    MPI_File_read_ordered / PMPI_File_read_ordered, MPI_File_read_ordered_c / PMPI_File_read_ordered_c: Collective Read Ordered;
    /// `MPI_File_write_ordered` (collective): at the shared file pointer, in rank order.
    MPI_File_write_ordered / PMPI_File_write_ordered, MPI_File_write_ordered_c / PMPI_File_write_ordered_c: Collective Write Ordered;
}

nonblocking_at_fns! {
    /// `MPI_File_iread_at`.
    MPI_File_iread_at / PMPI_File_iread_at, MPI_File_iread_at_c / PMPI_File_iread_at_c: Independent Read;
    /// `MPI_File_iread_at_all`.
    MPI_File_iread_at_all / PMPI_File_iread_at_all, MPI_File_iread_at_all_c / PMPI_File_iread_at_all_c: Collective Read;
    /// `MPI_File_iwrite_at`.
    MPI_File_iwrite_at / PMPI_File_iwrite_at, MPI_File_iwrite_at_c / PMPI_File_iwrite_at_c: Independent Write;
    /// `MPI_File_iwrite_at_all`.
    MPI_File_iwrite_at_all / PMPI_File_iwrite_at_all, MPI_File_iwrite_at_all_c / PMPI_File_iwrite_at_all_c: Collective Write;
}

nonblocking_fns! {
    /// `MPI_File_iread`.
    MPI_File_iread / PMPI_File_iread, MPI_File_iread_c / PMPI_File_iread_c: Independent Read Individual;
    /// `MPI_File_iread_all`.
    MPI_File_iread_all / PMPI_File_iread_all, MPI_File_iread_all_c / PMPI_File_iread_all_c: Collective Read Individual;
    /// `MPI_File_iwrite`.
    MPI_File_iwrite / PMPI_File_iwrite, MPI_File_iwrite_c / PMPI_File_iwrite_c: Independent Write Individual;
    /// `MPI_File_iwrite_all`.
    MPI_File_iwrite_all / PMPI_File_iwrite_all, MPI_File_iwrite_all_c / PMPI_File_iwrite_all_c: Collective Write Individual;
    /// `MPI_File_iread_shared`.
    MPI_File_iread_shared / PMPI_File_iread_shared, MPI_File_iread_shared_c / PMPI_File_iread_shared_c: Independent Read Shared;
    /// `MPI_File_iwrite_shared`.
    MPI_File_iwrite_shared / PMPI_File_iwrite_shared, MPI_File_iwrite_shared_c / PMPI_File_iwrite_shared_c: Independent Write Shared;
}

begin_at_fns! {
    /// `MPI_File_read_at_all_begin`.
    MPI_File_read_at_all_begin / PMPI_File_read_at_all_begin, MPI_File_read_at_all_begin_c / PMPI_File_read_at_all_begin_c: Read;
    /// `MPI_File_write_at_all_begin`.
    MPI_File_write_at_all_begin / PMPI_File_write_at_all_begin, MPI_File_write_at_all_begin_c / PMPI_File_write_at_all_begin_c: Write;
}

begin_fns! {
    /// `MPI_File_read_all_begin`.
    MPI_File_read_all_begin / PMPI_File_read_all_begin, MPI_File_read_all_begin_c / PMPI_File_read_all_begin_c: Read Individual;
    /// `MPI_File_write_all_begin`.
    MPI_File_write_all_begin / PMPI_File_write_all_begin, MPI_File_write_all_begin_c / PMPI_File_write_all_begin_c: Write Individual;
    /// `MPI_File_read_ordered_begin`.
    MPI_File_read_ordered_begin / PMPI_File_read_ordered_begin, MPI_File_read_ordered_begin_c / PMPI_File_read_ordered_begin_c: Read Ordered;
    /// `MPI_File_write_ordered_begin`.
    MPI_File_write_ordered_begin / PMPI_File_write_ordered_begin, MPI_File_write_ordered_begin_c / PMPI_File_write_ordered_begin_c: Write Ordered;
}

end_fns! {
    /// `MPI_File_read_at_all_end`.
    MPI_File_read_at_all_end / PMPI_File_read_at_all_end: MPI_File_read_at_all_begin;
    /// `MPI_File_write_at_all_end`.
    MPI_File_write_at_all_end / PMPI_File_write_at_all_end: MPI_File_write_at_all_begin;
    /// `MPI_File_read_all_end`.
    MPI_File_read_all_end / PMPI_File_read_all_end: MPI_File_read_all_begin;
    /// `MPI_File_write_all_end`.
    MPI_File_write_all_end / PMPI_File_write_all_end: MPI_File_write_all_begin;
    /// `MPI_File_read_ordered_end`.
    MPI_File_read_ordered_end / PMPI_File_read_ordered_end: MPI_File_read_ordered_begin;
    /// `MPI_File_write_ordered_end`.
    MPI_File_write_ordered_end / PMPI_File_write_ordered_end: MPI_File_write_ordered_begin;
}
