//! Exports of grappe traces to the formats of existing viewers: the
//! causal stream of `grappe_analysis`, written once, each format a module.
//!
//! * [`chrome`]: Chrome trace-event JSON (Perfetto, `chrome://tracing`),
//!   written as fast as the stream is read;
//! * [`paje`]: the Pajé trace format (ViTE, pajeng's `pj_dump`);
//! * [`picl`]: "new" PICL records, the input of ParaGraph (the route
//!   Tape/PVM's `t2np` took).
//!
//! Every exporter reads one [`CausalStream`](grappe_analysis::CausalStream) once and
//! writes to any [`std::io::Write`]; all give each event the same display
//! name ([`display_name`]). Pajé and PICL need their records in time order,
//! which the stream is only nearly in: they go through a bounded reorder
//! buffer (`order`).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod chrome;
mod order;
pub mod paje;
pub mod picl;
mod shape;
mod sink;
mod summary;

pub use chrome::{write_chrome, write_chrome_with_sites};
pub use paje::{write_paje, write_paje_with_sites};
pub use picl::write_picl;
pub use shape::{FAILED_MARK, display_name};
pub use summary::ExportSummary;
