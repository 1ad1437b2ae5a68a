//! Non-blocking collectives (`MPI_Ibarrier`, `MPI_Iallreduce`...), over
//! grappe's schedules (`grappe_comm::NonBlocking`): the engine moves them
//! on in every later MPI call of the rank, blocking ones included, so a
//! rank that waits elsewhere never holds its peers up.
//!
//! The send data is packed when the call starts (MPI lets a library read
//! the send buffer at any time before completion); the result is unpacked
//! into the receive buffer once it is whole, before the request completes
//! (MPI's rule keeps that buffer valid and untouched until then).

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use grappe_comm::{CollectiveKind, Combine, Communicator, NonBlocking};

use crate::abi::class;
use crate::errors::{MpiError, Result};
use crate::reduce::{OpCode, UserOp, combine_laid_out, with_type};
use crate::state::{self, RequestEntry, RequestSlot};
use crate::types::{self, Type};
use crate::{counted_fn, mpi_fn};

use super::coll::{
    Landing, Local, Region, alltoallv_exchange, alltoallw_exchange, contribution, disjoint, in_place, ints,
    pack_blocks, packed_counts, reduction_base, root_rank, scattered, separate, user_op,
};
use super::icoll_inter::{self as inter, Blocks};
use super::request::complete_outside;
use super::{Count, CountArray, count_of, outgoing, put, widen};

/// Where a collective started here goes: to a request the program holds
/// (`MPI_Iallreduce`...), or to its completion before the call returns
/// (a blocking collective run as a request, see [`crate::waiting`]).
#[derive(Clone, Copy)]
pub(super) enum Start {
    Request(*mut c_int),
    /// The blocking collective of this kind (what a trace records).
    Blocking(CollectiveKind),
}

/// Whether `comm` is an intercommunicator, whose collectives
/// [`inter`] starts.
fn is_inter(call: &str, comm: c_int) -> Result<bool> {
    Ok(crate::api::intercomm::parts(call, comm)?.is_some())
}

/// Starts a collective on `comm` as a request, where `to` says: `build`
/// makes it from the communicator, under the lock.
fn start(
    call: &str,
    comm: c_int,
    to: Start,
    build: impl FnOnce(&Communicator) -> Result<(NonBlocking, Landing)>,
) -> Result<()> {
    if let Start::Request(request) = to
        && request.is_null()
    {
        return Err(MpiError::new(class::REQUEST, format!("{call}: the request argument is NULL")));
    }
    let mut state = state::lock(call)?;
    let communicator = state.intra(comm)?.comm.clone();
    let (what, landing) = build(&communicator).map_err(|e| e.on(comm))?;
    let started = match to {
        Start::Request(_) => communicator.start_collective(state.scope, what, landing.deliver()),
        Start::Blocking(kind) => communicator.start_blocking_collective(state.scope, what, landing.deliver(), kind),
    };
    let started = started.map_err(|e| MpiError::from(e).on(comm))?;
    let entry = RequestEntry::Active { request: started, comm, keep: None, incoming: None };
    match to {
        Start::Request(request) => {
            let handle = state.add_request(RequestSlot { now: Some(entry), persistent: None });
            // SAFETY: the caller's output argument, checked non-NULL.
            unsafe { put(request, handle, "request") }
        }
        Start::Blocking(_) => complete_outside(call, state, vec![entry]).map(|_| ()),
    }
}

/// The reduction of `op` on `datatype`'s elements, packed.
pub(super) fn combine_of(op: c_int, user: Option<UserOp>, handle: c_int, datatype: &Type) -> Result<(Combine, bool)> {
    if let Some(user) = user {
        // The program's function reads its operands where the datatype
        // says, whatever the datatype.
        let laid_out = datatype.clone();
        let combine: Combine = Arc::new(move |input: &[u8], inout: &mut [u8]| {
            // SAFETY: `combine_laid_out` gives `n` elements of the datatype, laid out.
            let apply = |earlier, later, n| unsafe { user.apply(earlier, later, n, handle) };
            combine_laid_out(&laid_out, input, inout, apply)
        });
        return Ok((combine, user.commute));
    }
    let code = OpCode::lookup(op)?;
    let base = reduction_base(datatype)?;
    code.check(base)?;
    if base.size == base.extent {
        let combine: Combine =
            Arc::new(move |input: &[u8], inout: &mut [u8]| with_type(base, Local { input, inout, op: code }));
        return Ok((combine, true));
    }
    // A pair type with padding (`MPI_DOUBLE_INT`: 12 bytes of data in 16):
    // the pairs travel packed, the operation works on the program's layout.
    let padded = Type::Predefined(base);
    let combine: Combine = Arc::new(move |input: &[u8], inout: &mut [u8]| {
        let apply = |earlier: *mut u8, later: *mut u8, n: usize| {
            // SAFETY: `combine_laid_out` gives `n` pairs at each, laid out.
            let (input, inout) = unsafe {
                let len = n * base.extent;
                (std::slice::from_raw_parts(earlier, len), std::slice::from_raw_parts_mut(later, len))
            };
            with_type(base, Local { input, inout, op: code })
        };
        combine_laid_out(&padded, input, inout, apply)
    });
    Ok((combine, true))
}

