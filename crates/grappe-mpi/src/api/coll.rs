//! Collectives: every blocking one, with their v-variants and
//! `MPI_IN_PLACE`, over grappe's collectives (shared-memory arenas and
//! message algorithms). Data moves packed (see [`crate::types`]): in
//! place when a buffer's elements lie end to end, through one copy
//! otherwise; reductions run on the Rust type of the datatype's
//! predefined elements.

use std::borrow::Cow;
use std::ffi::{c_int, c_void};

use grappe_comm::{CollectiveKind, Communicator};
use grappe_comm::{Deliver, Operation};

use crate::abi::{self, class};
use crate::errors::{MpiError, Result};
use crate::reduce::{Element, OpCode, Predefined, Typed, UserFn, UserOp, typed, with_type, with_typed_mut};
use crate::state;
use crate::types::{self, Type};
use crate::waiting;
use crate::{counted_fn, mpi_fn};

use super::icoll::{self, Start};
use super::{Count, CountArray, Incoming, count_of, incoming, outgoing, widen};

/// `MPI_IN_PLACE`?
pub(super) fn in_place(buf: *const c_void) -> bool {
    buf as usize == abi::IN_PLACE
}

/// A root rank of `comm`.
pub(super) fn root_rank(root: c_int, comm: &Communicator) -> Result<usize> {
    match root {
        r if r < 0 || r as usize >= comm.size() => Err(MpiError::new(
            class::ROOT,
            format!("root {root} is not a rank of the communicator (size {})", comm.size()),
        )),
        r => Ok(r as usize),
    }
}

/// `n` counts (or displacements) of a C array, each checked non-negative.
///
/// # Safety
/// `array` holds `n` values.
pub(super) unsafe fn ints(array: CountArray, n: usize, what: &str) -> Result<Vec<Count>> {
    // SAFETY: `n` values, as the caller promised (MPI: one per rank).
    let values = unsafe { array.values(n, what)? };
    if let Some((rank, value)) = values.iter().enumerate().find(|(_, v)| **v < 0) {
        return Err(MpiError::new(class::COUNT, format!("{what}[{rank}] is negative: {value}")));
    }
    Ok(values)
}

/// The address of element `index` of `datatype` at `buf`.
pub(super) fn element(buf: *const c_void, index: usize, datatype: &Type) -> *const c_void {
    buf.cast::<u8>().wrapping_offset(index as isize * datatype.extent()).cast()
}

/// Packed lengths of blocks of `counts` elements of `datatype`.
pub(super) fn packed_counts(counts: &[Count], datatype: &Type) -> Vec<usize> {
    counts.iter().map(|&c| datatype.packed_len(c as usize)).collect()
}

/// Whether blocks of `counts` elements at `displs` lie end to end, so that
/// the buffer from its start is their elements in order.
fn end_to_end(counts: &[Count], displs: &[Count]) -> bool {
    let mut next = 0i64;
    counts.iter().zip(displs).all(|(&c, &d)| {
        let ok = d == next || c == 0;
        next = d + c;
        ok
    })
}

/// The packed data of blocks of `counts[r]` elements at `displs[r]`.
///
/// # Safety
/// `buf` holds every block, readable.
pub(super) unsafe fn pack_blocks(buf: *const c_void, counts: &[Count], displs: &[Count], datatype: &Type) -> Vec<u8> {
    let mut packed = Vec::with_capacity(packed_counts(counts, datatype).iter().sum());
    for (&count, &displ) in counts.iter().zip(displs) {
        // SAFETY: the block is in the caller's buffer, as MPI requires.
        unsafe { datatype.pack(element(buf, displ as usize, datatype).cast(), count as usize, &mut packed) };
    }
    packed
}

/// Writes packed blocks to their elements at `displs[r]`.
///
/// # Safety
/// `buf` holds every block, writable.
unsafe fn unpack_blocks(packed: &[u8], buf: *mut c_void, counts: &[Count], displs: &[Count], datatype: &Type) {
    let mut at = 0;
    for (&count, &displ) in counts.iter().zip(displs) {
        let len = datatype.packed_len(count as usize);
        let to = element(buf, displ as usize, datatype).cast_mut().cast();
        // SAFETY: the block is in the caller's buffer, as MPI requires.
        unsafe { datatype.unpack(&packed[at..at + len], to) };
        at += len;
    }
}

/// Runs a collective on communicator `comm` under the state's lock,
/// its errors handled by that communicator.
fn on_comm(call: &str, comm: c_int, body: impl FnOnce(&Communicator) -> Result<()>) -> Result<()> {
    let state = state::lock(call)?;
    let entry = state.intra(comm)?;
    body(&entry.comm).map_err(|e| e.on(comm))
}

pub(super) fn engine(e: grappe_comm::Error) -> MpiError {
    MpiError::from(e)
}

/// The send data of a rank's contribution: `MPI_IN_PLACE` takes it from
/// element `at` of the receive buffer.
///
/// # Safety
/// The buffers hold their elements, as MPI requires.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn contribution<'a>(
    sendbuf: *const c_void,
    sendcount: Count,
    sendtype: c_int,
    recvbuf: *const c_void,
    at: usize,
    recvcount: Count,
    recvtype: &Type,
    call: &str,
) -> Result<Cow<'a, [u8]>> {
    if in_place(sendbuf) {
        // SAFETY: the rank's block of the receive buffer, as MPI requires.
        let own = unsafe { outgoing(element(recvbuf, at, recvtype), recvcount, recvtype, call)? };
        return Ok(Cow::Owned(own.into_owned()));
    }
    let sendtype = types::committed(sendtype)?;
    // SAFETY: MPI's rule for the send buffer.
    unsafe { outgoing(sendbuf, sendcount, &sendtype, call) }
}

/// Refuses a root's receive buffer (unless `MPI_IN_PLACE`) overlapping
/// its send buffer `sent` (see [`disjoint`]).
pub(super) fn scattered(sent: Region, recvbuf: *const c_void, recvcount: Count, recvtype: c_int) -> Result<()> {
    if in_place(recvbuf) {
        return Ok(());
    }
    let recvtype = types::committed(recvtype)?;
    disjoint(&sent, &Region::of("recvbuf", recvbuf, count_of(recvcount, "recvcount")?, &recvtype))
}

/// Refuses a send buffer (unless `MPI_IN_PLACE`) overlapping the receive
/// buffer `recv` (see [`disjoint`]).
pub(super) fn separate(sendbuf: *const c_void, sendcount: Count, sendtype: c_int, recv: Region) -> Result<()> {
    if in_place(sendbuf) {
        return Ok(());
    }
    let sendtype = types::committed(sendtype)?;
    disjoint(&Region::of("sendbuf", sendbuf, count_of(sendcount, "sendcount")?, &sendtype), &recv)
}

mpi_fn! {
    /// `MPI_Barrier`.
    fn MPI_Barrier / PMPI_Barrier(comm: c_int) {
        if let Some(parts) = crate::api::intercomm::parts("MPI_Barrier", comm)? {
            return crate::api::intercomm::barrier(parts).map_err(|e| e.on(comm));
        }
        if waiting::collectives_as_requests() {
            return icoll::start_barrier("MPI_Barrier", comm, Start::Blocking(CollectiveKind::Barrier));
        }
        on_comm("MPI_Barrier", comm, |c| c.barrier().map_err(engine))
    }
}

