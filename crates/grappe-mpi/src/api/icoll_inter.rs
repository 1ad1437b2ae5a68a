//! Non-blocking collectives on intercommunicators (`MPI_Ibcast`... on a
//! communicator between two groups): the C arguments turned into
//! grappe's intercommunicator schedules (`grappe_comm::InterCollective`),
//! which the engine moves on in every later call of the rank, as it does
//! the intracommunicator ones of [`super::icoll`]. A rank that waits for
//! the other group before it completes its own call so never holds that
//! group up.
//!
//! `MPI_IN_PLACE` has no meaning on an intercommunicator and is refused;
//! counts and displacements are per rank of the remote group, but for
//! the reduce-scatters, whose counts are per rank of the local group.

use std::ffi::{c_int, c_void};

use grappe_comm::{Communicator, InterCollective, InterRoot};

use crate::abi::{self, class};
use crate::errors::{MpiError, Result};
use crate::state;
use crate::types;

use super::coll::{Exchange, Landing, ints, pack_blocks, packed_counts, user_op};
use super::icoll::combine_of;
use super::intercomm::local_size;
use super::{Count, CountArray, count_of, outgoing, put};

/// Starts a collective on the intercommunicator `comm` as a request:
/// `build` makes it from the communicator, under the lock.
pub(super) fn start(
    call: &str,
    comm: c_int,
    request: *mut c_int,
    build: impl FnOnce(&Communicator) -> Result<(InterCollective, Landing)>,
) -> Result<()> {
    if request.is_null() {
        return Err(MpiError::new(class::REQUEST, format!("{call}: the request argument is NULL")));
    }
    let mut state = state::lock(call)?;
    let communicator = state.comm(comm)?.comm.clone();
    let (what, landing) = build(&communicator).map_err(|e| e.on(comm))?;
    let started = communicator.start_inter_collective(state.scope, what, landing.deliver());
    let started = started.map_err(|e| MpiError::from(e).on(comm))?;
    let entry = state::RequestEntry::Active { request: started, comm, keep: None, incoming: None };
    let handle = state.add_request(state::RequestSlot { now: Some(entry), persistent: None });
    // SAFETY: the caller's output argument, checked non-NULL.
    unsafe { put(request, handle, "request") }
}

/// Where this rank stands in a rooted collective on `comm`, from the
/// `root` argument.
fn inter_root(root: c_int, comm: &Communicator) -> Result<InterRoot> {
    root_of(root, comm.size())
}

/// Where this rank stands in a rooted collective on an intercommunicator
/// whose remote group has `remote_size` ranks, from the `root` argument.
pub(super) fn root_of(root: c_int, remote_size: usize) -> Result<InterRoot> {
    match root {
        abi::ROOT => Ok(InterRoot::Root),
        abi::PROC_NULL => Ok(InterRoot::Idle),
        r if r >= 0 && (r as usize) < remote_size => Ok(InterRoot::Remote(r as usize)),
        r => Err(MpiError::new(
            class::ROOT,
            format!(
                "root {r} on an intercommunicator is neither MPI_ROOT, MPI_PROC_NULL nor a rank of the remote group \
                 (size {remote_size})"
            ),
        )),
    }
}

/// `MPI_IN_PLACE` has no meaning on an intercommunicator.
pub(super) fn not_in_place(buf: *const c_void, what: &str) -> Result<()> {
    match super::coll::in_place(buf) {
        true => Err(MpiError::new(class::BUFFER, format!("MPI_IN_PLACE as {what} on an intercommunicator"))),
        false => Ok(()),
    }
}

/// The packed data of `count` elements of `datatype` at `buf`.
///
/// # Safety
/// As MPI's rule for a send buffer.
unsafe fn packed(buf: *const c_void, count: Count, datatype: c_int, call: &str) -> Result<Vec<u8>> {
    let datatype = types::committed(datatype)?;
    // SAFETY: as the caller promised.
    Ok(unsafe { outgoing(buf, count, &datatype, call)? }.into_owned())
}

/// `count × n`, checked.
fn times(count: Count, n: usize, call: &str) -> Result<Count> {
    count.checked_mul(n as Count).ok_or_else(|| {
        MpiError::new(class::COUNT, format!("{call}: {count} elements for each of {n} ranks overflow a count"))
    })
}

