//! Datatypes as the library moves them: predefined ones, and derived ones
//! (`MPI_Type_vector`, `_indexed`, `_create_struct`...), flattened at
//! construction into the list of contiguous blocks one element covers.
//!
//! On the wire every message is packed: the bytes of its elements' blocks
//! end to end. A buffer whose elements are one block each, laid end to end
//! (every predefined datatype but the padded pairs, and contiguous
//! derived ones), is sent and received in place; any other is packed once
//! into a buffer of the library's on send and unpacked once on receive.

use std::ffi::c_int;
use std::sync::Arc;

use parking_lot::RwLock;

use crate::abi::{self, class, kind};
use crate::datatype::{Datatype, Kind};
use crate::errors::{MpiError, Result};
use crate::state::Table;

/// A contiguous run of bytes of an element, at `offset` from its start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    pub offset: isize,
    pub len: usize,
}

/// How a derived datatype was made (`MPI_Type_get_envelope`, `_contents`).
#[derive(Debug, Clone, Default)]
pub struct Envelope {
    pub combiner: c_int,
    pub integers: Vec<c_int>,
    pub addresses: Vec<isize>,
    /// MPI 4's large counts (`MPI_Type_get_contents_c`): the counts and
    /// addresses of a `_c` constructor given a count beyond `int`, which
    /// then are not in `integers` and `addresses`.
    pub large_counts: Vec<i64>,
    /// The datatypes it was made of, held: the program may free their
    /// handles, and `MPI_Type_get_contents` still gives them.
    pub datatypes: Vec<Type>,
}

impl Envelope {
    /// Integer `i` of the envelope's counts as the int form lays them out
    /// (for a large-count envelope, the same position in its large counts).
    pub fn count(&self, i: usize) -> Option<i64> {
        match self.large_counts.is_empty() {
            true => self.integers.get(i).map(|&n| n.into()),
            false => self.large_counts.get(i).copied(),
        }
    }
}

/// A derived datatype.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The blocks of one element, in type-map order, adjacent ones merged.
    pub blocks: Vec<Block>,
    /// Bytes of data in one element.
    pub size: usize,
    pub lb: isize,
    pub extent: isize,
    pub true_lb: isize,
    pub true_extent: isize,
    /// The predefined datatype every part of an element is, if there is
    /// one, and how many of it an element holds (for reductions and
    /// `MPI_Get_elements`).
    pub base: Option<(&'static Datatype, usize)>,
    /// Predefined elements in one element (`MPI_Get_elements`).
    pub elements: usize,
    pub committed: bool,
    pub envelope: Envelope,
    pub name: String,
    /// Whether the lower and upper bounds are markers (`MPI_LB`/`MPI_UB`
    /// in a struct, or `MPI_Type_create_resized`): they stick to types
    /// built from this one, and in a struct they override the bounds of
    /// parts without markers (MPI-1's `MPI_LB`/`MPI_UB` rules).
    pub marked: (bool, bool),
    /// The alignment of its most aligned part: a struct's extent is
    /// rounded up to a multiple of it (MPI 3.1 4.1's epsilon), as the C
    /// compiler pads the structs such types describe.
    pub align: usize,
}

