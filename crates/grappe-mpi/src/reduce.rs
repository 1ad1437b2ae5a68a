//! MPI's predefined reduction operations on the predefined datatypes,
//! as operations of grappe's typed collectives.
//!
//! Integers wrap on overflow (as C's unsigned arithmetic, and as MPICH
//! does for signed types) rather than fail.

use std::borrow::Cow;
use std::ffi::c_int;

use bytemuck::{Pod, Zeroable};
use grappe_comm::Operation;

use crate::abi::class;
use crate::datatype::{Datatype, Kind, PairKind};
use crate::errors::{MpiError, Result};
use crate::types::Type;

/// A predefined operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpCode {
    Max,
    Min,
    Sum,
    Prod,
    Land,
    Band,
    Lor,
    Bor,
    Lxor,
    Bxor,
    MinLoc,
    MaxLoc,
    Replace,
    NoOp,
}

const OPS: [(OpCode, &str); 14] = [
    (OpCode::Max, "MPI_MAX"),
    (OpCode::Min, "MPI_MIN"),
    (OpCode::Sum, "MPI_SUM"),
    (OpCode::Prod, "MPI_PROD"),
    (OpCode::Land, "MPI_LAND"),
    (OpCode::Band, "MPI_BAND"),
    (OpCode::Lor, "MPI_LOR"),
    (OpCode::Bor, "MPI_BOR"),
    (OpCode::Lxor, "MPI_LXOR"),
    (OpCode::Bxor, "MPI_BXOR"),
    (OpCode::MinLoc, "MPI_MINLOC"),
    (OpCode::MaxLoc, "MPI_MAXLOC"),
    (OpCode::Replace, "MPI_REPLACE"),
    (OpCode::NoOp, "MPI_NO_OP"),
];

impl OpCode {
    /// The operation of `handle` (`0x58000001` is `MPI_MAX`, and so on).
    pub fn lookup(handle: c_int) -> Result<OpCode> {
        let index = (handle as u32).wrapping_sub(0x5800_0001) as usize;
        match OPS.get(index) {
            Some(&(op, _)) => Ok(op),
            None if handle == crate::abi::OP_NULL => Err(MpiError::new(class::OP, "MPI_OP_NULL is not an operation")),
            None => Err(MpiError::new(
                class::OP,
                format!("operation handle {handle:#x} is neither a predefined operation nor one of MPI_Op_create"),
            )),
        }
    }

    pub fn name(self) -> &'static str {
        OPS.iter().find(|(op, _)| *op == self).map_or("?", |(_, name)| name)
    }

    /// Whether MPI defines this operation on this datatype.
    pub fn check(self, datatype: &Datatype) -> Result<()> {
        use Kind::*;
        use OpCode::*;
        let integer = matches!(datatype.kind, I8 | U8 | I16 | U16 | I32 | U32 | I64 | U64);
        let float = matches!(datatype.kind, F32 | F64) || (datatype.kind == LongDouble && LONG_DOUBLE_IS_X87);
        let complex = matches!(datatype.kind, Complex32 | Complex64);
        let allowed = match self {
            Max | Min => integer || float,
            Sum | Prod => integer || float || complex,
            Land | Lor | Lxor => integer || datatype.kind == Bool,
            Band | Bor | Bxor => integer || datatype.kind == Byte,
            MinLoc | MaxLoc => match datatype.kind {
                Pair(PairKind::LongDoubleInt) => LONG_DOUBLE_IS_X87,
                kind => matches!(kind, Pair(_)),
            },
            Replace | NoOp => true,
        };
        match allowed {
            true => Ok(()),
            false => {
                Err(MpiError::new(class::OP, format!("{} is not defined on datatype {}", self.name(), datatype.name)))
            }
        }
    }
}

/// An element type that predefined operations combine.
pub trait Element: Pod + Send + Sync {
    fn combine(op: OpCode, acc: &mut [Self], later: &[Self]);
}

/// An operation for grappe's typed collectives.
#[derive(Debug, Clone, Copy)]
pub struct Predefined(pub OpCode);

impl<T: Element> Operation<T> for Predefined {
    fn combine(&self, acc: &mut [T], later: &[T]) {
        T::combine(self.0, acc, later)
    }
}

