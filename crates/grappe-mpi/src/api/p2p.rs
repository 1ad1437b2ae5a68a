//! Point-to-point: blocking and non-blocking sends and receives, probes,
//! counts.
//!
//! Synchronous sends (`MPI_Ssend`, `MPI_Issend`, `MPI_Ssend_init`) go by
//! rendezvous whatever their size: they complete once the receiver has
//! matched them.

use std::ffi::{c_int, c_void};

use grappe_comm::{Source, Tag};

use crate::abi::{self, class, kind};
use crate::errors::{MpiError, Result};
use crate::state::{self, Locked, Persistent, PersistentP2p, RequestEntry, RequestSlot};
use crate::types::{self, Type};
use crate::waiting;
use crate::{counted_fn, mpi_fn};

use super::request::complete_outside;

use super::{
    Count, CountArg, Incoming, dest_rank, empty_status, get, incoming, outgoing, proc_null_status, put, recv_tag,
    send_tag, source_rank, status_of, status_on_error, write_status,
};

/// A blocking send in standard mode.
///
/// # Safety
/// `buf` holds `count` elements of `datatype`.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
unsafe fn send(
    call: &str,
    sync: bool,
    buf: *const c_void,
    count: Count,
    datatype: c_int,
    dest: c_int,
    tag: c_int,
    comm: c_int,
) -> Result<()> {
    let mut state = state::lock(call)?;
    if waiting::multiple() {
        // SAFETY: as the caller promised; the buffer is used until the
        // request completes, before this returns.
        let started =
            unsafe { isend(&mut state, call, Posted::ForBlockingCall, sync, buf, count, datatype, dest, tag, comm)? };
        return complete_outside(call, state, vec![started]).map(|_| ());
    }
    let entry = state.comm(comm)?;
    let on = |e: MpiError| e.on(comm);
    let datatype = message_type(datatype, count).map_err(on)?;
    // SAFETY: as the caller promised.
    let data = unsafe { outgoing(buf, count, &datatype, call) }.map_err(on)?;
    let tag = send_tag(tag).map_err(on)?;
    let Some(dest) = dest_rank(dest, &entry.comm).map_err(on)? else { return Ok(()) };
    let sent = match sync {
        true => entry.comm.ssend(&data[..], dest, tag),
        false => entry.comm.send(&data[..], dest, tag),
    };
    sent.map_err(|e| MpiError::from(e).on(comm))
}

/// The short path of a blocking standard send: elements of a predefined
/// type lying end to end, to a rank of a communicator, below
/// `MPI_THREAD_MULTIPLE`; the message goes straight from the buffer.
/// Every check of the general path is here too, as a test that sends
/// anything unusual (an error to name, `MPI_PROC_NULL`, a derived type)
/// the general way: a small message's latency is mostly the per-call
/// work, which this path keeps to the communicator's own.
///
/// # Safety
/// `buf` holds `count` elements of `datatype`.
#[inline]
unsafe fn short_send(
    buf: *const c_void,
    count: Count,
    datatype: c_int,
    dest: c_int,
    tag: c_int,
    comm: c_int,
) -> Option<Result<()>> {
    let len = crate::datatype::dense_len(datatype, count)?;
    if tag < 0 || dest < 0 || (buf.is_null() && len > 0) {
        return None;
    }
    // SAFETY: `len` bytes of elements lying end to end, as the caller promised.
    let data = unsafe { bytes_at(buf, len) };
    if waiting::multiple() {
        return short_send_multiple(data, dest as usize, tag, comm);
    }
    let state = state::enter_short()?;
    let entry = state.comm_if_valid(comm)?;
    if dest as usize >= entry.comm.size() {
        return None;
    }
    Some(entry.comm.send(data, dest as usize, tag).map_err(|e| MpiError::from(e).on(comm)))
}

/// [`short_send`] at `MPI_THREAD_MULTIPLE`: under the lock, a send that
/// completes at once (an eager message with room in the mailbox); any
/// other goes the general way, which waits with the lock let go.
#[inline(never)]
fn short_send_multiple(data: &[u8], dest: usize, tag: c_int, comm: c_int) -> Option<Result<()>> {
    let state = state::lock_short()?;
    let entry = state.comm_if_valid(comm)?;
    if dest >= entry.comm.size() {
        return None;
    }
    entry.comm.send_if_immediate(data, dest, tag).map(|sent| sent.map_err(|e| MpiError::from(e).on(comm)))
}

/// The `len` bytes at `buf` (which may be NULL if `len` is 0).
///
/// # Safety
/// `buf` points to `len` readable bytes, unless `len` is 0.
#[inline]
unsafe fn bytes_at<'a>(buf: *const c_void, len: usize) -> &'a [u8] {
    match len {
        0 => &[],
        // SAFETY: as the caller promised.
        _ => unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), len) },
    }
}

counted_fn! {
    /// `MPI_Send`.
    fn MPI_Send / PMPI_Send, MPI_Send_c / PMPI_Send_c(buf: *const c_void, count: Int, datatype: c_int, dest: c_int, tag: c_int, comm: c_int) {
        // SAFETY: MPI's rule for a send buffer.
        if let Some(sent) = unsafe { short_send(buf, count.wide(), datatype, dest, tag, comm) } {
            return sent;
        }
        // SAFETY: MPI's rule for a send buffer.
        unsafe { send(NAME, false, buf, count.wide(), datatype, dest, tag, comm) }
    }
}

counted_fn! {
    /// `MPI_Ssend`: returns once the receiver matched the message.
    fn MPI_Ssend / PMPI_Ssend, MPI_Ssend_c / PMPI_Ssend_c(buf: *const c_void, count: Int, datatype: c_int, dest: c_int, tag: c_int, comm: c_int) {
        // SAFETY: MPI's rule for a send buffer.
        unsafe { send(NAME, true, buf, count.wide(), datatype, dest, tag, comm) }
    }
}

counted_fn! {
    /// `MPI_Rsend`: a ready send is a standard send whose receive is
    /// known to be posted.
    fn MPI_Rsend / PMPI_Rsend, MPI_Rsend_c / PMPI_Rsend_c(buf: *const c_void, count: Int, datatype: c_int, dest: c_int, tag: c_int, comm: c_int) {
        // SAFETY: MPI's rule for a send buffer.
        unsafe { send(NAME, false, buf, count.wide(), datatype, dest, tag, comm) }
    }
}

