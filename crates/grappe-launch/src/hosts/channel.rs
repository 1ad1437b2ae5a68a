//! The byte stream between the launcher and a host's agent (the remote shell's standard input
//! and output), as frames: a 9-byte header (kind, a 32-bit number, a 32-bit payload length,
//! little-endian) and the payload.
//!
//! Written by hand because it is nine bytes of header over a pipe: no crate frames a stream more
//! simply, and the reader must refuse garbage (a remote shell that prints a banner) with the
//! offset where it went wrong.

use std::borrow::Cow;
use std::io::{self, Read, Write};

/// Bytes of a frame header.
pub const HEADER_BYTES: usize = 9;

/// The largest payload a frame may carry (a job description with a large environment).
pub const MAX_PAYLOAD: usize = 16 << 20;

/// Which of a process's output streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// How a process ended, as the agent saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    Code(i32),
    Signal(i32),
    /// The agent could not wait for it.
    Unknown,
}

/// One message on the channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// Launcher → agent, first: the job's description (JSON, see `agent::AgentJob`).
    Job(Vec<u8>),
    /// Both ways: PMI bytes to or from process `process`.
    Pmi { process: u32, bytes: Vec<u8> },
    /// Launcher → agent: send this signal to every process of the host.
    Signal(i32),
    /// Agent → launcher: process `process` runs as `pid`.
    Started { process: u32, pid: u32 },
    /// Agent → launcher: output of process `process`.
    Output { process: u32, stream: Stream, bytes: Vec<u8> },
    /// Agent → launcher: process `process` ended.
    Exited { process: u32, ended: Ended },
    /// Agent → launcher: the host's processes could not be started; the launcher's exit status
    /// and the reason.
    Failed { status: u32, message: String },
    /// Agent → launcher: the next bytes of the file to gather number `file` (an index into the
    /// job description's list).
    File { file: u32, bytes: Vec<u8> },
    /// Agent → launcher: file number `file` is complete.
    FileEnd { file: u32 },
}

/// Why a stream could not be read as frames.
#[derive(Debug, thiserror::Error)]
pub enum ChannelError {
    #[error("the stream ended")]
    Closed,
    #[error("the stream ended in the middle of a frame at byte {offset}")]
    Truncated { offset: u64 },
    #[error("bad frame at byte {offset}: {reason}")]
    Bad { offset: u64, reason: String },
    #[error(transparent)]
    Io(#[from] io::Error),
}

const JOB: u8 = 1;
const PMI: u8 = 2;
const SIGNAL: u8 = 3;
const STARTED: u8 = 4;
const STDOUT: u8 = 5;
const STDERR: u8 = 6;
const EXITED: u8 = 7;
const FAILED: u8 = 8;
const FILE: u8 = 9;
const FILE_END: u8 = 10;

impl Frame {
    /// The frame as bytes: header then payload.
    pub fn encode(&self) -> Vec<u8> {
        let (kind, number, payload): (u8, u32, Cow<'_, [u8]>) = match self {
            Frame::Job(json) => (JOB, 0, Cow::Borrowed(json)),
            Frame::Pmi { process, bytes } => (PMI, *process, Cow::Borrowed(bytes)),
            Frame::Signal(signal) => (SIGNAL, *signal as u32, Cow::Borrowed(&[])),
            Frame::Started { process, pid } => (STARTED, *process, Cow::Owned(pid.to_le_bytes().to_vec())),
            Frame::Output { process, stream: Stream::Stdout, bytes } => (STDOUT, *process, Cow::Borrowed(bytes)),
            Frame::Output { process, stream: Stream::Stderr, bytes } => (STDERR, *process, Cow::Borrowed(bytes)),
            Frame::Exited { process, ended } => (EXITED, *process, Cow::Owned(encode_ended(*ended).to_vec())),
            Frame::Failed { status, message } => (FAILED, *status, Cow::Borrowed(message.as_bytes())),
            Frame::File { file, bytes } => (FILE, *file, Cow::Borrowed(bytes)),
            Frame::FileEnd { file } => (FILE_END, *file, Cow::Borrowed(&[])),
        };
        let len = payload.len();
        let mut out = Vec::with_capacity(HEADER_BYTES + len);
        out.push(kind);
        out.extend_from_slice(&number.to_le_bytes());
        out.extend_from_slice(&(len as u32).to_le_bytes());
        out.extend_from_slice(&payload);
        out
    }

