//! The errors the engine produces, and the status of a received message.
//!
//! Only what the protocols themselves find out lives here: a message longer
//! than its receive buffer, a collective whose calls do not match, a peer
//! that died, a job being stopped, a record that cannot be decoded, the
//! fabric failing underneath, a rank missing at connection. Misuse of the
//! API (a bad rank or tag, a freed communicator, a value that does not
//! (de)serialise) is found above, by `grappe-comm`, whose `Error` is the
//! one programs see: it takes each of these variants over one for one.

use std::borrow::Cow;

use grappe_fabric::FabricError;

/// What the engine found wrong. `#[non_exhaustive]`: new causes will appear.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The message is longer than the receive buffer.
    #[error(
        "message truncated: {message_bytes} bytes from rank {source_rank} (tag {tag}) into a {buffer_bytes}-byte buffer"
    )]
    Truncated {
        /// Sender, as a rank of the communicator.
        source_rank: usize,
        /// Tag of the message.
        tag: i32,
        /// Bytes sent.
        message_bytes: usize,
        /// Bytes the receive could hold.
        buffer_bytes: usize,
    },
    /// The ranks called a collective with sizes (or roots, or collectives)
    /// that do not match, as MPI forbids: found where a message or the
    /// shared-memory exchange showed it. The communicator's collectives are
    /// revoked by then: every rank of it gets this error from the call in
    /// which it learns of the mismatch, and from every later collective on
    /// that communicator, instead of data built from inconsistent parts
    /// or a wait for a peer that will never send.
    #[error("{0}")]
    CollectiveMismatch(Box<Mismatch>),
    /// A peer rank died (killed, crashed, aborted) while we needed it.
    #[error("rank {rank} (pid {pid}) is gone: {cause}")]
    PeerDied {
        /// The dead rank (world numbering).
        rank: usize,
        /// Its process.
        pid: u32,
        /// How we found out.
        cause: String,
    },
    /// A rank of another host is lost: its connection broke before it said
    /// it finalized, or it announced a failure.
    #[error("rank {rank} on host {host} is lost: {cause}")]
    PeerLost {
        /// The lost rank (world numbering).
        rank: usize,
        /// Its host.
        host: String,
        /// How we found out.
        cause: String,
    },
    /// The job is being stopped: this process received `signal` (the
    /// launcher stops every process when one fails). Runtime calls fail
    /// with it so that each rank unwinds and keeps its trace.
    #[error("the job is being stopped (signal {signal} received)")]
    Stopped {
        /// The signal received (SIGTERM).
        signal: i32,
    },
    /// A record in a mailbox could not be decoded: memory corruption or a
    /// foreign process writing into the segment.
    #[error("corrupt record from rank {source_rank}: {detail}")]
    Corrupt {
        /// The ring the record came from.
        source_rank: usize,
        /// What was wrong.
        detail: String,
    },
    /// The fabric failed underneath.
    #[error(transparent)]
    Fabric(#[from] FabricError),
    /// A rank connecting its engine found a peer that had not announced
    /// itself in the host segment: start-up went wrong (the processes of
    /// the job announce every rank before any rank connects).
    #[error("rank {rank} did not announce itself in the host segment")]
    NotAnnounced {
        /// The missing rank (world numbering).
        rank: usize,
    },
}

/// MPI error classes, for the C ABI and for users who think in them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorClass {
    /// MPI_ERR_RANK
    Rank,
    /// MPI_ERR_TAG
    Tag,
    /// MPI_ERR_TRUNCATE
    Truncate,
    /// MPI_ERR_TYPE
    Type,
    /// MPI_ERR_COUNT / MPI_ERR_BUFFER
    Count,
    /// MPI_ERR_COMM
    Comm,
    /// MPI_ERR_PROC_FAILED (ULFM)
    ProcFailed,
    /// MPI_ERR_OTHER
    Other,
}

impl Error {
    /// The MPI error class of this error.
    pub fn class(&self) -> ErrorClass {
        match self {
            Error::Truncated { .. } | Error::CollectiveMismatch(_) => ErrorClass::Truncate,
            Error::PeerDied { .. } | Error::PeerLost { .. } | Error::Stopped { .. } => ErrorClass::ProcFailed,
            Error::Corrupt { .. } | Error::Fabric(_) | Error::NotAnnounced { .. } => ErrorClass::Other,
        }
    }