counted_fn! {
    /// `MPI_Recv`.
    fn MPI_Recv / PMPI_Recv, MPI_Recv_c / PMPI_Recv_c(
        buf: *mut c_void,
        count: Int,
        datatype: c_int,
        source: c_int,
        tag: c_int,
        comm: c_int,
        status: *mut abi::Status,
    ) {
        // SAFETY: MPI's rules for a receive buffer and a status.
        if let Some(received) = unsafe { short_recv(buf, count.wide(), datatype, source, tag, comm, status) } {
            return received;
        }
        // SAFETY: as above.
        unsafe { recv(NAME, buf, count.wide(), datatype, source, tag, comm, status) }
    }
}

/// A blocking receive, the general way (any datatype, `MPI_PROC_NULL`,
/// `MPI_THREAD_MULTIPLE`, errors named).
///
/// # Safety
/// As [`short_recv`].
#[allow(clippy::too_many_arguments)]
#[inline(never)]
unsafe fn recv(
    call: &str,
    buf: *mut c_void,
    count: Count,
    datatype: c_int,
    source: c_int,
    tag: c_int,
    comm: c_int,
    status: *mut abi::Status,
) -> Result<()> {
    let mut state = state::lock(call)?;
    if waiting::multiple() {
        // SAFETY: MPI's rule for a receive buffer; it is used until
        // the request completes, before this returns.
        let started =
            unsafe { irecv(&mut state, call, Posted::ForBlockingCall, buf, count, datatype, source, tag, comm)? };
        let got = complete_outside(call, state, vec![started]).map(|mut got| got.remove(0));
        // SAFETY: the caller's status or MPI_STATUS_IGNORE.
        let got = unsafe { status_on_error(status, got)? };
        // SAFETY: as above.
        unsafe { write_status(status, got) };
        return Ok(());
    }
    let entry = state.comm(comm)?;
    let on = |e: MpiError| e.on(comm);
    let datatype = message_type(datatype, count).map_err(on)?;
    // SAFETY: MPI's rule for a receive buffer.
    let mut into = unsafe { incoming(buf, count, &datatype, call) }.map_err(on)?;
    let tag = recv_tag(tag).map_err(on)?;
    let received = match source_rank(source, &entry.comm).map_err(on)? {
        None => proc_null_status(),
        Some(source) => {
            let got = entry.comm.recv(into.bytes(), source, tag).map_err(|e| MpiError::from(e).on(comm));
            // SAFETY: the caller's status or MPI_STATUS_IGNORE.
            let got = unsafe { status_on_error(status, got)? };
            into.finish(got.bytes);
            status_of(got)
        }
    };
    // SAFETY: the caller's status or MPI_STATUS_IGNORE.
    unsafe { write_status(status, received) };
    Ok(())
}

/// The short path of a blocking receive, as [`short_send`]'s: elements
/// of a predefined type lying end to end, from a rank of the communicator
/// or any; the message lands in the buffer itself.
///
/// # Safety
/// `buf` has room for `count` elements of `datatype`; `status` is
/// `MPI_STATUS_IGNORE`, NULL or a writable status.
#[inline]
unsafe fn short_recv(
    buf: *mut c_void,
    count: Count,
    datatype: c_int,
    source: c_int,
    tag: c_int,
    comm: c_int,
    status: *mut abi::Status,
) -> Option<Result<()>> {
    let len = crate::datatype::dense_len(datatype, count)?;
    if buf.is_null() && len > 0 {
        return None;
    }
    let into: &mut [u8] = match len {
        0 => &mut [],
        // SAFETY: room for `len` bytes, as the caller promised.
        _ => unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), len) },
    };
    if waiting::multiple() {
        if tag < 0 || source < 0 {
            return None;
        }
        // SAFETY: as the caller promised.
        return unsafe { short_recv_multiple(into, source, tag, comm, status) };
    }
    let tag = match tag {
        abi::ANY_TAG => Tag::Any,
        t if t >= 0 => Tag::Is(t),
        _ => return None,
    };
    let state = state::enter_short()?;
    let entry = state.comm_if_valid(comm)?;
    let source = match source {
        abi::ANY_SOURCE => Source::Any,
        s if s >= 0 && (s as usize) < entry.comm.size() => Source::Rank(s as usize),
        _ => return None,
    };
    let got = entry.comm.recv(into, source, tag).map_err(|e| MpiError::from(e).on(comm));
    // SAFETY: as the caller promised.
    Some(unsafe { status_on_error(status, got) }.map(|got| unsafe { write_status(status, status_of(got)) }))
}

/// Looks of [`short_recv_multiple`] after the first, the lock let go
/// between two: about the time a small message takes to come back, so
/// that a receive that waits longer goes the general way soon.
const MULTIPLE_SHORT_LOOKS: u32 = 256;

/// [`short_recv`] at `MPI_THREAD_MULTIPLE`, from a named rank with a named
/// tag: takes the message if it is at the head of its mailbox with nothing
/// else in flight, looking again for a short while (not when ranks
/// outnumber cores, nor when traced: the receive's record starts at its
/// first look) with the lock let go between looks, as the general path's
/// wait does; `None` sends the receive the general way.
///
/// # Safety
/// As [`short_recv`].
#[inline(never)]
unsafe fn short_recv_multiple(
    into: &mut [u8],
    source: c_int,
    tag: c_int,
    comm: c_int,
    status: *mut abi::Status,
) -> Option<Result<()>> {
    let source = usize::try_from(source).ok()?;
    let looks = {
        let mut state = state::lock_short()?;
        let entry = state.comm_if_valid(comm)?;
        if source >= entry.comm.size() {
            return None;
        }
        if let Some(got) = entry.comm.recv_if_here(into, source, tag, true) {
            // SAFETY: as the caller promised.
            return Some(unsafe { received_short(got, comm, status) });
        }
        let looks = match entry.comm.rank_context().tracing() {
            true => 0,
            false => state.bell.spins().min(MULTIPLE_SHORT_LOOKS),
        };
        state.quiet = true;
        looks
    };
    for _ in 0..looks {
        std::hint::spin_loop();
        let mut state = state::lock_short()?;
        if let Some(got) = state.comm_if_valid(comm)?.comm.recv_if_here(into, source, tag, false) {
            // SAFETY: as the caller promised.
            return Some(unsafe { received_short(got, comm, status) });
        }
        state.quiet = true;
    }
    None
}

/// The outcome of a receive of a short path, its status written.
///
/// # Safety
/// `status` is `MPI_STATUS_IGNORE`, NULL or a writable status.
unsafe fn received_short(
    got: grappe_comm::Result<grappe_comm::Status>,
    comm: c_int,
    status: *mut abi::Status,
) -> Result<()> {
    let got = got.map_err(|e| MpiError::from(e).on(comm));
    // SAFETY: as the caller promised.
    unsafe { status_on_error(status, got) }.map(|got| unsafe { write_status(status, status_of(got)) })
}

