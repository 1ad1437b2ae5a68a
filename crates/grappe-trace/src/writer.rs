//! Writing trace files, block by block.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::format::{
    BLOCK_HEADER, BlockKind, ClockSample, Definition, Encoded, FileHeader, Footer, MAGIC, block_header,
    encode_definitions, encode_events, encode_footer, encode_samples,
};

/// The most events in a block the recorder writes, whatever its buffer.
/// A reader holds a block's encoded bytes until it has checked them all
/// (the checksum covers the whole block), for every rank file it reads at
/// once: 1024 events are about 13 KB, where a 65 536-event buffer written
/// as one block held 850 KB per rank, and a buffer kept to the end
/// (policy `end`) its whole trace. From 4096 to 1024, the tools' peak for
/// 256 ranks fell by 20 MiB (`check` 48 → 28) for 0.15% more bytes
/// (a block header, about 25 bytes, per 1024 events).
pub const RECORDER_BLOCK_EVENTS: usize = 1024;

/// A trace file being written.
#[derive(Debug)]
pub struct TraceWriter {
    file: File,
    path: PathBuf,
    scratch: Vec<u8>,
}

impl TraceWriter {
    /// Creates `path` and writes the magic and the header.
    pub fn create(path: &Path, header: &FileHeader) -> std::io::Result<TraceWriter> {
        let mut file = File::create(path)?;
        let json = serde_json::to_vec(header).map_err(std::io::Error::other)?;
        let mut head = Vec::with_capacity(12 + json.len());
        head.extend_from_slice(MAGIC);
        head.extend_from_slice(&(json.len() as u32).to_le_bytes());
        head.extend_from_slice(&json);
        file.write_all(&head)?;
        Ok(TraceWriter { file, path: path.to_owned(), scratch: Vec::new() })
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes one block: header and payload in a single write, so that a
    /// process killed later never leaves half a block behind it.
    fn write_block(&mut self, kind: BlockKind, fill: impl FnOnce(&mut Vec<u8>)) -> std::io::Result<()> {
        self.write_blocks(|buf| append_block(buf, kind, fill))
    }

    /// Writes the blocks `fill` appends, in a single write.
    fn write_blocks(&mut self, fill: impl FnOnce(&mut Vec<u8>)) -> std::io::Result<()> {
        let mut buf = std::mem::take(&mut self.scratch);
        buf.clear();
        fill(&mut buf);
        let written = self.file.write_all(&buf);
        self.scratch = buf;
        written
    }

    /// Writes a resume point (merged traces: [`crate::resume`]), after
    /// the definitions its events use.
    pub fn write_resume(&mut self, resume: &crate::resume::EncodedResume) -> std::io::Result<()> {
        self.write_block(BlockKind::Resume, |out| crate::resume::encode_resume(resume, out))
    }

    /// Writes an events block.
    pub fn write_events(&mut self, events: impl ExactSizeIterator<Item = Encoded>) -> std::io::Result<()> {
        self.write_block(BlockKind::Events, |out| encode_events(events, out))
    }

    /// Writes a recorder's buffer as events blocks of at most
    /// [`RECORDER_BLOCK_EVENTS`] each, in a single write.
    pub fn write_event_blocks<T>(&mut self, events: &[T], encode: impl Fn(&T) -> Encoded) -> std::io::Result<()> {
        self.write_indexed_event_blocks(events.len(), |i| encode(&events[i]))
    }

    /// [`TraceWriter::write_event_blocks`] of `count` events, the i-th
    /// given by `encode(i)`.
    pub fn write_indexed_event_blocks(
        &mut self,
        count: usize,
        encode: impl Fn(usize) -> Encoded,
    ) -> std::io::Result<()> {
        self.write_blocks(|buf| {
            for from in (0..count).step_by(RECORDER_BLOCK_EVENTS) {
                let part = from..count.min(from + RECORDER_BLOCK_EVENTS);
                append_block(buf, BlockKind::Events, |out| encode_events(part.map(&encode), out));
            }
        })
    }

    /// Writes a definitions block (before the events that use them).
    pub fn write_definitions(&mut self, defs: &[Definition]) -> std::io::Result<()> {
        if defs.is_empty() {
            return Ok(());
        }
        self.write_block(BlockKind::Definitions, |out| encode_definitions(defs, out))
    }

    /// Writes a clock-samples block.
    pub fn write_samples(&mut self, samples: &[ClockSample]) -> std::io::Result<()> {
        self.write_block(BlockKind::ClockSamples, |out| encode_samples(samples, out))
    }

    /// Writes the footer: the rank finished.
    pub fn write_footer(&mut self, footer: &Footer) -> std::io::Result<()> {
        self.write_block(BlockKind::Footer, |out| encode_footer(footer, out))
    }
}

/// Appends a block of `kind` to `buf`: its header, then the payload `fill`
/// appends, which the header's length and checksum cover.
fn append_block(buf: &mut Vec<u8>, kind: BlockKind, fill: impl FnOnce(&mut Vec<u8>)) {
    let at = buf.len();
    buf.resize(at + BLOCK_HEADER, 0);
    fill(buf);
    let header = block_header(kind, &buf[at + BLOCK_HEADER..]);
    buf[at..at + BLOCK_HEADER].copy_from_slice(&header);
}
