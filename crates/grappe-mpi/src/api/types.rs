//! Derived datatypes: their constructors, commit and free, extents and
//! envelopes, names, and packing (`MPI_Pack`, `MPI_Unpack`).

use std::ffi::{c_char, c_int, c_long, c_void};

use crate::abi::{self, class};
use crate::errors::{MpiError, Result};
use crate::types::{self, Envelope, Layout, Type};
use crate::{counted_fn, mpi_fn};

use super::env::{copy_string, read_string};
use super::{Count, CountArg, buffer_len, c_array, count_of, get, put, wide_array};

/// Combiners (`MPI_COMBINER_*`).
mod combiner {
    use std::ffi::c_int;
    pub const NAMED: c_int = 1;
    pub const DUP: c_int = 2;
    pub const CONTIGUOUS: c_int = 3;
    pub const VECTOR: c_int = 4;
    pub const HVECTOR: c_int = 6;
    pub const INDEXED: c_int = 7;
    pub const HINDEXED: c_int = 9;
    pub const INDEXED_BLOCK: c_int = 10;
    pub const STRUCT: c_int = 12;
    pub const SUBARRAY: c_int = 13;
    pub const DARRAY: c_int = 14;
    pub const RESIZED: c_int = 18;
    pub const HINDEXED_BLOCK: c_int = 19;
}

const ORDER_C: c_int = 56;
const ORDER_FORTRAN: c_int = 57;

/// How an array of `sizes` elements of `extent` bytes lies in memory, in
/// `order` (`MPI_ORDER_C` or `MPI_ORDER_FORTRAN`): for `MPI_Type_create_subarray`
/// and `MPI_Type_create_darray`.
struct ArrayLayout {
    /// The dimensions from the slowest-varying to the fastest.
    dims: Vec<usize>,
    /// Bytes between consecutive indices of each dimension.
    stride: Vec<isize>,
    /// Bytes of the whole array.
    total: isize,
}

fn array_layout(call: &str, order: c_int, sizes: &[Count], extent: isize) -> Result<ArrayLayout> {
    let n = sizes.len();
    let dims: Vec<usize> = match order {
        ORDER_C => (0..n).collect(),
        ORDER_FORTRAN => (0..n).rev().collect(),
        other => {
            return Err(MpiError::new(
                class::ARG,
                format!("{call}: order {other} is not MPI_ORDER_C or MPI_ORDER_FORTRAN"),
            ));
        }
    };
    let mut stride = vec![0isize; n];
    let mut step = extent;
    for &d in dims.iter().rev() {
        stride[d] = step;
        step *= sizes[d] as isize;
    }
    Ok(ArrayLayout { dims, stride, total: step })
}
const DISTRIBUTE_BLOCK: c_int = 121;
const DISTRIBUTE_CYCLIC: c_int = 122;
const DISTRIBUTE_NONE: c_int = 123;
const DISTRIBUTE_DFLT_DARG: c_int = -49767;

/// Registers `layout` and writes its handle to `newtype`.
fn give(layout: Layout, newtype: *mut c_int) -> Result<()> {
    let handle = types::register(layout);
    // SAFETY: the caller's output argument.
    unsafe { put(newtype, handle, "newtype") }
}

/// How a datatype was made; its constituent datatypes by handle (looked
/// up: a handle that is not one was refused before).
fn envelope(combiner: c_int, integers: Vec<c_int>, addresses: Vec<isize>, datatypes: Vec<c_int>) -> Envelope {
    let datatypes = datatypes.into_iter().filter_map(|h| types::lookup(h).ok()).collect();
    Envelope { combiner, integers, addresses, large_counts: Vec::new(), datatypes }
}

/// The envelope of a constructor whose integers are `before`, its
/// `counts` and `after`: as the `int` form keeps them if every count fits
/// an `int`; else, as MPI 4 keeps a `_c` constructor's, the counts and
/// then the addresses as large counts, the other integers as integers.
fn counted_envelope(
    combiner: c_int,
    (before, counts, after): (&[c_int], &[Count], &[c_int]),
    addresses: Vec<isize>,
    datatypes: Vec<c_int>,
) -> Envelope {
    let small: Option<Vec<c_int>> = counts.iter().map(|&n| c_int::try_from(n).ok()).collect();
    match small {
        Some(small) => envelope(combiner, [before, &small, after].concat(), addresses, datatypes),
        None => {
            let mut env = envelope(combiner, [before, after].concat(), vec![], datatypes);
            env.large_counts = counts.iter().copied().chain(addresses.iter().map(|&a| a as Count)).collect();
            env
        }
    }
}

counted_fn! {
    /// `MPI_Type_contiguous`.
    fn MPI_Type_contiguous / PMPI_Type_contiguous, MPI_Type_contiguous_c / PMPI_Type_contiguous_c(n: Int, oldtype: c_int, newtype: *mut c_int) {
        let old = types::lookup(oldtype)?;
        let n = count_of(n, NAME)?;
        let env = counted_envelope(combiner::CONTIGUOUS, (&[], &[n as Count], &[]), vec![], vec![oldtype]);
        give(Layout::from_blocks(&old, &[(0, n)], env)?, newtype)
    }
}

/// Blocks of `blocklength` elements of `old`, `n` of them, `stride` bytes
/// apart. Blocks that touch are one part (the vector is contiguous), and
/// more parts than a datatype may hold blocks is refused before they are
/// listed.
fn strided(old: &Type, n: usize, blocklength: usize, stride: isize) -> Result<Vec<(isize, usize)>> {
    if n == 0 || blocklength == 0 {
        return Ok(Vec::new());
    }
    if n == 1 || stride == blocklength as isize * old.extent() {
        let total = n.checked_mul(blocklength).ok_or_else(|| {
            MpiError::new(class::COUNT, format!("{n} blocks of {blocklength} elements overflow a count"))
        })?;
        return Ok(vec![(0, total)]);
    }
    if n > types::MAX_BLOCKS {
        return Err(types::too_many_blocks(n));
    }
    Ok((0..n as isize).map(|i| (i * stride, blocklength)).collect())
}

