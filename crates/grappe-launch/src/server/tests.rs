//! The PMI-1 server against grappe's own PMI-1 client, over socket pairs in one process.

use super::*;
use crate::pmi::{Connection, Pmi, PmiError, SimpleClient};
use std::io::{BufRead, BufReader, Write};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

/// A server for `processes` processes and the client ends of their sockets.
fn start(processes: usize) -> (PmiServer, Vec<UnixStream>, Receiver<ServerEvent>) {
    let (mut server_ends, mut client_ends) = (Vec::new(), Vec::new());
    for _ in 0..processes {
        let (server_end, client_end) = UnixStream::pair().unwrap();
        server_ends.push(server_end);
        client_ends.push(client_end);
    }
    let (events, received) = channel();
    let config = ServerConfig { kvsname: "job-1".to_owned(), processes, process_mapping: None };
    let notify: Notify = Box::new(move |event| events.send(event).unwrap());
    (PmiServer::start(config, server_ends, notify).unwrap(), client_ends, received)
}

fn client(stream: UnixStream, rank: usize, size: usize) -> SimpleClient {
    SimpleClient::connect(Connection::new(stream).unwrap(), rank, size).unwrap()
}

#[test]
fn every_process_sees_every_put_after_the_fence() {
    let (server, streams, _events) = start(3);
    let threads: Vec<_> = streams
        .into_iter()
        .enumerate()
        .map(|(rank, stream)| {
            std::thread::spawn(move || {
                let mut pmi = client(stream, rank, 3);
                assert_eq!(pmi.job_id(), "job-1");
                pmi.put(&format!("card-{rank}"), &format!("addr-of-{rank}")).unwrap();
                pmi.fence().unwrap();
                for other in 0..3 {
                    assert_eq!(pmi.get(&format!("card-{other}")).unwrap(), format!("addr-of-{other}"));
                }
                let err = pmi.get("nobody-put-this").unwrap_err();
                assert!(matches!(err, PmiError::KeyNotFound { .. }), "{err}");
                assert!(err.to_string().contains("nobody-put-this"), "{err}");
                pmi.barrier().unwrap();
                pmi.finalize().unwrap();
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    assert!((0..3).all(|process| server.has_finalized(process)));
    server.shutdown();
}

#[test]
fn shutdown_releases_a_barrier_that_a_dead_process_never_joins() {
    let (server, mut streams, _events) = start(2);
    let _dead = streams.pop();
    let stream = streams.pop().unwrap();
    let waiter = std::thread::spawn(move || {
        let mut pmi = client(stream, 0, 2);
        pmi.barrier()
    });
    std::thread::sleep(Duration::from_millis(50));
    assert!(!waiter.is_finished(), "barrier completed with one process missing");
    server.shutdown();
    let err = waiter.join().unwrap().unwrap_err();
    assert!(matches!(err, PmiError::ServerClosed { during: "barrier" }), "{err}");
}

fn raw_exchange(stream: &UnixStream, line: &[u8]) -> Option<String> {
    (&*stream).write_all(line).unwrap();
    let mut reply = String::new();
    BufReader::new(stream).read_line(&mut reply).ok()?;
    Some(reply)
}

#[test]
fn malformed_lines_and_pmi2_requests_are_reported_as_violations() {
    let (server, streams, events) = start(2);
    (&streams[0]).write_all(b"hello there\n").unwrap();
    let reply = raw_exchange(&streams[1], b"cmd=init pmi_version=2 pmi_subversion=0\n");
    assert_eq!(reply.as_deref(), Some(""), "a PMI-2 request must not get a PMI-1 answer");
    let mut seen: Vec<ServerEvent> = (0..2).map(|_| events.recv_timeout(Duration::from_secs(10)).unwrap()).collect();
    seen.sort_by_key(|event| match event {
        ServerEvent::ProtocolError { process, .. } | ServerEvent::Abort { process, .. } => *process,
    });
    let ServerEvent::ProtocolError { process: 0, detail } = &seen[0] else { panic!("{seen:?}") };
    assert!(detail.contains("malformed") && detail.contains("hello"), "{detail}");
    let ServerEvent::ProtocolError { process: 1, detail } = &seen[1] else { panic!("{seen:?}") };
    assert!(detail.contains("PMI version 2.0"), "{detail}");
    server.shutdown();
}

#[test]
fn abort_is_reported_with_its_code_and_message() {
    let (server, streams, events) = start(1);
    let stream = streams.into_iter().next().unwrap();
    let mut pmi = client(stream, 0, 1);
    pmi.abort(7, "out of memory").unwrap();
    let event = events.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(event, ServerEvent::Abort { process: 0, code: 7, message: "out_of_memory".to_owned() });
    server.shutdown();
}

#[test]
fn wrong_kvsname_and_hydra_special_keys_are_answered_like_hydra() {
    let (server, streams, _events) = start(4);
    let stream = &streams[0];
    let reply = raw_exchange(stream, b"cmd=get kvsname=other key=a\n").unwrap();
    assert!(reply.starts_with("cmd=get_result rc=-1 msg=unknown_kvsname_other"), "{reply}");
    let reply = raw_exchange(stream, b"cmd=get kvsname=job-1 key=PMI_process_mapping\n").unwrap();
    assert_eq!(reply, "cmd=get_result rc=0 msg=success value=(vector,(0,1,4))\n");
    let reply = raw_exchange(stream, b"cmd=get_maxes\n").unwrap();
    assert_eq!(reply, "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024\n");
    server.shutdown();
}
