//! `MPI_Pack_external`, `MPI_Unpack_external`, `MPI_Pack_external_size`
//! (and the conversions of MPI-IO's external32 views):
//! the "external32" representation (MPI 3.1 §13.5.2), big-endian with
//! sizes fixed by the standard whatever the host's: `MPI_LONG` and
//! `MPI_UNSIGNED_LONG` take 4 bytes, `MPI_WCHAR` 2, the others their
//! size here. Elements go in the type map's order; a value that does not
//! fit its external size (a `long` past 32 bits) is an
//! `MPI_ERR_CONVERSION` naming the element, never cut silently.
//!
//! Datatypes whose elements are all of one predefined type are supported
//! (every predefined type but `MPI_LONG_DOUBLE_INT`, and the derived types
//! built from one). Floating-point values are IEEE formats in both
//! representations and only change byte order; `long double` (x87
//! extended here) goes as its 16 bytes reversed, which reads back here but
//! is not the binary128 the standard names.

use std::ffi::{c_char, c_int, c_long, c_void};

use crate::abi::class;
use crate::counted_fn;
use crate::datatype::{Datatype, Kind, PairKind};
use crate::errors::{MpiError, Result};
use crate::types::{self, Type};

use super::env::read_string;
use super::{count_of, get, put};

/// How one predefined element is written in external32.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// An integer of `native` bytes here, `external` bytes there.
    Int { native: usize, external: usize, signed: bool },
    /// Parts of `part` bytes each in reversed byte order (floats,
    /// complexes' halves, pairs of one type).
    Swapped { part: usize },
}

impl Format {
    fn of(base: &Datatype) -> Result<Format> {
        if base.size == 0 {
            // MPI_LB, MPI_UB: bound markers, with no data to convert.
            return Err(MpiError::new(class::TYPE, format!("{} is a bound marker, not data to pack", base.name)));
        }
        let int = |signed| Format::Int { native: base.size, external: external_int_size(base), signed };
        Ok(match base.kind {
            Kind::I8 | Kind::I16 | Kind::I32 | Kind::I64 => int(true),
            Kind::U8 | Kind::U16 | Kind::U32 | Kind::U64 | Kind::Bool | Kind::Byte => int(false),
            Kind::F32 | Kind::F64 => Format::Swapped { part: base.size },
            Kind::Complex32 | Kind::Complex64 => Format::Swapped { part: base.size / 2 },
            Kind::Pair(PairKind::TwoInt | PairKind::TwoReal | PairKind::TwoDoublePrecision) => {
                Format::Swapped { part: base.size / 2 }
            }
            Kind::Opaque if base.name.starts_with("MPI_2") || base.name.contains("COMPLEX") => {
                Format::Swapped { part: base.size / 2 }
            }
            Kind::Opaque | Kind::LongDouble if base.size == base.extent => Format::Swapped { part: base.size },
            Kind::Opaque | Kind::LongDouble | Kind::Pair(_) => {
                return Err(MpiError::new(
                    class::TYPE,
                    format!("{} mixes two types in one element; external32 packing of it is not supported", base.name),
                ));
            }
        })
    }

    /// Bytes of one element in external32.
    fn external_len(self, native: usize) -> usize {
        match self {
            Format::Int { external, .. } => external,
            Format::Swapped { .. } => native,
        }
    }
}

/// External32's size of an integer type (MPI 3.1 table 13.2).
fn external_int_size(base: &Datatype) -> usize {
    match base.name {
        "MPI_LONG" | "MPI_UNSIGNED_LONG" => 4,
        "MPI_WCHAR" => 2,
        _ => base.size,
    }
}

/// The predefined type every element of `datatype` is made of, how many
/// of it one element holds, and its external format.
fn layout(datatype: &Type) -> Result<(&'static Datatype, usize, Format)> {
    let (base, per) = datatype.base().ok_or_else(|| {
        MpiError::new(
            class::TYPE,
            format!(
                "{}: external32 packing of a datatype mixing several predefined types is not supported",
                datatype.name()
            ),
        )
    })?;
    Ok((base, per, Format::of(base)?))
}

