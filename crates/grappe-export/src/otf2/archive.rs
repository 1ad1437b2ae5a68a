//! A safe face on the OTF2 writer: with `memory.rs`, the only module with
//! `unsafe` blocks.
//!
//! An archive is written in three phases, each a type that the next one
//! consumes, so calls cannot come in an order OTF2 would refuse:
//! [`EventPhase`] (event writers, one per location), [`GlobalDefs`] (the
//! global definitions, written once every event is), then
//! [`GlobalDefs::close`], which writes the anchor file. Dropping a phase
//! closes the archive as it is (an error path: the caller removes it).
//!
//! The archive is written by one process: OTF2's serial collective
//! callbacks stand in for MPI, and buffers are flushed to their files
//! whenever they fill (their memory is `memory.rs`'s: one chunk per event
//! buffer).

use std::ffi::{CStr, CString, c_void};
use std::marker::PhantomData;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr::{NonNull, null_mut};

use crate::otf2::error::Otf2Error;
use crate::otf2::ffi::{self, *};
use crate::otf2::memory::{MEMORY_CALLBACKS, Memory};

type Result<T, E = Otf2Error> = std::result::Result<T, E>;

/// Flush every full buffer to its file.
unsafe extern "C" fn pre_flush(
    _user_data: *mut c_void,
    _file_type: OTF2_FileType,
    _location: OTF2_LocationRef,
    _caller_data: *mut c_void,
    _last: bool,
) -> OTF2_FlushType {
    OTF2_FLUSH
}

/// No post-flush callback: with one, OTF2 writes a `BufferFlush` event
/// (stamped with the callback's answer) at the head of every new chunk.
/// Those flushes are the exporter's own I/O, not pauses of the traced
/// program, so they must not appear in its timeline (nor in the event
/// counts). The recorder's real flushes are exported from the trace.
static FLUSH_CALLBACKS: OTF2_FlushCallbacks =
    OTF2_FlushCallbacks { otf2_pre_flush: Some(pre_flush), otf2_post_flush: None };

/// `Err` naming `call` unless `code` is `OTF2_SUCCESS`.
#[inline]
fn check(call: &'static str, code: OTF2_ErrorCode) -> Result<()> {
    if code == OTF2_SUCCESS { Ok(()) } else { Err(call_error(call, code)) }
}

#[cold]
fn call_error(call: &'static str, code: OTF2_ErrorCode) -> Otf2Error {
    let text = |s: *const std::ffi::c_char| {
        if s.is_null() {
            String::new()
        } else {
            // SAFETY: OTF2_Error_GetName/GetDescription return pointers to
            // static NUL-terminated strings (or NULL, handled above).
            unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
        }
    };
    // SAFETY: both functions accept any code and return static strings.
    let (name, description) = unsafe { (ffi::OTF2_Error_GetName(code), ffi::OTF2_Error_GetDescription(code)) };
    Otf2Error::Call { call, code, name: text(name), description: text(description), said: take_library_messages() }
}

/// A call that returns a handle returned none, with what OTF2 said of it.
#[cold]
fn no_handle(call: &'static str, what: impl Into<String>) -> Otf2Error {
    Otf2Error::NoHandle { call, what: what.into(), said: take_library_messages() }
}

/// The most messages of OTF2 kept for one error: a failed call says a
/// few, from the failure up through its callers.
const MESSAGES_KEPT: usize = 8;

thread_local! {
    /// What OTF2 said of its errors on this thread, not yet taken into an
    /// error: its calls report their failures on the calling thread.
    static LIBRARY_MESSAGES: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// What OTF2 said since it was last taken, oldest first.
pub(crate) fn take_library_messages() -> Vec<String> {
    LIBRARY_MESSAGES.with_borrow_mut(std::mem::take)
}

/// Has OTF2 give its error messages to the errors they explain, instead
/// of printing them on standard error (where they named an OTF2 call
/// and not what the user can fix). Once per process, as the callback is
/// the library's global; what an earlier export left is dropped.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(crate) fn capture_library_messages() {
    static REGISTERED: std::sync::Once = std::sync::Once::new();
    // SAFETY: `keep_message` has the callback's signature and needs no
    // user data; registering replaces the library's printing callback.
    REGISTERED.call_once(|| unsafe {
        ffi::OTF2_Error_RegisterCallback(Some(keep_message), null_mut());
    });
    take_library_messages();
}

