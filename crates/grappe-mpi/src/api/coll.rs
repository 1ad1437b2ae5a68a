//! Collectives: every blocking one, with their v-variants and
//! `MPI_IN_PLACE`, over grappe's collectives (shared-memory arenas and
//! message algorithms). Data moves as bytes; reductions run on the
//! datatype's Rust type.
//!
//! Displacements (`displs`) that are not the blocks end to end cost a
//! copy through a packed buffer.

use std::ffi::{c_int, c_void};

use grappe_comm::Communicator;

use crate::abi::{self, class};
use crate::datatype::{self, Datatype};
use crate::errors::{MpiError, Result};
use crate::mpi_fn;
use grappe_comm::Operation;

use crate::reduce::{AnyOp, Element, OpCode, Predefined, Typed, UserOperation, typed, with_type, with_typed_mut};
use crate::state;

use super::{recv_bytes, send_bytes};

/// `MPI_IN_PLACE`?
fn in_place(buf: *const c_void) -> bool {
    buf as usize == abi::IN_PLACE
}

/// A root rank of `comm`.
fn root_rank(root: c_int, comm: &Communicator) -> Result<usize> {
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
/// `array` points to `n` ints.
unsafe fn ints<'a>(array: *const c_int, n: usize, what: &str) -> Result<&'a [c_int]> {
    if array.is_null() {
        return Err(MpiError::new(class::ARG, format!("{what} is NULL")));
    }
    // SAFETY: `n` ints, as the caller promised (MPI: one per rank).
    let values = unsafe { std::slice::from_raw_parts(array, n) };
    if let Some((rank, value)) = values.iter().enumerate().find(|(_, v)| **v < 0) {
        return Err(MpiError::new(class::COUNT, format!("{what}[{rank}] is negative: {value}")));
    }
    Ok(values)
}

/// Byte lengths of blocks of `counts` elements of `datatype`.
fn byte_counts(counts: &[c_int], datatype: &Datatype) -> Vec<usize> {
    counts.iter().map(|&c| c as usize * datatype.extent).collect()
}

/// Byte offsets of `displs` elements of `datatype`, or `None` if they lay
/// the blocks end to end (no copy needed).
fn scattered(counts: &[usize], displs: &[c_int], datatype: &Datatype) -> Option<Vec<usize>> {
    let offsets: Vec<usize> = displs.iter().map(|&d| d as usize * datatype.extent).collect();
    let mut end = 0;
    for (offset, len) in offsets.iter().zip(counts) {
        if *offset != end {
            return Some(offsets);
        }
        end += len;
    }
    None
}

/// Copies blocks from their places to end to end (`pack`) or back.
fn pack(from: &[u8], counts: &[usize], offsets: &[usize]) -> Result<Vec<u8>> {
    let mut packed = Vec::with_capacity(counts.iter().sum());
    for (&offset, &len) in offsets.iter().zip(counts) {
        let block = from.get(offset..offset + len).ok_or_else(|| outside(offset, len, from.len()))?;
        packed.extend_from_slice(block);
    }
    Ok(packed)
}

fn unpack(packed: &[u8], into: &mut [u8], counts: &[usize], offsets: &[usize]) -> Result<()> {
    let mut at = 0;
    for (&offset, &len) in offsets.iter().zip(counts) {
        let total = into.len();
        let block = into.get_mut(offset..offset + len).ok_or_else(|| outside(offset, len, total))?;
        block.copy_from_slice(&packed[at..at + len]);
        at += len;
    }
    Ok(())
}

fn outside(offset: usize, len: usize, total: usize) -> MpiError {
    MpiError::new(
        class::ARG,
        format!("a block of {len} bytes at displacement {offset} bytes is outside the {total}-byte buffer"),
    )
}

/// The extent of the buffer that holds blocks of `counts` at `offsets`.
fn span_of(counts: &[usize], offsets: Option<&[usize]>) -> usize {
    match offsets {
        None => counts.iter().sum(),
        Some(offsets) => offsets.iter().zip(counts).map(|(o, c)| o + c).max().unwrap_or(0),
    }
}

/// A raw C buffer of `len` bytes.
///
/// # Safety
/// `buf` points to `len` bytes, readable (and writable for `_mut`).
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
/// As [`raw`], writable.
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

/// Runs a collective on communicator `comm` under the state's lock,
/// its errors handled by that communicator.
fn on_comm(call: &str, comm: c_int, body: impl FnOnce(&Communicator) -> Result<()>) -> Result<()> {
    let state = state::lock(call)?;
    let entry = state.comm(comm)?;
    body(&entry.comm).map_err(|e| e.on(comm))
}

fn engine(e: grappe_comm::Error) -> MpiError {
    MpiError::from(e)
}

mpi_fn! {
    /// `MPI_Barrier`.
    fn MPI_Barrier / PMPI_Barrier(comm: c_int) {
        on_comm("MPI_Barrier", comm, |c| c.barrier().map_err(engine))
    }
}

mpi_fn! {
    /// `MPI_Bcast`.
    fn MPI_Bcast / PMPI_Bcast(buffer: *mut c_void, count: c_int, datatype: c_int, root: c_int, comm: c_int) {
        on_comm("MPI_Bcast", comm, |c| {
            let datatype = datatype::lookup(datatype)?;
            let root = root_rank(root, c)?;
            // SAFETY: MPI's rule for the buffer.
            let bytes = unsafe { recv_bytes(buffer, count, datatype, "MPI_Bcast")? };
            c.bcast(bytes, root).map_err(engine)
        })
    }
}

mpi_fn! {
    /// `MPI_Gather`; `MPI_IN_PLACE` as the root's send buffer.
    fn MPI_Gather / PMPI_Gather(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: c_int,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: c_int,
        root: c_int,
        comm: c_int,
    ) {
        on_comm("MPI_Gather", comm, |c| {
            let root = root_rank(root, c)?;
            let is_root = c.rank() == root;
            let recv: &mut [u8] = match is_root {
                true => {
                    let recvtype = datatype::lookup(recvtype)?;
                    let block = recvtype.span(recvcount, "MPI_Gather")?;
                    // SAFETY: the root's receive buffer holds a block per rank.
                    unsafe { raw_mut(recvbuf, block * c.size(), "the receive buffer")? }
                }
                false => &mut [],
            };
            let own: Vec<u8>;
            let send: &[u8] = if is_root && in_place(sendbuf) {
                let block = recv.len() / c.size();
                own = recv[root * block..(root + 1) * block].to_vec();
                &own
            } else {
                let sendtype = datatype::lookup(sendtype)?;
                // SAFETY: MPI's rule for the send buffer.
                unsafe { send_bytes(sendbuf, sendcount, sendtype, "MPI_Gather")? }
            };
            c.gather(send, recv, root).map_err(engine)
        })
    }
}

mpi_fn! {
    /// `MPI_Gatherv`.
    fn MPI_Gatherv / PMPI_Gatherv(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: c_int,
        recvbuf: *mut c_void,
        recvcounts: *const c_int,
        displs: *const c_int,
        recvtype: c_int,
        root: c_int,
        comm: c_int,
    ) {
        on_comm("MPI_Gatherv", comm, |c| {
            let root = root_rank(root, c)?;
            if c.rank() != root {
                let sendtype = datatype::lookup(sendtype)?;
                // SAFETY: MPI's rule for the send buffer.
                let send = unsafe { send_bytes(sendbuf, sendcount, sendtype, "MPI_Gatherv")? };
                return c.gatherv(send, &mut [], &[], root).map_err(engine);
            }
            let recvtype = datatype::lookup(recvtype)?;
            // SAFETY: arrays of one entry per rank, as MPI requires at the root.
            let (counts, displs) = unsafe { (ints(recvcounts, c.size(), "recvcounts")?, ints(displs, c.size(), "displs")?) };
            let counts = byte_counts(counts, recvtype);
            let offsets = scattered(&counts, displs, recvtype);
            // SAFETY: the root's receive buffer spans every block.
            let recv = unsafe { raw_mut(recvbuf, span_of(&counts, offsets.as_deref()), "the receive buffer")? };
            let own: Vec<u8>;
            let send: &[u8] = if in_place(sendbuf) {
                let at = displs[root] as usize * recvtype.extent;
                own = recv[at..at + counts[root]].to_vec();
                &own
            } else {
                let sendtype = datatype::lookup(sendtype)?;
                // SAFETY: MPI's rule for the send buffer.
                unsafe { send_bytes(sendbuf, sendcount, sendtype, "MPI_Gatherv")? }
            };
            match offsets {
                None => c.gatherv(send, recv, &counts, root).map_err(engine),
                Some(offsets) => {
                    let mut packed = vec![0u8; counts.iter().sum()];
                    c.gatherv(send, &mut packed[..], &counts, root).map_err(engine)?;
                    unpack(&packed, recv, &counts, &offsets)
                }
            }
        })
    }
}

mpi_fn! {
    /// `MPI_Scatter`; `MPI_IN_PLACE` as the root's receive buffer.
    fn MPI_Scatter / PMPI_Scatter(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: c_int,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: c_int,
        root: c_int,
        comm: c_int,
    ) {
        on_comm("MPI_Scatter", comm, |c| {
            let root = root_rank(root, c)?;
            let is_root = c.rank() == root;
            let send: &[u8] = match is_root {
                true => {
                    let sendtype = datatype::lookup(sendtype)?;
                    let block = sendtype.span(sendcount, "MPI_Scatter")?;
                    // SAFETY: the root's send buffer holds a block per rank.
                    unsafe { raw(sendbuf, block * c.size(), "the send buffer")? }
                }
                false => &[],
            };
            if is_root && in_place(recvbuf) {
                let mut own = vec![0u8; send.len() / c.size()];
                return c.scatter(send, &mut own[..], root).map_err(engine);
            }
            let recvtype = datatype::lookup(recvtype)?;
            // SAFETY: MPI's rule for the receive buffer.
            let recv = unsafe { recv_bytes(recvbuf, recvcount, recvtype, "MPI_Scatter")? };
            c.scatter(send, recv, root).map_err(engine)
        })
    }
}

mpi_fn! {
    /// `MPI_Scatterv`.
    fn MPI_Scatterv / PMPI_Scatterv(
        sendbuf: *const c_void,
        sendcounts: *const c_int,
        displs: *const c_int,
        sendtype: c_int,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: c_int,
        root: c_int,
        comm: c_int,
    ) {
        on_comm("MPI_Scatterv", comm, |c| {
            let root = root_rank(root, c)?;
            if c.rank() != root {
                let recvtype = datatype::lookup(recvtype)?;
                // SAFETY: MPI's rule for the receive buffer.
                let recv = unsafe { recv_bytes(recvbuf, recvcount, recvtype, "MPI_Scatterv")? };
                return c.scatterv(&[][..], &[], recv, root).map_err(engine);
            }
            let sendtype = datatype::lookup(sendtype)?;
            // SAFETY: arrays of one entry per rank, as MPI requires at the root.
            let (counts, displs) = unsafe { (ints(sendcounts, c.size(), "sendcounts")?, ints(displs, c.size(), "displs")?) };
            let counts = byte_counts(counts, sendtype);
            let offsets = scattered(&counts, displs, sendtype);
            // SAFETY: the root's send buffer spans every block.
            let send = unsafe { raw(sendbuf, span_of(&counts, offsets.as_deref()), "the send buffer")? };
            let mut own = Vec::new();
            let recv: &mut [u8] = if in_place(recvbuf) {
                own.resize(counts[root], 0);
                &mut own
            } else {
                let recvtype = datatype::lookup(recvtype)?;
                // SAFETY: MPI's rule for the receive buffer.
                unsafe { recv_bytes(recvbuf, recvcount, recvtype, "MPI_Scatterv")? }
            };
            match offsets {
                None => c.scatterv(send, &counts, recv, root).map_err(engine),
                Some(offsets) => {
                    let packed = pack(send, &counts, &offsets)?;
                    c.scatterv(&packed[..], &counts, recv, root).map_err(engine)
                }
            }
        })
    }
}

mpi_fn! {
    /// `MPI_Allgather`; `MPI_IN_PLACE` as the send buffer.
    fn MPI_Allgather / PMPI_Allgather(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: c_int,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: c_int,
        comm: c_int,
    ) {
        on_comm("MPI_Allgather", comm, |c| {
            let recvtype = datatype::lookup(recvtype)?;
            let block = recvtype.span(recvcount, "MPI_Allgather")?;
            // SAFETY: the receive buffer holds a block per rank.
            let recv = unsafe { raw_mut(recvbuf, block * c.size(), "the receive buffer")? };
            let own: Vec<u8>;
            let send: &[u8] = if in_place(sendbuf) {
                own = recv[c.rank() * block..(c.rank() + 1) * block].to_vec();
                &own
            } else {
                let sendtype = datatype::lookup(sendtype)?;
                // SAFETY: MPI's rule for the send buffer.
                unsafe { send_bytes(sendbuf, sendcount, sendtype, "MPI_Allgather")? }
            };
            c.allgather(send, recv).map_err(engine)
        })
    }
}

mpi_fn! {
    /// `MPI_Allgatherv`.
    fn MPI_Allgatherv / PMPI_Allgatherv(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: c_int,
        recvbuf: *mut c_void,
        recvcounts: *const c_int,
        displs: *const c_int,
        recvtype: c_int,
        comm: c_int,
    ) {
        on_comm("MPI_Allgatherv", comm, |c| {
            let recvtype = datatype::lookup(recvtype)?;
            // SAFETY: arrays of one entry per rank, as MPI requires.
            let (counts, displs) = unsafe { (ints(recvcounts, c.size(), "recvcounts")?, ints(displs, c.size(), "displs")?) };
            let counts = byte_counts(counts, recvtype);
            let offsets = scattered(&counts, displs, recvtype);
            // SAFETY: the receive buffer spans every block.
            let recv = unsafe { raw_mut(recvbuf, span_of(&counts, offsets.as_deref()), "the receive buffer")? };
            let own: Vec<u8>;
            let send: &[u8] = if in_place(sendbuf) {
                let at = displs[c.rank()] as usize * recvtype.extent;
                own = recv[at..at + counts[c.rank()]].to_vec();
                &own
            } else {
                let sendtype = datatype::lookup(sendtype)?;
                // SAFETY: MPI's rule for the send buffer.
                unsafe { send_bytes(sendbuf, sendcount, sendtype, "MPI_Allgatherv")? }
            };
            match offsets {
                None => c.allgatherv(send, recv, &counts).map_err(engine),
                Some(offsets) => {
                    let mut packed = vec![0u8; counts.iter().sum()];
                    c.allgatherv(send, &mut packed[..], &counts).map_err(engine)?;
                    unpack(&packed, recv, &counts, &offsets)
                }
            }
        })
    }
}

mpi_fn! {
    /// `MPI_Alltoall`; `MPI_IN_PLACE` as the send buffer.
    fn MPI_Alltoall / PMPI_Alltoall(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: c_int,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: c_int,
        comm: c_int,
    ) {
        on_comm("MPI_Alltoall", comm, |c| {
            let recvtype = datatype::lookup(recvtype)?;
            let block = recvtype.span(recvcount, "MPI_Alltoall")?;
            // SAFETY: the receive buffer holds a block per rank.
            let recv = unsafe { raw_mut(recvbuf, block * c.size(), "the receive buffer")? };
            let own: Vec<u8>;
            let send: &[u8] = if in_place(sendbuf) {
                own = recv.to_vec();
                &own
            } else {
                let sendtype = datatype::lookup(sendtype)?;
                let len = sendtype.span(sendcount, "MPI_Alltoall")? * c.size();
                // SAFETY: the send buffer holds a block per rank.
                unsafe { raw(sendbuf, len, "the send buffer")? }
            };
            c.alltoall(send, recv).map_err(engine)
        })
    }
}

mpi_fn! {
    /// `MPI_Alltoallv`.
    fn MPI_Alltoallv / PMPI_Alltoallv(
        sendbuf: *const c_void,
        sendcounts: *const c_int,
        sdispls: *const c_int,
        sendtype: c_int,
        recvbuf: *mut c_void,
        recvcounts: *const c_int,
        rdispls: *const c_int,
        recvtype: c_int,
        comm: c_int,
    ) {
        on_comm("MPI_Alltoallv", comm, |c| {
            let n = c.size();
            let recvtype = datatype::lookup(recvtype)?;
            // SAFETY: arrays of one entry per rank, as MPI requires.
            let (rcounts, rdispls) = unsafe { (ints(recvcounts, n, "recvcounts")?, ints(rdispls, n, "rdispls")?) };
            let rcounts = byte_counts(rcounts, recvtype);
            let roffsets: Vec<usize> = rdispls.iter().map(|&d| d as usize * recvtype.extent).collect();
            // SAFETY: the receive buffer spans every block.
            let recv = unsafe { raw_mut(recvbuf, span_of(&rcounts, Some(&roffsets)), "the receive buffer")? };
            let (packed_send, scounts) = if in_place(sendbuf) {
                (pack(recv, &rcounts, &roffsets)?, rcounts.clone())
            } else {
                let sendtype = datatype::lookup(sendtype)?;
                // SAFETY: arrays of one entry per rank, as MPI requires.
                let (scounts, sdispls) = unsafe { (ints(sendcounts, n, "sendcounts")?, ints(sdispls, n, "sdispls")?) };
                let scounts = byte_counts(scounts, sendtype);
                let soffsets: Vec<usize> = sdispls.iter().map(|&d| d as usize * sendtype.extent).collect();
                // SAFETY: the send buffer spans every block.
                let send = unsafe { raw(sendbuf, span_of(&scounts, Some(&soffsets)), "the send buffer")? };
                (pack(send, &scounts, &soffsets)?, scounts)
            };
            let mut packed_recv = vec![0u8; rcounts.iter().sum()];
            c.alltoallv(&packed_send[..], &scounts, &mut packed_recv[..], &rcounts).map_err(engine)?;
            unpack(&packed_recv, recv, &rcounts, &roffsets)
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
    op: AnyOp,
}

impl Typed for Reduce<'_> {
    type Output = grappe_comm::Result<()>;

    fn run<T: Element>(self) -> Self::Output {
        match self.op {
            AnyOp::Predefined(code) => self.run_with::<T, _>(Predefined(code)),
            AnyOp::User(user) => self.run_with::<T, _>(user),
        }
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
    send_count: c_int,
    recvbuf: *mut c_void,
    recv_count: c_int,
    datatype: c_int,
    (op, user): (c_int, Option<(crate::reduce::UserFunction, bool)>),
) -> Result<()> {
    let datatype = datatype::lookup(datatype)?;
    let op = match user {
        Some((function, commute)) => AnyOp::User(UserOperation { function, commute, datatype: datatype.handle }),
        None => {
            let code = OpCode::lookup(op)?;
            code.check(datatype)?;
            AnyOp::Predefined(code)
        }
    };
    let send_len = datatype.span(send_count, call)?;
    let recv_len = datatype.span(recv_count, call)?;
    let own: Vec<u8>;
    let (send, recv): (&[u8], &mut [u8]) = if in_place(sendbuf) {
        // The input is in the receive buffer, which the result overwrites
        // from its start (reduce-scatter: a part of it).
        // SAFETY: MPI's rule: the receive buffer holds the input.
        let whole = unsafe { raw_mut(recvbuf, send_len.max(recv_len), "the receive buffer")? };
        own = whole[..send_len].to_vec();
        (&own, &mut whole[..recv_len])
    } else {
        // SAFETY: MPI's rules for the two buffers (the receive buffer is
        // unused off the root of a reduce, where its length is 0).
        unsafe { (raw(sendbuf, send_len, "the send buffer")?, raw_mut(recvbuf, recv_len, "the receive buffer")?) }
    };
    with_type(datatype, Reduce { comm: c, what, send, recv, op }).map_err(engine)
}

mpi_fn! {
    /// `MPI_Reduce`; `MPI_IN_PLACE` as the root's send buffer.
    fn MPI_Reduce / PMPI_Reduce(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: c_int,
        datatype: c_int,
        op: c_int,
        root: c_int,
        comm: c_int,
    ) {
        let user = user_op(op)?;
        on_comm("MPI_Reduce", comm, |c| {
            let root = root_rank(root, c)?;
            let is_root = c.rank() == root;
            let recv_count = if is_root { count } else { 0 };
            if !is_root && in_place(sendbuf) {
                return Err(MpiError::new(class::BUFFER, "MPI_IN_PLACE as the send buffer of a rank that is not the root"));
            }
            let what = Reduction::Reduce { root, is_root };
            reduction(c, "MPI_Reduce", what, sendbuf, count, recvbuf, recv_count, datatype, (op, user))
        })
    }
}

mpi_fn! {
    /// `MPI_Allreduce`; `MPI_IN_PLACE` as the send buffer.
    fn MPI_Allreduce / PMPI_Allreduce(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: c_int,
        datatype: c_int,
        op: c_int,
        comm: c_int,
    ) {
        let user = user_op(op)?;
        on_comm("MPI_Allreduce", comm, |c| {
            reduction(c, "MPI_Allreduce", Reduction::Allreduce, sendbuf, count, recvbuf, count, datatype, (op, user))
        })
    }
}

mpi_fn! {
    /// `MPI_Scan`.
    fn MPI_Scan / PMPI_Scan(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: c_int,
        datatype: c_int,
        op: c_int,
        comm: c_int,
    ) {
        let user = user_op(op)?;
        on_comm("MPI_Scan", comm, |c| reduction(c, "MPI_Scan", Reduction::Scan, sendbuf, count, recvbuf, count, datatype, (op, user)))
    }
}

mpi_fn! {
    /// `MPI_Exscan`: rank 0's receive buffer is left as it was.
    fn MPI_Exscan / PMPI_Exscan(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: c_int,
        datatype: c_int,
        op: c_int,
        comm: c_int,
    ) {
        let user = user_op(op)?;
        on_comm("MPI_Exscan", comm, |c| {
            reduction(c, "MPI_Exscan", Reduction::Exscan, sendbuf, count, recvbuf, count, datatype, (op, user))
        })
    }
}

mpi_fn! {
    /// `MPI_Reduce_scatter_block`.
    fn MPI_Reduce_scatter_block / PMPI_Reduce_scatter_block(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        recvcount: c_int,
        datatype: c_int,
        op: c_int,
        comm: c_int,
    ) {
        let user = user_op(op)?;
        on_comm("MPI_Reduce_scatter_block", comm, |c| {
            let n = c.size() as c_int;
            let total = recvcount.checked_mul(n).ok_or_else(|| MpiError::new(class::COUNT, "count overflows"))?;
            reduction(c, "MPI_Reduce_scatter_block", Reduction::ReduceScatterBlock, sendbuf, total, recvbuf, recvcount, datatype, (op, user))
        })
    }
}

mpi_fn! {
    /// `MPI_Reduce_scatter`.
    fn MPI_Reduce_scatter / PMPI_Reduce_scatter(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        recvcounts: *const c_int,
        datatype: c_int,
        op: c_int,
        comm: c_int,
    ) {
        let user = user_op(op)?;
        on_comm("MPI_Reduce_scatter", comm, |c| {
            // SAFETY: one count per rank, as MPI requires.
            let counts = unsafe { ints(recvcounts, c.size(), "recvcounts")? };
            let total: c_int = counts.iter().sum();
            let mine = counts[c.rank()];
            let what = Reduction::ReduceScatter(counts.iter().map(|&n| n as usize).collect());
            reduction(c, "MPI_Reduce_scatter", what, sendbuf, total, recvbuf, mine, datatype, (op, user))
        })
    }
}

/// The function of user operation `handle`, if it is one.
fn user_op(handle: c_int) -> Result<Option<(crate::reduce::UserFunction, bool)>> {
    let Some(slot) = abi::direct_index(abi::kind::OP, handle) else { return Ok(None) };
    let state = state::lock("a reduction")?;
    match state.ops.get(slot) {
        Some(&found) => Ok(Some(found)),
        None => Err(MpiError::new(class::OP, format!("{handle:#x} is not an operation handle (or was freed)"))),
    }
}

mpi_fn! {
    /// `MPI_Op_create`: a reduction by the program's function. A
    /// non-commutative one combines contributions in rank order.
    fn MPI_Op_create / PMPI_Op_create(function: Option<crate::reduce::UserFunction>, commute: c_int, op: *mut c_int) {
        let function = function.ok_or_else(|| MpiError::new(class::ARG, "the user function is NULL"))?;
        let mut state = state::lock("MPI_Op_create")?;
        let handle = abi::direct_handle(abi::kind::OP, state.ops.insert((function, commute != 0)));
        // SAFETY: the caller's output argument.
        unsafe { super::put(op, handle, "op") }
    }
}

mpi_fn! {
    /// `MPI_Op_free`: the handle becomes `MPI_OP_NULL`.
    fn MPI_Op_free / PMPI_Op_free(op: *mut c_int) {
        // SAFETY: the caller's in-out argument.
        let handle = unsafe { super::get(op, "op")? };
        let mut state = state::lock("MPI_Op_free")?;
        let slot = abi::direct_index(abi::kind::OP, handle).filter(|&slot| state.ops.get(slot).is_some());
        let Some(slot) = slot else {
            return Err(MpiError::new(class::OP, format!("{handle:#x} is not a user operation (predefined ones cannot be freed)")));
        };
        state.ops.remove(slot);
        // SAFETY: the caller's in-out argument.
        unsafe { super::put(op, abi::OP_NULL, "op") }
    }
}

mpi_fn! {
    /// `MPI_Op_commutative`.
    fn MPI_Op_commutative / PMPI_Op_commutative(op: c_int, commute: *mut c_int) {
        let commutes = match user_op(op)? {
            Some((_, commute)) => commute,
            None => {
                OpCode::lookup(op)?;
                true
            }
        };
        // SAFETY: the caller's output argument.
        unsafe { super::put(commute, commutes as c_int, "commute") }
    }
}