/// A send and a receive that cannot deadlock each other.
///
/// # Safety
/// The buffers hold their elements, as for a send and a receive.
#[allow(clippy::too_many_arguments)]
unsafe fn sendrecv(
    call: &str,
    (sendbuf, sendcount, sendtype, dest, sendtag): (*const c_void, Count, c_int, c_int, c_int),
    (recvbuf, recvcount, recvtype, source, recvtag): (*mut c_void, Count, c_int, c_int, c_int),
    comm: c_int,
    status: *mut abi::Status,
) -> Result<()> {
    let mut state = state::lock(call)?;
    if waiting::multiple() {
        // SAFETY: MPI's rules for the buffers, used until the requests
        // complete, before this returns.
        let started = unsafe {
            let received =
                irecv(&mut state, call, Posted::ForBlockingCall, recvbuf, recvcount, recvtype, source, recvtag, comm)?;
            vec![
                received,
                isend(
                    &mut state,
                    call,
                    Posted::ForBlockingCall,
                    false,
                    sendbuf,
                    sendcount,
                    sendtype,
                    dest,
                    sendtag,
                    comm,
                )?,
            ]
        };
        let got = complete_outside(call, state, started).map(|got| got[0]);
        // SAFETY: the caller's status or MPI_STATUS_IGNORE.
        let got = unsafe { status_on_error(status, got)? };
        // SAFETY: as above.
        unsafe { write_status(status, got) };
        return Ok(());
    }
    let entry = state.comm(comm)?;
    let on = |e: MpiError| e.on(comm);
    let (sendtype, recvtype) =
        (message_type(sendtype, sendcount).map_err(on)?, message_type(recvtype, recvcount).map_err(on)?);
    // SAFETY: MPI's rules for send and receive buffers.
    let (out, mut into) = unsafe {
        (
            outgoing(sendbuf, sendcount, &sendtype, call).map_err(on)?,
            incoming(recvbuf, recvcount, &recvtype, call).map_err(on)?,
        )
    };
    let out = &out[..];
    let (sendtag, recvtag) = (send_tag(sendtag).map_err(on)?, recv_tag(recvtag).map_err(on)?);
    let dest = dest_rank(dest, &entry.comm).map_err(on)?;
    let source = source_rank(source, &entry.comm).map_err(on)?;
    let from_engine = |e: grappe_comm::Error| MpiError::from(e).on(comm);
    let received = match (dest, source) {
        (Some(dest), Some(source)) => {
            Some(entry.comm.sendrecv(out, dest, sendtag, into.bytes(), source, recvtag).map_err(from_engine)?)
        }
        (Some(dest), None) => {
            entry.comm.send(out, dest, sendtag).map_err(from_engine)?;
            None
        }
        (None, Some(source)) => Some(entry.comm.recv(into.bytes(), source, recvtag).map_err(from_engine)?),
        (None, None) => None,
    };
    let received = match received {
        Some(got) => {
            into.finish(got.bytes);
            status_of(got)
        }
        None => proc_null_status(),
    };
    // SAFETY: the caller's status or MPI_STATUS_IGNORE.
    unsafe { write_status(status, received) };
    Ok(())
}

counted_fn! {
    /// `MPI_Sendrecv`.
    fn MPI_Sendrecv / PMPI_Sendrecv, MPI_Sendrecv_c / PMPI_Sendrecv_c(
        sendbuf: *const c_void,
        sendcount: Int,
        sendtype: c_int,
        dest: c_int,
        sendtag: c_int,
        recvbuf: *mut c_void,
        recvcount: Int,
        recvtype: c_int,
        source: c_int,
        recvtag: c_int,
        comm: c_int,
        status: *mut abi::Status,
    ) {
        let send = (sendbuf, sendcount.wide(), sendtype, dest, sendtag);
        let recv = (recvbuf, recvcount.wide(), recvtype, source, recvtag);
        // SAFETY: MPI's rules for the buffers.
        unsafe { sendrecv(NAME, send, recv, comm, status) }
    }
}

counted_fn! {
    /// `MPI_Sendrecv_replace`: the message sent is copied first.
    fn MPI_Sendrecv_replace / PMPI_Sendrecv_replace, MPI_Sendrecv_replace_c / PMPI_Sendrecv_replace_c(
        buf: *mut c_void,
        count: Int,
        datatype: c_int,
        dest: c_int,
        sendtag: c_int,
        source: c_int,
        recvtag: c_int,
        comm: c_int,
        status: *mut abi::Status,
    ) {
        let (packed, sent_count) = {
            let on = |e: MpiError| e.on(comm);
            let sendtype = message_type(datatype, count).map_err(on)?;
            // SAFETY: MPI's rule for the buffer, read before it is written.
            let data = unsafe { outgoing(buf, count, &sendtype, NAME) }.map_err(on)?;
            (data.into_owned(), sendtype.packed_len(count.wide().max(0) as usize) as Count)
        };
        // The copy goes as bytes: its elements are packed already.
        let send = (packed.as_ptr().cast::<c_void>(), sent_count, crate::datatype::BYTE.handle, dest, sendtag);
        let recv = (buf, count.wide(), datatype, source, recvtag);
        // SAFETY: `outgoing` holds the `count` elements; `buf` as the caller promised.
        unsafe { sendrecv(NAME, send, recv, comm, status) }
    }
}

/// What a send or receive is started for.
#[derive(Clone, Copy)]
pub(super) enum Posted {
    /// A request the program holds (`MPI_Isend`, `MPI_Start`...).
    AsRequest,
    /// A blocking call that waits for it (see [`crate::waiting`]): traced
    /// as the blocking call.
    ForBlockingCall,
    /// A round of a partitioned request, on the communicator's partitioned
    /// context (see `api::partitioned`).
    Partitioned,
}

