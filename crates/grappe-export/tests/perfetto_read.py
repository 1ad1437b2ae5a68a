#!/usr/bin/env python3
"""Reads a Perfetto protobuf trace with Perfetto's own definitions (the
`perfetto` package's perfetto_trace_pb2, decoded by Google's `protobuf`)
and prints what a trace processor would make of its track events, as JSON:

    perfetto_read.py TRACE

- every field the file holds must be known to upstream's definitions
  (a wrong field number or wire type shows up as an unknown field);
- interned strings are resolved per packet, with the sequence's state
  cleared where a packet says so;
- events are taken in date order, ties in file order (as trace_processor
  sorts them), slices nested per track, flows bound to the slice their
  event begins or ends.

Output: {"processes": {pid: name}, "threads": {tid: [pid, name]},
"slices": [...], "counters": [...], "flows": [[from, to]...],
"problems": [...], "packets": N, "resets": N}.
"""
import json
import sys

from google.protobuf import unknown_fields
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

CLEARED = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
NEEDS = pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
TE = pb.TrackEvent


def unknown(message, where, problems):
    """Every field of `message` and of the messages in it must be known."""
    for field in unknown_fields.UnknownFieldSet(message):
        problems.append(f"unknown field {field.field_number} in {where}")
    for descriptor, value in message.ListFields():
        if descriptor.message_type is None:
            continue
        values = value if descriptor.is_repeated else [value]
        for v in values:
            unknown(v, f"{where}.{descriptor.name}", problems)


def annotation_value(a, strings, names):
    kind = a.WhichOneof("value")
    if kind == "string_value_iid":
        return strings[a.string_value_iid]
    if kind is None and len(a.array_values):
        return [annotation_value(v, strings, names) for v in a.array_values]
    return getattr(a, kind)


def main(path):
    with open(path, "rb") as f:
        trace = pb.Trace.FromString(f.read())
    problems = []
    unknown(trace, "Trace", problems)
    tracks, events = {}, []
    tables, valid, resets = None, False, 0
    for index, packet in enumerate(trace.packet):
        if packet.trusted_packet_sequence_id != 1:
            problems.append(f"packet {index} on sequence {packet.trusted_packet_sequence_id}")
        if packet.sequence_flags & CLEARED:
            tables, valid = {"names": {}, "cats": {}, "ann": {}, "strings": {}}, True
            resets += 1
        if packet.HasField("interned_data"):
            if not valid:
                problems.append(f"packet {index}: interned data before the state was cleared")
                continue
            data = packet.interned_data
            for entries, table, text in [
                (data.event_names, "names", lambda e: e.name),
                (data.event_categories, "cats", lambda e: e.name),
                (data.debug_annotation_names, "ann", lambda e: e.name),
                (data.debug_annotation_string_values, "strings", lambda e: e.str.decode()),
            ]:
                for e in entries:
                    tables[table][e.iid] = text(e)
        if packet.HasField("track_descriptor"):
            d = packet.track_descriptor
            tracks[d.uuid] = d
        if not packet.HasField("track_event"):
            continue
        if packet.sequence_flags & NEEDS and not valid:
            problems.append(f"packet {index} needs the state before it was cleared")
            continue
        e = packet.track_event
        event = {"ts": packet.timestamp, "index": index, "type": e.type, "track": e.track_uuid,
                 "flow_ids": list(e.flow_ids), "terminating": list(e.terminating_flow_ids)}
        if e.HasField("name_iid"):
            event["name"] = tables["names"][e.name_iid]
        event["categories"] = [tables["cats"][c] for c in e.category_iids]
        event["args"] = {tables["ann"][a.name_iid]: annotation_value(a, tables["strings"], tables["ann"])
                         for a in e.debug_annotations}
        if e.HasField("counter_value"):
            event["value"] = e.counter_value
        events.append(event)

    processes, threads = {}, {}
    for d in tracks.values():
        if d.HasField("process"):
            processes[d.process.pid] = d.process.process_name
        if d.HasField("thread"):
            threads[d.thread.tid] = [d.thread.pid, d.thread.thread_name]
            if d.thread.pid == 0 or d.thread.tid == 0:
                problems.append(f"thread track {d.uuid}: pid or tid 0")

    def thread_of(uuid):
        d = tracks.get(uuid)
        if d is None or not d.HasField("thread"):
            problems.append(f"event on track {uuid}, not a described thread track")
            return None
        return d.thread.tid

    events.sort(key=lambda e: (e["ts"], e["index"]))
    slices, counters, flows, stacks, active = [], [], [], {}, {}

    def bind_flows(event, slice_index):
        for f in event["flow_ids"]:
            if f in active:
                flows.append([active[f], slice_index])
            active[f] = slice_index
        for f in event["terminating"]:
            if f not in active:
                problems.append(f"flow {f} ends before it starts (at {event['ts']})")
                continue
            flows.append([active.pop(f), slice_index])

    for e in events:
        if e["type"] == TE.TYPE_COUNTER:
            d = tracks.get(e["track"])
            if d is None or not d.HasField("counter"):
                problems.append(f"counter value on track {e['track']}, not a counter track")
                continue
            counters.append([thread_of(d.parent_uuid), d.name, e["ts"], e["value"]])
            continue
        tid = thread_of(e["track"])
        stack = stacks.setdefault(e["track"], [])
        if e["type"] in (TE.TYPE_SLICE_BEGIN, TE.TYPE_INSTANT):
            instant = e["type"] == TE.TYPE_INSTANT
            slices.append({"tid": tid, "name": e["name"], "category": e["categories"], "ts": e["ts"],
                           "dur": 0 if instant else None, "depth": len(stack), "instant": instant,
                           "args": e["args"]})
            if not instant:
                stack.append(len(slices) - 1)
            bind_flows(e, len(slices) - 1)
        elif e["type"] == TE.TYPE_SLICE_END:
            if not stack:
                problems.append(f"slice end with no slice open on thread {tid} at {e['ts']}")
                continue
            i = stack.pop()
            slices[i]["dur"] = e["ts"] - slices[i]["ts"]
            bind_flows(e, i)
        else:
            problems.append(f"event of type {e['type']}")
    for uuid, stack in stacks.items():
        for i in stack:
            problems.append(f"slice {slices[i]['name']} on thread {thread_of(uuid)} never ends")

    json.dump({"processes": processes, "threads": threads, "slices": slices, "counters": counters,
               "flows": flows, "unterminated_flows": len(active), "problems": problems,
               "packets": len(trace.packet), "resets": resets}, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