counted_fn! {
    /// `MPI_Type_vector`: a stride in elements of the old datatype.
    fn MPI_Type_vector / PMPI_Type_vector, MPI_Type_vector_c / PMPI_Type_vector_c(n: Int, blocklength: Int, stride: Int, oldtype: c_int, newtype: *mut c_int) {
        let old = types::lookup(oldtype)?;
        let (n, len) = (count_of(n, NAME)?, count_of(blocklength, NAME)?);
        let env = counted_envelope(combiner::VECTOR, (&[], &[n as Count, len as Count, stride.wide()], &[]), vec![], vec![oldtype]);
        give(Layout::from_blocks(&old, &strided(&old, n, len, stride.wide() as isize * old.extent())?, env)?, newtype)
    }
}

/// `MPI_Type_create_hvector` and `MPI_Type_hvector`: a stride in bytes.
fn hvector(
    call: &str,
    n: Count,
    blocklength: Count,
    stride: c_long,
    oldtype: c_int,
    newtype: *mut c_int,
) -> Result<()> {
    let old = types::lookup(oldtype)?;
    let (n, len) = (count_of(n, call)?, count_of(blocklength, call)?);
    let counts = [n as Count, len as Count];
    let env = counted_envelope(combiner::HVECTOR, (&[], &counts, &[]), vec![stride as isize], vec![oldtype]);
    give(Layout::from_blocks(&old, &strided(&old, n, len, stride as isize)?, env)?, newtype)
}

counted_fn! {
    /// `MPI_Type_create_hvector`.
    fn MPI_Type_create_hvector / PMPI_Type_create_hvector, MPI_Type_create_hvector_c / PMPI_Type_create_hvector_c(n: Int, blocklength: Int, stride: c_long, oldtype: c_int, newtype: *mut c_int) {
        hvector(NAME, n.wide(), blocklength.wide(), stride, oldtype, newtype)
    }
}

mpi_fn! {
    /// `MPI_Type_hvector` (MPI-1's name).
    fn MPI_Type_hvector / PMPI_Type_hvector(n: c_int, blocklength: c_int, stride: c_long, oldtype: c_int, newtype: *mut c_int) {
        hvector("MPI_Type_hvector", n.wide(), blocklength.wide(), stride, oldtype, newtype)
    }
}

counted_fn! {
    /// `MPI_Type_indexed`: displacements in elements of the old datatype.
    fn MPI_Type_indexed / PMPI_Type_indexed, MPI_Type_indexed_c / PMPI_Type_indexed_c(
        n: Int,
        blocklengths: *const Int,
        displacements: *const Int,
        oldtype: c_int,
        newtype: *mut c_int,
    ) {
        let old = types::lookup(oldtype)?;
        let n = count_of(n, NAME)?;
        // SAFETY: `n` entries each, as MPI requires.
        let (lens, displs) = unsafe { (wide_array(blocklengths, n, "blocklengths")?, wide_array(displacements, n, "displacements")?) };
        let parts = blocks(&lens, displs.iter().map(|&d| d as isize * old.extent()), NAME)?;
        let counts = [&[n as Count][..], &lens, &displs].concat();
        let env = counted_envelope(combiner::INDEXED, (&[], &counts, &[]), vec![], vec![oldtype]);
        give(Layout::from_blocks(&old, &parts, env)?, newtype)
    }
}

/// The (offset, elements) parts of an indexed datatype.
fn blocks(lens: &[Count], offsets: impl Iterator<Item = isize>, what: &str) -> Result<Vec<(isize, usize)>> {
    lens.iter().zip(offsets).map(|(&len, offset)| Ok((offset, count_of(len, what)?))).collect()
}

/// `MPI_Type_create_hindexed` and `MPI_Type_hindexed`: displacements in bytes.
fn hindexed(call: &str, lens: &[Count], displs: &[c_long], oldtype: c_int, newtype: *mut c_int) -> Result<()> {
    let old = types::lookup(oldtype)?;
    let parts = blocks(lens, displs.iter().map(|&d| d as isize), call)?;
    let counts = [&[lens.len() as Count][..], lens].concat();
    let addresses = displs.iter().map(|&d| d as isize).collect();
    let env = counted_envelope(combiner::HINDEXED, (&[], &counts, &[]), addresses, vec![oldtype]);
    give(Layout::from_blocks(&old, &parts, env)?, newtype)
}

counted_fn! {
    /// `MPI_Type_create_hindexed`.
    fn MPI_Type_create_hindexed / PMPI_Type_create_hindexed, MPI_Type_create_hindexed_c / PMPI_Type_create_hindexed_c(
        n: Int,
        blocklengths: *const Int,
        displacements: *const c_long,
        oldtype: c_int,
        newtype: *mut c_int,
    ) {
        let n = count_of(n, NAME)?;
        // SAFETY: `n` entries each, as MPI requires.
        let (lens, displs) = unsafe { (wide_array(blocklengths, n, "blocklengths")?, c_array(displacements, n, "displacements")?) };
        hindexed(NAME, &lens, displs, oldtype, newtype)
    }
}

mpi_fn! {
    /// `MPI_Type_hindexed` (MPI-1's name).
    fn MPI_Type_hindexed / PMPI_Type_hindexed(
        n: c_int,
        blocklengths: *const c_int,
        displacements: *const c_long,
        oldtype: c_int,
        newtype: *mut c_int,
    ) {
        let n = count_of(n, "MPI_Type_hindexed")?;
        // SAFETY: `n` entries each, as MPI requires.
        let (lens, displs) = unsafe { (wide_array(blocklengths, n, "blocklengths")?, c_array(displacements, n, "displacements")?) };
        hindexed("MPI_Type_hindexed", &lens, displs, oldtype, newtype)
    }
}