/// Bytes of `count` elements of `datatype` in external32.
fn external_size(datatype: &Type, count: usize) -> Result<usize> {
    let (base, per, format) = layout(datatype)?;
    Ok(count * per * format.external_len(base.size))
}

/// Native packed elements (`base.size` bytes each, in type-map order) to
/// external32.
fn to_external(native: &[u8], base: &Datatype, format: Format, out: &mut Vec<u8>) -> Result<()> {
    for (index, element) in native.chunks_exact(base.size).enumerate() {
        match format {
            Format::Swapped { part } => element.chunks_exact(part).for_each(|p| out.extend(p.iter().rev())),
            Format::Int { external, signed, .. } => {
                let value = widen(element, signed);
                if !fits(value, external, signed) {
                    return Err(MpiError::new(
                        class::CONVERSION,
                        format!(
                            "element {index} of {}, {value}, does not fit in the {external} bytes external32 gives it",
                            base.name
                        ),
                    ));
                }
                let bytes = value.to_be_bytes();
                out.extend_from_slice(&bytes[16 - external..]);
            }
        }
    }
    Ok(())
}

/// External32 elements back to native packed ones.
fn from_external(external: &[u8], base: &Datatype, format: Format, out: &mut Vec<u8>) {
    let len = format.external_len(base.size);
    for element in external.chunks_exact(len) {
        match format {
            Format::Swapped { part } => element.chunks_exact(part).for_each(|p| out.extend(p.iter().rev())),
            Format::Int { native, signed, .. } => {
                let mut wide = [if signed && element[0] & 0x80 != 0 { 0xff } else { 0 }; 16];
                wide[16 - element.len()..].copy_from_slice(element);
                let value = i128::from_be_bytes(wide);
                out.extend_from_slice(&value.to_le_bytes()[..native]);
            }
        }
    }
}

/// Checks that `datatype` can be read and written through an external32
/// file view here: made of one predefined type whose external32 size is
/// its size in memory, so that the view's layout in the file is the
/// memory's and only the bytes of each element change.
pub(crate) fn check_file_layout(datatype: &Type, what: &str) -> Result<()> {
    let unsupported = |why: String| MpiError::new(class::UNSUPPORTED_DATAREP, format!("{what}: {why}"));
    let (base, _, format) = layout(datatype).map_err(|e| unsupported(e.message.clone()))?;
    match format.external_len(base.size) == base.size {
        true => Ok(()),
        false => Err(unsupported(format!(
            "{} takes {} bytes in external32 and {} here; external32 file views of it are not supported",
            base.name,
            format.external_len(base.size),
            base.size
        ))),
    }
}

/// Native packed elements of `datatype` in external32 (as
/// [`check_file_layout`] allows: the same length).
pub(crate) fn to_external32(datatype: &Type, native: &[u8]) -> Result<Vec<u8>> {
    let (base, _, format) = layout(datatype)?;
    let mut out = Vec::with_capacity(native.len());
    to_external(native, base, format, &mut out)?;
    Ok(out)
}

/// External32 elements of `datatype` back to native packed ones, in place
/// (as [`check_file_layout`] allows: the same length); a partial element
/// at the end is left as it is.
pub(crate) fn from_external32(datatype: &Type, bytes: &mut [u8]) -> Result<()> {
    let (base, _, format) = layout(datatype)?;
    let whole = bytes.len() - bytes.len() % base.size.max(1);
    let mut native = Vec::with_capacity(whole);
    from_external(&bytes[..whole], base, format, &mut native);
    bytes[..whole].copy_from_slice(&native);
    Ok(())
}

/// A native little-endian integer, widened.
fn widen(element: &[u8], signed: bool) -> i128 {
    let negative = signed && element.last().is_some_and(|b| b & 0x80 != 0);
    let mut wide = [if negative { 0xff } else { 0 }; 16];
    wide[..element.len()].copy_from_slice(element);
    i128::from_le_bytes(wide)
}

