//! Virtual topologies: Cartesian grids, graphs and distributed graphs
//! attached to communicators, with their queries, and the neighbourhood
//! collectives over them. Ranks are never reordered.

use std::ffi::{c_int, c_void};

use crate::abi::{self, class};
use crate::errors::{MpiError, Result};
use crate::state::{self, Locked, RequestEntry, RequestSlot};
use crate::types;
use crate::{counted_fn, mpi_fn};
use grappe_comm::NonBlocking;

use super::coll::Landing;
use super::{Count, CountArray, c_array, count_of, incoming, outgoing, put, widen};

const GRAPH: c_int = 1;
const CART: c_int = 2;
const DIST_GRAPH: c_int = 3;

/// A communicator's topology.
#[derive(Debug, Clone)]
pub enum Topology {
    Cart {
        dims: Vec<c_int>,
        periods: Vec<bool>,
    },
    Graph {
        index: Vec<c_int>,
        edges: Vec<c_int>,
    },
    /// The weights are `None` for a graph made with `MPI_UNWEIGHTED`.
    DistGraph {
        sources: Vec<c_int>,
        destinations: Vec<c_int>,
        weights: Option<(Vec<c_int>, Vec<c_int>)>,
    },
}

/// # Safety
/// `out` points to `values.len()` writable ints (or `values` is empty).
unsafe fn write_ints(values: &[c_int], out: *mut c_int, what: &str) -> Result<()> {
    if values.is_empty() {
        return Ok(());
    }
    if out.is_null() {
        return Err(MpiError::new(class::ARG, format!("{what} is NULL")));
    }
    // SAFETY: as the caller promised.
    unsafe { std::ptr::copy_nonoverlapping(values.as_ptr(), out, values.len()) };
    Ok(())
}

fn topology(state: &Locked, comm: c_int) -> Result<Option<Topology>> {
    Ok(state.intra(comm)?.topology.clone())
}

fn cart(state: &Locked, comm: c_int) -> Result<(Vec<c_int>, Vec<bool>)> {
    match topology(state, comm)? {
        Some(Topology::Cart { dims, periods }) => Ok((dims, periods)),
        _ => Err(MpiError::new(10, "the communicator has no Cartesian topology").on(comm)),
    }
}

/// A new communicator of the first `n` ranks of `comm` (the others get
/// `MPI_COMM_NULL`), with `topology`.
fn with_topology(call: &str, comm: c_int, n: usize, topology: Topology, newcomm: *mut c_int) -> Result<()> {
    let state = state::lock(call)?;
    let entry = state.intra(comm)?;
    if n > entry.comm.size() {
        return Err(MpiError::new(
            11,
            format!("{call}: the topology has {n} ranks and the communicator {}", entry.comm.size()),
        )
        .on(comm));
    }
    let (member, rank) = (entry.comm.rank() < n, entry.comm.rank() as c_int);
    drop(state);
    let handle = crate::api::comm::split_intra(call, comm, member.then_some(0), rank)?;
    if handle != abi::COMM_NULL {
        let mut state = state::lock(call)?;
        let slot = state.comm_slot(handle)?;
        state.comms.get_mut(slot).expect("just made").topology = Some(topology);
    }
    // SAFETY: the caller's output argument.
    unsafe { put(newcomm, handle, "newcomm") }
}

mpi_fn! {
    /// `MPI_Cart_create`.
    fn MPI_Cart_create / PMPI_Cart_create(
        comm: c_int,
        ndims: c_int,
        dims: *const c_int,
        periods: *const c_int,
        _reorder: c_int,
        newcomm: *mut c_int,
    ) {
        let n = usize::try_from(ndims).map_err(|_| MpiError::new(11, format!("ndims {ndims} is negative")))?;
        // SAFETY: `ndims` entries each, as MPI requires.
        let (dims, periods) = unsafe { (c_array(dims, n, "dims")?.to_vec(), c_array(periods, n, "periods")?) };
        if let Some(bad) = dims.iter().find(|&&d| d <= 0) {
            return Err(MpiError::new(11, format!("MPI_Cart_create: a dimension of {bad}")).on(comm));
        }
        let size: usize = dims.iter().map(|&d| d as usize).product();
        let topology = Topology::Cart { dims, periods: periods.iter().map(|&p| p != 0).collect() };
        with_topology("MPI_Cart_create", comm, size, topology, newcomm)
    }
}

mpi_fn! {
    /// `MPI_Dims_create`: dimensions as close to each other as the
    /// factors of `nnodes` allow, the zero entries filled, largest first.
    fn MPI_Dims_create / PMPI_Dims_create(nnodes: c_int, ndims: c_int, dims: *mut c_int) {
        let n = usize::try_from(ndims).map_err(|_| MpiError::new(11, format!("ndims {ndims} is negative")))?;
        // SAFETY: `ndims` entries, as MPI requires.
        let given = unsafe { c_array(dims, n, "dims")?.to_vec() };
        let fixed: i64 = given.iter().filter(|&&d| d > 0).map(|&d| d as i64).product();
        if given.iter().any(|&d| d < 0) || nnodes <= 0 || fixed == 0 || nnodes as i64 % fixed != 0 {
            return Err(MpiError::new(11, format!("MPI_Dims_create: {nnodes} nodes cannot fill dimensions {given:?}")));
        }
        let free = given.iter().filter(|&&d| d == 0).count();
        let mut parts = vec![1i64; free];
        let mut rest = nnodes as i64 / fixed;
        let mut factors = Vec::new();
        let mut f = 2;
        while rest > 1 {
            while rest % f == 0 {
                factors.push(f);
                rest /= f;
            }
            f += 1;
        }
        // Largest factors first, each to the smallest part so far.
        for factor in factors.into_iter().rev() {
            if let Some(smallest) = parts.iter_mut().min() {
                *smallest *= factor;
            }
        }
        parts.sort_unstable_by(|a, b| b.cmp(a));
        let mut parts = parts.into_iter();
        let filled: Vec<c_int> = given.iter().map(|&d| if d == 0 { parts.next().unwrap_or(1) as c_int } else { d }).collect();
        // SAFETY: `ndims` entries, as MPI requires.
        unsafe { write_ints(&filled, dims, "dims") }
    }
}

