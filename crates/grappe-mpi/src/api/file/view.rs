//! Views and positions: `MPI_File_set_view` and what reads it (the
//! individual file pointer, byte offsets, extents), and the data
//! representations (`native`, and `internal`, which is native here).

use std::ffi::{c_char, c_int, c_long, c_void};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::abi::class;
use crate::errors::{MpiError, Result};
use crate::io::view::{Tiling, TilingError};
use crate::io::{OpenFile, View};
use crate::types::{self, Type};
use crate::{counted_fn, mpi_fn};

use super::super::env::{copy_string, read_string};
use super::super::put;
use super::{collective, hints, merge, running, size_of, with_file};

/// `MPI_DISPLACEMENT_CURRENT`.
const DISPLACEMENT_CURRENT: i64 = -54278278;
/// `MPI_MAX_DATAREP_STRING`.
const MAX_DATAREP_STRING: usize = 128;

/// `MPI_SEEK_SET`, `MPI_SEEK_CUR`, `MPI_SEEK_END`.
pub(super) mod whence {
    use std::ffi::c_int;
    pub const SET: c_int = 600;
    pub const CUR: c_int = 602;
    pub const END: c_int = 604;
}

/// Data representations registered by the program (`MPI_Register_datarep`).
static REGISTERED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// The representations grappe writes: the first two are the memory's
/// bytes, external32 converts each element (see [`external32_layout`]).
const BUILT_IN: [&str; 3] = ["native", "internal", "external32"];

/// The name of a data representation grappe can use, as MPI names it.
fn datarep_of(name: &str) -> Result<&'static str> {
    let lower = name.to_ascii_lowercase();
    if let Some(found) = BUILT_IN.iter().find(|b| **b == lower) {
        return Ok(found);
    }
    let why = if REGISTERED.lock().iter().any(|r| r == name) {
        format!(
            "{name:?} was registered (MPI_Register_datarep), but grappe's MPI-IO does not convert data through user functions"
        )
    } else {
        format!("{name:?} is not a data representation (MPI defines \"native\", \"internal\" and \"external32\")")
    };
    Err(MpiError::new(class::UNSUPPORTED_DATAREP, why))
}

/// The view `disp`, `etype`, `filetype` and `datarep` describe, checked
/// as MPI requires (overlapping regions only in a file opened for
/// reading only, `read_only`).
fn new_view(disp: u64, etype: c_int, filetype: c_int, datarep: &str, read_only: bool) -> Result<View> {
    let datarep = datarep_of(datarep)?;
    let etype = types::committed(etype).map_err(|e| MpiError::new(e.class, format!("etype: {}", e.message)))?;
    let filetype =
        types::committed(filetype).map_err(|e| MpiError::new(e.class, format!("filetype: {}", e.message)))?;
    let (esize, fsize) = (etype.size(), filetype.size());
    if esize == 0 {
        return Err(MpiError::new(class::TYPE, "the etype holds no data (size 0)"));
    }
    if fsize % esize != 0 {
        return Err(MpiError::new(
            class::TYPE,
            format!("the filetype holds {fsize} bytes of data, not a whole number of etypes of {esize} bytes"),
        ));
    }
    if datarep == "external32" {
        external32_layout(&etype, "the etype")?;
        external32_layout(&filetype, "the filetype")?;
    }
    let tiling = Tiling::new(disp, &filetype.blocks(), filetype.extent(), read_only).map_err(tiling_error)?;
    Ok(View { tiling, etype, filetype, datarep: datarep.to_owned() })
}

/// Checks that `datatype` lies in an external32 view as in memory: one
/// predefined type whose external32 size is its size here (not `MPI_LONG`,
/// `MPI_UNSIGNED_LONG` nor `MPI_WCHAR`, nor types mixing several), so that
/// the view maps the file as for native data and each element's bytes
/// are converted (big-endian) on the way.
pub(super) fn external32_layout(datatype: &Type, what: &str) -> Result<()> {
    crate::api::external32::check_file_layout(datatype, what)
}

/// The error of a filetype that cannot make a view: a type map MPI
/// forbids in a view is `MPI_ERR_IO`, as ROMIO classes it.
fn tiling_error(error: TilingError) -> MpiError {
    let class = match error {
        TilingError::NoExtent { .. } => class::TYPE,
        TilingError::NegativeOffset { .. } | TilingError::Decreasing { .. } | TilingError::Overlapping { .. } => {
            class::IO
        }
    };
    MpiError::new(class, error.to_string())
}

/// The file byte of position `position` (etypes) of the view.
pub(super) fn byte_of(view: &View, position: u64) -> u64 {
    view.tiling.byte_of(position * view.etype_size())
}

/// The position (etypes) of the end of the file in the view: the first
/// etype whose data start at or after it.
pub(super) fn end_position(file: &OpenFile, view: &View) -> Result<u64> {
    let data = view.tiling.position_of_byte(size_of(file)?);
    Ok(data.div_ceil(view.etype_size()))
}