/// Whether `value` fits in `bytes` bytes.
fn fits(value: i128, bytes: usize, signed: bool) -> bool {
    let bits = 8 * bytes as u32;
    match signed {
        true => value >= -(1i128 << (bits - 1)) && value < (1i128 << (bits - 1)),
        false => value >= 0 && value < (1i128 << bits),
    }
}

/// The representation named must be external32.
///
/// # Safety
/// `datarep` is NULL or a NUL-terminated string.
unsafe fn external32(datarep: *const c_char) -> Result<()> {
    // SAFETY: as the caller promised.
    let name = unsafe { read_string(datarep, "datarep")? };
    match name.as_str() {
        "external32" => Ok(()),
        other => {
            Err(MpiError::new(class::UNSUPPORTED_DATAREP, format!("data representation {other:?} is not external32")))
        }
    }
}

counted_fn! {
    /// `MPI_Pack_external_size`.
    fn MPI_Pack_external_size / PMPI_Pack_external_size, MPI_Pack_external_size_c / PMPI_Pack_external_size_c(datarep: *const c_char, incount: Int, datatype: c_int, size: *mut c_long) {
        // SAFETY: the caller's string.
        unsafe { external32(datarep)? };
        let n = external_size(&types::lookup(datatype)?, count_of(incount, NAME)?)?;
        // SAFETY: the caller's output argument.
        unsafe { put(size, n as c_long, "size") }
    }
}

counted_fn! {
    /// `MPI_Pack_external`: appends the elements at `*position` of `outbuf`.
    fn MPI_Pack_external / PMPI_Pack_external, MPI_Pack_external_c / PMPI_Pack_external_c(
        datarep: *const c_char,
        inbuf: *const c_void,
        incount: Int,
        datatype: c_int,
        outbuf: *mut c_void,
        outsize: c_long,
        position: *mut c_long,
    ) {
        // SAFETY: the caller's string.
        unsafe { external32(datarep)? };
        let found = types::committed(datatype)?;
        let (base, _, format) = layout(&found)?;
        let n = count_of(incount, NAME)?;
        // SAFETY: the caller's in-out argument.
        let at = unsafe { get(position, "position")? };
        let mut native = Vec::new();
        // SAFETY: `inbuf` holds `incount` elements, as MPI requires.
        unsafe { found.pack(inbuf.cast(), n, &mut native) };
        let mut packed = Vec::with_capacity(native.len());
        to_external(&native, base, format, &mut packed)?;
        let end = at + packed.len() as c_long;
        if at < 0 || end > outsize.max(0) {
            let message = format!("{NAME}: {} bytes at position {at} do not fit in {outsize}", packed.len());
            return Err(MpiError::new(class::TRUNCATE, message));
        }
        // SAFETY: `outbuf` holds `outsize` bytes, and the data fits, as checked.
        unsafe {
            std::ptr::copy_nonoverlapping(packed.as_ptr(), outbuf.cast::<u8>().add(at as usize), packed.len());
            put(position, end, "position")
        }
    }
}

