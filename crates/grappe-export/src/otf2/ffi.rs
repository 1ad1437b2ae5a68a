//! Declarations of the part of the OTF2 3.0 writer API the exporter uses,
//! checked one by one against `/usr/include/otf2/*.h` (Debian
//! `libopen-trace-format2-dev` 3.0.2).
//!
//! Written by hand rather than generated or taken from a crate: there is
//! no maintained `otf2-sys` crate, bindgen would need libclang at build
//! time for some forty functions, and a short list that names each C
//! declaration it mirrors is easy to review. The C names are kept so that
//! each one can be looked up in the headers. `build.rs` refuses OTF2
//! versions older than 3.0, whose `WriteClockProperties` and
//! `WriteLocationGroup` take fewer arguments.
//!
//! Nothing here is called outside `archive.rs`, which wraps every call.
#![allow(non_camel_case_types, non_snake_case)]

use std::ffi::{c_char, c_int, c_void};

// ---- OTF2_GeneralDefinitions.h ----

pub type OTF2_TimeStamp = u64;
pub type OTF2_StringRef = u32;
pub type OTF2_SystemTreeNodeRef = u32;
pub type OTF2_LocationGroupRef = u32;
pub type OTF2_LocationRef = u64;
pub type OTF2_RegionRef = u32;
pub type OTF2_GroupRef = u32;
pub type OTF2_MetricMemberRef = u32;
pub type OTF2_MetricRef = u32;
pub type OTF2_CommRef = u32;
pub type OTF2_ParameterRef = u32;
pub type OTF2_AttributeRef = u32;
pub type OTF2_SourceCodeLocationRef = u32;
pub type OTF2_FileMode = u8;
pub type OTF2_Compression = u8;
pub type OTF2_FlushType = u8;
pub type OTF2_FileType = u8;
pub type OTF2_FileSubstrate = u8;
pub type OTF2_Type = u8;
pub type OTF2_Paradigm = u8;

pub const OTF2_UNDEFINED_UINT32: u32 = u32::MAX;
pub const OTF2_UNDEFINED_TIMESTAMP: u64 = u64::MAX;
pub const OTF2_UNDEFINED_STRING: OTF2_StringRef = u32::MAX;
pub const OTF2_UNDEFINED_SYSTEM_TREE_NODE: OTF2_SystemTreeNodeRef = u32::MAX;
pub const OTF2_UNDEFINED_LOCATION_GROUP: OTF2_LocationGroupRef = u32::MAX;
pub const OTF2_UNDEFINED_COMM: OTF2_CommRef = u32::MAX;

/// `OTF2_CHUNK_SIZE_MIN` and `OTF2_CHUNK_SIZE_MAX`.
pub const OTF2_CHUNK_SIZE_MIN: u64 = 256 * 1024;
pub const OTF2_CHUNK_SIZE_MAX: u64 = 16 * 1024 * 1024;

pub const OTF2_FILEMODE_WRITE: OTF2_FileMode = 0;
pub const OTF2_COMPRESSION_NONE: OTF2_Compression = 1;
pub const OTF2_FLUSH: OTF2_FlushType = 1;
pub const OTF2_FILETYPE_EVENTS: OTF2_FileType = 3;
pub const OTF2_SUBSTRATE_POSIX: OTF2_FileSubstrate = 1;

pub const OTF2_TYPE_INT64: OTF2_Type = 8;
pub const OTF2_TYPE_SOURCE_CODE_LOCATION: OTF2_Type = 20;

pub const OTF2_PARADIGM_USER: OTF2_Paradigm = 1;
pub const OTF2_PARADIGM_MPI: OTF2_Paradigm = 4;

// ---- OTF2_ErrorCodes.h ----

/// `OTF2_ErrorCode` is a C enum with negative members: an `int`.
pub type OTF2_ErrorCode = c_int;
pub const OTF2_SUCCESS: OTF2_ErrorCode = 0;

/// A C `va_list` as a function parameter: a pointer. On x86-64 (System V)
/// `va_list` is an array of one struct, which decays to a pointer to it;
/// on AArch64 (AAPCS64) it is a 32-byte struct, which a call passes by
/// reference. Only passed on, to `vsnprintf`, never read here.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub type VaListParameter = *mut c_void;

