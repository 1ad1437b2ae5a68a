//! grappe's TCP link: records between two ranks of different hosts.
//!
//! Ranks of one host exchange records through shared-memory mailboxes
//! (`grappe-fabric`'s rings). Ranks on different hosts use one TCP
//! connection per pair instead, carrying records both ways: a [`Link`] is
//! used like a mailbox pair — [`Link::try_push`] refuses when too much is
//! waiting, as a full ring does, and [`Link::peek`] / [`Link::consume`] read
//! the inbound records in order.
//!
//! * [`frame`]: a record on the wire, a checked 24-byte header and the
//!   payload;
//! * [`inbound`]: the receiving buffer that cuts the stream into records;
//! * [`Listener`] and [`connect`]: connection set-up, in which both sides
//!   prove that they hold the job's [`Secret`];
//! * [`pairing`]: connections made on demand, on a rank's first record to
//!   a peer, whichever side starts;
//! * [`Watch`]: a thread that turns socket readiness into a callback, so a
//!   rank asleep on its futex wakes when a socket has data;
//! * [`shape`]: a slower network emulated inside a link (added latency, a
//!   rate cap), and [`Cutter`], a network failure emulated by cutting a
//!   link's connection.
//!
//! A record is protocol words ([`Meta`]) that the link never interprets and
//! a payload of bytes, as in the shared-memory mailboxes.
#![warn(unsafe_op_in_unsafe_fn, missing_docs)]

mod auth;
pub mod error;
pub mod frame;
pub mod inbound;
mod link;
pub mod pairing;
pub mod shape;
mod split;
mod watch;

pub use auth::connect_offering;
pub use auth::{Hello, Listener, MAC_BYTES, Secret, connect};
pub use error::{Cut, LinkError, Phase, SecretError};
pub use frame::{FrameError, FrameHeader, HEADER_BYTES, decode_header, encode_header};
pub use link::{Cutter, Incoming, Link};
pub use pairing::{PairState, Pairing, Step};
pub use shape::Shaping;
pub use split::{LinkIn, LinkOut, Received};
pub use watch::{Interest, ReadyFn, STOP_TOKEN, Watch};

/// Protocol-defined words carried by every record (kind, tag, context...).
/// The link never interprets them.
pub type Meta = [u32; 4];

/// Bytes waiting for the socket past which [`Link::try_push`] refuses new
/// records until the peer reads.
pub const BACKLOG_LIMIT: usize = 8 << 20;

/// The largest payload a record may have. A larger one is refused when
/// pushed, and a frame announcing one is refused when received.
pub const MAX_PAYLOAD: usize = 64 << 20;
