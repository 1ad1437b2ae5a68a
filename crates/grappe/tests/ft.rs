//! Checkpoint and restart of real jobs under `grappe run --checkpoint-dir`,
//! one of their processes SIGKILLed at a random moment: they must end with
//! the result of the fault-free run to the last bit, for both protocols and
//! for process and thread ranks. Two workloads: the Jacobi example, and
//! `ft_ring`, whose messages cross the checkpoint points (they must be
//! saved with the wave and delivered again after the restart).
//!
//! No test here depends on how fast the machine is: a job that must still
//! run when the test acts on it waits at its end until the test opens its
//! gate (`GRAPPE_FT_HOLD`), and waves the test needs are asked for
//! (`DIR/REQUEST`, `kill -USR1`) rather than timed.

mod util;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

// Jobs of some length, so that kills land mid-computation as well as
// while a job holds at its end (an optimized build runs larger ones).
const SIZE: &str = if cfg!(debug_assertions) { "64" } else { "160" };
const ITERATIONS: &str = "20000";
const RING_ITERATIONS: &str = if cfg!(debug_assertions) { "20000" } else { "400000" };

fn scratch(name: &str) -> grappe_testkit::Scratch {
    grappe_testkit::scratch(&format!("ft-{name}"))
}

/// A program and its arguments.
#[derive(Clone, Copy)]
struct Workload {
    example: &'static str,
    args: &'static [&'static str],
}

const JACOBI: Workload = Workload { example: "jacobi", args: &[SIZE, ITERATIONS] };
const RING: Workload = Workload { example: "ft_ring", args: &[RING_ITERATIONS] };

/// The result line without what may differ between runs (time, counts of
/// saved messages). A job restarted from a wave taken while it held at its
/// end prints its result again: every such line must be the same.
fn result_of(stdout: &str) -> String {
    let results: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("jacobi ") || l.starts_with("ft_ring "))
        .map(|line| line.split(" seconds=").next().unwrap().split(" saved_messages=").next().unwrap())
        .collect();
    let first = *results.first().unwrap_or_else(|| panic!("no result in {stdout:?}"));
    assert!(results.iter().all(|r| *r == first), "the results differ: {results:#?}");
    first.to_owned()
}

/// Messages in transit saved over the job, as `ft_ring` reports them.
fn saved_messages(stdout: &str) -> u64 {
    stdout.split("saved_messages=").nth(1).and_then(|v| v.split_whitespace().next()?.parse().ok()).unwrap_or(0)
}

fn reference(work: Workload) -> String {
    let mut cmd = Command::new(util::grappe());
    cmd.args(["run", "-n", "4"]).arg(util::example(work.example)).args(work.args);
    let output = util::run_bounded(cmd, Duration::from_secs(120));
    assert!(output.status.success(), "{}", util::describe(&output));
    result_of(&String::from_utf8_lossy(&output.stdout))
}

/// The Jacobi job on 4 process ranks in `dir`, with extra environment and
/// arguments of `grappe run`, not started yet: no timed waves, and it
/// holds at its end until its gate opens.
fn held_job(dir: &Path, env: &[(&str, &str)], extra: &[&str]) -> Command {
    let mut cmd = Command::new(util::grappe());
    cmd.envs(env.iter().copied())
        .env("GRAPPE_FT_HOLD", gate_of(dir))
        .args(["run", "-n", "4", "--checkpoint-every", "1h"])
        .args(extra)
        .arg("--checkpoint-dir")
        .arg(dir)
        .arg(util::example("jacobi"))
        .args([SIZE, ITERATIONS]);
    cmd
}

/// Asks for a wave (`touch DIR/REQUEST`) and waits until the record names
/// a wave newer than any it named before.
fn take_wave(job: &mut Live, dir: &Path) {
    let before = committed_waves(dir).first().copied().unwrap_or(0);
    std::fs::write(dir.join("REQUEST"), "").unwrap();
    job.wait_until("the wave asked for is committed", || committed_waves(dir).first().is_some_and(|&w| w > before));
}

/// The Jacobi job in `dir` to its end, with `waves` waves taken on request
/// while it runs or holds: its status, stdout and stderr.
fn run_with_waves(dir: &Path, env: &[(&str, &str)], waves: usize) -> (std::process::ExitStatus, String, String) {
    std::fs::create_dir_all(dir).unwrap();
    let _ = std::fs::remove_file(gate_of(dir));
    let mut job = Live::start(held_job(dir, env, &[]));
    for _ in 0..waves {
        take_wave(&mut job, dir);
    }
    open_gate(dir);
    job.finish()
}