counted_fn! {
    /// `MPI_Bcast`.
    fn MPI_Bcast / PMPI_Bcast, MPI_Bcast_c / PMPI_Bcast_c(buffer: *mut c_void, count: Int, datatype: c_int, root: c_int, comm: c_int) {
        widen!(count);
        if let Some(parts) = crate::api::intercomm::parts(NAME, comm)? {
            // SAFETY: MPI's rule for the buffer.
            return unsafe { crate::api::intercomm::bcast(parts, buffer, count, datatype, root) }.map_err(|e| e.on(comm));
        }
        if waiting::collectives_as_requests() {
            return icoll::start_bcast(NAME, buffer, count, datatype, root, comm, Start::Blocking(CollectiveKind::Bcast));
        }
        on_comm(NAME, comm, |c| {
            let datatype = types::committed(datatype)?;
            let root = root_rank(root, c)?;
            // SAFETY: MPI's rule for the buffer.
            let mut data = unsafe { incoming(buffer, count, &datatype, NAME)? };
            if c.rank() == root && data.is_packed() {
                // SAFETY: the root's elements, read before they are sent.
                let own = unsafe { outgoing(buffer, count, &datatype, NAME)? };
                data.bytes().copy_from_slice(&own);
            }
            let len = data.bytes().len();
            c.bcast(data.bytes(), root).map_err(engine)?;
            if c.rank() != root {
                data.finish(len);
            }
            Ok(())
        })
    }
}

counted_fn! {
    /// `MPI_Gather`; `MPI_IN_PLACE` as the root's send buffer.
    fn MPI_Gather / PMPI_Gather, MPI_Gather_c / PMPI_Gather_c(
        sendbuf: *const c_void,
        sendcount: Int,
        sendtype: c_int,
        recvbuf: *mut c_void,
        recvcount: Int,
        recvtype: c_int,
        root: c_int,
        comm: c_int,
    ) {
        widen!(sendcount, recvcount);
        if let Some(parts) = crate::api::intercomm::parts(NAME, comm)? {
            let (send, recv) = ((sendbuf, sendcount, sendtype), (recvbuf, recvcount, recvtype));
            // SAFETY: MPI's rules for the buffers.
            return unsafe { crate::api::intercomm::gather(parts, send, recv, root) }.map_err(|e| e.on(comm));
        }
        if waiting::collectives_as_requests() {
            return icoll::start_gather(NAME, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, Start::Blocking(CollectiveKind::Gather));
        }
        on_comm(NAME, comm, |c| {
            let root = root_rank(root, c)?;
            if c.rank() != root {
                let sendtype = types::committed(sendtype)?;
                // SAFETY: MPI's rule for the send buffer.
                let send = unsafe { outgoing(sendbuf, sendcount, &sendtype, NAME)? };
                return c.gather(&send[..], &mut [][..], root).map_err(engine);
            }
            let recvtype = types::committed(recvtype)?;
            let all = count_of(recvcount, NAME)? * c.size();
            separate(sendbuf, sendcount, sendtype, Region::of("recvbuf", recvbuf, all, &recvtype))?;
            // SAFETY: MPI's rules for the buffers at the root.
            let send = unsafe {
                let at = root * recvcount as usize;
                contribution(sendbuf, sendcount, sendtype, recvbuf, at, recvcount, &recvtype, NAME)?
            };
            // SAFETY: the root's receive buffer holds a block per rank.
            let mut recv = unsafe { incoming(recvbuf, all as Count, &recvtype, NAME)? };
            c.gather(&send[..], recv.bytes(), root).map_err(engine)?;
            recv.finish_all();
            Ok(())
        })
    }
}

counted_fn! {
    /// `MPI_Gatherv`.
    fn MPI_Gatherv / PMPI_Gatherv, MPI_Gatherv_c / PMPI_Gatherv_c(
        sendbuf: *const c_void,
        sendcount: Int,
        sendtype: c_int,
        recvbuf: *mut c_void,
        recvcounts: *const Int,
        displs: *const Disp,
        recvtype: c_int,
        root: c_int,
        comm: c_int,
    ) {
        widen!(sendcount, recvcounts, displs);
        if let Some(parts) = crate::api::intercomm::parts(NAME, comm)? {
            // SAFETY: MPI's rules for the buffers and arrays.
            return unsafe { crate::api::intercomm::gatherv(parts, (sendbuf, sendcount, sendtype), (recvbuf, recvcounts, displs, recvtype), root) }.map_err(|e| e.on(comm));
        }
        if waiting::collectives_as_requests() {
            return icoll::start_gatherv(NAME, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm, Start::Blocking(CollectiveKind::Gatherv));
        }
        on_comm(NAME, comm, |c| {
            let root = root_rank(root, c)?;
            if c.rank() != root {
                let sendtype = types::committed(sendtype)?;
                // SAFETY: MPI's rule for the send buffer.
                let send = unsafe { outgoing(sendbuf, sendcount, &sendtype, NAME)? };
                return c.gatherv(&send[..], &mut [][..], &[], root).map_err(engine);
            }
            let recvtype = types::committed(recvtype)?;
            // SAFETY: arrays of one entry per rank, as MPI requires at the root.
            let (counts, displs) = unsafe { (ints(recvcounts, c.size(), "recvcounts")?, ints(displs, c.size(), "displs")?) };
            separate(sendbuf, sendcount, sendtype, Region::of_blocks("recvbuf", recvbuf, &counts, &displs, &recvtype))?;
            // SAFETY: MPI's rules for the buffers at the root.
            let send = unsafe {
                let at = displs[root] as usize;
                contribution(sendbuf, sendcount, sendtype, recvbuf, at, counts[root], &recvtype, NAME)?
            };
            let lens = packed_counts(&counts, &recvtype);
            let mut packed = vec![0u8; lens.iter().sum()];
            c.gatherv(&send[..], &mut packed[..], &lens, root).map_err(engine)?;
            // SAFETY: the root's receive buffer holds every block.
            unsafe { unpack_blocks(&packed, recvbuf, &counts, &displs, &recvtype) };
            Ok(())
        })
    }
}

counted_fn! {
    /// `MPI_Scatter`; `MPI_IN_PLACE` as the root's receive buffer.
    fn MPI_Scatter / PMPI_Scatter, MPI_Scatter_c / PMPI_Scatter_c(
        sendbuf: *const c_void,
        sendcount: Int,
        sendtype: c_int,
        recvbuf: *mut c_void,
        recvcount: Int,
        recvtype: c_int,
        root: c_int,
        comm: c_int,
    ) {
        widen!(sendcount, recvcount);
        if let Some(parts) = crate::api::intercomm::parts(NAME, comm)? {
            let (send, recv) = ((sendbuf, sendcount, sendtype), (recvbuf, recvcount, recvtype));
            // SAFETY: MPI's rules for the buffers.
            return unsafe { crate::api::intercomm::scatter(parts, send, recv, root) }.map_err(|e| e.on(comm));
        }
        if waiting::collectives_as_requests() {
            return icoll::start_scatter(NAME, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, Start::Blocking(CollectiveKind::Scatter));
        }
        on_comm(NAME, comm, |c| {
            let root = root_rank(root, c)?;
            let is_root = c.rank() == root;
            let send: Cow<[u8]> = match is_root {
                true => {
                    let sendtype = types::committed(sendtype)?;
                    let all = count_of(sendcount, NAME)? * c.size();
                    // SAFETY: the root's send buffer holds a block per rank.
                    unsafe { outgoing(sendbuf, all as Count, &sendtype, NAME)? }
                }
                false => Cow::Borrowed(&[]),
            };
            if is_root && in_place(recvbuf) {
                let mut own = vec![0u8; send.len() / c.size()];
                return c.scatter(&send[..], &mut own[..], root).map_err(engine);
            }
            if is_root {
                let sendtype = types::committed(sendtype)?;
                let sent = Region::of("sendbuf", sendbuf, count_of(sendcount, NAME)? * c.size(), &sendtype);
                scattered(sent, recvbuf, recvcount, recvtype)?;
            }
            let recvtype = types::committed(recvtype)?;
            // SAFETY: MPI's rule for the receive buffer.
            let mut recv = unsafe { incoming(recvbuf, recvcount, &recvtype, NAME)? };
            c.scatter(&send[..], recv.bytes(), root).map_err(engine)?;
            recv.finish_all();
            Ok(())
        })
    }
}

