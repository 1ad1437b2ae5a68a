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
fn the_newest_committed_wave_outlives_newer_uncommitted_ones() {
    let dir = scratch("retention");
    let addr = start(&dir);
    let mut c = client(&addr, "job");
    for wave in 1..=2 {
        c.put(wave, 0, &mut &image(1000, wave)[..]).unwrap();
        c.commit(wave).unwrap();
    }
    c.put(3, 0, &mut &image(1000, 3)[..]).unwrap();
    // Wave 3 started: wave 1 goes, wave 2 (the newest committed) stays.
    assert_eq!(listing(&mut c), vec![(2, true, vec![0]), (3, false, vec![0])]);
    // Wave 3 never completes (a rank died); the job restarts from wave 2
    // and its next wave is 4: wave 2 must still be there after it starts.
    c.put(4, 0, &mut &image(1000, 4)[..]).unwrap();
    assert_eq!(listing(&mut c), vec![(2, true, vec![0]), (4, false, vec![0])]);
    assert_eq!(fetch(&mut c, 2, 0).unwrap(), image(1000, 2));
    assert!(c.commit(9).is_err(), "no wave 9 to commit");
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