/// `OTF2_ErrorCallback`: called instead of printing an error on stderr.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub type OTF2_ErrorCallback = unsafe extern "C" fn(
    user_data: *mut c_void,
    file: *const c_char,
    line: u64,
    function: *const c_char,
    error_code: OTF2_ErrorCode,
    msg_format_string: *const c_char,
    va: VaListParameter,
) -> OTF2_ErrorCode;

// ---- OTF2_Events.h ----

pub type OTF2_CollectiveOp = u8;
pub const OTF2_COLLECTIVE_OP_BARRIER: OTF2_CollectiveOp = 0;
pub const OTF2_COLLECTIVE_OP_BCAST: OTF2_CollectiveOp = 1;
pub const OTF2_COLLECTIVE_OP_GATHER: OTF2_CollectiveOp = 2;
pub const OTF2_COLLECTIVE_OP_GATHERV: OTF2_CollectiveOp = 3;
pub const OTF2_COLLECTIVE_OP_SCATTER: OTF2_CollectiveOp = 4;
pub const OTF2_COLLECTIVE_OP_SCATTERV: OTF2_CollectiveOp = 5;
pub const OTF2_COLLECTIVE_OP_ALLGATHER: OTF2_CollectiveOp = 6;
pub const OTF2_COLLECTIVE_OP_ALLGATHERV: OTF2_CollectiveOp = 7;
pub const OTF2_COLLECTIVE_OP_ALLTOALL: OTF2_CollectiveOp = 8;
pub const OTF2_COLLECTIVE_OP_ALLTOALLV: OTF2_CollectiveOp = 9;
pub const OTF2_COLLECTIVE_OP_ALLREDUCE: OTF2_CollectiveOp = 11;
pub const OTF2_COLLECTIVE_OP_REDUCE: OTF2_CollectiveOp = 12;
pub const OTF2_COLLECTIVE_OP_REDUCE_SCATTER: OTF2_CollectiveOp = 13;
pub const OTF2_COLLECTIVE_OP_SCAN: OTF2_CollectiveOp = 14;
pub const OTF2_COLLECTIVE_OP_EXSCAN: OTF2_CollectiveOp = 15;
pub const OTF2_COLLECTIVE_OP_REDUCE_SCATTER_BLOCK: OTF2_CollectiveOp = 16;

/// `OTF2_MetricValue`, a union of three 8-byte values.
#[repr(C)]
#[derive(Clone, Copy)]
pub union OTF2_MetricValue {
    pub signed_int: i64,
    pub unsigned_int: u64,
    pub floating_point: f64,
}

// ---- OTF2_Definitions.h ----

pub type OTF2_LocationGroupType = u8;
pub type OTF2_LocationType = u8;
pub type OTF2_RegionRole = u8;
pub type OTF2_RegionFlag = u32;
pub type OTF2_GroupType = u8;
pub type OTF2_GroupFlag = u32;
pub type OTF2_MetricType = u8;
pub type OTF2_MetricMode = u8;
pub type OTF2_Base = u8;
pub type OTF2_MetricOccurrence = u8;
pub type OTF2_RecorderKind = u8;
pub type OTF2_ParameterType = u8;
pub type OTF2_CommFlag = u32;

pub const OTF2_LOCATION_GROUP_TYPE_PROCESS: OTF2_LocationGroupType = 1;
pub const OTF2_LOCATION_TYPE_CPU_THREAD: OTF2_LocationType = 1;

pub const OTF2_REGION_ROLE_FUNCTION: OTF2_RegionRole = 1;
pub const OTF2_REGION_ROLE_BARRIER: OTF2_RegionRole = 15;
pub const OTF2_REGION_ROLE_COLL_ONE2ALL: OTF2_RegionRole = 23;
pub const OTF2_REGION_ROLE_COLL_ALL2ONE: OTF2_RegionRole = 24;
pub const OTF2_REGION_ROLE_COLL_ALL2ALL: OTF2_RegionRole = 25;
pub const OTF2_REGION_ROLE_COLL_OTHER: OTF2_RegionRole = 26;
pub const OTF2_REGION_ROLE_POINT2POINT: OTF2_RegionRole = 28;
pub const OTF2_REGION_FLAG_NONE: OTF2_RegionFlag = 0;