/// The packed input of a reduction: `count` elements at `sendbuf`, or at
/// `recvbuf` for `MPI_IN_PLACE`.
///
/// # Safety
/// The buffers hold their elements, as MPI requires.
unsafe fn reduction_input(
    sendbuf: *const c_void,
    recvbuf: *const c_void,
    count: Count,
    datatype: &Type,
    call: &str,
) -> Result<Vec<u8>> {
    let from = if in_place(sendbuf) { recvbuf } else { sendbuf };
    // SAFETY: as the caller promised.
    Ok(unsafe { outgoing(from, count, datatype, call)? }.into_owned())
}

/// `MPI_Ibarrier`.
#[allow(clippy::too_many_arguments)]
pub(super) fn start_barrier(call: &str, comm: c_int, to: Start) -> Result<()> {
    start(call, comm, to, |_| Ok((NonBlocking::Barrier, Landing::none())))
}

mpi_fn! {
    /// `MPI_Ibarrier`.
    fn MPI_Ibarrier / PMPI_Ibarrier(comm: c_int, request: *mut c_int) {
        if is_inter("MPI_Ibarrier", comm)? {
            return inter::barrier("MPI_Ibarrier", comm, request);
        }
        start_barrier("MPI_Ibarrier", comm, Start::Request(request))
    }
}

/// `MPI_Ibcast`.
#[allow(clippy::too_many_arguments)]
pub(super) fn start_bcast(
    call: &str,
    buffer: *mut c_void,
    count: Count,
    datatype: c_int,
    root: c_int,
    comm: c_int,
    to: Start,
) -> Result<()> {
    start(call, comm, to, |c| {
        let datatype = types::committed(datatype)?;
        let root = root_rank(root, c)?;
        let n = count_of(count, call)?;
        if c.rank() == root {
            // SAFETY: MPI's rule for the root's buffer.
            let data = unsafe { outgoing(buffer, count, &datatype, call)? }.into_owned();
            return Ok((NonBlocking::Bcast { root, data }, Landing::none()));
        }
        let data = vec![0; datatype.packed_len(n)];
        Ok((NonBlocking::Bcast { root, data }, Landing::whole(buffer, n, &datatype)))
    })
}

counted_fn! {
    /// `MPI_Ibcast`.
    fn MPI_Ibcast / PMPI_Ibcast, MPI_Ibcast_c / PMPI_Ibcast_c(buffer: *mut c_void, count: Int, datatype: c_int, root: c_int, comm: c_int, request: *mut c_int) {
        widen!(count);
        if is_inter(NAME, comm)? {
            // SAFETY: MPI's rules for the buffers and arrays.
            return unsafe { inter::bcast(NAME, (buffer, count, datatype), root, comm, request) };
        }
        start_bcast(NAME, buffer, count, datatype, root, comm, Start::Request(request))
    }
}

/// `MPI_Ireduce`; `MPI_IN_PLACE` as the root's send buffer.
#[allow(clippy::too_many_arguments)]
pub(super) fn start_reduce(
    call: &str,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: Count,
    datatype: c_int,
    op: c_int,
    root: c_int,
    comm: c_int,
    to: Start,
) -> Result<()> {
    let user = user_op(op)?;
    start(call, comm, to, |c| {
        let handle = datatype;
        let datatype = types::committed(datatype)?;
        let root = root_rank(root, c)?;
        let is_root = c.rank() == root;
        if !is_root && in_place(sendbuf) {
            return Err(MpiError::new(class::BUFFER, "MPI_IN_PLACE as the send buffer of a rank that is not the root"));
        }
        let (combine, commutative) = combine_of(op, user, handle, &datatype)?;
        if is_root {
            separate(sendbuf, count, handle, Region::of("recvbuf", recvbuf, count_of(count, call)?, &datatype))?;
        }
        // SAFETY: MPI's rules for the buffers.
        let data = unsafe { reduction_input(sendbuf, recvbuf, count, &datatype, call)? };
        let landing = match is_root {
            true => Landing::whole(recvbuf, count_of(count, call)?, &datatype),
            false => Landing::none(),
        };
        Ok((NonBlocking::Reduce { root, data, combine, commutative }, landing))
    })
}