mpi_fn! {
    /// `MPI_Topo_test`: `MPI_UNDEFINED` without a topology.
    fn MPI_Topo_test / PMPI_Topo_test(comm: c_int, status: *mut c_int) {
        let kind = match topology(&state::lock("MPI_Topo_test")?, comm)? {
            Some(Topology::Cart { .. }) => CART,
            Some(Topology::Graph { .. }) => GRAPH,
            Some(Topology::DistGraph { .. }) => DIST_GRAPH,
            None => abi::UNDEFINED,
        };
        // SAFETY: the caller's output argument.
        unsafe { put(status, kind, "status") }
    }
}

mpi_fn! {
    /// `MPI_Cartdim_get`.
    fn MPI_Cartdim_get / PMPI_Cartdim_get(comm: c_int, ndims: *mut c_int) {
        let (dims, _) = cart(&state::lock("MPI_Cartdim_get")?, comm)?;
        // SAFETY: the caller's output argument.
        unsafe { put(ndims, dims.len() as c_int, "ndims") }
    }
}

/// The coordinates of `rank` in a grid (row-major, as MPI numbers them).
fn coords_of(dims: &[c_int], mut rank: usize) -> Vec<c_int> {
    let mut coords = vec![0; dims.len()];
    for d in (0..dims.len()).rev() {
        coords[d] = (rank % dims[d] as usize) as c_int;
        rank /= dims[d] as usize;
    }
    coords
}

/// The rank at `coords` (wrapped in periodic dimensions), if inside.
fn rank_of(dims: &[c_int], periods: &[bool], coords: &[c_int]) -> Option<usize> {
    let mut rank = 0usize;
    for d in 0..dims.len() {
        let mut c = coords[d];
        if periods[d] {
            c = c.rem_euclid(dims[d]);
        } else if c < 0 || c >= dims[d] {
            return None;
        }
        rank = rank * dims[d] as usize + c as usize;
    }
    Some(rank)
}

mpi_fn! {
    /// `MPI_Cart_get`.
    fn MPI_Cart_get / PMPI_Cart_get(comm: c_int, maxdims: c_int, dims: *mut c_int, periods: *mut c_int, coords: *mut c_int) {
        let state = state::lock("MPI_Cart_get")?;
        let (d, p) = cart(&state, comm)?;
        if (maxdims as usize) < d.len() {
            return Err(MpiError::new(class::ARG, format!("maxdims {maxdims} is below the {} dimensions", d.len())).on(comm));
        }
        let mine = coords_of(&d, state.intra(comm)?.comm.rank());
        let p: Vec<c_int> = p.iter().map(|&b| b as c_int).collect();
        // SAFETY: arrays of `maxdims` entries, as MPI requires.
        unsafe {
            write_ints(&d, dims, "dims")?;
            write_ints(&p, periods, "periods")?;
            write_ints(&mine, coords, "coords")
        }
    }
}

mpi_fn! {
    /// `MPI_Cart_rank`.
    fn MPI_Cart_rank / PMPI_Cart_rank(comm: c_int, coords: *const c_int, rank: *mut c_int) {
        let state = state::lock("MPI_Cart_rank")?;
        let (dims, periods) = cart(&state, comm)?;
        // SAFETY: one coordinate per dimension, as MPI requires.
        let at = unsafe { c_array(coords, dims.len(), "coords")? };
        let found = rank_of(&dims, &periods, at)
            .ok_or_else(|| MpiError::new(class::ARG, format!("coordinates {at:?} are outside the grid {dims:?}")).on(comm))?;
        // SAFETY: the caller's output argument.
        unsafe { put(rank, found as c_int, "rank") }
    }
}

mpi_fn! {
    /// `MPI_Cart_coords`.
    fn MPI_Cart_coords / PMPI_Cart_coords(comm: c_int, rank: c_int, maxdims: c_int, coords: *mut c_int) {
        let state = state::lock("MPI_Cart_coords")?;
        let (dims, _) = cart(&state, comm)?;
        let size = state.intra(comm)?.comm.size();
        if rank < 0 || rank as usize >= size || (maxdims as usize) < dims.len() {
            return Err(MpiError::new(class::RANK, format!("rank {rank} (size {size}) or maxdims {maxdims} out of range")).on(comm));
        }
        // SAFETY: `maxdims` entries, as MPI requires.
        unsafe { write_ints(&coords_of(&dims, rank as usize), coords, "coords") }
    }
}

mpi_fn! {
    /// `MPI_Cart_shift`: `MPI_PROC_NULL` past the edge of a non-periodic dimension.
    fn MPI_Cart_shift / PMPI_Cart_shift(comm: c_int, direction: c_int, disp: c_int, source: *mut c_int, dest: *mut c_int) {
        let state = state::lock("MPI_Cart_shift")?;
        let (dims, periods) = cart(&state, comm)?;
        if direction < 0 || direction as usize >= dims.len() {
            return Err(MpiError::new(11, format!("direction {direction} of a {}-dimensional grid", dims.len())).on(comm));
        }
        let me = coords_of(&dims, state.intra(comm)?.comm.rank());
        let shifted = |by: c_int| {
            let mut at = me.clone();
            at[direction as usize] += by;
            rank_of(&dims, &periods, &at).map_or(abi::PROC_NULL, |r| r as c_int)
        };
        // SAFETY: the caller's output arguments.
        unsafe {
            put(source, shifted(-disp), "rank_source")?;
            put(dest, shifted(disp), "rank_dest")
        }
    }
}

