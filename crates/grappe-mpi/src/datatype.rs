//! MPI's predefined datatypes: their sizes, extents and what reductions
//! may do with them.

use std::ffi::c_int;

use crate::abi::class;
use crate::errors::{MpiError, Result};

/// What a datatype's elements are, for reductions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F32,
    F64,
    /// C's `long double` (`MPI_LONG_DOUBLE`): x87 extended precision in 16
    /// bytes on x86-64, combined there; moved, never combined, elsewhere.
    LongDouble,
    /// Fortran's 16-byte reals, 16-byte and wider complexes, MPICH's half
    /// precision: moved, never combined by grappe.
    Opaque,
    /// `MPI_C_BOOL`, `MPI_CXX_BOOL`: one byte, logical operations only.
    Bool,
    /// `MPI_BYTE`, `MPI_PACKED`: bitwise operations only.
    Byte,
    /// `float _Complex` and Fortran's `COMPLEX`.
    Complex32,
    /// `double _Complex` and Fortran's `DOUBLE COMPLEX`.
    Complex64,
    /// The value-and-index pairs of `MPI_MINLOC` and `MPI_MAXLOC`.
    Pair(PairKind),
}

/// The pair types, as C lays them out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairKind {
    /// `MPI_FLOAT_INT`: `{ float; int; }`.
    FloatInt,
    /// `MPI_DOUBLE_INT`: `{ double; int; }`, 16 bytes with padding.
    DoubleInt,
    /// `MPI_LONG_INT`: `{ long; int; }`, 16 bytes with padding.
    LongInt,
    /// `MPI_SHORT_INT`: `{ short; int; }`, 8 bytes with padding.
    ShortInt,
    /// `MPI_2INT`: `{ int; int; }`, and Fortran's `MPI_2INTEGER`.
    TwoInt,
    /// `MPI_LONG_DOUBLE_INT`: `{ long double; int; }`, 32 bytes with
    /// padding on x86-64.
    LongDoubleInt,
    /// Fortran's `MPI_2REAL`: two `REAL`s, the index a `REAL` too.
    TwoReal,
    /// Fortran's `MPI_2DOUBLE_PRECISION`: two `DOUBLE PRECISION`s.
    TwoDoublePrecision,
}

impl PairKind {
    /// Bytes of the index, which follows the value: C's pairs have an
    /// `int`, Fortran's an index of the value's own type.
    pub fn index_size(self) -> usize {
        match self {
            PairKind::TwoDoublePrecision => 8,
            _ => 4,
        }
    }
}

/// A predefined datatype.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Datatype {
    pub handle: c_int,
    pub name: &'static str,
    /// Bytes of data in one element (`MPI_Type_size`).
    pub size: usize,
    /// Bytes from one element to the next in memory (`MPI_Type_get_extent`).
    pub extent: usize,
    pub kind: Kind,
}

impl Datatype {
    /// The alignment C gives the type on x86-64 (System V): its size for
    /// numbers, a part's for complexes, the larger part's for the pairs,
    /// 1 for bytes and the bound markers.
    pub fn alignment(&self) -> usize {
        let by_size = |size: usize| size.clamp(1, 16);
        match self.kind {
            Kind::Pair(PairKind::DoubleInt | PairKind::LongInt | PairKind::TwoDoublePrecision) => 8,
            Kind::Pair(PairKind::LongDoubleInt) => 16,
            Kind::Pair(_) => 4,
            Kind::Complex32 | Kind::Complex64 => by_size(self.size / 2),
            Kind::Opaque if self.name.contains("COMPLEX") => by_size(self.size / 2),
            Kind::Byte | Kind::Bool => 1,
            _ => by_size(self.size),
        }
    }
}

macro_rules! predefined {
    ($($name:literal $handle:literal $kind:expr, $size:literal, $extent:literal;)*) => {
        /// Every predefined datatype grappe knows, as MPICH numbers them.
        pub static PREDEFINED: &[Datatype] = &[
            $(Datatype { handle: $handle as u32 as c_int, name: $name, size: $size, extent: $extent, kind: $kind },)*
        ];
    };
}

use Kind::*;
use PairKind::*;