counted_fn! {
    /// `MPI_Ireduce`; `MPI_IN_PLACE` as the root's send buffer.
    fn MPI_Ireduce / PMPI_Ireduce, MPI_Ireduce_c / PMPI_Ireduce_c(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: Int,
        datatype: c_int,
        op: c_int,
        root: c_int,
        comm: c_int,
        request: *mut c_int,
    ) {
        widen!(count);
        if is_inter(NAME, comm)? {
            // SAFETY: MPI's rules for the buffers and arrays.
            return unsafe { inter::reduce(NAME, (sendbuf, recvbuf), count, datatype, op, root, comm, request) };
        }
        start_reduce(NAME, sendbuf, recvbuf, count, datatype, op, root, comm, Start::Request(request))
    }
}

/// A reduction whose result has its input's shape, at every rank
/// (allreduce, scan, exscan): `what` makes the collective of the packed
/// input, the combination and whether it commutes.
#[allow(clippy::too_many_arguments)]
fn whole_reduction(
    call: &str,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: Count,
    datatype: c_int,
    op: c_int,
    comm: c_int,
    to: Start,
    what: impl FnOnce(Vec<u8>, Combine, bool) -> NonBlocking,
) -> Result<()> {
    let user = user_op(op)?;
    start(call, comm, to, |_| {
        let handle = datatype;
        let datatype = types::committed(datatype)?;
        let (combine, commutative) = combine_of(op, user, handle, &datatype)?;
        let n = count_of(count, call)?;
        separate(sendbuf, count, handle, Region::of("recvbuf", recvbuf, n, &datatype))?;
        // SAFETY: MPI's rules for the buffers.
        let data = unsafe { reduction_input(sendbuf, recvbuf, count, &datatype, call)? };
        Ok((what(data, combine, commutative), Landing::whole(recvbuf, n, &datatype)))
    })
}

/// `MPI_Iallreduce`; `MPI_IN_PLACE` as the send buffer.
#[allow(clippy::too_many_arguments)]
pub(super) fn start_allreduce(
    call: &str,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: Count,
    datatype: c_int,
    op: c_int,
    comm: c_int,
    to: Start,
) -> Result<()> {
    let what = |data, combine, commutative| NonBlocking::Allreduce { data, combine, commutative };
    whole_reduction(call, sendbuf, recvbuf, count, datatype, op, comm, to, what)
}

counted_fn! {
    /// `MPI_Iallreduce`; `MPI_IN_PLACE` as the send buffer.
    fn MPI_Iallreduce / PMPI_Iallreduce, MPI_Iallreduce_c / PMPI_Iallreduce_c(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: Int,
        datatype: c_int,
        op: c_int,
        comm: c_int,
        request: *mut c_int,
    ) {
        widen!(count);
        if is_inter(NAME, comm)? {
            // SAFETY: MPI's rules for the buffers and arrays.
            return unsafe { inter::allreduce(NAME, (sendbuf, recvbuf), count, datatype, op, comm, request) };
        }
        start_allreduce(NAME, sendbuf, recvbuf, count, datatype, op, comm, Start::Request(request))
    }
}

/// `MPI_Iscan` and `MPI_Iexscan`.
#[allow(clippy::too_many_arguments)]
pub(super) fn scan(
    call: &str,
    exclusive: bool,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: Count,
    datatype: c_int,
    op: c_int,
    comm: c_int,
    to: Start,
) -> Result<()> {
    let what = |data, combine, _| NonBlocking::Scan { data, combine, exclusive };
    whole_reduction(call, sendbuf, recvbuf, count, datatype, op, comm, to, what)
}

counted_fn! {
    /// `MPI_Iscan`.
    fn MPI_Iscan / PMPI_Iscan, MPI_Iscan_c / PMPI_Iscan_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: Int, datatype: c_int, op: c_int, comm: c_int, request: *mut c_int) {
        widen!(count);
        scan(NAME, false, sendbuf, recvbuf, count, datatype, op, comm, Start::Request(request))
    }
}

counted_fn! {
    /// `MPI_Iexscan`: rank 0's receive buffer is left as it was.
    fn MPI_Iexscan / PMPI_Iexscan, MPI_Iexscan_c / PMPI_Iexscan_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: Int, datatype: c_int, op: c_int, comm: c_int, request: *mut c_int) {
        widen!(count);
        scan(NAME, true, sendbuf, recvbuf, count, datatype, op, comm, Start::Request(request))
    }
}