mpi_fn! {
    /// `MPI_Cart_sub`: the sub-grids keeping the dimensions flagged.
    fn MPI_Cart_sub / PMPI_Cart_sub(comm: c_int, remain_dims: *const c_int, newcomm: *mut c_int) {
        let state = state::lock("MPI_Cart_sub")?;
        let (dims, periods) = cart(&state, comm)?;
        // SAFETY: one flag per dimension, as MPI requires.
        let keep: Vec<bool> = unsafe { c_array(remain_dims, dims.len(), "remain_dims")? }.iter().map(|&k| k != 0).collect();
        let entry = state.intra(comm)?;
        let me = coords_of(&dims, entry.comm.rank());
        // Ranks with the same coordinates in the dropped dimensions share a
        // sub-grid. Keeping no dimension gives every rank a sub-grid of its
        // own: a zero-dimensional grid of one process (MPI 4.0 §8.5.7: each
        // process gets the communicator of the sub-grid it belongs to).
        let (mut color, mut key) = (0u32, 0i32);
        for d in 0..dims.len() {
            if keep[d] {
                key = key * dims[d] + me[d];
            } else {
                color = color * dims[d] as u32 + me[d] as u32;
            }
        }
        drop(state);
        let handle = crate::api::comm::split_intra("MPI_Cart_sub", comm, Some(color), key)?;
        let mut state = state::lock("MPI_Cart_sub")?;
        let slot = state.comm_slot(handle)?;
        let (sub_dims, sub_periods) = dims.iter().zip(&periods).zip(&keep).filter(|(_, k)| **k).map(|((d, p), _)| (*d, *p)).unzip();
        state.comms.get_mut(slot).expect("just added").topology = Some(Topology::Cart { dims: sub_dims, periods: sub_periods });
        // SAFETY: the caller's output argument.
        unsafe { put(newcomm, handle, "newcomm") }
    }
}

mpi_fn! {
    /// `MPI_Cart_map`: grappe keeps ranks where they are.
    fn MPI_Cart_map / PMPI_Cart_map(comm: c_int, ndims: c_int, dims: *const c_int, _periods: *const c_int, newrank: *mut c_int) {
        let state = state::lock("MPI_Cart_map")?;
        // SAFETY: `ndims` entries, as MPI requires.
        let dims = unsafe { c_array(dims, ndims.max(0) as usize, "dims")? };
        let n: usize = dims.iter().map(|&d| d.max(0) as usize).product();
        let me = state.intra(comm)?.comm.rank();
        // SAFETY: the caller's output argument.
        unsafe { put(newrank, if me < n { me as c_int } else { abi::UNDEFINED }, "newrank") }
    }
}

mpi_fn! {
    /// `MPI_Graph_map`: grappe keeps ranks where they are.
    fn MPI_Graph_map / PMPI_Graph_map(comm: c_int, nnodes: c_int, _index: *const c_int, _edges: *const c_int, newrank: *mut c_int) {
        let me = state::lock("MPI_Graph_map")?.intra(comm)?.comm.rank();
        let mapped = if (me as c_int) < nnodes { me as c_int } else { abi::UNDEFINED };
        // SAFETY: the caller's output argument.
        unsafe { put(newrank, mapped, "newrank") }
    }
}

mpi_fn! {
    /// `MPI_Graph_create`.
    fn MPI_Graph_create / PMPI_Graph_create(
        comm: c_int,
        nnodes: c_int,
        index: *const c_int,
        edges: *const c_int,
        _reorder: c_int,
        newcomm: *mut c_int,
    ) {
        let n = usize::try_from(nnodes).map_err(|_| MpiError::new(class::ARG, format!("nnodes {nnodes} is negative")))?;
        // SAFETY: `nnodes` entries, then `index[nnodes - 1]` edges, as MPI requires.
        let index = unsafe { c_array(index, n, "index")?.to_vec() };
        let total = index.last().copied().unwrap_or(0).max(0) as usize;
        // SAFETY: as above.
        let edges = unsafe { c_array(edges, total, "edges")?.to_vec() };
        if let Some(bad) = edges.iter().find(|&&e| e < 0 || e as usize >= n) {
            return Err(MpiError::new(class::ARG, format!("MPI_Graph_create: edge to {bad} in a graph of {n} nodes")).on(comm));
        }
        with_topology("MPI_Graph_create", comm, n, Topology::Graph { index, edges }, newcomm)
    }
}

fn graph(state: &Locked, comm: c_int) -> Result<(Vec<c_int>, Vec<c_int>)> {
    match topology(state, comm)? {
        Some(Topology::Graph { index, edges }) => Ok((index, edges)),
        _ => Err(MpiError::new(10, "the communicator has no graph topology").on(comm)),
    }
}

/// The neighbours of `rank` in a graph.
fn graph_neighbors(index: &[c_int], edges: &[c_int], rank: usize) -> Vec<c_int> {
    let start = if rank == 0 { 0 } else { index[rank - 1] as usize };
    edges[start..index[rank] as usize].to_vec()
}

mpi_fn! {
    /// `MPI_Graphdims_get`.
    fn MPI_Graphdims_get / PMPI_Graphdims_get(comm: c_int, nnodes: *mut c_int, nedges: *mut c_int) {
        let (index, edges) = graph(&state::lock("MPI_Graphdims_get")?, comm)?;
        // SAFETY: the caller's output arguments.
        unsafe {
            put(nnodes, index.len() as c_int, "nnodes")?;
            put(nedges, edges.len() as c_int, "nedges")
        }
    }
}

mpi_fn! {
    /// `MPI_Graph_get`.
    fn MPI_Graph_get / PMPI_Graph_get(comm: c_int, maxindex: c_int, maxedges: c_int, index: *mut c_int, edges: *mut c_int) {
        let (i, e) = graph(&state::lock("MPI_Graph_get")?, comm)?;
        // SAFETY: arrays of `maxindex` and `maxedges` entries, as MPI requires.
        unsafe {
            write_ints(&i[..i.len().min(maxindex.max(0) as usize)], index, "index")?;
            write_ints(&e[..e.len().min(maxedges.max(0) as usize)], edges, "edges")
        }
    }
}