/// A small deterministic generator (the trial's seed is printed on failure).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// A job running in the background, its output read as it comes.
struct Live {
    child: Child,
    lines: mpsc::Receiver<(bool, String)>,
    stdout: String,
    stderr: String,
}

impl Live {
    fn start(mut cmd: Command) -> Live {
        let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("starts");
        let (send, lines) = mpsc::channel();
        for (is_err, pipe) in [
            (false, Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>),
            (true, Box::new(child.stderr.take().unwrap())),
        ] {
            let send = send.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                    let _ = send.send((is_err, line));
                }
            });
        }
        Live { child, lines, stdout: String::new(), stderr: String::new() }
    }

    fn take(&mut self, (is_err, line): (bool, String)) -> String {
        let out = if is_err { &mut self.stderr } else { &mut self.stdout };
        out.push_str(&line);
        out.push('\n');
        line
    }

    /// Waits for a line of stderr containing `text`; panics if the job
    /// ends first or after a minute.
    fn wait_for(&mut self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(got) => {
                    let is_err = got.0;
                    if self.take(got).contains(text) && is_err {
                        return;
                    }
                }
                Err(_) => panic!("no {text:?} on stderr in time (or the job ended):\n{}\n{}", self.stderr, self.stdout),
            }
        }
    }

    /// Waits until `done` holds, reading the output meanwhile.
    fn wait_until(&mut self, what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !done() {
            assert!(Instant::now() < deadline, "never: {what}\n{}", self.stderr);
            assert!(self.child.try_wait().unwrap().is_none(), "the job ended before {what}:\n{}", self.stderr);
            while let Ok(got) = self.lines.try_recv() {
                self.take(got);
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// The job's end (two minutes at most), its status, stdout and stderr.
    fn finish(mut self) -> (std::process::ExitStatus, String, String) {
        let deadline = Instant::now() + Duration::from_secs(120);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("the job did not end in two minutes:\n{}", self.stderr);
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        while let Ok(got) = self.lines.recv_timeout(Duration::from_secs(5)) {
            self.take(got);
        }
        (status, self.stdout, self.stderr)
    }
}

/// The gate of a held job (`GRAPPE_FT_HOLD`): a file beside its directory.
fn gate_of(dir: &Path) -> PathBuf {
    dir.with_extension("gate")
}

fn open_gate(dir: &Path) {
    std::fs::write(gate_of(dir), "").unwrap();
}

/// The waves the commit record names (none without a record).
fn committed_waves(dir: &Path) -> Vec<u64> {
    let Ok(text) = std::fs::read_to_string(dir.join("COMMITTED")) else { return Vec::new() };
    text.trim().trim_start_matches("grappe committed waves:").split_whitespace().map(|w| w.parse().unwrap()).collect()
}

/// The waves of which a rank holds an image.
fn local_waves(dir: &Path, rank: usize) -> Vec<u64> {
    let mut waves: Vec<u64> = std::fs::read_dir(dir.join(format!("rank-{rank}")))
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.file_name().to_str()?.strip_prefix("wave-")?.strip_suffix(".img")?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    waves.sort_unstable_by(|a, b| b.cmp(a));
    waves
}

/// Flips a byte in the middle of a rank's image of a wave.
fn corrupt(dir: &Path, rank: usize, wave: u64) {
    let image = dir.join(format!("rank-{rank}/wave-{wave}.img"));
    let mut bytes = std::fs::read(&image).unwrap_or_else(|e| panic!("{}: {e}", image.display()));
    let middle = bytes.len() / 2;
    bytes[middle] ^= 1;
    std::fs::write(&image, bytes).unwrap();
}

/// The pids of the launcher's children.
fn children(launcher: u32) -> Vec<i32> {
    let path = format!("/proc/{launcher}/task/{launcher}/children");
    std::fs::read_to_string(path).unwrap_or_default().split_whitespace().filter_map(|p| p.parse().ok()).collect()
}

/// How a trial ended.
struct Trial {
    result: String,
    stdout: String,
    stderr: String,
}

/// One trial: the job with checkpoints, a process killed `delay` after
/// the first committed wave. The job holds at its end until the kill has
/// landed, so it lands whatever the machine's speed: mid-computation, or
/// while the job holds (a restart all the same).
fn trial(work: Workload, layout: &[&str], protocol: &str, delay: Duration, victim: u64, dir: &Path) -> Trial {
    let mut cmd = Command::new(util::grappe());
    cmd.env("GRAPPE_FT_HOLD", gate_of(dir))
        .args(["run", "-n", "4"])
        .args(layout)
        .args(["--checkpoint-every", "40ms", "--checkpoint-protocol", protocol, "--checkpoint-dir"])
        .arg(dir)
        .arg(util::example(work.example))
        .args(work.args);
    let mut job = Live::start(cmd);
    let launcher = job.child.id();
    // The kill lands `delay` after the first committed wave (before it,
    // a restart is a fresh start, which the other case covers).
    job.wait_until("a committed wave", || !committed_waves(dir).is_empty());
    std::thread::sleep(delay);
    let pids = children(launcher);
    let victim = pids[victim as usize % pids.len()];
    kill(Pid::from_raw(victim), Signal::SIGKILL).unwrap_or_else(|e| panic!("the job's process {victim} is gone: {e}"));
    open_gate(dir);
    let (status, stdout, stderr) = job.finish();
    assert!(status.success(), "the job did not survive:\n{stderr}\n{stdout}");
    Trial { result: result_of(&stdout), stdout, stderr }
}

fn survives(work: Workload, layout: &[&str], protocol: &str, seed: u64) {
    let expected = reference(work);
    let mut rng = Lcg(seed);
    for t in 0..4 {
        let dir = scratch(&format!("{}-{protocol}-{}-{seed}-{t}", work.example, layout.len()));
        let delay = Duration::from_millis(rng.below(300));
        let victim = rng.below(4);
        let Trial { result, stdout, stderr } = trial(work, layout, protocol, delay, victim, &dir);
        let context = format!("{} trial {t} (seed {seed}, kill after {delay:?}, victim {victim})", work.example);
        assert_eq!(result, expected, "{context}: the result changed\n{stderr}");
        if work.example == "ft_ring" {
            assert!(saved_messages(&stdout) > 0, "{context}: no message in transit was saved: {stdout}");
        }
        assert!(stderr.contains("was killed by signal 9"), "{context}: {stderr}");
        assert!(
            stderr.contains("grappe: restarting the job from the newest committed wave every rank can restore"),
            "{context}: {stderr}"
        );
        assert!(stderr.contains("grappe: restarted from checkpoint wave"), "{context}: {stderr}");
    }
}

#[test]
fn messages_crossing_points_are_saved_and_delivered_again_with_pcl() {
    survives(RING, &[], "pcl", 5);
}

#[test]
fn messages_crossing_points_are_saved_and_delivered_again_with_vcl_on_threads() {
    survives(RING, &["--threads"], "vcl", 6);
}

#[test]
fn messages_crossing_points_are_logged_and_delivered_again_with_vcl_on_processes() {
    survives(RING, &[], "vcl", 7);
}

#[test]
fn process_ranks_survive_a_kill_with_pcl() {
    survives(JACOBI, &[], "pcl", 1);
}

#[test]
fn process_ranks_survive_a_kill_with_vcl() {
    survives(JACOBI, &[], "vcl", 2);
}

#[test]
fn thread_ranks_survive_a_kill_with_pcl() {
    survives(JACOBI, &["--threads"], "pcl", 3);
}

#[test]
fn thread_ranks_survive_a_kill_with_vcl() {
    survives(JACOBI, &["--threads"], "vcl", 4);
}

/// A corrupted local image of the newest wave: every rank goes back to
/// the wave before, which all of them can read.
#[test]
fn a_corrupted_image_sends_every_rank_back_to_the_previous_wave() {
    let expected = reference(JACOBI);
    let dir = scratch("corrupt");
    let (status, _, stderr) = run_with_waves(&dir, &[], 2);
    assert!(status.success(), "{stderr}");
    let waves = committed_waves(&dir);
    assert_eq!(waves.len(), 2, "{waves:?}");
    corrupt(&dir, 2, waves[0]);
    // Running again restores (the job had finished: it resumes at its end).
    let (status, stdout, stderr) = run_with_waves(&dir, &[], 0);
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains(&format!("rank 2: cannot restore wave {}", waves[0])), "{stderr}");
    assert!(stderr.contains("is corrupt"), "{stderr}");
    assert!(stderr.contains(&format!("restarted from checkpoint wave {}", waves[1])), "{stderr}");
    assert_eq!(result_of(&stdout), expected);
}

/// After a fallback from a corrupt wave, the record and the images agree:
/// the next wave is committed beside the intact wave the job went back to,
/// which survives the corruption of that next wave too. (The record once
/// named the corrupt wave while its images were deleted, and dropped the
/// intact one.)
#[test]
fn a_fallback_keeps_the_intact_wave_through_the_next_wave_and_its_corruption() {
    let expected = reference(JACOBI);
    let dir = scratch("fallback");
    let (status, _, stderr) = run_with_waves(&dir, &[], 2);
    assert!(status.success(), "{stderr}");
    let [newest, intact] = committed_waves(&dir)[..] else { panic!("two waves: {:?}", committed_waves(&dir)) };
    corrupt(&dir, 2, newest);
    let (status, stdout, stderr) = run_with_waves(&dir, &[], 1);
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains(&format!("restarted from checkpoint wave {intact}")), "{stderr}");
    assert_eq!(result_of(&stdout), expected);
    let record = committed_waves(&dir);
    let next = record[0];
    assert!(next > newest, "the new wave has a new number: {record:?}");
    assert_eq!(record, vec![next, intact], "the record names the new wave and the intact one");
    for rank in 0..4 {
        assert_eq!(local_waves(&dir, rank), record, "rank {rank} holds the record's waves, and only them");
    }
    corrupt(&dir, 2, next);
    let (status, stdout, stderr) = run_with_waves(&dir, &[], 0);
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains(&format!("restarted from checkpoint wave {intact}")), "{stderr}");
    assert!(!stderr.contains("starting over"), "{stderr}");
    assert_eq!(result_of(&stdout), expected);
}