/// `MPI_Ireduce_scatter` (`recvcounts` per rank) and its `_block` form.
#[allow(clippy::too_many_arguments)]
pub(super) fn reduce_scatter(
    call: &str,
    counts: impl FnOnce(&Communicator) -> Result<Vec<Count>>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    datatype: c_int,
    op: c_int,
    comm: c_int,
    to: Start,
) -> Result<()> {
    let user = user_op(op)?;
    start(call, comm, to, |c| {
        let handle = datatype;
        let datatype = types::committed(datatype)?;
        let counts = counts(c)?;
        let total = counts.iter().try_fold(0 as Count, |sum, &n| sum.checked_add(n));
        let total = total.ok_or_else(|| MpiError::new(class::COUNT, format!("{call}: the counts overflow")))?;
        let (combine, _) = combine_of(op, user, handle, &datatype)?;
        separate(sendbuf, total, handle, Region::of("recvbuf", recvbuf, counts[c.rank()] as usize, &datatype))?;
        // SAFETY: MPI's rules for the buffers (in place, the receive buffer holds the input).
        let data = unsafe { reduction_input(sendbuf, recvbuf, total, &datatype, call)? };
        let landing = Landing::whole(recvbuf, counts[c.rank()] as usize, &datatype);
        let counts = packed_counts(&counts, &datatype);
        Ok((NonBlocking::ReduceScatter { data, counts, combine }, landing))
    })
}

counted_fn! {
    /// `MPI_Ireduce_scatter`.
    fn MPI_Ireduce_scatter / PMPI_Ireduce_scatter, MPI_Ireduce_scatter_c / PMPI_Ireduce_scatter_c(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        recvcounts: *const Int,
        datatype: c_int,
        op: c_int,
        comm: c_int,
        request: *mut c_int,
    ) {
        widen!(recvcounts);
        if is_inter(NAME, comm)? {
            // SAFETY: MPI's rules for the buffers and arrays.
            return unsafe { inter::reduce_scatter(NAME, (sendbuf, recvbuf), (Some(recvcounts), 0), datatype, op, comm, request) };
        }
        // SAFETY: one count per rank, as MPI requires.
        let counts = |c: &Communicator| unsafe { ints(recvcounts, c.size(), "recvcounts") };
        reduce_scatter(NAME, counts, sendbuf, recvbuf, datatype, op, comm, Start::Request(request))
    }
}

counted_fn! {
    /// `MPI_Ireduce_scatter_block`.
    fn MPI_Ireduce_scatter_block / PMPI_Ireduce_scatter_block, MPI_Ireduce_scatter_block_c / PMPI_Ireduce_scatter_block_c(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        recvcount: Int,
        datatype: c_int,
        op: c_int,
        comm: c_int,
        request: *mut c_int,
    ) {
        widen!(recvcount);
        if is_inter(NAME, comm)? {
            // SAFETY: MPI's rules for the buffers and arrays.
            return unsafe { inter::reduce_scatter(NAME, (sendbuf, recvbuf), (None, recvcount), datatype, op, comm, request) };
        }
        let counts = |c: &Communicator| Ok(vec![count_of(recvcount, NAME)? as Count; c.size()]);
        reduce_scatter(NAME, counts, sendbuf, recvbuf, datatype, op, comm, Start::Request(request))
    }
}

/// `MPI_Igather`; `MPI_IN_PLACE` as the root's send buffer.
#[allow(clippy::too_many_arguments)]
pub(super) fn start_gather(
    call: &str,
    sendbuf: *const c_void,
    sendcount: Count,
    sendtype: c_int,
    recvbuf: *mut c_void,
    recvcount: Count,
    recvtype: c_int,
    root: c_int,
    comm: c_int,
    to: Start,
) -> Result<()> {
    start(call, comm, to, |c| {
        let root = root_rank(root, c)?;
        if c.rank() != root {
            let sendtype = types::committed(sendtype)?;
            // SAFETY: MPI's rule for the send buffer.
            let data = unsafe { outgoing(sendbuf, sendcount, &sendtype, call)? }.into_owned();
            return Ok((NonBlocking::Gather { root, data, counts: Vec::new() }, Landing::none()));
        }
        let recvtype = types::committed(recvtype)?;
        let n = count_of(recvcount, call)?;
        separate(sendbuf, sendcount, sendtype, Region::of("recvbuf", recvbuf, n * c.size(), &recvtype))?;
        // SAFETY: MPI's rules for the buffers at the root.
        let data =
            unsafe { contribution(sendbuf, sendcount, sendtype, recvbuf, root * n, recvcount, &recvtype, call)? }
                .into_owned();
        let counts = vec![recvtype.packed_len(n); c.size()];
        Ok((NonBlocking::Gather { root, data, counts }, Landing::whole(recvbuf, n * c.size(), &recvtype)))
    })
}

counted_fn! {
    /// `MPI_Igather`; `MPI_IN_PLACE` as the root's send buffer.
    fn MPI_Igather / PMPI_Igather, MPI_Igather_c / PMPI_Igather_c(
        sendbuf: *const c_void,
        sendcount: Int,
        sendtype: c_int,
        recvbuf: *mut c_void,
        recvcount: Int,
        recvtype: c_int,
        root: c_int,
        comm: c_int,
        request: *mut c_int,
    ) {
        widen!(sendcount, recvcount);
        if is_inter(NAME, comm)? {
            // SAFETY: MPI's rules for the buffers and arrays.
            return unsafe { inter::gather(NAME, (sendbuf, sendcount, sendtype), (recvbuf, Blocks::Each(recvcount), recvtype), root, comm, request) };
        }
        start_gather(NAME, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, Start::Request(request))
    }
}

