//! The MPI functions, by group, and what they share: reading C buffers,
//! ranks and statuses.

mod attr;
mod coll;
mod comm;
mod env;
pub(crate) mod errh;
pub(crate) mod external32;
mod file;
pub(crate) mod fortran;
mod fortran_binding;
mod grequest;
mod group;
mod icoll;
mod icoll_inter;
pub(crate) mod info;
mod intercomm;
mod misc;
mod p2p;
mod partitioned;
mod persistent;
mod request;
pub(crate) mod session;
mod tools;
mod topology;
mod types;
pub(crate) mod win;

use std::ffi::{c_int, c_void};

use grappe_comm::{Communicator, Source, Tag};

use crate::abi::{self, class};
use std::borrow::Cow;

use crate::errors::{MpiError, Result};
use crate::types::Type;

pub(crate) use attr::{CopyFunction, CopyProxy, DeleteFunction, DeleteProxy};
pub(crate) use comm::DupUnderWay;
pub(crate) use intercomm::{Inter, unsupported as not_on_intercomm};
pub(crate) use misc::{user_file_handler, user_handler};
pub(crate) use partitioned::Shared as PartitionedShared;
pub(crate) use persistent::Starter;
pub(crate) use topology::Topology;

/// `n` values of a C array (NULL allowed when `n` is 0).
///
/// # Safety
/// `array` points to `n` values.
unsafe fn c_array<'a, T>(array: *const T, n: usize, what: &str) -> Result<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if array.is_null() {
        return Err(MpiError::new(class::ARG, format!("{what} is NULL")));
    }
    // SAFETY: `n` values, as the caller promised.
    Ok(unsafe { std::slice::from_raw_parts(array, n) })
}

/// `MPI_Count` (and `MPI_Aint`): a C `long`, 64 bits wide on the
/// platforms of MPICH's binary interface. Functions shared by an MPI
/// function and its large-count `_c` form take their counts as this.
pub(crate) type Count = i64;

/// The type of a count argument: `int` in the MPI functions, `MPI_Count`
/// in their `_c` forms (see `counted_fn!`).
pub(crate) trait CountArg: Copy + std::fmt::Display {
    /// `MPI_UNDEFINED` as this type.
    const UNDEFINED: Self;

    /// The count as an `MPI_Count`.
    fn wide(self) -> Count;

    /// An output count of `full`: itself, or `MPI_UNDEFINED` where this
    /// type cannot hold it (as MPI says for the `int` forms).
    fn or_undefined(full: u64) -> Self;
}

impl CountArg for c_int {
    const UNDEFINED: Self = abi::UNDEFINED;

    fn wide(self) -> Count {
        Count::from(self)
    }

    fn or_undefined(full: u64) -> Self {
        c_int::try_from(full).unwrap_or(Self::UNDEFINED)
    }
}

impl CountArg for Count {
    const UNDEFINED: Self = abi::UNDEFINED as Count;

    fn wide(self) -> Count {
        self
    }

    fn or_undefined(full: u64) -> Self {
        Count::try_from(full).unwrap_or(Self::UNDEFINED)
    }
}

/// A C array of counts or displacements as an MPI function was given it:
/// `int`s, or `MPI_Count`s/`MPI_Aint`s in its `_c` form. Collectives
/// read it once they know how many entries it has.
#[derive(Clone, Copy)]
pub(crate) enum CountArray {
    Int(*const c_int),
    Large(*const Count),
}

impl CountArray {
    /// Its `n` values (NULL allowed when `n` is 0).
    ///
    /// # Safety
    /// The array holds `n` values.
    pub(crate) unsafe fn values(self, n: usize, what: &str) -> Result<Vec<Count>> {
        // SAFETY: as the caller promised.
        unsafe {
            match self {
                CountArray::Int(array) => wide_array(array, n, what),
                CountArray::Large(array) => wide_array(array, n, what),
            }
        }
    }
}

/// The form the functions shared by an MPI function and its `_c` form
/// take an argument in: [`Count`] for a count, [`CountArray`] for an
/// array of counts or displacements (see [`widen!`]).
pub(crate) trait Widen {
    type Wide;
    fn widen(self) -> Self::Wide;
}

impl Widen for c_int {
    type Wide = Count;
    fn widen(self) -> Count {
        self.into()
    }
}

impl Widen for Count {
    type Wide = Count;
    fn widen(self) -> Count {
        self
    }
}

impl Widen for *const c_int {
    type Wide = CountArray;
    fn widen(self) -> CountArray {
        CountArray::Int(self)
    }
}

impl Widen for *const Count {
    type Wide = CountArray;
    fn widen(self) -> CountArray {
        CountArray::Large(self)
    }
}

/// Rebinds the count arguments of a `counted_fn!` body in their wide
/// form ([`Widen`]), so that one body serves both forms.
macro_rules! widen {
    ($($arg:ident),* $(,)?) => {
        $(let $arg = $crate::api::Widen::widen($arg);)*
    };
}
pub(crate) use widen;

/// A count, checked.
fn count_of(count: impl CountArg, what: &str) -> Result<usize> {
    let count = count.wide();
    usize::try_from(count).map_err(|_| MpiError::new(class::COUNT, format!("{what}: negative count {count}")))
}

