//! grappe's libfabric link: records between two ranks of different hosts
//! over libfabric's reliable datagram endpoints (`FI_EP_RDM`).
//!
//! The same surface as `grappe-fabric-tcp`'s links, so that the engine can
//! carry its records over either: a [`Link`] is used like a mailbox pair,
//! [`Link::try_push`] refuses when too much is waiting (as a full ring
//! does), [`Link::peek`] / [`Link::consume`] read the inbound records in
//! order, and [`Link::split`] cuts it into a [`LinkOut`] and a [`LinkIn`].
//!
//! * [`Endpoint`]: one per process (or per thread that drives links): the
//!   provider's endpoint, its address ([`Endpoint::name`], to publish
//!   where peers find it) and the links made to peers' addresses
//!   ([`Endpoint::link`]);
//! * readiness: the endpoint's completion queue waits on a file
//!   descriptor ([`Endpoint::raw_fd`], `FI_WAIT_FD`) that an epoll
//!   watcher can arm, once [`Endpoint::try_wait`] (`fi_trywait`) says
//!   nothing is left to read; threads that share an endpoint learn from
//!   [`Endpoint::on_arrival`] which links another one's progress brought
//!   news for;
//! * flow control by credits over pre-posted receive buffers, so that no
//!   data message ever waits in the provider for a buffer; records larger
//!   than a fragment travel as several messages (no RMA rendezvous of
//!   the link's own: the provider may use one for a large message);
//! * a peer that goes away: its `Bye` ends the stream cleanly; a peer
//!   whose process or host is gone breaks the link once its messages have
//!   not moved for [`Config::lost_after`], an idle link sending pings so
//!   that there are messages to watch.
//!
//! Providers (libfabric 1.17, Debian's): `tcp;ofi_rxm` is the one to
//! use; its sends to a peer whose process is gone never fail (it tries
//! to connect again), hence the loss timeout. `udp;ofi_rxd` works too,
//! but its completion queue has no descriptor (an owner must poll:
//! [`Endpoint::raw_fd`] is `None` and [`Endpoint::try_wait`] never allows
//! sleeping) and it moves large records at a small fraction of the rate.
//!
//! Built only with the cargo feature `libfabric`, which needs libfabric
//! (1.17 or later) and libclang; without it the crate is empty.
//!
//! `ofi-peer`, this crate's program, is the other end of a link for the
//! tests between two processes and for checking a provider by hand.
#![warn(unsafe_op_in_unsafe_fn, missing_docs)]
#![cfg_attr(not(feature = "libfabric"), forbid(unsafe_code))]
// Without the feature, the items the documentation names are not built.
#![cfg_attr(not(feature = "libfabric"), allow(rustdoc::broken_intra_doc_links))]

#[cfg(feature = "libfabric")]
mod endpoint;
#[cfg(feature = "libfabric")]
mod error;
#[cfg(feature = "libfabric")]
mod inbound;
#[cfg(feature = "libfabric")]
mod link;
#[cfg(feature = "libfabric")]
mod sys;
#[cfg(feature = "libfabric")]
mod wire;

#[cfg(feature = "libfabric")]
pub use endpoint::{ArrivalFn, CONTROL_DEPTH, Config, Endpoint, MAX_END, Matching, providers};
#[cfg(feature = "libfabric")]
pub use error::{Ends, LinkError};
#[cfg(feature = "libfabric")]
pub use inbound::INBOUND_LIMIT;
#[cfg(feature = "libfabric")]
pub use link::{Incoming, Link, LinkIn, LinkOut, Received};
#[cfg(feature = "libfabric")]
pub use name::{NameError, name_from_text, name_to_text};
#[cfg(feature = "libfabric")]
pub use wire::{HEADER_BYTES, NAME_PREFIX_BYTES};

#[cfg(feature = "libfabric")]
mod name;

/// Protocol-defined words carried by every record (kind, tag, context...).
/// The link never interprets them.
pub type Meta = [u32; 4];

/// Payload bytes waiting for credits or for the provider past which
/// [`Link::try_push`] refuses new records until the peer reads.
pub const BACKLOG_LIMIT: usize = 8 << 20;

/// The largest payload a record may have. A larger one is refused when
/// pushed.
pub const MAX_PAYLOAD: usize = 64 << 20;
