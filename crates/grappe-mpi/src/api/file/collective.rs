//! The collective steps of MPI-IO calls, over a file's own communicator:
//! the library's collectives, called as the program calls them, so that
//! they wait as any collective does at the thread level in force (with
//! the library's lock let go at `MPI_THREAD_MULTIPLE`). The file's
//! communicator returns its errors, which come back here as `MpiError`s.

use std::ffi::{c_int, c_void};

use crate::abi::class;
use crate::errors::{MpiError, Result, check_code};

use super::super::coll::{PMPI_Allgather, PMPI_Allreduce, PMPI_Alltoall, PMPI_Alltoallv, PMPI_Barrier, PMPI_Bcast};

const MPI_INT: c_int = 0x4c00_0405;
pub(super) const MPI_LONG: c_int = 0x4c00_0807;
pub(crate) const MPI_BYTE: c_int = 0x4c00_010d;
const MPI_MAX: c_int = 0x5800_0001;

pub(crate) fn barrier(comm: c_int) -> Result<()> {
    // SAFETY: a communicator handle, no buffer.
    check_code(unsafe { PMPI_Barrier::body(comm) })
}

/// Rank `root`'s `values`, on every rank.
pub(crate) fn bcast(comm: c_int, values: &mut [i64], root: usize) -> Result<()> {
    // SAFETY: `values` holds `values.len()` longs, as the call is told.
    let code =
        unsafe { PMPI_Bcast::body(values.as_mut_ptr().cast(), values.len() as c_int, MPI_LONG, root as c_int, comm) };
    check_code(code)
}

/// Every rank's `mine`, in rank order (every rank gives as many values).
pub(crate) fn allgather(comm: c_int, mine: &[i64], size: usize) -> Result<Vec<i64>> {
    let mut all = vec![0i64; mine.len() * size];
    let n = mine.len() as c_int;
    // SAFETY: `mine` holds `n` longs, `all` `n` per rank.
    let code = unsafe {
        PMPI_Allgather::body(mine.as_ptr().cast(), n, MPI_LONG, all.as_mut_ptr().cast::<c_void>(), n, MPI_LONG, comm)
    };
    check_code(code)?;
    Ok(all)
}

/// Sends `blocks[r]` to rank r (`datatype` is the MPI datatype of `T`):
/// what every rank sent this one, by rank.
pub(crate) fn exchange<T: Copy + Default>(comm: c_int, blocks: &[Vec<T>], datatype: c_int) -> Result<Vec<Vec<T>>> {
    let count = |block: &Vec<T>| {
        c_int::try_from(block.len())
            .map_err(|_| MpiError::new(class::COUNT, format!("{} elements to send to one rank", block.len())))
    };
    let send_counts = blocks.iter().map(count).collect::<Result<Vec<c_int>>>()?;
    let mut recv_counts = vec![0 as c_int; blocks.len()];
    // SAFETY: one int per rank each way.
    let code = unsafe {
        PMPI_Alltoall::body(send_counts.as_ptr().cast(), 1, MPI_INT, recv_counts.as_mut_ptr().cast(), 1, MPI_INT, comm)
    };
    check_code(code)?;
    let (send_displs, recv_displs) = (displacements(&send_counts)?, displacements(&recv_counts)?);
    let send: Vec<T> = blocks.concat();
    let total: usize = recv_counts.iter().map(|&c| c as usize).sum();
    let mut recv = vec![T::default(); total];
    // SAFETY: the counts and displacements describe `send` and `recv`, of `datatype` elements.
    let code = unsafe {
        PMPI_Alltoallv::body(
            send.as_ptr().cast(),
            send_counts.as_ptr(),
            send_displs.as_ptr(),
            datatype,
            recv.as_mut_ptr().cast(),
            recv_counts.as_ptr(),
            recv_displs.as_ptr(),
            datatype,
            comm,
        )
    };
    check_code(code)?;
    let mut rest = recv.as_slice();
    Ok(recv_counts
        .iter()
        .map(|&c| {
            let (mine, after) = rest.split_at(c as usize);
            rest = after;
            mine.to_vec()
        })
        .collect())
}

