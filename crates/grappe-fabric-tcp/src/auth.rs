//! Connection set-up: only processes that hold the job's secret join.
//!
//! Mutual challenge–response with HMAC-SHA256, in four fixed-size
//! messages, each opening with its own magic:
//!
//! 1. connecting → accepting: `GPTH`, version, the [`Hello`] (from, to), nonce C;
//! 2. accepting → connecting: `GPTN`, version, nonce S;
//! 3. connecting → accepting: `GPTP`, MAC(secret, connecting label, version, hello, C, S);
//! 4. accepting → connecting: `GPTV`, verdict (1 accepted, 0 refused, 2
//!    declined), MAC(secret, accepting label, version, hello, C, S, verdict)
//!    when accepted or declined.
//!
//! A declined connection is one the accepting side does not need: with
//! connections made on demand ([`crate::pairing`]), both ranks of a pair
//! may connect at once, and the accepting side keeps one connection of the
//! two. The verdict is covered by the proof, so nobody but a holder of the
//! secret can decline a connection.
//!
//! The connecting side proves first, so a stranger learns nothing but a
//! random nonce and a refusal. Each proof covers both nonces (neither
//! side can replay an old exchange), a label for its direction (one side's
//! proof is never the other's) and the hello (a proof for one pair of
//! ranks is not one for another). Proofs are checked in constant time.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::error::{LinkError, Phase, SecretError};
use crate::link::Link;

/// Version of the handshake and of the frame format after it.
const VERSION: u32 = 2;

const HELLO_MAGIC: [u8; 4] = *b"GPTH";
const NONCE_MAGIC: [u8; 4] = *b"GPTN";
const PROOF_MAGIC: [u8; 4] = *b"GPTP";
const VERDICT_MAGIC: [u8; 4] = *b"GPTV";

const NONCE_BYTES: usize = 32;
/// Bytes of a proof ([`Secret::prove`]).
pub const MAC_BYTES: usize = 32;
const HELLO_BYTES: usize = 16 + NONCE_BYTES;
const NONCE_MSG_BYTES: usize = 8 + NONCE_BYTES;
const PROOF_BYTES: usize = 4 + MAC_BYTES;
const VERDICT_BYTES: usize = 8 + MAC_BYTES;

const CONNECTING_LABEL: &[u8] = b"grappe-tcp connecting side";
const ACCEPTING_LABEL: &[u8] = b"grappe-tcp accepting side";

const ACCEPTED: u32 = 1;
const REFUSED: u32 = 0;
const DECLINED: u32 = 2;

type Nonce = [u8; NONCE_BYTES];

/// The job's secret: every process of the job holds it (the launcher
/// hands it out), and a connection is accepted only from a process that
/// proves it holds it too.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret([u8; 32]);

impl Secret {
    /// A fresh secret from the system's random source.
    ///
    /// # Panics
    /// If the system has no random source (`getrandom` fails), which Linux
    /// does not do once booted.
    pub fn generate() -> Secret {
        Secret(random())
    }

    /// The secret as 64 lowercase hexadecimal digits, to pass to other
    /// processes.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|byte| format!("{byte:02x}")).collect()
    }

    /// Reads a secret written by [`Secret::to_hex`] (either case).
    pub fn from_hex(text: &str) -> Result<Secret, SecretError> {
        let chars = text.chars().count();
        if chars != 64 {
            return Err(SecretError::Length { chars });
        }
        if let Some((at, found)) = text.chars().enumerate().find(|(_, c)| !c.is_ascii_hexdigit()) {
            return Err(SecretError::Digit { at, found });
        }
        let digit = |i: usize| (text.as_bytes()[i] as char).to_digit(16).expect("checked hexadecimal") as u8;
        Ok(Secret(std::array::from_fn(|i| digit(2 * i) << 4 | digit(2 * i + 1))))
    }

    /// A proof of holding the secret, bound to `parts` (each one
    /// length-prefixed after `label`, so that no two lists of parts give
    /// the same bytes): HMAC-SHA-256 with the secret as key. For links
    /// that authenticate with a message of their own rather than this
    /// module's handshake (the libfabric link's first record).
    pub fn prove(&self, label: &[u8], parts: &[&[u8]]) -> [u8; MAC_BYTES] {
        self.parts_mac(label, parts).finalize().into_bytes().into()
    }

    /// True if `proof` is [`Secret::prove`]`(label, parts)`, compared in
    /// constant time.
    pub fn verify(&self, label: &[u8], parts: &[&[u8]], proof: &[u8]) -> bool {
        self.parts_mac(label, parts).verify_slice(proof).is_ok()
    }

    fn parts_mac(&self, label: &[u8], parts: &[&[u8]]) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("HMAC takes keys of any length");
        mac.update(label);
        for part in parts {
            mac.update(&(part.len() as u64).to_le_bytes());
            mac.update(part);
        }
        mac
    }

    /// This secret's MAC over the handshake's words (and, for the
    /// accepting side's, the verdict it proves).
    fn mac(&self, label: &[u8], hello: Hello, client: &Nonce, server: &Nonce) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("HMAC takes keys of any length");
        mac.update(label);
        mac.update(&VERSION.to_le_bytes());
        mac.update(&hello.from.to_le_bytes());
        mac.update(&hello.to.to_le_bytes());
        mac.update(client);
        mac.update(server);
        mac
    }
}