counted_fn! {
    /// `MPI_Scatterv`.
    fn MPI_Scatterv / PMPI_Scatterv, MPI_Scatterv_c / PMPI_Scatterv_c(
        sendbuf: *const c_void,
        sendcounts: *const Int,
        displs: *const Disp,
        sendtype: c_int,
        recvbuf: *mut c_void,
        recvcount: Int,
        recvtype: c_int,
        root: c_int,
        comm: c_int,
    ) {
        widen!(sendcounts, displs, recvcount);
        if let Some(parts) = crate::api::intercomm::parts(NAME, comm)? {
            // SAFETY: MPI's rules for the buffers and arrays.
            return unsafe { crate::api::intercomm::scatterv(parts, (sendbuf, sendcounts, displs, sendtype), (recvbuf, recvcount, recvtype), root) }.map_err(|e| e.on(comm));
        }
        if waiting::collectives_as_requests() {
            return icoll::start_scatterv(NAME, sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm, Start::Blocking(CollectiveKind::Scatterv));
        }
        on_comm(NAME, comm, |c| {
            let root = root_rank(root, c)?;
            if c.rank() != root {
                let recvtype = types::committed(recvtype)?;
                // SAFETY: MPI's rule for the receive buffer.
                let mut recv = unsafe { incoming(recvbuf, recvcount, &recvtype, NAME)? };
                c.scatterv(&[][..], &[], recv.bytes(), root).map_err(engine)?;
                recv.finish_all();
                return Ok(());
            }
            let sendtype = types::committed(sendtype)?;
            // SAFETY: arrays of one entry per rank, as MPI requires at the root.
            let (counts, displs) = unsafe { (ints(sendcounts, c.size(), "sendcounts")?, ints(displs, c.size(), "displs")?) };
            scattered(Region::of_blocks("sendbuf", sendbuf, &counts, &displs, &sendtype), recvbuf, recvcount, recvtype)?;
            let lens = packed_counts(&counts, &sendtype);
            // SAFETY: the root's send buffer holds every block.
            let packed = unsafe { pack_blocks(sendbuf, &counts, &displs, &sendtype) };
            if in_place(recvbuf) {
                let mut own = vec![0u8; lens[root]];
                return c.scatterv(&packed[..], &lens, &mut own[..], root).map_err(engine);
            }
            let recvtype = types::committed(recvtype)?;
            // SAFETY: MPI's rule for the receive buffer.
            let mut recv = unsafe { incoming(recvbuf, recvcount, &recvtype, NAME)? };
            c.scatterv(&packed[..], &lens, recv.bytes(), root).map_err(engine)?;
            recv.finish_all();
            Ok(())
        })
    }
}

counted_fn! {
    /// `MPI_Allgather`; `MPI_IN_PLACE` as the send buffer.
    fn MPI_Allgather / PMPI_Allgather, MPI_Allgather_c / PMPI_Allgather_c(
        sendbuf: *const c_void,
        sendcount: Int,
        sendtype: c_int,
        recvbuf: *mut c_void,
        recvcount: Int,
        recvtype: c_int,
        comm: c_int,
    ) {
        widen!(sendcount, recvcount);
        if let Some(parts) = crate::api::intercomm::parts(NAME, comm)? {
            let (send, recv) = ((sendbuf, sendcount, sendtype), (recvbuf, recvcount, recvtype));
            // SAFETY: MPI's rules for the buffers.
            return unsafe { crate::api::intercomm::allgather(parts, send, recv) }.map_err(|e| e.on(comm));
        }
        if waiting::collectives_as_requests() {
            return icoll::start_allgather(NAME, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, Start::Blocking(CollectiveKind::Allgather));
        }
        on_comm(NAME, comm, |c| {
            let recvtype = types::committed(recvtype)?;
            let all = count_of(recvcount, NAME)? * c.size();
            separate(sendbuf, sendcount, sendtype, Region::of("recvbuf", recvbuf, all, &recvtype))?;
            // SAFETY: MPI's rules for the buffers.
            let send = unsafe {
                let at = c.rank() * recvcount as usize;
                contribution(sendbuf, sendcount, sendtype, recvbuf, at, recvcount, &recvtype, NAME)?
            };
            // SAFETY: the receive buffer holds a block per rank.
            let mut recv = unsafe { incoming(recvbuf, all as Count, &recvtype, NAME)? };
            c.allgather(&send[..], recv.bytes()).map_err(engine)?;
            recv.finish_all();
            Ok(())
        })
    }
}

counted_fn! {
    /// `MPI_Allgatherv`.
    fn MPI_Allgatherv / PMPI_Allgatherv, MPI_Allgatherv_c / PMPI_Allgatherv_c(
        sendbuf: *const c_void,
        sendcount: Int,
        sendtype: c_int,
        recvbuf: *mut c_void,
        recvcounts: *const Int,
        displs: *const Disp,
        recvtype: c_int,
        comm: c_int,
    ) {
        widen!(sendcount, recvcounts, displs);
        if let Some(parts) = crate::api::intercomm::parts(NAME, comm)? {
            // SAFETY: MPI's rules for the buffers and arrays.
            return unsafe { crate::api::intercomm::allgatherv(parts, (sendbuf, sendcount, sendtype), (recvbuf, recvcounts, displs, recvtype)) }.map_err(|e| e.on(comm));
        }
        if waiting::collectives_as_requests() {
            return icoll::start_allgatherv(NAME, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, Start::Blocking(CollectiveKind::Allgatherv));
        }
        on_comm(NAME, comm, |c| {
            let recvtype = types::committed(recvtype)?;
            // SAFETY: arrays of one entry per rank, as MPI requires.
            let (counts, displs) = unsafe { (ints(recvcounts, c.size(), "recvcounts")?, ints(displs, c.size(), "displs")?) };
            let me = c.rank();
            separate(sendbuf, sendcount, sendtype, Region::of_blocks("recvbuf", recvbuf, &counts, &displs, &recvtype))?;
            // SAFETY: MPI's rules for the buffers.
            let send = unsafe {
                contribution(sendbuf, sendcount, sendtype, recvbuf, displs[me] as usize, counts[me], &recvtype, NAME)?
            };
            let lens = packed_counts(&counts, &recvtype);
            if recvtype.contiguous(2).is_some() && end_to_end(&counts, &displs) {
                let total: Count = counts.iter().sum();
                // SAFETY: the receive buffer holds every block, end to end.
                let mut recv = unsafe { incoming(recvbuf, total, &recvtype, NAME)? };
                return c.allgatherv(&send[..], recv.bytes(), &lens).map_err(engine);
            }
            let mut packed = vec![0u8; lens.iter().sum()];
            c.allgatherv(&send[..], &mut packed[..], &lens).map_err(engine)?;
            // SAFETY: the receive buffer holds every block.
            unsafe { unpack_blocks(&packed, recvbuf, &counts, &displs, &recvtype) };
            Ok(())
        })
    }
}

