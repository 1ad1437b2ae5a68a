//! The `args` of a Chrome slice: a call's attributes, what Perfetto shows
//! when the slice is selected.

use grappe_analysis::{Message, SendSide};
use grappe_trace::{ANY, Body, Completion, Event};

use crate::sink::Cursor;

/// `,"args":{...}` of a call, its site last if given (no args for a
/// flush).
#[inline(always)]
pub(super) fn args(c: &mut Cursor, body: &Body, message: &Message, site: Option<&str>) {
    match *body {
        Body::Send { dest, tag, comm, bytes, .. } | Body::Isend { dest, tag, comm, bytes, .. } => {
            head(c, comm);
            peer(c, dest);
            int(c, b",\"tag\":", tag as i64);
            uint(c, b",\"bytes\":", bytes);
            if let Body::Isend { request, .. } = *body {
                uint(c, b",\"request\":", request);
            }
        }
        Body::Recv { src, tag, comm, bytes, arrived, sendrecv, failed } => {
            head(c, comm);
            peer(c, src);
            received_tag(c, b",\"tag\":", tag, failed);
            uint(c, b",\"bytes\":", bytes);
            if !failed {
                flag(c, b",\"arrived\":", arrived);
            }
            if sendrecv {
                c.bytes(b",\"sendrecv\":true");
            }
        }
        Body::Irecv { src, tag, comm, request } => {
            head(c, comm);
            peer(c, src);
            selector(c, b",\"tag\":", tag);
            uint(c, b",\"request\":", request);
        }
        Body::Wait { request, comm, completion, failed } => {
            head(c, comm);
            uint(c, b",\"request\":", request);
            if failed { waited_for(c, &completion) } else { completed(c, &completion) }
        }
        Body::Test { request, comm, completion, .. } => {
            head(c, comm);
            uint(c, b",\"request\":", request);
            match completion {
                Some(done) => completed(c, &done),
                None => c.bytes(b",\"completed\":false"),
            }
        }
        Body::Probe { src, tag, comm, found, .. } | Body::Iprobe { src, tag, comm, found, .. } => {
            head(c, comm);
            peer(c, src);
            selector(c, b",\"tag\":", tag);
            match found {
                Some(done) => completed(c, &done),
                None => c.bytes(b",\"found\":false"),
            }
        }
        Body::Collective { comm, root, bytes, .. } => {
            head(c, comm);
            if root != ANY {
                uint(c, b",\"root\":", root as u64);
            }
            uint(c, b",\"bytes\":", bytes);
        }
        Body::CommCreate { comm, parent, ref members } => {
            head(c, comm);
            uint(c, b",\"parent\":", parent as u64);
            c.bytes(b",\"members\":[");
            for (i, &m) in members.iter().enumerate() {
                if i > 0 {
                    c.byte(b',');
                }
                c.uint(m as u64);
            }
            c.byte(b']');
        }
        _ => return,
    }
    if body.failed() {
        c.bytes(b",\"failed\":true");
    }
    match message {
        Message::Sent { id, .. } | Message::Received { send: SendSide { id, .. }, .. } => uint(c, b",\"msg\":", *id),
        _ => {}
    }
    if let Some(site) = site {
        c.bytes(b",\"site\":");
        c.json_str(site);
    }
    c.byte(b'}');
}

#[inline(always)]
fn head(c: &mut Cursor, comm: u32) {
    c.bytes(b",\"args\":{\"comm\":");
    c.uint(comm as u64);
}

#[inline(always)]
fn uint(c: &mut Cursor, key: &[u8], v: u64) {
    c.bytes(key);
    c.uint(v);
}

#[inline(always)]
fn int(c: &mut Cursor, key: &[u8], v: i64) {
    c.bytes(key);
    c.int(v);
}

#[inline(always)]
fn flag(c: &mut Cursor, key: &[u8], v: bool) {
    c.bytes(key);
    if v { c.bytes(b"true") } else { c.bytes(b"false") }
}

/// A source or tag selector: a number, or "any".
#[inline(always)]
fn selector(c: &mut Cursor, key: &[u8], v: u32) {
    c.bytes(key);
    if v == ANY { c.bytes(b"\"any\"") } else { c.uint(v as u64) }
}

#[inline(always)]
fn peer(c: &mut Cursor, rank: u32) {
    selector(c, b",\"peer\":", rank);
}

/// What a failed wait waited for: a send or a receive, its peer and tag
/// (see `grappe_trace::Body::Wait`).
#[cold]
fn waited_for(c: &mut Cursor, request: &Completion) {
    c.bytes(if request.is_recv { b",\"waited_for\":\"recv\"" } else { b",\"waited_for\":\"send\"" });
    peer(c, request.src);
    received_tag(c, b",\"tag\":", request.tag, true);
}

/// A receive's tag: the message's, or for a failed receive the one it
/// asked for ("any" for the wildcard).
#[inline(always)]
fn received_tag(c: &mut Cursor, key: &[u8], tag: i32, failed: bool) {
    if failed { selector(c, key, tag as u32) } else { int(c, key, tag as i64) }
}

/// What a wait, test or probe completed: for a receive, the message.
#[inline(always)]
fn completed(c: &mut Cursor, done: &Completion) {
    if !done.is_recv {
        c.bytes(b",\"completed\":\"send\"");
        return;
    }
    c.bytes(b",\"completed\":\"recv\"");
    peer(c, done.src);
    int(c, b",\"tag\":", done.tag as i64);
    uint(c, b",\"bytes\":", done.bytes);
    flag(c, b",\"arrived\":", done.arrived);
}

/// `,"args":{...}` of a send and the receive that is its second half,
/// under the names `MPI_Sendrecv` gives its parameters.
pub(super) fn sendrecv_args(c: &mut Cursor, send: (&Event, &Message), recv: (&Event, &Message), site: Option<&str>) {
    let ((s, sent), (r, received)) = (send, recv);
    let (
        Body::Send { dest, tag, comm, bytes, failed: send_failed, .. },
        Body::Recv { src, tag: rtag, comm: rcomm, bytes: rbytes, arrived, failed: recv_failed, .. },
    ) = (s.body, r.body)
    else {
        return;
    };
    head(c, comm);
    selector(c, b",\"dest\":", dest);
    int(c, b",\"sendtag\":", tag as i64);
    uint(c, b",\"sendbytes\":", bytes);
    if let Message::Sent { id, .. } = *sent {
        uint(c, b",\"send_msg\":", id);
    }
    selector(c, b",\"source\":", src);
    received_tag(c, b",\"recvtag\":", rtag, recv_failed);
    uint(c, b",\"recvbytes\":", rbytes);
    if !recv_failed {
        flag(c, b",\"arrived\":", arrived);
    }
    if let Message::Received { send: SendSide { id, .. }, .. } = *received {
        uint(c, b",\"recv_msg\":", id);
    }
    if rcomm != comm {
        uint(c, b",\"recvcomm\":", rcomm as u64);
    }
    // Which half failed: a send that went out may have been received.
    if send_failed {
        c.bytes(b",\"send_failed\":true");
    }
    if recv_failed {
        c.bytes(b",\"recv_failed\":true");
    }
    if let Some(site) = site {
        c.bytes(b",\"site\":");
        c.json_str(site);
    }
    c.byte(b'}');
}