mpi_fn! {
    /// `MPI_Graph_neighbors_count`.
    fn MPI_Graph_neighbors_count / PMPI_Graph_neighbors_count(comm: c_int, rank: c_int, nneighbors: *mut c_int) {
        let (index, edges) = graph(&state::lock("MPI_Graph_neighbors_count")?, comm)?;
        if rank < 0 || rank as usize >= index.len() {
            return Err(MpiError::new(class::RANK, format!("rank {rank} of a graph of {}", index.len())).on(comm));
        }
        // SAFETY: the caller's output argument.
        unsafe { put(nneighbors, graph_neighbors(&index, &edges, rank as usize).len() as c_int, "nneighbors") }
    }
}

mpi_fn! {
    /// `MPI_Graph_neighbors`.
    fn MPI_Graph_neighbors / PMPI_Graph_neighbors(comm: c_int, rank: c_int, maxneighbors: c_int, neighbors: *mut c_int) {
        let (index, edges) = graph(&state::lock("MPI_Graph_neighbors")?, comm)?;
        if rank < 0 || rank as usize >= index.len() {
            return Err(MpiError::new(class::RANK, format!("rank {rank} of a graph of {}", index.len())).on(comm));
        }
        let found = graph_neighbors(&index, &edges, rank as usize);
        // SAFETY: `maxneighbors` entries, as MPI requires.
        unsafe { write_ints(&found[..found.len().min(maxneighbors.max(0) as usize)], neighbors, "neighbors") }
    }
}

mpi_fn! {
    /// `MPI_Dist_graph_create_adjacent`: each rank names its own sources
    /// and destinations, with their weights or `MPI_UNWEIGHTED` (info
    /// is not used).
    fn MPI_Dist_graph_create_adjacent / PMPI_Dist_graph_create_adjacent(
        comm: c_int,
        indegree: c_int,
        sources: *const c_int,
        sourceweights: *const c_int,
        outdegree: c_int,
        destinations: *const c_int,
        destweights: *const c_int,
        _info: c_int,
        _reorder: c_int,
        newcomm: *mut c_int,
    ) {
        let (i, o) = (indegree.max(0) as usize, outdegree.max(0) as usize);
        // SAFETY: `indegree` and `outdegree` entries, as MPI requires.
        let (sources, destinations) = unsafe { (c_array(sources, i, "sources")?.to_vec(), c_array(destinations, o, "destinations")?.to_vec()) };
        let weights = match crate::api::fortran::unweighted(sourceweights) || crate::api::fortran::unweighted(destweights) {
            true => None,
            // SAFETY: as many weights as neighbours, as MPI requires.
            false => unsafe { Some((c_array(sourceweights, i, "weights")?.to_vec(), c_array(destweights, o, "weights")?.to_vec())) },
        };
        let size = state::lock("MPI_Dist_graph_create_adjacent")?.intra(comm)?.comm.size();
        if let Some(bad) = sources.iter().chain(&destinations).find(|&&r| r < 0 || r as usize >= size) {
            return Err(MpiError::new(class::RANK, format!("neighbour {bad} of a communicator of {size}")).on(comm));
        }
        with_topology("MPI_Dist_graph_create_adjacent", comm, size, Topology::DistGraph { sources, destinations, weights }, newcomm)
    }
}

mpi_fn! {
    /// `MPI_Dist_graph_create`: each rank gives some edges (`degrees[i]`
    /// edges from `sources[i]`, with their weights or `MPI_UNWEIGHTED`);
    /// every rank learns its own sources and destinations from all ranks'
    /// edges (info is not used).
    fn MPI_Dist_graph_create / PMPI_Dist_graph_create(
        comm: c_int,
        n: c_int,
        sources: *const c_int,
        degrees: *const c_int,
        destinations: *const c_int,
        weights: *const c_int,
        _info: c_int,
        _reorder: c_int,
        newcomm: *mut c_int,
    ) {
        let weighted = !crate::api::fortran::unweighted(weights);
        let n = usize::try_from(n).map_err(|_| MpiError::new(class::ARG, format!("n {n} is negative")))?;
        // SAFETY: `n` sources and degrees, then as many destinations as
        // the degrees add up to, as MPI requires.
        let (from, degrees) = unsafe { (c_array(sources, n, "sources")?, c_array(degrees, n, "degrees")?) };
        let total: usize = degrees.iter().map(|&d| d.max(0) as usize).sum();
        // SAFETY: as above.
        let to = unsafe { c_array(destinations, total, "destinations")? };
        // SAFETY: a weight per edge unless unweighted, as MPI requires.
        let edge_weights = if weighted { unsafe { c_array(weights, total, "weights")?.to_vec() } } else { vec![1; total] };
        let mut edges: Vec<i64> = Vec::with_capacity(3 * total);
        let mut next = 0;
        for (&source, &degree) in from.iter().zip(degrees) {
            for k in next..next + degree.max(0) as usize {
                edges.extend([source as i64, to[k] as i64, edge_weights[k] as i64]);
            }
            next += degree.max(0) as usize;
        }
        let (size, me, all) = {
            let state = state::lock("MPI_Dist_graph_create")?;
            let c = &state.intra(comm)?.comm;
            let engine = |e: grappe_comm::Error| MpiError::from(e).on(comm);
            let counts: Vec<u64> = c.allgather_vec(&[edges.len() as u64][..]).map_err(engine)?;
            let counts: Vec<usize> = counts.iter().map(|&n| n as usize).collect();
            let mut all = vec![0i64; counts.iter().sum()];
            c.allgatherv(&edges[..], &mut all[..], &counts).map_err(engine)?;
            (c.size(), c.rank() as c_int, all)
        };
        let triples: Vec<(c_int, c_int, c_int)> = all.chunks(3).map(|e| (e[0] as c_int, e[1] as c_int, e[2] as c_int)).collect();
        if let Some(bad) = triples.iter().flat_map(|e| [e.0, e.1]).find(|&r| r < 0 || r as usize >= size) {
            return Err(MpiError::new(class::RANK, format!("edge end {bad} of a communicator of {size}")).on(comm));
        }
        let incoming: Vec<_> = triples.iter().filter(|e| e.1 == me).collect();
        let outgoing: Vec<_> = triples.iter().filter(|e| e.0 == me).collect();
        let sources = incoming.iter().map(|e| e.0).collect();
        let destinations = outgoing.iter().map(|e| e.1).collect();
        let weights = weighted.then(|| (incoming.iter().map(|e| e.2).collect(), outgoing.iter().map(|e| e.2).collect()));
        with_topology("MPI_Dist_graph_create", comm, size, Topology::DistGraph { sources, destinations, weights }, newcomm)
    }
}