/// A malformed commit record is said once, and the job restores the newest
/// wave whose images are all intact; the record is whole again after. With
/// no intact wave, it starts from the beginning and says so.
#[test]
fn an_unreadable_record_is_said_once_and_the_newest_intact_wave_is_restored() {
    let expected = reference(JACOBI);
    let dir = scratch("record");
    let (status, _, stderr) = run_with_waves(&dir, &[], 2);
    assert!(status.success(), "{stderr}");
    let [newest, older] = committed_waves(&dir)[..] else { panic!("two waves: {:?}", committed_waves(&dir)) };
    std::fs::write(dir.join("COMMITTED"), "grappe committed waves: 12x\n").unwrap();
    let (status, stdout, stderr) = run_with_waves(&dir, &[], 0);
    assert!(status.success(), "{stderr}");
    assert_eq!(stderr.matches("the commit record is unreadable").count(), 1, "said once: {stderr}");
    assert!(stderr.contains("12x"), "what was found: {stderr}");
    assert!(stderr.contains(&format!("restarted from checkpoint wave {newest}")), "{stderr}");
    assert_eq!(result_of(&stdout), expected);
    assert_eq!(committed_waves(&dir), vec![newest], "the record is whole again");
    // Garbage again, and rank 1's images both corrupt: nothing to restore.
    std::fs::write(dir.join("COMMITTED"), [0xff, 0x00, 0x17]).unwrap();
    corrupt(&dir, 1, newest);
    if local_waves(&dir, 1).contains(&older) {
        corrupt(&dir, 1, older);
    }
    let (status, stdout, stderr) = run_with_waves(&dir, &[], 0);
    assert!(status.success(), "{stderr}");
    assert_eq!(stderr.matches("the commit record is unreadable").count(), 1, "said once: {stderr}");
    assert!(stderr.contains("no wave has an intact image on every rank: starting over from the beginning"), "{stderr}");
    assert!(!stderr.contains("restarted from checkpoint wave"), "{stderr}");
    assert_eq!(result_of(&stdout), expected);
    assert_eq!(committed_waves(&dir), Vec::<u64>::new(), "an empty record: nothing is committed");
}