/// `MPI_Ibarrier`.
pub(super) fn barrier(call: &str, comm: c_int, request: *mut c_int) -> Result<()> {
    start(call, comm, request, |_| Ok((InterCollective::Barrier, Landing::none())))
}

/// `MPI_Ibcast`.
///
/// # Safety
/// As MPI's rules for the buffer.
pub(super) unsafe fn bcast(
    call: &str,
    (buffer, count, datatype): (*mut c_void, Count, c_int),
    root: c_int,
    comm: c_int,
    request: *mut c_int,
) -> Result<()> {
    start(call, comm, request, |c| {
        let root = inter_root(root, c)?;
        let what = |data| InterCollective::Bcast { root, data };
        match root {
            // SAFETY: the root's buffer, as the caller promised.
            InterRoot::Root => Ok((what(unsafe { packed(buffer, count, datatype, call)? }), Landing::none())),
            InterRoot::Idle => Ok((what(Vec::new()), Landing::none())),
            InterRoot::Remote(_) => {
                let datatype = types::committed(datatype)?;
                let n = count_of(count, call)?;
                Ok((what(vec![0; datatype.packed_len(n)]), Landing::whole(buffer, n, &datatype)))
            }
        }
    })
}

/// `MPI_Ireduce`.
///
/// # Safety
/// As MPI's rules for the buffers.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn reduce(
    call: &str,
    (sendbuf, recvbuf): (*const c_void, *mut c_void),
    count: Count,
    datatype: c_int,
    op: c_int,
    root: c_int,
    comm: c_int,
    request: *mut c_int,
) -> Result<()> {
    let user = user_op(op)?;
    start(call, comm, request, |c| {
        let root = inter_root(root, c)?;
        let handle = datatype;
        let datatype = types::committed(datatype)?;
        let (combine, commutative) = combine_of(op, user, handle, &datatype)?;
        let what = |data| InterCollective::Reduce { root, data, combine, commutative };
        match root {
            InterRoot::Root => {
                let n = count_of(count, call)?;
                Ok((what(vec![0; datatype.packed_len(n)]), Landing::whole(recvbuf, n, &datatype)))
            }
            InterRoot::Idle => Ok((what(Vec::new()), Landing::none())),
            InterRoot::Remote(_) => {
                not_in_place(sendbuf, "the send buffer")?;
                // SAFETY: the send buffer, as the caller promised.
                Ok((what(unsafe { packed(sendbuf, count, handle, call)? }), Landing::none()))
            }
        }
    })
}

/// `MPI_Iallreduce`.
///
/// # Safety
/// As MPI's rules for the buffers.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn allreduce(
    call: &str,
    (sendbuf, recvbuf): (*const c_void, *mut c_void),
    count: Count,
    datatype: c_int,
    op: c_int,
    comm: c_int,
    request: *mut c_int,
) -> Result<()> {
    let user = user_op(op)?;
    start(call, comm, request, |_| {
        not_in_place(sendbuf, "the send buffer")?;
        let handle = datatype;
        let datatype = types::committed(datatype)?;
        let (combine, commutative) = combine_of(op, user, handle, &datatype)?;
        // SAFETY: the send buffer, as the caller promised.
        let data = unsafe { packed(sendbuf, count, handle, call)? };
        let landing = Landing::whole(recvbuf, count_of(count, call)?, &datatype);
        Ok((InterCollective::Allreduce { data, combine, commutative }, landing))
    })
}

