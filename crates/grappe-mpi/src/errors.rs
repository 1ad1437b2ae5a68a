//! Errors as C programs see them: an error code whose class says what
//! kind of error it is (`MPI_Error_class`) and whose string says what was
//! wrong, with the numbers (`MPI_Error_string`); and the error handlers
//! that decide whether a failed call returns its code or ends the job.
//!
//! A code is its class (below 128) plus 128 times the slot of its message
//! in a ring of recent messages: a program that keeps a code and asks for
//! its string later gets it, unless 4096 more errors came meanwhile, in
//! which case it gets the class's description.

use std::ffi::c_int;

use grappe_comm::ErrorClass;
use parking_lot::Mutex;

use crate::abi::class;

/// A failed call, before its handler decides what becomes of it. Boxed:
/// every call returns a `Result` of it, which stays a pointer wide.
#[derive(Debug)]
pub struct MpiError(Box<Failure>);

/// What [`MpiError`] holds.
#[derive(Debug)]
pub struct Failure {
    /// The MPI error class.
    pub class: c_int,
    /// What was wrong, with the numbers.
    pub message: String,
    /// The communicator whose error handler applies (`None`: the world's,
    /// as for errors that concern no communicator).
    pub comm: Option<c_int>,
    /// The file whose error handler applies instead (`Some(0)`:
    /// `MPI_FILE_NULL`'s, as for `MPI_File_open` and a bad file handle).
    pub file: Option<usize>,
    /// The window whose error handler applies instead (`MPI_Win_*` calls
    /// on a window that exists).
    pub win: Option<c_int>,
    /// The session whose error handler applies instead (MPI 4's
    /// `MPI_Session_*` calls on a session that exists).
    pub session: Option<c_int>,
    /// What a receive that failed says of its message (a truncated
    /// message's source, tag and the bytes delivered), for its status.
    pub status: Option<crate::abi::Status>,
}

impl std::ops::Deref for MpiError {
    type Target = Failure;
    fn deref(&self) -> &Failure {
        &self.0
    }
}

impl std::ops::DerefMut for MpiError {
    fn deref_mut(&mut self) -> &mut Failure {
        &mut self.0
    }
}

pub type Result<T, E = MpiError> = std::result::Result<T, E>;

impl MpiError {
    #[cold]
    pub fn new(class: c_int, message: impl Into<String>) -> MpiError {
        MpiError(Box::new(Failure {
            class,
            message: message.into(),
            comm: None,
            file: None,
            win: None,
            session: None,
            status: None,
        }))
    }

    /// The same error, handled by communicator `comm`'s handler.
    #[cold]
    pub fn on(mut self, comm: c_int) -> MpiError {
        self.comm.get_or_insert(comm);
        self
    }

    /// The same error, handled by window `win`'s error handler.
    #[cold]
    pub fn on_win(mut self, win: c_int) -> MpiError {
        self.win.get_or_insert(win);
        self
    }

    /// The same error, handled by session `session`'s error handler.
    #[cold]
    pub fn on_session(mut self, session: c_int) -> MpiError {
        self.session.get_or_insert(session);
        self
    }

    /// The same error, handled by the error handler of file `handle`
    /// (`MPI_FILE_NULL`, 0, for errors that concern no open file).
    #[cold]
    pub fn on_file(mut self, handle: usize) -> MpiError {
        self.file.get_or_insert(handle);
        self
    }
}

impl From<grappe_comm::Error> for MpiError {
    #[cold]
    fn from(error: grappe_comm::Error) -> MpiError {
        let mut converted = MpiError::new(class_of(error.class()), error.to_string());
        if let grappe_comm::Error::Truncated { source_rank, tag, buffer_bytes, .. } = error {
            let mut status = crate::abi::Status { source: source_rank as c_int, tag, ..Default::default() };
            status.set_bytes(buffer_bytes as u64);
            converted.status = Some(status);
        }
        converted
    }
}

/// The outcome of an MPI function the library called itself: its code
/// made an error again, with the class and message it carries.
pub fn check_code(code: c_int) -> Result<()> {
    if code == crate::abi::SUCCESS {
        return Ok(());
    }
    let class = class_of_code(code).unwrap_or(class::OTHER);
    Err(MpiError::new(class, string_of_code(code).unwrap_or_else(|| format!("error code {code}"))))
}

