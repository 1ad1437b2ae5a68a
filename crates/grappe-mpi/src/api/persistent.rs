//! Persistent collectives (MPI 4: `MPI_Bcast_init`...): the arguments
//! are kept at the call, and each `MPI_Start` starts the non-blocking
//! collective they describe (`MPI_Ibcast`...) under the persistent
//! request, which its completion leaves inactive for the next start. MPI
//! requires the buffers and arrays to stay valid and unchanged until the
//! request is freed, so they are kept as the program's pointers; the
//! arrays of counts, displacements and datatypes, which MPI lets the
//! program reuse once the call returns, are copied, and derived datatypes,
//! which it may free, are kept under handles of the request's own.

use std::ffi::{c_int, c_long, c_void};
use std::rc::Rc;

use crate::abi::class;
use crate::errors::{MpiError, Result};
use crate::state::{self, Persistent, RequestSlot};

use super::put;

/// What starts one round of a persistent collective: the non-blocking
/// collective's function with the kept arguments, given where to put its
/// request; its code.
pub type Starter = Rc<dyn Fn(*mut c_int) -> c_int>;

/// A persistent collective on `comm`, inactive until started.
fn persistent(call: &str, comm: c_int, request: *mut c_int, start: Starter) -> Result<()> {
    if request.is_null() {
        return Err(MpiError::new(class::ARG, format!("{call}: the request argument is NULL")));
    }
    let mut state = state::lock(call)?;
    state.comm(comm)?;
    let handle = state.add_request(RequestSlot { now: None, persistent: Some(Persistent::Collective(start)) });
    // SAFETY: the caller's output argument, checked non-NULL.
    unsafe { put(request, handle, "request") }
}