fn each<T: Copy>(acc: &mut [T], later: &[T], f: impl Fn(T, T) -> T) {
    for (a, &b) in acc.iter_mut().zip(later) {
        *a = f(*a, b);
    }
}

macro_rules! integer {
    ($($t:ty),*) => {$(
        impl Element for $t {
            fn combine(op: OpCode, acc: &mut [$t], later: &[$t]) {
                match op {
                    OpCode::Max => each(acc, later, |a, b| a.max(b)),
                    OpCode::Min => each(acc, later, |a, b| a.min(b)),
                    OpCode::Sum => each(acc, later, |a, b| a.wrapping_add(b)),
                    OpCode::Prod => each(acc, later, |a, b| a.wrapping_mul(b)),
                    OpCode::Land => each(acc, later, |a, b| (a != 0 && b != 0) as $t),
                    OpCode::Lor => each(acc, later, |a, b| (a != 0 || b != 0) as $t),
                    OpCode::Lxor => each(acc, later, |a, b| ((a != 0) != (b != 0)) as $t),
                    OpCode::Band => each(acc, later, |a, b| a & b),
                    OpCode::Bor => each(acc, later, |a, b| a | b),
                    OpCode::Bxor => each(acc, later, |a, b| a ^ b),
                    OpCode::Replace => each(acc, later, |_, b| b),
                    OpCode::MinLoc | OpCode::MaxLoc | OpCode::NoOp => {}
                }
            }
        }
    )*};
}

integer!(i8, u8, i16, u16, i32, u32, i64, u64);

macro_rules! float {
    ($($t:ty),*) => {$(
        impl Element for $t {
            fn combine(op: OpCode, acc: &mut [$t], later: &[$t]) {
                match op {
                    // As C's `a > b ? a : b`: a NaN operand does not win.
                    OpCode::Max => each(acc, later, |a, b| if b > a { b } else { a }),
                    OpCode::Min => each(acc, later, |a, b| if b < a { b } else { a }),
                    OpCode::Sum => each(acc, later, |a, b| a + b),
                    OpCode::Prod => each(acc, later, |a, b| a * b),
                    OpCode::Replace => each(acc, later, |_, b| b),
                    _ => {}
                }
            }
        }
    )*};
}

float!(f32, f64);

macro_rules! complex {
    ($name:ident, $t:ty) => {
        #[repr(C)]
        #[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
        pub struct $name {
            re: $t,
            im: $t,
        }

        impl Element for $name {
            fn combine(op: OpCode, acc: &mut [$name], later: &[$name]) {
                match op {
                    OpCode::Sum => each(acc, later, |a, b| $name { re: a.re + b.re, im: a.im + b.im }),
                    OpCode::Prod => {
                        each(acc, later, |a, b| $name { re: a.re * b.re - a.im * b.im, im: a.re * b.im + a.im * b.re })
                    }
                    OpCode::Replace => each(acc, later, |_, b| b),
                    _ => {}
                }
            }
        }
    };
}

complex!(Complex32, f32);
complex!(Complex64, f64);

macro_rules! pair {
    ($name:ident, $v:ty, { $($field:ident : $ft:ty),* }) => {
        #[repr(C)]
        #[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
        pub struct $name {
            $($field: $ft),*
        }

        impl Element for $name {
            fn combine(op: OpCode, acc: &mut [$name], later: &[$name]) {
                // The smaller (MINLOC) or larger (MAXLOC) value; on a tie,
                // the smaller index.
                let better = |a: $name, b: $name, wins: fn($v, $v) -> bool| {
                    if wins(b.value, a.value) || (b.value == a.value && b.index < a.index) { b } else { a }
                };
                match op {
                    OpCode::MinLoc => each(acc, later, |a, b| better(a, b, |x, y| x < y)),
                    OpCode::MaxLoc => each(acc, later, |a, b| better(a, b, |x, y| x > y)),
                    OpCode::Replace => each(acc, later, |_, b| b),
                    _ => {}
                }
            }
        }
    };
}

