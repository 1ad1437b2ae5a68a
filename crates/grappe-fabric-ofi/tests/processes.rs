//! Links between two processes: `ofi-peer` (this crate's program) is the
//! other end. The two exchange their endpoint names as text over the
//! peer's standard streams, as ranks do through the process manager's
//! key-value space.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use common::{config, endpoint, pattern, providers};
use grappe_fabric_ofi::{Config, Ends, Link, LinkError, Matching, name_from_text, name_to_text};

/// A safety net against a hang; the tests wait for events, not for time.
const PATIENCE: Duration = Duration::from_secs(60);

/// The records each side sends: every size class.
fn sizes(fragment: usize) -> Vec<usize> {
    vec![0, 1, 8, 4000, fragment - 1, fragment, fragment + 1, 3 * fragment + 5, 1 << 20, 2, 0, 12345]
}

/// Meta words: who sent it (`ofi-peer`'s numbering).
const FROM_PEER: u32 = 1;
const ECHO: u32 = 2;
const FROM_TEST: u32 = 3;

/// Starts `ofi-peer` in `role`, and returns it with a link to it.
fn start(config: &Config, role: &str) -> (Child, BufReader<ChildStdout>, Link) {
    let sizes: Vec<String> = sizes(config.fragment).iter().map(usize::to_string).collect();
    let matching = if config.matching == Matching::Tagged { "tagged" } else { "messages" };
    let mut child = Command::new(env!("CARGO_BIN_EXE_ofi-peer"))
        .args(["--provider", config.provider.as_deref().unwrap(), "--matching", matching, "--role", role])
        .args(["--sizes", &sizes.join(",")])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert_eq!(line.trim().strip_prefix("PROVIDER "), config.provider.as_deref());
    line.clear();
    assert!(stdout.read_line(&mut line).unwrap() > 0, "ofi-peer ended before naming its endpoint");
    let name = name_from_text(line.trim().strip_prefix("NAME ").expect("ofi-peer's name")).unwrap();
    let endpoint = endpoint(config);
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{}", name_to_text(endpoint.name())).unwrap();
    let link = endpoint.link(&name, Ends { local: 0, remote: 1 }).unwrap();
    (child, stdout, link)
}

#[test]
fn records_of_every_size_go_both_ways_between_two_processes() {
    for provider in providers() {
        for matching in [Matching::Tagged, Matching::Messages] {
            let config = config(&provider, matching);
            let (mut child, mut stdout, mut link) = start(&config, "echo");
            let sizes = sizes(config.fragment);
            let mut to_send: Vec<usize> = (0..sizes.len()).rev().collect();
            let (mut from_peer, mut echoes) = (0, 0);
            let deadline = Instant::now() + PATIENCE;
            while from_peer < sizes.len() || echoes < sizes.len() {
                if let Some(&i) = to_send.last() {
                    let payload = pattern(1000 + i as u64, sizes[i]);
                    if link.try_push([FROM_TEST, i as u32, 0, 0], &payload).unwrap() {
                        to_send.pop();
                    }
                }
                link.flush().unwrap();
                if let Some(record) = link.peek().unwrap() {
                    let [who, i, ..] = record.meta();
                    let (count, seed) = match who {
                        FROM_PEER => (&mut from_peer, i as u64),
                        ECHO => (&mut echoes, 1000 + i as u64),
                        other => panic!("a record from nobody: {other}"),
                    };
                    assert_eq!(i as usize, *count, "{provider}: record out of order");
                    assert!(record.payload() == pattern(seed, sizes[i as usize]), "{provider}: payload {i} differs");
                    *count += 1;
                    link.consume();
                }
                assert!(Instant::now() < deadline, "{provider}: {from_peer} records and {echoes} echoes after 60 s");
            }
            while !link.flush().unwrap() {
                assert!(Instant::now() < deadline, "{provider}: the last sends never completed");
            }
            drop(link);
            let mut rest = String::new();
            while stdout.read_line(&mut rest).unwrap() > 0 {}
            assert!(child.wait().unwrap().success(), "{provider}: ofi-peer failed");
            assert!(rest.contains("CLOSED"), "{provider}: ofi-peer did not see the link close: {rest}");
        }
    }
}

#[test]
fn a_killed_peer_breaks_the_link_within_bounded_time() {
    for provider in providers() {
        for matching in [Matching::Tagged, Matching::Messages] {
            let config = Config { lost_after: Duration::from_secs(3), ..config(&provider, matching) };
            let (mut child, _stdout, mut link) = start(&config, "hold");
            let deadline = Instant::now() + PATIENCE;
            loop {
                if let Some(record) = link.peek().unwrap() {
                    assert_eq!(record.payload(), b"ready");
                    link.consume();
                    break;
                }
                assert!(Instant::now() < deadline, "{provider}: ofi-peer never said it was ready");
            }
            child.kill().unwrap();
            child.wait().unwrap();
            let killed = Instant::now();
            // Only receiving: the link's keepalive probes the peer.
            let error = loop {
                match link.peek() {
                    Err(error) => break error,
                    Ok(Some(_)) => panic!("{provider}: a record from a dead peer"),
                    Ok(None) => std::thread::sleep(Duration::from_millis(1)),
                }
                assert!(killed.elapsed() < PATIENCE, "{provider}: the lost peer went unnoticed for 60 s");
            };
            eprintln!("{provider}: lost peer noticed after {:?}: {error}", killed.elapsed());
            let lost = matches!(error, LinkError::Failed { .. } | LinkError::Silent { .. } | LinkError::Unheard { .. });
            assert!(lost, "{provider}: {error:?}");
            assert!(error.to_string().contains(&provider), "{error}");
            assert!(error.to_string().contains("127.0.0.1"), "{error}");
            // The sending half refuses, with the same error.
            let pushed = link.try_push([0; 4], b"to nobody");
            assert_eq!(pushed, Err(error));
        }
    }
}

#[test]
fn fi_provider_chooses_the_provider_when_none_is_named() {
    for provider in providers() {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ofi-peer"))
            .env("FI_PROVIDER", &provider)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        // Its standard input closed: it ends, unable to read a peer's name.
        assert!(!child.wait().unwrap().success());
        assert_eq!(line.trim(), format!("PROVIDER {provider}"));
    }
}
