//! Writing trace files, block by block.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::format::{
    BlockKind, ClockSample, Definition, Encoded, FileHeader, Footer, MAGIC, block_header, encode_definitions,
    encode_events, encode_footer, encode_samples,
};

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
        let mut buf = std::mem::take(&mut self.scratch);
        buf.clear();
        buf.resize(crate::format::BLOCK_HEADER, 0);
        fill(&mut buf);
        let header = block_header(kind, &buf[crate::format::BLOCK_HEADER..]);
        buf[..crate::format::BLOCK_HEADER].copy_from_slice(&header);
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