/// Where a `va_list` cannot be passed on, OTF2 prints its messages.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(crate) fn capture_library_messages() {}

/// OTF2's error callback: keeps the message, formatted, for the error
/// being made. Returns the code, as the library expects.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
unsafe extern "C" fn keep_message(
    _user_data: *mut c_void,
    _file: *const std::ffi::c_char,
    _line: u64,
    _function: *const std::ffi::c_char,
    code: OTF2_ErrorCode,
    format: *const std::ffi::c_char,
    va: ffi::VaListParameter,
) -> OTF2_ErrorCode {
    let mut buffer = [0 as std::ffi::c_char; 512];
    let message = if format.is_null() {
        String::new()
    } else {
        // SAFETY: `format` and `va` are the printf format and arguments
        // OTF2 built for this message; the buffer's length is given, and
        // vsnprintf NUL-terminates what it writes within it.
        unsafe { ffi::vsnprintf(buffer.as_mut_ptr(), buffer.len(), format, va) };
        // SAFETY: NUL-terminated by vsnprintf (an empty string if it failed).
        unsafe { CStr::from_ptr(buffer.as_ptr()) }.to_string_lossy().trim().to_owned()
    };
    LIBRARY_MESSAGES.with_borrow_mut(|kept| {
        if kept.len() < MESSAGES_KEPT && !message.is_empty() {
            kept.push(message);
        }
    });
    code
}

/// A C string of `s`; NUL bytes, which C strings cannot hold, become U+FFFD.
fn c_string(s: &str) -> CString {
    CString::new(s)
        .unwrap_or_else(|_| CString::new(s.replace('\0', "\u{fffd}")).unwrap_or_else(|_| CString::from(c"?")))
}

/// Buffer sizes, in bytes (OTF2 takes 256 KiB to 16 MiB). OTF2 allocates
/// and clears a buffer per event writer, and one per definition writer,
/// local (one per location, empty) or global; a definition record must fit
/// in one buffer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Chunks {
    pub events: u64,
    pub definitions: u64,
}

/// An archive in write mode, open until closed or dropped.
struct Archive {
    raw: NonNull<OTF2_Archive>,
    open: bool,
    /// Its buffers' memory, given to OTF2's callbacks: dropped after the
    /// archive is closed (in `drop`'s body, which runs before the fields
    /// are dropped).
    memory: Box<Memory>,
}

impl Archive {
    /// Closes the archive: writes what is buffered, and the anchor file.
    /// Returns the most memory its buffers held at once.
    fn close(mut self) -> Result<u64> {
        self.open = false;
        // SAFETY: `raw` is an open archive, marked closed so that Drop
        // does not close it a second time.
        check("OTF2_Archive_Close", unsafe { ffi::OTF2_Archive_Close(self.raw.as_ptr()) })?;
        Ok(self.memory.peak())
    }
}

impl Drop for Archive {
    fn drop(&mut self) {
        if !self.open {
            return;
        }
        // SAFETY: `raw` is an open archive, closed only here or in
        // `close`, which skips this. The error is dropped: this runs on
        // error paths, whose first error is the one reported.
        let _ = unsafe { ffi::OTF2_Archive_Close(self.raw.as_ptr()) };
        // And what OTF2 says of it, so that no later error takes it.
        take_library_messages();
    }
}

/// The first phase: an archive whose event files are open, and the event
/// writers of its locations, numbered from 0. The writers stay here (OTF2
/// hands out the same writer for a location every time it is asked, so a
/// writer given away could be closed behind another's back): callers
/// borrow one for a while with [`EventPhase::location`].
pub(crate) struct EventPhase {
    archive: Archive,
    writers: Vec<Writer>,
    attributes: AttributeList,
}

/// A location's event writer.
#[derive(Clone, Copy)]
enum Writer {
    NotMade,
    Open(NonNull<OTF2_EvtWriter>),
    /// Closed, having written this many events (OTF2 would make a new
    /// writer for the location, which truncates its file).
    Closed(u64),
}

/// The one attribute list of the export, filled right before each event
/// that carries attributes: OTF2 empties it as it writes the event.
struct AttributeList {
    raw: NonNull<OTF2_AttributeList>,
}