/// When the ranks must fall back, the launcher does not announce the wave
/// they cannot restore: it says they go back to the newest wave all can
/// restore, and rank 0 names the one they did.
#[test]
fn the_launcher_does_not_announce_a_wave_the_ranks_cannot_restore() {
    let expected = reference(JACOBI);
    let dir = scratch("announce");
    std::fs::create_dir_all(&dir).unwrap();
    let mut job = Live::start(held_job(&dir, &[], &[]));
    let launcher = job.child.id();
    take_wave(&mut job, &dir);
    take_wave(&mut job, &dir);
    let [newest, older] = committed_waves(&dir)[..] else { panic!("two waves: {:?}", committed_waves(&dir)) };
    corrupt(&dir, 2, newest);
    let victim = children(launcher)[1];
    kill(Pid::from_raw(victim), Signal::SIGKILL).expect("the victim is there");
    job.wait_for("grappe: restarted from checkpoint wave");
    open_gate(&dir);
    let (status, stdout, stderr) = job.finish();
    assert!(status.success(), "{stderr}");
    assert!(!stderr.contains(&format!("from checkpoint wave {newest} ")), "announced wave {newest}: {stderr}");
    let restarting = stderr.find("grappe: restarting the job from the newest committed wave every rank can restore");
    let restored = stderr.find(&format!("grappe: restarted from checkpoint wave {older} "));
    assert!(restarting.is_some() && restored > restarting, "{stderr}");
    assert_eq!(result_of(&stdout), expected);
}