counted_fn! {
    /// `MPI_Alltoall`; `MPI_IN_PLACE` as the send buffer.
    fn MPI_Alltoall / PMPI_Alltoall, MPI_Alltoall_c / PMPI_Alltoall_c(
        sendbuf: *const c_void,
        sendcount: Int,
        sendtype: c_int,
        recvbuf: *mut c_void,
        recvcount: Int,
        recvtype: c_int,
        comm: c_int,
    ) {
        widen!(sendcount, recvcount);
        if let Some(parts) = crate::api::intercomm::parts(NAME, comm)? {
            let (send, recv) = ((sendbuf, sendcount, sendtype), (recvbuf, recvcount, recvtype));
            // SAFETY: MPI's rules for the buffers.
            return unsafe { crate::api::intercomm::alltoall(parts, send, recv) }.map_err(|e| e.on(comm));
        }
        if waiting::collectives_as_requests() {
            return icoll::start_alltoall(NAME, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, Start::Blocking(CollectiveKind::Alltoall));
        }
        on_comm(NAME, comm, |c| {
            let recvtype = types::committed(recvtype)?;
            let all = (count_of(recvcount, NAME)? * c.size()) as Count;
            let send: Cow<[u8]> = if in_place(sendbuf) {
                // SAFETY: the receive buffer holds the data to send.
                Cow::Owned(unsafe { outgoing(recvbuf, all, &recvtype, NAME)? }.into_owned())
            } else {
                let sendtype = types::committed(sendtype)?;
                let n = (count_of(sendcount, NAME)? * c.size()) as Count;
                let sent = Region::of("sendbuf", sendbuf, n as usize, &sendtype);
                disjoint(&sent, &Region::of("recvbuf", recvbuf, all as usize, &recvtype))?;
                // SAFETY: the send buffer holds a block per rank.
                unsafe { outgoing(sendbuf, n, &sendtype, NAME)? }
            };
            // SAFETY: the receive buffer holds a block per rank.
            let mut recv = unsafe { incoming(recvbuf, all, &recvtype, NAME)? };
            c.alltoall(&send[..], recv.bytes()).map_err(engine)?;
            recv.finish_all();
            Ok(())
        })
    }
}

counted_fn! {
    /// `MPI_Alltoallv`.
    fn MPI_Alltoallv / PMPI_Alltoallv, MPI_Alltoallv_c / PMPI_Alltoallv_c(
        sendbuf: *const c_void,
        sendcounts: *const Int,
        sdispls: *const Disp,
        sendtype: c_int,
        recvbuf: *mut c_void,
        recvcounts: *const Int,
        rdispls: *const Disp,
        recvtype: c_int,
        comm: c_int,
    ) {
        widen!(sendcounts, sdispls, recvcounts, rdispls);
        if let Some(parts) = crate::api::intercomm::parts(NAME, comm)? {
            // SAFETY: MPI's rules for the buffers and arrays.
            return unsafe { crate::api::intercomm::alltoallv(parts, (sendbuf, sendcounts, sdispls, sendtype), (recvbuf, recvcounts, rdispls, recvtype)) }.map_err(|e| e.on(comm));
        }
        if waiting::collectives_as_requests() {
            return icoll::start_alltoallv(NAME, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm, Start::Blocking(CollectiveKind::Alltoallv));
        }
        on_comm(NAME, comm, |c| {
            // SAFETY: MPI's rules for the arrays and buffers.
            let exchange = unsafe {
                alltoallv_exchange(c.size(), sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype)?
            };
            alltoall_blocks(c, exchange)
        })
    }
}

/// The program's receive buffer, which a collective writes when its
/// result is whole (a non-blocking one's, inside a later MPI call).
#[derive(Clone, Copy)]
pub(super) struct UserBuffer(*mut u8);

// SAFETY: the pointer is only written through by the schedule's last
// step, which the engine of this rank runs inside an MPI call of the
// rank (under the library's lock); MPI's rule keeps the buffer valid and
// untouched by the program until the request completes.
unsafe impl Send for UserBuffer {}

impl UserBuffer {
    /// The address `offset` bytes into the buffer.
    fn at(self, offset: isize) -> *mut u8 {
        self.0.wrapping_offset(offset)
    }
}

/// Where a collective's packed result lands: blocks of `count` elements
/// of a datatype at a byte offset of the receive buffer, in the order the
/// packed result holds them.
pub(super) struct Landing {
    buf: UserBuffer,
    blocks: Vec<(isize, usize, Type)>,
}

impl Landing {
    /// Nowhere: the rank gets no result.
    pub(super) fn none() -> Landing {
        Landing { buf: UserBuffer(std::ptr::null_mut()), blocks: Vec::new() }
    }

    /// `count` elements of `datatype` at `buf`.
    pub(super) fn whole(buf: *mut c_void, count: usize, datatype: &Type) -> Landing {
        Landing { buf: UserBuffer(buf.cast()), blocks: vec![(0, count, datatype.clone())] }
    }

    /// Blocks of `counts[r]` elements at element `displs[r]`.
    pub(super) fn blocks(buf: *mut c_void, counts: &[Count], displs: &[Count], datatype: &Type) -> Landing {
        let extent = datatype.extent();
        let blocks = counts.iter().zip(displs).map(|(&c, &d)| (d as isize * extent, c as usize, datatype.clone()));
        Landing { buf: UserBuffer(buf.cast()), blocks: blocks.collect() }
    }

    /// Blocks of a count of elements of a datatype at a byte offset each.
    pub(super) fn at(buf: *mut c_void, blocks: Vec<(isize, usize, Type)>) -> Landing {
        Landing { buf: UserBuffer(buf.cast()), blocks }
    }

    /// Blocks of `counts[r]` elements of `datatypes[r]` at byte `displs[r]`.
    pub(super) fn typed_blocks(buf: *mut c_void, counts: &[Count], displs: &[Count], datatypes: Vec<Type>) -> Landing {
        let blocks = counts.iter().zip(displs).zip(datatypes).map(|((&c, &d), t)| (d as isize, c as usize, t));
        Landing { buf: UserBuffer(buf.cast()), blocks: blocks.collect() }
    }

    /// Writes the packed result to its blocks (as far as it goes).
    ///
    /// # Safety
    /// The blocks are in the program's receive buffer, writable, as MPI
    /// requires of the call's arguments (see `UserBuffer`).
    pub(super) unsafe fn land(&self, packed: &[u8]) {
        let mut at = 0;
        for (offset, count, datatype) in &self.blocks {
            let len = datatype.packed_len(*count);
            let Some(bytes) = packed.get(at..at + len) else { return };
            // SAFETY: as the caller promised.
            unsafe { datatype.unpack(bytes, self.buf.at(*offset)) };
            at += len;
        }
    }

    /// [`land`](Self::land), when a schedule's result is whole.
    pub(super) fn deliver(self) -> Deliver {
        // SAFETY: MPI keeps the receive buffer valid and the program's
        // hands off it until the request completes, which is after this.
        Box::new(move |packed: &[u8]| unsafe { self.land(packed) })
    }
}

/// What an all-to-all of per-peer blocks sends and receives, packed, and
/// where the received blocks land: the C arguments of `MPI_Alltoallv` and
/// `MPI_Alltoallw`, for their blocking and non-blocking forms alike.
pub(super) struct Exchange {
    pub send: Vec<u8>,
    pub send_counts: Vec<usize>,
    pub recv_counts: Vec<usize>,
    pub landing: Landing,
}

/// `MPI_Alltoallv`'s arguments (`MPI_IN_PLACE`: the receive buffer holds
/// the data to send).
///
/// # Safety
/// The arrays hold one entry per rank and the buffers every block, as MPI
/// requires.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn alltoallv_exchange(
    n: usize,
    sendbuf: *const c_void,
    sendcounts: CountArray,
    sdispls: CountArray,
    sendtype: c_int,
    recvbuf: *mut c_void,
    recvcounts: CountArray,
    rdispls: CountArray,
    recvtype: c_int,
) -> Result<Exchange> {
    let recvtype = types::committed(recvtype)?;
    // SAFETY: as the caller promised.
    let (rcounts, rdispls) = unsafe { (ints(recvcounts, n, "recvcounts")?, ints(rdispls, n, "rdispls")?) };
    let recv_counts = packed_counts(&rcounts, &recvtype);
    let (send, send_counts) = if in_place(sendbuf) {
        // SAFETY: as the caller promised.
        (unsafe { pack_blocks(recvbuf, &rcounts, &rdispls, &recvtype) }, recv_counts.clone())
    } else {
        let sendtype = types::committed(sendtype)?;
        // SAFETY: as the caller promised.
        let (scounts, sdispls) = unsafe { (ints(sendcounts, n, "sendcounts")?, ints(sdispls, n, "sdispls")?) };
        let sent = Region::of_blocks("sendbuf", sendbuf, &scounts, &sdispls, &sendtype);
        disjoint(&sent, &Region::of_blocks("recvbuf", recvbuf, &rcounts, &rdispls, &recvtype))?;
        // SAFETY: as the caller promised.
        (unsafe { pack_blocks(sendbuf, &scounts, &sdispls, &sendtype) }, packed_counts(&scounts, &sendtype))
    };
    let landing = Landing::blocks(recvbuf, &rcounts, &rdispls, &recvtype);
    Ok(Exchange { send, send_counts, recv_counts, landing })
}

