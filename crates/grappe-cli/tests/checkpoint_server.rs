//! `grappe checkpoint-server` as a process: what a crash or a full disk
//! does to the waves it holds.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use grappe_ft::{CheckpointClient, FtError};

const SECRET: &str = "s3cret-of-the-job";

fn scratch(name: &str) -> grappe_testkit::Scratch {
    grappe_testkit::scratch(&format!("ckpt-server-{name}"))
}

/// A running server process and its address; killed when dropped.
struct Server {
    child: Child,
    addr: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `command` (which ends by running the server) and reads the
/// address it prints.
fn spawn(mut command: Command) -> Server {
    command.env("GRAPPE_CKPT_SECRET", SECRET).stdout(Stdio::piped()).stderr(Stdio::inherit());
    let mut child = command.spawn().expect("the server starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let addr = line
        .split("listening on ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();
    Server { child, addr }
}

fn server_on(dir: &Path) -> Server {
    let mut command = Command::new(env!("CARGO_BIN_EXE_grappe"));
    command.args(["checkpoint-server", "--listen", "127.0.0.1:0", "--dir"]).arg(dir);
    spawn(command)
}

fn client(server: &Server) -> CheckpointClient {
    CheckpointClient::connect(&server.addr, "job", SECRET.as_bytes()).unwrap_or_else(|e| panic!("{e}"))
}

fn image(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

fn fetch(c: &mut CheckpointClient, wave: u64, rank: u32) -> Result<Vec<u8>, FtError> {
    let mut out = Vec::new();
    c.get(wave, rank, &mut out).map(|_| out)
}

/// An image source that stalls forever after its first megabytes, so the
/// server can be killed in the middle of a wave.
struct Stalling(usize);

impl Read for Stalling {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.0 == 0 {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
        let n = buf.len().min(self.0);
        buf[..n].fill(7);
        self.0 -= n;
        Ok(n)
    }
}

#[test]
fn a_server_killed_during_a_wave_and_restarted_loses_no_committed_wave() {
    let dir = scratch("kill");
    let mut server = server_on(&dir);
    let mut c = client(&server);
    for rank in 0..3 {
        c.put(1, rank, &mut &image(2_000_000, rank as u8)[..]).unwrap();
    }
    c.commit(1).unwrap();
    c.put(2, 0, &mut &image(1000, 9)[..]).unwrap();
    // Rank 1's image of wave 2 is half sent when the server dies.
    let addr = server.addr.clone();
    std::thread::spawn(move || {
        let mut c = CheckpointClient::connect(&addr, "job", SECRET.as_bytes()).unwrap();
        let _ = c.put(2, 1, &mut Stalling(3 << 20));
    });
    let partial = dir.join("job/wave-2/rank-1.partial");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::fs::metadata(&partial).map_or(0, |m| m.len()) < 1 << 20 {
        assert!(std::time::Instant::now() < deadline, "the stalled upload never reached the disk");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    server.child.kill().unwrap();
    server.child.wait().unwrap();

    let server = server_on(&dir);
    let mut c = client(&server);
    let waves: Vec<_> = c.waves().unwrap().into_iter().map(|w| (w.wave, w.committed, w.ranks)).collect();
    assert_eq!(waves, vec![(1, true, vec![0, 1, 2]), (2, false, vec![0])], "the half image is not listed");
    assert!(!partial.exists(), "the restarted server drops partial files");
    for rank in 0..3 {
        assert_eq!(fetch(&mut c, 1, rank).unwrap(), image(2_000_000, rank as u8), "rank {rank}");
    }
}

#[test]
fn a_full_disk_is_a_clear_refusal_and_the_committed_wave_stays() {
    let dir = scratch("full");
    // A 4 MiB file system of our own: a mount namespace, so nothing is
    // left mounted when the server goes.
    let mut command = Command::new("unshare");
    command.args(["--mount", "--propagation", "private", "sh", "-c"]).arg(format!(
        "mount -t tmpfs -o size=4m grappe-full-disk-test {d} && exec {grappe} checkpoint-server --listen 127.0.0.1:0 --dir {d}",
        d = dir.display(),
        grappe = env!("CARGO_BIN_EXE_grappe"),
    ));
    let server = spawn(command);
    let mut c = client(&server);
    c.put(1, 0, &mut &image(1_000_000, 1)[..]).unwrap();
    c.commit(1).unwrap();
    let err = c.put(2, 0, &mut &image(8_000_000, 2)[..]).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("No space left on device") && text.contains("rank-0.img"), "{text}");
    // The refused image is gone, the connection and the committed wave stay.
    let waves: Vec<_> = c.waves().unwrap().into_iter().map(|w| (w.wave, w.committed, w.ranks)).collect();
    assert_eq!(waves, vec![(1, true, vec![0]), (2, false, vec![])]);
    assert_eq!(fetch(&mut c, 1, 0).unwrap(), image(1_000_000, 1));
}

#[test]
fn a_server_without_a_secret_does_not_start() {
    let output = Command::new(env!("CARGO_BIN_EXE_grappe"))
        .args(["checkpoint-server", "--listen", "127.0.0.1:0", "--dir"])
        .arg(scratch("no-secret"))
        .env_remove("GRAPPE_CKPT_SECRET")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(err.contains("no secret"), "{err}");
}