/// MPICH's number for one of grappe's error classes.
pub fn class_of(class: ErrorClass) -> c_int {
    match class {
        ErrorClass::Rank => class::RANK,
        ErrorClass::Tag => class::TAG,
        ErrorClass::Truncate => class::TRUNCATE,
        ErrorClass::Type => class::TYPE,
        ErrorClass::Count => class::COUNT,
        ErrorClass::Comm => class::COMM,
        ErrorClass::ProcFailed => class::PROC_FAILED,
        _ => class::OTHER,
    }
}

/// Slots of the ring of recent messages.
const SLOTS: usize = 4096;

struct Messages {
    ring: Vec<Option<(c_int, String)>>,
    next: usize,
}

static MESSAGES: Mutex<Messages> = Mutex::new(Messages { ring: Vec::new(), next: 0 });

/// The code of an error: its class and its message's slot. An error of
/// class `MPI_ERR_IN_STATUS` is that class itself: MPI says the
/// multiple-completion calls return the code `MPI_ERR_IN_STATUS`, and
/// programs compare the result with it (each failure's own code is in its
/// status).
pub fn code_for(error: &MpiError) -> c_int {
    if error.class == class::IN_STATUS {
        return class::IN_STATUS;
    }
    let mut messages = MESSAGES.lock();
    if messages.ring.is_empty() {
        messages.ring.resize(SLOTS, None);
    }
    let slot = messages.next;
    messages.next = (slot + 1) % SLOTS;
    messages.ring[slot] = Some((error.class, error.message.clone()));
    error.class + ((slot as c_int + 1) << 7)
}

/// The largest predefined code (`MPI_ERR_LASTCODE`): the program's own
/// classes and codes are numbered after it.
pub const LAST_PREDEFINED_CODE: c_int = 0x3fff_ffff;

/// A class or code the program added (`MPI_Add_error_class`,
/// `MPI_Add_error_code`): its class (a class's is itself) and string.
struct Added {
    class: c_int,
    string: String,
}

/// The program's classes and codes: number `LAST_PREDEFINED_CODE + 1 + i`
/// is entry `i`.
static ADDED: Mutex<Vec<Added>> = Mutex::new(Vec::new());

/// The largest class, the program's included (`MPI_LASTUSEDCODE`).
pub static LAST_USED_CODE: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(LAST_PREDEFINED_CODE);

/// A new error class of the program's, with an empty string.
pub fn add_class() -> c_int {
    let mut added = ADDED.lock();
    let number = LAST_PREDEFINED_CODE + 1 + added.len() as c_int;
    added.push(Added { class: number, string: String::new() });
    LAST_USED_CODE.store(number, std::sync::atomic::Ordering::Relaxed);
    number
}

/// A new error code of class `class` (predefined or the program's).
pub fn add_code(class: c_int) -> Result<c_int> {
    let known = (0..=class::LAST).contains(&class) || added_class(class) == Some(class);
    if !known {
        return Err(MpiError::new(class::ARG, format!("{class} is not an error class")));
    }
    let mut added = ADDED.lock();
    let number = LAST_PREDEFINED_CODE + 1 + added.len() as c_int;
    added.push(Added { class, string: String::new() });
    Ok(number)
}

/// Sets the string of a class or code the program added.
pub fn set_added_string(code: c_int, string: String) -> Result<()> {
    let mut added = ADDED.lock();
    match added_index(code).and_then(|i| added.get_mut(i)) {
        Some(entry) => {
            entry.string = string;
            Ok(())
        }
        None => Err(MpiError::new(
            class::ARG,
            format!("{code} is not an error class or code the program added (MPI_Add_error_string takes only those)"),
        )),
    }
}

fn added_index(code: c_int) -> Option<usize> {
    (code > LAST_PREDEFINED_CODE).then(|| (code - LAST_PREDEFINED_CODE - 1) as usize)
}

/// The class of a code the program added.
fn added_class(code: c_int) -> Option<c_int> {
    added_index(code).and_then(|i| ADDED.lock().get(i).map(|a| a.class))
}

/// The class of a code, `None` if it is not one.
pub fn class_of_code(code: c_int) -> Option<c_int> {
    if code > LAST_PREDEFINED_CODE {
        return added_class(code);
    }
    (code >= 0).then_some(code & class::LAST)
}

