//! MPICH's binary interface: the values a program compiled against
//! MPICH's `mpi.h` (or grappe's, which has the same) passes to the library.
//! Handles are `int`s: bits 31-30 say the kind (1 built in, 2 direct, 0
//! a null handle), bits 29-26 the object type; built-in datatypes hold
//! their size in bytes in bits 15-8.

use std::ffi::c_int;

/// `MPI_SUCCESS`.
pub const SUCCESS: c_int = 0;

/// MPI's error classes, with MPICH's numbers.
pub mod class {
    use std::ffi::c_int;
    pub const BUFFER: c_int = 1;
    pub const COUNT: c_int = 2;
    pub const TYPE: c_int = 3;
    pub const TAG: c_int = 4;
    pub const COMM: c_int = 5;
    pub const RANK: c_int = 6;
    pub const ROOT: c_int = 7;
    pub const GROUP: c_int = 8;
    pub const OP: c_int = 9;
    pub const ARG: c_int = 12;
    pub const UNKNOWN: c_int = 13;
    pub const TRUNCATE: c_int = 14;
    pub const OTHER: c_int = 15;
    pub const INTERN: c_int = 16;
    pub const IN_STATUS: c_int = 17;
    pub const PENDING: c_int = 18;
    pub const REQUEST: c_int = 19;
    pub const ACCESS: c_int = 20;
    pub const AMODE: c_int = 21;
    pub const BAD_FILE: c_int = 22;
    pub const CONVERSION: c_int = 23;
    pub const DUP_DATAREP: c_int = 24;
    pub const FILE_EXISTS: c_int = 25;
    pub const FILE: c_int = 27;
    pub const INFO: c_int = 28;
    pub const INFO_KEY: c_int = 29;
    pub const INFO_NOKEY: c_int = 31;
    pub const IO: c_int = 32;
    pub const NO_MEM: c_int = 34;
    pub const NOT_SAME: c_int = 35;
    pub const NO_SPACE: c_int = 36;
    pub const NO_SUCH_FILE: c_int = 37;
    pub const QUOTA: c_int = 39;
    pub const READ_ONLY: c_int = 40;
    pub const UNSUPPORTED_DATAREP: c_int = 43;
    pub const UNSUPPORTED_OPERATION: c_int = 44;
    pub const KEYVAL: c_int = 48;
    pub const WIN: c_int = 45;
    pub const RMA_SYNC: c_int = 50;
    pub const RMA_RANGE: c_int = 55;
    pub const RMA_ATTACH: c_int = 56;
    pub const RMA_SHARED: c_int = 57;
    pub const RMA_FLAVOR: c_int = 58;
    pub const SESSION: c_int = 75;
    /// `MPIX_ERR_PROC_FAILED`.
    pub const PROC_FAILED: c_int = 101;
    /// The largest class: codes above it carry a message (see `errors`).
    pub const LAST: c_int = 127;
}

/// Object types (bits 29-26 of a handle).
pub mod kind {
    pub const COMM: u32 = 0x1;
    pub const GROUP: u32 = 0x2;
    pub const INFO: u32 = 0x7;
    pub const DATATYPE: u32 = 0x3;
    pub const ERRHANDLER: u32 = 0x5;
    pub const OP: u32 = 0x6;
    pub const REQUEST: u32 = 0xb;
    pub const WIN: u32 = 0x8;
    pub const SESSION: u32 = 0xe;
}

/// Built-in handles and constants.
pub const COMM_WORLD: c_int = 0x4400_0000;
pub const COMM_SELF: c_int = 0x4400_0001;
pub const COMM_NULL: c_int = 0x0400_0000;
pub const REQUEST_NULL: c_int = 0x2c00_0000;
pub const MESSAGE_NULL: c_int = 0x2c00_0000;
pub const MESSAGE_NO_PROC: c_int = 0x6c00_0000;
/// Message handles share the request type (0xb) with requests: their slots
/// carry this bit, which request slots never reach.
pub const MESSAGE_SLOT_BIT: usize = 1 << 25;
pub const DATATYPE_NULL: c_int = 0x0c00_0000;
/// `MPI_LB` and `MPI_UB`: MPI-1's bound markers, for `MPI_Type_struct`.
pub const LB: c_int = 0x4c00_0010;
pub const UB: c_int = 0x4c00_0011;
pub const OP_NULL: c_int = 0x1800_0000;
pub const ERRHANDLER_NULL: c_int = 0x1400_0000;
pub const GROUP_NULL: c_int = 0x0800_0000;
pub const GROUP_EMPTY: c_int = 0x4800_0000;
pub const SESSION_NULL: c_int = 0x3800_0000;
/// MPI 4: the longest process set name, with its NUL.
pub const MAX_PSET_NAME_LEN: usize = 256;
pub const WIN_NULL: c_int = 0x2000_0000;
pub const INFO_NULL: c_int = 0x1c00_0000;
pub const INFO_ENV: c_int = 0x5c00_0001;
pub const COMM_TYPE_SHARED: c_int = 1;
pub const COMM_TYPE_HW_GUIDED: c_int = 2;
pub const COMM_TYPE_HW_UNGUIDED: c_int = 3;
pub const KEYVAL_INVALID: c_int = 0x2400_0000;
pub const MAX_INFO_KEY: usize = 255;
pub const MAX_INFO_VAL: usize = 1024;
pub const ERRORS_ARE_FATAL: c_int = 0x5400_0000;
pub const ERRORS_RETURN: c_int = 0x5400_0001;
pub const ERRORS_ABORT: c_int = 0x5400_0003;