predefined! {
    "MPI_CHAR" 0x4c000101 I8, 1, 1;
    "MPI_SIGNED_CHAR" 0x4c000118 I8, 1, 1;
    "MPI_UNSIGNED_CHAR" 0x4c000102 U8, 1, 1;
    "MPI_BYTE" 0x4c00010d Byte, 1, 1;
    "MPI_WCHAR" 0x4c00040e I32, 4, 4;
    "MPI_SHORT" 0x4c000203 I16, 2, 2;
    "MPI_UNSIGNED_SHORT" 0x4c000204 U16, 2, 2;
    "MPI_INT" 0x4c000405 I32, 4, 4;
    "MPI_UNSIGNED" 0x4c000406 U32, 4, 4;
    "MPI_LONG" 0x4c000807 I64, 8, 8;
    "MPI_UNSIGNED_LONG" 0x4c000808 U64, 8, 8;
    "MPI_FLOAT" 0x4c00040a F32, 4, 4;
    "MPI_DOUBLE" 0x4c00080b F64, 8, 8;
    "MPI_LONG_DOUBLE" 0x4c00100c LongDouble, 16, 16;
    "MPI_LONG_LONG_INT" 0x4c000809 I64, 8, 8;
    "MPI_UNSIGNED_LONG_LONG" 0x4c000819 U64, 8, 8;
    "MPI_PACKED" 0x4c00010f Byte, 1, 1;
    "MPI_LB" 0x4c000010 Byte, 0, 0;
    "MPI_UB" 0x4c000011 Byte, 0, 0;
    "MPI_FLOAT_INT" 0x8c000000 Pair(FloatInt), 8, 8;
    "MPI_DOUBLE_INT" 0x8c000001 Pair(DoubleInt), 12, 16;
    "MPI_LONG_INT" 0x8c000002 Pair(LongInt), 12, 16;
    "MPI_SHORT_INT" 0x8c000003 Pair(ShortInt), 6, 8;
    "MPI_2INT" 0x4c000816 Pair(TwoInt), 8, 8;
    "MPI_LONG_DOUBLE_INT" 0x8c000004 Pair(LongDoubleInt), 20, 32;
    "MPI_COMPLEX" 0x4c00081e Complex32, 8, 8;
    "MPI_DOUBLE_COMPLEX" 0x4c001022 Complex64, 16, 16;
    "MPI_LOGICAL" 0x4c00041d I32, 4, 4;
    "MPI_REAL" 0x4c00041c F32, 4, 4;
    "MPI_DOUBLE_PRECISION" 0x4c00081f F64, 8, 8;
    "MPI_INTEGER" 0x4c00041b I32, 4, 4;
    "MPI_2INTEGER" 0x4c000820 Pair(TwoInt), 8, 8;
    "MPI_2REAL" 0x4c000821 Pair(TwoReal), 8, 8;
    "MPI_2DOUBLE_PRECISION" 0x4c001023 Pair(TwoDoublePrecision), 16, 16;
    "MPI_CHARACTER" 0x4c00011a I8, 1, 1;
    "MPI_REAL4" 0x4c000427 F32, 4, 4;
    "MPI_REAL8" 0x4c000829 F64, 8, 8;
    "MPI_REAL16" 0x4c00102b Opaque, 16, 16;
    "MPI_COMPLEX8" 0x4c000828 Complex32, 8, 8;
    "MPI_COMPLEX16" 0x4c00102a Complex64, 16, 16;
    "MPI_COMPLEX32" 0x4c00202c Opaque, 32, 32;
    "MPI_INTEGER1" 0x4c00012d I8, 1, 1;
    "MPI_INTEGER2" 0x4c00022f I16, 2, 2;
    "MPI_INTEGER4" 0x4c000430 I32, 4, 4;
    "MPI_INTEGER8" 0x4c000831 I64, 8, 8;
    "MPI_INT8_T" 0x4c000137 I8, 1, 1;
    "MPI_INT16_T" 0x4c000238 I16, 2, 2;
    "MPI_INT32_T" 0x4c000439 I32, 4, 4;
    "MPI_INT64_T" 0x4c00083a I64, 8, 8;
    "MPI_UINT8_T" 0x4c00013b U8, 1, 1;
    "MPI_UINT16_T" 0x4c00023c U16, 2, 2;
    "MPI_UINT32_T" 0x4c00043d U32, 4, 4;
    "MPI_UINT64_T" 0x4c00083e U64, 8, 8;
    "MPI_C_BOOL" 0x4c00013f Bool, 1, 1;
    "MPI_C_FLOAT_COMPLEX" 0x4c000840 Complex32, 8, 8;
    "MPI_C_DOUBLE_COMPLEX" 0x4c001041 Complex64, 16, 16;
    "MPI_C_LONG_DOUBLE_COMPLEX" 0x4c002042 Opaque, 32, 32;
    "MPI_AINT" 0x4c000843 I64, 8, 8;
    "MPI_OFFSET" 0x4c000844 I64, 8, 8;
    "MPI_COUNT" 0x4c000845 I64, 8, 8;
    "MPIX_C_FLOAT16" 0x4c000246 Opaque, 2, 2;
    "MPI_CXX_BOOL" 0x4c000133 Bool, 1, 1;
    "MPI_CXX_FLOAT_COMPLEX" 0x4c000834 Complex32, 8, 8;
    "MPI_CXX_DOUBLE_COMPLEX" 0x4c001035 Complex64, 16, 16;
    "MPI_CXX_LONG_DOUBLE_COMPLEX" 0x4c002036 Opaque, 32, 32;
}

/// `MPI_BYTE`.
pub static BYTE: &Datatype = &PREDEFINED[3];

/// The predefined datatype of `handle`, if it is one: built-in handles
/// are found by their low byte, MPICH's pair types (direct handles
/// `0x8c00000N`) by their slot, through a table made at compile time.
#[inline]
pub fn predefined(handle: c_int) -> Option<&'static Datatype> {
    let index = BY_LOW_BYTE[low_byte(handle)];
    let found = PREDEFINED.get(index as usize)?;
    (found.handle == handle).then_some(found)
}

