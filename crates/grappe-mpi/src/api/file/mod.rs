//! MPI-IO (`MPI_File_*`), over POSIX files as ROMIO's UFS driver does
//! it: opening, closing and deleting files, their size, access mode,
//! group, hints and atomicity; error handlers on files; the Fortran
//! handles. Views are in [`view`], data access in [`access`] and
//! [`shared`].
//!
//! A file's errors go to its own error handler, `MPI_ERRORS_RETURN`
//! unless the program sets another; errors that concern no open file
//! (`MPI_File_open`, `MPI_File_delete`, a bad handle) to the handler of
//! `MPI_FILE_NULL`, `MPI_ERRORS_RETURN` too unless set (MPI 3.1, 13.7).
//!
//! Collective calls check what MPI requires to be the same on every rank
//! (the access mode, a size, a flag), and report a failure on any rank on
//! every rank, so that no rank goes on with a file the others could not
//! open or resize.

mod access;
mod aggregate;
pub(super) mod collective;
mod shared;
mod view;

use std::ffi::{c_char, c_int};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::abi::{self, class};
use crate::errors::{MpiError, Result};
use crate::io::posix::{self, mode};
use crate::io::shared::SharedPointer;
use crate::io::{self, FILE_NULL, FileState, OpenFile, View};
use crate::state;
use crate::{mpi_fn, weak_alias};

use super::env::read_string;
use super::{get, put};

/// `MPI_ERR_FILE` for a handle that names no open file.
fn bad_handle(handle: usize) -> MpiError {
    let message = match handle {
        FILE_NULL => "MPI_FILE_NULL is not an open file".to_owned(),
        other => format!("{other:#x} is not the handle of an open file (never opened, or closed already)"),
    };
    MpiError::new(class::FILE, message).on_file(FILE_NULL)
}

/// Checks that the library runs (between `MPI_Init` and `MPI_Finalize`),
/// without its lock: MPI-IO calls that need no more than their file take
/// no lock the program's other threads wait for.
fn running(call: &str) -> Result<()> {
    match state::phase() {
        state::Phase::Running => Ok(()),
        state::Phase::Before => Err(MpiError::new(class::OTHER, format!("{call} called before MPI_Init"))),
        state::Phase::Finalized => Err(MpiError::new(class::OTHER, format!("{call} called after MPI_Finalize"))),
    }
}

/// The open file of `handle`, in a running library.
fn file_of(call: &str, handle: usize) -> Result<Arc<OpenFile>> {
    running(call)?;
    io::lookup(handle).ok_or_else(|| bad_handle(handle))
}

/// Runs `body` on the file of `handle`; its errors go to the file's handler.
fn with_file<T>(call: &str, handle: usize, body: impl FnOnce(&OpenFile) -> Result<T>) -> Result<T> {
    let file = file_of(call, handle)?;
    body(&file).map_err(|e| e.on_file(handle))
}

/// The hints of info object `info` (none for `MPI_INFO_NULL`).
fn hints(info: c_int) -> Result<Vec<(String, String)>> {
    if info == abi::INFO_NULL {
        return Ok(Vec::new());
    }
    crate::api::info::entries(info)
}

/// Adds `new` hints to `hints`, a key set again taking its new value.
fn merge(hints: &mut Vec<(String, String)>, new: Vec<(String, String)>) {
    for (key, value) in new {
        match hints.iter_mut().find(|(k, _)| *k == key) {
            Some(entry) => entry.1 = value,
            None => hints.push((key, value)),
        }
    }
}

/// A duplicate of intracommunicator `comm` for a file, whose errors return.
fn private_comm(comm: c_int) -> Result<c_int> {
    let mut state = state::lock("MPI_File_open")?;
    let dup = state.intra(comm)?.comm.dup().map_err(MpiError::from)?;
    Ok(state.add_comm(dup, abi::ERRORS_RETURN))
}

