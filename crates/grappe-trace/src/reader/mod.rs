//! Reading trace files: one block at a time, so memory stays bounded by
//! the largest block whatever the trace size, or a batch of events at a
//! time ([`TraceFile::next_batch_into`]), so that a reader of many ranks
//! holds a block's encoded bytes and a few decoded events per rank.
//!
//! A file cut short (its rank was killed, the disk filled up) is not an
//! error: everything up to the last complete block is read and
//! [`TraceFile::ending`] says where the file stops and why. Bytes that are
//! not what the format says (bad magic, checksum mismatch, undecodable
//! payload) are an error naming the file, the offset and what was expected;
//! so is a block length that runs past the end of the file over whole
//! blocks, which a cut would have hidden.

use std::fs::{File, FileType, OpenOptions};
use std::io::{BufReader, ErrorKind, Read, Seek, SeekFrom};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use rustc_hash::{FxHashMap, FxHashSet};

use crate::event::{Body, Event};
use crate::format::{
    BLOCK_HEADER, BLOCK_MAGIC, BlockKind, ClockSample, Definition, Encoded, EventDecoder, FileHeader, Footer, MAGIC,
    MAX_BLOCK, OLDEST_READABLE, TakeEncoded, VERSION, decode_definitions, decode_footer, decode_samples,
};
use crate::interned::{Members, Text};
use crate::raw::{DecodeError, Definitions};
use crate::site::Site;

mod resume;
#[cfg(test)]
mod tests;

/// What is wrong with a trace file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The system's answer.
        #[source]
        source: std::io::Error,
    },
    /// The path is not a regular file (a FIFO, a device, a directory):
    /// traces are read from regular files only, as reading a FIFO would
    /// wait for a writer.
    #[error("{path}: a {kind}, not a regular file (trace files are regular files)")]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is.
        kind: &'static str,
    },
    /// The file does not start like a grappe trace.
    #[error("{path}: not a grappe trace (it starts with \"{found}\", a trace starts with \"GRTRACE1\")")]
    NotATrace {
        /// The file.
        path: PathBuf,
        /// Its first bytes.
        found: String,
    },
    /// The file ends before its header does: empty, or cut while the
    /// header was being written (its rank was killed as it started).
    #[error("{path}: cut at offset {offset} within its header (expected {expected}), so it holds no event")]
    HeaderCut {
        /// The file.
        path: PathBuf,
        /// Its length.
        offset: u64,
        /// What was to come.
        expected: String,
    },
    /// The header is unreadable.
    #[error("{path}: bad header at offset {offset}: {reason}")]
    BadHeader {
        /// The file.
        path: PathBuf,
        /// Where.
        offset: u64,
        /// What was expected.
        reason: String,
    },
    /// A block does not hold what the format says.
    #[error("{path}: corrupt block at offset {offset}: expected {expected}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// Offset of the problem in the file.
        offset: u64,
        /// What should have been there.
        expected: String,
    },
}

/// How a trace file ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// With its footer: the rank finished.
    Complete(Footer),
    /// After a complete block but without a footer: the rank did not
    /// finish (killed, or still running).
    Unfinished {
        /// Bytes read.
        offset: u64,
    },
    /// In the middle of a block: its rank was killed while writing, or
    /// the file was truncated.
    Cut {
        /// Where the incomplete block starts.
        offset: u64,
        /// What was missing.
        reason: String,
    },
}

/// What a trace is read from: a file, or bytes in memory (seekable, so
/// that a reader can start at a resume point).
pub trait Source: Read + Seek + Send {}

impl<T: Read + Seek + Send> Source for T {}

/// A trace file being read.
pub struct TraceFile {
    path: PathBuf,
    input: BufReader<Box<dyn Source>>,
    header: FileHeader,
    offset: u64,
    defs: Defs,
    samples: Vec<ClockSample>,
    ending: Option<Ending>,
    /// Resume points passed over by the blocks read.
    resume_points: u64,
    /// The payload of the block being read, kept from one block to the
    /// next (a fresh one per block costs an allocation and a memset).
    payload: Vec<u8>,
    /// The events block in `payload` being decoded a batch at a time: its
    /// payload's offset and the decoder's place. `None` when no block is
    /// partly decoded, and whenever `payload` holds anything else.
    batch: Option<(u64, EventDecoder)>,
}