/// Starts a send; the handle of its request.
///
/// # Safety
/// `buf` holds `count` elements of `datatype` until the request completes.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn isend(
    state: &mut Locked,
    call: &str,
    how: Posted,
    sync: bool,
    buf: *const c_void,
    count: Count,
    datatype: c_int,
    dest: c_int,
    tag: c_int,
    comm: c_int,
) -> Result<RequestEntry> {
    let entry = state.comm(comm)?;
    let on = |e: MpiError| e.on(comm);
    let datatype = message_type(datatype, count).map_err(on)?;
    // SAFETY: MPI's rule: the buffer stays valid until the request completes.
    let data = unsafe { outgoing(buf, count, &datatype, call) }.map_err(on)?;
    let tag = send_tag(tag).map_err(on)?;
    let request = match dest_rank(dest, &entry.comm).map_err(on)? {
        None => RequestEntry::Done { status: empty_status() },
        Some(dest) => {
            let keep: Option<Box<[u8]>> = match data {
                std::borrow::Cow::Owned(packed) => Some(packed.into_boxed_slice()),
                std::borrow::Cow::Borrowed(_) => None,
            };
            let bytes: &'static [u8] = match &keep {
                // SAFETY: the packed copy is on the heap, kept in the
                // request's entry until the request is over (see `RequestEntry`).
                Some(packed) => unsafe { &*(&**packed as *const [u8]) },
                // SAFETY: MPI's rule: the caller's buffer stays valid until the request completes.
                None => unsafe { data_borrowed(buf, count, &datatype) },
            };
            let request = match (how, sync) {
                (Posted::ForBlockingCall, _) => entry.comm.isend_for_blocking_call(state.scope, bytes, dest, tag, sync),
                (Posted::AsRequest, true) => entry.comm.issend(state.scope, bytes, dest, tag),
                (Posted::AsRequest, false) => entry.comm.isend(state.scope, bytes, dest, tag),
                (Posted::Partitioned, _) => entry.comm.isend_partitioned(state.scope, bytes, dest, tag),
            };
            let request = request.map_err(|e| MpiError::from(e).on(comm))?;
            RequestEntry::Active { request, comm, keep, incoming: None }
        }
    };
    Ok(request)
}

/// Starts a receive; the handle of its request.
///
/// # Safety
/// `buf` holds `count` elements of `datatype`, untouched until the request completes.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn irecv(
    state: &mut Locked,
    call: &str,
    how: Posted,
    buf: *mut c_void,
    count: Count,
    datatype: c_int,
    source: c_int,
    tag: c_int,
    comm: c_int,
) -> Result<RequestEntry> {
    let entry = state.comm(comm)?;
    let on = |e: MpiError| e.on(comm);
    let datatype = message_type(datatype, count).map_err(on)?;
    // SAFETY: MPI's rule: the buffer stays valid, and is not touched, until
    // the request completes.
    let mut into: Incoming<'static> = unsafe { incoming(buf, count, &datatype, call) }.map_err(on)?;
    let tag = recv_tag(tag).map_err(on)?;
    let request = match source_rank(source, &entry.comm).map_err(on)? {
        None => RequestEntry::Done { status: proc_null_status() },
        Some(source) => {
            // SAFETY: the bytes are the caller's buffer or `into`'s heap
            // copy, which the entry keeps until the request is over.
            let bytes: &'static mut [u8] = unsafe { &mut *(into.bytes() as *mut [u8]) };
            let request = match how {
                Posted::ForBlockingCall => entry.comm.irecv_for_blocking_call(state.scope, bytes, source, tag),
                Posted::AsRequest => entry.comm.irecv(state.scope, bytes, source, tag),
                Posted::Partitioned => match (source, tag) {
                    (Source::Rank(source), Tag::Is(tag)) => {
                        entry.comm.irecv_partitioned(state.scope, bytes, source, tag)
                    }
                    _ => {
                        return Err(MpiError::new(
                            class::ARG,
                            format!("{call}: a partitioned receive takes no wildcards"),
                        )
                        .on(comm));
                    }
                },
            };
            let request = request.map_err(|e| MpiError::from(e).on(comm))?;
            RequestEntry::Active { request, comm, keep: None, incoming: Some(into) }
        }
    };
    Ok(request)
}

