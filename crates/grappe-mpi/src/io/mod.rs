//! MPI-IO's files: what an open file is (its POSIX file, its view, its
//! pointers, its error handler) and the table that maps the program's
//! `MPI_File` handles to them. The MPI functions themselves are in
//! `api::file`; the file system under them in [`posix`].
//!
//! An `MPI_File` is a pointer in MPICH's interface. grappe's handles are
//! not addresses: a handle is a tag, a generation and the slot of the
//! table, so that a handle never opened, closed already or reused for
//! another file is recognised as such before anything is touched (a
//! garbage pointer is an `MPI_ERR_FILE`, not a crash).
//!
//! Open files are shared with any thread of the program (they live
//! outside the library's state, under their own locks): data accesses
//! run without the library's lock, and at `MPI_THREAD_MULTIPLE` other
//! threads call MPI meanwhile.

pub mod posix;
pub mod shared;
pub mod view;

use std::ffi::c_int;
use std::fs::File;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};

use parking_lot::{Mutex, RwLock};

use crate::abi;
use crate::state::Table;
use crate::types::Type;

use self::shared::SharedPointer;
use self::view::Tiling;

/// A file open on a communicator.
pub struct OpenFile {
    /// Where it is (the name without a `ufs:` prefix).
    pub path: PathBuf,
    pub data: File,
    pub amode: c_int,
    /// The file's own communicator: a duplicate of the one it was opened
    /// on, whose errors return, for the collective steps of MPI-IO calls.
    pub comm: c_int,
    /// This rank in it, and its size.
    pub rank: usize,
    pub size: usize,
    pub shared: SharedPointer,
    /// What the program may change.
    pub state: Mutex<FileState>,
    /// Held by an access in atomic mode: keeps the process's threads
    /// apart as the byte-range lock keeps processes.
    pub atomic_access: Mutex<()>,
}

/// What the calls on a file change.
pub struct FileState {
    pub view: Arc<View>,
    /// The individual file pointer, in etypes of the view.
    pub pointer: u64,
    pub atomic: bool,
    pub errhandler: c_int,
    /// The hints given at open and since (`MPI_File_set_info`).
    pub info: Vec<(String, String)>,
    /// The split collective under way: its begin call and what it did.
    pub split: Option<(&'static str, abi::Status)>,
}

/// A view (`MPI_File_set_view`).
pub struct View {
    pub tiling: Tiling,
    pub etype: Type,
    pub filetype: Type,
    pub datarep: String,
}

impl View {
    /// The view of a file just opened: every byte, in `MPI_BYTE`s.
    pub fn bytes() -> View {
        let byte = Type::Predefined(crate::datatype::BYTE);
        View { tiling: Tiling::bytes(0), etype: byte.clone(), filetype: byte, datarep: "native".to_owned() }
    }

    /// Bytes in an etype.
    pub fn etype_size(&self) -> u64 {
        self.etype.size() as u64
    }

    /// Whether the file holds its data in the external32 representation.
    pub fn is_external32(&self) -> bool {
        self.datarep == "external32"
    }
}

impl OpenFile {
    pub fn is_sequential(&self) -> bool {
        self.amode & posix::mode::SEQUENTIAL != 0
    }