/// The values of a C array of counts or displacements (`int` or
/// `MPI_Count`/`MPI_Aint`), as `MPI_Count`s.
///
/// # Safety
/// As [`c_array`].
unsafe fn wide_array<T: CountArg>(array: *const T, n: usize, what: &str) -> Result<Vec<Count>> {
    // SAFETY: as the caller promised.
    Ok(unsafe { c_array(array, n, what) }?.iter().map(|value| value.wide()).collect())
}

/// The bytes of `count` elements of `datatype`, refused if they are more
/// than a process can address.
fn buffer_len(datatype: &Type, count: usize, what: &str) -> Result<usize> {
    count.checked_mul(datatype.size()).filter(|&len| len <= isize::MAX as usize).ok_or_else(|| {
        MpiError::new(
            class::COUNT,
            format!("{what}: count {count} of {} bytes each is more than memory can hold", datatype.size()),
        )
    })
}

/// The data of `count` elements of `datatype` at `buf`, to send: the
/// buffer itself if they lie end to end, else packed.
///
/// # Safety
/// `buf` must hold `count` elements of `datatype`, readable while the
/// result lives (MPI's rule for a send buffer).
unsafe fn outgoing<'a>(buf: *const c_void, count: impl CountArg, datatype: &Type, what: &str) -> Result<Cow<'a, [u8]>> {
    let count = count_of(count, what)?;
    let len = buffer_len(datatype, count, what)?;
    if len == 0 {
        return Ok(Cow::Borrowed(&[]));
    }
    if buf.is_null() && datatype.true_lb() == 0 {
        return Err(MpiError::new(class::BUFFER, format!("{what}: a NULL buffer for {count} elements")));
    }
    let start = buf.cast::<u8>();
    match datatype.contiguous(count) {
        // SAFETY: `len` bytes from the first block, as the caller promised.
        Some(offset) => Ok(Cow::Borrowed(unsafe { std::slice::from_raw_parts(start.wrapping_offset(offset), len) })),
        None => {
            let mut packed = Vec::new();
            // SAFETY: as the caller promised.
            unsafe { datatype.pack(start, count, &mut packed) };
            Ok(Cow::Owned(packed))
        }
    }
}

/// Where a message for `count` elements of `datatype` at `buf` is
/// received: the buffer itself if they lie end to end, else a buffer of
/// the library's, unpacked by [`Incoming::finish`].
pub(crate) struct Incoming<'a> {
    direct: Option<&'a mut [u8]>,
    packed: Vec<u8>,
    target: *mut u8,
    datatype: Type,
}

/// # Safety
/// `buf` must hold `count` elements of `datatype`, writable and untouched
/// by the caller while the result lives (MPI's rule for a receive buffer).
unsafe fn incoming<'a>(buf: *mut c_void, count: impl CountArg, datatype: &Type, what: &str) -> Result<Incoming<'a>> {
    let count = count_of(count, what)?;
    let len = buffer_len(datatype, count, what)?;
    let target = buf.cast::<u8>();
    let mut incoming = Incoming { direct: None, packed: Vec::new(), target, datatype: datatype.clone() };
    if len == 0 {
        incoming.direct = Some(&mut []);
        return Ok(incoming);
    }
    if buf.is_null() && datatype.true_lb() == 0 {
        return Err(MpiError::new(class::BUFFER, format!("{what}: a NULL buffer for {count} elements")));
    }
    match datatype.contiguous(count) {
        // SAFETY: `len` writable bytes from the first block, as the caller promised.
        Some(offset) => {
            incoming.direct = Some(unsafe { std::slice::from_raw_parts_mut(target.wrapping_offset(offset), len) })
        }
        None => incoming.packed = vec![0; len],
    }
    Ok(incoming)
}

impl Incoming<'_> {
    /// The bytes to receive into.
    fn bytes(&mut self) -> &mut [u8] {
        match &mut self.direct {
            Some(direct) => direct,
            None => &mut self.packed,
        }
    }

    /// Whether the bytes go through a packed copy.
    fn is_packed(&self) -> bool {
        self.direct.is_none()
    }

    /// Puts every byte of the packed copy in the elements.
    fn finish_all(self) {
        let len = self.packed.len();
        self.finish(len);
    }

    /// Puts the `received` bytes in the elements, if they came packed.
    pub(crate) fn finish(self, received: usize) {
        if self.direct.is_none() {
            // SAFETY: the target holds the elements the packed bytes came
            // for, as `incoming`'s caller promised.
            unsafe { self.datatype.unpack(&self.packed[..received.min(self.packed.len())], self.target) };
        }
    }
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
pub(crate) fn empty_status() -> abi::Status {
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

/// `result`; if it is a receive's failure that says something of its
/// message, that is written to the status first.
///
/// # Safety
/// As [`write_status`].
unsafe fn status_on_error<T>(out: *mut abi::Status, result: Result<T>) -> Result<T> {
    if let Err(error) = &result {
        if let Some(status) = error.status {
            // SAFETY: as the caller promised.
            unsafe { write_status(out, status) };
        }
    }
    result
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
