//! A call's attributes, what a viewer shows when its slice is selected:
//! which keys each call has and their values, once for every format that
//! writes them (Chrome's `args` object, Perfetto's debug annotations).
//!
//! The keys are Chrome's: a [`Key`] carries its name and its JSON form
//! (`,"tag":`), both known at compile time, so that the Chrome writer, on
//! the hot path, copies one literal per key as it did when it wrote them
//! by hand.

use grappe_analysis::{Message, SendSide};
use grappe_trace::{ANY, Body, Completion, Event};

/// An attribute's name, and how Chrome JSON writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Key {
    pub(crate) name: &'static str,
    /// `,"NAME":` (the first key of a call, the communicator, opens the
    /// object: `,"args":{"comm":`).
    pub(crate) json: &'static [u8],
}

macro_rules! key {
    ($name:literal) => {
        Key { name: $name, json: concat!(",\"", $name, "\":").as_bytes() }
    };
}

/// The first attribute of every call that has some.
pub(crate) const COMM: Key = Key { name: "comm", json: b",\"args\":{\"comm\":" };

/// Where a user region or point is in the program's source.
pub(crate) const LOCATION: Key = key!("location");

/// Where a call's attributes are written, in order.
pub(crate) trait Args {
    fn uint(&mut self, key: Key, v: u64);
    fn int(&mut self, key: Key, v: i64);
    fn flag(&mut self, key: Key, v: bool);
    /// A fixed word (`any`, `recv`): no character to escape.
    fn word(&mut self, key: Key, v: &'static str);
    /// Any text (a source location).
    fn text(&mut self, key: Key, v: &str);
    /// A list of ranks.
    fn ranks(&mut self, key: Key, v: &[u32]);
    /// After the last attribute.
    fn end(&mut self);
}

/// The attributes of a call, its site last if given; nothing for a call
/// with none (init, finalize, a flush).
#[inline(always)]
pub(crate) fn call_args(a: &mut impl Args, body: &Body, message: &Message, site: Option<&str>) {
    match *body {
        Body::Send { dest, tag, comm, bytes, .. } | Body::Isend { dest, tag, comm, bytes, .. } => {
            a.uint(COMM, comm as u64);
            peer(a, dest);
            a.int(key!("tag"), tag as i64);
            a.uint(key!("bytes"), bytes);
            if let Body::Isend { request, .. } = *body {
                a.uint(key!("request"), request);
            }
        }
        Body::Recv { src, tag, comm, bytes, arrived, sendrecv, failed, any_source } => {
            a.uint(COMM, comm as u64);
            peer(a, src);
            received_tag(a, key!("tag"), tag, failed);
            a.uint(key!("bytes"), bytes);
            if !failed {
                a.flag(key!("arrived"), arrived);
            }
            if sendrecv {
                a.flag(key!("sendrecv"), true);
            }
            if any_source {
                a.flag(key!("any_source"), true);
            }
        }
        Body::Irecv { src, tag, comm, request } => {
            a.uint(COMM, comm as u64);
            peer(a, src);
            selector(a, key!("tag"), tag);
            a.uint(key!("request"), request);
        }
        Body::Wait { request, comm, completion, failed } => {
            a.uint(COMM, comm as u64);
            a.uint(key!("request"), request);
            if failed { waited_for(a, &completion) } else { completed(a, &completion) }
        }
        Body::Test { request, comm, completion, .. } => {
            a.uint(COMM, comm as u64);
            a.uint(key!("request"), request);
            match completion {
                Some(done) => completed(a, &done),
                None => a.flag(key!("completed"), false),
            }
        }
        Body::Probe { src, tag, comm, found, .. } | Body::Iprobe { src, tag, comm, found, .. } => {
            a.uint(COMM, comm as u64);
            peer(a, src);
            selector(a, key!("tag"), tag);
            match found {
                Some(done) => completed(a, &done),
                None => a.flag(key!("found"), false),
            }
        }
        Body::Collective { comm, root, bytes, .. } => {
            a.uint(COMM, comm as u64);
            if root != ANY {
                a.uint(key!("root"), root as u64);
            }
            a.uint(key!("bytes"), bytes);
        }
        Body::CommCreate { comm, parent, ref members } => {
            a.uint(COMM, comm as u64);
            a.uint(key!("parent"), parent as u64);
            a.ranks(key!("members"), members);
        }
        _ => return,
    }
    if body.failed() {
        a.flag(key!("failed"), true);
    }
    match message {
        Message::Sent { id, .. } | Message::Received { send: SendSide { id, .. }, .. } => a.uint(key!("msg"), *id),
        _ => {}
    }
    if let Some(site) = site {
        a.text(key!("site"), site);
    }
    a.end();
}

/// A source or tag selector: a number, or "any".
#[inline(always)]
fn selector(a: &mut impl Args, key: Key, v: u32) {
    if v == ANY { a.word(key, "any") } else { a.uint(key, v as u64) }
}

#[inline(always)]
fn peer(a: &mut impl Args, rank: u32) {
    selector(a, key!("peer"), rank);
}

/// What a failed wait waited for: a send or a receive, its peer and tag
/// (see `grappe_trace::Body::Wait`).
#[cold]
fn waited_for(a: &mut impl Args, request: &Completion) {
    a.word(key!("waited_for"), if request.is_recv { "recv" } else { "send" });
    peer(a, request.src);
    received_tag(a, key!("tag"), request.tag, true);
}

/// A receive's tag: the message's, or for a failed receive the one it
/// asked for ("any" for the wildcard).
#[inline(always)]
fn received_tag(a: &mut impl Args, key: Key, tag: i32, failed: bool) {
    if failed { selector(a, key, tag as u32) } else { a.int(key, tag as i64) }
}

/// What a wait, test or probe completed: for a receive, the message.
#[inline(always)]
fn completed(a: &mut impl Args, done: &Completion) {
    if !done.is_recv {
        a.word(key!("completed"), "send");
        return;
    }
    a.word(key!("completed"), "recv");
    peer(a, done.src);
    a.int(key!("tag"), done.tag as i64);
    a.uint(key!("bytes"), done.bytes);
    a.flag(key!("arrived"), done.arrived);
}

/// The attributes of a send and the receive that is its second half,
/// under the names `MPI_Sendrecv` gives its parameters.
pub(crate) fn sendrecv_args(a: &mut impl Args, send: (&Event, &Message), recv: (&Event, &Message), site: Option<&str>) {
    let ((s, sent), (r, received)) = (send, recv);
    let (
        Body::Send { dest, tag, comm, bytes, failed: send_failed, .. },
        Body::Recv { src, tag: rtag, comm: rcomm, bytes: rbytes, arrived, failed: recv_failed, .. },
    ) = (s.body, r.body)
    else {
        return;
    };
    a.uint(COMM, comm as u64);
    selector(a, key!("dest"), dest);
    a.int(key!("sendtag"), tag as i64);
    a.uint(key!("sendbytes"), bytes);
    if let Message::Sent { id, .. } = *sent {
        a.uint(key!("send_msg"), id);
    }
    selector(a, key!("source"), src);
    received_tag(a, key!("recvtag"), rtag, recv_failed);
    a.uint(key!("recvbytes"), rbytes);
    if !recv_failed {
        a.flag(key!("arrived"), arrived);
    }
    if let Message::Received { send: SendSide { id, .. }, .. } = *received {
        a.uint(key!("recv_msg"), id);
    }
    if rcomm != comm {
        a.uint(key!("recvcomm"), rcomm as u64);
    }
    // Which half failed: a send that went out may have been received.
    if send_failed {
        a.flag(key!("send_failed"), true);
    }
    if recv_failed {
        a.flag(key!("recv_failed"), true);
    }
    if let Some(site) = site {
        a.text(key!("site"), site);
    }
    a.end();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_s_json_form_is_its_name_quoted() {
        let tag = key!("tag");
        assert_eq!((tag.name, tag.json), ("tag", &b",\"tag\":"[..]));
        assert_eq!(COMM.name, "comm");
        assert!(COMM.json.ends_with(b"{\"comm\":"));
    }
}