/// Never prints the secret itself.
impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// What the connecting side asks for: who it is and whom it wants (world
/// ranks). The accepting side checks `to` against itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hello {
    /// The connecting rank.
    pub from: u32,
    /// The rank it wants to reach.
    pub to: u32,
}

impl fmt::Display for Hello {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rank {} asking for rank {}", self.from, self.to)
    }
}

/// A listening socket that accepts authenticated links.
#[derive(Debug)]
pub struct Listener {
    inner: TcpListener,
    local: SocketAddr,
}

impl Listener {
    /// Listens on `addr` (port 0: any free port).
    pub fn bind(addr: SocketAddr) -> Result<Listener, LinkError> {
        let io = |source| LinkError::Io { op: "bind", addr, source };
        let inner = TcpListener::bind(addr).map_err(io)?;
        let local = inner.local_addr().map_err(io)?;
        Ok(Listener { inner, local })
    }

    /// The address peers connect to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Accepts one connection and authenticates it: blocks until a peer
    /// connects, then at most `timeout` for the handshake. A peer that
    /// fails is disconnected and named in the error; the listener stays
    /// usable.
    pub fn accept(&self, secret: &Secret, timeout: Duration) -> Result<(Hello, Link), LinkError> {
        let (hello, link) = self.accept_deciding(secret, timeout, |_| true)?;
        Ok((hello, link.expect("a connection always wanted is never declined")))
    }

    /// As [`Listener::accept`], asking `wanted` once the peer proved it
    /// holds the secret (never before: a stranger is refused whatever
    /// `wanted` would say) whether this side wants the connection: if not,
    /// the peer is told it is declined, and the link is `None`.
    pub fn accept_deciding(
        &self,
        secret: &Secret,
        timeout: Duration,
        wanted: impl FnOnce(Hello) -> bool,
    ) -> Result<(Hello, Option<Link>), LinkError> {
        let (stream, peer) = loop {
            match self.inner.accept() {
                Ok(accepted) => break accepted,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(source) => return Err(LinkError::Io { op: "accept on", addr: self.local, source }),
            }
        };
        let handshake = Handshake::new(&stream, peer, timeout)?;
        let (hello, accepted) = handshake.accepting(secret, wanted)?;
        match accepted {
            true => Ok((hello, Some(Link::new(stream)?))),
            false => Ok((hello, None)),
        }
    }

    /// Bounds the wait of [`Listener::accept`] for a connection (Linux
    /// honours the receive timeout of a listening socket): a peer that
    /// never connects then fails the wait instead of hanging it.
    pub fn set_accept_timeout(&self, timeout: Duration) -> Result<(), LinkError> {
        let timeval = nix::sys::time::TimeVal::new(
            timeout.as_secs() as nix::sys::time::time_t,
            timeout.subsec_micros() as nix::sys::time::suseconds_t,
        );
        nix::sys::socket::setsockopt(&self.inner, nix::sys::socket::sockopt::ReceiveTimeout, &timeval)
            .map_err(|e| LinkError::Io { op: "set the accept timeout of", addr: self.local, source: e.into() })
    }