impl AttributeList {
    fn new() -> Result<AttributeList> {
        // SAFETY: no arguments; a NULL result (no memory) is checked.
        let raw = unsafe { ffi::OTF2_AttributeList_New() };
        NonNull::new(raw)
            .map(|raw| AttributeList { raw })
            .ok_or_else(|| no_handle("OTF2_AttributeList_New", "an attribute list"))
    }
}

impl Drop for AttributeList {
    fn drop(&mut self) {
        // SAFETY: `raw` came from OTF2_AttributeList_New and is deleted
        // only here; no writer keeps it past the event it was passed to.
        let _ = unsafe { ffi::OTF2_AttributeList_Delete(self.raw.as_ptr()) };
    }
}

/// What the anchor file says of the trace (`otf2-print -I`, Vampir's
/// trace properties).
pub(crate) struct AnchorInfo {
    pub creator: String,
    /// The host of the reference rank.
    pub machine: String,
    pub description: String,
    /// The job's id, as the property `GRAPPE::JOB_ID` (none if empty).
    pub job: String,
}

impl EventPhase {
    /// Creates `dir/name.otf2` and `dir/name/`, which must not exist, for
    /// `locations` locations.
    pub(crate) fn create(
        dir: &Path,
        name: &str,
        chunks: Chunks,
        info: &AnchorInfo,
        locations: u32,
    ) -> Result<EventPhase> {
        capture_library_messages();
        let c_dir = CString::new(dir.as_os_str().as_bytes())
            .map_err(|_| Otf2Error::InvalidPath { path: dir.to_owned(), reason: "a path with a NUL byte" })?;
        let c_name = CString::new(name)
            .map_err(|_| Otf2Error::InvalidPath { path: dir.join(name), reason: "a name with a NUL byte" })?;
        let size = |bytes: u64| bytes.clamp(OTF2_CHUNK_SIZE_MIN, OTF2_CHUNK_SIZE_MAX);
        // SAFETY: both strings are NUL-terminated and outlive the call
        // (OTF2 copies them); the other arguments are plain values.
        let raw = unsafe {
            ffi::OTF2_Archive_Open(
                c_dir.as_ptr(),
                c_name.as_ptr(),
                OTF2_FILEMODE_WRITE,
                size(chunks.events),
                size(chunks.definitions),
                OTF2_SUBSTRATE_POSIX,
                OTF2_COMPRESSION_NONE,
            )
        };
        let Some(raw) = NonNull::new(raw) else {
            return Err(no_handle("OTF2_Archive_Open", dir.join(name).display().to_string()));
        };
        let archive = Archive { raw, open: true, memory: Box::default() };
        let a = archive.raw.as_ptr();
        let memory = &*archive.memory as *const Memory as *mut c_void;
        let (creator, machine) = (c_string(&info.creator), c_string(&info.machine));
        let (description, job) = (c_string(&info.description), c_string(&info.job));
        let job_property = c_string("GRAPPE::JOB_ID");
        // SAFETY: `a` is the archive just opened; FLUSH_CALLBACKS is a
        // static (OTF2 keeps the pointer) and its callbacks ignore the NULL
        // user data; the strings outlive the calls (OTF2 copies them).
        unsafe {
            check(
                "OTF2_Archive_SetFlushCallbacks",
                ffi::OTF2_Archive_SetFlushCallbacks(a, &FLUSH_CALLBACKS, null_mut()),
            )?;
            // `memory` lives in the archive's box until after it is closed.
            check(
                "OTF2_Archive_SetMemoryCallbacks",
                ffi::OTF2_Archive_SetMemoryCallbacks(a, &MEMORY_CALLBACKS, memory),
            )?;
            check("OTF2_Archive_SetSerialCollectiveCallbacks", ffi::OTF2_Archive_SetSerialCollectiveCallbacks(a))?;
            check("OTF2_Archive_SetCreator", ffi::OTF2_Archive_SetCreator(a, creator.as_ptr()))?;
            check("OTF2_Archive_SetMachineName", ffi::OTF2_Archive_SetMachineName(a, machine.as_ptr()))?;
            check("OTF2_Archive_SetDescription", ffi::OTF2_Archive_SetDescription(a, description.as_ptr()))?;
            if !info.job.is_empty() {
                let set = ffi::OTF2_Archive_SetProperty(a, job_property.as_ptr(), job.as_ptr(), false);
                check("OTF2_Archive_SetProperty", set)?;
            }
            check("OTF2_Archive_OpenEvtFiles", ffi::OTF2_Archive_OpenEvtFiles(a))?;
        }
        Ok(EventPhase {
            archive,
            writers: vec![Writer::NotMade; locations as usize],
            attributes: AttributeList::new()?,
        })
    }