mpi_fn! {
    /// `MPI_File_set_view` (collective): the file pointers go back to 0.
    fn MPI_File_set_view / PMPI_File_set_view(
        fh: usize,
        disp: i64,
        etype: c_int,
        filetype: c_int,
        datarep: *const c_char,
        info: c_int,
    ) {
        with_file("MPI_File_set_view", fh, |file| {
            let view = (|| -> Result<(View, Vec<(String, String)>)> {
                // SAFETY: a NUL-terminated string, as MPI requires.
                let datarep = unsafe { read_string(datarep, "datarep")? };
                let disp = displacement(file, disp)?;
                let read_only = file.amode & crate::io::posix::mode::RDONLY != 0;
                let view = new_view(disp, etype, filetype, &datarep, read_only)?;
                let hints = hints(info)?;
                Ok((view, hints))
            })();
            collective::everywhere(file.comm, file.size, "setting the view", collective::outcome(&view))?;
            let (view, hints) = view?;
            // The shared pointer goes back to 0 before any rank uses it in the new view.
            collective::on_rank_zero(file.comm, file.rank, "resetting the shared file pointer", || {
                file.shared.reset().map_err(|e| crate::io::posix::os_error("reset", file.shared.path(), &e))
            })?;
            let mut state = file.state.lock();
            state.view = Arc::new(view);
            state.pointer = 0;
            merge(&mut state.info, hints);
            Ok(())
        })
    }
}

/// The displacement of a view: `disp`, or where the shared pointer is for
/// `MPI_DISPLACEMENT_CURRENT` (which only files opened with
/// `MPI_MODE_SEQUENTIAL` take).
fn displacement(file: &OpenFile, disp: i64) -> Result<u64> {
    match (disp, file.is_sequential()) {
        (DISPLACEMENT_CURRENT, true) => {
            let view = file.view();
            let at = file.shared.get().map_err(|e| crate::io::posix::os_error("read", file.shared.path(), &e))?;
            Ok(byte_of(&view, at))
        }
        (DISPLACEMENT_CURRENT, false) => {
            Err(MpiError::new(class::ARG, "MPI_DISPLACEMENT_CURRENT is for files opened with MPI_MODE_SEQUENTIAL"))
        }
        (_, true) => Err(MpiError::new(
            class::ARG,
            format!("displacement {disp}: a file opened with MPI_MODE_SEQUENTIAL takes MPI_DISPLACEMENT_CURRENT"),
        )),
        (d, false) if d < 0 => Err(MpiError::new(class::ARG, format!("negative displacement {d}"))),
        (d, false) => Ok(d as u64),
    }
}

/// The handle to give out for a datatype of the view: a predefined one as
/// it is, a derived one as a new handle the caller frees (MPI's rule).
fn handed_out(datatype: &Type) -> c_int {
    match datatype {
        Type::Predefined(predefined) => predefined.handle,
        Type::Derived(layout) => types::register((**layout).clone()),
    }
}

mpi_fn! {
    /// `MPI_File_get_view`.
    fn MPI_File_get_view / PMPI_File_get_view(
        fh: usize,
        disp: *mut i64,
        etype: *mut c_int,
        filetype: *mut c_int,
        datarep: *mut c_char,
    ) {
        with_file("MPI_File_get_view", fh, |file| {
            let view = file.view();
            // SAFETY: the caller's output arguments; `datarep` holds
            // MPI_MAX_DATAREP_STRING characters, as MPI requires.
            unsafe {
                put(disp, view.tiling.disp() as i64, "disp")?;
                copy_string(&view.datarep, datarep, MAX_DATAREP_STRING, "datarep")?;
                put(etype, handed_out(&view.etype), "etype")?;
                put(filetype, handed_out(&view.filetype), "filetype")
            }
        })
    }
}

counted_fn! {
    /// `MPI_File_get_type_extent`: the extent of `datatype` in the file,
    /// its extent in memory (in the native representation, and in
    /// external32 for the types whose external32 size is their size here).
    fn MPI_File_get_type_extent / PMPI_File_get_type_extent, MPI_File_get_type_extent_c / PMPI_File_get_type_extent_c(fh: usize, datatype: c_int, extent: *mut c_long) {
        with_file(NAME, fh, |file| {
            let found = types::lookup(datatype)?;
            if file.view().is_external32() {
                external32_layout(&found, "MPI_File_get_type_extent in an external32 view")?;
            }
            // SAFETY: the caller's output argument.
            unsafe { put(extent, found.extent() as c_long, "extent") }
        })
    }
}

