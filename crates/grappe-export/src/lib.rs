//! Exports of grappe traces to the formats of existing viewers: the
//! causal stream of `grappe_analysis`, read once and written in one
//! format, each format a module of its own.
//!
//! * [`chrome`]: Chrome trace-event JSON (Perfetto, `chrome://tracing`),
//!   written as fast as the stream is read;
//! * [`perfetto`]: Perfetto's own protobuf trace format (track events),
//!   which Perfetto loads faster and in less memory than the JSON;
//! * [`paje`]: the Pajé trace format (ViTE, pajeng's `pj_dump`);
//! * [`picl`]: "new" PICL records, the input of ParaGraph (the route
//!   Tape/PVM's `t2np` took);
//! * `otf2` (cargo feature `otf2`, on by default): OTF2 archives (Vampir,
//!   the Score-P tools), written by the real OTF2 library.
//!
//! The byte-stream exporters read one
//! [`CausalStream`](grappe_analysis::CausalStream) once and write to any
//! [`std::io::Write`] through the shared buffer (`sink`); all give each
//! event the same display name ([`display_name`]) and shape. Pajé and PICL
//! need their records in time order, which the stream is only nearly in:
//! they go through a bounded reorder buffer (`order`). [`Format`] lists the
//! formats by name and says how each is written: a new one is a module
//! and its entry there.
#![cfg_attr(not(feature = "otf2"), forbid(unsafe_code))]
// With OTF2, its module allows unsafe code in the three submodules that
// call the C library (see `otf2`); everything else still refuses it.
#![cfg_attr(feature = "otf2", deny(unsafe_code))]
#![warn(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

mod args;
pub mod chrome;
mod format;
mod order;
#[cfg(feature = "otf2")]
pub mod otf2;
pub mod paje;
pub mod perfetto;
pub mod picl;
mod places;
mod shape;
mod sink;
mod summary;

pub use chrome::{write_chrome, write_chrome_with_sites};
pub use format::{Format, StreamExporter, Unavailable, Writer};
pub use paje::{write_paje, write_paje_with_sites};
pub use perfetto::write_perfetto;
pub use picl::write_picl;
pub use shape::{FAILED_MARK, display_name};
pub use summary::ExportSummary;