/// `MPI_Ireduce_scatter` (`counts`: one per local rank) and
/// `MPI_Ireduce_scatter_block` (`counts` `None`: `recvcount` each).
///
/// # Safety
/// As MPI's rules for the buffers and the counts.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn reduce_scatter(
    call: &str,
    (sendbuf, recvbuf): (*const c_void, *mut c_void),
    (counts, recvcount): (Option<CountArray>, Count),
    datatype: c_int,
    op: c_int,
    comm: c_int,
    request: *mut c_int,
) -> Result<()> {
    let user = user_op(op)?;
    start(call, comm, request, |c| {
        not_in_place(sendbuf, "the send buffer")?;
        let n = local_size(c);
        let counts = match counts {
            // SAFETY: one count per local rank, as the caller promised.
            Some(counts) => unsafe { ints(counts, n, "recvcounts")? },
            None => vec![count_of(recvcount, call)? as Count; n],
        };
        let total = counts.iter().try_fold(0 as Count, |sum, &n| sum.checked_add(n));
        let total = total.ok_or_else(|| MpiError::new(class::COUNT, format!("{call}: the counts overflow")))?;
        let handle = datatype;
        let datatype = types::committed(datatype)?;
        let (combine, commutative) = combine_of(op, user, handle, &datatype)?;
        // SAFETY: the send buffer holds every block, as the caller promised.
        let data = unsafe { packed(sendbuf, total, handle, call)? };
        let landing = Landing::whole(recvbuf, counts[c.rank()] as usize, &datatype);
        let counts = packed_counts(&counts, &datatype);
        Ok((InterCollective::ReduceScatter { data, counts, combine, commutative }, landing))
    })
}

/// `MPI_Igather` (`Blocks::Each`) and `MPI_Igatherv`.
///
/// # Safety
/// As MPI's rules for the buffers and arrays.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn gather(
    call: &str,
    (sendbuf, sendcount, sendtype): (*const c_void, Count, c_int),
    (recvbuf, recvcounts, recvtype): (*mut c_void, Blocks, c_int),
    root: c_int,
    comm: c_int,
    request: *mut c_int,
) -> Result<()> {
    start(call, comm, request, |c| {
        let root = inter_root(root, c)?;
        let what = |data, counts| InterCollective::Gather { root, data, counts };
        match root {
            InterRoot::Root => {
                let recvtype = types::committed(recvtype)?;
                // SAFETY: the root's arrays, as the caller promised.
                let (counts, landing) = unsafe { recvcounts.landing(recvbuf, c.size(), &recvtype, call)? };
                Ok((what(Vec::new(), counts), landing))
            }
            InterRoot::Idle => Ok((what(Vec::new(), Vec::new()), Landing::none())),
            InterRoot::Remote(_) => {
                not_in_place(sendbuf, "the send buffer")?;
                // SAFETY: the send buffer, as the caller promised.
                let data = unsafe { packed(sendbuf, sendcount, sendtype, call)? };
                Ok((what(data, Vec::new()), Landing::none()))
            }
        }
    })
}

/// The counts of a gather's, scatter's or allgather's blocks: the same for
/// every remote rank, or one each with displacements (the v-forms).
#[derive(Clone, Copy)]
pub(super) enum Blocks {
    Each(Count),
    PerRank(CountArray, CountArray),
}

impl Blocks {
    /// The packed length of each of `n` blocks, and where they land.
    ///
    /// # Safety
    /// The arrays hold `n` entries, the buffer every block.
    unsafe fn landing(
        self,
        recvbuf: *mut c_void,
        n: usize,
        recvtype: &types::Type,
        call: &str,
    ) -> Result<(Vec<usize>, Landing)> {
        match self {
            Blocks::Each(count) => {
                let each = count_of(count, call)?;
                let all = count_of(times(count, n, call)?, call)?;
                Ok((vec![recvtype.packed_len(each); n], Landing::whole(recvbuf, all, recvtype)))
            }
            Blocks::PerRank(counts, displs) => {
                // SAFETY: `n` entries each, as the caller promised.
                let (counts, displs) = unsafe { (ints(counts, n, "recvcounts")?, ints(displs, n, "displs")?) };
                Ok((packed_counts(&counts, recvtype), Landing::blocks(recvbuf, &counts, &displs, recvtype)))
            }
        }
    }
}