pub const ANY_SOURCE: c_int = -2;
pub const PROC_NULL: c_int = -1;
pub const ROOT: c_int = -3;
pub const ANY_TAG: c_int = -1;
pub const UNDEFINED: c_int = -32766;

pub const IDENT: c_int = 0;
pub const CONGRUENT: c_int = 1;
pub const SIMILAR: c_int = 2;
pub const UNEQUAL: c_int = 3;

pub const THREAD_SINGLE: c_int = 0;
pub const THREAD_FUNNELED: c_int = 1;
pub const THREAD_SERIALIZED: c_int = 2;
pub const THREAD_MULTIPLE: c_int = 3;

pub const MAX_PROCESSOR_NAME: usize = 128;
pub const MAX_ERROR_STRING: usize = 512;
pub const MAX_LIBRARY_VERSION_STRING: usize = 8192;
pub const MAX_OBJECT_NAME: usize = 128;

/// Predefined attribute keys.
pub const TAG_UB: c_int = 0x6440_0001;
pub const HOST: c_int = 0x6440_0003;
pub const IO: c_int = 0x6440_0005;
pub const WTIME_IS_GLOBAL: c_int = 0x6440_0007;
pub const UNIVERSE_SIZE: c_int = 0x6440_0009;
pub const LASTUSEDCODE: c_int = 0x6440_000b;
pub const APPNUM: c_int = 0x6440_000d;

/// `MPI_IN_PLACE`: `(void *) -1`.
pub const IN_PLACE: usize = usize::MAX;
/// `MPI_STATUS_IGNORE` and `MPI_STATUSES_IGNORE`: `(MPI_Status *) 1`.
pub const STATUS_IGNORE: usize = 1;

/// `MPI_Status` as MPICH lays it out (20 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Status {
    pub count_lo: c_int,
    /// The high bits of the count, shifted left by one; the low bit says
    /// whether the request was cancelled.
    pub count_hi_and_cancelled: c_int,
    pub source: c_int,
    pub tag: c_int,
    pub error: c_int,
}

impl Status {
    /// The byte count.
    pub fn bytes(&self) -> u64 {
        (self.count_lo as u32 as u64) | (((self.count_hi_and_cancelled as u32 >> 1) as u64) << 32)
    }

    /// Sets the byte count, keeping the cancelled bit.
    pub fn set_bytes(&mut self, bytes: u64) {
        self.count_lo = bytes as u32 as c_int;
        let cancelled = self.count_hi_and_cancelled & 1;
        self.count_hi_and_cancelled = (((bytes >> 32) as u32) << 1) as c_int | cancelled;
    }

    pub fn cancelled(&self) -> bool {
        self.count_hi_and_cancelled & 1 == 1
    }

    pub fn set_cancelled(&mut self, cancelled: bool) {
        self.count_hi_and_cancelled = (self.count_hi_and_cancelled & !1) | cancelled as c_int;
    }
}

/// The kind (bits 31-30) and object type (bits 29-26) of a handle.
pub fn handle_parts(handle: c_int) -> (u32, u32) {
    let h = handle as u32;
    (h >> 30, (h >> 26) & 0xf)
}

/// A handle of kind "direct" (2), type `kind`, naming slot `index` of a table.
pub fn direct_handle(kind: u32, index: usize) -> c_int {
    debug_assert!(index < 1 << 26);
    ((2u32 << 30) | (kind << 26) | index as u32) as c_int
}

/// The slot of a direct handle of type `kind`, if it is one.
pub fn direct_index(kind: u32, handle: c_int) -> Option<usize> {
    match handle_parts(handle) {
        (2, k) if k == kind => Some((handle as u32 & 0x03ff_ffff) as usize),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_is_mpich_s_20_bytes_and_keeps_large_counts() {
        assert_eq!(std::mem::size_of::<Status>(), 20);
        let mut status = Status::default();
        status.set_cancelled(true);
        status.set_bytes((5u64 << 32) + 7);
        assert_eq!((status.bytes(), status.cancelled()), ((5u64 << 32) + 7, true));
        status.set_cancelled(false);
        assert_eq!((status.bytes(), status.cancelled()), ((5u64 << 32) + 7, false));
    }

    #[test]
    fn handles_decode_as_mpich_encodes_them() {
        assert_eq!(handle_parts(COMM_WORLD), (1, kind::COMM));
        assert_eq!(handle_parts(REQUEST_NULL), (0, kind::REQUEST));
        let h = direct_handle(kind::REQUEST, 42);
        assert_eq!((direct_index(kind::REQUEST, h), direct_index(kind::COMM, h)), (Some(42), None));
        assert_eq!(direct_index(kind::COMM, direct_handle(kind::COMM, 3)), Some(3));
    }
}