/// Bytes read from a file at once. Block payloads at least this large are
/// read straight into the payload buffer; a larger buffer (it was 1 MiB,
/// then 64 KiB, then 16 KiB) costs memory, per rank, when a reader has
/// thousands of files open, and instructions: more of each payload is
/// copied out of it (`check` of per-rank files 1.6% more with 64 KiB).
/// The runtime's blocks of 1024 events are about 13 KB: 4 KiB reads
/// them straight, and 256 ranks take 3 MiB less than with 16 KiB.
const READ_BUFFER: usize = 4 << 10;

/// The most a payload buffer grows by in one read (see
/// [`TraceFile::read_up_to`]); the runtime's blocks are about 13 KB.
const PAYLOAD_STEP: usize = 1 << 20;

/// A block's header, read.
#[derive(Debug, Clone, Copy)]
struct BlockHead {
    kind: BlockKind,
    /// Offset of the header in the file.
    start: u64,
    /// Payload bytes.
    len: usize,
    /// Their checksum.
    crc: u32,
}

/// Definitions by id. A string lookup happens for every region, point,
/// counter and call event; recorders number strings from 0, so they are
/// kept in a vector by id, and an id too large for it (another writer's,
/// or a corrupt one) in a map, so that no id sizes an allocation.
#[derive(Debug, Default)]
struct Defs {
    strings: Vec<Option<Text>>,
    sparse_strings: FxHashMap<u32, Text>,
    /// Strings defined past the process's bound on text: an event naming
    /// one is an error that says so.
    past_bound: FxHashSet<u32>,
    /// Member lists; `None` for one defined past the process's bound.
    members: FxHashMap<u64, Option<Members>>,
}

/// String ids kept in the vector.
const DENSE_STRINGS: u32 = 1 << 16;

impl Defs {
    fn define_string(&mut self, id: u32, s: &str) {
        // A C caller's site, as the recorder wrote it, becomes its file
        // and line when the module's debug information says them.
        let resolved = crate::code_site::resolve(s);
        let s = resolved.as_deref().unwrap_or(s);
        let Some(text) = Text::of(s) else {
            self.past_bound.insert(id);
            return;
        };
        if id >= DENSE_STRINGS {
            self.sparse_strings.insert(id, text);
            return;
        }
        let i = id as usize;
        if i >= self.strings.len() {
            self.strings.resize(i + 1, None);
        }
        self.strings[i] = Some(text);
    }
}

impl Definitions for Defs {
    #[inline(always)]
    fn string(&self, id: u32) -> Option<Text> {
        match self.strings.get(id as usize) {
            Some(&dense) => dense,
            None => self.sparse_strings.get(&id).copied(),
        }
    }
    fn defined(&self, id: u32) -> bool {
        self.string(id).is_some() || self.past_bound.contains(&id)
    }
    fn members(&self, id: u64) -> Result<Members, DecodeError> {
        match self.members.get(&id) {
            Some(&Some(members)) => Ok(members),
            Some(None) => Err(DecodeError::PastMemberBound(id)),
            None => Err(DecodeError::MissingDefinition("members", id)),
        }
    }
}

impl std::fmt::Debug for TraceFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceFile").field("path", &self.path).field("offset", &self.offset).finish_non_exhaustive()
    }
}

impl TraceFile {
    /// Opens a trace and reads its header. Only a regular file is read:
    /// anything else (a FIFO named like a rank's file) is an error, never
    /// a wait.
    pub fn open(path: &Path) -> Result<TraceFile, TraceError> {
        TraceFile::from_reader(path, Box::new(open_regular(path)?))
    }