    /// The listening socket, to watch for connections.
    pub fn raw_fd(&self) -> RawFd {
        self.inner.as_raw_fd()
    }
}

/// Connects to `addr` and authenticates both sides, all within `timeout`.
pub fn connect(addr: SocketAddr, hello: Hello, secret: &Secret, timeout: Duration) -> Result<Link, LinkError> {
    connect_offering(addr, hello, secret, timeout)?.ok_or_else(|| LinkError::Auth {
        peer: addr,
        detail: format!("the accepting side declined the connection ({hello}): it has one for that pair already"),
    })
}

/// As [`connect`], to a side that may decline the connection (see
/// [`Listener::accept_deciding`]): `None` then, once it proved that it
/// holds the secret.
pub fn connect_offering(
    addr: SocketAddr,
    hello: Hello,
    secret: &Secret,
    timeout: Duration,
) -> Result<Option<Link>, LinkError> {
    let started = Instant::now();
    let stream = TcpStream::connect_timeout(&addr, timeout).map_err(|source| match source.kind() {
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => {
            LinkError::Timeout { peer: addr, phase: Phase::Connecting, after: timeout }
        }
        _ => LinkError::Io { op: "connect to", addr, source },
    })?;
    let handshake = Handshake::new(&stream, addr, timeout.saturating_sub(started.elapsed()))?;
    match handshake.connecting(hello, secret)? {
        true => Ok(Some(Link::new(stream)?)),
        false => Ok(None),
    }
}

/// One handshake on a blocking stream, against a deadline.
struct Handshake<'a> {
    stream: &'a TcpStream,
    peer: SocketAddr,
    deadline: Instant,
    timeout: Duration,
}