    /// The same error again, for a failure reported more than once (a
    /// request whose test said it failed, waited for afterwards).
    pub fn repeat(&self) -> Error {
        match self {
            &Error::Truncated { source_rank, tag, message_bytes, buffer_bytes } => {
                Error::Truncated { source_rank, tag, message_bytes, buffer_bytes }
            }
            Error::CollectiveMismatch(mismatch) => Error::CollectiveMismatch(mismatch.clone()),
            Error::PeerDied { rank, pid, cause } => Error::PeerDied { rank: *rank, pid: *pid, cause: cause.clone() },
            Error::PeerLost { rank, host, cause } => {
                Error::PeerLost { rank: *rank, host: host.clone(), cause: cause.clone() }
            }
            Error::Stopped { signal } => Error::Stopped { signal: *signal },
            Error::Corrupt { source_rank, detail } => {
                Error::Corrupt { source_rank: *source_rank, detail: detail.clone() }
            }
            Error::Fabric(e) => Error::Fabric(e.repeat()),
            Error::NotAnnounced { rank } => Error::NotAnnounced { rank: *rank },
        }
    }
}

/// What a rank found out about a collective call whose ranks disagree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// The collective, as the rank that found the mismatch called it.
    pub op: Cow<'static, str>,
    /// The rank that found it (communicator numbering).
    pub found_by: usize,
    /// The calls it compared, as far as it knows them: its own first.
    pub calls: Vec<Call>,
    /// How it found out (the message or exchange that showed it).
    pub evidence: String,
}

/// One rank's side of a mismatched collective call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// The rank (communicator numbering).
    pub rank: usize,
    /// Its collective, if it is not the one of [`Mismatch::op`].
    pub op: Option<Cow<'static, str>>,
    /// Bytes its call names (the vector of an allreduce, one block of a
    /// gather...), if known: a message tells the sender's size exactly
    /// below 64 MiB, and only that it differs above.
    pub bytes: Option<u64>,
    /// Its root, for rooted collectives, if known.
    pub root: Option<usize>,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: the ranks' calls do not match: ", self.op)?;
        for (i, call) in self.calls.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            write!(f, "{sep}rank {} called ", call.rank)?;
            if let Some(op) = &call.op {
                write!(f, "{op} ")?;
            }
            match call.bytes {
                Some(bytes) => write!(f, "with {bytes} bytes")?,
                None => write!(f, "with a size it did not tell")?,
            }
            if let Some(root) = call.root {
                write!(f, " and root {root}")?;
            }
        }
        write!(f, " (found by rank {}: {}); the communicator's collectives are revoked", self.found_by, self.evidence)
    }
}

/// Calls, names and evidence kept when a mismatch travels between ranks:
/// enough to explain it, small enough for a mailbox record or an arena
/// slot (1 KiB).
const MAX_CALLS: usize = 8;
const MAX_NAME: usize = 24;
const MAX_TEXT: usize = 240;
/// "Not known" in the encoding of a call.
const UNKNOWN: u64 = u64::MAX;

impl Mismatch {
    /// The mismatch as bytes (at most [`Mismatch::MAX_ENCODED`]): what a
    /// revocation carries to the other ranks. Calls past the eighth, names
    /// past 24 bytes and evidence past 240 are left out.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(256);
        let calls = &self.calls[..self.calls.len().min(MAX_CALLS)];
        put_word(&mut out, self.found_by as u64);
        put_word(&mut out, calls.len() as u64);
        for call in calls {
            put_word(&mut out, call.rank as u64);
            put_word(&mut out, call.bytes.unwrap_or(UNKNOWN));
            put_word(&mut out, call.root.map_or(UNKNOWN, |r| r as u64));
            put_text(&mut out, call.op.as_deref().unwrap_or(""), MAX_NAME);
        }
        put_text(&mut out, &self.op, MAX_NAME);
        put_text(&mut out, &self.evidence, MAX_TEXT);
        debug_assert!(out.len() <= Self::MAX_ENCODED);
        out
    }

    /// Largest output of [`encode`](Self::encode).
    pub const MAX_ENCODED: usize = 16 + MAX_CALLS * (24 + 2 + MAX_NAME) + (2 + MAX_NAME) + (2 + MAX_TEXT);

    /// Reads what [`encode`](Self::encode) wrote; `None` if the bytes are
    /// not such a record.
    pub fn decode(bytes: &[u8]) -> Option<Mismatch> {
        let mut at = 0;
        let found_by = usize::try_from(take_word(bytes, &mut at)?).ok()?;
        let count = take_word(bytes, &mut at)?;
        if count > MAX_CALLS as u64 {
            return None;
        }
        let mut calls = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let rank = usize::try_from(take_word(bytes, &mut at)?).ok()?;
            let bytes_word = take_word(bytes, &mut at)?;
            let root = take_word(bytes, &mut at)?;
            let op = take_text(bytes, &mut at, MAX_NAME)?;
            calls.push(Call {
                rank,
                op: (!op.is_empty()).then_some(Cow::Owned(op)),
                bytes: (bytes_word != UNKNOWN).then_some(bytes_word),
                root: (root != UNKNOWN).then_some(root as usize),
            });
        }
        let op = Cow::Owned(take_text(bytes, &mut at, MAX_NAME)?);
        let evidence = take_text(bytes, &mut at, MAX_TEXT)?;
        (at == bytes.len()).then_some(Mismatch { op, found_by, calls, evidence })
    }
}