/// A datatype: predefined, or derived (shared with the table).
#[derive(Debug, Clone)]
pub enum Type {
    Predefined(&'static Datatype),
    Derived(Arc<Layout>),
}

/// Derived datatypes, by slot. Their handles are direct datatype handles
/// from [`FIRST_SLOT`] (below it are MPICH's pair types, which are direct
/// handles too).
static TYPES: RwLock<Table<Arc<Layout>>> = RwLock::new(Table::new());

/// The first slot number used for derived datatype handles.
const FIRST_SLOT: usize = 0x100;

/// The datatype of `handle`, or `MPI_ERR_TYPE` naming it.
#[inline]
pub fn lookup(handle: c_int) -> Result<Type> {
    if let Some(predefined) = crate::datatype::predefined(handle) {
        return Ok(Type::Predefined(predefined));
    }
    let derived = abi::direct_index(kind::DATATYPE, handle)
        .filter(|&slot| slot >= FIRST_SLOT)
        .and_then(|slot| TYPES.read().get(slot - FIRST_SLOT).cloned());
    match derived {
        Some(layout) => Ok(Type::Derived(layout)),
        None if handle == abi::DATATYPE_NULL => Err(MpiError::new(class::TYPE, "MPI_DATATYPE_NULL is not a datatype")),
        None => Err(MpiError::new(class::TYPE, format!("{handle:#x} is not a datatype handle (or was freed)"))),
    }
}

/// A datatype for communication: it must be committed.
#[inline]
pub fn committed(handle: c_int) -> Result<Type> {
    match crate::datatype::predefined(handle) {
        Some(predefined) => Ok(Type::Predefined(predefined)),
        None => committed_derived(handle),
    }
}

fn committed_derived(handle: c_int) -> Result<Type> {
    let found = lookup(handle)?;
    if let Type::Derived(layout) = &found {
        if !layout.committed {
            return Err(MpiError::new(
                class::TYPE,
                format!("datatype {handle:#x} is not committed (MPI_Type_commit it before use)"),
            ));
        }
    }
    Ok(found)
}

/// Names given to predefined datatypes (`MPI_Type_set_name`).
static PREDEFINED_NAMES: RwLock<Vec<(c_int, String)>> = RwLock::new(Vec::new());

/// Gives a predefined datatype another name.
pub fn rename_predefined(handle: c_int, name: String) {
    let mut names = PREDEFINED_NAMES.write();
    names.retain(|(h, _)| *h != handle);
    names.push((handle, name));
}

/// Registers a new derived datatype; its handle.
pub fn register(layout: Layout) -> c_int {
    let slot = TYPES.write().insert(Arc::new(layout));
    abi::direct_handle(kind::DATATYPE, slot + FIRST_SLOT)
}

/// Changes a derived datatype in place (commit, name).
pub fn update(handle: c_int, change: impl FnOnce(&mut Layout)) -> Result<()> {
    let slot = abi::direct_index(kind::DATATYPE, handle).filter(|&slot| slot >= FIRST_SLOT);
    let mut types = TYPES.write();
    let Some(entry) = slot.and_then(|slot| types.get_mut(slot - FIRST_SLOT)) else {
        return Err(MpiError::new(class::TYPE, format!("{handle:#x} is not a derived datatype")));
    };
    let mut layout = (**entry).clone();
    change(&mut layout);
    *entry = Arc::new(layout);
    Ok(())
}

/// Frees a derived datatype (requests under way keep their copy).
pub fn free(handle: c_int) -> Result<()> {
    let slot = abi::direct_index(kind::DATATYPE, handle).filter(|&slot| slot >= FIRST_SLOT);
    match slot.and_then(|slot| TYPES.write().remove(slot - FIRST_SLOT)) {
        Some(_) => Ok(()),
        None => Err(MpiError::new(
            class::TYPE,
            format!("{handle:#x} is not a derived datatype (predefined ones cannot be freed)"),
        )),
    }
}

impl Type {
    pub fn size(&self) -> usize {
        match self {
            Type::Predefined(d) => d.size,
            Type::Derived(l) => l.size,
        }
    }

    pub fn extent(&self) -> isize {
        match self {
            Type::Predefined(d) => d.extent as isize,
            Type::Derived(l) => l.extent,
        }
    }

    /// The alignment of its most aligned part (see `Layout::align`).
    pub fn align(&self) -> usize {
        match self {
            Type::Predefined(d) => d.alignment(),
            Type::Derived(l) => l.align,
        }
    }

    /// Whether the lower and upper bounds are markers (see `Layout::marked`).
    pub fn marked(&self) -> (bool, bool) {
        match self {
            Type::Predefined(_) => (false, false),
            Type::Derived(l) => l.marked,
        }
    }