counted_fn! {
    /// `MPI_Type_create_indexed_block`.
    fn MPI_Type_create_indexed_block / PMPI_Type_create_indexed_block, MPI_Type_create_indexed_block_c / PMPI_Type_create_indexed_block_c(
        n: Int,
        blocklength: Int,
        displacements: *const Int,
        oldtype: c_int,
        newtype: *mut c_int,
    ) {
        let old = types::lookup(oldtype)?;
        let (n, len) = (count_of(n, NAME)?, count_of(blocklength, NAME)?);
        // SAFETY: `n` entries, as MPI requires.
        let displs = unsafe { wide_array(displacements, n, "displacements")? };
        let parts: Vec<(isize, usize)> = displs.iter().map(|&d| (d as isize * old.extent(), len)).collect();
        let counts = [&[n as Count, len as Count][..], &displs].concat();
        let env = counted_envelope(combiner::INDEXED_BLOCK, (&[], &counts, &[]), vec![], vec![oldtype]);
        give(Layout::from_blocks(&old, &parts, env)?, newtype)
    }
}

counted_fn! {
    /// `MPI_Type_create_hindexed_block`.
    fn MPI_Type_create_hindexed_block / PMPI_Type_create_hindexed_block, MPI_Type_create_hindexed_block_c / PMPI_Type_create_hindexed_block_c(
        n: Int,
        blocklength: Int,
        displacements: *const c_long,
        oldtype: c_int,
        newtype: *mut c_int,
    ) {
        let old = types::lookup(oldtype)?;
        let (n, len) = (count_of(n, NAME)?, count_of(blocklength, NAME)?);
        // SAFETY: `n` entries, as MPI requires.
        let displs = unsafe { c_array(displacements, n, "displacements")? };
        let parts: Vec<(isize, usize)> = displs.iter().map(|&d| (d as isize, len)).collect();
        let addresses = displs.iter().map(|&d| d as isize).collect();
        let env = counted_envelope(combiner::HINDEXED_BLOCK, (&[], &[n as Count, len as Count], &[]), addresses, vec![oldtype]);
        give(Layout::from_blocks(&old, &parts, env)?, newtype)
    }
}

/// `MPI_Type_create_struct` and `MPI_Type_struct`.
fn structure(call: &str, lens: &[Count], displs: &[c_long], olds: &[c_int], newtype: *mut c_int) -> Result<()> {
    let mut parts = Vec::with_capacity(lens.len());
    for i in 0..lens.len() {
        parts.push((displs[i] as isize, count_of(lens[i], call)?, types::lookup(olds[i])?));
    }
    let counts = [&[lens.len() as Count][..], lens].concat();
    let addresses = displs.iter().map(|&d| d as isize).collect();
    let env = counted_envelope(combiner::STRUCT, (&[], &counts, &[]), addresses, olds.to_vec());
    give(Layout::from_struct(&parts, env)?, newtype)
}

counted_fn! {
    /// `MPI_Type_create_struct`.
    fn MPI_Type_create_struct / PMPI_Type_create_struct, MPI_Type_create_struct_c / PMPI_Type_create_struct_c(
        n: Int,
        blocklengths: *const Int,
        displacements: *const c_long,
        oldtypes: *const c_int,
        newtype: *mut c_int,
    ) {
        let n = count_of(n, NAME)?;
        // SAFETY: `n` entries each, as MPI requires.
        let (lens, displs, olds) = unsafe {
            (wide_array(blocklengths, n, "blocklengths")?, c_array(displacements, n, "displacements")?, c_array(oldtypes, n, "types")?)
        };
        structure(NAME, &lens, displs, olds, newtype)
    }
}

mpi_fn! {
    /// `MPI_Type_struct` (MPI-1's name).
    fn MPI_Type_struct / PMPI_Type_struct(
        n: c_int,
        blocklengths: *const c_int,
        displacements: *const c_long,
        oldtypes: *const c_int,
        newtype: *mut c_int,
    ) {
        let n = count_of(n, "MPI_Type_struct")?;
        // SAFETY: `n` entries each, as MPI requires.
        let (lens, displs, olds) = unsafe {
            (wide_array(blocklengths, n, "blocklengths")?, c_array(displacements, n, "displacements")?, c_array(oldtypes, n, "types")?)
        };
        structure("MPI_Type_struct", &lens, displs, olds, newtype)
    }
}

counted_fn! {
    /// `MPI_Type_create_resized`: the same data with another lower bound and extent.
    fn MPI_Type_create_resized / PMPI_Type_create_resized, MPI_Type_create_resized_c / PMPI_Type_create_resized_c(oldtype: c_int, lb: c_long, extent: c_long, newtype: *mut c_int) {
        let old = types::lookup(oldtype)?;
        let env = envelope(combiner::RESIZED, vec![], vec![lb as isize, extent as isize], vec![oldtype]);
        let mut layout = Layout::from_blocks(&old, &[(0, 1)], env)?;
        layout.lb = lb as isize;
        layout.extent = extent as isize;
        layout.marked = (true, true);
        give(layout, newtype)
    }
}