pair!(FloatInt, f32, { value: f32, index: i32 });
pair!(DoubleInt, f64, { value: f64, index: i32, pad: i32 });
pair!(LongInt, i64, { value: i64, index: i32, pad: i32 });
pair!(ShortInt, i16, { value: i16, pad: i16, index: i32 });
pair!(TwoInt, i32, { value: i32, index: i32 });
pair!(LongDoubleInt, LongDouble, { value: LongDouble, index: i32, pad: [u8; 12] });
pair!(TwoReal, f32, { value: f32, index: f32 });
pair!(TwoDoublePrecision, f64, { value: f64, index: f64 });

/// A user's C function (`MPI_User_function`): `inoutvec[i] = invec[i] ∘
/// inoutvec[i]` for `*len` elements of `*datatype`.
pub type UserFunction = unsafe extern "C" fn(*mut std::ffi::c_void, *mut std::ffi::c_void, *mut c_int, *mut c_int);

/// `MPI_User_function_c` (`MPI_Op_create_c`): the count is an `MPI_Count`.
pub type LargeUserFunction = unsafe extern "C" fn(*mut std::ffi::c_void, *mut std::ffi::c_void, *mut i64, *mut c_int);

/// The program's function of an operation, of either form.
#[derive(Debug, Clone, Copy)]
pub enum UserFn {
    Int(UserFunction),
    Large(LargeUserFunction),
}

/// An operation of `MPI_Op_create` or `MPI_Op_create_c`, as the program gave it.
#[derive(Debug, Clone, Copy)]
pub struct UserOp {
    pub function: UserFn,
    pub commute: bool,
}

impl UserOp {
    /// `inout[i] = input[i] ∘ inout[i]` for `count` elements of the
    /// program's `datatype`: MPI's function takes the earlier ranks'
    /// operand first and leaves the result in its second. An `int`
    /// function gets more than `INT_MAX` elements in several calls.
    ///
    /// # Safety
    /// Both point to `count` elements of `datatype`, laid out as in a
    /// program's buffer (the function reads them where the datatype says).
    pub unsafe fn apply(&self, input: *mut u8, inout: *mut u8, count: usize, datatype: c_int) {
        let mut handle = datatype;
        match self.function {
            UserFn::Large(function) => {
                let mut len = count as i64;
                // SAFETY: a C function of MPI_User_function_c's type, as
                // the program gave it, on buffers as the caller promised.
                unsafe { function(input.cast(), inout.cast(), &mut len, &mut handle) }
            }
            UserFn::Int(function) => {
                let extent = crate::types::lookup(datatype).map_or(0, |t| t.extent());
                let mut done = 0;
                while done < count {
                    let n = (count - done).min(c_int::MAX as usize);
                    let offset = done as isize * extent;
                    let mut len = n as c_int;
                    // SAFETY: a C function of MPI_User_function's type, as
                    // the program gave it, on the elements from `done` on,
                    // within the buffers the caller promised.
                    unsafe {
                        function(input.offset(offset).cast(), inout.offset(offset).cast(), &mut len, &mut handle)
                    };
                    done += n;
                }
            }
        }
    }
}

/// Elements of a datatype laid out as in a program's buffer (gaps, a
/// lower bound that is not 0, a struct's padding), made from their packed
/// form and packed again: what a program's reduction function, or an
/// operation on padded pairs, works on. 8-byte aligned, as `malloc`'s
/// buffers would be for the function's own C types.
pub struct LaidOut {
    storage: Vec<u64>,
    /// Where the first element's origin is, in bytes from the storage's start.
    origin: isize,
    count: usize,
}

impl LaidOut {
    /// The `packed` elements of `datatype`, laid out.
    pub fn unpack(datatype: &Type, packed: &[u8]) -> LaidOut {
        let count = packed.len().checked_div(datatype.size()).unwrap_or(0);
        // The bytes the elements span: element i's data is at i × extent
        // + true_lb, for true_extent bytes.
        let last = (count.max(1) - 1) as isize * datatype.extent();
        let lo = datatype.true_lb() + last.min(0);
        // Up to the last element's data, and at least to its extent's end:
        // an operation on padded pairs works on whole elements, padding
        // included (`MPI_LONG_DOUBLE_INT`: 20 bytes of data in 32).
        let data_end = datatype.true_lb() + datatype.true_extent() + last.max(0);
        let hi = data_end.max(last.max(0) + datatype.extent());
        let span = (hi - lo).max(0) as usize;
        let mut laid_out = LaidOut { storage: vec![0; span.div_ceil(8)], origin: -lo, count };
        // SAFETY: the storage spans every block of `count` elements from
        // the origin.
        unsafe { datatype.unpack(packed, laid_out.base()) };
        laid_out
    }

