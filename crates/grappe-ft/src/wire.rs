//! The checkpoint server's protocol, on one TCP connection.
//!
//! ```text
//! server → client   "GRCKSRV1" nonce[32]
//! client → server   job:text  mac[32]          HMAC-SHA256(secret, nonce ‖ job)
//! server → client   status
//! then, any number of times:
//! client → server   'P' wave:u64 rank:u32  chunks trailer   → status
//!                   'G' wave:u64 rank:u32                   → status [chunks trailer status]
//!                   'C' wave:u64                            → status
//!                   'K' count:u8 wave:u64*                  → status
//!                   'W'                                     → status count:u32 (wave:u64 committed:u8 ranks:u32)*
//! chunks:   (len:u32 bytes[len])* with 0 < len ≤ 1 MiB
//! trailer:  0:u32 total:u64 crc32:u32
//! status:   0 | 1 text                         text: len:u16 utf-8
//! ```
//!
//! Integers are little-endian. An image is streamed with its size and
//! checksum after it, as the sender may read it from a file it has not
//! finished sizing (MPICH-V sent the size on a second socket for that
//! reason; a trailer keeps one connection). A `G` answer ends with a second
//! status: whether the stored checksum matched.
//!
//! `C` marks a wave committed on the server; `K` (keep) marks the waves
//! listed committed and deletes every other wave of the job: the client's
//! commit record decides what a server keeps (see `wave::commit`).
//!
//! Every read is bounded (chunk and text lengths are checked before any
//! allocation), and a malformed stream is an error naming the connection
//! and the byte offset. A connection may be given a time limit per read and
//! write: a peer that does not answer within it is [`FtError::Silent`].

use std::io::{Read, Write};
use std::time::Duration;

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::error::{FtError, Result};

/// What the server says first.
pub const SERVER_MAGIC: &[u8; 8] = b"GRCKSRV1";
/// Bytes of the server's challenge.
pub const NONCE_LEN: usize = 32;
/// Bytes of the client's answer.
pub const MAC_LEN: usize = 32;
/// Largest chunk of an image on the wire.
pub const MAX_CHUNK: usize = 1 << 20;
/// Longest text (job names, error messages).
pub const MAX_TEXT: usize = 4096;
/// Most waves a keep request lists.
pub const MAX_KEPT: usize = 8;

/// A request after the handshake.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// Store the image that follows.
    Put { wave: u64, rank: u32 },
    /// Send back an image.
    Get { wave: u64, rank: u32 },
    /// Mark a wave complete on this server.
    Commit { wave: u64 },
    /// Keep these waves (marked committed) and delete the job's others.
    Keep { waves: Vec<u64> },
    /// List the waves held.
    Waves,
}

/// How a streamed image ended, as the receiver counted it.
#[derive(Debug)]
pub struct StreamEnd {
    /// Bytes received.
    pub total: u64,
    /// Their CRC-32.
    pub crc: u32,
    /// The first error of the sink, if it failed: the rest of the stream
    /// was read and dropped so that the connection stays usable.
    pub sink_error: Option<std::io::Error>,
}

/// A wave as a server holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WaveListing {
    pub wave: u64,
    pub committed: bool,
    /// Ranks whose image is stored (complete files only).
    pub ranks: Vec<u32>,
}

/// One end of a connection: its stream, a name for errors, and the offset
/// read so far.
pub struct Conn<S> {
    stream: S,
    name: String,
    offset: u64,
    /// The limit the stream was given per read and write, if any.
    timeout: Option<Duration>,
}

impl<S: Read + Write> Conn<S> {
    /// Wraps a stream; `name` says which connection in errors.
    pub fn new(stream: S, name: impl Into<String>) -> Self {
        Conn { stream, name: name.into(), offset: 0, timeout: None }
    }

    /// Says that the stream gives up a read or write after `limit` (the
    /// caller set it on the socket): such an error is then
    /// [`FtError::Silent`].
    pub fn with_timeout(mut self, limit: Duration) -> Self {
        self.timeout = Some(limit);
        self
    }