counted_fn! {
    /// `MPI_Type_create_subarray`: a block of an n-dimensional array, in C or Fortran order.
    fn MPI_Type_create_subarray / PMPI_Type_create_subarray, MPI_Type_create_subarray_c / PMPI_Type_create_subarray_c(
        ndims: c_int,
        sizes: *const Int,
        subsizes: *const Int,
        starts: *const Int,
        order: c_int,
        oldtype: c_int,
        newtype: *mut c_int,
    ) {
        let call = NAME;
        let old = types::lookup(oldtype)?;
        let n = count_of(ndims, call)?;
        if n == 0 {
            return Err(MpiError::new(class::ARG, format!("{call}: ndims must be at least 1")));
        }
        // SAFETY: `ndims` entries each, as MPI requires.
        let (sizes, subsizes, starts) = unsafe { (wide_array(sizes, n, "sizes")?, wide_array(subsizes, n, "subsizes")?, wide_array(starts, n, "starts")?) };
        for d in 0..n {
            if sizes[d] <= 0 || subsizes[d] < 0 || starts[d] < 0 || subsizes[d] + starts[d] > sizes[d] {
                return Err(MpiError::new(
                    class::ARG,
                    format!("{call}: dimension {d} has size {}, subsize {}, start {}", sizes[d], subsizes[d], starts[d]),
                ));
            }
        }
        let ArrayLayout { dims, stride, total } = array_layout(call, order, &sizes, old.extent())?;
        let fastest = *dims.last().expect("ndims >= 1");
        let mut parts = Vec::new();
        let outer: Vec<usize> = dims[..n - 1].to_vec();
        let mut index = vec![0usize; outer.len()];
        let rows: usize = outer.iter().map(|&d| subsizes[d] as usize).product();
        for _ in 0..rows {
            let mut offset = starts[fastest] as isize * stride[fastest];
            for (k, &d) in outer.iter().enumerate() {
                offset += (starts[d] as isize + index[k] as isize) * stride[d];
            }
            push_part(&mut parts, (offset, subsizes[fastest] as usize), old.extent())?;
            for k in (0..outer.len()).rev() {
                index[k] += 1;
                if index[k] < subsizes[outer[k]] as usize {
                    break;
                }
                index[k] = 0;
            }
        }
        let counts = [&sizes[..], &subsizes, &starts].concat();
        let env = counted_envelope(combiner::SUBARRAY, (&[n as c_int], &counts, &[order]), vec![], vec![oldtype]);
        let mut layout = Layout::from_blocks(&old, &parts, env)?;
        layout.lb = 0;
        layout.extent = total;
        give(layout, newtype)
    }
}

/// Appends `part` (offset, elements of `extent` bytes) to `parts`, as part
/// of the last one if it continues it; more parts than a datatype may hold
/// blocks is an error (a subarray or darray of more separate runs).
fn push_part(parts: &mut Vec<(isize, usize)>, part: (isize, usize), extent: isize) -> Result<()> {
    if let Some((start, len)) = parts.last_mut() {
        if *start + *len as isize * extent == part.0 {
            *len += part.1;
            return Ok(());
        }
    }
    if parts.len() == types::MAX_BLOCKS {
        return Err(types::too_many_blocks(parts.len() + 1));
    }
    parts.push(part);
    Ok(())
}

/// The global indices of one dimension that process coordinate `coord`
/// of `psize` holds, in increasing order (HPF's block and cyclic
/// distributions, as MPI defines them for `MPI_Type_create_darray`).
fn distributed(
    call: &str,
    d: usize,
    gsize: usize,
    distrib: c_int,
    darg: c_int,
    psize: usize,
    coord: usize,
) -> Result<Vec<usize>> {
    let bad = |what: String| Err(MpiError::new(class::ARG, format!("{call}: dimension {d}: {what}")));
    match distrib {
        DISTRIBUTE_NONE if psize != 1 => bad(format!("MPI_DISTRIBUTE_NONE over {psize} processes (it needs 1)")),
        DISTRIBUTE_NONE => Ok((0..gsize).collect()),
        DISTRIBUTE_BLOCK => {
            let block = match darg {
                DISTRIBUTE_DFLT_DARG => gsize.div_ceil(psize),
                b if b > 0 && b as usize * psize >= gsize => b as usize,
                b => return bad(format!("block size {b} does not cover {gsize} elements over {psize} processes")),
            };
            Ok((coord * block..((coord + 1) * block).min(gsize)).collect())
        }
        DISTRIBUTE_CYCLIC => {
            let block = match darg {
                DISTRIBUTE_DFLT_DARG => 1,
                b if b > 0 => b as usize,
                b => return bad(format!("cyclic block size {b} is not positive")),
            };
            let starts = (coord * block..gsize).step_by(block * psize);
            Ok(starts.flat_map(|start| start..(start + block).min(gsize)).collect())
        }
        other => bad(format!("distribution {other} is not MPI_DISTRIBUTE_BLOCK, _CYCLIC or _NONE")),
    }
}

counted_fn! {
    /// `MPI_Type_create_darray`: process `rank`'s part of an array of
    /// `gsizes` distributed block-wise or cyclically over a process grid
    /// of `psizes` (row-major, whatever the array's order); its elements
    /// in the order of the local array, its extent the whole array's.
    fn MPI_Type_create_darray / PMPI_Type_create_darray, MPI_Type_create_darray_c / PMPI_Type_create_darray_c(
        size: c_int,
        rank: c_int,
        ndims: c_int,
        gsizes: *const Int,
        distribs: *const c_int,
        dargs: *const c_int,
        psizes: *const c_int,
        order: c_int,
        oldtype: c_int,
        newtype: *mut c_int,
    ) {
        let call = NAME;
        let old = types::lookup(oldtype)?;
        let n = count_of(ndims, call)?;
        if size <= 0 || rank < 0 || rank >= size {
            return Err(MpiError::new(class::ARG, format!("{call}: rank {rank} is not a rank of a group of {size}")));
        }
        // SAFETY: `ndims` entries each, as MPI requires.
        let (gsizes, distribs, dargs, psizes) = unsafe {
            (wide_array(gsizes, n, "gsizes")?, c_array(distribs, n, "distribs")?, c_array(dargs, n, "dargs")?, c_array(psizes, n, "psizes")?)
        };
        if let Some(d) = (0..n).find(|&d| gsizes[d] <= 0 || psizes[d] <= 0) {
            return Err(MpiError::new(class::ARG, format!("{call}: dimension {d} has gsize {} and psize {}", gsizes[d], psizes[d])));
        }
        let grid: i64 = psizes.iter().map(|&p| p as i64).product();
        if grid != size as i64 {
            return Err(MpiError::new(class::ARG, format!("{call}: the process grid {psizes:?} has {grid} processes, not {size}")));
        }
        // The process grid is row-major: the last dimension varies fastest.
        let mut coords = vec![0usize; n];
        let mut left = rank as usize;
        for d in (0..n).rev() {
            coords[d] = left % psizes[d] as usize;
            left /= psizes[d] as usize;
        }
        let mut held = Vec::with_capacity(n);
        for d in 0..n {
            held.push(distributed(call, d, gsizes[d] as usize, distribs[d], dargs[d], psizes[d] as usize, coords[d])?);
        }
        let extent = old.extent();
        let ArrayLayout { dims, stride, total } = array_layout(call, order, &gsizes, extent)?;
        let mut parts = Vec::new();
        if held.iter().all(|h| !h.is_empty()) {
            let mut index = vec![0usize; n];
            'elements: loop {
                let offset: isize = dims.iter().map(|&d| held[d][index[d]] as isize * stride[d]).sum();
                push_part(&mut parts, (offset, 1), extent)?;
                for &d in dims.iter().rev() {
                    index[d] += 1;
                    if index[d] < held[d].len() {
                        continue 'elements;
                    }
                    index[d] = 0;
                }
                break;
            }
        }
        let after = [distribs, dargs, psizes, &[order][..]].concat();
        let env = counted_envelope(combiner::DARRAY, (&[size, rank, ndims], &gsizes, &after), vec![], vec![oldtype]);
        let mut layout = Layout::from_blocks(&old, &parts, env)?;
        layout.lb = 0;
        layout.extent = total;
        give(layout, newtype)
    }
}