/// `MPI_Alltoallw`'s arguments: a datatype per peer, displacements in bytes.
///
/// # Safety
/// As for [`alltoallv_exchange`].
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn alltoallw_exchange(
    n: usize,
    sendbuf: *const c_void,
    sendcounts: CountArray,
    sdispls: CountArray,
    sendtypes: *const c_int,
    recvbuf: *mut c_void,
    recvcounts: CountArray,
    rdispls: CountArray,
    recvtypes: *const c_int,
) -> Result<Exchange> {
    // SAFETY: as the caller promised.
    let (rcounts, rdispls, rtypes) = unsafe {
        (ints(recvcounts, n, "recvcounts")?, ints(rdispls, n, "rdispls")?, datatypes(recvtypes, n, "recvtypes")?)
    };
    let recv_counts: Vec<usize> = rcounts.iter().zip(&rtypes).map(|(&c, t)| t.packed_len(c as usize)).collect();
    let (send, send_counts) = if in_place(sendbuf) {
        // SAFETY: as the caller promised.
        (unsafe { pack_typed_blocks(recvbuf, &rcounts, &rdispls, &rtypes) }, recv_counts.clone())
    } else {
        // SAFETY: as the caller promised.
        let (scounts, sdispls, stypes) = unsafe {
            (ints(sendcounts, n, "sendcounts")?, ints(sdispls, n, "sdispls")?, datatypes(sendtypes, n, "sendtypes")?)
        };
        let sent = Region::of_typed_blocks("sendbuf", sendbuf, &scounts, &sdispls, &stypes);
        disjoint(&sent, &Region::of_typed_blocks("recvbuf", recvbuf, &rcounts, &rdispls, &rtypes))?;
        let lens = scounts.iter().zip(&stypes).map(|(&c, t)| t.packed_len(c as usize)).collect();
        // SAFETY: as the caller promised.
        (unsafe { pack_typed_blocks(sendbuf, &scounts, &sdispls, &stypes) }, lens)
    };
    let landing = Landing::typed_blocks(recvbuf, &rcounts, &rdispls, rtypes);
    Ok(Exchange { send, send_counts, recv_counts, landing })
}

/// Runs a blocking all-to-all of `exchange` and lands what arrived.
fn alltoall_blocks(c: &Communicator, exchange: Exchange) -> Result<()> {
    let mut received = vec![0u8; exchange.recv_counts.iter().sum()];
    c.alltoallv(&exchange.send[..], &exchange.send_counts, &mut received[..], &exchange.recv_counts).map_err(engine)?;
    // SAFETY: the landing's blocks are the receive buffer's, as MPI requires.
    unsafe { exchange.landing.land(&received) };
    Ok(())
}

/// The packed data of blocks of `counts[r]` elements of `datatypes[r]`
/// at `displs[r]` bytes (`MPI_Alltoallw`'s layout).
///
/// # Safety
/// `buf` holds every block, readable.
pub(super) unsafe fn pack_typed_blocks(
    buf: *const c_void,
    counts: &[Count],
    displs: &[Count],
    datatypes: &[Type],
) -> Vec<u8> {
    let mut packed = Vec::new();
    for ((&count, &displ), datatype) in counts.iter().zip(displs).zip(datatypes) {
        let at = buf.cast::<u8>().wrapping_offset(displ as isize);
        // SAFETY: the block is in the caller's buffer, as MPI requires.
        unsafe { datatype.pack(at, count as usize, &mut packed) };
    }
    packed
}

/// `n` committed datatypes of a C array.
///
/// # Safety
/// `handles` points to `n` datatype handles.
pub(super) unsafe fn datatypes(handles: *const c_int, n: usize, what: &str) -> Result<Vec<Type>> {
    if handles.is_null() {
        return Err(MpiError::new(class::ARG, format!("{what} is NULL")));
    }
    // SAFETY: `n` handles, as the caller promised.
    unsafe { std::slice::from_raw_parts(handles, n) }.iter().map(|&h| types::committed(h)).collect()
}

counted_fn! {
    /// `MPI_Alltoallw`: a datatype per peer, displacements in bytes.
    fn MPI_Alltoallw / PMPI_Alltoallw, MPI_Alltoallw_c / PMPI_Alltoallw_c(
        sendbuf: *const c_void,
        sendcounts: *const Int,
        sdispls: *const Disp,
        sendtypes: *const c_int,
        recvbuf: *mut c_void,
        recvcounts: *const Int,
        rdispls: *const Disp,
        recvtypes: *const c_int,
        comm: c_int,
    ) {
        widen!(sendcounts, sdispls, recvcounts, rdispls);
        if let Some(parts) = crate::api::intercomm::parts(NAME, comm)? {
            // SAFETY: MPI's rules for the buffers and arrays.
            return unsafe { crate::api::intercomm::alltoallw(parts, (sendbuf, sendcounts, sdispls, sendtypes), (recvbuf, recvcounts, rdispls, recvtypes)) }.map_err(|e| e.on(comm));
        }
        if waiting::collectives_as_requests() {
            return icoll::start_alltoallw(NAME, sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm, Start::Blocking(CollectiveKind::Alltoallv));
        }
        on_comm(NAME, comm, |c| {
            // SAFETY: MPI's rules for the arrays and buffers.
            let exchange = unsafe {
                alltoallw_exchange(c.size(), sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes)?
            };
            alltoall_blocks(c, exchange)
        })
    }
}

/// The reductions, on the Rust type of their datatype.
enum Reduction {
    Reduce { root: usize, is_root: bool },
    Allreduce,
    Scan,
    Exscan,
    ReduceScatterBlock,
    ReduceScatter(Vec<usize>),
}

struct Reduce<'a> {
    comm: &'a Communicator,
    what: Reduction,
    send: &'a [u8],
    recv: &'a mut [u8],
    op: OpCode,
}

impl Typed for Reduce<'_> {
    type Output = grappe_comm::Result<()>;

    fn run<T: Element>(self) -> Self::Output {
        let op = Predefined(self.op);
        self.run_with::<T, _>(op)
    }
}

impl Reduce<'_> {
    fn run_with<T: Element, O: Operation<T> + Copy>(self, op: O) -> grappe_comm::Result<()> {
        let comm = self.comm;
        let send = typed::<T>(self.send);
        let send: &[T] = &send;
        with_typed_mut::<T, _>(self.recv, |recv| match &self.what {
            Reduction::Reduce { root, is_root: true } => comm.reduce(send, recv, *root, op),
            Reduction::Reduce { root, is_root: false } => comm.reduce(send, &mut [][..], *root, op),
            Reduction::Allreduce => comm.allreduce(send, recv, op),
            Reduction::Scan => comm.scan(send, recv, op),
            Reduction::Exscan => comm.exscan(send, recv, op),
            Reduction::ReduceScatterBlock => comm.reduce_scatter_block(send, recv, op),
            Reduction::ReduceScatter(counts) => comm.reduce_scatter(send, recv, counts, op),
        })
    }
}

