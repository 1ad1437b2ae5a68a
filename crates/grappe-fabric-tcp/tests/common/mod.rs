//! Connected pairs over 127.0.0.1 and record payloads that say where they
//! come from.
#![allow(dead_code)]

use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use grappe_fabric_tcp::{Link, LinkError};

/// Two raw streams connected to each other.
pub fn raw_pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let near = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (far, _) = listener.accept().unwrap();
    (near, far)
}

/// Two links over one connection (no handshake: the tests of the
/// handshake are elsewhere).
pub fn link_pair() -> (Link, Link) {
    let (near, far) = raw_pair();
    (Link::new(near).unwrap(), Link::new(far).unwrap())
}

/// A link, and the raw stream at its other end.
pub fn link_and_raw() -> (Link, TcpStream) {
    let (near, far) = raw_pair();
    (Link::new(near).unwrap(), far)
}

/// The payload of record `seed` of `len` bytes: xorshift words, so that
/// any misplaced or swapped slice of a payload shows.
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut bytes = vec![0; len];
    for chunk in bytes.chunks_mut(8) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        chunk.copy_from_slice(&state.to_le_bytes()[..chunk.len()]);
    }
    bytes
}

/// Peeks until `link` gives a record or an error (the loopback delivers
/// at once; the bound is a safety net against a hang, not a timing).
pub fn next_event(link: &mut Link) -> Result<(grappe_fabric_tcp::Meta, Vec<u8>), LinkError> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(record) = link.peek()? {
            let got = (record.meta(), record.payload().to_vec());
            link.consume();
            return Ok(got);
        }
        assert!(Instant::now() < deadline, "no record and no error from {} in 30 s", link.peer_addr());
        std::thread::yield_now();
    }
}