impl<'a> Handshake<'a> {
    fn new(stream: &'a TcpStream, peer: SocketAddr, timeout: Duration) -> Result<Handshake<'a>, LinkError> {
        // Each side writes twice in a row of the exchange: no Nagle delay.
        stream.set_nodelay(true).map_err(|source| LinkError::Io {
            op: "configure the connection to",
            addr: peer,
            source,
        })?;
        Ok(Handshake { stream, peer, deadline: Instant::now() + timeout, timeout })
    }

    /// The accepting side: the peer's hello once it proved it holds
    /// `secret`, and whether `wanted` kept the connection.
    fn accepting(&self, secret: &Secret, wanted: impl FnOnce(Hello) -> bool) -> Result<(Hello, bool), LinkError> {
        let message: [u8; HELLO_BYTES] = self.receive(HELLO_MAGIC, Phase::WaitingHello)?;
        self.expect_version(word(&message, 4), Phase::WaitingHello)?;
        let hello = Hello { from: word(&message, 8), to: word(&message, 12) };
        let client: Nonce = message[16..].try_into().expect("fixed size");
        let server: Nonce = random();
        self.send(&[&NONCE_MAGIC, &VERSION.to_le_bytes(), &server], Phase::SendingNonce)?;

        let proof: [u8; PROOF_BYTES] = self.receive(PROOF_MAGIC, Phase::WaitingProof)?;
        if secret.mac(CONNECTING_LABEL, hello, &client, &server).verify_slice(&proof[4..]).is_err() {
            // Say no rather than vanish, so an honest peer with another
            // secret reports the true reason; a stranger learns nothing more.
            let _ = self.send(&[&VERDICT_MAGIC, &REFUSED.to_le_bytes(), &[0; MAC_BYTES]], Phase::SendingVerdict);
            return Err(LinkError::Auth {
                peer: self.peer,
                detail: format!(
                    "the connecting side ({hello}) did not prove that it holds the job's secret; \
                     connection refused and closed"
                ),
            });
        }
        let accepted = wanted(hello);
        let verdict = if accepted { ACCEPTED } else { DECLINED };
        let mut mac = secret.mac(ACCEPTING_LABEL, hello, &client, &server);
        mac.update(&verdict.to_le_bytes());
        let mine = mac.finalize().into_bytes();
        self.send(&[&VERDICT_MAGIC, &verdict.to_le_bytes(), &mine], Phase::SendingVerdict)?;
        Ok((hello, accepted))
    }

    /// The connecting side: once both sides proved they hold `secret`,
    /// true if the accepting side kept the connection, false if it
    /// declined it.
    fn connecting(&self, hello: Hello, secret: &Secret) -> Result<bool, LinkError> {
        let client: Nonce = random();
        let words = [VERSION.to_le_bytes(), hello.from.to_le_bytes(), hello.to.to_le_bytes()];
        self.send(&[&HELLO_MAGIC, &words[0], &words[1], &words[2], &client], Phase::SendingHello)?;

        let message: [u8; NONCE_MSG_BYTES] = self.receive(NONCE_MAGIC, Phase::WaitingNonce)?;
        self.expect_version(word(&message, 4), Phase::WaitingNonce)?;
        let server: Nonce = message[8..].try_into().expect("fixed size");
        let mine = secret.mac(CONNECTING_LABEL, hello, &client, &server).finalize().into_bytes();
        self.send(&[&PROOF_MAGIC, &mine], Phase::SendingProof)?;

        let verdict: [u8; VERDICT_BYTES] = self.receive(VERDICT_MAGIC, Phase::WaitingVerdict)?;
        let auth = |detail: &str| LinkError::Auth { peer: self.peer, detail: format!("{detail} (as {hello})") };
        let kept = match word(&verdict, 4) {
            ACCEPTED => true,
            DECLINED => false,
            REFUSED => {
                return Err(auth("the accepting side refused our proof: the two sides hold different job secrets"));
            }
            other => {
                return Err(self.malformed(Phase::WaitingVerdict, format!("verdict {other}, neither 0, 1 nor 2")));
            }
        };
        let mut mac = secret.mac(ACCEPTING_LABEL, hello, &client, &server);
        mac.update(&verdict[4..8]);
        if mac.verify_slice(&verdict[8..]).is_err() {
            return Err(auth("the accepting side did not prove that it holds the job's secret; connection closed"));
        }
        Ok(kept)
    }

    fn send(&self, pieces: &[&[u8]], phase: Phase) -> Result<(), LinkError> {
        let message = pieces.concat();
        let mut sent = 0;
        while sent < message.len() {
            self.stream.set_write_timeout(Some(self.remaining(phase)?)).map_err(|e| self.io_error(e))?;
            match (&mut &*self.stream).write(&message[sent..]) {
                Ok(0) => return Err(self.malformed(phase, "the connection refuses more bytes".to_owned())),
                Ok(n) => sent += n,
                Err(e) => self.retry_or_fail(e, phase)?,
            }
        }
        Ok(())
    }

    /// A message of `N` bytes that opens with `magic`, checked as soon as it
    /// arrives: a peer speaking another protocol is told apart at once.
    fn receive<const N: usize>(&self, magic: [u8; 4], phase: Phase) -> Result<[u8; N], LinkError> {
        let mut message = [0u8; N];
        self.receive_into(&mut message, 0, 4, phase)?;
        self.expect_magic(&message, magic, phase)?;
        self.receive_into(&mut message, 4, N, phase)?;
        Ok(message)
    }

    /// Fills `message[received..until]`.
    fn receive_into(
        &self,
        message: &mut [u8],
        mut received: usize,
        until: usize,
        phase: Phase,
    ) -> Result<(), LinkError> {
        let expected = message.len();
        while received < until {
            self.stream.set_read_timeout(Some(self.remaining(phase)?)).map_err(|e| self.io_error(e))?;
            match (&mut &*self.stream).read(&mut message[received..until]) {
                Ok(0) => {
                    let detail =
                        format!("the peer closed the connection after {received} of the {expected} bytes expected");
                    return Err(self.malformed(phase, detail));
                }
                Ok(n) => received += n,
                Err(e) => self.retry_or_fail(e, phase)?,
            }
        }
        Ok(())
    }

    /// Time left before the deadline: a timeout error once none is.
    fn remaining(&self, phase: Phase) -> Result<Duration, LinkError> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(LinkError::Timeout { peer: self.peer, phase, after: self.timeout });
        }
        Ok(left)
    }

    /// Ok for an interrupted call (try again), the error otherwise; a
    /// socket timeout is the handshake's.
    fn retry_or_fail(&self, error: io::Error, phase: Phase) -> Result<(), LinkError> {
        match error.kind() {
            io::ErrorKind::Interrupted => Ok(()),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
                Err(LinkError::Timeout { peer: self.peer, phase, after: self.timeout })
            }
            io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe => {
                Err(self.malformed(phase, format!("the peer closed the connection ({error})")))
            }
            _ => Err(self.io_error(error)),
        }
    }

    fn expect_magic(&self, message: &[u8], magic: [u8; 4], phase: Phase) -> Result<(), LinkError> {
        if message[..4] == magic {
            return Ok(());
        }
        let (expected, read) = (String::from_utf8_lossy(&magic), message[..4].escape_ascii());
        Err(self.malformed(
            phase,
            format!("read \"{read}\" where the magic \"{expected}\" was expected: not a grappe link"),
        ))
    }

    fn expect_version(&self, version: u32, phase: Phase) -> Result<(), LinkError> {
        if version == VERSION {
            return Ok(());
        }
        Err(self
            .malformed(phase, format!("the peer speaks version {version} of the link protocol, this side {VERSION}")))
    }

    fn malformed(&self, phase: Phase, detail: String) -> LinkError {
        LinkError::Handshake { peer: self.peer, phase, detail }
    }

    fn io_error(&self, source: io::Error) -> LinkError {
        LinkError::Io { op: "talk to", addr: self.peer, source }
    }
}

