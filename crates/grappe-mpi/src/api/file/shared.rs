//! The shared file pointer: accesses at it (each rank moves it past its
//! data, in whatever order the ranks come), in rank order (`_ordered`:
//! the ranks' sizes summed in rank order, rank 0 moving the pointer past
//! them all at once), and its seek (collective) and position.

use std::ffi::c_int;

use crate::abi::class;
use crate::errors::{MpiError, Result};
use crate::io::OpenFile;
use crate::io::posix::os_error;
use crate::mpi_fn;

use super::super::put;
use super::access::{Direction, Memory, check, transfer};
use super::view::{end_position, seek_target};
use super::{collective, with_file};

fn pointer_error(file: &OpenFile, error: std::io::Error) -> MpiError {
    os_error("move the shared file pointer in", file.shared.path(), &error)
}

/// An access at the shared file pointer, which this rank moves past its
/// data before the others can take the same place: the bytes moved.
pub(super) fn at_shared_pointer(file: &OpenFile, direction: Direction, memory: Memory) -> Result<u64> {
    let view = file.view();
    let checked = check(file, &view, direction, memory)?;
    let start = file.shared.fetch_add(checked.etypes).map_err(|e| pointer_error(file, e))?;
    transfer(file, &view, direction, start, memory, &checked)
}

/// An ordered access (collective): rank r's data go after those of ranks
/// 0 to r-1, from the shared pointer, which ends past them all. A rank
/// whose own access is wrong fails every rank before anything moves.
pub(super) fn ordered(file: &OpenFile, direction: Direction, memory: Memory) -> Result<u64> {
    let view = file.view();
    let checked = check(file, &view, direction, memory);
    collective::everywhere(file.comm, file.size, "the ordered access", collective::outcome(&checked))?;
    let checked = checked?;
    let sizes = collective::allgather(file.comm, &[checked.etypes as i64], file.size)?;
    let before: i64 = sizes[..file.rank].iter().sum();
    let total: i64 = sizes.iter().sum();
    let mut base = [0i64];
    collective::on_rank_zero(file.comm, file.rank, "moving the shared file pointer", || {
        base[0] = file.shared.fetch_add(total as u64).map_err(|e| pointer_error(file, e))? as i64;
        Ok(())
    })?;
    collective::bcast(file.comm, &mut base, 0)?;
    transfer(file, &view, direction, (base[0] + before) as u64, memory, &checked)
}

mpi_fn! {
    /// `MPI_File_seek_shared` (collective): every rank passes the same
    /// offset and whence; rank 0 moves the pointer.
    fn MPI_File_seek_shared / PMPI_File_seek_shared(fh: usize, offset: i64, whence: c_int) {
        with_file("MPI_File_seek_shared", fh, |file| {
            collective::same_everywhere(file.comm, "offset", offset, class::ARG)?;
            collective::same_everywhere(file.comm, "whence", whence as i64, class::ARG)?;
            collective::on_rank_zero(file.comm, file.rank, "the seek", || {
                let view = file.view();
                let current = file.shared.get().map_err(|e| pointer_error(file, e))?;
                let to = seek_target(offset, whence, current, || end_position(file, &view))?;
                file.shared.set(to).map_err(|e| pointer_error(file, e))
            })
        })
    }
}

mpi_fn! {
    /// `MPI_File_get_position_shared`: the shared file pointer, in etypes.
    fn MPI_File_get_position_shared / PMPI_File_get_position_shared(fh: usize, offset: *mut i64) {
        with_file("MPI_File_get_position_shared", fh, |file| {
            let at = file.shared.get().map_err(|e| pointer_error(file, e))?;
            // SAFETY: the caller's output argument.
            unsafe { put(offset, at as i64, "offset") }
        })
    }
}