    /// The bytes from the first element's origin to the storage's end.
    pub fn span_from_base(&self) -> usize {
        (self.storage.len() * 8).saturating_sub(self.origin.max(0) as usize)
    }

    /// The first element's origin, as a program's buffer argument.
    pub fn base(&mut self) -> *mut u8 {
        self.storage.as_mut_ptr().cast::<u8>().wrapping_offset(self.origin)
    }

    /// The elements packed again, over `out` (of their packed length).
    pub fn pack_into(&mut self, datatype: &Type, out: &mut [u8]) {
        let mut packed = Vec::with_capacity(out.len());
        // SAFETY: the storage holds `count` elements from the origin.
        unsafe { datatype.pack(self.base(), self.count, &mut packed) };
        out.copy_from_slice(&packed);
    }
}

/// `inout = input ∘ inout` on packed elements of `datatype`, by `apply`
/// on them laid out (its arguments: input, in-out, element count).
pub fn combine_laid_out(datatype: &Type, input: &[u8], inout: &mut [u8], apply: impl FnOnce(*mut u8, *mut u8, usize)) {
    let mut earlier = LaidOut::unpack(datatype, input);
    let mut later = LaidOut::unpack(datatype, inout);
    apply(earlier.base(), later.base(), later.count);
    later.pack_into(datatype, inout);
}

/// Whether C's `long double` is the x87 80-bit format (in 16 bytes), the
/// one grappe combines.
const LONG_DOUBLE_IS_X87: bool = cfg!(target_arch = "x86_64");

/// A C `long double`: on x86-64 an x87 extended-precision number in the
/// low 10 of its 16 bytes. Rust has no such type, so the arithmetic runs
/// on the x87 unit itself, as a C compiler's would.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
pub struct LongDouble([u8; 16]);

/// Compared as numbers (C's `==`, `<`: NaNs unordered, -0 equal to +0),
/// not as bytes: the 6 bytes past the 10 are padding, whatever the
/// program's buffer held.
impl PartialEq for LongDouble {
    fn eq(&self, other: &LongDouble) -> bool {
        self.partial_cmp(other) == Some(std::cmp::Ordering::Equal)
    }
}

impl PartialOrd for LongDouble {
    fn partial_cmp(&self, other: &LongDouble) -> Option<std::cmp::Ordering> {
        #[cfg(target_arch = "x86_64")]
        return x87::compare(self, other);
        // Never combined elsewhere (`OpCode::check`): as bytes.
        #[cfg(not(target_arch = "x86_64"))]
        return (self.0 == other.0).then_some(std::cmp::Ordering::Equal);
    }
}