/// Frees a file's communicator.
fn free_private_comm(mut comm: c_int) -> Result<()> {
    // SAFETY: a communicator handle the library made.
    crate::errors::check_code(unsafe { crate::api::comm::PMPI_Comm_free::body(&mut comm) })
}

/// This rank and the size of communicator `comm`.
fn rank_and_size(comm: c_int) -> Result<(usize, usize)> {
    let state = state::lock("MPI_File_open")?;
    let entry = state.comm(comm)?;
    Ok((entry.comm.rank(), entry.comm.size()))
}

/// A number for the file's hidden companions that no other open of it
/// shares: this process and the time.
pub(super) fn unique_id() -> i64 {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    ((std::process::id() as i64) << 32) ^ (nanos as i64 & 0xffff_ffff) ^ ((nanos >> 32) as i64).rotate_left(17)
}

/// Opens `name` on file communicator `comm` (collective): the file.
fn open_on(comm: c_int, name: &str, amode: c_int, hints: Vec<(String, String)>) -> Result<OpenFile> {
    collective::same_everywhere(comm, "access mode", amode as i64, class::NOT_SAME)?;
    if let Some(problem) = posix::amode_problem(amode) {
        return Err(MpiError::new(class::AMODE, problem));
    }
    let path = posix::resolve(name)?;
    let (rank, size) = rank_and_size(comm)?;
    // Rank 0 makes the file, then every other rank opens what it made:
    // with MPI_MODE_EXCL only one may create it.
    let mut data = None;
    let created = collective::on_rank_zero(comm, rank, &format!("creating {}", path.display()), || {
        if amode & mode::CREATE != 0 {
            data = Some(posix::open(&path, amode, true).map_err(|e| posix::os_error("create", &path, &e))?);
        }
        Ok(())
    });
    created?;
    let mut id = [unique_id()];
    collective::bcast(comm, &mut id, 0)?;
    let shared = SharedPointer::beside(&path, id[0] as u64);
    let opened = match data.take() {
        Some(file) => Ok(file),
        None => posix::open(&path, amode, false).map_err(|e| posix::os_error("open", &path, &e)),
    };
    let mut pointer = 0;
    let mine = collective::outcome(&opened).and_then(|()| {
        let file = opened.as_ref().expect("checked");
        if amode & mode::APPEND != 0 {
            // Both pointers start at the end of the file.
            pointer = file.metadata().map_err(|e| posix::os_error("read the size of", &path, &e))?.len();
            if rank == 0 {
                shared.set(pointer).map_err(|e| posix::os_error("make the shared file pointer", shared.path(), &e))?;
            }
        }
        Ok(())
    });
    collective::everywhere(comm, size, &format!("opening {}", path.display()), mine)?;
    let data = opened?;
    let state = FileState {
        view: Arc::new(View::bytes()),
        pointer,
        atomic: false,
        errhandler: io::null_handler(),
        info: hints,
        split: None,
    };
    Ok(OpenFile {
        path,
        data,
        amode,
        comm,
        rank,
        size,
        shared,
        state: Mutex::new(state),
        atomic_access: Mutex::new(()),
    })
}