mpi_fn! {
    /// `MPI_Type_dup`.
    fn MPI_Type_dup / PMPI_Type_dup(oldtype: c_int, newtype: *mut c_int) {
        let old = types::lookup(oldtype)?;
        let mut layout = match &old {
            Type::Derived(layout) => (**layout).clone(),
            // A predefined datatype is committed, and so is its copy.
            Type::Predefined(_) => Layout { committed: true, ..Layout::from_blocks(&old, &[(0, 1)], Envelope::default())? },
        };
        layout.envelope = envelope(combiner::DUP, vec![], vec![], vec![oldtype]);
        // The copy has the type's properties and attributes, not its name:
        // a name is the object's own, as under MPICH.
        layout.name = Default::default();
        let copy = types::register(layout);
        let copied = crate::api::attr::copy_attrs(crate::api::attr::Object::Datatype(oldtype), crate::api::attr::Object::Datatype(copy));
        if let Err(e) = copied {
            // A copy callback failed (the attributes copied before it are
            // deleted again): the copy goes, and the program gets
            // MPI_DATATYPE_NULL with the error, as MPI_Comm_dup gives
            // MPI_COMM_NULL.
            types::free(copy)?;
            // SAFETY: the caller's output argument.
            unsafe { put(newtype, abi::DATATYPE_NULL, "newtype")? };
            return Err(e);
        }
        // SAFETY: the caller's output argument.
        unsafe { put(newtype, copy, "newtype") }
    }
}

mpi_fn! {
    /// `MPI_Type_commit`.
    fn MPI_Type_commit / PMPI_Type_commit(datatype: *mut c_int) {
        // SAFETY: the caller's handle.
        let handle = unsafe { get(datatype, "datatype")? };
        match types::lookup(handle)? {
            Type::Predefined(_) => Ok(()),
            Type::Derived(_) => types::update(handle, |layout| layout.committed = true),
        }
    }
}

mpi_fn! {
    /// `MPI_Type_free`: the handle becomes `MPI_DATATYPE_NULL`; requests
    /// under way with it keep their copy.
    fn MPI_Type_free / PMPI_Type_free(datatype: *mut c_int) {
        // SAFETY: the caller's in-out argument.
        let handle = unsafe { get(datatype, "datatype")? };
        if let Type::Derived(_) = types::lookup(handle)? {
            crate::api::attr::delete_all(crate::api::attr::Object::Datatype(handle))?;
        }
        types::free(handle)?;
        // SAFETY: the caller's in-out argument.
        unsafe { put(datatype, abi::DATATYPE_NULL, "datatype") }
    }
}

/// Which bounds of a datatype: as declared (resized ones included), or
/// those of its data.
enum Bounds {
    Declared,
    True,
}

/// Writes a datatype's lower bound and extent (`MPI_Aint` and `MPI_Count`
/// are both `long` in MPICH's interface, so the `_x` forms share it).
///
/// # Safety
/// `lb` and `extent` are the caller's output arguments.
unsafe fn write_extent(datatype: c_int, lb: *mut c_long, extent: *mut c_long, bounds: Bounds) -> Result<()> {
    let found = types::lookup(datatype)?;
    let (low, width) = match bounds {
        Bounds::Declared => (found.lb(), found.extent()),
        Bounds::True => (found.true_lb(), found.true_extent()),
    };
    // SAFETY: as the caller promised.
    unsafe {
        put(lb, low as c_long, "lb")?;
        put(extent, width as c_long, "extent")
    }
}

counted_fn! {
    /// `MPI_Type_get_extent`.
    fn MPI_Type_get_extent / PMPI_Type_get_extent, MPI_Type_get_extent_c / PMPI_Type_get_extent_c(datatype: c_int, lb: *mut c_long, extent: *mut c_long) {
        // SAFETY: the caller's output arguments.
        unsafe { write_extent(datatype, lb, extent, Bounds::Declared) }
    }
}

mpi_fn! {
    /// `MPI_Type_get_extent_x`.
    fn MPI_Type_get_extent_x / PMPI_Type_get_extent_x(datatype: c_int, lb: *mut c_long, extent: *mut c_long) {
        // SAFETY: the caller's output arguments.
        unsafe { write_extent(datatype, lb, extent, Bounds::Declared) }
    }
}

counted_fn! {
    /// `MPI_Type_get_true_extent`.
    fn MPI_Type_get_true_extent / PMPI_Type_get_true_extent, MPI_Type_get_true_extent_c / PMPI_Type_get_true_extent_c(datatype: c_int, lb: *mut c_long, extent: *mut c_long) {
        // SAFETY: the caller's output arguments.
        unsafe { write_extent(datatype, lb, extent, Bounds::True) }
    }
}

mpi_fn! {
    /// `MPI_Type_get_true_extent_x`.
    fn MPI_Type_get_true_extent_x / PMPI_Type_get_true_extent_x(datatype: c_int, lb: *mut c_long, extent: *mut c_long) {
        // SAFETY: the caller's output arguments.
        unsafe { write_extent(datatype, lb, extent, Bounds::True) }
    }
}