/// Refuses a call that moves or reads the individual pointer, or names
/// offsets, on a file opened with `MPI_MODE_SEQUENTIAL`.
pub(super) fn not_sequential(file: &OpenFile) -> Result<()> {
    match file.is_sequential() {
        false => Ok(()),
        true => Err(MpiError::new(
            class::UNSUPPORTED_OPERATION,
            format!(
                "{} was opened with MPI_MODE_SEQUENTIAL: only the shared file pointer reads and writes it",
                file.path.display()
            ),
        )),
    }
}

mpi_fn! {
    /// `MPI_File_get_byte_offset`: the file byte of etype `offset` of the view.
    fn MPI_File_get_byte_offset / PMPI_File_get_byte_offset(fh: usize, offset: i64, disp: *mut i64) {
        with_file("MPI_File_get_byte_offset", fh, |file| {
            not_sequential(file)?;
            let offset = explicit_offset(offset)?;
            let byte = byte_of(&file.view(), offset);
            // SAFETY: the caller's output argument.
            unsafe { put(disp, byte as i64, "disp") }
        })
    }
}

/// An offset the program names: not negative.
pub(super) fn explicit_offset(offset: i64) -> Result<u64> {
    u64::try_from(offset).map_err(|_| MpiError::new(class::ARG, format!("negative offset {offset}")))
}

/// Where a seek of `offset` from `whence` goes, from position `current`
/// of a view whose file ends at position `end` (computed on demand).
pub(super) fn seek_target(offset: i64, whence: c_int, current: u64, end: impl FnOnce() -> Result<u64>) -> Result<u64> {
    let from = match whence {
        whence::SET => 0,
        whence::CUR => current as i64,
        whence::END => end()? as i64,
        other => {
            return Err(MpiError::new(
                class::ARG,
                format!(
                    "whence {other} is not MPI_SEEK_SET ({}), MPI_SEEK_CUR ({}) or MPI_SEEK_END ({})",
                    whence::SET,
                    whence::CUR,
                    whence::END
                ),
            ));
        }
    };
    match from.checked_add(offset) {
        Some(to) if to >= 0 => Ok(to as u64),
        _ => Err(MpiError::new(
            class::ARG,
            format!("seeking {offset} etypes from {from} goes before the start of the view"),
        )),
    }
}

mpi_fn! {
    /// `MPI_File_seek`: moves the individual file pointer.
    fn MPI_File_seek / PMPI_File_seek(fh: usize, offset: i64, whence: c_int) {
        with_file("MPI_File_seek", fh, |file| {
            not_sequential(file)?;
            let (view, current) = {
                let state = file.state.lock();
                (state.view.clone(), state.pointer)
            };
            let to = seek_target(offset, whence, current, || end_position(file, &view))?;
            file.state.lock().pointer = to;
            Ok(())
        })
    }
}

mpi_fn! {
    /// `MPI_File_get_position`: the individual file pointer, in etypes.
    fn MPI_File_get_position / PMPI_File_get_position(fh: usize, offset: *mut i64) {
        with_file("MPI_File_get_position", fh, |file| {
            not_sequential(file)?;
            let at = file.state.lock().pointer;
            // SAFETY: the caller's output argument.
            unsafe { put(offset, at as i64, "offset") }
        })
    }
}

/// `MPI_Datarep_conversion_function` (its count an `int`, or an
/// `MPI_Count` for `MPI_Register_datarep_c`) and `MPI_Datarep_extent_function`,
/// as `MPI_Register_datarep` receives them (kept by no one).
type Conversion<N> = Option<unsafe extern "C" fn(*mut c_void, c_int, N, *mut c_void, i64, *mut c_void) -> c_int>;
type ExtentFunction = Option<unsafe extern "C" fn(c_int, *mut c_long, *mut c_void) -> c_int>;

counted_fn! {
    /// `MPI_Register_datarep`: the name is taken (`MPI_ERR_DUP_DATAREP`
    /// the second time); views in it are refused, since grappe does not
    /// convert data through the program's functions.
    fn MPI_Register_datarep / PMPI_Register_datarep, MPI_Register_datarep_c / PMPI_Register_datarep_c(
        datarep: *const c_char,
        _read: Conversion<Int>,
        _write: Conversion<Int>,
        _extent: ExtentFunction,
        _extra_state: *mut c_void,
    ) {
        let register = || -> Result<()> {
            running(NAME)?;
            // SAFETY: a NUL-terminated string, as MPI requires.
            let name = unsafe { read_string(datarep, "datarep")? };
            if name.is_empty() || name.len() >= MAX_DATAREP_STRING {
                return Err(MpiError::new(class::ARG, format!("data representation name {name:?} is empty or longer than MPI_MAX_DATAREP_STRING")));
            }
            let mut registered = REGISTERED.lock();
            let built_in = BUILT_IN.contains(&name.as_str());
            if built_in || registered.contains(&name) {
                return Err(MpiError::new(class::DUP_DATAREP, format!("data representation {name:?} is defined already")));
            }
            registered.push(name);
            Ok(())
        };
        register().map_err(|e| e.on_file(crate::io::FILE_NULL))
    }
}