    pub fn lb(&self) -> isize {
        match self {
            Type::Predefined(_) => 0,
            Type::Derived(l) => l.lb,
        }
    }

    pub fn true_lb(&self) -> isize {
        match self {
            Type::Predefined(_) => 0,
            Type::Derived(l) => l.true_lb,
        }
    }

    pub fn true_extent(&self) -> isize {
        match self {
            Type::Predefined(d) => d.size as isize,
            Type::Derived(l) => l.true_extent,
        }
    }

    /// The blocks of one element.
    pub fn blocks(&self) -> Vec<Block> {
        match self {
            Type::Predefined(d) => vec![Block { offset: 0, len: d.size }],
            Type::Derived(l) => l.blocks.clone(),
        }
    }

    /// The predefined datatype every part is made of, and how many an element holds.
    pub fn base(&self) -> Option<(&'static Datatype, usize)> {
        match self {
            Type::Predefined(d) => Some((d, 1)),
            Type::Derived(l) => l.base,
        }
    }

    /// Predefined elements in one element.
    pub fn elements(&self) -> usize {
        match self {
            Type::Predefined(d) if matches!(d.kind, Kind::Pair(_)) => 2,
            Type::Predefined(_) => 1,
            Type::Derived(l) => l.elements,
        }
    }

    /// If `count` elements at a buffer are its bytes end to end: where
    /// they start, from the buffer.
    pub fn contiguous(&self, count: usize) -> Option<isize> {
        match self {
            Type::Predefined(d) => (count <= 1 || d.size == d.extent).then_some(0),
            Type::Derived(l) => match l.blocks[..] {
                [] => Some(0),
                [only] if count <= 1 || (only.len == l.size && l.extent == l.size as isize) => Some(only.offset),
                _ => None,
            },
        }
    }

    /// The bytes `count` elements occupy on the wire.
    pub fn packed_len(&self, count: usize) -> usize {
        count * self.size()
    }

    /// Appends the data of `count` elements at `buf` to `out`.
    ///
    /// # Safety
    /// `buf` holds `count` elements of this datatype, readable.
    pub unsafe fn pack(&self, buf: *const u8, count: usize, out: &mut Vec<u8>) {
        let len = self.packed_len(count);
        if len == 0 {
            return; // (the buffer may be NULL: no slice of it)
        }
        if let Some(start) = self.contiguous(count) {
            // One copy: element by element, a megabyte of bytes took
            // milliseconds.
            // SAFETY: the elements lie end to end from `start`, inside the
            // caller's buffer, as MPI requires.
            out.extend_from_slice(unsafe { std::slice::from_raw_parts(buf.wrapping_offset(start), len) });
            return;
        }
        let blocks = self.blocks();
        let extent = self.extent();
        out.reserve(len);
        for i in 0..count as isize {
            for block in &blocks {
                // Wrapping: `buf` itself may lie outside the data
                // (`MPI_BOTTOM`, a lower bound that is not 0).
                let from = buf.wrapping_offset(i * extent + block.offset);
                // SAFETY: each block of each element is inside the
                // caller's buffer, as MPI requires.
                out.extend_from_slice(unsafe { std::slice::from_raw_parts(from, block.len) });
            }
        }
    }

    /// Writes `data` (packed elements, whole ones first) to the elements
    /// at `buf`; how many bytes it used.
    ///
    /// # Safety
    /// `buf` holds `count` elements of this datatype, writable, where
    /// `count` covers `data`.
    pub unsafe fn unpack(&self, data: &[u8], buf: *mut u8) -> usize {
        if data.is_empty() {
            return 0; // (the buffer may be NULL: nothing to write)
        }
        let elements = data.len().div_ceil(self.size().max(1));
        if let Some(start) = self.contiguous(elements) {
            // SAFETY: the elements lie end to end from `start`, inside the
            // caller's buffer, as MPI requires.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), buf.wrapping_offset(start), data.len()) };
            return data.len();
        }
        let blocks = self.blocks();
        let extent = self.extent();
        let mut at = 0;
        let mut i = 0isize;
        while at < data.len() {
            for block in &blocks {
                if at >= data.len() {
                    break;
                }
                let len = block.len.min(data.len() - at);
                let to = buf.wrapping_offset(i * extent + block.offset);
                // SAFETY: inside the caller's buffer, as MPI requires.
                unsafe { std::ptr::copy_nonoverlapping(data[at..].as_ptr(), to, len) };
                at += len;
            }
            i += 1;
        }
        at
    }