mpi_fn! {
    /// `MPI_Type_size_x`.
    fn MPI_Type_size_x / PMPI_Type_size_x(datatype: c_int, size: *mut c_long) {
        let found = types::lookup(datatype)?;
        // SAFETY: the caller's output argument.
        unsafe { put(size, found.size() as c_long, "size") }
    }
}

/// The envelope of `datatype` (`MPI_COMBINER_NAMED` for a predefined one).
fn envelope_of(datatype: c_int) -> Result<Envelope> {
    Ok(match types::lookup(datatype)? {
        Type::Predefined(_) => envelope(combiner::NAMED, vec![], vec![], vec![]),
        Type::Derived(layout) => layout.envelope.clone(),
    })
}

/// [`envelope_of`] for the `int` forms (`MPI_Type_get_envelope`,
/// `MPI_Type_get_contents`), which cannot give large counts.
fn int_envelope_of(call: &str, datatype: c_int) -> Result<Envelope> {
    let env = envelope_of(datatype)?;
    if !env.large_counts.is_empty() {
        return Err(MpiError::new(
            class::TYPE,
            format!(
                "{call}: the datatype was made with counts beyond int (its {} large counts need the _c form)",
                env.large_counts.len()
            ),
        ));
    }
    Ok(env)
}

mpi_fn! {
    /// `MPI_Type_get_envelope`.
    fn MPI_Type_get_envelope / PMPI_Type_get_envelope(
        datatype: c_int,
        num_integers: *mut c_int,
        num_addresses: *mut c_int,
        num_datatypes: *mut c_int,
        combiner_out: *mut c_int,
    ) {
        let env = int_envelope_of("MPI_Type_get_envelope", datatype)?;
        // SAFETY: the caller's output arguments.
        unsafe {
            put(num_integers, env.integers.len() as c_int, "num_integers")?;
            put(num_addresses, env.addresses.len() as c_int, "num_addresses")?;
            put(num_datatypes, env.datatypes.len() as c_int, "num_datatypes")?;
            put(combiner_out, env.combiner, "combiner")
        }
    }
}

mpi_fn! {
    /// `MPI_Type_get_envelope_c`: as `MPI_Type_get_envelope`, with the
    /// large counts of a datatype made with counts beyond `int`.
    fn MPI_Type_get_envelope_c / PMPI_Type_get_envelope_c(
        datatype: c_int,
        num_integers: *mut Count,
        num_addresses: *mut Count,
        num_large_counts: *mut Count,
        num_datatypes: *mut Count,
        combiner_out: *mut c_int,
    ) {
        let env = envelope_of(datatype)?;
        // SAFETY: the caller's output arguments.
        unsafe {
            put(num_integers, env.integers.len() as Count, "num_integers")?;
            put(num_addresses, env.addresses.len() as Count, "num_addresses")?;
            put(num_large_counts, env.large_counts.len() as Count, "num_large_counts")?;
            put(num_datatypes, env.datatypes.len() as Count, "num_datatypes")?;
            put(combiner_out, env.combiner, "combiner")
        }
    }
}

/// Where `MPI_Type_get_contents` writes an envelope's arrays, each of
/// at least its `max` entries (`large` only for the `_c` form).
struct ContentsOut {
    integers: (*mut c_int, Count),
    addresses: (*mut c_long, Count),
    large_counts: (*mut Count, Count),
    datatypes: (*mut c_int, Count),
}

/// `MPI_Type_get_contents`: the envelope `env`'s arrays into `out`.
///
/// # Safety
/// The arrays hold their `max` entries.
unsafe fn contents(call: &str, env: &Envelope, out: ContentsOut) -> Result<()> {
    let lens = [env.integers.len(), env.addresses.len(), env.large_counts.len(), env.datatypes.len()];
    let max = [out.integers.1, out.addresses.1, out.large_counts.1, out.datatypes.1];
    if max.iter().zip(lens).any(|(&max, len)| max < len as Count) {
        return Err(MpiError::new(class::ARG, format!("{call}: the arrays are shorter than the envelope says")));
    }
    // The derived datatypes of the contents are new handles, which the
    // caller frees (MPI's rule); predefined ones are given as they are.
    let handed: Vec<c_int> = env.datatypes.iter().map(handed_out).collect();
    // SAFETY: arrays of at least the envelope's lengths, as checked.
    unsafe {
        copy_out(&env.integers, out.integers.0);
        copy_out(&env.addresses.iter().map(|&a| a as c_long).collect::<Vec<_>>(), out.addresses.0);
        copy_out(&env.large_counts, out.large_counts.0);
        copy_out(&handed, out.datatypes.0);
    }
    Ok(())
}

/// The contents of a derived datatype's envelope.
fn derived_envelope(call: &str, datatype: c_int, int_form: bool) -> Result<Envelope> {
    if let Type::Predefined(_) = types::lookup(datatype)? {
        return Err(MpiError::new(
            class::ARG,
            "a predefined datatype has no contents (its combiner is MPI_COMBINER_NAMED)",
        ));
    }
    match int_form {
        true => int_envelope_of(call, datatype),
        false => envelope_of(datatype),
    }
}

mpi_fn! {
    /// `MPI_Type_get_contents`.
    fn MPI_Type_get_contents / PMPI_Type_get_contents(
        datatype: c_int,
        max_integers: c_int,
        max_addresses: c_int,
        max_datatypes: c_int,
        integers: *mut c_int,
        addresses: *mut c_long,
        datatypes: *mut c_int,
    ) {
        let call = "MPI_Type_get_contents";
        let env = derived_envelope(call, datatype, true)?;
        let out = ContentsOut {
            integers: (integers, max_integers.wide()),
            addresses: (addresses, max_addresses.wide()),
            large_counts: (std::ptr::null_mut(), 0),
            datatypes: (datatypes, max_datatypes.wide()),
        };
        // SAFETY: arrays of their `max` entries, as MPI requires.
        unsafe { contents(call, &env, out) }
    }
}