/// The sources and destinations of this rank, in any topology.
fn neighbours(state: &Locked, comm: c_int) -> Result<(Vec<c_int>, Vec<c_int>)> {
    let me = state.intra(comm)?.comm.rank();
    match topology(state, comm)? {
        Some(Topology::DistGraph { sources, destinations, .. }) => Ok((sources, destinations)),
        Some(Topology::Graph { index, edges }) => {
            let n = graph_neighbors(&index, &edges, me);
            Ok((n.clone(), n))
        }
        Some(Topology::Cart { dims, periods }) => {
            // MPI's order: for each dimension, the negative then the positive neighbour.
            let coords = coords_of(&dims, me);
            let mut n = Vec::new();
            for d in 0..dims.len() {
                for by in [-1, 1] {
                    let mut at = coords.clone();
                    at[d] += by;
                    n.push(rank_of(&dims, &periods, &at).map_or(abi::PROC_NULL, |r| r as c_int));
                }
            }
            Ok((n.clone(), n))
        }
        None => Err(MpiError::new(10, "the communicator has no topology").on(comm)),
    }
}

mpi_fn! {
    /// `MPI_Dist_graph_neighbors_count`.
    fn MPI_Dist_graph_neighbors_count / PMPI_Dist_graph_neighbors_count(comm: c_int, indegree: *mut c_int, outdegree: *mut c_int, weighted: *mut c_int) {
        let state = state::lock("MPI_Dist_graph_neighbors_count")?;
        let (sources, destinations) = neighbours(&state, comm)?;
        let has_weights = matches!(topology(&state, comm)?, Some(Topology::DistGraph { weights: Some(_), .. }));
        // SAFETY: the caller's output arguments.
        unsafe {
            put(indegree, sources.len() as c_int, "indegree")?;
            put(outdegree, destinations.len() as c_int, "outdegree")?;
            put(weighted, has_weights as c_int, "weighted")
        }
    }
}

mpi_fn! {
    /// `MPI_Dist_graph_neighbors`.
    fn MPI_Dist_graph_neighbors / PMPI_Dist_graph_neighbors(
        comm: c_int,
        maxindegree: c_int,
        sources: *mut c_int,
        sourceweights: *mut c_int,
        maxoutdegree: c_int,
        destinations: *mut c_int,
        destweights: *mut c_int,
    ) {
        let state = state::lock("MPI_Dist_graph_neighbors")?;
        let (s, d) = neighbours(&state, comm)?;
        let (si, di) = (s.len().min(maxindegree.max(0) as usize), d.len().min(maxoutdegree.max(0) as usize));
        // SAFETY: arrays of the given sizes, as MPI requires.
        unsafe {
            write_ints(&s[..si], sources, "sources")?;
            write_ints(&d[..di], destinations, "destinations")?;
            if let Some(Topology::DistGraph { weights: Some((sw, dw)), .. }) = topology(&state, comm)? {
                if !crate::api::fortran::unweighted(sourceweights) {
                    write_ints(&sw[..si], sourceweights, "sourceweights")?;
                }
                if !crate::api::fortran::unweighted(destweights) {
                    write_ints(&dw[..di], destweights, "destweights")?;
                }
            }
        }
        Ok(())
    }
}

/// One block of a neighbourhood exchange in the program's buffer: `count`
/// elements of `datatype` at byte `offset`.
type Block = (isize, Count, types::Type);

/// What a neighbourhood exchange moves: the blocks to receive, with the
/// index of their source, and the blocks to send, packed, with the index
/// of their destination (`MPI_PROC_NULL` neighbours have none).
struct Exchange {
    recvs: Vec<(usize, usize, Block)>,
    sends: Vec<(usize, usize, Vec<u8>)>,
    /// The number of sources.
    indegree: usize,
    /// A Cartesian communicator's (see [`exchange`]).
    cartesian: bool,
}

/// Block `i` of the receive buffer from source `i`, block `i` of the send
/// buffer to destination `i`: each caller says where its blocks are.
fn blocks_of(
    state: &Locked,
    call: &str,
    comm: c_int,
    sendbuf: *const c_void,
    send_block: impl Fn(usize) -> Result<Block>,
    recv_block: impl Fn(usize) -> Result<Block>,
) -> Result<Exchange> {
    let (sources, destinations) = neighbours(state, comm)?;
    let cartesian = matches!(topology(state, comm)?, Some(Topology::Cart { .. }));
    let mut recvs = Vec::new();
    for (i, &source) in sources.iter().enumerate() {
        if source != abi::PROC_NULL {
            recvs.push((i, source as usize, recv_block(i)?));
        }
    }
    let mut sends = Vec::new();
    for (i, &dest) in destinations.iter().enumerate() {
        if dest != abi::PROC_NULL {
            let (offset, count, datatype) = send_block(i)?;
            let at = sendbuf.cast::<u8>().wrapping_offset(offset).cast::<c_void>();
            // SAFETY: the send buffer holds the blocks, as MPI requires.
            sends.push((i, dest as usize, unsafe { outgoing(at, count, &datatype, call)? }.into_owned()));
        }
    }
    Ok(Exchange { recvs, sends, indegree: sources.len(), cartesian })
}