/// The little-endian word at `at`.
fn word(message: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(message[at..at + 4].try_into().expect("fixed size"))
}

fn random<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).expect("the system's random source works");
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_round_trip_through_hex() {
        let secret = Secret::generate();
        assert_eq!(Secret::from_hex(&secret.to_hex()), Ok(secret.clone()));
        assert_eq!(Secret::from_hex(&secret.to_hex().to_uppercase()), Ok(secret));
    }

    #[test]
    fn a_proof_holds_for_its_secret_and_parts_only() {
        let (secret, other) = (Secret::generate(), Secret::generate());
        let proof = secret.prove(b"label", &[b"job", b"ab"]);
        assert!(secret.verify(b"label", &[b"job", b"ab"], &proof));
        assert!(!other.verify(b"label", &[b"job", b"ab"], &proof), "another secret");
        assert!(!secret.verify(b"other", &[b"job", b"ab"], &proof), "another label");
        // The same bytes cut differently are other parts.
        assert!(!secret.verify(b"label", &[b"joba", b"b"], &proof), "parts cut elsewhere");
        assert!(!secret.verify(b"label", &[b"job", b"ab"], &proof[..31]), "a cut proof");
    }

    #[test]
    fn a_bad_hex_secret_says_what_is_wrong() {
        assert_eq!(Secret::from_hex("abc"), Err(SecretError::Length { chars: 3 }));
        let mut text = "0".repeat(64);
        text.replace_range(17..18, "g");
        assert_eq!(Secret::from_hex(&text), Err(SecretError::Digit { at: 17, found: 'g' }));
        let text = format!("{}é", "0".repeat(63));
        assert_eq!(Secret::from_hex(&text), Err(SecretError::Digit { at: 63, found: 'é' }));
    }

    #[test]
    fn debug_never_shows_the_secret() {
        let secret = Secret::from_hex(&"ab".repeat(32)).unwrap();
        assert!(!format!("{secret:?}").contains("ab"));
    }

    #[test]
    fn proofs_depend_on_direction_hello_and_both_nonces() {
        let secret = Secret::generate();
        let hello = Hello { from: 1, to: 2 };
        let (c, s) = ([1u8; 32], [2u8; 32]);
        let proof = |label, hello, c: &Nonce, s: &Nonce| secret.mac(label, hello, c, s).finalize().into_bytes();
        let base = proof(CONNECTING_LABEL, hello, &c, &s);
        assert_ne!(base, proof(ACCEPTING_LABEL, hello, &c, &s));
        assert_ne!(base, proof(CONNECTING_LABEL, Hello { from: 2, to: 1 }, &c, &s));
        assert_ne!(base, proof(CONNECTING_LABEL, hello, &s, &c));
        assert_ne!(base, proof(CONNECTING_LABEL, hello, &c, &c));
        assert_eq!(base, proof(CONNECTING_LABEL, hello, &c, &s));
    }
}