    /// Writes the frame in one `write_all`, so that frames written under a lock never interleave.
    pub fn write_to(&self, out: &mut impl Write) -> io::Result<()> {
        out.write_all(&self.encode())?;
        out.flush()
    }
}

fn encode_ended(ended: Ended) -> [u8; 5] {
    let (tag, value) = match ended {
        Ended::Code(code) => (0, code),
        Ended::Signal(signal) => (1, signal),
        Ended::Unknown => (2, 0),
    };
    let mut bytes = [tag, 0, 0, 0, 0];
    bytes[1..].copy_from_slice(&value.to_le_bytes());
    bytes
}

/// Reads frames from a stream, counting bytes so that errors say where.
#[derive(Debug)]
pub struct FrameReader<R> {
    source: R,
    offset: u64,
}

impl<R: Read> FrameReader<R> {
    pub fn new(source: R) -> FrameReader<R> {
        FrameReader { source, offset: 0 }
    }

    /// The next frame; [`ChannelError::Closed`] at a clean end of stream.
    pub fn next_frame(&mut self) -> Result<Frame, ChannelError> {
        let start = self.offset;
        let mut header = [0u8; HEADER_BYTES];
        match self.fill(&mut header)? {
            0 => return Err(ChannelError::Closed),
            n if n < HEADER_BYTES => return Err(ChannelError::Truncated { offset: start }),
            _ => {}
        }
        let number = u32::from_le_bytes([header[1], header[2], header[3], header[4]]);
        let len = u32::from_le_bytes([header[5], header[6], header[7], header[8]]) as usize;
        if !(JOB..=FILE_END).contains(&header[0]) {
            return Err(bad(start, format!("unknown frame kind {} (is the remote shell printing text?)", header[0])));
        }
        if len > MAX_PAYLOAD {
            return Err(bad(start, format!("a payload of {len} bytes (at most {MAX_PAYLOAD})")));
        }
        let mut payload = vec![0u8; len];
        if self.fill(&mut payload)? < len {
            return Err(ChannelError::Truncated { offset: start });
        }
        decode(header[0], number, payload).map_err(|reason| bad(start, reason))
    }