/// The bytes of `count` elements of predefined datatype `handle` if they
/// lie end to end with no gap (every built-in type but the bound markers;
/// the pair types go the general way), for the short path of sends and
/// receives.
#[inline]
pub fn dense_len(handle: c_int, count: i64) -> Option<usize> {
    let (known, size) = DENSE_BY_LOW_BYTE[(handle as u32 & 0xff) as usize];
    if known != handle || size == 0 {
        return None;
    }
    usize::try_from(count).ok()?.checked_mul(size as usize).filter(|&len| len <= isize::MAX as usize)
}

/// The built-in (non-pair) predefined types whose elements lie end to
/// end, by their handle's low byte: the handle and the element size (0
/// where there is none). One load and a compare for the short path.
static DENSE_BY_LOW_BYTE: [(c_int, u32); 256] = {
    let mut table = [(0, 0u32); 256];
    let mut i = 0;
    while i < PREDEFINED.len() {
        let found = &PREDEFINED[i];
        if found.handle as u32 >> 30 != 2 && found.size == found.extent && found.size > 0 {
            table[(found.handle as u32 & 0xff) as usize] = (found.handle, found.size as u32);
        }
        i += 1;
    }
    table
};

/// The table's index of a handle: its low byte, pairs (kind 2) from 0x80.
const fn low_byte(handle: c_int) -> usize {
    (handle as u32 & 0xff) as usize + if handle as u32 >> 30 == 2 { 0x80 } else { 0 }
}

/// Index in [`PREDEFINED`] by [`low_byte`]; 0xff where there is none.
static BY_LOW_BYTE: [u8; 384] = {
    let mut table = [0xffu8; 384];
    let mut i = 0;
    while i < PREDEFINED.len() {
        table[low_byte(PREDEFINED[i].handle)] = i as u8;
        i += 1;
    }
    table
};

/// The datatype of `handle`, or `MPI_ERR_TYPE` naming it.
pub fn lookup(handle: c_int) -> Result<&'static Datatype> {
    if let Some(datatype) = predefined(handle) {
        return Ok(datatype);
    }
    let why = match handle {
        crate::abi::DATATYPE_NULL => "MPI_DATATYPE_NULL is not a datatype".to_owned(),
        _ => format!(
            "datatype handle {handle:#x} is not a predefined datatype (derived datatypes are not supported by this \
             version of grappe's MPI library)"
        ),
    };
    Err(MpiError::new(class::TYPE, why))
}

impl Datatype {
    /// The bytes that `count` elements span in memory.
    pub fn span(&self, count: c_int, what: &str) -> Result<usize> {
        if count < 0 {
            return Err(MpiError::new(class::COUNT, format!("{what}: negative count {count}")));
        }
        Ok(count as usize * self.extent)
    }

    /// The elements in `bytes` received, or `MPI_UNDEFINED` if that is
    /// not a whole number of them.
    pub fn count_of(&self, bytes: u64) -> c_int {
        let extent = self.extent as u64;
        if bytes % extent != 0 || bytes / extent > c_int::MAX as u64 {
            return crate::abi::UNDEFINED;
        }
        (bytes / extent) as c_int
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_short_path_takes_exactly_the_dense_predefined_types() {
        for d in PREDEFINED {
            // The pair types (direct handles) take the general path.
            let dense = d.size == d.extent && d.size > 0 && d.handle as u32 >> 30 != 2;
            let expected = dense.then_some(d.size * 3);
            assert_eq!(dense_len(d.handle, 3), expected, "{}", d.name);
            assert_eq!(dense_len(d.handle, -1), None, "{}: a negative count", d.name);
        }
        // Unknown handles sharing a low byte with a type, derived types,
        // MPI_DATATYPE_NULL: the general path names the problem.
        for stranger in [0x4c00ff05u32 as c_int, 0x8c000005u32 as c_int, crate::abi::DATATYPE_NULL, 0, -1] {
            assert_eq!(dense_len(stranger, 1), None, "{stranger:#x}");
        }
    }

    #[test]
    fn built_in_handles_hold_their_size_and_handles_are_unique() {
        for d in PREDEFINED {
            if d.handle as u32 >> 30 == 1 && !matches!(d.kind, Pair(_)) {
                assert_eq!(((d.handle >> 8) & 0xff) as usize, d.size, "{}", d.name);
            }
            assert_eq!(PREDEFINED.iter().filter(|o| o.handle == d.handle).count(), 1, "{}", d.name);
        }
        assert_eq!(lookup(0x4c000405).unwrap().name, "MPI_INT");
        assert_eq!(lookup(crate::abi::DATATYPE_NULL).unwrap_err().class, class::TYPE);
    }

    #[test]
    fn counts_come_from_extents() {
        let double_int = lookup(0x8c000001u32 as c_int).unwrap();
        assert_eq!((double_int.span(3, "x").unwrap(), double_int.count_of(48)), (48, 3));
        assert_eq!(double_int.count_of(20), crate::abi::UNDEFINED);
        assert_eq!(double_int.span(-1, "MPI_Send").unwrap_err().class, class::COUNT);
    }
}