/// A checkpoint server process for a test (`grappe checkpoint-server`),
/// killed when dropped.
struct ServerProcess {
    child: Child,
    addr: String,
}

impl ServerProcess {
    fn start(dir: &Path, secret: &str) -> ServerProcess {
        let mut child = Command::new(util::grappe())
            .args(["checkpoint-server", "--listen", "127.0.0.1:0", "--dir"])
            .arg(dir)
            .env("GRAPPE_CKPT_SECRET", secret)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the server starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let addr = line.split("listening on ").nth(1).and_then(|r| r.split_whitespace().next()).unwrap().to_owned();
        ServerProcess { child, addr }
    }

    fn signal(&self, signal: Signal) {
        kill(Pid::from_raw(self.child.id() as i32), signal).expect("the server this test started is there");
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.signal(Signal::SIGCONT);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A stopped checkpoint server (`kill -STOP`) never hangs the job: each
/// call to it gives up after the time limit, the wave fails with a message
/// naming the server, and the job goes on to the right result, with either
/// protocol (pcl ranks waited for its greeting; vcl waited in `finish`).
fn a_stopped_server_fails_waves_not_the_job(protocol: &str) {
    let expected = reference(JACOBI);
    let dir = scratch(&format!("stopped-{protocol}"));
    let secret = "stopped-server-secret";
    let server = ServerProcess::start(&dir.join("server"), secret);
    server.signal(Signal::SIGSTOP);
    let images = dir.join("images");
    std::fs::create_dir_all(&images).unwrap();
    let flags = [
        "--checkpoint-protocol",
        protocol,
        "--checkpoint-servers",
        &server.addr,
        "--checkpoint-server-timeout",
        "300ms",
    ];
    let mut job = Live::start(held_job(&images, &[("GRAPPE_CKPT_SECRET", secret)], &flags));
    std::fs::write(images.join("REQUEST"), "").unwrap();
    job.wait_for("checkpoint wave 1 not committed");
    open_gate(&images);
    let (status, stdout, stderr) = job.finish();
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains(&format!("checkpoint server {} did not answer within 0.3 s", server.addr)), "{stderr}");
    assert!(stderr.contains("the job is unprotected until it answers"), "{stderr}");
    assert_eq!(committed_waves(&images), Vec::<u64>::new(), "no wave committed without its server");
    assert_eq!(result_of(&stdout), expected);
}

#[test]
fn a_stopped_checkpoint_server_fails_pcl_waves_not_the_job() {
    a_stopped_server_fails_waves_not_the_job("pcl");
}

#[test]
fn a_stopped_checkpoint_server_fails_vcl_waves_not_the_job() {
    a_stopped_server_fails_waves_not_the_job("vcl");
}

/// Servers that refuse the job's secret: the job does not start (it would
/// run unprotected), from `grappe run` with the servers as an option or in
/// the environment, and without a launcher (as under mpiexec) from rank 0.
#[test]
fn a_secret_the_servers_refuse_stops_the_job_before_it_starts() {
    let dir = scratch("refused");
    let server = ServerProcess::start(&dir.join("server"), "the-servers-secret");
    let images = dir.join("images");
    let wrong = ("GRAPPE_CKPT_SECRET", "not-the-secret");
    let as_option = held_job(&images, &[wrong], &["--checkpoint-servers", &server.addr]);
    let in_the_environment = held_job(&images, &[wrong, ("GRAPPE_FT_SERVERS", &server.addr)], &[]);
    for job in [as_option, in_the_environment] {
        let output = util::run_bounded(job, Duration::from_secs(120));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(&format!("checkpoint server {} refused the job", server.addr)), "{stderr}");
        assert!(stderr.contains("authentication failed"), "{stderr}");
        assert!(!stderr.contains("restarting"), "{stderr}");
        assert!(output.stdout.is_empty(), "no rank ran");
    }
    // Rank 0 checks as well, for jobs that `grappe run` does not launch.
    let mut alone = Command::new(util::example("jacobi"));
    alone
        .args([SIZE, "10"])
        .env("GRAPPE_FT_DIR", &images)
        .env("GRAPPE_FT_SERVERS", &server.addr)
        .env("GRAPPE_CKPT_SECRET", "not-the-secret");
    let output = util::run_bounded(alone, Duration::from_secs(120));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("refused the job") && stderr.contains("not starting"), "{stderr}");
    assert!(output.stdout.is_empty(), "the job did not run");
}