/// The string of a code: its message if it is still in the ring, else its
/// class's description; the program's own string for a code it added.
pub fn string_of_code(code: c_int) -> Option<String> {
    if let Some(i) = added_index(code) {
        return ADDED.lock().get(i).map(|a| a.string.clone());
    }
    let class = class_of_code(code)?;
    let slot = (code >> 7) as usize;
    if slot > 0 && slot <= SLOTS {
        let messages = MESSAGES.lock();
        if let Some(Some((c, message))) = messages.ring.get(slot - 1) {
            if *c == class {
                return Some(message.clone());
            }
        }
    }
    Some(describe_class(class).to_owned())
}

/// What an error class means.
pub fn describe_class(class: c_int) -> &'static str {
    match class {
        0 => "no error",
        class::BUFFER => "invalid buffer pointer",
        class::COUNT => "invalid count argument",
        class::TYPE => "invalid datatype",
        class::TAG => "invalid tag",
        class::COMM => "invalid communicator",
        class::RANK => "invalid rank",
        class::ROOT => "invalid root",
        class::GROUP => "invalid group",
        class::OP => "invalid operation",
        class::ARG => "invalid argument",
        class::TRUNCATE => "message truncated",
        class::OTHER => "other error",
        class::INTERN => "internal error",
        class::IN_STATUS => "error code is in status",
        class::PENDING => "pending request",
        class::REQUEST => "invalid request",
        class::ACCESS => "permission denied",
        class::AMODE => "invalid file access mode",
        class::BAD_FILE => "invalid file name",
        class::CONVERSION => "error in a data conversion function",
        class::DUP_DATAREP => "data representation already defined",
        class::FILE_EXISTS => "file exists",
        class::FILE => "invalid file handle",
        class::INFO => "invalid info object",
        class::INFO_KEY => "info key too long",
        class::INFO_NOKEY => "info key not defined",
        class::IO => "input/output error",
        class::NOT_SAME => "collective arguments differ between ranks",
        class::NO_SPACE => "no space left on device",
        class::NO_SUCH_FILE => "file does not exist",
        class::QUOTA => "quota exceeded",
        class::READ_ONLY => "file is read-only",
        class::UNSUPPORTED_DATAREP => "unsupported data representation",
        class::NO_MEM => "out of memory",
        class::UNSUPPORTED_OPERATION => "operation not supported",
        class::KEYVAL => "invalid attribute key",
        class::PROC_FAILED => "a process of the job failed",
        class::SESSION => "invalid session",
        _ => "unknown error class",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_gives_back_its_class_and_its_message() {
        let code = code_for(&MpiError::new(class::RANK, "MPI_Send: rank 9 is out of range"));
        assert_ne!(code, class::RANK);
        assert_eq!(class_of_code(code), Some(class::RANK));
        assert_eq!(string_of_code(code).unwrap(), "MPI_Send: rank 9 is out of range");
        assert_eq!(string_of_code(class::TAG).unwrap(), "invalid tag");
        assert_eq!(class_of_code(-3), None);
    }

    #[test]
    fn an_error_in_statuses_is_the_code_mpi_err_in_status_itself() {
        let code = code_for(&MpiError::new(class::IN_STATUS, "2 of the requests failed"));
        assert_eq!(code, class::IN_STATUS);
        assert_eq!(class_of_code(code), Some(class::IN_STATUS));
    }

    #[test]
    fn the_program_s_classes_and_codes_keep_their_class_and_string() {
        let class = add_class();
        assert!(class > LAST_PREDEFINED_CODE);
        assert_eq!(LAST_USED_CODE.load(std::sync::atomic::Ordering::Relaxed), class);
        let code = add_code(class).unwrap();
        let other = add_code(class::RANK).unwrap();
        assert_eq!(
            (class_of_code(class), class_of_code(code), class_of_code(other)),
            (Some(class), Some(class), Some(class::RANK))
        );
        assert_eq!(string_of_code(code).unwrap(), "");
        set_added_string(code, "the solver diverged".into()).unwrap();
        assert_eq!(string_of_code(code).unwrap(), "the solver diverged");
        assert!(set_added_string(class::RANK, "no".into()).is_err(), "predefined strings stay");
        assert!(add_code(code).is_err(), "a code is not a class");
        assert_eq!(class_of_code(LAST_PREDEFINED_CODE + 100_000), None);
    }

    #[test]
    fn engine_errors_keep_their_class() {
        let error = MpiError::from(grappe_comm::Error::InvalidRank { rank: 7, size: 4 });
        assert_eq!(error.class, class::RANK);
        assert!(error.message.contains('7'), "{}", error.message);
    }
}
