//! Requests in flight, as the engine tracks them.

use crate::wire::Envelope;
use crate::{Error, OwnedBytes, Status};

/// Identifies a pending request of one engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RequestId(pub(crate) usize);

/// A finished request: the status, and the buffer for receives that asked
/// the runtime to allocate it.
#[derive(Debug)]
pub struct Completion {
    /// Source, tag and size (for sends: the destination's view is not
    /// known, so source is the sender itself and bytes the bytes sent).
    pub status: Status,
    /// The received bytes, for receives posted with [`RecvTarget::Allocate`].
    pub data: Option<OwnedBytes>,
    /// For a receive: the message had already arrived when the receive was
    /// posted (Tape/PVM's `arrived` flag, used by probe-effect correction).
    pub arrived: bool,
}

/// How a non-blocking call started: already finished, or pending.
#[derive(Debug)]
pub enum Started {
    /// Finished on the spot (eager send pushed; receive matched a message
    /// that had already arrived).
    Done(Completion),
    /// Pending; wait or test it.
    Pending(RequestId),
}

/// Where a receive puts the message.
#[derive(Debug, Clone, Copy)]
pub enum RecvTarget {
    /// A caller buffer that stays valid until the request completes.
    Buffer {
        /// First byte.
        ptr: *mut u8,
        /// Capacity in bytes.
        cap: usize,
    },
    /// Allocate a buffer of the message's size, aligned to `align`.
    Allocate {
        /// Alignment of the allocation.
        align: usize,
    },
}

pub(crate) enum Request {
    Send(SendReq),
    Recv(RecvReq),
    /// A non-blocking collective; its schedule is in the book's list of
    /// running ones while it runs.
    Collective(crate::schedule::CollectiveState),
}

pub(crate) struct SendReq {
    pub dest: usize,
    pub env: Envelope,
    pub data: *const u8,
    pub len: usize,
    /// Owned data (hand-over, or kept alive for a copy path).
    pub owned: Option<OwnedBytes>,
    pub state: SendState,
    /// A synchronous send (MPI's `MPI_Ssend`): it goes by rendezvous
    /// whatever its size, so it completes only once the receiver matched it.
    pub sync: bool,
}

pub(crate) enum SendState {
    /// Not yet in the mailbox: ring full, no free slot, or behind earlier
    /// sends to the same destination.
    Queued,
    /// RTS sent; the receiver will accept and copy. With
    /// [`Rts::NO_SLOT`](crate::wire::Rts::NO_SLOT) the send completes when
    /// the receiver's FIN arrives.
    Offered {
        slot: u32,
    },
    /// Fragments pushed through the mailbox so far.
    Staging {
        sent: usize,
    },
    /// Pulled by its receiver on another host (see `engine/pull.rs`):
    /// `sent` bytes of it are out, in records naming the receive `key`.
    Pulled {
        key: u64,
        sent: usize,
    },
    /// Offered, then given up by its poster before the receiver matched:
    /// its buffer may be gone, and the receiver, which sees this rank no
    /// longer running, refuses to copy. Kept until the receiver is done
    /// with the slot (or the FIN that a copy finished just before arrives),
    /// so that neither the slot nor the request's number is reused early.
    Withdrawn {
        slot: u32,
    },
    /// A synchronous send whose bytes are all out (as a message or its
    /// fragments, to a rank it cannot offer a rendezvous): it completes
    /// when the receiver's FIN says a receive took it.
    AwaitingAck,
    Done,
    Failed(Error),
}

/// What became of one attempt to put a queued send into the mailbox: the
/// step its [`SendState`] takes next (`Queued` stays, or becomes `Done`,
/// `Offered` or `Staging`). The eager, hand-over and rendezvous pushes
/// (`engine/send.rs`) and the staged one (`engine/staging.rs`) all answer
/// with it.
pub(crate) enum Push {
    /// The whole message left (eager, hand-over, last fragment): `Done`.
    Finished,
    /// RTS out, in this slot: the receiver will copy.
    Offered(u32),
    /// Fragments out up to this byte, more to come.
    Partial(usize),
    /// Nothing moved: ring full or no free slot; the send stays `Queued`.
    Blocked,
    /// A synchronous send's bytes are all out; its FIN will end it.
    AwaitingAck,
    /// The link to the destination broke: nothing will move again.
    Broken(crate::Error),
}

pub(crate) struct RecvReq {
    /// The message was already there when the receive was posted.
    pub arrived: bool,
    pub ctx: u32,
    /// World rank of the source; `None` = any source.
    pub src: Option<usize>,
    /// `None` = any tag.
    pub tag: Option<i32>,
    pub target: RecvTarget,
    pub state: RecvState,
}

pub(crate) enum RecvState {
    Posted,
    /// Rendezvous accepted; chunks are being copied.
    Copying(Box<Copying>),
    /// Fragments arriving through the mailbox; `got` bytes so far.
    Staging {
        status: Status,
        got: usize,
        data: Option<OwnedBytes>,
    },
    Done {
        status: Status,
        data: Option<OwnedBytes>,
    },
    Failed(Error),
}

/// A rendezvous receive in progress.
pub(crate) struct Copying {
    pub status: Status,
    /// World rank of the sender.
    pub sender: usize,
    /// The sender's slot (cooperative copy), or `None`: we copy alone and
    /// answer with a FIN naming `request`.
    pub slot: Option<u32>,
    /// The sender's buffer.
    pub source: grappe_fabric::put::RemoteRegion,
    /// The sender's request id, for the FIN.
    pub request: u64,
    /// Our buffer and the bytes we take (less than the message when
    /// truncated; then `truncated_to` is set).
    pub dst: *mut u8,
    pub take: usize,
    pub truncated_to: Option<usize>,
    pub data: Option<OwnedBytes>,
}

impl SendReq {
    /// Makes the send independent of its poster's buffer: the bytes still
    /// to go out are read from a copy the request owns from now on.
    pub fn own_data(&mut self) {
        if self.owned.is_some() {
            return;
        }
        let mut copy = OwnedBytes::alloc(self.len, 1);
        // SAFETY: the poster keeps `data` valid for `len` bytes until the
        // request completes or is given up, which is happening now.
        copy.as_mut_slice().copy_from_slice(unsafe { std::slice::from_raw_parts(self.data, self.len) });
        self.data = copy.as_slice().as_ptr();
        self.owned = Some(copy);
    }
}

impl RecvReq {
    #[inline]
    pub fn matches(&self, ctx: u32, src: usize, tag: i32) -> bool {
        self.ctx == ctx && self.src.is_none_or(|s| s == src) && self.tag.is_none_or(|t| t == tag)
    }
}
