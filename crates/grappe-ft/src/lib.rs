//! Fault tolerance for grappe jobs (MPICH-V's coordinated checkpointing).
//!
//! This first layer is storage: the checkpoint server (`grappe
//! checkpoint-server`) that keeps the images of a job's ranks wave by wave,
//! and the client the ranks and the launcher talk to it with.
//!
//! * [`wire`]: the framed protocol on one TCP connection: a challenge
//!   handshake (HMAC-SHA256 of the job's secret, which never travels),
//!   then requests. An image streams as chunks closed by a trailer with
//!   its size and CRC-32, since the sender may not know its size up front.
//! * [`store`]: images on disk, `DIR/<job>/wave-<n>/rank-<r>.img`, each
//!   written to a `.partial` file, fsynced and renamed before the server
//!   acknowledges it; a wave is committed by a durable marker; the newest
//!   committed wave survives every clean-up.
//! * [`server`] and [`client`].
//!
//! On top, the waves: [`wave::Checkpointer`] takes coordinated checkpoints
//! of the application's state (serde) at the program's checkpoint points,
//! blocking (pcl) or not (vcl), stores them in [`local`] copies and on the
//! servers, commits them, and restores the newest committed wave every
//! rank can read. The launcher's [`schedule::WaveScheduler`] asks for the
//! waves.
#![forbid(unsafe_code)]

pub mod client;
pub mod error;
pub mod local;
pub mod schedule;
pub mod server;
pub mod settings;
pub mod store;
pub mod wave;
pub mod wire;

pub use client::{CheckpointClient, WaveInfo};
pub use error::{FtError, Result};
pub use schedule::WaveScheduler;
pub use server::{CheckpointServer, ServerConfig};
pub use settings::{FtSettings, Protocol};
pub use wave::{Checkpointer, FtStats};