impl Element for LongDouble {
    fn combine(op: OpCode, acc: &mut [LongDouble], later: &[LongDouble]) {
        match op {
            OpCode::Replace => each(acc, later, |_, b| b),
            #[cfg(target_arch = "x86_64")]
            OpCode::Sum | OpCode::Prod | OpCode::Max | OpCode::Min => each(acc, later, |a, b| x87::combine(op, a, b)),
            // Refused by `OpCode::check` (or, as MPI_NO_OP, nothing to do).
            _ => {}
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x87 {
    use super::{LongDouble, OpCode};
    use std::arch::asm;
    use std::cmp::Ordering;

    /// `a op b` for MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, rounded as C's
    /// `long double` arithmetic (x87 default: 64-bit significand).
    pub(super) fn combine(op: OpCode, a: LongDouble, b: LongDouble) -> LongDouble {
        match op {
            // As C's `a > b ? a : b`: a NaN operand does not win.
            OpCode::Max => {
                if b > a {
                    b
                } else {
                    a
                }
            }
            OpCode::Min => {
                if b < a {
                    b
                } else {
                    a
                }
            }
            OpCode::Prod => arithmetic(&a, &b, false),
            _ => arithmetic(&a, &b, true),
        }
    }

    /// `a + b` (`add`) or `a × b`.
    fn arithmetic(a: &LongDouble, b: &LongDouble, add: bool) -> LongDouble {
        let mut out = LongDouble([0; 16]);
        // SAFETY: each pointer is to 16 bytes (the 10 an x87 `tbyte`
        // load or store touches come first), alive for the block; the
        // block pushes two values on the x87 stack and pops both, leaving
        // it empty as the ABI requires, and declares every x87 register
        // clobbered.
        unsafe {
            if add {
                asm!(
                    "fld tbyte ptr [{a}]", "fld tbyte ptr [{b}]", "faddp st(1), st", "fstp tbyte ptr [{out}]",
                    a = in(reg) a.0.as_ptr(), b = in(reg) b.0.as_ptr(), out = in(reg) out.0.as_mut_ptr(),
                    out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
                    out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
                    options(nostack),
                );
            } else {
                asm!(
                    "fld tbyte ptr [{a}]", "fld tbyte ptr [{b}]", "fmulp st(1), st", "fstp tbyte ptr [{out}]",
                    a = in(reg) a.0.as_ptr(), b = in(reg) b.0.as_ptr(), out = in(reg) out.0.as_mut_ptr(),
                    out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
                    out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
                    options(nostack),
                );
            }
        }
        out
    }

    /// How `a` compares with `b`; `None` if either is a NaN.
    pub(super) fn compare(a: &LongDouble, b: &LongDouble) -> Option<Ordering> {
        let (above, below, unordered): (u8, u8, u8);
        // SAFETY: as in `arithmetic`: two loads, `fucomip` pops one and
        // `fstp st(0)` the other; the `set` instructions read the flags
        // `fucomip` set (a above b: CF and ZF clear; below: CF set;
        // unordered: PF set, with CF and ZF).
        unsafe {
            asm!(
                "fld tbyte ptr [{b}]", "fld tbyte ptr [{a}]", "fucomip st, st(1)", "fstp st(0)",
                "seta {above}", "setb {below}", "setp {unordered}",
                a = in(reg) a.0.as_ptr(), b = in(reg) b.0.as_ptr(),
                above = out(reg_byte) above, below = out(reg_byte) below, unordered = out(reg_byte) unordered,
                out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
                out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
                options(nostack),
            );
        }
        match (unordered, above, below) {
            (1, _, _) => None,
            (_, 1, _) => Some(Ordering::Greater),
            (_, _, 1) => Some(Ordering::Less),
            _ => Some(Ordering::Equal),
        }
    }
}

/// Opaque elements (16-byte reals, wider complexes...): only `MPI_REPLACE` and `MPI_NO_OP`
/// reach them.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct Opaque(u8);

impl Element for Opaque {
    fn combine(op: OpCode, acc: &mut [Opaque], later: &[Opaque]) {
        if op == OpCode::Replace {
            acc.copy_from_slice(&later[..acc.len()]);
        }
    }
}

/// Something done with typed slices of one element type, whichever the
/// datatype's kind says it is.
pub trait Typed {
    type Output;
    fn run<T: Element>(self) -> Self::Output;
}

/// Runs `task` with the Rust type of `datatype`'s elements.
pub fn with_type<R>(datatype: &Datatype, task: impl Typed<Output = R>) -> R {
    match datatype.kind {
        Kind::I8 => task.run::<i8>(),
        Kind::U8 | Kind::Bool | Kind::Byte => task.run::<u8>(),
        Kind::I16 => task.run::<i16>(),
        Kind::U16 => task.run::<u16>(),
        Kind::I32 => task.run::<i32>(),
        Kind::U32 => task.run::<u32>(),
        Kind::I64 => task.run::<i64>(),
        Kind::U64 => task.run::<u64>(),
        Kind::F32 => task.run::<f32>(),
        Kind::F64 => task.run::<f64>(),
        Kind::LongDouble => task.run::<LongDouble>(),
        Kind::Complex32 => task.run::<Complex32>(),
        Kind::Complex64 => task.run::<Complex64>(),
        Kind::Pair(PairKind::FloatInt) => task.run::<FloatInt>(),
        Kind::Pair(PairKind::DoubleInt) => task.run::<DoubleInt>(),
        Kind::Pair(PairKind::LongInt) => task.run::<LongInt>(),
        Kind::Pair(PairKind::ShortInt) => task.run::<ShortInt>(),
        Kind::Pair(PairKind::TwoInt) => task.run::<TwoInt>(),
        Kind::Pair(PairKind::LongDoubleInt) => task.run::<LongDoubleInt>(),
        Kind::Pair(PairKind::TwoReal) => task.run::<TwoReal>(),
        Kind::Pair(PairKind::TwoDoublePrecision) => task.run::<TwoDoublePrecision>(),
        Kind::Opaque => task.run::<Opaque>(),
    }
}

/// `bytes` as elements of `T`: borrowed if aligned for `T`, copied if not
/// (a C buffer inside a packed structure).
pub fn typed<T: Pod>(bytes: &[u8]) -> Cow<'_, [T]> {
    match bytemuck::try_cast_slice(bytes) {
        Ok(elems) => Cow::Borrowed(elems),
        Err(_) => Cow::Owned(bytemuck::pod_collect_to_vec(bytes)),
    }
}

/// Runs `f` on `bytes` as elements of `T`, through an aligned copy if
/// they are not aligned for `T`.
pub fn with_typed_mut<T: Pod, R>(bytes: &mut [u8], f: impl FnOnce(&mut [T]) -> R) -> R {
    if let Ok(elems) = bytemuck::try_cast_slice_mut(bytes) {
        return f(elems);
    }
    let mut copy: Vec<T> = bytemuck::pod_collect_to_vec(bytes);
    let result = f(&mut copy);
    bytes.copy_from_slice(bytemuck::cast_slice(&copy));
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::lookup;

    #[test]
    fn operations_follow_their_mpi_definition() {
        let mut acc = [5i32, -3, 0, i32::MAX];
        i32::combine(OpCode::Sum, &mut acc, &[1, 1, 1, 1]);
        assert_eq!(acc, [6, -2, 1, i32::MIN], "sums wrap");
        let mut acc = [0u8, 1, 2];
        u8::combine(OpCode::Lxor, &mut acc, &[1, 1, 0]);
        assert_eq!(acc, [1, 0, 1]);
        let mut acc = [DoubleInt { value: 1.0, index: 4, pad: 0 }, DoubleInt { value: 2.0, index: 1, pad: 0 }];
        DoubleInt::combine(
            OpCode::MinLoc,
            &mut acc,
            &[DoubleInt { value: 1.0, index: 2, pad: 0 }, DoubleInt { value: 3.0, index: 0, pad: 0 }],
        );
        assert_eq!((acc[0].index, acc[1].index), (2, 1), "ties go to the smaller index");
        let mut acc = [Complex64 { re: 1.0, im: 2.0 }];
        Complex64::combine(OpCode::Prod, &mut acc, &[Complex64 { re: 3.0, im: -1.0 }]);
        assert_eq!(acc[0], Complex64 { re: 5.0, im: 5.0 });
    }

    /// An x87 extended-precision number: 2^(exponent) × significand/2^63.
    #[cfg(target_arch = "x86_64")]
    fn x87(significand: u64, exponent: i16) -> LongDouble {
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&significand.to_le_bytes());
        bytes[8..10].copy_from_slice(&((0x3fff + exponent) as u16).to_le_bytes());
        LongDouble(bytes)
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn long_doubles_combine_in_extended_precision() {
        let one = x87(1 << 63, 0);
        // 1 + 2^-63: the last bit of the 64-bit significand, lost in a double.
        let tiny = x87(1 << 63, -63);
        let mut acc = [one, one, one, tiny];
        LongDouble::combine(OpCode::Sum, &mut acc, &[tiny, one, x87(3 << 62, 1), one]);
        assert_eq!(acc[0], x87((1 << 63) | 1, 0), "1 + 2^-63");
        assert_eq!(acc[1], x87(1 << 63, 1), "1 + 1 = 2");
        assert_eq!(acc[2], x87(1 << 63, 2), "1 + 3 = 4");
        assert_eq!(acc[3], x87((1 << 63) | 1, 0), "addition commutes");
        let mut acc = [x87(3 << 62, 1), x87(3 << 62, 1)];
        LongDouble::combine(OpCode::Prod, &mut acc, &[x87(3 << 62, 1), one]);
        assert_eq!(acc, [x87(9 << 60, 3), x87(3 << 62, 1)], "3 × 3 = 9, 3 × 1 = 3");
        let (big, small) = (x87((1 << 63) | 1, 0), one);
        let mut acc = [small, big];
        LongDouble::combine(OpCode::Max, &mut acc, &[big, small]);
        assert_eq!(acc, [big, big]);
        LongDouble::combine(OpCode::Min, &mut acc, &[small, big]);
        assert_eq!(acc, [small, big]);
        let nan = x87(3 << 62, 0x4000);
        let mut acc = [one];
        LongDouble::combine(OpCode::Max, &mut acc, &[nan]);
        assert_eq!(acc, [one], "a NaN does not win, as C's a > b ? a : b");
    }

    #[test]
    fn pairs_have_the_layout_of_their_c_structures() {
        for (handle, size) in
            [(0x8c000000u32, 8usize), (0x8c000001, 16), (0x8c000002, 16), (0x8c000003, 8), (0x8c000004, 32)]
                .into_iter()
                .chain([(0x4c000820, 8), (0x4c000821, 8), (0x4c001023, 16)])
        {
            let datatype = lookup(handle as c_int).unwrap();
            struct Size;
            impl Typed for Size {
                type Output = usize;
                fn run<T: Element>(self) -> usize {
                    std::mem::size_of::<T>()
                }
            }
            assert_eq!((with_type(datatype, Size), datatype.extent), (size, size), "{}", datatype.name);
        }
    }

    #[test]
    fn operations_outside_their_types_are_refused() {
        let double = lookup(0x4c00080b).unwrap();
        assert_eq!(OpCode::Bxor.check(double).unwrap_err().class, class::OP);
        assert!(OpCode::Sum.check(double).is_ok());
        assert_eq!(OpCode::lookup(0x58000003).unwrap(), OpCode::Sum);
        assert_eq!(OpCode::lookup(crate::abi::OP_NULL).unwrap_err().class, class::OP);
    }

    /// Padded pairs are combined as whole elements, padding included: the
    /// laid-out copy spans every element's extent (`MPI_LONG_DOUBLE_INT`,
    /// 20 bytes of data in 32, once got 24 bytes for one pair, and the
    /// combination wrote past them), and its data survives packing again.
    #[test]
    fn padded_pairs_are_laid_out_over_whole_extents() {
        for (handle, name) in [
            (0x8c000004u32 as i32, "MPI_LONG_DOUBLE_INT"),
            (0x8c000001u32 as i32, "MPI_DOUBLE_INT"),
            (0x8c000003u32 as i32, "MPI_SHORT_INT"),
        ] {
            let datatype = crate::types::Type::Predefined(lookup(handle).unwrap());
            for count in [1usize, 2, 7] {
                let packed: Vec<u8> = (0..count * datatype.size()).map(|i| i as u8).collect();
                let mut laid_out = LaidOut::unpack(&datatype, &packed);
                assert!(
                    laid_out.span_from_base() >= count * datatype.extent() as usize,
                    "{name} x {count}: {} bytes laid out for {} of extent",
                    laid_out.span_from_base(),
                    count * datatype.extent() as usize
                );
                let mut again = vec![0u8; packed.len()];
                laid_out.pack_into(&datatype, &mut again);
                assert_eq!(again, packed, "{name} x {count}");
            }
        }
    }

    #[test]
    fn misaligned_bytes_are_copied_to_aligned_elements() {
        let bytes: Vec<u8> = (0..17).collect();
        let elems = typed::<u32>(&bytes[1..]);
        assert_eq!(elems[0], u32::from_ne_bytes([1, 2, 3, 4]));
        let mut buf = bytes.clone();
        with_typed_mut::<u32, _>(&mut buf[1..], |e| e[0] = 0);
        assert_eq!(&buf[..6], &[0, 0, 0, 0, 0, 5]);
    }
}