    /// Reads until `buffer` is full or the stream ends; returns the bytes read.
    fn fill(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        let mut filled = 0;
        while filled < buffer.len() {
            match self.source.read(&mut buffer[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        self.offset += filled as u64;
        Ok(filled)
    }
}

fn bad(offset: u64, reason: String) -> ChannelError {
    ChannelError::Bad { offset, reason }
}

/// The frame of kind `kind`, or what is wrong with it.
pub fn decode(kind: u8, number: u32, payload: Vec<u8>) -> Result<Frame, String> {
    let empty = |frame: Frame, payload: &[u8]| match payload.is_empty() {
        true => Ok(frame),
        false => Err(format!("a frame of kind {kind} carries {} unexpected bytes", payload.len())),
    };
    match kind {
        JOB if number == 0 => Ok(Frame::Job(payload)),
        JOB => Err(format!("a job description with number {number} (expected 0)")),
        PMI => Ok(Frame::Pmi { process: number, bytes: payload }),
        SIGNAL => empty(Frame::Signal(number as i32), &payload),
        STARTED => match <[u8; 4]>::try_from(payload.as_slice()) {
            Ok(pid) => Ok(Frame::Started { process: number, pid: u32::from_le_bytes(pid) }),
            Err(_) => Err(format!("a start report of {} bytes (expected 4)", payload.len())),
        },
        STDOUT => Ok(Frame::Output { process: number, stream: Stream::Stdout, bytes: payload }),
        STDERR => Ok(Frame::Output { process: number, stream: Stream::Stderr, bytes: payload }),
        EXITED => decode_ended(&payload).map(|ended| Frame::Exited { process: number, ended }),
        FAILED => match String::from_utf8(payload) {
            Ok(message) => Ok(Frame::Failed { status: number, message }),
            Err(_) => Err("a failure message that is not UTF-8".to_owned()),
        },
        FILE => Ok(Frame::File { file: number, bytes: payload }),
        FILE_END => empty(Frame::FileEnd { file: number }, &payload),
        other => Err(format!("unknown frame kind {other} (is the remote shell printing text?)")),
    }
}

fn decode_ended(payload: &[u8]) -> Result<Ended, String> {
    let Ok(bytes) = <[u8; 5]>::try_from(payload) else {
        return Err(format!("an exit report of {} bytes (expected 5)", payload.len()));
    };
    let value = i32::from_le_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]);
    match bytes[0] {
        0 => Ok(Ended::Code(value)),
        1 => Ok(Ended::Signal(value)),
        2 if value == 0 => Ok(Ended::Unknown),
        2 => Err(format!("an exit report of unknown end with value {value} (expected 0)")),
        tag => Err(format!("an exit report of unknown kind {tag}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn frames() -> impl Strategy<Value = Frame> {
        let bytes = proptest::collection::vec(any::<u8>(), 0..300);
        prop_oneof![
            bytes.clone().prop_map(Frame::Job),
            (any::<u32>(), bytes.clone()).prop_map(|(process, bytes)| Frame::Pmi { process, bytes }),
            any::<i32>().prop_map(Frame::Signal),
            (any::<u32>(), any::<u32>()).prop_map(|(process, pid)| Frame::Started { process, pid }),
            (any::<u32>(), any::<bool>(), bytes.clone()).prop_map(|(process, err, bytes)| Frame::Output {
                process,
                stream: if err { Stream::Stderr } else { Stream::Stdout },
                bytes
            }),
            (any::<u32>(), 0..3u8, any::<i32>()).prop_map(|(process, tag, value)| Frame::Exited {
                process,
                ended: [Ended::Code(value), Ended::Signal(value), Ended::Unknown][tag as usize]
            }),
            (any::<u32>(), ".{0,40}").prop_map(|(status, message)| Frame::Failed { status, message }),
            (any::<u32>(), bytes).prop_map(|(file, bytes)| Frame::File { file, bytes }),
            any::<u32>().prop_map(|file| Frame::FileEnd { file }),
        ]
    }

    proptest! {
        #[test]
        fn frames_read_back_as_written_whatever_the_read_sizes(
            sent in proptest::collection::vec(frames(), 0..20),
            chunk in 1usize..50,
        ) {
            let bytes: Vec<u8> = sent.iter().flat_map(Frame::encode).collect();
            let mut reader = FrameReader::new(Trickle { bytes: &bytes, chunk });
            for frame in &sent {
                prop_assert_eq!(&reader.next_frame().unwrap(), frame);
            }
            let closed = matches!(reader.next_frame(), Err(ChannelError::Closed));
            prop_assert!(closed, "the stream did not end after the frames");
        }

        #[test]
        fn a_cut_stream_is_truncated_never_a_wrong_frame(frame in frames(), cut_seed in any::<usize>()) {
            let bytes = frame.encode();
            let cut = 1 + cut_seed % (bytes.len() - 1).max(1);
            prop_assume!(cut < bytes.len());
            let mut reader = FrameReader::new(&bytes[..cut]);
            let truncated = matches!(reader.next_frame(), Err(ChannelError::Truncated { offset: 0 }));
            prop_assert!(truncated, "a frame cut at byte {} was not reported as truncated", cut);
        }
    }

    #[test]
    fn text_from_a_remote_shell_is_refused_with_its_offset() {
        let mut bytes = Frame::Signal(15).encode();
        bytes.extend_from_slice(b"Welcome to node7\n");
        let mut reader = FrameReader::new(bytes.as_slice());
        assert_eq!(reader.next_frame().unwrap(), Frame::Signal(15));
        let err = reader.next_frame().unwrap_err().to_string();
        assert!(err.contains("byte 9") && err.contains("unknown frame kind 87"), "{err}");
    }

    #[test]
    fn oversized_and_malformed_payloads_are_refused() {
        let mut huge = vec![PMI, 0, 0, 0, 0];
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        let err = FrameReader::new(huge.as_slice()).next_frame().unwrap_err().to_string();
        assert!(err.contains("4294967295 bytes"), "{err}");
        assert!(decode(STARTED, 1, vec![1, 2]).unwrap_err().contains("expected 4"));
        assert!(decode(EXITED, 1, vec![9, 0, 0, 0, 0]).unwrap_err().contains("unknown kind 9"));
        assert!(decode(SIGNAL, 9, vec![1]).unwrap_err().contains("unexpected bytes"));
        assert!(decode(FAILED, 1, vec![0xff]).unwrap_err().contains("UTF-8"));
        assert!(decode(JOB, 7, vec![]).unwrap_err().contains("number 7"));
    }

    /// A reader that returns at most `chunk` bytes per read.
    struct Trickle<'a> {
        bytes: &'a [u8],
        chunk: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
            let n = self.chunk.min(buffer.len()).min(self.bytes.len());
            buffer[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }
}