macro_rules! isend_fn {
    ($(#[$doc:meta])* $name:ident / $pname:ident, $cname:ident / $pcname:ident, $sync:expr) => {
        counted_fn! {
            $(#[$doc])*
            fn $name / $pname, $cname / $pcname(
                buf: *const c_void,
                count: Int,
                datatype: c_int,
                dest: c_int,
                tag: c_int,
                comm: c_int,
                request: *mut c_int,
            ) {
                let mut state = state::lock(NAME)?;
                // SAFETY: MPI's rule for a non-blocking send buffer.
                let started = unsafe { isend(&mut state, NAME, Posted::AsRequest, $sync, buf, count.wide(), datatype, dest, tag, comm)? };
                let handle = state.add_request(RequestSlot { now: Some(started), persistent: None });
                // SAFETY: the caller's output argument.
                unsafe { put(request, handle, "request") }
            }
        }
    };
}

isend_fn!(
    /// `MPI_Isend`.
    MPI_Isend / PMPI_Isend, MPI_Isend_c / PMPI_Isend_c,
    false
);
isend_fn!(
    /// `MPI_Issend`: completes once the receiver matched the message.
    MPI_Issend / PMPI_Issend, MPI_Issend_c / PMPI_Issend_c,
    true
);
isend_fn!(
    /// `MPI_Irsend`.
    MPI_Irsend / PMPI_Irsend, MPI_Irsend_c / PMPI_Irsend_c,
    false
);

/// Gives the program, in `request`, the request `start` starts under the lock.
fn started_as_request(
    call: &str,
    request: *mut c_int,
    start: impl FnOnce(&mut Locked) -> Result<RequestEntry>,
) -> Result<()> {
    if request.is_null() {
        return Err(MpiError::new(class::REQUEST, format!("{call}: the request argument is NULL")));
    }
    let mut state = state::lock(call)?;
    let started = start(&mut state)?;
    let handle = state.add_request(RequestSlot { now: Some(started), persistent: None });
    // SAFETY: the caller's output argument, checked non-NULL.
    unsafe { put(request, handle, "request") }
}

/// Starts the send half of `MPI_Isendrecv(_replace)` from a copy of the
/// data, detached: the program's request is the receive's, and once it
/// completes the program may reuse the send buffer (or, for `_replace`,
/// has the received data in it) whether or not the send has been received.
///
/// # Safety
/// `buf` holds `count` elements of `datatype`.
#[allow(clippy::too_many_arguments)]
unsafe fn detached_send_of_copy(
    state: &mut Locked,
    call: &str,
    buf: *const c_void,
    count: Count,
    datatype: c_int,
    dest: c_int,
    tag: c_int,
    comm: c_int,
) -> Result<()> {
    let on = |e: MpiError| e.on(comm);
    let committed = message_type(datatype, count).map_err(on)?;
    // SAFETY: as the caller promised.
    let copy: Box<[u8]> =
        unsafe { outgoing(buf, count, &committed, call) }.map_err(on)?.into_owned().into_boxed_slice();
    let len = copy.len() as Count;
    let byte = crate::datatype::BYTE.handle;
    // SAFETY: the copy is on the heap and goes to the detached request
    // with it, which keeps it until the send is over.
    let started =
        unsafe { isend(state, call, Posted::AsRequest, false, copy.as_ptr().cast(), len, byte, dest, tag, comm)? };
    if let RequestEntry::Active { request, incoming, .. } = started {
        state.freed.push((request, Some(copy), incoming));
    }
    Ok(())
}

counted_fn! {
    /// `MPI_Isendrecv` (MPI 4): a send and a receive as one request, which
    /// completes with the receive (the send goes on from a copy).
    fn MPI_Isendrecv / PMPI_Isendrecv, MPI_Isendrecv_c / PMPI_Isendrecv_c(
        sendbuf: *const c_void,
        sendcount: Int,
        sendtype: c_int,
        dest: c_int,
        sendtag: c_int,
        recvbuf: *mut c_void,
        recvcount: Int,
        recvtype: c_int,
        source: c_int,
        recvtag: c_int,
        comm: c_int,
        request: *mut c_int,
    ) {
        let call = NAME;
        // SAFETY: MPI's rules for the two buffers (the receive buffer stays
        // valid and untouched until the request completes).
        started_as_request(call, request, |state| unsafe {
            detached_send_of_copy(state, call, sendbuf, sendcount.wide(), sendtype, dest, sendtag, comm)?;
            irecv(state, call, Posted::AsRequest, recvbuf, recvcount.wide(), recvtype, source, recvtag, comm)
        })
    }
}

counted_fn! {
    /// `MPI_Isendrecv_replace` (MPI 4): the buffer's data goes out (from a
    /// copy taken now) and the message received takes its place.
    fn MPI_Isendrecv_replace / PMPI_Isendrecv_replace, MPI_Isendrecv_replace_c / PMPI_Isendrecv_replace_c(
        buf: *mut c_void,
        count: Int,
        datatype: c_int,
        dest: c_int,
        sendtag: c_int,
        source: c_int,
        recvtag: c_int,
        comm: c_int,
        request: *mut c_int,
    ) {
        let call = NAME;
        // SAFETY: MPI's rule for the buffer; the send reads it now, before
        // the receive is posted into it.
        started_as_request(call, request, |state| unsafe {
            detached_send_of_copy(state, call, buf, count.wide(), datatype, dest, sendtag, comm)?;
            irecv(state, call, Posted::AsRequest, buf, count.wide(), datatype, source, recvtag, comm)
        })
    }
}

counted_fn! {
    /// `MPI_Irecv`.
    fn MPI_Irecv / PMPI_Irecv, MPI_Irecv_c / PMPI_Irecv_c(
        buf: *mut c_void,
        count: Int,
        datatype: c_int,
        source: c_int,
        tag: c_int,
        comm: c_int,
        request: *mut c_int,
    ) {
        let mut state = state::lock(NAME)?;
        // SAFETY: MPI's rule for a non-blocking receive buffer.
        let started = unsafe { irecv(&mut state, NAME, Posted::AsRequest, buf, count.wide(), datatype, source, tag, comm)? };
        let handle = state.add_request(RequestSlot { now: Some(started), persistent: None });
        // SAFETY: the caller's output argument.
        unsafe { put(request, handle, "request") }
    }
}

mpi_fn! {
    /// `MPI_Probe`.
    fn MPI_Probe / PMPI_Probe(source: c_int, tag: c_int, comm: c_int, status: *mut abi::Status) {
        let state = state::lock("MPI_Probe")?;
        let entry = state.comm(comm)?;
        let on = |e: MpiError| e.on(comm);
        let tag = recv_tag(tag).map_err(on)?;
        let found = match source_rank(source, &entry.comm).map_err(on)? {
            None => proc_null_status(),
            Some(source) if waiting::multiple() => {
                let iprobe = |state: &mut Locked| {
                    let found = state.comm(comm)?.comm.iprobe(source, tag);
                    found.map_err(|e| MpiError::from(e).on(comm))
                };
                status_of(waiting::until("MPI_Probe", state, iprobe)?.1)
            }
            Some(source) => status_of(entry.comm.probe(source, tag).map_err(|e| MpiError::from(e).on(comm))?),
        };
        // SAFETY: the caller's status or MPI_STATUS_IGNORE.
        unsafe { write_status(status, found) };
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Iprobe`.
    fn MPI_Iprobe / PMPI_Iprobe(source: c_int, tag: c_int, comm: c_int, flag: *mut c_int, status: *mut abi::Status) {
        let state = state::lock("MPI_Iprobe")?;
        let entry = state.comm(comm)?;
        let on = |e: MpiError| e.on(comm);
        let tag = recv_tag(tag).map_err(on)?;
        let found = match source_rank(source, &entry.comm).map_err(on)? {
            None => Some(proc_null_status()),
            Some(source) => entry.comm.iprobe(source, tag).map_err(|e| MpiError::from(e).on(comm))?.map(status_of),
        };
        // SAFETY: the caller's output arguments.
        unsafe {
            put(flag, found.is_some() as c_int, "flag")?;
            if let Some(found) = found {
                write_status(status, found);
            }
        }
        Ok(())
    }
}

counted_fn! {
    /// `MPI_Get_count`: `MPI_UNDEFINED` if the message is not a whole
    /// number of elements.
    fn MPI_Get_count / PMPI_Get_count, MPI_Get_count_c / PMPI_Get_count_c(status: *const abi::Status, datatype: c_int, count: *mut Int) {
        // SAFETY: the caller's status.
        let status = unsafe { get(status, "status")? };
        let datatype = types::lookup(datatype)?;
        let size = datatype.size() as u64;
        let elements = match size {
            0 => 0,
            size if status.bytes() % size != 0 => Int::UNDEFINED,
            size => Int::or_undefined(status.bytes() / size),
        };
        // SAFETY: the caller's output argument.
        unsafe { put(count, elements, "count") }
    }
}

counted_fn! {
    /// `MPI_Get_elements`: the predefined elements received, whole
    /// elements of the datatype or not.
    fn MPI_Get_elements / PMPI_Get_elements, MPI_Get_elements_c / PMPI_Get_elements_c(status: *const abi::Status, datatype: c_int, count: *mut Int) {
        // SAFETY: the caller's status.
        let status = unsafe { get(status, "status")? };
        let datatype = types::lookup(datatype)?;
        // SAFETY: the caller's output argument.
        unsafe { put(count, Int::or_undefined(elements_in(&datatype, status.bytes())), "count") }
    }
}

/// The predefined elements in `bytes` of packed `datatype` elements
/// (`MPI_Get_elements` gives MPI_UNDEFINED past `c_int`, `MPI_Get_elements_x`
/// the whole count).
fn elements_in(datatype: &Type, bytes: u64) -> u64 {
    let size = datatype.size() as u64;
    if size == 0 {
        return 0;
    }
    let whole = (bytes / size).saturating_mul(datatype.elements() as u64);
    let rest = bytes % size;
    let partial = match datatype.base() {
        Some((base, _)) if base.size > 0 && !matches!(base.kind, crate::datatype::Kind::Pair(_)) => {
            rest / base.size as u64
        }
        _ => {
            // Mixed parts (a struct, or pairs whose value may have come
            // without its index): count the whole predefined elements of
            // the type map that the last partial element's bytes cover.
            let (mut budget, mut partial) = (rest as usize, 0u64);
            elements_within(datatype, &mut budget, &mut partial);
            partial
        }
    };
    whole + partial
}

/// Walks `datatype`'s type map in order, counting into `elements` the
/// predefined elements that fit whole in `budget` bytes of packed data
/// (taken from it); false once the budget ends inside an element.
fn elements_within(datatype: &Type, budget: &mut usize, elements: &mut u64) -> bool {
    let size = datatype.size();
    if size == 0 {
        return true;
    }
    if *budget >= size {
        *budget -= size;
        *elements += datatype.elements() as u64;
        return true;
    }
    match datatype {
        // A pair's value comes first, then its index: the value counts.
        Type::Predefined(d) => {
            if let crate::datatype::Kind::Pair(pair) = d.kind {
                *elements += (*budget >= d.size - pair.index_size()) as u64;
            }
            false
        }
        Type::Derived(layout) => {
            let env = &layout.envelope;
            match &env.datatypes[..] {
                // One constituent type: the element is size / its size of them.
                [old] => (0..size / old.size().max(1)).all(|_| elements_within(old, budget, elements)),
                // A struct: counts, then block lengths, in its integers.
                parts => parts.iter().enumerate().all(|(i, part)| {
                    let len = env.count(i + 1).unwrap_or(0).max(0);
                    (0..len).all(|_| elements_within(part, budget, elements))
                }),
            }
        }
    }
}

counted_fn! {
    /// `MPI_Type_size`.
    fn MPI_Type_size / PMPI_Type_size, MPI_Type_size_c / PMPI_Type_size_c(datatype: c_int, size: *mut Int) {
        let datatype = types::lookup(datatype)?;
        // SAFETY: the caller's output argument.
        unsafe { put(size, Int::or_undefined(datatype.size() as u64), "size") }
    }
}

impl Locked {
    /// The handle of a new request.
    pub fn add_request(&mut self, request: RequestSlot) -> c_int {
        self.reap_freed();
        let slot = self.requests.insert(request);
        abi::direct_handle(kind::REQUEST, slot)
    }
}

/// The datatype of a point-to-point buffer. `MPI_DATATYPE_NULL` with no
/// elements is an empty message, as MPICH takes it (programs built
/// against MPICH send empty messages so, e.g. `MPI_Ssend_init(NULL, 0,
/// MPI_DATATYPE_NULL, ...)`); with elements it is `MPI_ERR_TYPE`.
fn message_type(datatype: c_int, count: impl CountArg) -> Result<Type> {
    if datatype == abi::DATATYPE_NULL && count.wide() == 0 {
        return types::committed(crate::datatype::BYTE.handle);
    }
    types::committed(datatype)
}

/// `MPI_ERR_REQUEST` for a handle that names no request.
pub(super) fn not_a_request(handle: c_int) -> MpiError {
    MpiError::new(class::REQUEST, format!("{handle:#x} is not a request handle (or its request completed already)"))
}

/// A persistent request, inactive until started. A derived datatype is
/// kept under a handle of the request's own, so that the program may free
/// its handle while the request lives (MPI: a freed datatype's pending
/// communication is unaffected); [`release_kept_type`] frees it with the
/// request.
fn init_persistent(call: &str, mut persistent: PersistentP2p, request: *mut c_int) -> Result<()> {
    let mut state = state::lock(call)?;
    let entry = state.comm(persistent.comm)?;
    let on = |e: MpiError| e.on(persistent.comm);
    let datatype = message_type(persistent.datatype, persistent.count).map_err(on)?;
    crate::api::count_of(persistent.count, call).map_err(on)?;
    match persistent.send {
        true => dest_rank(persistent.peer, &entry.comm).map_err(on)?,
        false => source_rank(persistent.peer, &entry.comm).map_err(on)?.map(|_| 0),
    };
    if let Type::Derived(layout) = datatype {
        persistent.datatype = types::register((*layout).clone());
    }
    let handle = state.add_request(RequestSlot { now: None, persistent: Some(Persistent::P2p(persistent)) });
    // SAFETY: the caller's output argument.
    unsafe { put(request, handle, "request") }
}

macro_rules! send_init_fn {
    ($(#[$doc:meta])* $name:ident / $pname:ident, $cname:ident / $pcname:ident, $sync:expr, $buffered:expr) => {
        counted_fn! {
            $(#[$doc])*
            fn $name / $pname, $cname / $pcname(
                buf: *const c_void,
                count: Int,
                datatype: c_int,
                dest: c_int,
                tag: c_int,
                comm: c_int,
                request: *mut c_int,
            ) {
                let tag = send_tag(tag).map_err(|e| e.on(comm))?;
                let persistent = PersistentP2p {
                    send: true,
                    sync: $sync,
                    buffered: $buffered,
                    buf: buf.cast_mut(),
                    count: count.wide(),
                    datatype,
                    peer: dest,
                    tag,
                    comm,
                };
                init_persistent(NAME, persistent, request)
            }
        }
    };
}

send_init_fn!(
    /// `MPI_Send_init`.
    MPI_Send_init / PMPI_Send_init, MPI_Send_init_c / PMPI_Send_init_c,
    false,
    false
);
send_init_fn!(
    /// `MPI_Ssend_init`.
    MPI_Ssend_init / PMPI_Ssend_init, MPI_Ssend_init_c / PMPI_Ssend_init_c,
    true,
    false
);
send_init_fn!(
    /// `MPI_Rsend_init`.
    MPI_Rsend_init / PMPI_Rsend_init, MPI_Rsend_init_c / PMPI_Rsend_init_c,
    false,
    false
);
send_init_fn!(
    /// `MPI_Bsend_init`: each start copies into the attached buffer's room.
    MPI_Bsend_init / PMPI_Bsend_init, MPI_Bsend_init_c / PMPI_Bsend_init_c,
    false,
    true
);

counted_fn! {
    /// `MPI_Recv_init`.
    fn MPI_Recv_init / PMPI_Recv_init, MPI_Recv_init_c / PMPI_Recv_init_c(
        buf: *mut c_void,
        count: Int,
        datatype: c_int,
        source: c_int,
        tag: c_int,
        comm: c_int,
        request: *mut c_int,
    ) {
        recv_tag(tag).map_err(|e| e.on(comm))?;
        let persistent = PersistentP2p {
            send: false,
            sync: false,
            buffered: false,
            buf,
            count: count.wide(),
            datatype,
            peer: source,
            tag,
            comm,
        };
        init_persistent(NAME, persistent, request)
    }
}

/// Frees the datatype handle a persistent request kept (see
/// [`init_persistent`]): a derived one is the request's own.
pub(super) fn release_kept_type(persistent: &PersistentP2p) {
    if let Ok(Type::Derived(_)) = types::lookup(persistent.datatype) {
        // Only the request holds the handle, so it is there to free.
        let _ = types::free(persistent.datatype);
    }
}

/// Starts the persistent request `handle`.
fn start(state: &mut Locked, handle: c_int) -> Result<()> {
    let slot = abi::direct_index(kind::REQUEST, handle).ok_or_else(|| not_a_request(handle))?;
    let Some(RequestSlot { now, persistent: Some(p) }) = state.requests.get(slot) else {
        return Err(MpiError::new(class::REQUEST, format!("{handle:#x} is not a persistent request")));
    };
    if now.is_some() {
        return Err(MpiError::new(class::REQUEST, format!("persistent request {handle:#x} is active already")));
    }
    let p = match p.clone() {
        Persistent::P2p(p) => p,
        Persistent::Collective(start) => return start_collective(state, slot, &start),
        Persistent::Partitioned(round) => return super::partitioned::start(state, slot, &round),
    };
    if p.buffered {
        crate::api::misc::bsend_in(state, "MPI_Start", p.buf, p.count, p.datatype, p.peer, p.tag, p.comm)?;
        let status = abi::Status { source: abi::ANY_SOURCE, tag: abi::ANY_TAG, ..Default::default() };
        state.requests.get_mut(slot).expect("checked above").now = Some(RequestEntry::Done { status });
        return Ok(());
    }
    // SAFETY: MPI's rule: a persistent request's buffer stays valid until
    // the request is freed, untouched while it is active.
    let started = unsafe {
        match p.send {
            true => {
                isend(state, "MPI_Start", Posted::AsRequest, p.sync, p.buf, p.count, p.datatype, p.peer, p.tag, p.comm)?
            }
            false => irecv(state, "MPI_Start", Posted::AsRequest, p.buf, p.count, p.datatype, p.peer, p.tag, p.comm)?,
        }
    };
    state.requests.get_mut(slot).expect("checked above").now = Some(started);
    Ok(())
}

/// Starts a round of the persistent collective in `slot`: its
/// non-blocking collective, whose operation the persistent request takes
/// over.
fn start_collective(state: &mut Locked, slot: usize, start: &crate::api::Starter) -> Result<()> {
    let mut fresh = abi::REQUEST_NULL;
    let code = state.let_go_during(|| start(&mut fresh));
    if code != abi::SUCCESS {
        let class = crate::errors::class_of_code(code).unwrap_or(class::OTHER);
        let said = crate::errors::string_of_code(code).unwrap_or_else(|| format!("error code {code}"));
        return Err(MpiError::new(class, said));
    }
    let fresh_slot = abi::direct_index(kind::REQUEST, fresh).ok_or_else(|| not_a_request(fresh))?;
    let started = state.requests.remove(fresh_slot).and_then(|r| r.now);
    match state.requests.get_mut(slot) {
        Some(persistent) if persistent.now.is_none() => {
            persistent.now = started;
            Ok(())
        }
        // Freed or started by another thread meanwhile: the round goes on
        // on its own, as a freed request's does.
        _ => {
            if let Some(RequestEntry::Active { request, keep, incoming, .. }) = started {
                state.freed.push((request, keep, incoming));
            }
            Err(MpiError::new(class::REQUEST, "the persistent request was freed or started during its start"))
        }
    }
}

mpi_fn! {
    /// `MPI_Start`.
    fn MPI_Start / PMPI_Start(request: *mut c_int) {
        // SAFETY: the caller's request handle.
        let handle = unsafe { get(request, "request")? };
        start(&mut state::lock("MPI_Start")?, handle)
    }
}

mpi_fn! {
    /// `MPI_Startall`.
    fn MPI_Startall / PMPI_Startall(count: c_int, requests: *mut c_int) {
        if count < 0 {
            return Err(MpiError::new(class::COUNT, format!("negative count of requests {count}")));
        }
        let mut state = state::lock("MPI_Startall")?;
        for i in 0..count as usize {
            // SAFETY: `count` handles, as MPI requires.
            let handle = unsafe { get(requests.add(i), "requests")? };
            start(&mut state, handle)?;
        }
        Ok(())
    }
}

/// The handle of a claimed message.
fn add_message(state: &mut Locked, message: grappe_comm::Message, comm: c_int) -> c_int {
    let slot = state.messages.insert((message, comm));
    abi::direct_handle(kind::REQUEST, slot | abi::MESSAGE_SLOT_BIT)
}

/// The claimed message of `handle`, taken out of the table; `None` for
/// `MPI_MESSAGE_NO_PROC`.
fn take_message(state: &mut Locked, handle: c_int) -> Result<Option<(grappe_comm::Message, c_int)>> {
    if handle == abi::MESSAGE_NO_PROC {
        return Ok(None);
    }
    let slot = abi::direct_index(kind::REQUEST, handle)
        .filter(|slot| slot & abi::MESSAGE_SLOT_BIT != 0)
        .and_then(|slot| state.messages.remove(slot & !abi::MESSAGE_SLOT_BIT));
    match slot {
        Some(found) => Ok(Some(found)),
        None => {
            Err(MpiError::new(class::REQUEST, format!("{handle:#x} is not a message handle (or was received already)")))
        }
    }
}

/// A matched probe: blocking or not.
fn mprobe(
    call: &str,
    blocking: bool,
    source: c_int,
    tag: c_int,
    comm: c_int,
    message: *mut c_int,
    status: *mut abi::Status,
) -> Result<bool> {
    let mut state = state::lock(call)?;
    let entry = state.comm(comm)?;
    let on = |e: MpiError| e.on(comm);
    let tag = recv_tag(tag).map_err(on)?;
    let found = match source_rank(source, &entry.comm).map_err(on)? {
        None => Some((abi::MESSAGE_NO_PROC, proc_null_status())),
        Some(source) => {
            let claimed = match blocking {
                true if waiting::multiple() => {
                    let improbe = |state: &mut Locked| {
                        let found = state.comm(comm)?.comm.improbe(source, tag);
                        found.map_err(|e| MpiError::from(e).on(comm))
                    };
                    let (locked, claimed) = waiting::until(call, state, improbe)?;
                    state = locked;
                    Ok(Some(claimed))
                }
                true => entry.comm.mprobe(source, tag).map(Some),
                false => entry.comm.improbe(source, tag),
            };
            match claimed.map_err(|e| MpiError::from(e).on(comm))? {
                None => None,
                Some(claimed) => {
                    let status = status_of(claimed.status());
                    Some((add_message(&mut state, claimed, comm), status))
                }
            }
        }
    };
    let Some((handle, found)) = found else { return Ok(false) };
    // SAFETY: the caller's output arguments.
    unsafe {
        put(message, handle, "message")?;
        write_status(status, found);
    }
    Ok(true)
}

mpi_fn! {
    /// `MPI_Mprobe`: waits for a matching message and claims it.
    fn MPI_Mprobe / PMPI_Mprobe(source: c_int, tag: c_int, comm: c_int, message: *mut c_int, status: *mut abi::Status) {
        mprobe("MPI_Mprobe", true, source, tag, comm, message, status).map(|_| ())
    }
}

mpi_fn! {
    /// `MPI_Improbe`.
    fn MPI_Improbe / PMPI_Improbe(
        source: c_int,
        tag: c_int,
        comm: c_int,
        flag: *mut c_int,
        message: *mut c_int,
        status: *mut abi::Status,
    ) {
        let found = mprobe("MPI_Improbe", false, source, tag, comm, message, status)?;
        // SAFETY: the caller's output argument.
        unsafe { put(flag, found as c_int, "flag") }
    }
}

counted_fn! {
    /// `MPI_Mrecv`: receives a claimed message; the handle becomes `MPI_MESSAGE_NULL`.
    fn MPI_Mrecv / PMPI_Mrecv, MPI_Mrecv_c / PMPI_Mrecv_c(buf: *mut c_void, count: Int, datatype: c_int, message: *mut c_int, status: *mut abi::Status) {
        // SAFETY: the caller's message handle.
        let handle = unsafe { get(message, "message")? };
        let mut state = state::lock(NAME)?;
        let datatype = message_type(datatype, count)?;
        // SAFETY: MPI's rule for a receive buffer.
        let mut into = unsafe { incoming(buf, count, &datatype, NAME)? };
        let received = match take_message(&mut state, handle)? {
            None => proc_null_status(),
            Some((claimed, comm)) if waiting::multiple() => {
                let entry = state.comm(comm)?;
                // SAFETY: the caller's buffer or `into`'s heap copy, both
                // alive until the request completes, before this returns.
                let bytes: &'static mut [u8] = unsafe { &mut *(into.bytes() as *mut [u8]) };
                let request = entry.comm.imrecv(state.scope, claimed, bytes).map_err(|e| MpiError::from(e).on(comm))?;
                let started = RequestEntry::Active { request, comm, keep: None, incoming: Some(into) };
                complete_outside(NAME, state, vec![started])?[0]
            }
            Some((claimed, comm)) => {
                let entry = state.comm(comm)?;
                let got = entry.comm.mrecv(claimed, into.bytes()).map_err(|e| MpiError::from(e).on(comm))?;
                into.finish(got.bytes);
                status_of(got)
            }
        };
        // SAFETY: the caller's output arguments.
        unsafe {
            put(message, abi::MESSAGE_NULL, "message")?;
            write_status(status, received);
        }
        Ok(())
    }
}

counted_fn! {
    /// `MPI_Imrecv`.
    fn MPI_Imrecv / PMPI_Imrecv, MPI_Imrecv_c / PMPI_Imrecv_c(buf: *mut c_void, count: Int, datatype: c_int, message: *mut c_int, request: *mut c_int) {
        // SAFETY: the caller's message handle.
        let handle = unsafe { get(message, "message")? };
        let mut state = state::lock(NAME)?;
        let datatype = message_type(datatype, count)?;
        // SAFETY: MPI's rule: the buffer stays valid, untouched, until the request completes.
        let mut into: Incoming<'static> = unsafe { incoming(buf, count, &datatype, NAME)? };
        let started = match take_message(&mut state, handle)? {
            None => RequestEntry::Done { status: proc_null_status() },
            Some((claimed, comm)) => {
                let entry = state.comm(comm)?;
                // SAFETY: the caller's buffer or `into`'s heap copy, kept by the entry.
                let bytes: &'static mut [u8] = unsafe { &mut *(into.bytes() as *mut [u8]) };
                let request = entry.comm.imrecv(state.scope, claimed, bytes).map_err(|e| MpiError::from(e).on(comm))?;
                RequestEntry::Active { request, comm, keep: None, incoming: Some(into) }
            }
        };
        let handle = state.add_request(RequestSlot { now: Some(started), persistent: None });
        // SAFETY: the caller's output arguments.
        unsafe {
            put(message, abi::MESSAGE_NULL, "message")?;
            put(request, handle, "request")
        }
    }
}

/// The caller's buffer as it goes out when its elements lie end to end.
///
/// # Safety
/// As [`outgoing`]: `buf` holds `count` elements of `datatype`.
unsafe fn data_borrowed<'a>(buf: *const c_void, count: Count, datatype: &Type) -> &'a [u8] {
    let count = count.max(0) as usize;
    let len = datatype.packed_len(count);
    if len == 0 {
        return &[];
    }
    let offset = datatype.contiguous(count).expect("called for contiguous data");
    // SAFETY: as the caller promised.
    unsafe { std::slice::from_raw_parts(buf.cast::<u8>().wrapping_offset(offset), len) }
}

mpi_fn! {
    /// `MPI_Get_elements_x`: as `MPI_Get_elements`, into an `MPI_Count`.
    fn MPI_Get_elements_x / PMPI_Get_elements_x(status: *const abi::Status, datatype: c_int, count: *mut std::ffi::c_long) {
        // SAFETY: the caller's status.
        let status = unsafe { get(status, "status")? };
        let datatype = types::lookup(datatype)?;
        // SAFETY: the caller's output argument.
        unsafe { put(count, std::ffi::c_long::try_from(elements_in(&datatype, status.bytes())).unwrap_or(std::ffi::c_long::MAX), "count") }
    }
}