    /// Reads a trace from any byte source; `path` names it in errors.
    pub fn from_reader(path: &Path, source: Box<dyn Source>) -> Result<TraceFile, TraceError> {
        let mut input = BufReader::with_capacity(READ_BUFFER, source);
        let (header, offset) = read_header(path, &mut input)?;
        Ok(TraceFile {
            path: path.to_owned(),
            input,
            header,
            offset,
            defs: Defs::default(),
            samples: Vec::new(),
            ending: None,
            resume_points: 0,
            payload: Vec::new(),
            batch: None,
        })
    }

    /// The header.
    pub fn header(&self) -> &FileHeader {
        &self.header
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Clock samples read so far (all of them once the file is read).
    pub fn clock_samples(&self) -> &[ClockSample] {
        &self.samples
    }

    /// Resume points (of a merged file) the reader passed over, reading
    /// on from where it started: all of them once a file read from its
    /// start is read to the end.
    pub fn resume_points(&self) -> u64 {
        self.resume_points
    }

    /// How the file ended, once it is read to the end.
    pub fn ending(&self) -> Option<&Ending> {
        self.ending.as_ref()
    }

    /// The events of the next events block; `Ok(None)` at the end of the
    /// file (see [`Self::ending`]). Definitions, samples and the footer
    /// met on the way are absorbed.
    pub fn next_events(&mut self) -> Result<Option<Vec<Event>>, TraceError> {
        let mut events = Vec::new();
        Ok(self.next_events_into(&mut events)?.then_some(events))
    }

    /// [`Self::next_events`] into `events` (emptied first), so that a
    /// reader going through many blocks reuses one vector; false at the
    /// end of the file. After [`Self::next_batch_into`], the rest of the
    /// block it was in.
    pub fn next_events_into(&mut self, events: &mut Vec<Event>) -> Result<bool, TraceError> {
        self.next_batch_into(events, usize::MAX)
    }

    /// The next `max` events at most (emptied into `events` first), in
    /// the order of the file: the rest of the events block being read, or
    /// the start of the next one; false at the end of the file. Readers
    /// that hold many files at once (a merge of many ranks) keep their
    /// memory to a block's encoded bytes and `max` events per file.
    pub fn next_batch_into(&mut self, events: &mut Vec<Event>, max: usize) -> Result<bool, TraceError> {
        events.clear();
        while events.is_empty() {
            let (at, mut decoder) = match self.batch.take() {
                Some(batch) => batch,
                None => match self.start_event_block()? {
                    Some(batch) => batch,
                    None => return Ok(false),
                },
            };
            decode_into(&self.defs, &self.payload, &mut decoder, events, max).map_err(|f| f.at(self, at))?;
            if decoder.left() > 0 {
                self.batch = Some((at, decoder));
            }
        }
        Ok(true)
    }

    /// Reads blocks up to the next events block, absorbing the others:
    /// its payload's offset and a decoder at its start, or `None` at the
    /// end of the file.
    fn start_event_block(&mut self) -> Result<Option<(u64, EventDecoder)>, TraceError> {
        while self.ending.is_none() {
            let Some((kind, at)) = self.next_block()? else { break };
            if kind == BlockKind::Events {
                let decoder = EventDecoder::start(&self.payload).map_err(|e| self.corrupt_in(at, e))?;
                return Ok(Some((at, decoder)));
            }
            self.absorb(kind, at)?;
        }
        Ok(None)
    }

    /// Takes in the block just read (in `self.payload`), which is not events.
    fn absorb(&mut self, kind: BlockKind, at: u64) -> Result<(), TraceError> {
        let payload = std::mem::take(&mut self.payload);
        let absorbed = self.absorb_payload(kind, &payload, at);
        self.payload = payload;
        absorbed
    }

    fn absorb_payload(&mut self, kind: BlockKind, payload: &[u8], at: u64) -> Result<(), TraceError> {
        match kind {
            BlockKind::Events => unreachable!("event blocks are decoded or skipped by the caller"),
            // Only a reader looking for where to start uses them.
            BlockKind::Resume => self.resume_points += 1,
            BlockKind::Definitions => self.absorb_definitions(payload, at)?,
            BlockKind::ClockSamples => {
                let samples = decode_samples(payload).map_err(|e| self.corrupt_in(at, e))?;
                self.samples.extend(samples);
            }
            BlockKind::Footer => {
                let footer = decode_footer(payload).map_err(|e| self.corrupt_in(at, e))?;
                self.ending = Some(Ending::Complete(footer));
            }
        }
        Ok(())
    }

    /// The footer the file ends with, read from its end without reading
    /// what comes before: the totals of a complete file (its events, for
    /// a progress bar) at the cost of one read. `None` for a file that
    /// does not end with a footer (cut, unfinished), or whose footer is
    /// longer than a footer of its kind can be. The footer block is found
    /// as `complete_block_in` finds blocks: a header whose length ends
    /// it at the file's end and whose checksum matches.
    pub fn footer_from_end(mut self) -> Result<Option<Footer>, TraceError> {
        let most = match self.header.rank {
            Some(_) => FOOTER_MOST,
            None => FOOTER_MOST + FOOTER_MOST_PER_RANK * self.header.world_size as u64,
        };
        let io = |source| TraceError::Io { path: self.path.clone(), source };
        // The buffered reader is left behind: `self` is not read again.
        let input = self.input.get_mut();
        let len = input.seek(SeekFrom::End(0)).map_err(io)?;
        let tail_len = most.min(len.saturating_sub(self.offset));
        let mut tail = vec![0u8; tail_len as usize];
        input.seek(SeekFrom::Start(len - tail_len)).and_then(|_| input.read_exact(&mut tail)).map_err(io)?;
        Ok(footer_block_ending(&tail).and_then(|payload| decode_footer(payload).ok()))
    }

    /// Reads the whole file, keeping only what is not events: clock
    /// samples and the ending. Events are decoded (and so checked).
    pub fn scan(&mut self) -> Result<u64, TraceError> {
        let mut events = 0u64;
        while let Some(block) = self.next_events()? {
            events += block.len() as u64;
        }
        Ok(events)
    }

    /// Reads the whole file without decoding events (their blocks are
    /// still checksummed): the quick way to the clock samples and the
    /// ending. Returns the number of event blocks.
    pub fn skim(&mut self) -> Result<u64, TraceError> {
        let mut blocks = 0u64;
        while self.ending.is_none() {
            let Some((kind, at)) = self.next_block()? else { break };
            match kind {
                BlockKind::Events => blocks += 1,
                _ => self.absorb(kind, at)?,
            }
        }
        Ok(blocks)
    }

    /// Every event, one block in memory at a time.
    pub fn events(self) -> Events {
        Events { trace: self, block: Vec::new().into_iter() }
    }

    /// Decodes the whole events block `payload`, at `at` in the file.
    fn decode_event_block(&self, payload: &[u8], at: u64, events: &mut Vec<Event>) -> Result<(), TraceError> {
        let mut decoder = EventDecoder::start(payload).map_err(|e| self.corrupt_in(at, e))?;
        decode_into(&self.defs, payload, &mut decoder, events, usize::MAX).map_err(|failure| failure.at(self, at))
    }

    fn absorb_definitions(&mut self, payload: &[u8], at: u64) -> Result<(), TraceError> {
        for def in decode_definitions(payload).map_err(|e| self.corrupt_in(at, e))? {
            match def {
                Definition::String(id, s) => self.defs.define_string(id, &s),
                Definition::Members(id, m) => _ = self.defs.members.insert(id, Members::of(&m)),
            }
        }
        Ok(())
    }

    /// Reads the next block into `self.payload`: (kind, payload offset).
    /// `None` at a clean end of file, or after recording a cut in `ending`.
    fn next_block(&mut self) -> Result<Option<(BlockKind, u64)>, TraceError> {
        let Some(head) = self.next_head()? else { return Ok(None) };
        self.read_payload(&head)
    }

    /// Reads the next block's header. `None` at a clean end of file, or
    /// after recording a cut in `ending`.
    fn next_head(&mut self) -> Result<Option<BlockHead>, TraceError> {
        let start = self.offset;
        let mut header = [0u8; BLOCK_HEADER];
        match read_full(&mut self.input, &mut header).map_err(|source| self.io(source))? {
            0 => {
                self.ending = Some(Ending::Unfinished { offset: start });
                return Ok(None);
            }
            n if n < BLOCK_HEADER => {
                self.ending =
                    Some(Ending::Cut { offset: start, reason: format!("a 16-byte block header, found {n} bytes") });
                return Ok(None);
            }
            _ => {}
        }
        let (kind, len, crc) = parse_head(&header).map_err(|e| self.corrupt_in(start, e))?;
        Ok(Some(BlockHead { kind, start, len, crc }))
    }

    /// Reads the payload of the block whose header was just read, and
    /// checks it: (kind, payload offset), or `None` after recording a cut.
    fn read_payload(&mut self, head: &BlockHead) -> Result<Option<(BlockKind, u64)>, TraceError> {
        let BlockHead { kind, start, len, crc } = *head;
        self.batch = None;
        let got = self.read_up_to(len)?;
        if got < len {
            self.check_cut(head, got)?;
            self.ending =
                Some(Ending::Cut { offset: start, reason: format!("a {len}-byte block payload, found {got} bytes") });
            return Ok(None);
        }
        let at = start + BLOCK_HEADER as u64;
        let found = crc32fast::hash(&self.payload);
        if found != crc {
            return Err(self.corrupt(at, format!("a payload with checksum {crc:#010x}, found {found:#010x}")));
        }
        self.offset = at + len as u64;
        Ok(Some((kind, at)))
    }

    /// Reads up to `len` payload bytes into `self.payload`: how many the
    /// file held. The buffer grows by at most [`PAYLOAD_STEP`] a read, so
    /// a corrupt length (up to 256 MiB) in a short file costs what the
    /// file holds, not an allocation and a memset of the length. Bytes
    /// already initialised are not zeroed again.
    fn read_up_to(&mut self, len: usize) -> Result<usize, TraceError> {
        let mut got = 0;
        loop {
            let want = len.min(got + PAYLOAD_STEP);
            if self.payload.len() < want {
                self.payload.resize(want, 0);
            }
            self.payload.truncate(want);
            got += read_full(&mut self.input, &mut self.payload[got..]).map_err(|source| self.io(source))?;
            if got < want || got == len {
                self.payload.truncate(got);
                return Ok(got);
            }
        }
    }

    /// Whether a payload that runs past the end of the file, `got` of
    /// its bytes read, is a cut (`Ok`) or a corrupt length: a complete
    /// block within those bytes means the file goes on where this block
    /// should have ended, and reading it as cut would hide the rest.
    fn check_cut(&self, head: &BlockHead, got: usize) -> Result<(), TraceError> {
        let bytes = &self.payload[..got];
        let Some(next) = complete_block_in(bytes) else { return Ok(()) };
        let BlockHead { start, len, crc, .. } = *head;
        let at = start + (BLOCK_HEADER + next) as u64;
        // The block's own checksum over the bytes before the one found
        // tells a corrupt length (it matches) from other damage, such as
        // a write cut short by a full disk with blocks written after it.
        let expected = if crc32fast::hash(&bytes[..next]) == crc {
            format!(
                "a block length of {next} (the payload's checksum matches its first {next} bytes, and a \
                 complete block follows them at offset {at}), found {len}: the length is corrupt, the file not cut"
            )
        } else {
            format!(
                "a block length within the {got} bytes left in the file, found {len}, yet a complete block \
                 starts at offset {at} within them: the block is corrupt, the file not cut"
            )
        };
        Err(self.corrupt(start + 8, expected))
    }

    fn io(&self, source: std::io::Error) -> TraceError {
        TraceError::Io { path: self.path.clone(), source }
    }

    fn corrupt(&self, offset: u64, expected: String) -> TraceError {
        TraceError::Corrupt { path: self.path.clone(), offset, expected }
    }

    fn corrupt_in(&self, payload_offset: u64, (pos, expected): (usize, String)) -> TraceError {
        self.corrupt(payload_offset + pos as u64, expected)
    }
}

/// Iterator over the events of a trace file.
#[derive(Debug)]
pub struct Events {
    trace: TraceFile,
    block: std::vec::IntoIter<Event>,
}

impl Events {
    /// The file being read (its ending, samples, header).
    pub fn trace(&self) -> &TraceFile {
        &self.trace
    }
}

impl Iterator for Events {
    type Item = Result<Event, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(event) = self.block.next() {
                return Some(Ok(event));
            }
            match self.trace.next_events() {
                Ok(Some(block)) => self.block = block.into_iter(),
                Ok(None) => return None,
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

/// The longest footer of a rank's file: three totals and α per kind
/// (about 250 bytes at most), with room to spare.
const FOOTER_MOST: u64 = 4 << 10;

/// What a merged file's footer holds more per rank at most: its ending
/// (about 220 bytes) or what was missing in its cut file.
const FOOTER_MOST_PER_RANK: u64 = 1 << 10;

/// The payload of the footer block that ends `tail`, if one does.
fn footer_block_ending(tail: &[u8]) -> Option<&[u8]> {
    let magic = BLOCK_MAGIC.to_le_bytes();
    let last = tail.len().checked_sub(BLOCK_HEADER)?;
    (0..=last).rev().filter(|&at| tail[at..at + 4] == magic).find_map(|at| {
        let (kind, len, crc) = parse_head(tail[at..at + BLOCK_HEADER].try_into().expect("a header's bytes")).ok()?;
        let payload = &tail[at + BLOCK_HEADER..];
        (kind == BlockKind::Footer && payload.len() == len && crc32fast::hash(payload) == crc).then_some(payload)
    })
}

/// Opens `path` for reading if it is a regular file. Opened without
/// blocking, as opening a FIFO waits for a writer; the type is checked
/// on the file opened, so it cannot change in between.
fn open_regular(path: &Path) -> Result<File, TraceError> {
    let io = |source| TraceError::Io { path: path.to_owned(), source };
    let file = OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path).map_err(io)?;
    let kind = file.metadata().map_err(io)?.file_type();
    if !kind.is_file() {
        return Err(TraceError::NotAFile { path: path.to_owned(), kind: file_kind(kind) });
    }
    // A regular file's reads never wait: O_NONBLOCK changes nothing for it.
    Ok(file)
}

/// What a file that is not a regular file is, for people.
fn file_kind(kind: FileType) -> &'static str {
    if kind.is_dir() {
        "directory"
    } else if kind.is_fifo() {
        "FIFO (named pipe)"
    } else if kind.is_socket() {
        "socket"
    } else if kind.is_char_device() {
        "character device"
    } else if kind.is_block_device() {
        "block device"
    } else {
        "special file"
    }
}

/// Reads until `buf` is full or the file ends; returns the bytes read.
fn read_full(input: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match input.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// A block header's kind, payload length and checksum, or where in it
/// and what is wrong.
fn parse_head(header: &[u8; BLOCK_HEADER]) -> Result<(BlockKind, usize, u32), (usize, String)> {
    let magic = u32::from_le_bytes(header[0..4].try_into().expect("4 bytes"));
    if magic != BLOCK_MAGIC {
        return Err((0, format!("block magic \"GRBK\", found {:?}", &header[0..4])));
    }
    if header[5..8] != [0, 0, 0] {
        return Err((5, format!("reserved bytes 0, found {:?}", &header[5..8])));
    }
    let kind =
        BlockKind::from_u8(header[4]).ok_or_else(|| (4, format!("a block kind from 1 to 5, found {}", header[4])))?;
    let len = u32::from_le_bytes(header[8..12].try_into().expect("4 bytes")) as usize;
    if len > MAX_BLOCK {
        return Err((8, format!("a block length up to {MAX_BLOCK} bytes, found {len}")));
    }
    let crc = u32::from_le_bytes(header[12..16].try_into().expect("4 bytes"));
    Ok((kind, len, crc))
}

/// The most headers found in a short payload whose checksums are tried:
/// bytes crafted to hold one at every position would otherwise cost a
/// checksum of the rest of the file at each. Real blocks are not missed:
/// bytes before one hold a header that parses only if crafted to.
const BLOCKS_TRIED: usize = 16;

/// Where the first complete block within `bytes` starts: a header that
/// parses, its payload within `bytes` and matching its checksum.
///
/// Sound as a test of a cut: a file cut short is a prefix of a whole one,
/// so when it ends within a payload every byte after that block's header
/// is the payload's own, written by an encoder that writes no blocks. For
/// such bytes to hold a complete block, event varints or a definition's
/// text would have to spell a header (the magic, a kind from 1 to 5, three
/// zero bytes, a length that fits: under 2^-61 a position for random
/// bytes) and then bytes whose CRC-32 is the one it names (2^-32 more):
/// only a name chosen to hold a trace's bytes can. The checksum is what
/// makes it sound: "GRBK" alone may well turn up in a string. A corrupt
/// length, on the other hand, leaves the next block whole where it was.
fn complete_block_in(bytes: &[u8]) -> Option<usize> {
    let magic = BLOCK_MAGIC.to_le_bytes();
    bytes
        .windows(BLOCK_HEADER)
        .enumerate()
        .filter(|(_, w)| w[..4] == magic)
        .filter_map(|(at, w)| Some((at, parse_head(w.try_into().expect("a header's bytes")).ok()?)))
        .filter(|&(at, (_, len, _))| at + BLOCK_HEADER + len <= bytes.len())
        .take(BLOCKS_TRIED)
        .find(|&(at, (_, len, crc))| crc32fast::hash(&bytes[at + BLOCK_HEADER..][..len]) == crc)
        .map(|(at, _)| at)
}

/// The header, and the offset of the first block.
fn read_header(path: &Path, input: &mut impl Read) -> Result<(FileHeader, u64), TraceError> {
    let io = |source| TraceError::Io { path: path.to_owned(), source };
    let mut head = [0u8; 12];
    let got = read_full(input, &mut head).map_err(io)?;
    let cut = |offset: usize, expected: String| TraceError::HeaderCut {
        path: path.to_owned(),
        offset: offset as u64,
        expected,
    };
    if got < 8 && head[..got] == MAGIC[..got] {
        return Err(cut(got, format!("the {}-byte mark \"GRTRACE1\"", MAGIC.len())));
    }
    if got < 8 || &head[..8] != MAGIC {
        return Err(TraceError::NotATrace {
            path: path.to_owned(),
            // Escaped: a binary file's bytes are not for the terminal.
            found: head[..got.min(8)].escape_ascii().to_string(),
        });
    }
    let bad = |offset, reason: String| TraceError::BadHeader { path: path.to_owned(), offset, reason };
    if got < 12 {
        return Err(cut(got, "a 4-byte header length".into()));
    }
    let len = u32::from_le_bytes(head[8..12].try_into().expect("4 bytes")) as usize;
    if len > 16 << 20 {
        return Err(bad(8, format!("a header of at most 16 MiB, found a length of {len}")));
    }
    let mut json = vec![0u8; len];
    let got = read_full(input, &mut json).map_err(io)?;
    if got < len {
        if let Some(end) = json_end(&json[..got]) {
            // A whole header, then more bytes: the length is wrong, not
            // the file short.
            return Err(bad(8, format!("a header length of {}, found {len} (corrupt?)", end)));
        }
        return Err(cut(12 + got, format!("{len} bytes of header")));
    }
    let header: FileHeader = serde_json::from_slice(&json)
        .map_err(|e| bad(12 + (e.column() as u64).saturating_sub(1), format!("a JSON file header ({e})")))?;
    if !(OLDEST_READABLE..=VERSION).contains(&header.format) {
        let remedy = if header.format > VERSION {
            "written by a newer grappe: read it with that one"
        } else {
            "record the trace again"
        };
        let expected = format!("format version {OLDEST_READABLE} to {VERSION}");
        return Err(bad(12, format!("{expected}, found {} ({remedy})", header.format)));
    }
    Ok((header, 12 + len as u64))
}

/// Where a JSON object at the start of `bytes` ends, if one does before
/// the end: a header whose declared length runs past it.
fn json_end(bytes: &[u8]) -> Option<usize> {
    let mut values = serde_json::Deserializer::from_slice(bytes).into_iter::<serde::de::IgnoredAny>();
    values.next()?.ok()?;
    Some(values.byte_offset()).filter(|&end| end < bytes.len())
}

/// Why a block's events could not be decoded.
enum DecodeFailure {
    /// Not what the format says, at this byte of the payload.
    Encoding((usize, String)),
    /// Well encoded, but naming what the file does not define.
    Undecodable(DecodeError),
}

impl DecodeFailure {
    /// The error, for the block whose payload is at `at` in `file`.
    fn at(self, file: &TraceFile, at: u64) -> TraceError {
        match self {
            DecodeFailure::Encoding(e) => file.corrupt_in(at, e),
            DecodeFailure::Undecodable(reason) => file.corrupt(at, format!("a decodable event ({reason})")),
        }
    }
}

/// Appends the next `max` events of `decoder`'s block to `events`.
fn decode_into(
    defs: &Defs,
    payload: &[u8],
    decoder: &mut EventDecoder,
    events: &mut Vec<Event>,
    max: usize,
) -> Result<(), DecodeFailure> {
    events.reserve(max.min(decoder.left()));
    let mut taker = Decoded { defs, events, undecodable: None };
    decoder.decode(payload, max, &mut taker).map_err(DecodeFailure::Encoding)?;
    taker.undecodable.map_or(Ok(()), |reason| Err(DecodeFailure::Undecodable(reason)))
}

/// Appends each record, its body and site looked up in the definitions,
/// or keeps the first reason one cannot be. Inlined into the decoder's
/// copy for each kind, where the body's `match` on the kind folds away.
struct Decoded<'a> {
    defs: &'a Defs,
    events: &'a mut Vec<Event>,
    undecodable: Option<DecodeError>,
}

impl TakeEncoded for &mut Decoded<'_> {
    #[inline(always)]
    fn take(&mut self, e: &Encoded) {
        // One result at a time: matching a pair of them moved whole
        // bodies around, 30 instructions an event.
        let site = match e.raw.site_of(self.defs) {
            Ok(site) => site,
            Err(reason) => {
                self.undecodable.get_or_insert(reason);
                return;
            }
        };
        match e.raw.body(self.defs) {
            Ok(body) => push_in_place(self.events, e, site, body),
            Err(reason) => _ = self.undecodable.get_or_insert(reason),
        }
    }
}

/// Appends an event built straight in the vector's free capacity. A plain
/// `push` builds the event on the stack and copies it (its grow
/// path is a call the value must survive), and that copy, read right
/// after the event was written field by field, stalls the CPU: a quarter
/// of the decoding time.
#[inline(always)]
fn push_in_place(events: &mut Vec<Event>, e: &Encoded, site: Option<Site>, body: Body) {
    let event = |body| Event { rank: e.rank, start: e.start, end: e.end, alpha_ns: e.alpha_ns, site, body };
    let len = events.len();
    match events.spare_capacity_mut().first_mut() {
        Some(slot) => {
            slot.write(event(body));
            // SAFETY: the element at `len`, the first past the length, is
            // within capacity and was just initialised.
            unsafe { events.set_len(len + 1) };
        }
        None => events.push(event(body)),
    }
}
