//! The checkpoint server in this process, over real TCP: images round
//! trip, the secret is required, corruption is caught on read, and the
//! retention rule keeps the newest committed wave.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;

use grappe_ft::{CheckpointClient, CheckpointServer, FtError, ServerConfig, WaveInfo};

const SECRET: &[u8] = b"correct horse battery staple";

fn scratch(name: &str) -> grappe_testkit::Scratch {
    grappe_testkit::scratch(&format!("ft-{name}"))
}

/// A server on a free port, serving from a thread; its address.
fn start(dir: &Path) -> String {
    let server = CheckpointServer::bind(ServerConfig::new(dir.to_path_buf(), "127.0.0.1:0".into(), SECRET.to_vec()))
        .unwrap_or_else(|e| panic!("{e}"));
    let addr = server.local_addr().to_string();
    std::thread::spawn(move || server.serve());
    addr
}

fn client(addr: &str, job: &str) -> CheckpointClient {
    CheckpointClient::connect(addr, job, SECRET).unwrap_or_else(|e| panic!("{e}"))
}

/// Bytes that differ from one image to the next.
fn image(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn fetch(c: &mut CheckpointClient, wave: u64, rank: u32) -> Result<Vec<u8>, FtError> {
    let mut out = Vec::new();
    c.get(wave, rank, &mut out).map(|_| out)
}

fn listing(c: &mut CheckpointClient) -> Vec<(u64, bool, Vec<u32>)> {
    c.waves().unwrap().into_iter().map(|WaveInfo { wave, committed, ranks }| (wave, committed, ranks)).collect()
}

#[test]
fn images_round_trip_and_waves_are_listed_and_committed() {
    let dir = scratch("round-trip");
    let addr = start(&dir);
    let mut c = client(&addr, "job-1");
    // Not a multiple of the 1 MiB chunk, and an empty image.
    let big = image(5 * (1 << 20) + 7, 1);
    assert_eq!(c.put(1, 0, &mut &big[..]).unwrap(), big.len() as u64);
    assert_eq!(c.put(1, 1, &mut &[][..]).unwrap(), 0);
    assert_eq!(fetch(&mut c, 1, 0).unwrap(), big);
    assert_eq!(fetch(&mut c, 1, 1).unwrap(), Vec::<u8>::new());
    assert_eq!(listing(&mut c), vec![(1, false, vec![0, 1])]);
    c.commit(1).unwrap();
    assert_eq!(listing(&mut c), vec![(1, true, vec![0, 1])]);
    // Jobs are apart.
    assert_eq!(listing(&mut client(&addr, "job-2")), vec![]);
    let missing = fetch(&mut c, 1, 9).unwrap_err();
    assert!(matches!(&missing, FtError::Refused { reason, .. } if reason.contains("rank-9.img")), "{missing}");
    // A file fetch lands whole.
    let file = dir.join("fetched.img");
    c.get_file(1, 0, &file).unwrap();
    assert_eq!(std::fs::read(&file).unwrap(), big);
}

#[test]
fn a_client_without_the_secret_is_refused_and_stores_nothing() {
    let dir = scratch("auth");
    let addr = start(&dir);
    let refused = CheckpointClient::connect(&addr, "job", b"guess").err().expect("a wrong secret is refused");
    assert!(
        matches!(&refused, FtError::Refused { reason, .. } if reason.contains("authentication failed")),
        "{refused}"
    );
    assert!(!dir.join("job").exists());
    let bad_name = CheckpointClient::connect(&addr, "../escape", SECRET).err().expect("a path is no job name");
    assert!(matches!(&bad_name, FtError::Refused { reason, .. } if reason.contains("job name")), "{bad_name}");
}

#[test]
fn a_corrupted_image_is_refused_on_read_and_no_file_is_left() {
    let dir = scratch("corrupt");
    let addr = start(&dir);
    let mut c = client(&addr, "job");
    let bytes = image(300_000, 2);
    c.put(3, 2, &mut &bytes[..]).unwrap();
    c.put(3, 4, &mut &bytes[..]).unwrap();
    let flip = dir.join("job/wave-3/rank-2.img");
    let mut stored = std::fs::read(&flip).unwrap();
    stored[32 + 150_000] ^= 0x20;
    std::fs::write(&flip, &stored).unwrap();
    let err = fetch(&mut c, 3, 2).unwrap_err();
    assert!(
        matches!(&err, FtError::Refused { reason, .. } if reason.contains("corrupt") && reason.contains("rank-2.img")),
        "{err}"
    );
    let target = dir.join("restored.img");
    assert!(c.get_file(3, 2, &target).is_err());
    assert!(!target.exists() && !target.with_extension("partial").exists());
    // Truncated: refused before a byte is sent.
    let cut = dir.join("job/wave-3/rank-4.img");
    let stored = std::fs::read(&cut).unwrap();
    std::fs::write(&cut, &stored[..1000]).unwrap();
    let err = fetch(&mut c, 3, 4).unwrap_err();
    assert!(matches!(&err, FtError::Refused { reason, .. } if reason.contains("300000 bytes")), "{err}");
    // The connection is still usable.
    assert_eq!(listing(&mut c), vec![(3, false, vec![2, 4])]);
}

#[test]
fn committed_waves_stay_until_the_job_keeps_others_and_failed_waves_go() {
    let dir = scratch("retention");
    let addr = start(&dir);
    let mut c = client(&addr, "job");
    for wave in 1..=2 {
        c.put(wave, 0, &mut &image(1000, wave)[..]).unwrap();
        c.commit(wave).unwrap();
    }
    c.put(3, 0, &mut &image(1000, 3)[..]).unwrap();
    // The server does not decide which committed wave the job still needs:
    // the job's record may name both (a crash between its commit steps).
    assert_eq!(listing(&mut c), vec![(1, true, vec![0]), (2, true, vec![0]), (3, false, vec![0])]);
    // Wave 3 never completes (a rank died); the next wave to start drops
    // it, never a committed one.
    c.put(4, 0, &mut &image(1000, 4)[..]).unwrap();
    assert_eq!(listing(&mut c), vec![(1, true, vec![0]), (2, true, vec![0]), (4, false, vec![0])]);
    // Wave 4 commits; the job's record is then (4, 2).
    c.commit(4).unwrap();
    c.keep(&[4, 2]).unwrap();
    assert_eq!(listing(&mut c), vec![(2, true, vec![0]), (4, true, vec![0])]);
    assert_eq!(fetch(&mut c, 2, 0).unwrap(), image(1000, 2));
    assert!(c.commit(9).is_err(), "no wave 9 to commit");
}

#[test]
fn keeping_marks_the_waves_committed_and_drops_every_other_even_newer_ones() {
    let dir = scratch("keep");
    let addr = start(&dir);
    let mut c = client(&addr, "job");
    for wave in [5, 6, 7] {
        c.put(wave, 1, &mut &image(100, wave)[..]).unwrap();
        c.commit(wave).unwrap();
    }
    c.put(8, 1, &mut &image(100, 8)[..]).unwrap();
    // A restart chose wave 6 (wave 7 was committed here but the job
    // crashed before its record said so; wave 8 never completed): 6 is
    // kept, and 5, 7 and 8 go.
    c.keep(&[6]).unwrap();
    assert_eq!(listing(&mut c), vec![(6, true, vec![1])]);
    // Keeping nothing (a fresh start) empties the job, and only this job.
    client(&addr, "other").put(1, 0, &mut &image(10, 1)[..]).unwrap();
    c.keep(&[]).unwrap();
    assert_eq!(listing(&mut c), vec![]);
    assert_eq!(listing(&mut client(&addr, "other")), vec![(1, false, vec![0])]);
}

/// A listener that takes connections and never says a word (a stopped
/// server: the kernel still completes the handshakes).
fn silent_listener() -> (String, std::net::TcpListener) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    (listener.local_addr().unwrap().to_string(), listener)
}