/// A neighbourhood exchange (see [`blocks_of`]). It travels on a private
/// duplicate of the communicator, made at its first neighbourhood
/// collective, so that it cannot match the program's messages.
///
/// On a Cartesian communicator, a message carries its direction as its
/// tag: block `i` goes to destination `i` with tag `i`, and the block from
/// source `j` (the neighbour in the opposite direction of the same
/// dimension) is the one its sender sent with tag `j ^ 1`. Without it, a
/// periodic dimension of 1 or 2 ranks, where both neighbours are the same
/// rank, would swap the two blocks.
fn exchange(
    call: &str,
    comm: c_int,
    sendbuf: *const c_void,
    send_block: impl Fn(usize) -> Result<Block>,
    recvbuf: *mut c_void,
    recv_block: impl Fn(usize) -> Result<Block>,
) -> Result<()> {
    let mut state = state::lock(call)?;
    let x = blocks_of(&state, call, comm, sendbuf, send_block, recv_block)?;
    let tag = |direction: usize| if x.cartesian { direction as c_int } else { 0 };
    let private = private_comm(&mut state, comm)?;
    let mut blocks = Vec::new();
    for (i, source, (offset, count, datatype)) in x.recvs {
        let at = recvbuf.cast::<u8>().wrapping_offset(offset).cast::<c_void>();
        // SAFETY: the receive buffer holds a block per source, as MPI requires.
        blocks.push((source, tag(i ^ 1), unsafe { incoming(at, count, &datatype, call)? }));
    }
    let exchanged = private.scope(|scope| -> grappe_comm::Result<()> {
        let mut requests = Vec::with_capacity(blocks.len());
        for (source, tag, block) in blocks.iter_mut() {
            requests.push(private.irecv(scope, block.bytes(), *source, *tag)?);
        }
        for (i, dest, data) in &x.sends {
            private.send(&data[..], *dest, tag(*i))?;
        }
        requests.into_iter().try_for_each(|r| r.wait().map(|_| ()))
    });
    exchanged.map_err(|e| MpiError::from(e).on(comm))?;
    for (_, _, block) in blocks {
        block.finish_all();
    }
    Ok(())
}

/// The non-blocking form of [`exchange`], as one round of a schedule on
/// the private duplicate, whose messages all carry the call's tag. On a
/// Cartesian communicator the receives of each dimension are posted in
/// the opposite order of the sends (`i ^ 1`), so that when both
/// neighbours of a dimension are one rank, the block it sent towards its
/// minus side (sent first) still lands in the plus slot, as the tags do
/// in [`exchange`].
#[allow(clippy::too_many_arguments)]
fn start_exchange(
    call: &str,
    comm: c_int,
    sendbuf: *const c_void,
    send_block: impl Fn(usize) -> Result<Block>,
    recvbuf: *mut c_void,
    recv_block: impl Fn(usize) -> Result<Block>,
    request: *mut c_int,
) -> Result<()> {
    if request.is_null() {
        return Err(MpiError::new(class::REQUEST, format!("{call}: the request argument is NULL")));
    }
    let mut state = state::lock(call)?;
    let x = blocks_of(&state, call, comm, sendbuf, send_block, recv_block)?;
    let mut recv_at = vec![None; x.indegree];
    let (mut landing, mut at) = (Vec::new(), 0);
    for (i, source, (offset, count, datatype)) in x.recvs {
        let len = datatype.packed_len(count_of(count, call)?);
        recv_at[i] = Some((source, at..at + len));
        landing.push((offset, count as usize, datatype));
        at += len;
    }
    let order = |i: usize| if x.cartesian { i ^ 1 } else { i };
    let recvs = (0..x.indegree).filter_map(|i| recv_at[order(i)].clone()).collect();
    let (mut data, mut sends) = (Vec::new(), Vec::new());
    for (_, dest, block) in x.sends {
        sends.push((dest, data.len()..data.len() + block.len()));
        data.extend_from_slice(&block);
    }
    let landing = Landing::at(recvbuf, landing);
    let what = NonBlocking::Neighbors { data, sends, recvs, result_len: at };
    let private = private_comm(&mut state, comm)?;
    let started = private.start_collective(state.scope, what, landing.deliver());
    let started = started.map_err(|e| MpiError::from(e).on(comm))?;
    let entry = RequestEntry::Active { request: started, comm, keep: None, incoming: None };
    let handle = state.add_request(RequestSlot { now: Some(entry), persistent: None });
    // SAFETY: the caller's output argument, checked non-NULL.
    unsafe { put(request, handle, "request") }
}

/// The numbers of sources and destinations of `comm`'s topology.
pub(super) fn degrees(call: &str, comm: c_int) -> Result<(usize, usize)> {
    let state = state::lock(call)?;
    let (sources, destinations) = neighbours(&state, comm)?;
    Ok((sources.len(), destinations.len()))
}

/// Blocks of `count` elements of `datatype`, one after the other.
fn regular(count: Count, datatype: c_int) -> Result<impl Fn(usize) -> Result<Block>> {
    let datatype = types::committed(datatype)?;
    let stride = datatype.extent() * count as isize;
    Ok(move |i: usize| Ok((i as isize * stride, count, datatype.clone())))
}

/// Blocks of `counts[i]` elements of `datatype` at element `displs[i]`.
///
/// # Safety
/// The arrays hold `n` entries, as MPI requires.
unsafe fn displaced(
    counts: CountArray,
    displs: CountArray,
    n: usize,
    datatype: c_int,
) -> Result<impl Fn(usize) -> Result<Block>> {
    let datatype = types::committed(datatype)?;
    // SAFETY: as the caller promised.
    let (counts, displs) = unsafe { (counts.values(n, "counts")?, displs.values(n, "displs")?) };
    let extent = datatype.extent();
    Ok(move |i: usize| Ok((displs[i] as isize * extent, counts[i], datatype.clone())))
}