    /// The event writer of `location`, made on first use.
    #[inline]
    pub(crate) fn location(&mut self, location: u32) -> Result<EventWriter<'_>> {
        let world = self.writers.len();
        let Some(slot) = self.writers.get_mut(location as usize) else {
            return Err(Otf2Error::RankOutOfRange { rank: location, world });
        };
        let raw = match *slot {
            Writer::Open(raw) => raw,
            Writer::NotMade => {
                // SAFETY: the archive is open in write mode with its event
                // files open; the writer is kept in `writers` until closed.
                let raw = unsafe { ffi::OTF2_Archive_GetEvtWriter(self.archive.raw.as_ptr(), location as u64) };
                let Some(raw) = NonNull::new(raw) else {
                    let what = format!("location {location}");
                    return Err(no_handle("OTF2_Archive_GetEvtWriter", what));
                };
                *slot = Writer::Open(raw);
                raw
            }
            Writer::Closed(_) => return Err(Otf2Error::LocationClosed { rank: location }),
        };
        Ok(EventWriter { raw, attributes: self.attributes.raw, _phase: PhantomData })
    }

    /// Closes the event writer of `location`, written to the end: OTF2
    /// writes out its buffer and hands back its chunk. A location never
    /// written to stays to [`EventPhase::into_definitions`].
    pub(crate) fn close_location(&mut self, location: u32) -> Result<()> {
        let Some(slot) = self.writers.get_mut(location as usize) else {
            return Err(Otf2Error::RankOutOfRange { rank: location, world: self.writers.len() });
        };
        if let Writer::Open(writer) = *slot {
            *slot = Writer::Closed(close_writer(&self.archive, writer)?);
        }
        Ok(())
    }

    /// Closes the event writers (making the empty event files of locations
    /// never written to, which readers open all the same) and the event
    /// files, writes the (empty) local definitions, one file per location
    /// as readers expect, and opens the global definitions. Returns the
    /// events of each location.
    pub(crate) fn into_definitions(mut self) -> Result<(Vec<u64>, GlobalDefs)> {
        let mut events = Vec::with_capacity(self.writers.len());
        for location in 0..self.writers.len() as u32 {
            if let Writer::Closed(count) = self.writers[location as usize] {
                events.push(count);
                continue;
            }
            let writer = self.location(location)?.raw;
            let count = close_writer(&self.archive, writer)?;
            self.writers[location as usize] = Writer::Closed(count);
            events.push(count);
        }
        let a = self.archive.raw.as_ptr();
        // SAFETY: `a` is open with its event files open, their writers
        // closed.
        unsafe {
            check("OTF2_Archive_CloseEvtFiles", ffi::OTF2_Archive_CloseEvtFiles(a))?;
            check("OTF2_Archive_OpenDefFiles", ffi::OTF2_Archive_OpenDefFiles(a))?;
        }
        for location in 0..events.len() as u64 {
            // SAFETY: the definition files are open; each writer is closed
            // right after it is made.
            unsafe {
                let writer = ffi::OTF2_Archive_GetDefWriter(a, location);
                if writer.is_null() {
                    let what = format!("location {location}");
                    return Err(no_handle("OTF2_Archive_GetDefWriter", what));
                }
                check("OTF2_Archive_CloseDefWriter", ffi::OTF2_Archive_CloseDefWriter(a, writer))?;
            }
        }
        // SAFETY: as above; the global writer belongs to the archive, which
        // closes it.
        let raw = unsafe {
            check("OTF2_Archive_CloseDefFiles", ffi::OTF2_Archive_CloseDefFiles(a))?;
            ffi::OTF2_Archive_GetGlobalDefWriter(a)
        };
        match NonNull::new(raw) {
            Some(raw) => Ok((events, GlobalDefs { raw, archive: self.archive })),
            None => Err(no_handle("OTF2_Archive_GetGlobalDefWriter", "the archive")),
        }
    }
}