/// `MPI_Igatherv`.
#[allow(clippy::too_many_arguments)]
pub(super) fn start_gatherv(
    call: &str,
    sendbuf: *const c_void,
    sendcount: Count,
    sendtype: c_int,
    recvbuf: *mut c_void,
    recvcounts: CountArray,
    displs: CountArray,
    recvtype: c_int,
    root: c_int,
    comm: c_int,
    to: Start,
) -> Result<()> {
    start(call, comm, to, |c| {
        let root = root_rank(root, c)?;
        if c.rank() != root {
            let sendtype = types::committed(sendtype)?;
            // SAFETY: MPI's rule for the send buffer.
            let data = unsafe { outgoing(sendbuf, sendcount, &sendtype, call)? }.into_owned();
            return Ok((NonBlocking::Gather { root, data, counts: Vec::new() }, Landing::none()));
        }
        let recvtype = types::committed(recvtype)?;
        // SAFETY: arrays of one entry per rank, as MPI requires at the root.
        let (counts, displs) =
            unsafe { (ints(recvcounts, c.size(), "recvcounts")?, ints(displs, c.size(), "displs")?) };
        separate(sendbuf, sendcount, sendtype, Region::of_blocks("recvbuf", recvbuf, &counts, &displs, &recvtype))?;
        // SAFETY: MPI's rules for the buffers at the root.
        let data = unsafe {
            let at = displs[root] as usize;
            contribution(sendbuf, sendcount, sendtype, recvbuf, at, counts[root], &recvtype, call)?
        }
        .into_owned();
        let landing = Landing::blocks(recvbuf, &counts, &displs, &recvtype);
        Ok((NonBlocking::Gather { root, data, counts: packed_counts(&counts, &recvtype) }, landing))
    })
}

counted_fn! {
    /// `MPI_Igatherv`.
    fn MPI_Igatherv / PMPI_Igatherv, MPI_Igatherv_c / PMPI_Igatherv_c(
        sendbuf: *const c_void,
        sendcount: Int,
        sendtype: c_int,
        recvbuf: *mut c_void,
        recvcounts: *const Int,
        displs: *const Disp,
        recvtype: c_int,
        root: c_int,
        comm: c_int,
        request: *mut c_int,
    ) {
        widen!(sendcount, recvcounts, displs);
        if is_inter(NAME, comm)? {
            // SAFETY: MPI's rules for the buffers and arrays.
            return unsafe { inter::gather(NAME, (sendbuf, sendcount, sendtype), (recvbuf, Blocks::PerRank(recvcounts, displs), recvtype), root, comm, request) };
        }
        start_gatherv(NAME, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm, Start::Request(request))
    }
}

/// This rank's block of a scatter: its packed length and where it lands
/// (nowhere for the root's `MPI_IN_PLACE`).
fn scatter_target(
    recvbuf: *mut c_void,
    recvcount: Count,
    recvtype: c_int,
    root_block: Option<usize>,
    call: &str,
) -> Result<(usize, Landing)> {
    if let (Some(own), true) = (root_block, in_place(recvbuf)) {
        return Ok((own, Landing::none()));
    }
    let recvtype = types::committed(recvtype)?;
    let n = count_of(recvcount, call)?;
    Ok((recvtype.packed_len(n), Landing::whole(recvbuf, n, &recvtype)))
}

/// `MPI_Iscatter`; `MPI_IN_PLACE` as the root's receive buffer.
#[allow(clippy::too_many_arguments)]
pub(super) fn start_scatter(
    call: &str,
    sendbuf: *const c_void,
    sendcount: Count,
    sendtype: c_int,
    recvbuf: *mut c_void,
    recvcount: Count,
    recvtype: c_int,
    root: c_int,
    comm: c_int,
    to: Start,
) -> Result<()> {
    start(call, comm, to, |c| {
        let root = root_rank(root, c)?;
        if c.rank() != root {
            let (mine, landing) = scatter_target(recvbuf, recvcount, recvtype, None, call)?;
            return Ok((NonBlocking::Scatter { root, data: Vec::new(), counts: Vec::new(), mine }, landing));
        }
        let sendtype = types::committed(sendtype)?;
        let n = count_of(sendcount, call)?;
        let all = (n * c.size()) as Count;
        scattered(Region::of("sendbuf", sendbuf, n * c.size(), &sendtype), recvbuf, recvcount, recvtype)?;
        // SAFETY: the root's send buffer holds a block per rank.
        let data = unsafe { outgoing(sendbuf, all, &sendtype, call)? }.into_owned();
        let block = sendtype.packed_len(n);
        let (mine, landing) = scatter_target(recvbuf, recvcount, recvtype, Some(block), call)?;
        Ok((NonBlocking::Scatter { root, data, counts: vec![block; c.size()], mine }, landing))
    })
}