/// With checkpoint servers, a rank whose local copy is gone (its node was
/// lost) is restored from its server while the others use theirs.
#[test]
fn a_rank_without_its_local_copy_is_restored_from_its_server() {
    let expected = reference(JACOBI);
    let dir = scratch("servers");
    let secret = "job-secret-for-the-test";
    let servers: Vec<String> = (0..2)
        .map(|i| {
            let config = grappe_ft::ServerConfig::new(
                dir.join(format!("server-{i}")),
                "127.0.0.1:0".into(),
                secret.as_bytes().to_vec(),
            );
            let server = grappe_ft::CheckpointServer::bind(config).unwrap();
            let addr = server.local_addr().to_string();
            std::thread::spawn(move || server.serve());
            addr
        })
        .collect();
    let images = dir.join("images");
    // The servers are given by the environment, as under mpiexec or srun.
    let env = [("GRAPPE_CKPT_SECRET", secret), ("GRAPPE_FT_SERVERS", &servers.join(","))];
    let (status, _, stderr) = run_with_waves(&images, &env, 1);
    assert!(status.success(), "{stderr}");
    std::fs::remove_dir_all(images.join("rank-1")).unwrap();
    let (status, stdout, stderr) = run_with_waves(&images, &env, 0);
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains("rank 1: local copy of wave") && stderr.contains(&servers[1]), "{stderr}");
    assert!(stderr.contains("restarted from checkpoint wave"), "{stderr}");
    assert!(!stderr.contains("cannot restore"), "{stderr}");
    assert_eq!(result_of(&stdout), expected);
    assert_eq!(local_waves(&images, 1), committed_waves(&images), "rank 1's local copy is back");
}

/// `touch DIR/REQUEST` asks for a wave now, whatever the interval.
#[test]
fn a_request_file_takes_a_wave_at_the_next_agreement() {
    let dir = scratch("request");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("REQUEST"), "").unwrap();
    let mut cmd = Command::new(util::grappe());
    cmd.args(["run", "-n", "2", "--checkpoint-every", "1h", "--checkpoint-dir"])
        .arg(&dir)
        .arg(util::example("jacobi"))
        .args([SIZE, "200"]);
    let output = util::run_bounded(cmd, Duration::from_secs(120));
    assert!(output.status.success(), "{}", util::describe(&output));
    assert!(!dir.join("REQUEST").exists(), "the request was taken");
    let committed = std::fs::read_to_string(dir.join("COMMITTED")).unwrap();
    assert_eq!(committed.trim(), "grappe committed waves: 1", "one wave, the requested one");
}

/// The rank processes of a launcher, once it has started them (its signal
/// handlers are then in place).
fn wait_for_ranks(job: &mut Live, launcher: u32) {
    job.wait_until("the ranks started", || !children(launcher).is_empty());
}

/// `kill -USR1` on the launcher asks for a wave at once, whatever the
/// interval: its scheduler creates the request, rank 0 takes it.
#[test]
fn sigusr1_on_the_launcher_takes_a_wave() {
    let dir = scratch("sigusr1");
    let mut cmd = Command::new(util::grappe());
    cmd.env("GRAPPE_FT_HOLD", gate_of(&dir))
        .args(["run", "-n", "2", "--checkpoint-every", "1h", "--checkpoint-dir"])
        .arg(&dir)
        .arg(util::example("jacobi"))
        .args([SIZE, ITERATIONS]);
    let mut job = Live::start(cmd);
    let launcher = job.child.id();
    wait_for_ranks(&mut job, launcher);
    let _ = kill(Pid::from_raw(launcher as i32), Signal::SIGUSR1);
    job.wait_until("the wave is committed", || !committed_waves(&dir).is_empty());
    job.wait_until("the wave is over", || !dir.join("WAVE").exists());
    open_gate(&dir);
    let (status, _, stderr) = job.finish();
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains("grappe: checkpoint wave asked for on request"), "{stderr}");
    assert_eq!(committed_waves(&dir), vec![1], "one wave, the requested one\n{stderr}");
    assert!(!dir.join("REQUEST").exists() && !dir.join("WAVE").exists(), "the wave is over");
}