/// Closes `writer`, an open event writer of `archive`, and returns the
/// events it wrote. The caller marks it closed: it is never used again.
fn close_writer(archive: &Archive, writer: NonNull<OTF2_EvtWriter>) -> Result<u64> {
    let mut count = 0;
    // SAFETY: `writer` is an open writer of the open archive, which its
    // caller no longer hands out once this returns.
    unsafe {
        check("OTF2_EvtWriter_GetNumberOfEvents", ffi::OTF2_EvtWriter_GetNumberOfEvents(writer.as_ptr(), &mut count))?;
        check("OTF2_Archive_CloseEvtWriter", ffi::OTF2_Archive_CloseEvtWriter(archive.raw.as_ptr(), writer.as_ptr()))?;
    }
    Ok(count)
}

/// The event writer of one location, borrowed from its phase.
pub(crate) struct EventWriter<'a> {
    raw: NonNull<OTF2_EvtWriter>,
    /// The phase's attribute list, empty between events.
    attributes: NonNull<OTF2_AttributeList>,
    _phase: PhantomData<&'a mut EventPhase>,
}

/// Declares event-writing methods: each passes its arguments to the OTF2
/// function of the same name, with no attribute list, and checks the code.
macro_rules! events {
    ($($method:ident => $call:ident($($arg:ident: $ty:ty),*);)*) => {$(
        #[inline]
        pub(crate) fn $method(&mut self, time: u64 $(, $arg: $ty)*) -> Result<()> {
            // SAFETY: `raw` is an open writer of an open archive (writers
            // are closed only by their phase, borrowed here); the arguments
            // are plain values.
            let code = unsafe { ffi::$call(self.raw.as_ptr(), null_mut(), time $(, $arg)*) };
            check(stringify!($call), code)
        }
    )*};
}

impl EventWriter<'_> {
    events! {
        enter => OTF2_EvtWriter_Enter(region: OTF2_RegionRef);
        leave => OTF2_EvtWriter_Leave(region: OTF2_RegionRef);
        mpi_send => OTF2_EvtWriter_MpiSend(receiver: u32, comm: OTF2_CommRef, tag: u32, bytes: u64);
        mpi_isend => OTF2_EvtWriter_MpiIsend(receiver: u32, comm: OTF2_CommRef, tag: u32, bytes: u64, request: u64);
        mpi_isend_complete => OTF2_EvtWriter_MpiIsendComplete(request: u64);
        mpi_irecv_request => OTF2_EvtWriter_MpiIrecvRequest(request: u64);
        mpi_recv => OTF2_EvtWriter_MpiRecv(sender: u32, comm: OTF2_CommRef, tag: u32, bytes: u64);
        mpi_irecv => OTF2_EvtWriter_MpiIrecv(sender: u32, comm: OTF2_CommRef, tag: u32, bytes: u64, request: u64);
        mpi_request_test => OTF2_EvtWriter_MpiRequestTest(request: u64);
        mpi_collective_begin => OTF2_EvtWriter_MpiCollectiveBegin();
        mpi_collective_end => OTF2_EvtWriter_MpiCollectiveEnd(
            op: OTF2_CollectiveOp, comm: OTF2_CommRef, root: u32, sent: u64, received: u64);
        parameter_string => OTF2_EvtWriter_ParameterString(parameter: OTF2_ParameterRef, value: OTF2_StringRef);
        buffer_flush => OTF2_EvtWriter_BufferFlush(stop: u64);
    }

    /// An Enter that says where the program made the call: attribute
    /// `attribute` holding source code location `location`.
    #[inline]
    pub(crate) fn enter_at(
        &mut self,
        time: u64,
        region: OTF2_RegionRef,
        attribute: OTF2_AttributeRef,
        location: OTF2_SourceCodeLocationRef,
    ) -> Result<()> {
        let list = self.attributes.as_ptr();
        // SAFETY: `list` is the phase's live attribute list, which the
        // phase borrowed here outlives; `raw` is as in `events!`. OTF2
        // empties the list as it writes the event. If the Enter fails the
        // attribute stays, but the error ends the export.
        unsafe {
            let add = ffi::OTF2_AttributeList_AddSourceCodeLocationRef(list, attribute, location);
            check("OTF2_AttributeList_AddSourceCodeLocationRef", add)?;
            check("OTF2_EvtWriter_Enter", ffi::OTF2_EvtWriter_Enter(self.raw.as_ptr(), list, time, region))
        }
    }

    /// A sample of a one-member metric class holding a signed integer.
    #[inline]
    pub(crate) fn metric_i64(&mut self, time: u64, metric: OTF2_MetricRef, value: i64) -> Result<()> {
        let types = [OTF2_TYPE_INT64];
        let values = [OTF2_MetricValue { signed_int: value }];
        // SAFETY: as in `events!`; `types` and `values` hold the one
        // member announced, and OTF2 copies them before returning.
        let code = unsafe {
            ffi::OTF2_EvtWriter_Metric(self.raw.as_ptr(), null_mut(), time, metric, 1, types.as_ptr(), values.as_ptr())
        };
        check("OTF2_EvtWriter_Metric", code)
    }
}

