//! Connection set-up: only holders of the job's secret join, strangers and
//! silent peers are refused with errors that name them and the phase.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::thread;
use std::time::Duration;

use common::next_event;
use grappe_fabric_tcp::{Hello, Link, LinkError, Listener, Phase, Secret, connect, connect_offering};

const TIMEOUT: Duration = Duration::from_secs(20);

fn localhost() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// What an accepting thread ends with.
type Accepted = thread::JoinHandle<Result<(Hello, Link), LinkError>>;

/// Accepts one connection on another thread with `secret`.
fn accept_in_background(secret: Secret) -> (SocketAddr, Accepted) {
    let listener = Listener::bind(localhost()).unwrap();
    let addr = listener.local_addr();
    (addr, thread::spawn(move || listener.accept(&secret, TIMEOUT)))
}

#[test]
fn holders_of_the_secret_connect_and_exchange_records_both_ways() {
    let secret = Secret::generate();
    let (addr, server) = accept_in_background(secret.clone());
    let hello = Hello { from: 3, to: 5 };
    let mut client = connect(addr, hello, &secret, TIMEOUT).unwrap();
    let (got, mut accepted) = server.join().unwrap().unwrap();
    assert_eq!(got, hello);
    assert_eq!(client.peer_addr(), addr);
    assert_eq!(accepted.peer_addr().ip(), addr.ip());

    assert!(client.try_push([1, 2, 3, 4], b"to the server").unwrap());
    assert!(accepted.try_push([5, 6, 7, 8], b"to the client").unwrap());
    assert_eq!(next_event(&mut accepted).unwrap(), ([1, 2, 3, 4], b"to the server".to_vec()));
    assert_eq!(next_event(&mut client).unwrap(), ([5, 6, 7, 8], b"to the client".to_vec()));
}

#[test]
fn a_wrong_secret_fails_on_both_sides_naming_the_peer() {
    let (addr, server) = accept_in_background(Secret::generate());
    let error = connect(addr, Hello { from: 1, to: 0 }, &Secret::generate(), TIMEOUT).unwrap_err();
    assert!(matches!(error, LinkError::Auth { peer, .. } if peer == addr), "{error:?}");
    assert!(error.to_string().contains(&addr.to_string()), "{error}");
    assert!(error.to_string().contains("different job secrets"), "{error}");

    let error = server.join().unwrap().unwrap_err();
    let LinkError::Auth { peer, .. } = error else { panic!("{error:?}") };
    assert_eq!(peer.ip(), addr.ip());
    let text = error.to_string();
    assert!(text.contains(&peer.to_string()) && text.contains("rank 1 asking for rank 0"), "{text}");
}

#[test]
fn a_stranger_learns_only_a_refusal_and_is_disconnected() {
    let secret = Secret::generate();
    let (addr, server) = accept_in_background(secret);
    let mut stranger = TcpStream::connect(addr).unwrap();
    let mut hello = b"GPTH".to_vec();
    hello.extend_from_slice(&2u32.to_le_bytes());
    hello.extend_from_slice(&7u32.to_le_bytes());
    hello.extend_from_slice(&0u32.to_le_bytes());
    hello.extend_from_slice(&[0x55; 32]);
    stranger.write_all(&hello).unwrap();
    let mut nonce = [0u8; 40];
    stranger.read_exact(&mut nonce).unwrap();
    assert_eq!(&nonce[..4], b"GPTN");
    let mut proof = b"GPTP".to_vec();
    proof.extend_from_slice(&[0xAA; 32]);
    stranger.write_all(&proof).unwrap();

    let mut verdict = [0u8; 40];
    stranger.read_exact(&mut verdict).unwrap();
    assert_eq!(&verdict[..4], b"GPTV");
    assert_eq!(&verdict[4..8], &0u32.to_le_bytes(), "refused");
    assert_eq!(&verdict[8..], &[0; 32], "a refusal carries no proof");
    assert_eq!(stranger.read(&mut [0; 16]).unwrap(), 0, "the connection is closed");
    assert!(matches!(server.join().unwrap(), Err(LinkError::Auth { .. })));
}

#[test]
fn an_accepting_side_without_the_secret_is_refused_by_the_connecting_side() {
    let listener = TcpListener::bind(localhost()).unwrap();
    let addr = listener.local_addr().unwrap();
    let impostor = thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        stream.read_exact(&mut [0; 48]).unwrap();
        let mut nonce = b"GPTN".to_vec();
        nonce.extend_from_slice(&2u32.to_le_bytes());
        nonce.extend_from_slice(&[9; 32]);
        stream.write_all(&nonce).unwrap();
        stream.read_exact(&mut [0; 36]).unwrap();
        // Claims to accept, with a proof it cannot have made.
        let mut verdict = b"GPTV".to_vec();
        verdict.extend_from_slice(&1u32.to_le_bytes());
        verdict.extend_from_slice(&[7; 32]);
        stream.write_all(&verdict).unwrap();
    });
    let error = connect(addr, Hello { from: 0, to: 1 }, &Secret::generate(), TIMEOUT).unwrap_err();
    impostor.join().unwrap();
    assert!(matches!(error, LinkError::Auth { peer, .. } if peer == addr), "{error:?}");
    assert!(error.to_string().contains("did not prove"), "{error}");
}