/// A checkpoint directory that fills up: the wave that does not fit is
/// not committed, the error says why, the job goes on to the right result
/// and the committed wave stays. (A 12 MiB tmpfs in a mount namespace of
/// the job's own; each wave of 2 ranks × 4 MiB needs 8 MiB. The two waves
/// are asked for with `kill -USR1`, while the job holds at its end.)
#[test]
fn a_full_checkpoint_disk_costs_a_wave_not_the_job_or_a_committed_wave() {
    let expected = {
        let mut cmd = Command::new(util::grappe());
        cmd.args(["run", "-n", "2"]).arg(util::example("ft_bench")).args(["4", "3000", "20000"]);
        let output = util::run_bounded(cmd, Duration::from_secs(120));
        assert!(output.status.success(), "{}", util::describe(&output));
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        stdout.split("checksum=").nth(1).expect("a checksum").trim().to_owned()
    };
    let dir = scratch("full");
    std::fs::create_dir_all(&dir).unwrap();
    let script = format!(
        "mount -t tmpfs -o size=12m grappe-ft-full {d} && {grappe} run -n 2 --checkpoint-every 1h \
         --checkpoint-dir {d} {bench} 4 3000 20000 && cat {d}/COMMITTED && ls {d}/rank-0 {d}/rank-1",
        d = dir.display(),
        grappe = util::grappe().display(),
        bench = util::example("ft_bench").display(),
    );
    let mut cmd = Command::new("unshare");
    cmd.env("GRAPPE_FT_HOLD", gate_of(&dir)).env("GRAPPE_FT_VERBOSE", "1");
    cmd.args(["--mount", "--propagation", "private", "sh", "-c", &script]);
    let mut job = Live::start(cmd);
    let shell = job.child.id();
    job.wait_until("the launcher started its ranks", || {
        children(shell).first().is_some_and(|&launcher| !children(launcher as u32).is_empty())
    });
    let launcher = children(shell)[0];
    let _ = kill(Pid::from_raw(launcher), Signal::SIGUSR1);
    job.wait_for("grappe: checkpoint wave 1 committed");
    let _ = kill(Pid::from_raw(launcher), Signal::SIGUSR1);
    job.wait_for("grappe: checkpoint wave 2 not committed");
    open_gate(&dir);
    let (status, stdout, stderr) = job.finish();
    assert!(status.success(), "{stderr}\n{stdout}");
    assert!(stderr.contains("No space left on device"), "{stderr}");
    assert!(stdout.contains(&format!("checksum={expected}")), "{stdout}");
    assert!(stdout.contains("grappe committed waves: 1\n"), "the committed wave stays: {stdout}");
    // What is left on the full disk (listed inside the namespace): the
    // committed wave, no half-written image.
    assert_eq!(stdout.matches("wave-1.img").count(), 2, "{stdout}");
    assert!(!stdout.contains(".partial") && !stdout.contains("wave-2"), "{stdout}");
}

/// A "remote shell" for `grappe run --launcher-exec` that runs the agent on
/// this machine, logs `HOST PID` of every agent it starts in `dir/agents`,
/// and refuses hosts listed in `dir/down` as ssh refuses an unreachable one.
fn fork_shell(dir: &Path) -> PathBuf {
    let script = dir.join("fork-shell");
    let text = format!(
        "#!/bin/sh\nif grep -qx \"$1\" '{down}' 2>/dev/null; then\n  \
         echo \"ssh: connect to host $1 port 22: No route to host\" >&2\n  exit 255\nfi\n\
         echo \"$1 $$\" >> '{log}'\nshift\nexec \"$@\"\n",
        down = dir.join("down").display(),
        log = dir.join("agents").display()
    );
    std::fs::write(&script, text).unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    script
}

/// (host, pid) of every agent the fork shell of `dir` started.
fn agents(dir: &Path) -> Vec<(String, i32)> {
    let log = std::fs::read_to_string(dir.join("agents")).unwrap_or_default();
    log.lines().filter_map(|l| l.split_once(' ').and_then(|(h, p)| Some((h.to_owned(), p.parse().ok()?)))).collect()
}

/// `ft_ring` across hosts a and b (`grappe run --hosts`, agents through the
/// fork shell) with checkpoints; after the first committed wave host b goes
/// down (its agent killed, the shell refusing it). The job must restart
/// from the wave without b (on `spare` if given, else on a alone) and end
/// with the fault-free result.
fn survives_a_lost_host(spare: Option<&str>, kill_agent: bool) -> (String, Vec<(String, i32)>) {
    survives_a_lost_host_over(None, spare, kill_agent)
}