/// A reduction of `count` elements of `datatype` with `op`: `send` (or,
/// `MPI_IN_PLACE`, a copy of `recv`), into `recv` (of `recv_count`
/// elements).
#[allow(clippy::too_many_arguments)]
fn reduction(
    c: &Communicator,
    call: &str,
    what: Reduction,
    sendbuf: *const c_void,
    send_count: Count,
    recvbuf: *mut c_void,
    recv_count: Count,
    datatype: c_int,
    op: c_int,
) -> Result<()> {
    let datatype = types::committed(datatype)?;
    let base = reduction_base(&datatype)?;
    let op = OpCode::lookup(op)?;
    op.check(base)?;
    let (send_count, recv_count) = (count_of(send_count, call)?, count_of(recv_count, call)?);
    if !in_place(sendbuf) {
        let send = Region::of("sendbuf", sendbuf, send_count, &datatype);
        disjoint(&send, &Region::of("recvbuf", recvbuf.cast_const(), recv_count, &datatype))?;
    }
    if let Type::Predefined(predefined) = datatype {
        // In place, stride by stride: the elements of a predefined
        // datatype are its Rust type, padding included.
        let (send_len, recv_len) = (send_count * predefined.extent, recv_count * predefined.extent);
        let own: Vec<u8>;
        let (send, recv): (&[u8], &mut [u8]) = if in_place(sendbuf) {
            // The input is in the receive buffer, which the result
            // overwrites from its start (reduce-scatter: a part of it).
            // SAFETY: MPI's rule: the receive buffer holds the input.
            let whole = unsafe { raw_mut(recvbuf, send_len.max(recv_len), "the receive buffer")? };
            own = whole[..send_len].to_vec();
            (&own, &mut whole[..recv_len])
        } else {
            // SAFETY: MPI's rules for the two buffers (the receive buffer
            // is unused off the root of a reduce, where its length is 0).
            unsafe { (raw(sendbuf, send_len, "the send buffer")?, raw_mut(recvbuf, recv_len, "the receive buffer")?) }
        };
        return with_type(predefined, Reduce { comm: c, what, send, recv, op }).map_err(engine);
    }
    // A derived datatype of one predefined datatype: its elements packed
    // are the predefined ones end to end.
    let send: Cow<[u8]> = if in_place(sendbuf) {
        // SAFETY: MPI's rule: the receive buffer holds the input.
        Cow::Owned(unsafe { outgoing(recvbuf, send_count as Count, &datatype, call)? }.into_owned())
    } else {
        // SAFETY: MPI's rule for the send buffer.
        unsafe { outgoing(sendbuf, send_count as Count, &datatype, call)? }
    };
    // SAFETY: MPI's rule for the receive buffer.
    let mut recv: Incoming = unsafe { incoming(recvbuf, recv_count as Count, &datatype, call)? };
    with_type(base, Reduce { comm: c, what, send: &send, recv: recv.bytes(), op }).map_err(engine)?;
    recv.finish_all();
    Ok(())
}

/// The predefined datatype a reduction combines.
pub(super) fn reduction_base(datatype: &Type) -> Result<&'static crate::datatype::Datatype> {
    match (datatype, datatype.base()) {
        (Type::Predefined(d), _) => Ok(d),
        (_, Some((base, _))) if base.size == base.extent => Ok(base),
        _ => Err(MpiError::new(
            class::TYPE,
            format!(
                "a reduction needs a datatype made of one predefined datatype without padding; {} is not",
                describe(datatype)
            ),
        )),
    }
}

fn describe(datatype: &Type) -> String {
    match datatype.name() {
        name if name.is_empty() => "this derived datatype".to_owned(),
        name => name,
    }
}

/// A raw C buffer of `len` bytes.
///
/// # Safety
/// `buf` points to `len` readable bytes.
unsafe fn raw<'a>(buf: *const c_void, len: usize, what: &str) -> Result<&'a [u8]> {
    if len == 0 {
        return Ok(&[]);
    }
    if buf.is_null() {
        return Err(MpiError::new(class::BUFFER, format!("{what} is NULL")));
    }
    // SAFETY: as the caller promised.
    Ok(unsafe { std::slice::from_raw_parts(buf.cast(), len) })
}

/// # Safety
/// `buf` points to `len` writable bytes.
unsafe fn raw_mut<'a>(buf: *mut c_void, len: usize, what: &str) -> Result<&'a mut [u8]> {
    if len == 0 {
        return Ok(&mut []);
    }
    if buf.is_null() {
        return Err(MpiError::new(class::BUFFER, format!("{what} is NULL")));
    }
    // SAFETY: as the caller promised.
    Ok(unsafe { std::slice::from_raw_parts_mut(buf.cast(), len) })
}

counted_fn! {
    /// `MPI_Reduce`; `MPI_IN_PLACE` as the root's send buffer.
    fn MPI_Reduce / PMPI_Reduce, MPI_Reduce_c / PMPI_Reduce_c(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: Int,
        datatype: c_int,
        op: c_int,
        root: c_int,
        comm: c_int,
    ) {
        widen!(count);
        if let Some(parts) = crate::api::intercomm::parts(NAME, comm)? {
            // SAFETY: MPI's rules for the buffers.
            return unsafe { crate::api::intercomm::reduce(parts, sendbuf, recvbuf, count, datatype, op, root) }.map_err(|e| e.on(comm));
        }
        if as_schedule(op) {
            return icoll::start_reduce(NAME, sendbuf, recvbuf, count, datatype, op, root, comm, Start::Blocking(CollectiveKind::Reduce));
        }
        on_comm(NAME, comm, |c| {
            let root = root_rank(root, c)?;
            let is_root = c.rank() == root;
            let recv_count = if is_root { count } else { 0 };
            if !is_root && in_place(sendbuf) {
                return Err(MpiError::new(class::BUFFER, "MPI_IN_PLACE as the send buffer of a rank that is not the root"));
            }
            let what = Reduction::Reduce { root, is_root };
            reduction(c, NAME, what, sendbuf, count, recvbuf, recv_count, datatype, op)
        })
    }
}

counted_fn! {
    /// `MPI_Allreduce`; `MPI_IN_PLACE` as the send buffer.
    fn MPI_Allreduce / PMPI_Allreduce, MPI_Allreduce_c / PMPI_Allreduce_c(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: Int,
        datatype: c_int,
        op: c_int,
        comm: c_int,
    ) {
        widen!(count);
        if let Some(parts) = crate::api::intercomm::parts(NAME, comm)? {
            // SAFETY: MPI's rules for the buffers.
            return unsafe { crate::api::intercomm::allreduce(parts, sendbuf, recvbuf, count, datatype, op) }.map_err(|e| e.on(comm));
        }
        if as_schedule(op) {
            return icoll::start_allreduce(NAME, sendbuf, recvbuf, count, datatype, op, comm, Start::Blocking(CollectiveKind::Allreduce));
        }
        on_comm(NAME, comm, |c| {
            reduction(c, NAME, Reduction::Allreduce, sendbuf, count, recvbuf, count, datatype, op)
        })
    }
}

counted_fn! {
    /// `MPI_Scan`.
    fn MPI_Scan / PMPI_Scan, MPI_Scan_c / PMPI_Scan_c(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: Int,
        datatype: c_int,
        op: c_int,
        comm: c_int,
    ) {
        widen!(count);
        if as_schedule(op) {
            return icoll::scan(NAME, false, sendbuf, recvbuf, count, datatype, op, comm, Start::Blocking(CollectiveKind::Scan));
        }
        on_comm(NAME, comm, |c| reduction(c, NAME, Reduction::Scan, sendbuf, count, recvbuf, count, datatype, op))
    }
}