/// Blocks of `counts[i]` elements of `datatypes[i]` at byte `displs[i]`.
///
/// # Safety
/// The arrays hold `n` entries, as MPI requires.
unsafe fn typed(
    counts: CountArray,
    displs: *const std::ffi::c_long,
    datatypes: *const c_int,
    n: usize,
) -> Result<impl Fn(usize) -> Result<Block>> {
    // SAFETY: as the caller promised.
    let (counts, displs, datatypes) = unsafe {
        (
            counts.values(n, "counts")?,
            c_array(displs, n, "displs")?.to_vec(),
            c_array(datatypes, n, "datatypes")?.to_vec(),
        )
    };
    Ok(move |i: usize| Ok((displs[i] as isize, counts[i], types::committed(datatypes[i])?)))
}

/// The communicator's private duplicate for neighbourhood collectives.
fn private_comm(state: &mut Locked, comm: c_int) -> Result<grappe_comm::Communicator> {
    let slot = state.comm_slot(comm)?;
    let entry = state.comms.get_mut(slot).expect("checked");
    if let Some(private) = &entry.neighbours {
        return Ok(private.clone());
    }
    let private = entry.comm.dup_for_runtime().map_err(|e| MpiError::from(e).on(comm))?;
    entry.neighbours = Some(private.clone());
    Ok(private)
}

/// How a neighbourhood collective ends: before the call returns, or as
/// a request whose handle goes to the program's pointer.
#[derive(Clone, Copy)]
enum Ends {
    Now,
    AsRequest(*mut c_int),
}

/// Runs a neighbourhood exchange as the call asks (see [`Ends`]).
#[allow(clippy::too_many_arguments)]
fn neighbourhood(
    call: &str,
    comm: c_int,
    sendbuf: *const c_void,
    send_block: impl Fn(usize) -> Result<Block>,
    recvbuf: *mut c_void,
    recv_block: impl Fn(usize) -> Result<Block>,
    ends: Ends,
) -> Result<()> {
    match ends {
        Ends::Now => exchange(call, comm, sendbuf, send_block, recvbuf, recv_block),
        Ends::AsRequest(request) => start_exchange(call, comm, sendbuf, send_block, recvbuf, recv_block, request),
    }
}

/// `MPI_Neighbor_allgather` and its non-blocking form.
#[allow(clippy::too_many_arguments)]
fn allgather(
    call: &str,
    sendbuf: *const c_void,
    sendcount: Count,
    sendtype: c_int,
    recvbuf: *mut c_void,
    recvcount: Count,
    recvtype: c_int,
    comm: c_int,
    ends: Ends,
) -> Result<()> {
    let send = regular(sendcount, sendtype)?;
    neighbourhood(call, comm, sendbuf, move |_| send(0), recvbuf, regular(recvcount, recvtype)?, ends)
}

/// `MPI_Neighbor_alltoall` and its non-blocking form.
#[allow(clippy::too_many_arguments)]
fn alltoall(
    call: &str,
    sendbuf: *const c_void,
    sendcount: Count,
    sendtype: c_int,
    recvbuf: *mut c_void,
    recvcount: Count,
    recvtype: c_int,
    comm: c_int,
    ends: Ends,
) -> Result<()> {
    neighbourhood(call, comm, sendbuf, regular(sendcount, sendtype)?, recvbuf, regular(recvcount, recvtype)?, ends)
}

/// `MPI_Neighbor_allgatherv` and its non-blocking form.
///
/// # Safety
/// One count and displacement per source, as MPI requires.
#[allow(clippy::too_many_arguments)]
unsafe fn allgatherv(
    call: &str,
    sendbuf: *const c_void,
    sendcount: Count,
    sendtype: c_int,
    recvbuf: *mut c_void,
    (recvcounts, displs, recvtype): (CountArray, CountArray, c_int),
    comm: c_int,
    ends: Ends,
) -> Result<()> {
    let (indegree, _) = degrees(call, comm)?;
    let send = regular(sendcount, sendtype)?;
    // SAFETY: as the caller promised.
    let recv = unsafe { displaced(recvcounts, displs, indegree, recvtype)? };
    neighbourhood(call, comm, sendbuf, move |_| send(0), recvbuf, recv, ends)
}

/// `MPI_Neighbor_alltoallv` and its non-blocking form.
///
/// # Safety
/// One count and displacement per neighbour, as MPI requires.
unsafe fn alltoallv(
    call: &str,
    (sendbuf, sendcounts, sdispls, sendtype): (*const c_void, CountArray, CountArray, c_int),
    (recvbuf, recvcounts, rdispls, recvtype): (*mut c_void, CountArray, CountArray, c_int),
    comm: c_int,
    ends: Ends,
) -> Result<()> {
    let (indegree, outdegree) = degrees(call, comm)?;
    // SAFETY: as the caller promised.
    let (send, recv) = unsafe {
        (displaced(sendcounts, sdispls, outdegree, sendtype)?, displaced(recvcounts, rdispls, indegree, recvtype)?)
    };
    neighbourhood(call, comm, sendbuf, send, recvbuf, recv, ends)
}

/// The arguments of one side of `MPI_Neighbor_alltoallw`: buffer, counts,
/// byte displacements, datatypes.
type TypedSide<B> = (B, CountArray, *const std::ffi::c_long, *const c_int);

/// `MPI_Neighbor_alltoallw` and its non-blocking form.
///
/// # Safety
/// One count, displacement and datatype per neighbour, as MPI requires.
unsafe fn alltoallw(
    call: &str,
    (sendbuf, sendcounts, sdispls, sendtypes): TypedSide<*const c_void>,
    (recvbuf, recvcounts, rdispls, recvtypes): TypedSide<*mut c_void>,
    comm: c_int,
    ends: Ends,
) -> Result<()> {
    let (indegree, outdegree) = degrees(call, comm)?;
    // SAFETY: as the caller promised.
    let (send, recv) = unsafe {
        (typed(sendcounts, sdispls, sendtypes, outdegree)?, typed(recvcounts, rdispls, recvtypes, indegree)?)
    };
    neighbourhood(call, comm, sendbuf, send, recvbuf, recv, ends)
}