counted_fn! {
    /// `MPI_Iscatter`; `MPI_IN_PLACE` as the root's receive buffer.
    fn MPI_Iscatter / PMPI_Iscatter, MPI_Iscatter_c / PMPI_Iscatter_c(
        sendbuf: *const c_void,
        sendcount: Int,
        sendtype: c_int,
        recvbuf: *mut c_void,
        recvcount: Int,
        recvtype: c_int,
        root: c_int,
        comm: c_int,
        request: *mut c_int,
    ) {
        widen!(sendcount, recvcount);
        if is_inter(NAME, comm)? {
            // SAFETY: MPI's rules for the buffers and arrays.
            return unsafe { inter::scatter(NAME, (sendbuf, Blocks::Each(sendcount), sendtype), (recvbuf, recvcount, recvtype), root, comm, request) };
        }
        start_scatter(NAME, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, Start::Request(request))
    }
}

/// `MPI_Iscatterv`.
#[allow(clippy::too_many_arguments)]
pub(super) fn start_scatterv(
    call: &str,
    sendbuf: *const c_void,
    sendcounts: CountArray,
    displs: CountArray,
    sendtype: c_int,
    recvbuf: *mut c_void,
    recvcount: Count,
    recvtype: c_int,
    root: c_int,
    comm: c_int,
    to: Start,
) -> Result<()> {
    start(call, comm, to, |c| {
        let root = root_rank(root, c)?;
        if c.rank() != root {
            let (mine, landing) = scatter_target(recvbuf, recvcount, recvtype, None, call)?;
            return Ok((NonBlocking::Scatter { root, data: Vec::new(), counts: Vec::new(), mine }, landing));
        }
        let sendtype = types::committed(sendtype)?;
        // SAFETY: arrays of one entry per rank, as MPI requires at the root.
        let (counts, displs) =
            unsafe { (ints(sendcounts, c.size(), "sendcounts")?, ints(displs, c.size(), "displs")?) };
        scattered(Region::of_blocks("sendbuf", sendbuf, &counts, &displs, &sendtype), recvbuf, recvcount, recvtype)?;
        // SAFETY: the root's send buffer holds every block.
        let data = unsafe { pack_blocks(sendbuf, &counts, &displs, &sendtype) };
        let counts = packed_counts(&counts, &sendtype);
        let (mine, landing) = scatter_target(recvbuf, recvcount, recvtype, Some(counts[root]), call)?;
        Ok((NonBlocking::Scatter { root, data, counts, mine }, landing))
    })
}

counted_fn! {
    /// `MPI_Iscatterv`.
    fn MPI_Iscatterv / PMPI_Iscatterv, MPI_Iscatterv_c / PMPI_Iscatterv_c(
        sendbuf: *const c_void,
        sendcounts: *const Int,
        displs: *const Disp,
        sendtype: c_int,
        recvbuf: *mut c_void,
        recvcount: Int,
        recvtype: c_int,
        root: c_int,
        comm: c_int,
        request: *mut c_int,
    ) {
        widen!(sendcounts, displs, recvcount);
        if is_inter(NAME, comm)? {
            // SAFETY: MPI's rules for the buffers and arrays.
            return unsafe { inter::scatter(NAME, (sendbuf, Blocks::PerRank(sendcounts, displs), sendtype), (recvbuf, recvcount, recvtype), root, comm, request) };
        }
        start_scatterv(NAME, sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm, Start::Request(request))
    }
}

/// `MPI_Iallgather`; `MPI_IN_PLACE` as the send buffer.
#[allow(clippy::too_many_arguments)]
pub(super) fn start_allgather(
    call: &str,
    sendbuf: *const c_void,
    sendcount: Count,
    sendtype: c_int,
    recvbuf: *mut c_void,
    recvcount: Count,
    recvtype: c_int,
    comm: c_int,
    to: Start,
) -> Result<()> {
    start(call, comm, to, |c| {
        let recvtype = types::committed(recvtype)?;
        let n = count_of(recvcount, call)?;
        separate(sendbuf, sendcount, sendtype, Region::of("recvbuf", recvbuf, n * c.size(), &recvtype))?;
        // SAFETY: MPI's rules for the buffers.
        let data =
            unsafe { contribution(sendbuf, sendcount, sendtype, recvbuf, c.rank() * n, recvcount, &recvtype, call)? }
                .into_owned();
        let counts = vec![recvtype.packed_len(n); c.size()];
        Ok((NonBlocking::Allgather { data, counts }, Landing::whole(recvbuf, n * c.size(), &recvtype)))
    })
}