counted_fn! {
    /// `MPI_Exscan`: rank 0's receive buffer is left as it was.
    fn MPI_Exscan / PMPI_Exscan, MPI_Exscan_c / PMPI_Exscan_c(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: Int,
        datatype: c_int,
        op: c_int,
        comm: c_int,
    ) {
        widen!(count);
        if as_schedule(op) {
            return icoll::scan(NAME, true, sendbuf, recvbuf, count, datatype, op, comm, Start::Blocking(CollectiveKind::Exscan));
        }
        on_comm(NAME, comm, |c| {
            reduction(c, NAME, Reduction::Exscan, sendbuf, count, recvbuf, count, datatype, op)
        })
    }
}

counted_fn! {
    /// `MPI_Reduce_scatter_block`.
    fn MPI_Reduce_scatter_block / PMPI_Reduce_scatter_block, MPI_Reduce_scatter_block_c / PMPI_Reduce_scatter_block_c(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        recvcount: Int,
        datatype: c_int,
        op: c_int,
        comm: c_int,
    ) {
        widen!(recvcount);
        if let Some(parts) = crate::api::intercomm::parts(NAME, comm)? {
            // SAFETY: MPI's rules for the buffers and arrays.
            return unsafe { crate::api::intercomm::reduce_scatter(parts, sendbuf, recvbuf, None, recvcount, datatype, op) }.map_err(|e| e.on(comm));
        }
        if as_schedule(op) {
            let counts = |c: &Communicator| Ok(vec![count_of(recvcount, NAME)? as Count; c.size()]);
            let call = NAME;
            return icoll::reduce_scatter(call, counts, sendbuf, recvbuf, datatype, op, comm, Start::Blocking(CollectiveKind::ReduceScatterBlock));
        }
        on_comm(NAME, comm, |c| {
            let n = c.size() as Count;
            let total = recvcount.checked_mul(n).ok_or_else(|| MpiError::new(class::COUNT, "count overflows"))?;
            reduction(c, NAME, Reduction::ReduceScatterBlock, sendbuf, total, recvbuf, recvcount, datatype, op)
        })
    }
}

counted_fn! {
    /// `MPI_Reduce_scatter`.
    fn MPI_Reduce_scatter / PMPI_Reduce_scatter, MPI_Reduce_scatter_c / PMPI_Reduce_scatter_c(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        recvcounts: *const Int,
        datatype: c_int,
        op: c_int,
        comm: c_int,
    ) {
        widen!(recvcounts);
        if let Some(parts) = crate::api::intercomm::parts(NAME, comm)? {
            // SAFETY: MPI's rules for the buffers and arrays.
            return unsafe { crate::api::intercomm::reduce_scatter(parts, sendbuf, recvbuf, Some(recvcounts), 0, datatype, op) }.map_err(|e| e.on(comm));
        }
        if as_schedule(op) {
            // SAFETY: one count per rank, as MPI requires.
            let counts = |c: &Communicator| unsafe { ints(recvcounts, c.size(), "recvcounts") };
            let call = NAME;
            return icoll::reduce_scatter(call, counts, sendbuf, recvbuf, datatype, op, comm, Start::Blocking(CollectiveKind::ReduceScatter));
        }
        on_comm(NAME, comm, |c| {
            // SAFETY: one count per rank, as MPI requires.
            let counts = unsafe { ints(recvcounts, c.size(), "recvcounts")? };
            let total: Count = counts.iter().sum();
            let mine = counts[c.rank()];
            let what = Reduction::ReduceScatter(counts.iter().map(|&n| n as usize).collect());
            reduction(c, NAME, what, sendbuf, total, recvbuf, mine, datatype, op)
        })
    }
}

/// The function of user operation `handle`, if it is one.
pub(super) fn user_op(handle: c_int) -> Result<Option<UserOp>> {
    let Some(slot) = abi::direct_index(abi::kind::OP, handle) else { return Ok(None) };
    let found = match slot.checked_sub(FIRST_KEPT_OP) {
        Some(kept) => KEPT_OPS.lock().get(kept).copied(),
        None => state::lock("a reduction")?.ops.get(slot).copied(),
    };
    match found {
        Some((function, commute)) => Ok(Some(UserOp { function, commute })),
        None => Err(MpiError::new(class::OP, format!("{handle:#x} is not an operation handle (or was freed)"))),
    }
}

/// The program's operations that persistent collectives keep under
/// handles of their own, so that the program may free its handles while
/// the requests live (see [`keep_op`]). Apart from the state, whose lock
/// may be held where a request is dropped, which releases them.
static KEPT_OPS: parking_lot::Mutex<state::Table<(UserFn, bool)>> = parking_lot::Mutex::new(state::Table::new());

/// The first slot of the kept operations' handles, past any slot of the
/// program's own operations.
const FIRST_KEPT_OP: usize = 1 << 25;

/// The handle a persistent collective uses for operation `op`: one of its
/// own for the program's operation, `op` itself for any other (predefined,
/// or not an operation: the start reports it).
pub(super) fn keep_op(call: &str, op: c_int) -> Result<c_int> {
    let Some(slot) = abi::direct_index(abi::kind::OP, op).filter(|&slot| slot < FIRST_KEPT_OP) else { return Ok(op) };
    let Some(&user) = state::lock(call)?.ops.get(slot) else { return Ok(op) };
    Ok(abi::direct_handle(abi::kind::OP, FIRST_KEPT_OP + KEPT_OPS.lock().insert(user)))
}

/// Releases an operation [`keep_op`] kept.
pub(super) fn release_kept_op(handle: c_int) {
    if let Some(kept) = abi::direct_index(abi::kind::OP, handle).and_then(|slot| slot.checked_sub(FIRST_KEPT_OP)) {
        KEPT_OPS.lock().remove(kept);
    }
}

/// Whether a blocking reduction with `op` runs as a schedule (see
/// [`crate::waiting`]): always for the program's operations, whose
/// function reads its operands laid out as the datatype says (structs,
/// gaps), which the schedules' combination of packed elements gives.
/// Deciding by the operation alone, the same on every rank as MPI
/// requires, keeps all ranks on the same path.
fn as_schedule(op: c_int) -> bool {
    waiting::collectives_as_requests() || abi::direct_index(abi::kind::OP, op).is_some()
}

/// Registers the program's operation; its handle in `op`.
fn op_create(call: &str, function: Option<UserFn>, commute: c_int, op: *mut c_int) -> Result<()> {
    let function = function.ok_or_else(|| MpiError::new(class::ARG, "the user function is NULL"))?;
    let mut state = state::lock(call)?;
    let handle = abi::direct_handle(abi::kind::OP, state.ops.insert((function, commute != 0)));
    // SAFETY: the caller's output argument.
    unsafe { crate::api::put(op, handle, "op") }
}

mpi_fn! {
    /// `MPI_Op_create`: a reduction by the program's function. A
    /// non-commutative one combines contributions in rank order.
    fn MPI_Op_create / PMPI_Op_create(function: Option<crate::reduce::UserFunction>, commute: c_int, op: *mut c_int) {
        op_create("MPI_Op_create", function.map(UserFn::Int), commute, op)
    }
}

mpi_fn! {
    /// `MPI_Op_create_c`: as `MPI_Op_create`, the function taking an `MPI_Count`.
    fn MPI_Op_create_c / PMPI_Op_create_c(function: Option<crate::reduce::LargeUserFunction>, commute: c_int, op: *mut c_int) {
        op_create("MPI_Op_create_c", function.map(UserFn::Large), commute, op)
    }
}

mpi_fn! {
    /// `MPI_Op_free`: the handle becomes `MPI_OP_NULL`.
    fn MPI_Op_free / PMPI_Op_free(op: *mut c_int) {
        // SAFETY: the caller's in-out argument.
        let handle = unsafe { crate::api::get(op, "op")? };
        let mut state = state::lock("MPI_Op_free")?;
        let slot = abi::direct_index(abi::kind::OP, handle).filter(|&slot| state.ops.get(slot).is_some());
        let Some(slot) = slot else {
            return Err(MpiError::new(class::OP, format!("{handle:#x} is not a user operation (predefined ones cannot be freed)")));
        };
        state.ops.remove(slot);
        // SAFETY: the caller's in-out argument.
        unsafe { crate::api::put(op, abi::OP_NULL, "op") }
    }
}