    /// The name `MPI_Type_get_name` gives.
    pub fn name(&self) -> String {
        match self {
            Type::Predefined(d) => {
                let names = PREDEFINED_NAMES.read();
                names.iter().find(|(h, _)| *h == d.handle).map_or_else(|| d.name.to_owned(), |(_, n)| n.clone())
            }
            Type::Derived(l) => l.name.clone(),
        }
    }
}

/// The most blocks one derived datatype may be flattened into: 2^28, 4
/// GiB of block list (a vector of 135 million `long long`s apart, which
/// MPICH's `datatype/large_vec` sends, is 2 GiB of it). A type beyond it
/// (a vector of a billion separate elements, whose size MPI 3's
/// large-count functions are made to query) is refused with
/// `MPI_ERR_NO_MEM` rather than left to exhaust the memory of the host
/// while it is built.
pub const MAX_BLOCKS: usize = 1 << 28;

/// The error for a datatype of `blocks` blocks, beyond [`MAX_BLOCKS`].
pub fn too_many_blocks(blocks: usize) -> MpiError {
    MpiError::new(
        class::NO_MEM,
        format!(
            "the datatype is {blocks} separate runs of bytes; grappe flattens a datatype into its runs and holds at most {MAX_BLOCKS} per datatype"
        ),
    )
}

/// Builds derived layouts.
impl Layout {
    /// `count` copies of `old`'s blocks, copy `i` at `offsets[i]` bytes with
    /// `lens[i]` elements of `old` (each `old`'s extent after the previous).
    /// More than [`MAX_BLOCKS`] blocks is an error, found before any is made.
    pub fn from_blocks(old: &Type, parts: &[(isize, usize)], envelope: Envelope) -> Result<Layout> {
        let (old_blocks, old_extent) = (old.blocks(), old.extent());
        // An element of `old` that is one block filling its extent (a
        // predefined type, a contiguous one): a run of them is one block,
        // laid out without a step per element (subarrays and strided
        // sends of large rows, made and freed per transfer by ARMCI-MPI,
        // cost their rows, not their elements).
        let dense = match old_blocks[..] {
            [only] => only.len as isize == old_extent,
            _ => false,
        };
        let bound = block_bound(parts, old_blocks.len(), old_extent, dense);
        if bound > MAX_BLOCKS {
            return Err(too_many_blocks(bound));
        }
        let mut blocks: Vec<Block> = Vec::new();
        let (mut lb, mut ub) = (None::<isize>, None::<isize>);
        let (mut true_lb, mut true_ub) = (None::<isize>, None::<isize>);
        for &(offset, n) in parts {
            if n == 0 {
                continue;
            }
            // The elements lie at offset + k * extent, k < n: the lowest
            // and highest of them bound the run.
            let last = offset + (n as isize - 1) * old_extent;
            let (low, high) = (offset.min(last), offset.max(last));
            lb = Some(lb.map_or(low + old.lb(), |l| l.min(low + old.lb())));
            ub = Some(ub.map_or(high + old.lb() + old_extent, |u| u.max(high + old.lb() + old_extent)));
            let (tl, tu) = (low + old.true_lb(), high + old.true_lb() + old.true_extent());
            true_lb = Some(true_lb.map_or(tl, |l| l.min(tl)));
            true_ub = Some(true_ub.map_or(tu, |u| u.max(tu)));
            if dense {
                let only = old_blocks[0];
                push_block(&mut blocks, Block { offset: offset + only.offset, len: only.len * n });
                continue;
            }
            for k in 0..n as isize {
                let at = offset + k * old_extent;
                for b in &old_blocks {
                    push_block(&mut blocks, Block { offset: at + b.offset, len: b.len });
                }
            }
        }
        let count: usize = parts.iter().map(|p| p.1).sum();
        let elements = old.elements() * count;
        let size = blocks.iter().map(|b| b.len).sum();
        let (lb, ub) = (lb.unwrap_or(0), ub.unwrap_or(0));
        let (true_lb, true_ub) = (true_lb.unwrap_or(0), true_ub.unwrap_or(0));
        Ok(Layout {
            blocks,
            size,
            lb,
            extent: ub - lb,
            true_lb,
            true_extent: true_ub - true_lb,
            base: old.base().map(|(b, n)| (b, n * count)),
            elements,
            committed: false,
            envelope,
            name: String::new(),
            marked: old.marked(),
            align: old.align(),
        })
    }