/// Where blocks of `counts` elements start, end to end.
fn displacements(counts: &[c_int]) -> Result<Vec<c_int>> {
    let mut at: c_int = 0;
    let mut starts = Vec::with_capacity(counts.len());
    for &count in counts {
        starts.push(at);
        at = at
            .checked_add(count)
            .ok_or_else(|| MpiError::new(class::COUNT, format!("more than {} elements in one exchange", c_int::MAX)))?;
    }
    Ok(starts)
}

/// The largest of every rank's `values`, element by element, in place.
fn max(comm: c_int, values: &mut [i64]) -> Result<()> {
    let send = values.to_vec();
    // SAFETY: both buffers hold `values.len()` longs.
    let code = unsafe {
        PMPI_Allreduce::body(
            send.as_ptr().cast(),
            values.as_mut_ptr().cast(),
            values.len() as c_int,
            MPI_LONG,
            MPI_MAX,
            comm,
        )
    };
    check_code(code)
}

/// Checks that every rank passed the same `value` as `what` (a
/// collective argument MPI requires to be the same): an error of `class`
/// on every rank otherwise (ROMIO's: `MPI_ERR_NOT_SAME` for access modes,
/// `MPI_ERR_ARG` for the rest).
pub(super) fn same_everywhere(comm: c_int, what: &str, value: i64, class: c_int) -> Result<()> {
    let mut bounds = [value, value.wrapping_neg()];
    max(comm, &mut bounds)?;
    let (highest, lowest) = (bounds[0], bounds[1].wrapping_neg());
    if highest == lowest {
        return Ok(());
    }
    Err(MpiError::new(
        class,
        format!(
            "the ranks of the file's communicator passed different {what}s (from {lowest} to {highest}), which must be the same"
        ),
    ))
}

/// A rank's outcome of a step every rank takes: 0, or its error's class.
pub(super) fn outcome_of(result: &Result<()>) -> i64 {
    match result {
        Ok(()) => 0,
        Err(error) => error.class as i64,
    }
}

/// After a step every rank took (`outcomes`: [`outcome_of`] of each, in
/// rank order): this rank's own error if it failed; if another did, an
/// error of its class on this rank too, naming it, so that every rank
/// fails alike.
pub(super) fn agree(mine: Result<()>, outcomes: &[i64], step: &str) -> Result<()> {
    mine?;
    match outcomes.iter().enumerate().find(|(_, class)| **class != 0) {
        None => Ok(()),
        Some((rank, &class)) => Err(MpiError::new(
            class as c_int,
            format!(
                "{step} failed on rank {rank} of the file's communicator ({}), so it fails on every rank",
                crate::errors::describe_class(class as c_int)
            ),
        )),
    }
}

/// Whether `result` is a success, as a result of its own (to tell the
/// other ranks, while the value stays with the caller).
pub(super) fn outcome<T>(result: &Result<T>) -> Result<()> {
    match result {
        Ok(_) => Ok(()),
        Err(error) => Err(MpiError::new(error.class, error.message.clone())),
    }
}

/// Makes the outcome of a step every rank took the same everywhere (see
/// [`agree`]).
pub(super) fn everywhere(comm: c_int, size: usize, step: &str, mine: Result<()>) -> Result<()> {
    let all = allgather(comm, &[outcome_of(&mine)], size)?;
    agree(mine, &all, step)
}

/// Runs `f` on rank 0 only and gives its outcome to every rank: its own
/// error there, an error of the same class naming rank 0 elsewhere.
pub(super) fn on_rank_zero(comm: c_int, rank: usize, step: &str, f: impl FnOnce() -> Result<()>) -> Result<()> {
    let mine = if rank == 0 { f() } else { Ok(()) };
    let mut outcome = [outcome_of(&mine)];
    bcast(comm, &mut outcome, 0)?;
    agree(mine, &outcome, step)
}