counted_fn! {
    /// `MPI_Iallgather`; `MPI_IN_PLACE` as the send buffer.
    fn MPI_Iallgather / PMPI_Iallgather, MPI_Iallgather_c / PMPI_Iallgather_c(
        sendbuf: *const c_void,
        sendcount: Int,
        sendtype: c_int,
        recvbuf: *mut c_void,
        recvcount: Int,
        recvtype: c_int,
        comm: c_int,
        request: *mut c_int,
    ) {
        widen!(sendcount, recvcount);
        if is_inter(NAME, comm)? {
            // SAFETY: MPI's rules for the buffers and arrays.
            return unsafe { inter::allgather(NAME, (sendbuf, sendcount, sendtype), (recvbuf, Blocks::Each(recvcount), recvtype), comm, request) };
        }
        start_allgather(NAME, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, Start::Request(request))
    }
}

/// `MPI_Iallgatherv`.
#[allow(clippy::too_many_arguments)]
pub(super) fn start_allgatherv(
    call: &str,
    sendbuf: *const c_void,
    sendcount: Count,
    sendtype: c_int,
    recvbuf: *mut c_void,
    recvcounts: CountArray,
    displs: CountArray,
    recvtype: c_int,
    comm: c_int,
    to: Start,
) -> Result<()> {
    start(call, comm, to, |c| {
        let recvtype = types::committed(recvtype)?;
        // SAFETY: arrays of one entry per rank, as MPI requires.
        let (counts, displs) =
            unsafe { (ints(recvcounts, c.size(), "recvcounts")?, ints(displs, c.size(), "displs")?) };
        let me = c.rank();
        separate(sendbuf, sendcount, sendtype, Region::of_blocks("recvbuf", recvbuf, &counts, &displs, &recvtype))?;
        // SAFETY: MPI's rules for the buffers.
        let data = unsafe {
            contribution(sendbuf, sendcount, sendtype, recvbuf, displs[me] as usize, counts[me], &recvtype, call)?
        }
        .into_owned();
        let landing = Landing::blocks(recvbuf, &counts, &displs, &recvtype);
        Ok((NonBlocking::Allgather { data, counts: packed_counts(&counts, &recvtype) }, landing))
    })
}

counted_fn! {
    /// `MPI_Iallgatherv`.
    fn MPI_Iallgatherv / PMPI_Iallgatherv, MPI_Iallgatherv_c / PMPI_Iallgatherv_c(
        sendbuf: *const c_void,
        sendcount: Int,
        sendtype: c_int,
        recvbuf: *mut c_void,
        recvcounts: *const Int,
        displs: *const Disp,
        recvtype: c_int,
        comm: c_int,
        request: *mut c_int,
    ) {
        widen!(sendcount, recvcounts, displs);
        if is_inter(NAME, comm)? {
            // SAFETY: MPI's rules for the buffers and arrays.
            return unsafe { inter::allgather(NAME, (sendbuf, sendcount, sendtype), (recvbuf, Blocks::PerRank(recvcounts, displs), recvtype), comm, request) };
        }
        start_allgatherv(NAME, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, Start::Request(request))
    }
}

/// `MPI_Ialltoall`; `MPI_IN_PLACE` as the send buffer.
#[allow(clippy::too_many_arguments)]
pub(super) fn start_alltoall(
    call: &str,
    sendbuf: *const c_void,
    sendcount: Count,
    sendtype: c_int,
    recvbuf: *mut c_void,
    recvcount: Count,
    recvtype: c_int,
    comm: c_int,
    to: Start,
) -> Result<()> {
    start(call, comm, to, |c| {
        let p = c.size();
        let recvtype = types::committed(recvtype)?;
        let n = count_of(recvcount, call)?;
        let (data, block) = if in_place(sendbuf) {
            // SAFETY: the receive buffer holds the data to send.
            let data = unsafe { outgoing(recvbuf, (n * p) as Count, &recvtype, call)? }.into_owned();
            (data, recvtype.packed_len(n))
        } else {
            let sendtype = types::committed(sendtype)?;
            let m = count_of(sendcount, call)?;
            disjoint(
                &Region::of("sendbuf", sendbuf, m * p, &sendtype),
                &Region::of("recvbuf", recvbuf, n * p, &recvtype),
            )?;
            // SAFETY: the send buffer holds a block per rank.
            let data = unsafe { outgoing(sendbuf, (m * p) as Count, &sendtype, call)? }.into_owned();
            (data, sendtype.packed_len(m))
        };
        let what =
            NonBlocking::Alltoall { data, send_counts: vec![block; p], recv_counts: vec![recvtype.packed_len(n); p] };
        Ok((what, Landing::whole(recvbuf, n * p, &recvtype)))
    })
}