mpi_fn! {
    /// `MPI_Type_get_contents_c`: as `MPI_Type_get_contents`, with the
    /// large counts.
    fn MPI_Type_get_contents_c / PMPI_Type_get_contents_c(
        datatype: c_int,
        max_integers: Count,
        max_addresses: Count,
        max_large_counts: Count,
        max_datatypes: Count,
        integers: *mut c_int,
        addresses: *mut c_long,
        large_counts: *mut Count,
        datatypes: *mut c_int,
    ) {
        let call = "MPI_Type_get_contents_c";
        let env = derived_envelope(call, datatype, false)?;
        let out = ContentsOut {
            integers: (integers, max_integers),
            addresses: (addresses, max_addresses),
            large_counts: (large_counts, max_large_counts),
            datatypes: (datatypes, max_datatypes),
        };
        // SAFETY: arrays of their `max` entries, as MPI requires.
        unsafe { contents(call, &env, out) }
    }
}

/// A datatype of an envelope as `MPI_Type_get_contents` hands it out: a
/// predefined one as it is, a derived one as a new handle to the same layout.
fn handed_out(datatype: &Type) -> c_int {
    match datatype {
        Type::Predefined(predefined) => predefined.handle,
        Type::Derived(layout) => types::register((**layout).clone()),
    }
}

/// # Safety
/// `out` holds `values.len()` entries (or `values` is empty).
unsafe fn copy_out<T: Copy>(values: &[T], out: *mut T) {
    if !values.is_empty() && !out.is_null() {
        // SAFETY: as the caller promised.
        unsafe { std::ptr::copy_nonoverlapping(values.as_ptr(), out, values.len()) };
    }
}

mpi_fn! {
    /// `MPI_Type_set_name`.
    fn MPI_Type_set_name / PMPI_Type_set_name(datatype: c_int, name: *const c_char) {
        // SAFETY: a NUL-terminated string, as MPI requires.
        let name = unsafe { read_string(name, "name")? };
        match types::lookup(datatype)? {
            Type::Predefined(_) => {
                types::rename_predefined(datatype, name);
                Ok(())
            }
            Type::Derived(_) => types::update(datatype, |layout| layout.name = name),
        }
    }
}

mpi_fn! {
    /// `MPI_Type_get_name`.
    fn MPI_Type_get_name / PMPI_Type_get_name(datatype: c_int, name: *mut c_char, resultlen: *mut c_int) {
        let text = types::lookup(datatype)?.name();
        // SAFETY: `name` holds MPI_MAX_OBJECT_NAME characters, as MPI requires.
        let len = unsafe { copy_string(&text, name, abi::MAX_OBJECT_NAME, "name")? };
        // SAFETY: the caller's output argument.
        unsafe { put(resultlen, len, "resultlen") }
    }
}

mpi_fn! {
    /// `MPI_Get_address`: the address as an `MPI_Aint`.
    fn MPI_Get_address / PMPI_Get_address(location: *const c_void, address: *mut c_long) {
        // SAFETY: the caller's output argument.
        unsafe { put(address, location as c_long, "address") }
    }
}

mpi_fn! {
    /// `MPI_Address` (MPI-1's name).
    fn MPI_Address / PMPI_Address(location: *const c_void, address: *mut c_long) {
        // SAFETY: the caller's output argument.
        unsafe { put(address, location as c_long, "address") }
    }
}

counted_fn! {
    /// `MPI_Pack_size`: the bytes `MPI_Pack` needs (packed data has no header).
    fn MPI_Pack_size / PMPI_Pack_size, MPI_Pack_size_c / PMPI_Pack_size_c(incount: Int, datatype: c_int, _comm: c_int, size: *mut Int) {
        let found = types::lookup(datatype)?;
        let len = buffer_len(&found, count_of(incount, NAME)?, NAME)?;
        let len = Int::try_from(len).map_err(|_| MpiError::new(class::COUNT, format!("{NAME}: {len} bytes do not fit an int (MPI_Pack_size_c gives them)")))?;
        // SAFETY: the caller's output argument.
        unsafe { put(size, len, "size") }
    }
}

counted_fn! {
    /// `MPI_Pack`: appends the elements' data at `*position` of `outbuf`.
    fn MPI_Pack / PMPI_Pack, MPI_Pack_c / PMPI_Pack_c(
        inbuf: *const c_void,
        incount: Int,
        datatype: c_int,
        outbuf: *mut c_void,
        outsize: Int,
        position: *mut Int,
        _comm: c_int,
    ) {
        let found = types::committed(datatype)?;
        let n = count_of(incount, NAME)?;
        // SAFETY: the caller's in-out argument.
        let at = unsafe { get(position, "position")? };
        let mut packed = Vec::new();
        // SAFETY: `inbuf` holds `incount` elements, as MPI requires.
        unsafe { found.pack(inbuf.cast(), n, &mut packed) };
        let end = at as usize + packed.len();
        if at < 0 || end > outsize.max(0) as usize {
            return Err(MpiError::new(class::TRUNCATE, format!("{NAME}: {} bytes at position {at} do not fit in {outsize}", packed.len())));
        }
        // SAFETY: `outbuf` holds `outsize` bytes, and the data fits, as checked.
        unsafe {
            std::ptr::copy_nonoverlapping(packed.as_ptr(), outbuf.cast::<u8>().add(at as usize), packed.len());
            put(position, end as Int, "position")
        }
    }
}