    /// A struct: blocks of different datatypes.
    pub fn from_struct(parts: &[(isize, usize, Type)], envelope: Envelope) -> Result<Layout> {
        let mut layout = Layout::from_blocks(&Type::Predefined(crate::datatype::BYTE), &[], envelope.clone())?;
        let mut base: Option<Option<(&'static Datatype, usize)>> = None;
        let (mut lb, mut ub, mut true_lb, mut true_ub) = (None::<isize>, None::<isize>, None::<isize>, None::<isize>);
        // Bounds set by markers: MPI_LB/MPI_UB parts, and parts whose own
        // bounds are markers. Where there are any, they are the bounds.
        let (mut marked_lb, mut marked_ub) = (None::<isize>, None::<isize>);
        let min = |a: Option<isize>, b: isize| Some(a.map_or(b, |a| a.min(b)));
        let max = |a: Option<isize>, b: isize| Some(a.map_or(b, |a| a.max(b)));
        for (offset, n, old) in parts {
            if *n == 0 {
                continue;
            }
            match old {
                Type::Predefined(d) if d.handle == abi::LB => {
                    marked_lb = min(marked_lb, *offset);
                    continue;
                }
                Type::Predefined(d) if d.handle == abi::UB => {
                    marked_ub = max(marked_ub, *offset);
                    continue;
                }
                _ => {}
            }
            let one = Layout::from_blocks(old, &[(*offset, *n)], Envelope::default())?;
            if layout.blocks.len() + one.blocks.len() > MAX_BLOCKS {
                return Err(too_many_blocks(layout.blocks.len() + one.blocks.len()));
            }
            for b in &one.blocks {
                push_block(&mut layout.blocks, *b);
            }
            layout.elements += one.elements;
            let (lb_marked, ub_marked) = old.marked();
            if lb_marked {
                marked_lb = min(marked_lb, one.lb);
            }
            if ub_marked {
                marked_ub = max(marked_ub, one.lb + one.extent);
            }
            layout.align = layout.align.max(one.align);
            lb = min(lb, one.lb);
            ub = max(ub, one.lb + one.extent);
            true_lb = min(true_lb, one.true_lb);
            true_ub = max(true_ub, one.true_lb + one.true_extent);
            base = Some(match (base, one.base) {
                (None, b) => b,
                (Some(Some((a, na))), Some((b, nb))) if a.handle == b.handle => Some((a, na + nb)),
                _ => None,
            });
        }
        layout.size = layout.blocks.iter().map(|b| b.len).sum();
        layout.lb = marked_lb.or(lb).unwrap_or(0);
        layout.extent = match marked_ub {
            // An upper bound the program set stays where it is.
            Some(ub) => ub - layout.lb,
            None => padded(ub.unwrap_or(0) - layout.lb, layout.align),
        };
        layout.true_lb = true_lb.unwrap_or(0);
        layout.true_extent = true_ub.unwrap_or(0) - layout.true_lb;
        layout.base = base.flatten();
        layout.marked = (marked_lb.is_some(), marked_ub.is_some());
        Ok(layout)
    }
}

/// At most how many blocks `parts` of an old datatype of `old_blocks`
/// blocks make (saturating): a part of a `dense` old type is one block,
/// and adjacent parts of one merge; otherwise each element of a part
/// brings the old type's blocks.
fn block_bound(parts: &[(isize, usize)], old_blocks: usize, old_extent: isize, dense: bool) -> usize {
    let mut bound = 0usize;
    let mut previous_end = None::<isize>;
    for &(offset, n) in parts {
        if n == 0 {
            continue;
        }
        bound = match dense {
            true if previous_end == Some(offset) => bound,
            true => bound.saturating_add(1),
            false => bound.saturating_add(n.saturating_mul(old_blocks)),
        };
        previous_end = Some(offset + n as isize * old_extent);
    }
    bound
}

/// `extent` rounded up to a multiple of `align` (MPI's epsilon).
fn padded(extent: isize, align: usize) -> isize {
    let align = align.max(1) as isize;
    match extent % align {
        r if extent > 0 && r != 0 => extent + align - r,
        _ => extent,
    }
}

/// Appends `block`, merged with the last one if it follows it in memory.
fn push_block(blocks: &mut Vec<Block>, block: Block) {
    if block.len == 0 {
        return;
    }
    if let Some(last) = blocks.last_mut() {
        if last.offset + last.len as isize == block.offset {
            last.len += block.len;
            return;
        }
    }
    blocks.push(block);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int() -> Type {
        lookup(0x4c000405).unwrap()
    }

    #[test]
    fn a_vector_is_its_blocks_at_their_strides_and_packs_them_in_order() {
        // MPI_Type_vector(3, 2, 4, MPI_INT): ints 0,1 4,5 8,9.
        let parts: Vec<(isize, usize)> = (0..3).map(|i| (i * 16, 2)).collect();
        let layout = Layout::from_blocks(&int(), &parts, Envelope::default()).unwrap();
        assert_eq!(layout.size, 24);
        assert_eq!((layout.lb, layout.extent), (0, 40));
        assert_eq!(
            layout.blocks,
            vec![Block { offset: 0, len: 8 }, Block { offset: 16, len: 8 }, Block { offset: 32, len: 8 }]
        );
        let vector = Type::Derived(Arc::new(layout));
        assert_eq!(vector.contiguous(1), None);
        let data: Vec<i32> = (0..20).collect();
        let mut packed = Vec::new();
        // SAFETY: 20 ints cover two vectors of extent 40 bytes + 24.
        unsafe { vector.pack(data.as_ptr().cast(), 1, &mut packed) };
        let ints: Vec<i32> = packed.chunks(4).map(|c| i32::from_ne_bytes(c.try_into().unwrap())).collect();
        assert_eq!(ints, vec![0, 1, 4, 5, 8, 9]);
        let mut back = vec![-1i32; 10];
        // SAFETY: 10 ints hold one vector.
        let used = unsafe { vector.unpack(&packed, back.as_mut_ptr().cast()) };
        assert_eq!((used, back), (24, vec![0, 1, -1, -1, 4, 5, -1, -1, 8, 9]));
    }

    #[test]
    fn a_type_of_more_runs_than_a_datatype_holds_is_refused_before_they_are_listed() {
        // Two ints 8 bytes apart: two runs per element, 12 bytes of extent.
        let pair =
            Type::Derived(Arc::new(Layout::from_blocks(&int(), &[(0, 1), (8, 1)], Envelope::default()).unwrap()));
        let refused = Layout::from_blocks(&pair, &[(0, MAX_BLOCKS / 2 + 1)], Envelope::default()).unwrap_err();
        assert_eq!(refused.class, class::NO_MEM);
        assert!(refused.message.contains(&(MAX_BLOCKS + 2).to_string()), "{}", refused.message);
        // Parts of a dense type that continue one another are one run,
        // however many there are.
        assert_eq!(block_bound(&[(0, 3), (12, 5), (32, 1)], 1, 4, true), 1);
        assert_eq!(block_bound(&[(0, 3), (16, 5)], 1, 4, true), 2);
    }

    #[test]
    fn adjacent_blocks_merge_into_a_contiguous_type() {
        let layout = Layout::from_blocks(&int(), &[(0, 4)], Envelope::default()).unwrap();
        assert_eq!(layout.blocks, vec![Block { offset: 0, len: 16 }]);
        let contiguous = Type::Derived(Arc::new(layout));
        assert_eq!(contiguous.contiguous(10), Some(0));
        assert_eq!(contiguous.base().map(|(b, n)| (b.name, n)), Some(("MPI_INT", 4)));
    }

    #[test]
    fn contiguous_elements_pack_and_unpack_in_one_copy_from_where_they_start() {
        // Two ints starting 8 bytes in (a resized-like shifted start):
        // elements end to end, so any count packs as one run of bytes.
        let layout = Layout::from_blocks(&int(), &[(8, 2)], Envelope::default()).unwrap();
        let shifted = Type::Derived(Arc::new(layout));
        assert_eq!(shifted.contiguous(1), Some(8));
        let data: Vec<i32> = (0..8).collect();
        let mut packed = Vec::new();
        // SAFETY: 8 ints hold the element's 2 ints from byte 8.
        unsafe { shifted.pack(data.as_ptr().cast(), 1, &mut packed) };
        assert_eq!(packed, [2i32, 3].iter().flat_map(|i| i.to_ne_bytes()).collect::<Vec<u8>>());
        // A whole MPI_INT run, and a part of one element at the end: only
        // the bytes given are written.
        let bytes: Vec<u8> = (1..=10).collect();
        let mut back = vec![0xeeu8; 16];
        // SAFETY: 16 bytes hold 3 ints and more.
        let used = unsafe { int().unpack(&bytes, back.as_mut_ptr()) };
        assert_eq!(used, 10);
        assert_eq!(&back[..10], &bytes[..]);
        assert!(back[10..].iter().all(|&b| b == 0xee), "nothing past the data: {back:?}");
        // No element: a NULL buffer is never touched.
        let mut none = Vec::new();
        // SAFETY: zero elements need no memory.
        unsafe { int().pack(std::ptr::null(), 0, &mut none) };
        // SAFETY: as above.
        assert_eq!((none.len(), unsafe { int().unpack(&[], std::ptr::null_mut()) }), (0, 0));
    }

    #[test]
    fn a_struct_keeps_its_padding_out_of_its_data_and_has_no_single_base() {
        let double = lookup(0x4c00080b).unwrap();
        let layout = Layout::from_struct(&[(0, 1, double.clone()), (8, 1, int())], Envelope::default()).unwrap();
        // { double; int; } is 16 bytes in C: the extent is rounded up to
        // the double's alignment (MPI's epsilon), the data stay 12 bytes.
        assert_eq!((layout.size, layout.extent, layout.elements), (12, 16, 2));
        assert!(layout.base.is_none());
        let short = lookup(0x4c000203).unwrap();
        let layout =
            Layout::from_struct(&[(0, 1, short), (2, 1, lookup(0x4c000101).unwrap())], Envelope::default()).unwrap();
        assert_eq!((layout.size, layout.extent), (3, 4), "{{ short; char; }} pads to the short's alignment");
    }

    #[test]
    fn an_upper_bound_the_program_sets_is_not_padded() {
        let double = lookup(0x4c00080b).unwrap();
        let ub = lookup(abi::UB).unwrap();
        let layout = Layout::from_struct(&[(0, 1, double), (8, 1, int()), (12, 1, ub)], Envelope::default()).unwrap();
        assert_eq!(layout.extent, 12);
    }
}
