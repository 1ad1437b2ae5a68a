//! The part of Perfetto's trace protobuf (`protos/perfetto/trace/`,
//! Apache-2.0) that the export writes: a `Trace` of `TracePacket`s holding
//! track descriptors, track events and interned strings. Names, types and
//! field numbers are upstream's (`trace.proto`, `trace_packet.proto`,
//! `track_event/track_event.proto`, `track_event/track_descriptor.proto`,
//! `track_event/process_descriptor.proto`,
//! `track_event/thread_descriptor.proto`,
//! `track_event/counter_descriptor.proto`,
//! `track_event/debug_annotation.proto`,
//! `interned_data/interned_data.proto`); every other field is left out.
//! Upstream's files are proto2: repeated numbers are not packed, and a
//! reader that decodes them field by field (Perfetto's own) expects them
//! so. A field of a `oneof` upstream is a plain optional field here when
//! only one of its alternatives is written: the encoding is the same.
//!
//! Written with prost's derive macros, so building grappe needs no
//! protobuf compiler; the tests decode the files with upstream's own
//! definitions (Perfetto's Python package) to hold these to them.

/// A trace: its packets (a file is a `Trace`, each packet field 1).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Trace {
    #[prost(message, repeated, tag = "1")]
    pub packet: Vec<TracePacket>,
}

/// `TracePacket`: one record of the trace.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TracePacket {
    /// Nanoseconds of the trace's clock.
    #[prost(uint64, optional, tag = "8")]
    pub timestamp: Option<u64>,
    /// The writer's sequence: interned strings are valid within it.
    #[prost(uint32, optional, tag = "10")]
    pub trusted_packet_sequence_id: Option<u32>,
    /// Strings numbered from this packet on.
    #[prost(message, optional, tag = "12")]
    pub interned_data: Option<InternedData>,
    /// [`SEQ_INCREMENTAL_STATE_CLEARED`], [`SEQ_NEEDS_INCREMENTAL_STATE`].
    #[prost(uint32, optional, tag = "13")]
    pub sequence_flags: Option<u32>,
    #[prost(bool, optional, tag = "87")]
    pub first_packet_on_sequence: Option<bool>,
    #[prost(oneof = "Data", tags = "11, 60")]
    pub data: Option<Data>,
}

/// The interned strings of the sequence were dropped: numbering starts
/// anew with this packet.
pub const SEQ_INCREMENTAL_STATE_CLEARED: u32 = 1;
/// The packet uses interned strings.
pub const SEQ_NEEDS_INCREMENTAL_STATE: u32 = 2;

/// What a packet holds (`TracePacket.data`, of which these two).
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Data {
    #[prost(message, tag = "11")]
    TrackEvent(TrackEvent),
    #[prost(message, tag = "60")]
    TrackDescriptor(TrackDescriptor),
}

/// `TrackDescriptor`: a track events go on (a process, a thread, a
/// counter).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackDescriptor {
    #[prost(uint64, optional, tag = "1")]
    pub uuid: Option<u64>,
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
    #[prost(message, optional, tag = "3")]
    pub process: Option<ProcessDescriptor>,
    #[prost(message, optional, tag = "4")]
    pub thread: Option<ThreadDescriptor>,
    #[prost(uint64, optional, tag = "5")]
    pub parent_uuid: Option<u64>,
    #[prost(message, optional, tag = "8")]
    pub counter: Option<CounterDescriptor>,
}

/// `ProcessDescriptor`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProcessDescriptor {
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    #[prost(string, optional, tag = "6")]
    pub process_name: Option<String>,
}

/// `ThreadDescriptor`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ThreadDescriptor {
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    #[prost(int64, optional, tag = "2")]
    pub tid: Option<i64>,
    #[prost(string, optional, tag = "5")]
    pub thread_name: Option<String>,
}

/// `CounterDescriptor`: its presence makes a counter track.
#[derive(Clone, PartialEq, prost::Message)]
pub struct CounterDescriptor {}

/// `TrackEvent`: a slice's begin or end, an instant, a counter value.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackEvent {
    #[prost(uint64, repeated, packed = "false", tag = "3")]
    pub category_iids: Vec<u64>,
    #[prost(message, repeated, tag = "4")]
    pub debug_annotations: Vec<DebugAnnotation>,
    #[prost(enumeration = "Type", optional, tag = "9")]
    pub r#type: Option<i32>,
    /// Upstream: in oneof `name_field` with `name` (23).
    #[prost(uint64, optional, tag = "10")]
    pub name_iid: Option<u64>,
    #[prost(uint64, optional, tag = "11")]
    pub track_uuid: Option<u64>,
    /// Upstream: in oneof `counter_value_field`.
    #[prost(int64, optional, tag = "30")]
    pub counter_value: Option<i64>,
    #[prost(fixed64, repeated, packed = "false", tag = "47")]
    pub flow_ids: Vec<u64>,
    #[prost(fixed64, repeated, packed = "false", tag = "48")]
    pub terminating_flow_ids: Vec<u64>,
}

/// `TrackEvent.Type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum Type {
    Unspecified = 0,
    SliceBegin = 1,
    SliceEnd = 2,
    Instant = 3,
    Counter = 4,
}

/// `DebugAnnotation`: a named value, shown with the slice. Upstream: the
/// name in oneof `name_field`, the value in oneof `value`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct DebugAnnotation {
    #[prost(uint64, optional, tag = "1")]
    pub name_iid: Option<u64>,
    #[prost(bool, optional, tag = "2")]
    pub bool_value: Option<bool>,
    #[prost(uint64, optional, tag = "3")]
    pub uint_value: Option<u64>,
    #[prost(int64, optional, tag = "4")]
    pub int_value: Option<i64>,
    #[prost(message, repeated, tag = "12")]
    pub array_values: Vec<DebugAnnotation>,
    #[prost(uint64, optional, tag = "17")]
    pub string_value_iid: Option<u64>,
}

/// `InternedData`: strings numbered for the rest of the sequence.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InternedData {
    #[prost(message, repeated, tag = "1")]
    pub event_categories: Vec<EventCategory>,
    #[prost(message, repeated, tag = "2")]
    pub event_names: Vec<EventName>,
    #[prost(message, repeated, tag = "3")]
    pub debug_annotation_names: Vec<DebugAnnotationName>,
    #[prost(message, repeated, tag = "29")]
    pub debug_annotation_string_values: Vec<InternedString>,
}

/// `EventCategory`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct EventCategory {
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
}

/// `EventName`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct EventName {
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
}

/// `DebugAnnotationName`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct DebugAnnotationName {
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
}

/// `InternedString`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InternedString {
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    #[prost(bytes = "vec", optional, tag = "2")]
    pub str: Option<Vec<u8>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    /// proto2 repeated numbers go one field each (key, value), not as one
    /// packed run: Perfetto's decoder reads them field by field.
    #[test]
    fn repeated_numbers_are_not_packed() {
        let event = TrackEvent { category_iids: vec![5, 6], flow_ids: vec![7, 8], ..TrackEvent::default() };
        let bytes = event.encode_to_vec();
        // Field 3, varint (key 0x18), twice; field 47, fixed64 (key 377: 0xf9 0x02), twice.
        let mut expected = vec![0x18, 5, 0x18, 6];
        for id in [7u64, 8] {
            expected.extend_from_slice(&[0xf9, 0x02]);
            expected.extend_from_slice(&id.to_le_bytes());
        }
        assert_eq!(bytes, expected);
    }
}