pub const OTF2_GROUP_TYPE_COMM_LOCATIONS: OTF2_GroupType = 4;
pub const OTF2_GROUP_TYPE_COMM_GROUP: OTF2_GroupType = 5;
pub const OTF2_GROUP_FLAG_NONE: OTF2_GroupFlag = 0;

pub const OTF2_METRIC_TYPE_USER: OTF2_MetricType = 3;
/// `OTF2_METRIC_VALUE_ABSOLUTE | OTF2_METRIC_TIMING_POINT`.
pub const OTF2_METRIC_ABSOLUTE_POINT: OTF2_MetricMode = 1 | (1 << 4);
pub const OTF2_BASE_DECIMAL: OTF2_Base = 1;
pub const OTF2_METRIC_SYNCHRONOUS: OTF2_MetricOccurrence = 1;
pub const OTF2_RECORDER_KIND_CPU: OTF2_RecorderKind = 2;

pub const OTF2_PARAMETER_TYPE_STRING: OTF2_ParameterType = 0;
pub const OTF2_COMM_FLAG_NONE: OTF2_CommFlag = 0;

// ---- Opaque handles ----

/// Opaque C struct: only ever behind a pointer; neither `Send` nor `Sync`.
macro_rules! opaque {
    ($($name:ident),*) => {$(
        #[repr(C)]
        pub struct $name {
            _data: [u8; 0],
            _marker: std::marker::PhantomData<(*mut u8, std::marker::PhantomPinned)>,
        }
    )*};
}
opaque!(OTF2_Archive, OTF2_EvtWriter, OTF2_DefWriter, OTF2_GlobalDefWriter, OTF2_AttributeList);

// ---- OTF2_Callbacks.h ----

pub type OTF2_PreFlushCallback = unsafe extern "C" fn(
    user_data: *mut c_void,
    file_type: OTF2_FileType,
    location: OTF2_LocationRef,
    caller_data: *mut c_void,
    last: bool,
) -> OTF2_FlushType;

pub type OTF2_PostFlushCallback = unsafe extern "C" fn(
    user_data: *mut c_void,
    file_type: OTF2_FileType,
    location: OTF2_LocationRef,
) -> OTF2_TimeStamp;

/// `OTF2_FlushCallbacks`; the library keeps the pointer it is given, so
/// the struct must outlive the archive (it is a `static`).
#[repr(C)]
pub struct OTF2_FlushCallbacks {
    pub otf2_pre_flush: Option<OTF2_PreFlushCallback>,
    pub otf2_post_flush: Option<OTF2_PostFlushCallback>,
}

pub type OTF2_MemoryAllocate = unsafe extern "C" fn(
    user_data: *mut c_void,
    file_type: OTF2_FileType,
    location: OTF2_LocationRef,
    per_buffer_data: *mut *mut c_void,
    chunk_size: u64,
) -> *mut c_void;

pub type OTF2_MemoryFreeAll = unsafe extern "C" fn(
    user_data: *mut c_void,
    file_type: OTF2_FileType,
    location: OTF2_LocationRef,
    per_buffer_data: *mut *mut c_void,
    last: bool,
);

/// `OTF2_MemoryCallbacks`; kept by the library like the flush callbacks
/// (a `static`).
#[repr(C)]
pub struct OTF2_MemoryCallbacks {
    pub otf2_allocate: Option<OTF2_MemoryAllocate>,
    pub otf2_free_all: Option<OTF2_MemoryFreeAll>,
}