/// The last phase: the global definition writer.
pub(crate) struct GlobalDefs {
    raw: NonNull<OTF2_GlobalDefWriter>,
    archive: Archive,
}

/// Declares definition-writing methods, like `events!`. They take the C
/// function's arguments one for one, however many it has.
macro_rules! definitions {
    ($($method:ident => $call:ident($($arg:ident: $ty:ty),*);)*) => {$(
        #[allow(clippy::too_many_arguments)]
        pub(crate) fn $method(&mut self $(, $arg: $ty)*) -> Result<()> {
            // SAFETY: `raw` is the open global definition writer of the
            // open archive; the arguments are plain values.
            let code = unsafe { ffi::$call(self.raw.as_ptr() $(, $arg)*) };
            check(stringify!($call), code)
        }
    )*};
}

impl GlobalDefs {
    definitions! {
        clock_properties => OTF2_GlobalDefWriter_WriteClockProperties(
            resolution: u64, offset: u64, length: u64, realtime: u64);
        system_tree_node => OTF2_GlobalDefWriter_WriteSystemTreeNode(
            id: OTF2_SystemTreeNodeRef, name: OTF2_StringRef, class: OTF2_StringRef, parent: OTF2_SystemTreeNodeRef);
        location_group => OTF2_GlobalDefWriter_WriteLocationGroup(
            id: OTF2_LocationGroupRef, name: OTF2_StringRef, kind: OTF2_LocationGroupType,
            node: OTF2_SystemTreeNodeRef, creator: OTF2_LocationGroupRef);
        location => OTF2_GlobalDefWriter_WriteLocation(
            id: OTF2_LocationRef, name: OTF2_StringRef, kind: OTF2_LocationType, events: u64,
            group: OTF2_LocationGroupRef);
        region => OTF2_GlobalDefWriter_WriteRegion(
            id: OTF2_RegionRef, name: OTF2_StringRef, canonical: OTF2_StringRef, description: OTF2_StringRef,
            role: OTF2_RegionRole, paradigm: OTF2_Paradigm, flags: OTF2_RegionFlag, file: OTF2_StringRef,
            begin_line: u32, end_line: u32);
        comm => OTF2_GlobalDefWriter_WriteComm(
            id: OTF2_CommRef, name: OTF2_StringRef, group: OTF2_GroupRef, parent: OTF2_CommRef, flags: OTF2_CommFlag);
        metric_member => OTF2_GlobalDefWriter_WriteMetricMember(
            id: OTF2_MetricMemberRef, name: OTF2_StringRef, description: OTF2_StringRef, kind: OTF2_MetricType,
            mode: OTF2_MetricMode, value: OTF2_Type, base: OTF2_Base, exponent: i64, unit: OTF2_StringRef);
        parameter => OTF2_GlobalDefWriter_WriteParameter(
            id: OTF2_ParameterRef, name: OTF2_StringRef, kind: OTF2_ParameterType);
        attribute => OTF2_GlobalDefWriter_WriteAttribute(
            id: OTF2_AttributeRef, name: OTF2_StringRef, description: OTF2_StringRef, kind: OTF2_Type);
        source_code_location => OTF2_GlobalDefWriter_WriteSourceCodeLocation(
            id: OTF2_SourceCodeLocationRef, file: OTF2_StringRef, line: u32);
    }

