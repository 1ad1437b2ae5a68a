//! Links between two processes: this test binary runs itself as the peer
//! (the `peer` test below, which does nothing unless asked to). The two
//! exchange their endpoint names as text over the child's standard
//! streams, as ranks do through the process manager's key-value space.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use common::{config, endpoint, pattern, providers};
use grappe_fabric_ofi::{Config, Ends, Link, LinkError, Matching, name_from_text, name_to_text};

/// Set in the child: the role it plays.
const ROLE: &str = "GRAPPE_OFI_TEST_PEER";
/// Set in the child: the provider and matching to use.
const PROVIDER: &str = "GRAPPE_OFI_TEST_PROVIDER";
const MATCHING: &str = "GRAPPE_OFI_TEST_MATCHING";

/// A safety net against a hang; the tests wait for events, not for time.
const PATIENCE: Duration = Duration::from_secs(60);

/// The records each side sends first: every size class.
fn sizes(fragment: usize) -> Vec<usize> {
    vec![0, 1, 8, 4000, fragment - 1, fragment, fragment + 1, 3 * fragment + 5, 1 << 20, 2, 0, 12345]
}

/// Meta words: who sent it, and which record it is.
const FROM_CHILD: u32 = 1;
const ECHO: u32 = 2;
const FROM_PARENT: u32 = 3;

fn matching_name(matching: Matching) -> &'static str {
    match matching {
        Matching::Tagged => "tagged",
        _ => "messages",
    }
}

/// The child side: does nothing unless started by a test below.
#[test]
fn peer() {
    let Ok(role) = std::env::var(ROLE) else { return };
    let provider = std::env::var(PROVIDER).unwrap();
    let matching = match std::env::var(MATCHING).unwrap().as_str() {
        "tagged" => Matching::Tagged,
        _ => Matching::Messages,
    };
    let config = config(&provider, matching);
    let endpoint = endpoint(&config);
    println!("NAME {}", name_to_text(endpoint.name()));
    std::io::stdout().flush().unwrap();
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
    let parent = name_from_text(line.trim()).unwrap();
    let mut link = endpoint.link(&parent, Ends { local: 1, remote: 0 }).unwrap();
    match role.as_str() {
        "echo" => echo(&config, &mut link),
        "hold" => hold(&mut link),
        other => panic!("unknown role {other}"),
    }
}

/// Sends every size, echoes every record, until the parent closes.
fn echo(config: &Config, link: &mut Link) {
    let mut queue: Vec<([u32; 4], Vec<u8>)> = sizes(config.fragment)
        .iter()
        .enumerate()
        .map(|(i, &n)| ([FROM_CHILD, i as u32, 0, 0], pattern(i as u64, n)))
        .collect();
    queue.reverse();
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
                // The parent closed: read up to its last record.
                Err(error) if error.is_clean_close() => sending = false,
                Err(error) => panic!("the child's link failed: {error}"),
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
            Err(error) => panic!("the child's link failed: {error}"),
        }
        assert!(Instant::now() < deadline, "the child ran out of patience");
    }
}

/// Sends one record, then reads and waits to be killed.
fn hold(link: &mut Link) {
    assert!(link.try_push([FROM_CHILD, 0, 0, 0], b"ready").unwrap());
    let deadline = Instant::now() + PATIENCE;
    while Instant::now() < deadline {
        link.flush().unwrap();
        if let Some(record) = link.peek().unwrap() {
            record.len();
            link.consume();
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Starts the child in `role`, and returns it with a link to it.
fn start(config: &Config, role: &str) -> (Child, BufReader<ChildStdout>, Link) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "peer", "--nocapture", "--test-threads", "1"])
        .env(ROLE, role)
        .env(PROVIDER, config.provider.as_deref().unwrap())
        .env(MATCHING, matching_name(config.matching))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let name = loop {
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "the child ended before naming its endpoint");
        // libtest may have begun the line ("test peer ... ").
        if let Some((_, name)) = line.split_once("NAME ") {
            break name_from_text(name.trim()).unwrap();
        }
    };
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
            let (mut from_child, mut echoes) = (0, 0);
            let deadline = Instant::now() + PATIENCE;
            while from_child < sizes.len() || echoes < sizes.len() {
                if let Some(&i) = to_send.last() {
                    let payload = pattern(1000 + i as u64, sizes[i]);
                    if link.try_push([FROM_PARENT, i as u32, 0, 0], &payload).unwrap() {
                        to_send.pop();
                    }
                }
                link.flush().unwrap();
                if let Some(record) = link.peek().unwrap() {
                    let [who, i, ..] = record.meta();
                    let expected = match who {
                        FROM_CHILD => (&mut from_child, i as u64),
                        ECHO => (&mut echoes, 1000 + i as u64),
                        other => panic!("a record from nobody: {other}"),
                    };
                    assert_eq!(i as usize, *expected.0, "{provider}: record out of order");
                    assert!(
                        record.payload() == pattern(expected.1, sizes[i as usize]),
                        "{provider}: payload {i} differs"
                    );
                    *expected.0 += 1;
                    link.consume();
                }
                assert!(Instant::now() < deadline, "{provider}: {from_child} records and {echoes} echoes after 60 s");
            }
            while !link.flush().unwrap() {
                assert!(Instant::now() < deadline, "{provider}: the last sends never completed");
            }
            drop(link);
            let mut rest = String::new();
            while stdout.read_line(&mut rest).unwrap() > 0 {}
            assert!(child.wait().unwrap().success(), "{provider}: the child failed");
            assert!(rest.contains("CLOSED"), "{provider}: the child did not see the link close: {rest}");
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
                assert!(Instant::now() < deadline, "{provider}: the child never said it was ready");
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
            assert!(matches!(error, LinkError::Failed { .. } | LinkError::Silent { .. }), "{provider}: {error:?}");
            assert!(error.to_string().contains(&provider), "{error}");
            assert!(error.to_string().contains("127.0.0.1"), "{error}");
            // The sending half refuses, with the same error.
            let pushed = link.try_push([0; 4], b"to nobody");
            assert_eq!(pushed, Err(error));
        }
    }
}