#[test]
fn a_client_that_sends_nothing_times_out_naming_the_phase() {
    let listener = Listener::bind(localhost()).unwrap();
    let silent = TcpStream::connect(listener.local_addr()).unwrap();
    let error = listener.accept(&Secret::generate(), Duration::from_millis(200)).unwrap_err();
    let peer = silent.local_addr().unwrap();
    assert!(matches!(error, LinkError::Timeout { phase: Phase::WaitingHello, peer: p, .. } if p == peer), "{error:?}");
    let text = error.to_string();
    assert!(text.contains("waiting for the hello") && text.contains(&peer.to_string()), "{text}");
}

#[test]
fn a_server_that_answers_nothing_times_out_naming_the_phase() {
    let listener = TcpListener::bind(localhost()).unwrap();
    let addr = listener.local_addr().unwrap();
    let error = connect(addr, Hello { from: 0, to: 1 }, &Secret::generate(), Duration::from_millis(200)).unwrap_err();
    assert!(matches!(error, LinkError::Timeout { phase: Phase::WaitingNonce, .. }), "{error:?}");
    drop(listener);
}

#[test]
fn a_peer_speaking_another_protocol_is_named_with_what_it_sent() {
    let listener = Listener::bind(localhost()).unwrap();
    let mut http = TcpStream::connect(listener.local_addr()).unwrap();
    http.write_all(b"GET / HTTP/1.1\r\nHost: grappe\r\nAccept: */*\r\n\r\n").unwrap();
    let error = listener.accept(&Secret::generate(), TIMEOUT).unwrap_err();
    assert!(matches!(error, LinkError::Handshake { phase: Phase::WaitingHello, .. }), "{error:?}");
    assert!(error.to_string().contains("read \"GET \" where the magic \"GPTH\" was expected"), "{error}");
}

#[test]
fn another_version_is_refused_naming_both() {
    let listener = Listener::bind(localhost()).unwrap();
    let mut old = TcpStream::connect(listener.local_addr()).unwrap();
    let mut hello = b"GPTH".to_vec();
    hello.extend_from_slice(&3u32.to_le_bytes());
    hello.extend_from_slice(&[0; 40]);
    old.write_all(&hello).unwrap();
    let error = listener.accept(&Secret::generate(), TIMEOUT).unwrap_err();
    assert!(error.to_string().contains("version 3 of the link protocol, this side 2"), "{error}");
}

#[test]
fn a_refused_connection_leaves_the_listener_usable() {
    let secret = Secret::generate();
    let listener = Listener::bind(localhost()).unwrap();
    let addr = listener.local_addr();
    let stranger = thread::spawn(move || connect(addr, Hello { from: 9, to: 0 }, &Secret::generate(), TIMEOUT));
    assert!(matches!(listener.accept(&secret, TIMEOUT), Err(LinkError::Auth { .. })));
    assert!(matches!(stranger.join().unwrap(), Err(LinkError::Auth { .. })));
    let theirs = secret.clone();
    let friend = thread::spawn(move || connect(addr, Hello { from: 1, to: 0 }, &theirs, TIMEOUT));
    let (hello, _link) = listener.accept(&secret, TIMEOUT).unwrap();
    assert_eq!(hello, Hello { from: 1, to: 0 });
    friend.join().unwrap().unwrap();
}

#[test]
fn a_connection_declined_by_a_holder_of_the_secret_is_none_on_both_sides() {
    let secret = Secret::generate();
    let listener = Listener::bind(localhost()).unwrap();
    let addr = listener.local_addr();
    let accepting = {
        let secret = secret.clone();
        thread::spawn(move || listener.accept_deciding(&secret, TIMEOUT, |hello| hello.from < hello.to))
    };
    let declined = connect_offering(addr, Hello { from: 4, to: 2 }, &secret, TIMEOUT).unwrap();
    assert!(declined.is_none(), "the accepting side declined it");
    let (hello, link) = accepting.join().unwrap().unwrap();
    assert_eq!(hello, Hello { from: 4, to: 2 });
    assert!(link.is_none());
    // The plain connect names a declined connection as an error.
    let listener = Listener::bind(localhost()).unwrap();
    let addr = listener.local_addr();
    let accepting = {
        let secret = secret.clone();
        thread::spawn(move || listener.accept_deciding(&secret, TIMEOUT, |_| false))
    };
    let error = connect(addr, Hello { from: 1, to: 2 }, &secret, TIMEOUT).unwrap_err();
    assert!(error.to_string().contains("declined"), "{error}");
    accepting.join().unwrap().unwrap();
}

#[test]
fn a_wrong_secret_is_refused_before_the_accepting_side_decides() {
    let listener = Listener::bind(localhost()).unwrap();
    let addr = listener.local_addr();
    let accepting = thread::spawn(move || {
        let mut asked = false;
        let outcome = listener.accept_deciding(&Secret::generate(), TIMEOUT, |_| {
            asked = true;
            true
        });
        (outcome.map(|(hello, link)| (hello, link.is_some())), asked)
    });
    let error = connect_offering(addr, Hello { from: 0, to: 1 }, &Secret::generate(), TIMEOUT).unwrap_err();
    assert!(matches!(error, LinkError::Auth { .. }), "{error:?}");
    let (outcome, asked) = accepting.join().unwrap();
    assert!(matches!(outcome, Err(LinkError::Auth { .. })), "{outcome:?}");
    assert!(!asked, "a stranger's connection never reaches the decision");
}