/// `MPI_Iscatter` (`Blocks::Each`) and `MPI_Iscatterv`.
///
/// # Safety
/// As MPI's rules for the buffers and arrays.
pub(super) unsafe fn scatter(
    call: &str,
    (sendbuf, sendcounts, sendtype): (*const c_void, Blocks, c_int),
    (recvbuf, recvcount, recvtype): (*mut c_void, Count, c_int),
    root: c_int,
    comm: c_int,
    request: *mut c_int,
) -> Result<()> {
    start(call, comm, request, |c| {
        let root = inter_root(root, c)?;
        let what = |data, counts, mine| InterCollective::Scatter { root, data, counts, mine };
        match root {
            InterRoot::Root => {
                let sendtype = types::committed(sendtype)?;
                let n = c.size();
                let (data, counts) = match sendcounts {
                    Blocks::Each(count) => {
                        // SAFETY: the root's buffer holds a block per remote rank.
                        let data = unsafe { outgoing(sendbuf, times(count, n, call)?, &sendtype, call)? };
                        (data.into_owned(), vec![sendtype.packed_len(count_of(count, call)?); n])
                    }
                    Blocks::PerRank(counts, displs) => {
                        // SAFETY: `n` entries each, and the blocks, as the caller promised.
                        let (counts, displs) = unsafe { (ints(counts, n, "sendcounts")?, ints(displs, n, "displs")?) };
                        // SAFETY: as the caller promised.
                        (
                            unsafe { pack_blocks(sendbuf, &counts, &displs, &sendtype) },
                            packed_counts(&counts, &sendtype),
                        )
                    }
                };
                Ok((what(data, counts, 0), Landing::none()))
            }
            InterRoot::Idle => Ok((what(Vec::new(), Vec::new(), 0), Landing::none())),
            InterRoot::Remote(_) => {
                not_in_place(recvbuf, "the receive buffer")?;
                let recvtype = types::committed(recvtype)?;
                let n = count_of(recvcount, call)?;
                Ok((what(Vec::new(), Vec::new(), recvtype.packed_len(n)), Landing::whole(recvbuf, n, &recvtype)))
            }
        }
    })
}

/// `MPI_Iallgather` and `MPI_Iallgatherv`.
///
/// # Safety
/// As MPI's rules for the buffers and arrays.
pub(super) unsafe fn allgather(
    call: &str,
    (sendbuf, sendcount, sendtype): (*const c_void, Count, c_int),
    (recvbuf, recvcounts, recvtype): (*mut c_void, Blocks, c_int),
    comm: c_int,
    request: *mut c_int,
) -> Result<()> {
    start(call, comm, request, |c| {
        not_in_place(sendbuf, "the send buffer")?;
        // SAFETY: the send buffer, as the caller promised.
        let data = unsafe { packed(sendbuf, sendcount, sendtype, call)? };
        let recvtype = types::committed(recvtype)?;
        // SAFETY: the arrays and the receive buffer, as the caller promised.
        let (counts, landing) = unsafe { recvcounts.landing(recvbuf, c.size(), &recvtype, call)? };
        Ok((InterCollective::Allgather { data, counts }, landing))
    })
}

/// `MPI_Ialltoall`.
///
/// # Safety
/// As MPI's rules for the buffers.
pub(super) unsafe fn alltoall(
    call: &str,
    (sendbuf, sendcount, sendtype): (*const c_void, Count, c_int),
    (recvbuf, recvcount, recvtype): (*mut c_void, Count, c_int),
    comm: c_int,
    request: *mut c_int,
) -> Result<()> {
    start(call, comm, request, |c| {
        not_in_place(sendbuf, "the send buffer")?;
        let n = c.size();
        let block = types::committed(sendtype)?.packed_len(count_of(sendcount, call)?);
        // SAFETY: the send buffer holds a block per remote rank.
        let data = unsafe { packed(sendbuf, times(sendcount, n, call)?, sendtype, call)? };
        let send_counts = vec![block; n];
        let recvtype = types::committed(recvtype)?;
        // SAFETY: the receive buffer, as the caller promised.
        let (recv_counts, landing) = unsafe { Blocks::Each(recvcount).landing(recvbuf, n, &recvtype, call)? };
        Ok((InterCollective::Alltoall { data, send_counts, recv_counts }, landing))
    })
}

/// `MPI_Ialltoallv` and `MPI_Ialltoallw`: `exchange` reads the arguments
/// for `n` remote ranks.
pub(super) fn alltoall_blocks(
    call: &str,
    sendbuf: *const c_void,
    comm: c_int,
    request: *mut c_int,
    exchange: impl FnOnce(usize) -> Result<Exchange>,
) -> Result<()> {
    start(call, comm, request, |c| {
        not_in_place(sendbuf, "the send buffer")?;
        let x = exchange(c.size())?;
        Ok((
            InterCollective::Alltoall { data: x.send, send_counts: x.send_counts, recv_counts: x.recv_counts },
            x.landing,
        ))
    })
}