counted_fn! {
    /// `MPI_Ialltoall`; `MPI_IN_PLACE` as the send buffer.
    fn MPI_Ialltoall / PMPI_Ialltoall, MPI_Ialltoall_c / PMPI_Ialltoall_c(
        sendbuf: *const c_void,
        sendcount: Int,
        sendtype: c_int,
        recvbuf: *mut c_void,
        recvcount: Int,
        recvtype: c_int,
        comm: c_int,
        request: *mut c_int,
    ) {
        widen!(sendcount, recvcount);
        if is_inter(NAME, comm)? {
            // SAFETY: MPI's rules for the buffers and arrays.
            return unsafe { inter::alltoall(NAME, (sendbuf, sendcount, sendtype), (recvbuf, recvcount, recvtype), comm, request) };
        }
        start_alltoall(NAME, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, Start::Request(request))
    }
}

/// `MPI_Ialltoallv`.
#[allow(clippy::too_many_arguments)]
pub(super) fn start_alltoallv(
    call: &str,
    sendbuf: *const c_void,
    sendcounts: CountArray,
    sdispls: CountArray,
    sendtype: c_int,
    recvbuf: *mut c_void,
    recvcounts: CountArray,
    rdispls: CountArray,
    recvtype: c_int,
    comm: c_int,
    to: Start,
) -> Result<()> {
    start(call, comm, to, |c| {
        // SAFETY: MPI's rules for the arrays and buffers.
        let x = unsafe {
            alltoallv_exchange(
                c.size(),
                sendbuf,
                sendcounts,
                sdispls,
                sendtype,
                recvbuf,
                recvcounts,
                rdispls,
                recvtype,
            )?
        };
        Ok((NonBlocking::Alltoall { data: x.send, send_counts: x.send_counts, recv_counts: x.recv_counts }, x.landing))
    })
}

counted_fn! {
    /// `MPI_Ialltoallv`.
    fn MPI_Ialltoallv / PMPI_Ialltoallv, MPI_Ialltoallv_c / PMPI_Ialltoallv_c(
        sendbuf: *const c_void,
        sendcounts: *const Int,
        sdispls: *const Disp,
        sendtype: c_int,
        recvbuf: *mut c_void,
        recvcounts: *const Int,
        rdispls: *const Disp,
        recvtype: c_int,
        comm: c_int,
        request: *mut c_int,
    ) {
        widen!(sendcounts, sdispls, recvcounts, rdispls);
        if is_inter(NAME, comm)? {
            // SAFETY: MPI's rules for the arrays and buffers.
            let exchange = |n| unsafe { alltoallv_exchange(n, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype) };
            return inter::alltoall_blocks(NAME, sendbuf, comm, request, exchange);
        }
        start_alltoallv(NAME, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm, Start::Request(request))
    }
}

/// `MPI_Ialltoallw`: a datatype per peer, displacements in bytes.
#[allow(clippy::too_many_arguments)]
pub(super) fn start_alltoallw(
    call: &str,
    sendbuf: *const c_void,
    sendcounts: CountArray,
    sdispls: CountArray,
    sendtypes: *const c_int,
    recvbuf: *mut c_void,
    recvcounts: CountArray,
    rdispls: CountArray,
    recvtypes: *const c_int,
    comm: c_int,
    to: Start,
) -> Result<()> {
    start(call, comm, to, |c| {
        // SAFETY: MPI's rules for the arrays and buffers.
        let x = unsafe {
            alltoallw_exchange(
                c.size(),
                sendbuf,
                sendcounts,
                sdispls,
                sendtypes,
                recvbuf,
                recvcounts,
                rdispls,
                recvtypes,
            )?
        };
        Ok((NonBlocking::Alltoall { data: x.send, send_counts: x.send_counts, recv_counts: x.recv_counts }, x.landing))
    })
}

counted_fn! {
    /// `MPI_Ialltoallw`: a datatype per peer, displacements in bytes.
    fn MPI_Ialltoallw / PMPI_Ialltoallw, MPI_Ialltoallw_c / PMPI_Ialltoallw_c(
        sendbuf: *const c_void,
        sendcounts: *const Int,
        sdispls: *const Disp,
        sendtypes: *const c_int,
        recvbuf: *mut c_void,
        recvcounts: *const Int,
        rdispls: *const Disp,
        recvtypes: *const c_int,
        comm: c_int,
        request: *mut c_int,
    ) {
        widen!(sendcounts, sdispls, recvcounts, rdispls);
        if is_inter(NAME, comm)? {
            // SAFETY: MPI's rules for the arrays and buffers.
            let exchange = |n| unsafe { alltoallw_exchange(n, sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes) };
            return inter::alltoall_blocks(NAME, sendbuf, comm, request, exchange);
        }
        start_alltoallw(NAME, sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm, Start::Request(request))
    }
}
