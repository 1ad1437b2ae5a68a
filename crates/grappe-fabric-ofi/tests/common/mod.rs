//! Endpoints on the loopback address, links between them, and record
//! payloads that say where they come from.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use grappe_fabric_ofi::{Config, Endpoint, Ends, Link, LinkError, Matching, Meta};

/// The providers tested: `GRAPPE_OFI_PROVIDERS` (comma-separated) or
/// `tcp;ofi_rxm` and `udp;ofi_rxd`, which Debian's libfabric has.
pub fn providers() -> Vec<String> {
    match std::env::var("GRAPPE_OFI_PROVIDERS") {
        Ok(list) => list.split(',').map(str::to_owned).collect(),
        Err(_) => vec!["tcp;ofi_rxm".to_owned(), "udp;ofi_rxd".to_owned()],
    }
}

/// The settings of the tests' endpoints: `provider` on 127.0.0.1.
pub fn config(provider: &str, matching: Matching) -> Config {
    Config { matching, ..Config::new(provider, "127.0.0.1") }
}

/// An endpoint as `config` says.
pub fn endpoint(config: &Config) -> Endpoint {
    Endpoint::open(config).unwrap_or_else(|e| panic!("opening an endpoint of {:?}: {e}", config.provider))
}

/// Two links, each end on its own endpoint.
pub fn link_pair(config: &Config) -> (Link, Link) {
    let (a, b) = (endpoint(config), endpoint(config));
    let near = a.link(b.name(), Ends { local: 0, remote: 1 }).unwrap();
    let far = b.link(a.name(), Ends { local: 1, remote: 0 }).unwrap();
    (near, far)
}

/// The provider and matching combinations tested.
pub fn variants() -> Vec<Config> {
    let mut all = Vec::new();
    for provider in providers() {
        for matching in [Matching::Tagged, Matching::Messages] {
            all.push(config(&provider, matching));
        }
    }
    all
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

/// Peeks until `link` gives a record or an error. The loopback delivers
/// at once; the bound is a safety net against a hang, not a timing.
pub fn next_event(link: &mut Link) -> Result<(Meta, Vec<u8>), LinkError> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(record) = link.peek()? {
            let got = (record.meta(), record.payload().to_vec());
            link.consume();
            return Ok(got);
        }
        assert!(Instant::now() < deadline, "no record and no error from {} in 60 s", link.peer());
        std::thread::yield_now();
    }
}