counted_fn! {
    /// `MPI_Unpack_external`: takes the elements from `*position` of `inbuf`.
    fn MPI_Unpack_external / PMPI_Unpack_external, MPI_Unpack_external_c / PMPI_Unpack_external_c(
        datarep: *const c_char,
        inbuf: *const c_void,
        insize: c_long,
        position: *mut c_long,
        outbuf: *mut c_void,
        outcount: Int,
        datatype: c_int,
    ) {
        // SAFETY: the caller's string.
        unsafe { external32(datarep)? };
        let found = types::committed(datatype)?;
        let (base, _, format) = layout(&found)?;
        let len = external_size(&found, count_of(outcount, NAME)?)?;
        // SAFETY: the caller's in-out argument.
        let at = unsafe { get(position, "position")? };
        let end = at + len as c_long;
        if at < 0 || end > insize.max(0) {
            let message = format!("{NAME}: {len} bytes at position {at} are beyond the {insize} bytes of the buffer");
            return Err(MpiError::new(class::TRUNCATE, message));
        }
        let mut native = Vec::with_capacity(len);
        // SAFETY: `inbuf` holds `insize` bytes, and the range is checked.
        from_external(unsafe { std::slice::from_raw_parts(inbuf.cast::<u8>().add(at as usize), len) }, base, format, &mut native);
        // SAFETY: `outbuf` holds `outcount` elements, as MPI requires.
        unsafe {
            found.unpack(&native, outbuf.cast());
            put(position, end, "position")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::{PREDEFINED, lookup};

    fn round_trip(name: &str, native: &[u8]) -> (Vec<u8>, Vec<u8>) {
        let base = PREDEFINED.iter().find(|d| d.name == name).expect(name);
        let format = Format::of(base).unwrap();
        let mut external = Vec::new();
        to_external(native, base, format, &mut external).unwrap();
        let mut back = Vec::new();
        from_external(&external, base, format, &mut back);
        (external, back)
    }

    #[test]
    fn integers_are_big_endian_at_the_standard_sizes() {
        let (external, back) = round_trip("MPI_INT", &0x0102_0304i32.to_le_bytes());
        assert_eq!(external, [1, 2, 3, 4]);
        assert_eq!(back, 0x0102_0304i32.to_le_bytes());
        let (external, back) = round_trip("MPI_LONG", &(-2i64).to_le_bytes());
        assert_eq!(external, [0xff, 0xff, 0xff, 0xfe], "a long takes 4 bytes");
        assert_eq!(back, (-2i64).to_le_bytes(), "sign-extended back");
        let (external, back) = round_trip("MPI_UNSIGNED_LONG", &0xffff_fffeu64.to_le_bytes());
        assert_eq!(external, [0xff, 0xff, 0xff, 0xfe]);
        assert_eq!(back, 0xffff_fffeu64.to_le_bytes(), "zero-extended back");
        let (external, _) = round_trip("MPI_LONG_LONG_INT", &1i64.to_le_bytes());
        assert_eq!(external, [0, 0, 0, 0, 0, 0, 0, 1]);
    }

    #[test]
    fn a_long_past_32_bits_is_a_conversion_error_not_cut() {
        let base = lookup(0x4c000807).unwrap();
        let error = to_external(&(1i64 << 40).to_le_bytes(), base, Format::of(base).unwrap(), &mut Vec::new())
            .expect_err("does not fit");
        assert_eq!(error.class, class::CONVERSION);
        assert!(error.message.contains("element 0 of MPI_LONG"), "{}", error.message);
    }

    #[test]
    fn floats_and_complexes_only_change_byte_order() {
        let (external, back) = round_trip("MPI_DOUBLE", &1.5f64.to_le_bytes());
        assert_eq!(external, 1.5f64.to_be_bytes());
        assert_eq!(back, 1.5f64.to_le_bytes());
        let mut z = 1.0f32.to_le_bytes().to_vec();
        z.extend(2.0f32.to_le_bytes());
        let (external, back) = round_trip("MPI_C_FLOAT_COMPLEX", &z);
        assert_eq!(&external[..4], 1.0f32.to_be_bytes(), "real part first");
        assert_eq!(&external[4..], 2.0f32.to_be_bytes());
        assert_eq!(back, z);
    }

    #[test]
    fn every_predefined_type_round_trips_or_is_refused_by_name() {
        for d in PREDEFINED {
            let Ok(format) = Format::of(d) else {
                assert!(matches!(d.kind, Kind::Pair(_) | Kind::Opaque) || d.size == 0, "{} refused", d.name);
                continue;
            };
            let native: Vec<u8> = (0..2 * d.size).map(|i| (i % 100) as u8).collect();
            let mut external = Vec::new();
            if to_external(&native, d, format, &mut external).is_err() {
                continue; // a value past a narrower external size
            }
            assert_eq!(external.len(), 2 * format.external_len(d.size), "{}", d.name);
            let mut back = Vec::new();
            from_external(&external, d, format, &mut back);
            assert_eq!(back, native, "{}", d.name);
        }
    }
}