    /// The connection's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The stream.
    pub fn get_ref(&self) -> &S {
        &self.stream
    }

    fn net(&self, what: &str, source: std::io::Error) -> FtError {
        let timed_out = matches!(source.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut);
        match self.timeout {
            Some(after) if timed_out => FtError::Silent { peer: self.name.clone(), what: what.to_owned(), after },
            _ => FtError::Net { what: format!("{} ({what})", self.name), source },
        }
    }

    /// A protocol error at the current offset.
    pub fn protocol(&self, expected: impl Into<String>) -> FtError {
        FtError::Protocol { source_name: self.name.clone(), offset: self.offset, expected: expected.into() }
    }

    // ---- reading ----

    fn fill(&mut self, buf: &mut [u8], what: &str) -> Result<()> {
        match self.stream.read_exact(buf) {
            Ok(()) => {
                self.offset += buf.len() as u64;
                Ok(())
            }
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                Err(self.protocol(format!("{what} ({} bytes), found the end of the connection", buf.len())))
            }
            Err(e) => Err(self.net(&format!("reading {what}"), e)),
        }
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let mut buf = [0u8; N];
        self.fill(&mut buf, what)?;
        Ok(buf)
    }

    pub fn read_u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.array::<1>(what)?[0])
    }

    pub fn read_u16(&mut self, what: &str) -> Result<u16> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }

    pub fn read_u32(&mut self, what: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    pub fn read_u64(&mut self, what: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    /// A length-prefixed UTF-8 text of at most [`MAX_TEXT`] bytes.
    pub fn read_text(&mut self, what: &str) -> Result<String> {
        let len = self.read_u16(what)? as usize;
        if len > MAX_TEXT {
            return Err(self.protocol(format!("{what} of at most {MAX_TEXT} bytes, not {len}")));
        }
        let mut bytes = vec![0u8; len];
        self.fill(&mut bytes, what)?;
        String::from_utf8(bytes).map_err(|_| self.protocol(format!("{what} in UTF-8")))
    }

    /// A request tag and its fields.
    pub fn read_request(&mut self) -> Result<Option<Request>> {
        let mut tag = [0u8; 1];
        match self.stream.read(&mut tag) {
            Ok(0) => return Ok(None),
            Ok(_) => self.offset += 1,
            Err(e) => return Err(self.net("reading a request", e)),
        }
        Ok(Some(match tag[0] {
            b'P' => Request::Put { wave: self.read_u64("wave")?, rank: self.read_u32("rank")? },
            b'G' => Request::Get { wave: self.read_u64("wave")?, rank: self.read_u32("rank")? },
            b'C' => Request::Commit { wave: self.read_u64("wave")? },
            b'K' => {
                let count = self.read_u8("count of waves kept")? as usize;
                if count > MAX_KEPT {
                    return Err(self.protocol(format!("at most {MAX_KEPT} waves kept, not {count}")));
                }
                Request::Keep { waves: (0..count).map(|_| self.read_u64("wave kept")).collect::<Result<_>>()? }
            }
            b'W' => Request::Waves,
            other => {
                self.offset -= 1;
                return Err(self.protocol(format!("a request 'P', 'G', 'C', 'K' or 'W', found byte {other:#04x}")));
            }
        }))
    }

    /// A status: `Ok(())`, or the peer's refusal.
    pub fn read_status(&mut self) -> Result<()> {
        match self.read_u8("status")? {
            0 => Ok(()),
            1 => {
                let reason = self.read_text("refusal")?;
                Err(FtError::Refused { peer: self.name.clone(), reason })
            }
            other => Err(self.protocol(format!("status 0 or 1, found {other}"))),
        }
    }

    /// Receives an image into `sink`: chunks, then the trailer, checked
    /// against what arrived. A failing sink does not stop the reading.
    pub fn recv_stream(&mut self, sink: &mut dyn Write) -> Result<StreamEnd> {
        let mut buf = vec![0u8; MAX_CHUNK];
        let (mut total, mut hasher, mut sink_error) = (0u64, crc32fast::Hasher::new(), None);
        loop {
            let len = self.read_u32("chunk length")? as usize;
            if len == 0 {
                break;
            }
            if len > MAX_CHUNK {
                return Err(self.protocol(format!("a chunk of at most {MAX_CHUNK} bytes, not {len}")));
            }
            let chunk = &mut buf[..len];
            self.fill(chunk, "chunk")?;
            hasher.update(chunk);
            total += len as u64;
            if sink_error.is_none() {
                sink_error = sink.write_all(chunk).err();
            }
        }
        let (sent_total, sent_crc) = (self.read_u64("image size")?, self.read_u32("image checksum")?);
        let crc = hasher.finalize();
        if (sent_total, sent_crc) != (total, crc) {
            return Err(self.protocol(format!(
                "a trailer matching the {total} bytes received (crc {crc:#010x}), found {sent_total} bytes, crc {sent_crc:#010x}"
            )));
        }
        Ok(StreamEnd { total, crc, sink_error })
    }

    // ---- writing ----

    fn send(&mut self, bytes: &[u8], what: &str) -> Result<()> {
        self.stream.write_all(bytes).map_err(|e| self.net(&format!("sending {what}"), e))
    }

    pub fn flush(&mut self) -> Result<()> {
        self.stream.flush().map_err(|e| self.net("flushing", e))
    }

    /// Sends a request.
    pub fn send_request(&mut self, request: Request) -> Result<()> {
        let mut msg = Vec::with_capacity(13);
        match request {
            Request::Put { wave, rank } | Request::Get { wave, rank } => {
                msg.push(if matches!(request, Request::Put { .. }) { b'P' } else { b'G' });
                msg.extend_from_slice(&wave.to_le_bytes());
                msg.extend_from_slice(&rank.to_le_bytes());
            }
            Request::Commit { wave } => {
                msg.push(b'C');
                msg.extend_from_slice(&wave.to_le_bytes());
            }
            Request::Keep { waves } => {
                if waves.len() > MAX_KEPT {
                    return Err(FtError::Invalid(format!("at most {MAX_KEPT} waves can be kept, not {}", waves.len())));
                }
                msg.push(b'K');
                msg.push(waves.len() as u8);
                waves.iter().for_each(|w| msg.extend_from_slice(&w.to_le_bytes()));
            }
            Request::Waves => msg.push(b'W'),
        }
        self.send(&msg, "a request")
    }

    /// Sends an OK status, or a refusal with its reason (cut to
    /// [`MAX_TEXT`] bytes).
    pub fn send_status(&mut self, status: std::result::Result<(), &str>) -> Result<()> {
        match status {
            Ok(()) => self.send(&[0], "a status"),
            Err(reason) => {
                let mut msg = vec![1];
                push_text(&mut msg, reason);
                self.send(&msg, "a refusal")
            }
        }
    }

    pub fn send_u32(&mut self, v: u32) -> Result<()> {
        self.send(&v.to_le_bytes(), "a number")
    }

    pub fn send_raw(&mut self, bytes: &[u8]) -> Result<()> {
        self.send(bytes, "bytes")
    }

    /// Sends everything `source` gives as chunks and the trailer; the
    /// size and checksum sent. An error of `source` aborts (the peer sees
    /// the connection end before a trailer).
    pub fn send_stream(&mut self, source: &mut dyn Read, source_name: &str) -> Result<(u64, u32)> {
        let mut buf = vec![0u8; 4 + MAX_CHUNK];
        let (mut total, mut hasher) = (0u64, crc32fast::Hasher::new());
        loop {
            let n = read_some(source, &mut buf[4..]).map_err(|e| FtError::Net {
                what: format!("reading {source_name} to send it to {}", self.name),
                source: e,
            })?;
            if n == 0 {
                break;
            }
            buf[..4].copy_from_slice(&(n as u32).to_le_bytes());
            hasher.update(&buf[4..4 + n]);
            total += n as u64;
            self.send(&buf[..4 + n], "a chunk")?;
        }
        let crc = hasher.finalize();
        let mut trailer = [0u8; 16];
        trailer[4..12].copy_from_slice(&total.to_le_bytes());
        trailer[12..16].copy_from_slice(&crc.to_le_bytes());
        self.send(&trailer, "the trailer")?;
        Ok((total, crc))
    }
}

/// Fills `buf` as far as `source` allows before its end.
fn read_some(source: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match source.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Appends a length-prefixed text, cut at a character boundary to
/// [`MAX_TEXT`] bytes.
pub fn push_text(out: &mut Vec<u8>, text: &str) {
    let mut end = text.len().min(MAX_TEXT);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    out.extend_from_slice(&(end as u16).to_le_bytes());
    out.extend_from_slice(&text.as_bytes()[..end]);
}

/// The client's proof that it holds the job's secret.
pub fn proof(secret: &[u8], nonce: &[u8; NONCE_LEN], job: &str) -> [u8; MAC_LEN] {
    let mut mac = keyed(secret);
    mac.update(nonce);
    mac.update(job.as_bytes());
    mac.finalize().into_bytes().into()
}

/// Checks a proof in constant time.
pub fn proof_holds(secret: &[u8], nonce: &[u8; NONCE_LEN], job: &str, proof: &[u8; MAC_LEN]) -> bool {
    let mut mac = keyed(secret);
    mac.update(nonce);
    mac.update(job.as_bytes());
    mac.verify_slice(proof).is_ok()
}

fn keyed(secret: &[u8]) -> Hmac<Sha256> {
    <Hmac<Sha256> as Mac>::new_from_slice(secret).expect("HMAC takes keys of any length")
}

/// A fresh challenge.
pub fn nonce() -> [u8; NONCE_LEN] {
    let mut nonce = [0u8; NONCE_LEN];
    getrandom::fill(&mut nonce).expect("the system's random source works");
    nonce
}

/// Job names are directory names: 1 to 64 of `A-Z a-z 0-9 _ . -`, not
/// starting with a dot.
pub fn check_job(job: &str) -> std::result::Result<(), BadJobName> {
    let refuse = |problem| Err(BadJobName { name: job.to_owned(), problem });
    if job.is_empty() {
        return refuse(JobNameProblem::Empty);
    }
    if job.len() > MAX_JOB_NAME {
        return refuse(JobNameProblem::TooLong { bytes: job.len() });
    }
    if job.starts_with('.') {
        return refuse(JobNameProblem::LeadingDot);
    }
    match job.bytes().position(|b| !(b.is_ascii_alphanumeric() || b"_.-".contains(&b))) {
        Some(at) => refuse(JobNameProblem::Byte { at, byte: job.as_bytes()[at] }),
        None => Ok(()),
    }
}

/// Longest job name, in bytes.
pub const MAX_JOB_NAME: usize = 64;

/// A job name the servers refuse: it names a directory of theirs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("job name {name:?}: {problem}; expected 1 to 64 of A-Z a-z 0-9 _ . - (no leading dot)")]
pub struct BadJobName {
    /// The name given.
    pub name: String,
    /// What is wrong with it.
    pub problem: JobNameProblem,
}

/// What is wrong with a job name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum JobNameProblem {
    /// No name at all.
    #[error("it is empty")]
    Empty,
    /// Longer than [`MAX_JOB_NAME`].
    #[error("it has {bytes} bytes")]
    TooLong {
        /// Its length.
        bytes: usize,
    },
    /// A hidden directory's name.
    #[error("it starts with a dot")]
    LeadingDot,
    /// A byte outside the allowed set.
    #[error("byte {at} is {}", std::ascii::escape_default(*byte))]
    Byte {
        /// Where.
        at: usize,
        /// The byte.
        byte: u8,
    },
}