mpi_fn! {
    /// `MPI_File_open`: collective over `comm`. The file gets a duplicate
    /// of `comm` of its own; a failure on any rank fails every rank.
    fn MPI_File_open / PMPI_File_open(comm: c_int, filename: *const c_char, amode: c_int, info: c_int, fh: *mut usize) {
        let open = || -> Result<usize> {
            if fh.is_null() {
                return Err(MpiError::new(class::ARG, "the file handle argument is NULL"));
            }
            // SAFETY: a NUL-terminated string, as MPI requires.
            let name = unsafe { read_string(filename, "filename")? };
            let hints = hints(info)?;
            let private = private_comm(comm)?;
            match open_on(private, &name, amode, hints) {
                Ok(file) => Ok(io::insert(file)),
                Err(error) => {
                    // The error to report is the open's.
                    let _ = free_private_comm(private);
                    Err(error)
                }
            }
        };
        let handle = open().map_err(|e| e.on_file(FILE_NULL))?;
        // SAFETY: the caller's output argument, checked non-NULL.
        unsafe { fh.write(handle) };
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_File_close`: collective; the handle becomes `MPI_FILE_NULL`.
    /// Rank 0 deletes the file if it was opened with
    /// `MPI_MODE_DELETE_ON_CLOSE`, once every rank is done with it.
    fn MPI_File_close / PMPI_File_close(fh: *mut usize) {
        // SAFETY: the caller's in-out argument.
        let handle = unsafe { get(fh, "fh") }.map_err(|e| e.on_file(FILE_NULL))?;
        let file = file_of("MPI_File_close", handle)?;
        let close = || -> Result<()> {
            collective::barrier(file.comm)?;
            collective::on_rank_zero(file.comm, file.rank, &format!("deleting {} on close", file.path.display()), || {
                file.shared.remove();
                if file.amode & mode::DELETE_ON_CLOSE != 0 {
                    std::fs::remove_file(&file.path).map_err(|e| posix::os_error("delete", &file.path, &e))?;
                }
                Ok(())
            })
        };
        let closed = close();
        io::remove(handle);
        let freed = free_private_comm(file.comm);
        closed.and(freed).map_err(|e| e.on_file(handle))?;
        // SAFETY: the caller's in-out argument.
        unsafe { fh.write(FILE_NULL) };
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_File_delete`: removes the file (not collective).
    fn MPI_File_delete / PMPI_File_delete(filename: *const c_char, info: c_int) {
        let delete = || -> Result<()> {
            running("MPI_File_delete")?;
            // SAFETY: a NUL-terminated string, as MPI requires.
            let name = unsafe { read_string(filename, "filename")? };
            hints(info)?;
            let path = posix::resolve(&name)?;
            std::fs::remove_file(&path).map_err(|e| posix::os_error("delete", &path, &e))
        };
        delete().map_err(|e| e.on_file(FILE_NULL))
    }
}

/// Runs `resize` (a change of the file's size to `size`) on rank 0, after
/// checking on every rank that the call may change it.
fn resize(
    call: &str,
    file: &OpenFile,
    size: i64,
    resize: impl FnOnce(&std::fs::File, u64) -> std::io::Result<()>,
) -> Result<()> {
    collective::same_everywhere(file.comm, "size", size, class::ARG)?;
    if size < 0 {
        return Err(MpiError::new(class::ARG, format!("{call}: negative size {size}")));
    }
    if file.is_sequential() {
        return Err(MpiError::new(
            class::UNSUPPORTED_OPERATION,
            format!("{call}: {} was opened with MPI_MODE_SEQUENTIAL", file.path.display()),
        ));
    }
    if file.amode & mode::RDONLY != 0 {
        return Err(MpiError::new(
            class::READ_ONLY,
            format!("{call}: {} was opened MPI_MODE_RDONLY", file.path.display()),
        ));
    }
    collective::on_rank_zero(file.comm, file.rank, &format!("resizing {}", file.path.display()), || {
        resize(&file.data, size as u64).map_err(|e| posix::os_error("resize", &file.path, &e))
    })
}

mpi_fn! {
    /// `MPI_File_set_size`: truncates or extends the file (collective).
    fn MPI_File_set_size / PMPI_File_set_size(fh: usize, size: i64) {
        with_file("MPI_File_set_size", fh, |file| resize("MPI_File_set_size", file, size, |data, size| data.set_len(size)))
    }
}

mpi_fn! {
    /// `MPI_File_preallocate`: makes the file at least `size` bytes, its
    /// blocks allocated (collective); a larger file stays as it is.
    fn MPI_File_preallocate / PMPI_File_preallocate(fh: usize, size: i64) {
        with_file("MPI_File_preallocate", fh, |file| resize("MPI_File_preallocate", file, size, posix::preallocate))
    }
}

/// The size of the file in bytes.
fn size_of(file: &OpenFile) -> Result<u64> {
    let metadata = file.data.metadata().map_err(|e| posix::os_error("read the size of", &file.path, &e))?;
    Ok(metadata.len())
}

mpi_fn! {
    /// `MPI_File_get_size`.
    fn MPI_File_get_size / PMPI_File_get_size(fh: usize, size: *mut i64) {
        with_file("MPI_File_get_size", fh, |file| {
            let bytes = size_of(file)?;
            // SAFETY: the caller's output argument.
            unsafe { put(size, bytes as i64, "size") }
        })
    }
}

mpi_fn! {
    /// `MPI_File_get_amode`.
    fn MPI_File_get_amode / PMPI_File_get_amode(fh: usize, amode: *mut c_int) {
        // SAFETY: the caller's output argument.
        with_file("MPI_File_get_amode", fh, |file| unsafe { put(amode, file.amode, "amode") })
    }
}

mpi_fn! {
    /// `MPI_File_get_group`: a new group, of the communicator the file was opened on.
    fn MPI_File_get_group / PMPI_File_get_group(fh: usize, group: *mut c_int) {
        with_file("MPI_File_get_group", fh, |file| {
            let mut state = state::lock("MPI_File_get_group")?;
            let members = crate::api::group::comm_members(&state.comm(file.comm)?.comm);
            crate::api::group::give(&mut state, members, group)
        })
    }
}

mpi_fn! {
    /// `MPI_File_set_info`: the hints are kept (grappe acts on none).
    fn MPI_File_set_info / PMPI_File_set_info(fh: usize, info: c_int) {
        with_file("MPI_File_set_info", fh, |file| {
            let new = hints(info)?;
            merge(&mut file.state.lock().info, new);
            Ok(())
        })
    }
}

mpi_fn! {
    /// `MPI_File_get_info`: a new info object with the hints given at
    /// open and since.
    fn MPI_File_get_info / PMPI_File_get_info(fh: usize, info_used: *mut c_int) {
        with_file("MPI_File_get_info", fh, |file| {
            let entries = file.state.lock().info.clone();
            crate::api::info::add(entries, info_used)
        })
    }
}

mpi_fn! {
    /// `MPI_File_set_atomicity` (collective): in atomic mode every data
    /// access holds a lock on the file's bytes it covers (shared for
    /// reads, exclusive for writes), so that accesses that overlap see
    /// each other whole, between ranks as between threads.
    fn MPI_File_set_atomicity / PMPI_File_set_atomicity(fh: usize, flag: c_int) {
        with_file("MPI_File_set_atomicity", fh, |file| {
            collective::same_everywhere(file.comm, "atomicity flag", (flag != 0) as i64, class::ARG)?;
            file.state.lock().atomic = flag != 0;
            Ok(())
        })
    }
}

mpi_fn! {
    /// `MPI_File_get_atomicity`.
    fn MPI_File_get_atomicity / PMPI_File_get_atomicity(fh: usize, flag: *mut c_int) {
        with_file("MPI_File_get_atomicity", fh, |file| {
            let atomic = file.state.lock().atomic;
            // SAFETY: the caller's output argument.
            unsafe { put(flag, atomic as c_int, "flag") }
        })
    }
}

mpi_fn! {
    /// `MPI_File_sync`: what this rank wrote goes to the storage device
    /// (`fsync`).
    fn MPI_File_sync / PMPI_File_sync(fh: usize) {
        with_file("MPI_File_sync", fh, |file| {
            file.data.sync_all().map_err(|e| posix::os_error("sync", &file.path, &e))
        })
    }
}

/// Checks that `handler` may be a file's: predefined, or made by
/// `MPI_File_create_errhandler`.
fn check_file_handler(handler: c_int) -> Result<()> {
    crate::api::errh::check_any_handler(handler)?;
    if crate::api::misc::is_user_handler(handler) && crate::api::user_file_handler(handler).is_none() {
        return Err(MpiError::new(
            class::ARG,
            format!(
                "{handler:#x} is an error handler for communicators, not for files (MPI_File_create_errhandler makes those)"
            ),
        ));
    }
    Ok(())
}

mpi_fn! {
    /// `MPI_File_create_errhandler`.
    fn MPI_File_create_errhandler / PMPI_File_create_errhandler(
        function: Option<crate::api::misc::FileErrhandlerFunction>,
        errhandler: *mut c_int,
    ) {
        running("MPI_File_create_errhandler")?;
        crate::api::misc::create_file_errhandler(function, errhandler)
    }
}

mpi_fn! {
    /// `MPI_File_set_errhandler`; on `MPI_FILE_NULL`, the handler of
    /// errors that concern no open file, and of files opened next.
    fn MPI_File_set_errhandler / PMPI_File_set_errhandler(fh: usize, errhandler: c_int) {
        if fh == FILE_NULL {
            running("MPI_File_set_errhandler")?;
            check_file_handler(errhandler).map_err(|e| e.on_file(FILE_NULL))?;
            io::set_null_handler(errhandler);
            return Ok(());
        }
        with_file("MPI_File_set_errhandler", fh, |file| {
            check_file_handler(errhandler)?;
            file.state.lock().errhandler = errhandler;
            Ok(())
        })
    }
}

mpi_fn! {
    /// `MPI_File_get_errhandler`.
    fn MPI_File_get_errhandler / PMPI_File_get_errhandler(fh: usize, errhandler: *mut c_int) {
        let handler = match fh {
            FILE_NULL => {
                running("MPI_File_get_errhandler")?;
                io::null_handler()
            }
            _ => with_file("MPI_File_get_errhandler", fh, |file| Ok(file.state.lock().errhandler))?,
        };
        // SAFETY: the caller's output argument.
        unsafe { put(errhandler, handler, "errhandler") }.map_err(|e| e.on_file(fh))
    }
}

mpi_fn! {
    /// `MPI_File_call_errhandler`: what an error of `errorcode` on the
    /// file would do (its handler called, the job ended if it is fatal).
    fn MPI_File_call_errhandler / PMPI_File_call_errhandler(fh: usize, errorcode: c_int) {
        let handler = match fh {
            FILE_NULL => {
                running("MPI_File_call_errhandler")?;
                io::null_handler()
            }
            _ => with_file("MPI_File_call_errhandler", fh, |file| Ok(file.state.lock().errhandler))?,
        };
        if let Some(function) = crate::api::user_file_handler(handler) {
            let (mut handle, mut code) = (fh, errorcode);
            // SAFETY: the program's handler, with the arguments MPI defines.
            unsafe { function(&mut handle, &mut code) };
            return Ok(());
        }
        match handler {
            abi::ERRORS_RETURN => Ok(()),
            _ => {
                let text = crate::errors::string_of_code(errorcode).unwrap_or_default();
                let class = crate::errors::class_of_code(errorcode).unwrap_or(class::OTHER);
                Err(MpiError::new(class, format!("error {errorcode} raised by the program: {text}")).on_file(fh))
            }
        }
    }
}

/// `MPI_File_c2f`: the Fortran integer of a file handle (0 for
/// `MPI_FILE_NULL` and handles of no open file).
#[unsafe(no_mangle)]
pub extern "C" fn PMPI_File_c2f(file: usize) -> c_int {
    io::fortran_of(file)
}
weak_alias!(MPI_File_c2f, PMPI_File_c2f);

/// `MPI_File_f2c`: the handle of a Fortran integer (`MPI_FILE_NULL` if
/// it names no open file).
#[unsafe(no_mangle)]
pub extern "C" fn PMPI_File_f2c(file: c_int) -> usize {
    io::from_fortran(file)
}
weak_alias!(MPI_File_f2c, PMPI_File_f2c);