counted_fn! {
    /// `MPI_Neighbor_allgather`.
    fn MPI_Neighbor_allgather / PMPI_Neighbor_allgather, MPI_Neighbor_allgather_c / PMPI_Neighbor_allgather_c(
        sendbuf: *const c_void,
        sendcount: Int,
        sendtype: c_int,
        recvbuf: *mut c_void,
        recvcount: Int,
        recvtype: c_int,
        comm: c_int,
    ) {
        widen!(sendcount, recvcount);
        allgather(NAME, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, Ends::Now)
    }
}

counted_fn! {
    /// `MPI_Ineighbor_allgather`.
    fn MPI_Ineighbor_allgather / PMPI_Ineighbor_allgather, MPI_Ineighbor_allgather_c / PMPI_Ineighbor_allgather_c(
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
        let ends = Ends::AsRequest(request);
        allgather(NAME, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, ends)
    }
}

counted_fn! {
    /// `MPI_Neighbor_alltoall`.
    fn MPI_Neighbor_alltoall / PMPI_Neighbor_alltoall, MPI_Neighbor_alltoall_c / PMPI_Neighbor_alltoall_c(
        sendbuf: *const c_void,
        sendcount: Int,
        sendtype: c_int,
        recvbuf: *mut c_void,
        recvcount: Int,
        recvtype: c_int,
        comm: c_int,
    ) {
        widen!(sendcount, recvcount);
        alltoall(NAME, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, Ends::Now)
    }
}

counted_fn! {
    /// `MPI_Ineighbor_alltoall`.
    fn MPI_Ineighbor_alltoall / PMPI_Ineighbor_alltoall, MPI_Ineighbor_alltoall_c / PMPI_Ineighbor_alltoall_c(
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
        let ends = Ends::AsRequest(request);
        alltoall(NAME, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, ends)
    }
}

counted_fn! {
    /// `MPI_Neighbor_allgatherv`.
    fn MPI_Neighbor_allgatherv / PMPI_Neighbor_allgatherv, MPI_Neighbor_allgatherv_c / PMPI_Neighbor_allgatherv_c(
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
        let recv = (recvcounts, displs, recvtype);
        // SAFETY: MPI's rule for the arrays.
        unsafe { allgatherv(NAME, sendbuf, sendcount, sendtype, recvbuf, recv, comm, Ends::Now) }
    }
}

counted_fn! {
    /// `MPI_Ineighbor_allgatherv`.
    fn MPI_Ineighbor_allgatherv / PMPI_Ineighbor_allgatherv, MPI_Ineighbor_allgatherv_c / PMPI_Ineighbor_allgatherv_c(
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
        let (recv, ends) = ((recvcounts, displs, recvtype), Ends::AsRequest(request));
        // SAFETY: MPI's rule for the arrays.
        unsafe { allgatherv(NAME, sendbuf, sendcount, sendtype, recvbuf, recv, comm, ends) }
    }
}

counted_fn! {
    /// `MPI_Neighbor_alltoallv`.
    fn MPI_Neighbor_alltoallv / PMPI_Neighbor_alltoallv, MPI_Neighbor_alltoallv_c / PMPI_Neighbor_alltoallv_c(
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
        let (send, recv) = ((sendbuf, sendcounts, sdispls, sendtype), (recvbuf, recvcounts, rdispls, recvtype));
        // SAFETY: MPI's rule for the arrays.
        unsafe { alltoallv(NAME, send, recv, comm, Ends::Now) }
    }
}

counted_fn! {
    /// `MPI_Ineighbor_alltoallv`.
    fn MPI_Ineighbor_alltoallv / PMPI_Ineighbor_alltoallv, MPI_Ineighbor_alltoallv_c / PMPI_Ineighbor_alltoallv_c(
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
        let (send, recv) = ((sendbuf, sendcounts, sdispls, sendtype), (recvbuf, recvcounts, rdispls, recvtype));
        // SAFETY: MPI's rule for the arrays.
        unsafe { alltoallv(NAME, send, recv, comm, Ends::AsRequest(request)) }
    }
}

counted_fn! {
    /// `MPI_Neighbor_alltoallw`: a datatype per neighbour, displacements
    /// in bytes (`MPI_Aint`).
    fn MPI_Neighbor_alltoallw / PMPI_Neighbor_alltoallw, MPI_Neighbor_alltoallw_c / PMPI_Neighbor_alltoallw_c(
        sendbuf: *const c_void,
        sendcounts: *const Int,
        sdispls: *const std::ffi::c_long,
        sendtypes: *const c_int,
        recvbuf: *mut c_void,
        recvcounts: *const Int,
        rdispls: *const std::ffi::c_long,
        recvtypes: *const c_int,
        comm: c_int,
    ) {
        widen!(sendcounts, recvcounts);
        let (send, recv) = ((sendbuf, sendcounts, sdispls, sendtypes), (recvbuf, recvcounts, rdispls, recvtypes));
        // SAFETY: MPI's rule for the arrays.
        unsafe { alltoallw(NAME, send, recv, comm, Ends::Now) }
    }
}

counted_fn! {
    /// `MPI_Ineighbor_alltoallw`.
    fn MPI_Ineighbor_alltoallw / PMPI_Ineighbor_alltoallw, MPI_Ineighbor_alltoallw_c / PMPI_Ineighbor_alltoallw_c(
        sendbuf: *const c_void,
        sendcounts: *const Int,
        sdispls: *const std::ffi::c_long,
        sendtypes: *const c_int,
        recvbuf: *mut c_void,
        recvcounts: *const Int,
        rdispls: *const std::ffi::c_long,
        recvtypes: *const c_int,
        comm: c_int,
        request: *mut c_int,
    ) {
        widen!(sendcounts, recvcounts);
        let (send, recv) = ((sendbuf, sendcounts, sdispls, sendtypes), (recvbuf, recvcounts, rdispls, recvtypes));
        // SAFETY: MPI's rule for the arrays.
        unsafe { alltoallw(NAME, send, recv, comm, Ends::AsRequest(request)) }
    }
}