    pub fn view(&self) -> Arc<View> {
        self.state.lock().view.clone()
    }
}

/// A live file of the table, with the generation its handle carries.
struct Live {
    generation: u32,
    file: Arc<OpenFile>,
}

static FILES: RwLock<Table<Live>> = RwLock::new(Table::new());
static GENERATION: AtomicU32 = AtomicU32::new(0);

/// The error handler of `MPI_FILE_NULL`: what applies to errors that
/// concern no open file, and what a file opened next starts with.
static NULL_HANDLER: AtomicI32 = AtomicI32::new(abi::ERRORS_RETURN);

/// `MPI_FILE_NULL`.
pub const FILE_NULL: usize = 0;

/// Bits 63-48 of every handle: no handle is `MPI_FILE_NULL` (0), and few
/// stray pointers look like one.
const TAG: u64 = 0xf11e << 48;
const SLOT_BITS: u32 = 24;
const GENERATION_BITS: u32 = 24;

fn handle_of(slot: usize, generation: u32) -> usize {
    (TAG | ((generation as u64) << SLOT_BITS) | slot as u64) as usize
}

/// The slot and generation of a handle, if it has the form of one.
fn parts(handle: usize) -> Option<(usize, u32)> {
    let h = handle as u64;
    if h >> 48 != TAG >> 48 {
        return None;
    }
    let slot = (h & ((1 << SLOT_BITS) - 1)) as usize;
    let generation = ((h >> SLOT_BITS) & ((1 << GENERATION_BITS) - 1)) as u32;
    Some((slot, generation))
}

/// Adds a file just opened: its handle.
pub fn insert(file: OpenFile) -> usize {
    let generation = GENERATION.fetch_add(1, Ordering::Relaxed) & ((1 << GENERATION_BITS) - 1);
    let slot = FILES.write().insert(Live { generation, file: Arc::new(file) });
    assert!(slot < 1 << SLOT_BITS, "more than 2^24 files open at once");
    handle_of(slot, generation)
}

/// The file of `handle`, if it is open.
pub fn lookup(handle: usize) -> Option<Arc<OpenFile>> {
    let (slot, generation) = parts(handle)?;
    FILES.read().get(slot).filter(|live| live.generation == generation).map(|live| live.file.clone())
}

/// Takes the file of `handle` out of the table (it closes when the last
/// call using it is over).
pub fn remove(handle: usize) -> Option<Arc<OpenFile>> {
    let (slot, generation) = parts(handle)?;
    let mut files = FILES.write();
    files.get(slot).filter(|live| live.generation == generation)?;
    files.remove(slot).map(|live| live.file)
}

/// The error handler that applies to errors on `handle`: the file's, or
/// `MPI_FILE_NULL`'s for `MPI_FILE_NULL` and handles of no open file.
pub fn errhandler_of(handle: usize) -> c_int {
    match lookup(handle) {
        Some(file) => file.state.lock().errhandler,
        None => NULL_HANDLER.load(Ordering::Relaxed),
    }
}

pub fn null_handler() -> c_int {
    NULL_HANDLER.load(Ordering::Relaxed)
}

pub fn set_null_handler(handler: c_int) {
    NULL_HANDLER.store(handler, Ordering::Relaxed);
}

/// The Fortran integer of a file handle (`MPI_File_c2f`): its slot plus
/// one, 0 for `MPI_FILE_NULL` and handles of no open file.
pub fn fortran_of(handle: usize) -> c_int {
    match (parts(handle), lookup(handle)) {
        (Some((slot, _)), Some(_)) => slot as c_int + 1,
        _ => 0,
    }
}

/// The handle of a Fortran integer (`MPI_File_f2c`): `MPI_FILE_NULL` if
/// it names no open file.
pub fn from_fortran(number: c_int) -> usize {
    let Some(slot) = usize::try_from(number).ok().and_then(|n| n.checked_sub(1)) else {
        return FILE_NULL;
    };
    FILES.read().get(slot).map_or(FILE_NULL, |live| handle_of(slot, live.generation))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a_file(name: &str) -> (grappe_testkit::Scratch, OpenFile) {
        let dir = grappe_testkit::scratch(name);
        let path = dir.path().join("data");
        let data = posix::open(&path, posix::mode::RDWR, true).unwrap();
        let file = OpenFile {
            shared: SharedPointer::beside(&path, 1),
            path,
            data,
            amode: posix::mode::RDWR,
            comm: abi::COMM_NULL,
            rank: 0,
            size: 1,
            state: Mutex::new(FileState {
                view: Arc::new(View::bytes()),
                pointer: 0,
                atomic: false,
                errhandler: abi::ERRORS_RETURN,
                info: Vec::new(),
                split: None,
            }),
            atomic_access: Mutex::new(()),
        };
        (dir, file)
    }

    #[test]
    fn handles_name_their_file_until_it_is_closed_and_never_another() {
        let (dir, file) = a_file("handles");
        let handle = insert(file);
        assert_ne!(handle, FILE_NULL);
        assert_eq!(lookup(handle).map(|f| f.path.clone()), Some(dir.path().join("data")));
        let number = fortran_of(handle);
        assert!(number > 0);
        assert_eq!(from_fortran(number), handle);
        assert!(remove(handle).is_some());
        assert!(lookup(handle).is_none(), "a closed file's handle names nothing");
        assert!(remove(handle).is_none());
        // The slot serves again, under another generation.
        let (_dir2, again) = a_file("again");
        let next = insert(again);
        assert_ne!(next, handle);
        assert!(lookup(handle).is_none());
        assert_eq!(from_fortran(0), FILE_NULL);
        assert_eq!(fortran_of(handle), 0);
        remove(next);
    }

    #[test]
    fn stray_pointers_are_no_handles() {
        for stray in [0usize, 1, 0x7fff_1234_5678, usize::MAX, TAG as usize | 0xff_ffff] {
            assert!(lookup(stray).is_none(), "{stray:#x}");
            assert_eq!(errhandler_of(stray), null_handler());
        }
    }
}