/// Defines `MPI_X_init` from the non-blocking collective `started` and
/// its arguments (all but the request; `comm` among them).
macro_rules! init_fn {
    (
        $(#[$doc:meta])* $name:ident / $pname:ident, $cname:ident / $pcname:ident => $started:path, $cstarted:path,
        ($($arg:ident : $ty:ty),* $(,)?), on $comm:ident, keeping ($($datatype:ident),*) $(and $op:ident)?
    ) => {
        #[allow(non_snake_case, dead_code)]
        mod $name {
            use super::*;
            type Int = c_int;
            init_fn!($(#[$doc])* $name / $pname => $started, ($($arg: $ty),*), on $comm, keeping ($($datatype),*) $(and $op)?);
        }
        #[allow(non_snake_case, dead_code)]
        mod $cname {
            use super::*;
            type Int = i64;
            init_fn!(
                /// The large-count form (MPI 4): see the `int` form.
                $cname / $pcname => $cstarted, ($($arg: $ty),*), on $comm, keeping ($($datatype),*) $(and $op)?
            );
        }
    };
    (
        $(#[$doc:meta])* $name:ident / $pname:ident => $started:path, ($($arg:ident : $ty:ty),* $(,)?), on $comm:ident,
        keeping ($($datatype:ident),*) $(and $op:ident)?
    ) => {
        $crate::mpi_fn! {
            $(#[$doc])*
            fn $name / $pname($($arg: $ty,)* _info: c_int, request: *mut c_int) {
                #[allow(unused_mut)]
                let mut own = OwnTypes::default();
                $(let $datatype = own.keep($datatype);)*
                $(let $op = own.keep_op(stringify!($name), $op)?;)?
                let start = move |fresh: *mut c_int| {
                    let _ = &own;
                    // SAFETY: MPI's rule for persistent collectives: what
                    // the arguments point to stays valid and unchanged
                    // until the request is freed.
                    unsafe { $started($($arg,)* fresh) }
                };
                persistent(stringify!($name), $comm, request, Rc::new(start))
            }
        }
    };
}

init_fn!(
    /// `MPI_Barrier_init`.
    MPI_Barrier_init / PMPI_Barrier_init => crate::api::icoll::PMPI_Ibarrier::body, (comm: c_int),
    on comm, keeping ()
);

init_fn!(
    /// `MPI_Bcast_init`.
    MPI_Bcast_init / PMPI_Bcast_init, MPI_Bcast_init_c / PMPI_Bcast_init_c => crate::api::icoll::PMPI_Ibcast::body, crate::api::icoll::PMPI_Ibcast_c::body, (buffer: *mut c_void, count: Int, datatype: c_int, root: c_int, comm: c_int),
    on comm, keeping (datatype)
);

init_fn!(
    /// `MPI_Gather_init`.
    MPI_Gather_init / PMPI_Gather_init, MPI_Gather_init_c / PMPI_Gather_init_c => crate::api::icoll::PMPI_Igather::body, crate::api::icoll::PMPI_Igather_c::body, (sendbuf: *const c_void, sendcount: Int, sendtype: c_int, recvbuf: *mut c_void, recvcount: Int, recvtype: c_int, root: c_int, comm: c_int),
    on comm, keeping (sendtype, recvtype)
);

init_fn!(
    /// `MPI_Scatter_init`.
    MPI_Scatter_init / PMPI_Scatter_init, MPI_Scatter_init_c / PMPI_Scatter_init_c => crate::api::icoll::PMPI_Iscatter::body, crate::api::icoll::PMPI_Iscatter_c::body, (sendbuf: *const c_void, sendcount: Int, sendtype: c_int, recvbuf: *mut c_void, recvcount: Int, recvtype: c_int, root: c_int, comm: c_int),
    on comm, keeping (sendtype, recvtype)
);

init_fn!(
    /// `MPI_Allgather_init`.
    MPI_Allgather_init / PMPI_Allgather_init, MPI_Allgather_init_c / PMPI_Allgather_init_c => crate::api::icoll::PMPI_Iallgather::body, crate::api::icoll::PMPI_Iallgather_c::body, (sendbuf: *const c_void, sendcount: Int, sendtype: c_int, recvbuf: *mut c_void, recvcount: Int, recvtype: c_int, comm: c_int),
    on comm, keeping (sendtype, recvtype)
);

init_fn!(
    /// `MPI_Alltoall_init`.
    MPI_Alltoall_init / PMPI_Alltoall_init, MPI_Alltoall_init_c / PMPI_Alltoall_init_c => crate::api::icoll::PMPI_Ialltoall::body, crate::api::icoll::PMPI_Ialltoall_c::body, (sendbuf: *const c_void, sendcount: Int, sendtype: c_int, recvbuf: *mut c_void, recvcount: Int, recvtype: c_int, comm: c_int),
    on comm, keeping (sendtype, recvtype)
);

init_fn!(
    /// `MPI_Reduce_init`.
    MPI_Reduce_init / PMPI_Reduce_init, MPI_Reduce_init_c / PMPI_Reduce_init_c => crate::api::icoll::PMPI_Ireduce::body, crate::api::icoll::PMPI_Ireduce_c::body, (sendbuf: *const c_void, recvbuf: *mut c_void, count: Int, datatype: c_int, op: c_int, root: c_int, comm: c_int),
    on comm, keeping (datatype) and op
);

init_fn!(
    /// `MPI_Allreduce_init`.
    MPI_Allreduce_init / PMPI_Allreduce_init, MPI_Allreduce_init_c / PMPI_Allreduce_init_c => crate::api::icoll::PMPI_Iallreduce::body, crate::api::icoll::PMPI_Iallreduce_c::body, (sendbuf: *const c_void, recvbuf: *mut c_void, count: Int, datatype: c_int, op: c_int, comm: c_int),
    on comm, keeping (datatype) and op
);

init_fn!(
    /// `MPI_Reduce_scatter_block_init`.
    MPI_Reduce_scatter_block_init / PMPI_Reduce_scatter_block_init, MPI_Reduce_scatter_block_init_c / PMPI_Reduce_scatter_block_init_c => crate::api::icoll::PMPI_Ireduce_scatter_block::body, crate::api::icoll::PMPI_Ireduce_scatter_block_c::body, (sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: Int, datatype: c_int, op: c_int, comm: c_int),
    on comm, keeping (datatype) and op
);

init_fn!(
    /// `MPI_Scan_init`.
    MPI_Scan_init / PMPI_Scan_init, MPI_Scan_init_c / PMPI_Scan_init_c => crate::api::icoll::PMPI_Iscan::body, crate::api::icoll::PMPI_Iscan_c::body, (sendbuf: *const c_void, recvbuf: *mut c_void, count: Int, datatype: c_int, op: c_int, comm: c_int),
    on comm, keeping (datatype) and op
);

init_fn!(
    /// `MPI_Exscan_init`.
    MPI_Exscan_init / PMPI_Exscan_init, MPI_Exscan_init_c / PMPI_Exscan_init_c => crate::api::icoll::PMPI_Iexscan::body, crate::api::icoll::PMPI_Iexscan_c::body, (sendbuf: *const c_void, recvbuf: *mut c_void, count: Int, datatype: c_int, op: c_int, comm: c_int),
    on comm, keeping (datatype) and op
);

init_fn!(
    /// `MPI_Neighbor_allgather_init`.
    MPI_Neighbor_allgather_init / PMPI_Neighbor_allgather_init, MPI_Neighbor_allgather_init_c / PMPI_Neighbor_allgather_init_c => crate::api::topology::PMPI_Ineighbor_allgather::body, crate::api::topology::PMPI_Ineighbor_allgather_c::body, (sendbuf: *const c_void, sendcount: Int, sendtype: c_int, recvbuf: *mut c_void, recvcount: Int, recvtype: c_int, comm: c_int),
    on comm, keeping (sendtype, recvtype)
);

init_fn!(
    /// `MPI_Neighbor_alltoall_init`.
    MPI_Neighbor_alltoall_init / PMPI_Neighbor_alltoall_init, MPI_Neighbor_alltoall_init_c / PMPI_Neighbor_alltoall_init_c => crate::api::topology::PMPI_Ineighbor_alltoall::body, crate::api::topology::PMPI_Ineighbor_alltoall_c::body, (sendbuf: *const c_void, sendcount: Int, sendtype: c_int, recvbuf: *mut c_void, recvcount: Int, recvtype: c_int, comm: c_int),
    on comm, keeping (sendtype, recvtype)
);

/// What the arrays of a v-collective are sized by: the ranks the blocks
/// go to or come from (the remote group's on an intercommunicator), the
/// local group, and whether this rank is the root.
struct Shape {
    peers: usize,
    local: usize,
    rank: usize,
    inter: bool,
}

impl Shape {
    fn of(call: &str, comm: c_int) -> Result<Shape> {
        let state = state::lock(call)?;
        let found = &state.comm(comm)?.comm;
        let local = super::intercomm::local_size(found);
        Ok(Shape { peers: found.size(), local, rank: found.rank(), inter: found.is_inter() })
    }

    /// Whether the root's arrays are this rank's to give.
    fn is_root(&self, root: c_int) -> bool {
        match self.inter {
            true => root == crate::abi::ROOT,
            false => usize::try_from(root).is_ok_and(|r| r == self.rank),
        }
    }
}

/// A copy of the `n` values of a C array that MPI lets the program reuse
/// once `_init` returns (counts, displacements, datatypes), kept with the
/// request; empty for NULL or an array not read (`keep` false).
fn kept<T: Copy>(array: *const T, n: usize, keep: bool) -> Rc<[T]> {
    if !keep || array.is_null() || n == 0 {
        return Rc::from(Vec::new());
    }
    // SAFETY: `n` values, as MPI requires of the array.
    Rc::from(unsafe { std::slice::from_raw_parts(array, n) })
}

/// Where the kept copy of `original` is, for the call (NULL stays NULL).
fn at<T>(copy: &Rc<[T]>, original: *const T) -> *const T {
    match original.is_null() {
        true => original,
        false => copy.as_ptr(),
    }
}

/// The derived datatypes and the program's operations a persistent
/// collective keeps under handles of its own, so that the program may free
/// its handles while the request lives (MPI: a freed datatype's or
/// operation's pending communication is unaffected). The starter owns
/// this, and these handles go when it does, with the request.
#[derive(Default)]
struct OwnTypes(Vec<c_int>, Vec<c_int>);

impl OwnTypes {
    /// The handle to use for operation `op` (see [`super::coll::keep_op`]).
    fn keep_op(&mut self, call: &str, op: c_int) -> Result<c_int> {
        let kept = super::coll::keep_op(call, op)?;
        if kept != op {
            self.1.push(kept);
        }
        Ok(kept)
    }

    /// The handle to use for `handle`: a handle of the request's own for a
    /// derived datatype, `handle` itself for any other (predefined, or not
    /// a datatype: the start reports it).
    fn keep(&mut self, handle: c_int) -> c_int {
        match crate::types::lookup(handle) {
            Ok(crate::types::Type::Derived(layout)) => {
                let own = crate::types::register((*layout).clone());
                self.0.push(own);
                own
            }
            _ => handle,
        }
    }

    /// [`OwnTypes::keep`] for each datatype of a kept array.
    fn keep_all(&mut self, handles: Rc<[c_int]>) -> Rc<[c_int]> {
        handles.iter().map(|&h| self.keep(h)).collect()
    }
}

impl Drop for OwnTypes {
    fn drop(&mut self) {
        for &handle in &self.0 {
            // The request's own handle, registered above: nothing else frees it.
            let _ = crate::types::free(handle);
        }
        for &op in &self.1 {
            super::coll::release_kept_op(op);
        }
    }
}

/// Whether a send buffer is `MPI_IN_PLACE` (its arrays are then not read).
fn in_place(buf: *const c_void) -> bool {
    buf as usize == crate::abi::IN_PLACE
}

crate::counted_fn! {
    /// `MPI_Gatherv_init` (the root's arrays are kept).
    fn MPI_Gatherv_init / PMPI_Gatherv_init, MPI_Gatherv_init_c / PMPI_Gatherv_init_c(
        sendbuf: *const c_void,
        sendcount: Int,
        sendtype: c_int,
        recvbuf: *mut c_void,
        recvcounts: *const Int,
        displs: *const Disp,
        recvtype: c_int,
        root: c_int,
        comm: c_int,
        _info: c_int,
        request: *mut c_int,
    )
    calling Started = crate::api::icoll::PMPI_Igatherv, crate::api::icoll::PMPI_Igatherv_c;
    {
        let shape = Shape::of(NAME, comm)?;
        let root_here = shape.is_root(root);
        let (counts, places) = (kept(recvcounts, shape.peers, root_here), kept(displs, shape.peers, root_here));
        let mut own = OwnTypes::default();
        let (sendtype, recvtype) = (own.keep(sendtype), own.keep(recvtype));
        let start = move |fresh: *mut c_int| {
            let _ = &own;
            let (counts, places) = (at(&counts, recvcounts), at(&places, displs));
            // SAFETY: MPI's rule for persistent collectives: the buffers
            // stay valid until the request is freed; the arrays are copies.
            unsafe { Started::body(sendbuf, sendcount, sendtype, recvbuf, counts, places, recvtype, root, comm, fresh) }
        };
        persistent(NAME, comm, request, Rc::new(start))
    }
}

crate::counted_fn! {
    /// `MPI_Scatterv_init` (the root's arrays are kept).
    fn MPI_Scatterv_init / PMPI_Scatterv_init, MPI_Scatterv_init_c / PMPI_Scatterv_init_c(
        sendbuf: *const c_void,
        sendcounts: *const Int,
        displs: *const Disp,
        sendtype: c_int,
        recvbuf: *mut c_void,
        recvcount: Int,
        recvtype: c_int,
        root: c_int,
        comm: c_int,
        _info: c_int,
        request: *mut c_int,
    )
    calling Started = crate::api::icoll::PMPI_Iscatterv, crate::api::icoll::PMPI_Iscatterv_c;
    {
        let shape = Shape::of(NAME, comm)?;
        let root_here = shape.is_root(root);
        let (counts, places) = (kept(sendcounts, shape.peers, root_here), kept(displs, shape.peers, root_here));
        let mut own = OwnTypes::default();
        let (sendtype, recvtype) = (own.keep(sendtype), own.keep(recvtype));
        let start = move |fresh: *mut c_int| {
            let _ = &own;
            let (counts, places) = (at(&counts, sendcounts), at(&places, displs));
            // SAFETY: as in MPI_Gatherv_init.
            unsafe { Started::body(sendbuf, counts, places, sendtype, recvbuf, recvcount, recvtype, root, comm, fresh) }
        };
        persistent(NAME, comm, request, Rc::new(start))
    }
}

crate::counted_fn! {
    /// `MPI_Allgatherv_init` (the arrays are kept).
    fn MPI_Allgatherv_init / PMPI_Allgatherv_init, MPI_Allgatherv_init_c / PMPI_Allgatherv_init_c(
        sendbuf: *const c_void,
        sendcount: Int,
        sendtype: c_int,
        recvbuf: *mut c_void,
        recvcounts: *const Int,
        displs: *const Disp,
        recvtype: c_int,
        comm: c_int,
        _info: c_int,
        request: *mut c_int,
    )
    calling Started = crate::api::icoll::PMPI_Iallgatherv, crate::api::icoll::PMPI_Iallgatherv_c;
    {
        let shape = Shape::of(NAME, comm)?;
        let (counts, places) = (kept(recvcounts, shape.peers, true), kept(displs, shape.peers, true));
        let mut own = OwnTypes::default();
        let (sendtype, recvtype) = (own.keep(sendtype), own.keep(recvtype));
        let start = move |fresh: *mut c_int| {
            let _ = &own;
            let (counts, places) = (at(&counts, recvcounts), at(&places, displs));
            // SAFETY: as in MPI_Gatherv_init.
            unsafe { Started::body(sendbuf, sendcount, sendtype, recvbuf, counts, places, recvtype, comm, fresh) }
        };
        persistent(NAME, comm, request, Rc::new(start))
    }
}

crate::counted_fn! {
    /// `MPI_Alltoallv_init` (the arrays are kept; the send ones unless in place).
    fn MPI_Alltoallv_init / PMPI_Alltoallv_init, MPI_Alltoallv_init_c / PMPI_Alltoallv_init_c(
        sendbuf: *const c_void,
        sendcounts: *const Int,
        sdispls: *const Disp,
        sendtype: c_int,
        recvbuf: *mut c_void,
        recvcounts: *const Int,
        rdispls: *const Disp,
        recvtype: c_int,
        comm: c_int,
        _info: c_int,
        request: *mut c_int,
    )
    calling Started = crate::api::icoll::PMPI_Ialltoallv, crate::api::icoll::PMPI_Ialltoallv_c;
    {
        let shape = Shape::of(NAME, comm)?;
        let (n, sends) = (shape.peers, !in_place(sendbuf));
        let (scounts, sdisp) = (kept(sendcounts, n, sends), kept(sdispls, n, sends));
        let (rcounts, rdisp) = (kept(recvcounts, n, true), kept(rdispls, n, true));
        let mut own = OwnTypes::default();
        let (sendtype, recvtype) = (own.keep(sendtype), own.keep(recvtype));
        let start = move |fresh: *mut c_int| {
            let _ = &own;
            let (sc, sd) = (at(&scounts, sendcounts), at(&sdisp, sdispls));
            let (rc, rd) = (at(&rcounts, recvcounts), at(&rdisp, rdispls));
            // SAFETY: as in MPI_Gatherv_init.
            unsafe { Started::body(sendbuf, sc, sd, sendtype, recvbuf, rc, rd, recvtype, comm, fresh) }
        };
        persistent(NAME, comm, request, Rc::new(start))
    }
}

crate::counted_fn! {
    /// `MPI_Alltoallw_init` (the arrays are kept; the send ones unless in place).
    fn MPI_Alltoallw_init / PMPI_Alltoallw_init, MPI_Alltoallw_init_c / PMPI_Alltoallw_init_c(
        sendbuf: *const c_void,
        sendcounts: *const Int,
        sdispls: *const Disp,
        sendtypes: *const c_int,
        recvbuf: *mut c_void,
        recvcounts: *const Int,
        rdispls: *const Disp,
        recvtypes: *const c_int,
        comm: c_int,
        _info: c_int,
        request: *mut c_int,
    )
    calling Started = crate::api::icoll::PMPI_Ialltoallw, crate::api::icoll::PMPI_Ialltoallw_c;
    {
        let shape = Shape::of(NAME, comm)?;
        let (n, sends) = (shape.peers, !in_place(sendbuf));
        let (scounts, sdisp, stypes) = (kept(sendcounts, n, sends), kept(sdispls, n, sends), kept(sendtypes, n, sends));
        let (rcounts, rdisp, rtypes) = (kept(recvcounts, n, true), kept(rdispls, n, true), kept(recvtypes, n, true));
        let mut own = OwnTypes::default();
        let (stypes, rtypes) = (own.keep_all(stypes), own.keep_all(rtypes));
        let start = move |fresh: *mut c_int| {
            let _ = &own;
            let (sc, sd, st) = (at(&scounts, sendcounts), at(&sdisp, sdispls), at(&stypes, sendtypes));
            let (rc, rd, rt) = (at(&rcounts, recvcounts), at(&rdisp, rdispls), at(&rtypes, recvtypes));
            // SAFETY: as in MPI_Gatherv_init.
            unsafe { Started::body(sendbuf, sc, sd, st, recvbuf, rc, rd, rt, comm, fresh) }
        };
        persistent(NAME, comm, request, Rc::new(start))
    }
}

crate::counted_fn! {
    /// `MPI_Reduce_scatter_init` (the counts, one per local rank, are kept).
    fn MPI_Reduce_scatter_init / PMPI_Reduce_scatter_init, MPI_Reduce_scatter_init_c / PMPI_Reduce_scatter_init_c(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        recvcounts: *const Int,
        datatype: c_int,
        op: c_int,
        comm: c_int,
        _info: c_int,
        request: *mut c_int,
    )
    calling Started = crate::api::icoll::PMPI_Ireduce_scatter, crate::api::icoll::PMPI_Ireduce_scatter_c;
    {
        let shape = Shape::of(NAME, comm)?;
        let counts = kept(recvcounts, shape.local, true);
        let mut own = OwnTypes::default();
        let datatype = own.keep(datatype);
        let op = own.keep_op(NAME, op)?;
        let start = move |fresh: *mut c_int| {
            let _ = &own;
            let counts = at(&counts, recvcounts);
            // SAFETY: as in MPI_Gatherv_init.
            unsafe { Started::body(sendbuf, recvbuf, counts, datatype, op, comm, fresh) }
        };
        persistent(NAME, comm, request, Rc::new(start))
    }
}

crate::counted_fn! {
    /// `MPI_Neighbor_allgatherv_init` (the arrays, one entry per source, are kept).
    fn MPI_Neighbor_allgatherv_init / PMPI_Neighbor_allgatherv_init, MPI_Neighbor_allgatherv_init_c / PMPI_Neighbor_allgatherv_init_c(
        sendbuf: *const c_void,
        sendcount: Int,
        sendtype: c_int,
        recvbuf: *mut c_void,
        recvcounts: *const Int,
        displs: *const Disp,
        recvtype: c_int,
        comm: c_int,
        _info: c_int,
        request: *mut c_int,
    )
    calling Started = crate::api::topology::PMPI_Ineighbor_allgatherv, crate::api::topology::PMPI_Ineighbor_allgatherv_c;
    {
        let (sources, _) = crate::api::topology::degrees(NAME, comm)?;
        let (counts, places) = (kept(recvcounts, sources, true), kept(displs, sources, true));
        let mut own = OwnTypes::default();
        let (sendtype, recvtype) = (own.keep(sendtype), own.keep(recvtype));
        let start = move |fresh: *mut c_int| {
            let _ = &own;
            let (counts, places) = (at(&counts, recvcounts), at(&places, displs));
            // SAFETY: as in MPI_Gatherv_init.
            unsafe { Started::body(sendbuf, sendcount, sendtype, recvbuf, counts, places, recvtype, comm, fresh) }
        };
        persistent(NAME, comm, request, Rc::new(start))
    }
}

crate::counted_fn! {
    /// `MPI_Neighbor_alltoallv_init` (the arrays are kept: send ones per
    /// destination, receive ones per source).
    fn MPI_Neighbor_alltoallv_init / PMPI_Neighbor_alltoallv_init, MPI_Neighbor_alltoallv_init_c / PMPI_Neighbor_alltoallv_init_c(
        sendbuf: *const c_void,
        sendcounts: *const Int,
        sdispls: *const Disp,
        sendtype: c_int,
        recvbuf: *mut c_void,
        recvcounts: *const Int,
        rdispls: *const Disp,
        recvtype: c_int,
        comm: c_int,
        _info: c_int,
        request: *mut c_int,
    )
    calling Started = crate::api::topology::PMPI_Ineighbor_alltoallv, crate::api::topology::PMPI_Ineighbor_alltoallv_c;
    {
        let (sources, destinations) = crate::api::topology::degrees(NAME, comm)?;
        let (scounts, sdisp) = (kept(sendcounts, destinations, true), kept(sdispls, destinations, true));
        let (rcounts, rdisp) = (kept(recvcounts, sources, true), kept(rdispls, sources, true));
        let mut own = OwnTypes::default();
        let (sendtype, recvtype) = (own.keep(sendtype), own.keep(recvtype));
        let start = move |fresh: *mut c_int| {
            let _ = &own;
            let (sc, sd) = (at(&scounts, sendcounts), at(&sdisp, sdispls));
            let (rc, rd) = (at(&rcounts, recvcounts), at(&rdisp, rdispls));
            // SAFETY: as in MPI_Gatherv_init.
            unsafe { Started::body(sendbuf, sc, sd, sendtype, recvbuf, rc, rd, recvtype, comm, fresh) }
        };
        persistent(NAME, comm, request, Rc::new(start))
    }
}

crate::counted_fn! {
    /// `MPI_Neighbor_alltoallw_init` (the arrays are kept, as for
    /// `MPI_Neighbor_alltoallv_init`).
    fn MPI_Neighbor_alltoallw_init / PMPI_Neighbor_alltoallw_init, MPI_Neighbor_alltoallw_init_c / PMPI_Neighbor_alltoallw_init_c(
        sendbuf: *const c_void,
        sendcounts: *const Int,
        sdispls: *const c_long,
        sendtypes: *const c_int,
        recvbuf: *mut c_void,
        recvcounts: *const Int,
        rdispls: *const c_long,
        recvtypes: *const c_int,
        comm: c_int,
        _info: c_int,
        request: *mut c_int,
    )
    calling Started = crate::api::topology::PMPI_Ineighbor_alltoallw, crate::api::topology::PMPI_Ineighbor_alltoallw_c;
    {
        let (sources, destinations) = crate::api::topology::degrees(NAME, comm)?;
        let (scounts, sdisp, stypes) =
            (kept(sendcounts, destinations, true), kept(sdispls, destinations, true), kept(sendtypes, destinations, true));
        let (rcounts, rdisp, rtypes) = (kept(recvcounts, sources, true), kept(rdispls, sources, true), kept(recvtypes, sources, true));
        let mut own = OwnTypes::default();
        let (stypes, rtypes) = (own.keep_all(stypes), own.keep_all(rtypes));
        let start = move |fresh: *mut c_int| {
            let _ = &own;
            let (sc, sd, st) = (at(&scounts, sendcounts), at(&sdisp, sdispls), at(&stypes, sendtypes));
            let (rc, rd, rt) = (at(&rcounts, recvcounts), at(&rdisp, rdispls), at(&rtypes, recvtypes));
            // SAFETY: as in MPI_Gatherv_init.
            unsafe { Started::body(sendbuf, sc, sd, st, recvbuf, rc, rd, rt, comm, fresh) }
        };
        persistent(NAME, comm, request, Rc::new(start))
    }
}