/// As [`survives_a_lost_host`], the hosts joined by `fabric`
/// (`GRAPPE_FABRIC`; the default if `None`).
fn survives_a_lost_host_over(
    fabric: Option<&str>,
    spare: Option<&str>,
    kill_agent: bool,
) -> (String, Vec<(String, i32)>) {
    let expected = reference(RING);
    let over = fabric.map_or("default".to_owned(), |f| f.replace([':', ';'], "-"));
    let base = scratch(&format!("lost-host-{}-{kill_agent}-{over}", spare.unwrap_or("none")));
    let shell_dir = base.join("shell");
    std::fs::create_dir_all(&shell_dir).unwrap();
    let dir = base.join("ckpt");
    let mut cmd = Command::new(util::grappe());
    if let Some(fabric) = fabric {
        cmd.env("GRAPPE_FABRIC", fabric);
    }
    cmd.env("GRAPPE_FT_HOLD", gate_of(&dir))
        .args(["run", "-n", "4", "--hosts", "a:2,b:2", "--launcher-exec"])
        .arg(fork_shell(&shell_dir))
        .args(["--checkpoint-every", "40ms", "--checkpoint-dir"])
        .arg(&dir);
    if let Some(spare) = spare {
        cmd.args(["--spare-hosts", spare]);
    }
    cmd.arg(util::example(RING.example)).args(RING.args);
    let mut job = Live::start(cmd);
    job.wait_until("a committed wave", || !committed_waves(&dir).is_empty());
    std::fs::write(shell_dir.join("down"), "b\n").unwrap();
    let (_, agent_of_b) = agents(&shell_dir).into_iter().find(|(host, _)| host == "b").expect("an agent on b");
    // The agent (the job sees its host go) or one of its processes (the
    // job sees a rank die, and the restart finds the host unreachable).
    let victim = match kill_agent {
        true => agent_of_b,
        false => *children(agent_of_b as u32).first().expect("a process on b"),
    };
    kill(Pid::from_raw(victim), Signal::SIGKILL).unwrap();
    open_gate(&dir);
    let (status, stdout, stderr) = job.finish();
    assert!(status.success(), "the job did not survive the loss of host b:\n{stderr}\n{stdout}");
    assert_eq!(result_of(&stdout), expected, "the result changed\n{stderr}");
    assert!(stderr.contains("host b is lost"), "{stderr}");
    assert!(stderr.contains("grappe: restarted from checkpoint wave"), "{stderr}");
    (stderr, agents(&shell_dir))
}

#[test]
fn a_job_across_hosts_restarts_on_the_remaining_hosts_when_one_is_lost() {
    let (stderr, agents) = survives_a_lost_host(None, true);
    assert!(stderr.contains("on the remaining hosts (a)"), "{stderr}");
    let after: Vec<&str> = agents.iter().skip(2).map(|(host, _)| host.as_str()).collect();
    assert!(!after.is_empty() && after.iter().all(|&host| host == "a"), "agents after the loss: {agents:?}");
}

#[test]
fn a_job_across_hosts_restarts_on_a_spare_host_when_one_is_lost() {
    let (stderr, agents) = survives_a_lost_host(Some("c"), true);
    assert!(stderr.contains("on spare host c in its place"), "{stderr}");
    assert!(agents.iter().skip(2).any(|(host, _)| host == "c"), "no agent on the spare: {agents:?}");
    assert!(agents.iter().skip(2).all(|(host, _)| host != "b"), "b used after its loss: {agents:?}");
}

/// The same over libfabric: the checkpointed job loses host b (its agent
/// killed) and restarts on a from the committed wave, same result.
#[cfg(feature = "libfabric")]
#[test]
fn a_job_across_hosts_over_libfabric_restarts_on_the_remaining_hosts_when_one_is_lost() {
    let (stderr, agents) = survives_a_lost_host_over(Some("ofi:tcp;ofi_rxm"), None, true);
    assert!(stderr.contains("on the remaining hosts (a)"), "{stderr}");
    let after: Vec<&str> = agents.iter().skip(2).map(|(host, _)| host.as_str()).collect();
    assert!(!after.is_empty() && after.iter().all(|&host| host == "a"), "agents after the loss: {agents:?}");
}

#[test]
fn a_restart_that_cannot_reach_a_host_goes_on_without_it() {
    let (stderr, agents) = survives_a_lost_host(None, false);
    assert!(stderr.contains("was killed by signal 9"), "{stderr}");
    assert!(stderr.contains("grappe: host b: ssh: connect to host b port 22: No route to host"), "{stderr}");
    assert!(stderr.contains("grappe: host b is lost: restarting the job on the remaining hosts (a)"), "{stderr}");
    assert_eq!(agents.last().map(|(host, _)| host.as_str()), Some("a"), "{agents:?}");
}