#[test]
fn a_server_that_does_not_answer_is_given_up_after_the_time_limit() {
    let (addr, _listener) = silent_listener();
    let limit = std::time::Duration::from_millis(200);
    let started = std::time::Instant::now();
    let err = CheckpointClient::connect_within(&addr, "job", SECRET, limit).err().expect("no greeting, no client");
    assert!(
        matches!(&err, FtError::Silent { peer, what, .. } if peer.contains(&addr) && what.contains("greeting")),
        "{err}"
    );
    assert!(err.to_string().contains("did not answer within 0.2 s"), "{err}");
    // Bounded below by the limit; above, by a generous margin for a loaded
    // machine (the point is that it returns at all).
    let waited = started.elapsed();
    assert!(waited >= limit && waited < std::time::Duration::from_secs(30), "{waited:?}");
}

#[test]
fn a_server_that_stops_answering_after_the_handshake_fails_the_call_not_the_client() {
    // A server that greets and authenticates, takes the request and the
    // image, then never answers: the client's wait for the status ends.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut conn = grappe_ft::wire::Conn::new(stream, "fake server");
        let nonce = [7u8; grappe_ft::wire::NONCE_LEN];
        let mut hello = grappe_ft::wire::SERVER_MAGIC.to_vec();
        hello.extend_from_slice(&nonce);
        conn.send_raw(&hello).unwrap();
        let _job = conn.read_text("job").unwrap();
        for _ in 0..grappe_ft::wire::MAC_LEN {
            conn.read_u8("proof").unwrap();
        }
        conn.send_status(Ok(())).unwrap();
        let _request = conn.read_request().unwrap();
        conn.recv_stream(&mut std::io::sink()).unwrap();
        std::thread::sleep(std::time::Duration::from_secs(3600));
    });
    let limit = std::time::Duration::from_millis(200);
    let mut c = CheckpointClient::connect_within(&addr, "job", SECRET, limit).unwrap();
    let err = c.put(1, 0, &mut &image(1000, 1)[..]).unwrap_err();
    assert!(matches!(&err, FtError::Silent { what, .. } if what.contains("status")), "{err}");
}

#[test]
fn ranks_store_one_wave_at_once() {
    let dir = scratch("concurrent");
    let addr = start(&dir);
    let threads: Vec<_> = (0..8u32)
        .map(|rank| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                let mut c = client(&addr, "job");
                c.put(1, rank, &mut &image(200_000, rank as u64)[..]).unwrap();
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    let mut c = client(&addr, "job");
    assert_eq!(listing(&mut c), vec![(1, false, (0..8).collect())]);
    for rank in 0..8 {
        assert_eq!(fetch(&mut c, 1, rank).unwrap(), image(200_000, rank as u64));
    }
}

#[test]
fn garbage_from_a_client_ends_its_connection_not_the_server() {
    let dir = scratch("garbage");
    let addr = start(&dir);
    let mut raw = TcpStream::connect(&addr).unwrap();
    let mut greeting = [0u8; 40];
    raw.read_exact(&mut greeting).unwrap();
    assert_eq!(&greeting[..8], b"GRCKSRV1");
    raw.write_all(&[0xff, 0xff, b'x', b'y']).unwrap();
    drop(raw);
    // The server goes on serving.
    let mut c = client(&addr, "job");
    c.put(1, 0, &mut &b"fine"[..]).unwrap();
    assert_eq!(fetch(&mut c, 1, 0).unwrap(), b"fine");
    assert_eq!(listing(&mut client(&addr, "job")), vec![(1, false, vec![0])]);
}