    pub(crate) fn string(&mut self, id: OTF2_StringRef, s: &str) -> Result<()> {
        let s = c_string(s);
        // SAFETY: `raw` is the open global definition writer; `s` is
        // NUL-terminated and OTF2 copies it.
        let code = unsafe { ffi::OTF2_GlobalDefWriter_WriteString(self.raw.as_ptr(), id, s.as_ptr()) };
        check("OTF2_GlobalDefWriter_WriteString", code)
    }

    pub(crate) fn group(
        &mut self,
        id: OTF2_GroupRef,
        name: OTF2_StringRef,
        kind: OTF2_GroupType,
        members: &[u64],
    ) -> Result<()> {
        let count = u32::try_from(members.len())
            .map_err(|_| Otf2Error::TooMany { what: "group members", limit: u32::MAX as u64 })?;
        // SAFETY: `raw` is the open global definition writer; `members`
        // holds `count` values, which OTF2 copies.
        let code = unsafe {
            ffi::OTF2_GlobalDefWriter_WriteGroup(
                self.raw.as_ptr(),
                id,
                name,
                kind,
                OTF2_PARADIGM_MPI,
                OTF2_GROUP_FLAG_NONE,
                count,
                members.as_ptr(),
            )
        };
        check("OTF2_GlobalDefWriter_WriteGroup", code)
    }

    /// A metric class of one member, sampled by its location (synchronous).
    pub(crate) fn metric_class(&mut self, id: OTF2_MetricRef, member: OTF2_MetricMemberRef) -> Result<()> {
        let members = [member];
        // SAFETY: `raw` is the open global definition writer; `members`
        // holds the one member announced, which OTF2 copies.
        let code = unsafe {
            ffi::OTF2_GlobalDefWriter_WriteMetricClass(
                self.raw.as_ptr(),
                id,
                1,
                members.as_ptr(),
                OTF2_METRIC_SYNCHRONOUS,
                OTF2_RECORDER_KIND_CPU,
            )
        };
        check("OTF2_GlobalDefWriter_WriteMetricClass", code)
    }

    /// Closes the archive (the global writer with it): OTF2 writes the
    /// definitions and the anchor file.
    /// Returns the most memory the archive's buffers held at once.
    pub(crate) fn close(self) -> Result<u64> {
        self.archive.close()
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::os::fd::AsRawFd;

    use super::*;

    /// What `f` returns, and what was written on file descriptor 2 (the
    /// C library's stderr) meanwhile.
    fn with_stderr_kept<T>(f: impl FnOnce() -> T) -> (T, String) {
        let dir = grappe_testkit::scratch("otf2-stderr");
        let path = dir.join("stderr");
        let file = std::fs::File::create(&path).unwrap();
        // SAFETY: fd 2 is duplicated, pointed at `file`, then pointed back
        // at its duplicate, which is closed; no descriptor is leaked.
        let saved = unsafe { libc::dup(2) };
        assert!(saved >= 0);
        unsafe { libc::dup2(file.as_raw_fd(), 2) };
        let result = f();
        unsafe {
            libc::dup2(saved, 2);
            libc::close(saved);
        }
        let mut printed = String::new();
        std::fs::File::open(&path).unwrap().read_to_string(&mut printed).unwrap();
        (result, printed)
    }

    /// An archive OTF2 cannot create (in /sys, where nobody may create
    /// anything, root included): the error says what the library said,
    /// which names the path, and the library prints nothing on stderr.
    #[test]
    fn what_otf2_says_of_an_error_goes_into_the_error_not_onto_stderr() {
        let name = format!("grappe-unit-{}", std::process::id());
        let info = AnchorInfo {
            creator: "test".into(),
            machine: "here".into(),
            description: "none".into(),
            job: String::new(),
        };
        let chunks = Chunks { events: OTF2_CHUNK_SIZE_MIN, definitions: OTF2_CHUNK_SIZE_MIN };
        let (created, printed) = with_stderr_kept(|| EventPhase::create(Path::new("/sys"), &name, chunks, &info, 1));
        let Err(error) = created else { panic!("an archive was created in /sys") };
        let text = error.to_string();
        assert!(text.contains("; OTF2 said: "), "{text}");
        assert!(text.contains(&format!("/sys/{name}")), "{text}");
        assert_eq!(printed, "", "the library printed on stderr");
        assert!(take_library_messages().is_empty(), "the error took them, the archive's drop what followed");
    }
}
