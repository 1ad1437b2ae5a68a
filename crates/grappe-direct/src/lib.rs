//! Large files written around the page cache (`O_DIRECT`).
//!
//! grappe writes files of hundreds of megabytes to gigabytes that nobody
//! reads back soon: checkpoint images (read only after a failure) and trace
//! exports (read once by a viewer). Through the page cache the kernel
//! copies each byte into a fresh page and writes it back later; on this VM
//! that costs 0.5–1.5 ns of system time per byte, against almost nothing
//! when the device reads the bytes straight from the program's memory.
//!
//! `O_DIRECT` wants the buffer, the file offset and the length aligned to
//! the device's logical block. So the writer gathers bytes into whole
//! blocks of an [`AlignedBuf`] (or takes aligned whole blocks as they
//! come, without a copy), pads the last block and cuts the file back to
//! its length at the end. Where the filesystem refuses `O_DIRECT` (tmpfs,
//! some network filesystems), it writes through the page cache instead.
//!
//! [`write_behind`] puts the writes on a thread of their own, so that the
//! program goes on filling the next buffer while the device takes the last.
//!
//! No crate does this for a plain `std::fs::File`, hence this one.
#![forbid(unsafe_code)]

mod behind;
mod buf;
mod writer;

pub use behind::{BUFFERS, Behind, write_behind};
pub use buf::{ALIGN, AlignedBuf};
pub use writer::DirectWriter;

use std::io;
use std::path::Path;

/// Writes `bytes` as the whole content of a new file at `path` and syncs
/// it, bypassing the page cache where the filesystem allows.
pub fn write_synced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut w = DirectWriter::create(path)?;
    io::Write::write_all(&mut w, bytes)?;
    w.finish()?.sync_all()
}