mpi_fn! {
    /// `MPI_Op_commutative`.
    fn MPI_Op_commutative / PMPI_Op_commutative(op: c_int, commute: *mut c_int) {
        let commutes = match user_op(op)? {
            Some(user) => user.commute,
            None => {
                OpCode::lookup(op)?;
                true
            }
        };
        // SAFETY: the caller's output argument.
        unsafe { crate::api::put(commute, commutes as c_int, "commute") }
    }
}

/// The bytes `count` elements of `datatype` at `buf` touch, from the
/// lowest to past the highest.
fn footprint(buf: *const c_void, count: usize, datatype: &Type) -> std::ops::Range<usize> {
    let (extent, true_lb, true_extent) = (datatype.extent(), datatype.true_lb(), datatype.true_extent());
    let last = (count as isize - 1) * extent;
    let (low, high) = (last.min(0) + true_lb, last.max(0) + true_lb + true_extent);
    (buf as usize).wrapping_add_signed(low)..(buf as usize).wrapping_add_signed(high)
}

/// A buffer argument: its name and the bytes its elements touch.
pub(super) struct Region {
    what: &'static str,
    buf: *const c_void,
    bytes: std::ops::Range<usize>,
}

impl Region {
    /// `count` elements of `datatype` at `buf`.
    pub(super) fn of(what: &'static str, buf: *const c_void, count: usize, datatype: &Type) -> Region {
        let bytes = match count == 0 || datatype.size() == 0 {
            true => 0..0,
            false => footprint(buf, count, datatype),
        };
        Region { what, buf, bytes }
    }

    /// Blocks of `counts[i]` elements at element `displs[i]` of `buf`:
    /// from the lowest byte of any to past the highest.
    pub(super) fn of_blocks(
        what: &'static str,
        buf: *const c_void,
        counts: &[Count],
        displs: &[Count],
        datatype: &Type,
    ) -> Region {
        let blocks = counts.iter().zip(displs);
        Region::hull(
            what,
            buf,
            blocks.map(|(&count, &displ)| (element(buf, displ as usize, datatype), count, datatype)),
        )
    }

    /// Blocks of `counts[i]` elements of `types[i]` at byte `displs[i]`
    /// of `buf` (`MPI_Alltoallw`'s).
    pub(super) fn of_typed_blocks(
        what: &'static str,
        buf: *const c_void,
        counts: &[Count],
        displs: &[Count],
        types: &[Type],
    ) -> Region {
        let at = |displ: Count| buf.cast::<u8>().wrapping_offset(displ as isize).cast::<c_void>();
        let blocks = counts.iter().zip(displs).zip(types);
        Region::hull(what, buf, blocks.map(|((&count, &displ), datatype)| (at(displ), count, datatype)))
    }

    /// From the lowest byte any of `blocks` (address, count, datatype)
    /// touches to past the highest.
    fn hull<'t>(
        what: &'static str,
        buf: *const c_void,
        blocks: impl Iterator<Item = (*const c_void, Count, &'t Type)>,
    ) -> Region {
        let hull = blocks
            .filter(|(_, count, datatype)| *count > 0 && datatype.size() > 0)
            .map(|(at, count, datatype)| footprint(at, count as usize, datatype))
            .reduce(|a, b| a.start.min(b.start)..a.end.max(b.end));
        Region { what, buf, bytes: hull.unwrap_or(0..0) }
    }
}

/// Refuses two buffer arguments whose bytes overlap: MPI forbids aliased
/// arguments (`MPI_IN_PLACE` is how a collective takes its input from its
/// output buffer), and the library would otherwise read a buffer while
/// writing it.
pub(super) fn disjoint(a: &Region, b: &Region) -> Result<()> {
    if a.bytes.start < b.bytes.end && b.bytes.start < a.bytes.end {
        return Err(MpiError::new(
            class::BUFFER,
            format!(
                "{} ({:p}, {} bytes) and {} ({:p}, {} bytes) overlap: MPI forbids aliased buffers{}",
                a.what,
                a.buf,
                a.bytes.len(),
                b.what,
                b.buf,
                b.bytes.len(),
                if a.what == "sendbuf" { "; pass MPI_IN_PLACE as sendbuf for data already in recvbuf" } else { "" }
            ),
        ));
    }
    Ok(())
}

/// `MPI_Reduce_local`'s two buffers: neither `MPI_IN_PLACE` (it has no
/// such form) nor overlapping (MPI forbids aliased arguments), which
/// would otherwise be read as addresses or combined into themselves.
fn local_buffers(inbuf: *const c_void, inoutbuf: *mut c_void, count: usize, datatype: &Type) -> Result<()> {
    if in_place(inbuf) || in_place(inoutbuf) {
        return Err(MpiError::new(
            class::BUFFER,
            "MPI_IN_PLACE is neither buffer of MPI_Reduce_local, which combines inbuf into inoutbuf",
        ));
    }
    disjoint(
        &Region::of("inbuf", inbuf, count, datatype),
        &Region::of("inoutbuf", inoutbuf.cast_const(), count, datatype),
    )
}

counted_fn! {
    /// `MPI_Reduce_local`: `inoutbuf = inbuf ∘ inoutbuf`, on this rank alone.
    fn MPI_Reduce_local / PMPI_Reduce_local, MPI_Reduce_local_c / PMPI_Reduce_local_c(inbuf: *const c_void, inoutbuf: *mut c_void, count: Int, datatype: c_int, op: c_int) {
        widen!(count);
        let user = user_op(op)?;
        let handle = datatype;
        let datatype = types::committed(datatype)?;
        let count = count_of(count, NAME)?;
        local_buffers(inbuf, inoutbuf, count, &datatype)?;
        if let Some(user) = user {
            // SAFETY: MPI's rules for the two buffers of `count` elements,
            // which the program's function reads as the datatype says.
            unsafe { user.apply(inbuf.cast_mut().cast(), inoutbuf.cast(), count, handle) };
            return Ok(());
        }
        let op = OpCode::lookup(op)?;
        let base = reduction_base(&datatype)?;
        op.check(base)?;
        if let Type::Predefined(predefined) = datatype {
            let len = count * predefined.extent;
            // SAFETY: MPI's rules for the two buffers of `count` elements.
            let (input, inout) = unsafe { (raw(inbuf, len, "inbuf")?, raw_mut(inoutbuf, len, "inoutbuf")?) };
            with_type(predefined, Local { input, inout, op });
            return Ok(());
        }
        // SAFETY: MPI's rules for the two buffers of `count` elements.
        let (input, mut inout) = unsafe {
            let input = outgoing(inbuf, count as Count, &datatype, "inbuf")?;
            (input, outgoing(inoutbuf, count as Count, &datatype, "inoutbuf")?.into_owned())
        };
        with_type(base, Local { input: &input, inout: &mut inout, op });
        // SAFETY: the in-out buffer holds `count` elements, as MPI requires.
        unsafe { datatype.unpack(&inout, inoutbuf.cast()) };
        Ok(())
    }
}

/// A reduction on this rank's two buffers.
pub(super) struct Local<'a> {
    pub input: &'a [u8],
    pub inout: &'a mut [u8],
    pub op: OpCode,
}

impl Typed for Local<'_> {
    type Output = ();

    fn run<T: Element>(self) {
        let mut acc: Vec<T> = typed::<T>(self.input).into_owned();
        with_typed_mut::<T, _>(self.inout, |later| {
            Predefined(self.op).combine(&mut acc, later);
            later.copy_from_slice(&acc);
        });
    }
}
