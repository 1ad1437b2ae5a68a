//! ofi-peer: the other end of a libfabric link, for the tests between two
//! processes and for checking a provider by hand.
//!
//! ```text
//! ofi-peer [--provider 'tcp;ofi_rxm'] [--node 127.0.0.1] [--matching tagged|messages] \
//!          [--role echo|hold] [--sizes 0,1,65536,...] [--lost-after-ms N]
//! ```
//!
//! Without `--provider`, libfabric chooses, as `FI_PROVIDER` says. It
//! opens an endpoint, prints `PROVIDER <name>` and `NAME <hex>` (its name, as
//! `name_to_text` writes it), reads its peer's name the same way from a
//! line of its standard input, and makes the link with ends 1 (itself)
//! and 0 (the peer). Then, as `echo`, it sends one record of each size
//! (meta `[1, i, 0, 0]`, payload `pattern(i, size)`) and sends back every
//! record it receives (meta `[2, i, 0, 0]` for a record `[_, i, ..]`),
//! until the peer closes the link, which it reports as `CLOSED ...`; as
//! `hold`, it sends `ready` and reads until it is killed. It exits 1 if
//! the link fails.

use std::io::Write;
use std::time::{Duration, Instant};

use grappe_fabric_ofi::{Config, Endpoint, Ends, Link, Matching, Meta, name_from_text, name_to_text};

/// How long a run may take at most: a peer that vanished ends it.
const PATIENCE: Duration = Duration::from_secs(120);

const FROM_PEER: u32 = 1;
const ECHO: u32 = 2;

fn main() {
    let mut config = Config { node: Some("127.0.0.1".into()), ..Config::default() };
    let (mut role, mut sizes) = (String::from("echo"), Vec::new());
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| fail(&format!("{arg} needs a value")));
        match arg.as_str() {
            "--provider" => config.provider = Some(value()),
            "--node" => config.node = Some(value()),
            "--matching" => {
                config.matching = match value().as_str() {
                    "tagged" => Matching::Tagged,
                    "messages" => Matching::Messages,
                    other => fail(&format!("--matching takes tagged or messages, not {other}")),
                }
            }
            "--role" => role = value(),
            "--sizes" => {
                sizes =
                    value().split(',').map(|n| n.parse().unwrap_or_else(|_| fail("--sizes takes numbers"))).collect()
            }
            "--lost-after-ms" => {
                let millis = value().parse().unwrap_or_else(|_| fail("--lost-after-ms takes a number"));
                config.lost_after = Duration::from_millis(millis);
            }
            other => fail(&format!("unknown argument {other}")),
        }
    }
    let endpoint = Endpoint::open(&config).unwrap_or_else(|e| fail(&e.to_string()));
    println!("PROVIDER {}", endpoint.provider());
    println!("NAME {}", name_to_text(endpoint.name()));
    std::io::stdout().flush().unwrap_or_else(|e| fail(&e.to_string()));
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap_or_else(|e| fail(&e.to_string()));
    let peer = name_from_text(line.trim()).unwrap_or_else(|e| fail(&e.to_string()));
    let mut link = endpoint.link(&peer, Ends { local: 1, remote: 0 }).unwrap_or_else(|e| fail(&e.to_string()));
    match role.as_str() {
        "echo" => echo(&mut link, &sizes),
        "hold" => hold(&mut link),
        other => fail(&format!("unknown role {other}")),
    }
}

fn fail(why: &str) -> ! {
    eprintln!("ofi-peer: {why}");
    std::process::exit(1);
}

/// Sends one record of each size, echoes every record, until the peer
/// closes.
fn echo(link: &mut Link, sizes: &[usize]) {
    let mut queue: Vec<(Meta, Vec<u8>)> =
        sizes.iter().enumerate().map(|(i, &n)| ([FROM_PEER, i as u32, 0, 0], pattern(i as u64, n))).rev().collect();
    let deadline = Instant::now() + PATIENCE;
    let mut sending = true;
    loop {
        while let Some((meta, payload)) = queue.pop().filter(|_| sending) {
            match link.try_push(meta, &payload) {
                Ok(true) => {}
                Ok(false) => {
                    queue.push((meta, payload));
                    break;
                }
                // The peer closed: read up to its last record.
                Err(error) if error.is_clean_close() => sending = false,
                Err(error) => fail(&format!("the link failed: {error}")),
            }
        }
        let _ = link.flush();
        match link.peek() {
            Ok(Some(record)) => {
                let echoed = ([ECHO, record.meta()[1], 0, 0], record.payload().to_vec());
                link.consume();
                queue.insert(0, echoed);
            }
            Ok(None) => {}
            Err(error) if error.is_clean_close() => {
                println!("CLOSED {error}");
                return;
            }
            Err(error) => fail(&format!("the link failed: {error}")),
        }
        if Instant::now() > deadline {
            fail("the peer neither closed nor failed in time");
        }
    }
}

/// Sends `ready`, then reads until killed.
fn hold(link: &mut Link) {
    if link.try_push([FROM_PEER, 0, 0, 0], b"ready") != Ok(true) {
        fail("the first record was refused");
    }
    let deadline = Instant::now() + PATIENCE;
    while Instant::now() < deadline {
        if let Err(error) = link.flush() {
            fail(&format!("the link failed: {error}"));
        }
        match link.peek() {
            Ok(Some(_)) => link.consume(),
            Ok(None) => {}
            Err(error) => fail(&format!("the link failed: {error}")),
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The payload of record `seed` of `len` bytes: xorshift words, the same
/// as the tests' `pattern`, so that they can check what this sends.
fn pattern(seed: u64, len: usize) -> Vec<u8> {
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