// Linked by build.rs (pkg-config otf2).
unsafe extern "C" {
    // ---- OTF2_ErrorCodes.h ----
    pub fn OTF2_Error_GetName(code: OTF2_ErrorCode) -> *const c_char;
    pub fn OTF2_Error_GetDescription(code: OTF2_ErrorCode) -> *const c_char;
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    pub fn OTF2_Error_RegisterCallback(
        error_callback_in: Option<OTF2_ErrorCallback>,
        user_data: *mut c_void,
    ) -> Option<OTF2_ErrorCallback>;

    // ---- stdio.h (the C library), to format OTF2's messages ----
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    pub fn vsnprintf(s: *mut c_char, n: usize, format: *const c_char, ap: VaListParameter) -> c_int;

    // ---- OTF2_Archive.h ----
    pub fn OTF2_Archive_Open(
        archive_path: *const c_char,
        archive_name: *const c_char,
        file_mode: OTF2_FileMode,
        chunk_size_events: u64,
        chunk_size_defs: u64,
        file_substrate: OTF2_FileSubstrate,
        compression: OTF2_Compression,
    ) -> *mut OTF2_Archive;
    pub fn OTF2_Archive_Close(archive: *mut OTF2_Archive) -> OTF2_ErrorCode;
    pub fn OTF2_Archive_SetCreator(archive: *mut OTF2_Archive, creator: *const c_char) -> OTF2_ErrorCode;
    pub fn OTF2_Archive_SetMachineName(archive: *mut OTF2_Archive, machine: *const c_char) -> OTF2_ErrorCode;
    pub fn OTF2_Archive_SetDescription(archive: *mut OTF2_Archive, description: *const c_char) -> OTF2_ErrorCode;
    pub fn OTF2_Archive_SetProperty(
        archive: *mut OTF2_Archive,
        name: *const c_char,
        value: *const c_char,
        overwrite: bool,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_Archive_SetFlushCallbacks(
        archive: *mut OTF2_Archive,
        flush_callbacks: *const OTF2_FlushCallbacks,
        flush_data: *mut c_void,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_Archive_SetMemoryCallbacks(
        archive: *mut OTF2_Archive,
        memory_callbacks: *const OTF2_MemoryCallbacks,
        memory_data: *mut c_void,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_Archive_SetSerialCollectiveCallbacks(archive: *mut OTF2_Archive) -> OTF2_ErrorCode;
    pub fn OTF2_Archive_OpenEvtFiles(archive: *mut OTF2_Archive) -> OTF2_ErrorCode;
    pub fn OTF2_Archive_CloseEvtFiles(archive: *mut OTF2_Archive) -> OTF2_ErrorCode;
    pub fn OTF2_Archive_OpenDefFiles(archive: *mut OTF2_Archive) -> OTF2_ErrorCode;
    pub fn OTF2_Archive_CloseDefFiles(archive: *mut OTF2_Archive) -> OTF2_ErrorCode;
    pub fn OTF2_Archive_GetEvtWriter(archive: *mut OTF2_Archive, location: OTF2_LocationRef) -> *mut OTF2_EvtWriter;
    pub fn OTF2_Archive_CloseEvtWriter(archive: *mut OTF2_Archive, writer: *mut OTF2_EvtWriter) -> OTF2_ErrorCode;
    pub fn OTF2_Archive_GetDefWriter(archive: *mut OTF2_Archive, location: OTF2_LocationRef) -> *mut OTF2_DefWriter;
    pub fn OTF2_Archive_CloseDefWriter(archive: *mut OTF2_Archive, writer: *mut OTF2_DefWriter) -> OTF2_ErrorCode;
    pub fn OTF2_Archive_GetGlobalDefWriter(archive: *mut OTF2_Archive) -> *mut OTF2_GlobalDefWriter;

    // ---- OTF2_EvtWriter.h ----
    pub fn OTF2_EvtWriter_GetNumberOfEvents(writer: *mut OTF2_EvtWriter, number_of_events: *mut u64) -> OTF2_ErrorCode;
    pub fn OTF2_EvtWriter_BufferFlush(
        writer: *mut OTF2_EvtWriter,
        attribute_list: *mut OTF2_AttributeList,
        time: OTF2_TimeStamp,
        stop_time: OTF2_TimeStamp,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_EvtWriter_Enter(
        writer: *mut OTF2_EvtWriter,
        attribute_list: *mut OTF2_AttributeList,
        time: OTF2_TimeStamp,
        region: OTF2_RegionRef,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_EvtWriter_Leave(
        writer: *mut OTF2_EvtWriter,
        attribute_list: *mut OTF2_AttributeList,
        time: OTF2_TimeStamp,
        region: OTF2_RegionRef,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_EvtWriter_MpiSend(
        writer: *mut OTF2_EvtWriter,
        attribute_list: *mut OTF2_AttributeList,
        time: OTF2_TimeStamp,
        receiver: u32,
        communicator: OTF2_CommRef,
        msg_tag: u32,
        msg_length: u64,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_EvtWriter_MpiIsend(
        writer: *mut OTF2_EvtWriter,
        attribute_list: *mut OTF2_AttributeList,
        time: OTF2_TimeStamp,
        receiver: u32,
        communicator: OTF2_CommRef,
        msg_tag: u32,
        msg_length: u64,
        request_id: u64,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_EvtWriter_MpiIsendComplete(
        writer: *mut OTF2_EvtWriter,
        attribute_list: *mut OTF2_AttributeList,
        time: OTF2_TimeStamp,
        request_id: u64,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_EvtWriter_MpiIrecvRequest(
        writer: *mut OTF2_EvtWriter,
        attribute_list: *mut OTF2_AttributeList,
        time: OTF2_TimeStamp,
        request_id: u64,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_EvtWriter_MpiRecv(
        writer: *mut OTF2_EvtWriter,
        attribute_list: *mut OTF2_AttributeList,
        time: OTF2_TimeStamp,
        sender: u32,
        communicator: OTF2_CommRef,
        msg_tag: u32,
        msg_length: u64,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_EvtWriter_MpiIrecv(
        writer: *mut OTF2_EvtWriter,
        attribute_list: *mut OTF2_AttributeList,
        time: OTF2_TimeStamp,
        sender: u32,
        communicator: OTF2_CommRef,
        msg_tag: u32,
        msg_length: u64,
        request_id: u64,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_EvtWriter_MpiRequestTest(
        writer: *mut OTF2_EvtWriter,
        attribute_list: *mut OTF2_AttributeList,
        time: OTF2_TimeStamp,
        request_id: u64,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_EvtWriter_MpiCollectiveBegin(
        writer: *mut OTF2_EvtWriter,
        attribute_list: *mut OTF2_AttributeList,
        time: OTF2_TimeStamp,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_EvtWriter_MpiCollectiveEnd(
        writer: *mut OTF2_EvtWriter,
        attribute_list: *mut OTF2_AttributeList,
        time: OTF2_TimeStamp,
        collective_op: OTF2_CollectiveOp,
        communicator: OTF2_CommRef,
        root: u32,
        size_sent: u64,
        size_received: u64,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_EvtWriter_Metric(
        writer: *mut OTF2_EvtWriter,
        attribute_list: *mut OTF2_AttributeList,
        time: OTF2_TimeStamp,
        metric: OTF2_MetricRef,
        number_of_metrics: u8,
        type_ids: *const OTF2_Type,
        metric_values: *const OTF2_MetricValue,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_EvtWriter_ParameterString(
        writer: *mut OTF2_EvtWriter,
        attribute_list: *mut OTF2_AttributeList,
        time: OTF2_TimeStamp,
        parameter: OTF2_ParameterRef,
        string: OTF2_StringRef,
    ) -> OTF2_ErrorCode;

    // ---- OTF2_GlobalDefWriter.h ----
    pub fn OTF2_GlobalDefWriter_WriteClockProperties(
        writer: *mut OTF2_GlobalDefWriter,
        timer_resolution: u64,
        global_offset: u64,
        trace_length: u64,
        realtime_timestamp: u64,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_GlobalDefWriter_WriteString(
        writer: *mut OTF2_GlobalDefWriter,
        self_: OTF2_StringRef,
        string: *const c_char,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_GlobalDefWriter_WriteSystemTreeNode(
        writer: *mut OTF2_GlobalDefWriter,
        self_: OTF2_SystemTreeNodeRef,
        name: OTF2_StringRef,
        class_name: OTF2_StringRef,
        parent: OTF2_SystemTreeNodeRef,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_GlobalDefWriter_WriteLocationGroup(
        writer: *mut OTF2_GlobalDefWriter,
        self_: OTF2_LocationGroupRef,
        name: OTF2_StringRef,
        location_group_type: OTF2_LocationGroupType,
        system_tree_parent: OTF2_SystemTreeNodeRef,
        creating_location_group: OTF2_LocationGroupRef,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_GlobalDefWriter_WriteLocation(
        writer: *mut OTF2_GlobalDefWriter,
        self_: OTF2_LocationRef,
        name: OTF2_StringRef,
        location_type: OTF2_LocationType,
        number_of_events: u64,
        location_group: OTF2_LocationGroupRef,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_GlobalDefWriter_WriteRegion(
        writer: *mut OTF2_GlobalDefWriter,
        self_: OTF2_RegionRef,
        name: OTF2_StringRef,
        canonical_name: OTF2_StringRef,
        description: OTF2_StringRef,
        region_role: OTF2_RegionRole,
        paradigm: OTF2_Paradigm,
        region_flags: OTF2_RegionFlag,
        source_file: OTF2_StringRef,
        begin_line_number: u32,
        end_line_number: u32,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_GlobalDefWriter_WriteGroup(
        writer: *mut OTF2_GlobalDefWriter,
        self_: OTF2_GroupRef,
        name: OTF2_StringRef,
        group_type: OTF2_GroupType,
        paradigm: OTF2_Paradigm,
        group_flags: OTF2_GroupFlag,
        number_of_members: u32,
        members: *const u64,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_GlobalDefWriter_WriteComm(
        writer: *mut OTF2_GlobalDefWriter,
        self_: OTF2_CommRef,
        name: OTF2_StringRef,
        group: OTF2_GroupRef,
        parent: OTF2_CommRef,
        flags: OTF2_CommFlag,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_GlobalDefWriter_WriteMetricMember(
        writer: *mut OTF2_GlobalDefWriter,
        self_: OTF2_MetricMemberRef,
        name: OTF2_StringRef,
        description: OTF2_StringRef,
        metric_type: OTF2_MetricType,
        metric_mode: OTF2_MetricMode,
        value_type: OTF2_Type,
        base: OTF2_Base,
        exponent: i64,
        unit: OTF2_StringRef,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_GlobalDefWriter_WriteMetricClass(
        writer: *mut OTF2_GlobalDefWriter,
        self_: OTF2_MetricRef,
        number_of_metrics: u8,
        metric_members: *const OTF2_MetricMemberRef,
        metric_occurrence: OTF2_MetricOccurrence,
        recorder_kind: OTF2_RecorderKind,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_GlobalDefWriter_WriteParameter(
        writer: *mut OTF2_GlobalDefWriter,
        self_: OTF2_ParameterRef,
        name: OTF2_StringRef,
        parameter_type: OTF2_ParameterType,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_GlobalDefWriter_WriteAttribute(
        writer: *mut OTF2_GlobalDefWriter,
        self_: OTF2_AttributeRef,
        name: OTF2_StringRef,
        description: OTF2_StringRef,
        type_: OTF2_Type,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_GlobalDefWriter_WriteSourceCodeLocation(
        writer: *mut OTF2_GlobalDefWriter,
        self_: OTF2_SourceCodeLocationRef,
        file: OTF2_StringRef,
        line_number: u32,
    ) -> OTF2_ErrorCode;

    // ---- OTF2_AttributeList.h ----
    pub fn OTF2_AttributeList_New() -> *mut OTF2_AttributeList;
    pub fn OTF2_AttributeList_Delete(attribute_list: *mut OTF2_AttributeList) -> OTF2_ErrorCode;
    pub fn OTF2_AttributeList_AddSourceCodeLocationRef(
        attribute_list: *mut OTF2_AttributeList,
        attribute: OTF2_AttributeRef,
        source_code_location_ref: OTF2_SourceCodeLocationRef,
    ) -> OTF2_ErrorCode;
}