fn put_word(out: &mut Vec<u8>, word: u64) {
    out.extend_from_slice(&word.to_le_bytes());
}

/// A string of at most `max` bytes (cut at a character boundary), after
/// its 2-byte length.
fn put_text(out: &mut Vec<u8>, text: &str, max: usize) {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    out.extend_from_slice(&(end as u16).to_le_bytes());
    out.extend_from_slice(&text.as_bytes()[..end]);
}

fn take_word(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let word = u64::from_le_bytes(bytes.get(*at..*at + 8)?.try_into().ok()?);
    *at += 8;
    Some(word)
}

fn take_text(bytes: &[u8], at: &mut usize, max: usize) -> Option<String> {
    let len = u16::from_le_bytes(bytes.get(*at..*at + 2)?.try_into().ok()?) as usize;
    if len > max {
        return None;
    }
    let text = std::str::from_utf8(bytes.get(*at + 2..*at + 2 + len)?).ok()?.to_owned();
    *at += 2 + len;
    Some(text)
}

/// Result of the engine's operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What a completed receive or a probe tells about a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Status {
    /// Sender, as a rank of the communicator the message was received on.
    pub source: usize,
    /// The message tag.
    pub tag: i32,
    /// Length of the message in bytes.
    pub bytes: usize,
}

impl Status {
    /// Number of `T` elements in the message, if it is a whole number.
    pub fn count<T>(&self) -> Option<usize> {
        let size = std::mem::size_of::<T>();
        if size == 0 {
            return Some(0);
        }
        (self.bytes % size == 0).then_some(self.bytes / size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn text(max: usize) -> impl Strategy<Value = String> {
        proptest::collection::vec(any::<char>(), 0..max).prop_map(|chars| chars.into_iter().collect())
    }

    fn calls(max: usize) -> impl Strategy<Value = Vec<Call>> {
        let call = (any::<u32>(), proptest::option::of(text(30)), any::<Option<u32>>(), any::<Option<u16>>()).prop_map(
            |(rank, op, bytes, root)| Call {
                rank: rank as usize,
                op: op.map(Cow::Owned),
                bytes: bytes.map(u64::from),
                root: root.map(usize::from),
            },
        );
        proptest::collection::vec(call, 0..max)
    }

    proptest! {
        #[test]
        fn mismatches_within_the_limits_round_trip(
            op in "[a-z_]{1,24}", found_by in any::<u32>(), calls in calls(9), evidence in "[ -~]{0,240}",
        ) {
            // Names within the limit; an empty name reads back as none.
            let name = |o: Cow<'static, str>| o.chars().filter(char::is_ascii_lowercase).take(MAX_NAME).collect::<String>();
            let calls: Vec<Call> = calls
                .into_iter()
                .take(MAX_CALLS)
                .map(|c| Call { op: c.op.map(name).filter(|o| !o.is_empty()).map(Cow::Owned), ..c })
                .collect();
            let why = Mismatch { op: op.into(), found_by: found_by as usize, calls, evidence };
            prop_assert_eq!(Mismatch::decode(&why.encode()), Some(why));
        }

        #[test]
        fn any_mismatch_encodes_within_its_bound_and_reads_back(
            op in text(100), found_by in any::<u32>(), calls in calls(20), evidence in text(600),
        ) {
            let why = Mismatch { op: op.into(), found_by: found_by as usize, calls, evidence };
            let bytes = why.encode();
            prop_assert!(bytes.len() <= Mismatch::MAX_ENCODED);
            let back = Mismatch::decode(&bytes).expect("its own encoding");
            prop_assert_eq!(back.calls.len(), why.calls.len().min(MAX_CALLS));
            prop_assert!(why.evidence.starts_with(&back.evidence) && why.op.starts_with(&*back.op));
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            let _ = Mismatch::decode(&bytes);
        }
    }

    #[test]
    fn a_mismatch_names_the_calls_and_says_the_collectives_are_revoked() {
        let why = Mismatch {
            op: "allreduce".into(),
            found_by: 1,
            calls: vec![
                Call { rank: 1, op: None, bytes: Some(24), root: None },
                Call { rank: 0, op: Some("bcast".into()), bytes: None, root: Some(2) },
            ],
            evidence: "a message of 16 bytes".into(),
        };
        let error = Error::CollectiveMismatch(Box::new(why));
        assert_eq!(error.class(), ErrorClass::Truncate);
        assert_eq!(
            error.to_string(),
            "allreduce: the ranks' calls do not match: rank 1 called with 24 bytes, rank 0 called bcast with a \
             size it did not tell and root 2 (found by rank 1: a message of 16 bytes); the communicator's \
             collectives are revoked"
        );
    }
}