counted_fn! {
    /// `MPI_Unpack`: takes the elements' data from `*position` of `inbuf`.
    fn MPI_Unpack / PMPI_Unpack, MPI_Unpack_c / PMPI_Unpack_c(
        inbuf: *const c_void,
        insize: Int,
        position: *mut Int,
        outbuf: *mut c_void,
        outcount: Int,
        datatype: c_int,
        _comm: c_int,
    ) {
        let found = types::committed(datatype)?;
        let n = count_of(outcount, NAME)?;
        // SAFETY: the caller's in-out argument.
        let at = unsafe { get(position, "position")? };
        let len = buffer_len(&found, n, NAME)?;
        let end = at as usize + len;
        if at < 0 || end > insize.max(0) as usize {
            return Err(MpiError::new(class::TRUNCATE, format!("{NAME}: {len} bytes at position {at} are beyond the {insize} bytes of the buffer")));
        }
        // SAFETY: `inbuf` holds `insize` bytes (the range is checked) and
        // `outbuf` `outcount` elements, as MPI requires.
        unsafe {
            let data = std::slice::from_raw_parts(inbuf.cast::<u8>().add(at as usize), len);
            found.unpack(data, outbuf.cast());
            put(position, end as Int, "position")
        }
    }
}

/// Type classes of `MPI_Type_match_size`.
const TYPECLASS_REAL: c_int = 1;
const TYPECLASS_INTEGER: c_int = 2;
const TYPECLASS_COMPLEX: c_int = 3;

/// The Fortran datatype of a class and a size in bytes.
fn fortran_type(typeclass: c_int, size: c_int) -> Option<c_int> {
    let handle: u32 = match (typeclass, size) {
        (TYPECLASS_REAL, 4) => 0x4c000427,
        (TYPECLASS_REAL, 8) => 0x4c000829,
        (TYPECLASS_REAL, 16) => 0x4c00102b,
        (TYPECLASS_INTEGER, 1) => 0x4c00012d,
        (TYPECLASS_INTEGER, 2) => 0x4c00022f,
        (TYPECLASS_INTEGER, 4) => 0x4c000430,
        (TYPECLASS_INTEGER, 8) => 0x4c000831,
        (TYPECLASS_COMPLEX, 8) => 0x4c000828,
        (TYPECLASS_COMPLEX, 16) => 0x4c00102a,
        (TYPECLASS_COMPLEX, 32) => 0x4c00202c,
        _ => return None,
    };
    Some(handle as c_int)
}

mpi_fn! {
    /// `MPI_Type_match_size`: the predefined Fortran datatype of a type
    /// class (`MPI_TYPECLASS_REAL`, `_INTEGER`, `_COMPLEX`) and a size.
    fn MPI_Type_match_size / PMPI_Type_match_size(typeclass: c_int, size: c_int, datatype: *mut c_int) {
        let found = fortran_type(typeclass, size)
            .ok_or_else(|| MpiError::new(class::ARG, format!("no predefined datatype of class {typeclass} has {size} bytes")))?;
        // SAFETY: the caller's output argument.
        unsafe { put(datatype, found, "datatype") }
    }
}

/// A parameterised Fortran datatype (`MPI_Type_create_f90_*`): the
/// predefined one of the class that holds `precision` digits and exponent
/// `range`, under a new handle that says how it was made.
fn f90(combiner: c_int, typeclass: c_int, params: &[c_int], size: c_int, newtype: *mut c_int) -> Result<()> {
    let old = fortran_type(typeclass, size)
        .ok_or_else(|| MpiError::new(class::ARG, format!("no Fortran datatype holds the parameters {params:?}")))?;
    let base = types::lookup(old)?;
    let mut layout = Layout::from_blocks(&base, &[(0, 1)], envelope(combiner, params.to_vec(), vec![], vec![]))?;
    layout.committed = true;
    give(layout, newtype)
}

/// Bytes of a real of `precision` decimal digits and exponent `range`
/// (`MPI_UNDEFINED`: no demand), as Fortran's `SELECTED_REAL_KIND` would
/// choose it: `REAL*4`, `REAL*8` or `REAL*16`; a demand beyond them (or
/// negative) is an error naming it, as there is no such Fortran real.
fn real_size(precision: c_int, range: c_int) -> Result<c_int> {
    let demand = |v: c_int| if v == abi::UNDEFINED { Some(0) } else { (v >= 0).then_some(v) };
    let size = match (demand(precision), demand(range)) {
        (Some(p), Some(r)) if p <= 6 && r <= 37 => Some(4),
        (Some(p), Some(r)) if p <= 15 && r <= 307 => Some(8),
        (Some(p), Some(r)) if p <= 33 && r <= 4931 => Some(16),
        _ => None,
    };
    size.ok_or_else(|| {
        MpiError::new(
            class::ARG,
            format!("no Fortran real has precision {precision} and range {range} (REAL*16's are 33 and 4931)"),
        )
    })
}

/// Bytes of an integer of decimal exponent `range`, as Fortran's
/// `SELECTED_INT_KIND` would choose it (`INTEGER*1` to `INTEGER*8`); a
/// range beyond `INTEGER*8`'s 18 is an error.
fn integer_size(range: c_int) -> Result<c_int> {
    match range {
        r if r <= 2 => Ok(1),
        r if r <= 4 => Ok(2),
        r if r <= 9 => Ok(4),
        r if r <= 18 => Ok(8),
        r => Err(MpiError::new(class::ARG, format!("no Fortran integer has range {r} (INTEGER*8's is 18)"))),
    }
}

mpi_fn! {
    /// `MPI_Type_create_f90_real`.
    fn MPI_Type_create_f90_real / PMPI_Type_create_f90_real(precision: c_int, range: c_int, newtype: *mut c_int) {
        f90(15, TYPECLASS_REAL, &[precision, range], real_size(precision, range)?, newtype)
    }
}

mpi_fn! {
    /// `MPI_Type_create_f90_complex`.
    fn MPI_Type_create_f90_complex / PMPI_Type_create_f90_complex(precision: c_int, range: c_int, newtype: *mut c_int) {
        f90(16, TYPECLASS_COMPLEX, &[precision, range], 2 * real_size(precision, range)?, newtype)
    }
}

mpi_fn! {
    /// `MPI_Type_create_f90_integer`.
    fn MPI_Type_create_f90_integer / PMPI_Type_create_f90_integer(range: c_int, newtype: *mut c_int) {
        f90(17, TYPECLASS_INTEGER, &[range], integer_size(range)?, newtype)
    }
}
