//! The bottom layer of grappe: how bytes move between ranks.
//!
//! The model is the PUT remote-write primitive of MPC-OS (Fenyo, 2001),
//! transposed to user space:
//!
//! * a **host segment** ([`Segment`], laid out by [`HostLayout`]) is memory that
//!   every rank of the host maps: anonymous memory when the ranks are threads
//!   of one process, a `/dev/shm` file when they are processes;
//! * a **mailbox** per ordered pair of ranks ([`ring::Producer`] /
//!   [`ring::Consumer`]) carries eager records and 8-byte short messages, and
//!   its consumer side is the completion queue the receiver polls;
//! * **remote regions** ([`put::RemoteRegion`])
//!   describe user buffers; [`put::Route::put`] and [`put::Route::get`] move
//!   bytes with a single copy: `memcpy` inside a process, cross-memory attach
//!   (`process_vm_writev` / `process_vm_readv`) between processes;
//! * a **doorbell** ([`Doorbell`]) lets a waiting rank sleep on a futex and be
//!   woken by the sender, so waiting never burns a core for long.
//!
//! Everything here is below the message-passing semantics: no tags, no
//! matching. The protocols (eager, rendezvous) live in `grappe-proto` and are
//! written once over the [`link`] seam: a peer of this host is reached
//! through its rings, a peer of another host through a TCP connection
//! (`grappe-fabric-tcp`), both as records.
#![warn(unsafe_op_in_unsafe_fn, missing_docs)]

pub mod copy;
pub mod doorbell;
pub mod error;
pub mod host;
pub mod layout;
pub mod link;
mod primitive;
pub mod put;
pub mod ring;
pub mod segment;

pub use doorbell::Doorbell;
pub use error::FabricError;
pub use host::HostMemory;
pub use layout::{HostLayout, LayoutError, LayoutParams, RankControl};
pub use segment::Segment;

/// Size of a cache line on the machines grappe targets (x86-64, aarch64).
///
/// Every structure two ranks write is padded to this so that one rank's
/// writes never invalidate another rank's line (false sharing).
pub const CACHE_LINE: usize = 64;
