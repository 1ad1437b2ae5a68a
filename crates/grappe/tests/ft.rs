//! Checkpoint and restart of real jobs under `grappe run --checkpoint-dir`,
//! one of their processes SIGKILLed at a random moment: they must end with
//! the result of the fault-free run to the last bit, for both protocols and
//! for process and thread ranks. Two workloads: the Jacobi example, and
//! `ft_ring`, whose messages cross the checkpoint points (they must be
//! saved with the wave and delivered again after the restart).

mod util;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

// The jobs must outlast a kill up to 300 ms after their start: an
// optimized build (`cargo test --release`) needs larger ones.
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
/// saved messages).
fn result_of(stdout: &str) -> String {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("jacobi ") || l.starts_with("ft_ring "))
        .unwrap_or_else(|| panic!("no result in {stdout:?}"));
    line.split(" seconds=").next().unwrap().split(" saved_messages=").next().unwrap().to_owned()
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

/// The Jacobi job to its end with a wave every 20 ms in `dir`, with extra
/// environment.
fn checkpointed_run(dir: &Path, env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = Command::new(util::grappe());
    cmd.envs(env.iter().copied())
        .args(["run", "-n", "4", "--checkpoint-every", "20ms", "--checkpoint-dir"])
        .arg(dir)
        .arg(util::example("jacobi"))
        .args([SIZE, ITERATIONS]);
    util::run_bounded(cmd, Duration::from_secs(120))
}

/// A small deterministic generator (the trial's seed is printed on failure).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
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
    killed: bool,
}

/// One trial: the job with checkpoints, a process killed `delay` after
/// the first committed wave.
fn trial(work: Workload, layout: &[&str], protocol: &str, delay: Duration, victim: u64, dir: &Path) -> Trial {
    let mut cmd = Command::new(util::grappe());
    cmd.args(["run", "-n", "4"])
        .args(layout)
        .args(["--checkpoint-every", "40ms", "--checkpoint-protocol", protocol, "--checkpoint-dir"])
        .arg(dir)
        .arg(util::example(work.example))
        .args(work.args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("grappe starts");
    let launcher = child.id();
    // The kill lands `delay` after the first committed wave (before it,
    // a restart is a fresh start, which the other case covers).
    let started = Instant::now();
    while !dir.join("COMMITTED").exists() && child.try_wait().unwrap().is_none() {
        assert!(started.elapsed() < Duration::from_secs(60), "no wave committed in a minute");
        std::thread::sleep(Duration::from_millis(2));
    }
    std::thread::sleep(delay);
    let pids = children(launcher);
    let killed = pids
        .get(victim as usize % pids.len().max(1))
        .is_some_and(|&pid| unsafe { libc::kill(pid, libc::SIGKILL) } == 0);
    let output = child.wait_with_output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "the job did not survive:\n{stderr}\n{stdout}");
    Trial { result: result_of(&stdout), stdout: stdout.into_owned(), stderr: stderr.into_owned(), killed }
}

fn survives(work: Workload, layout: &[&str], protocol: &str, seed: u64) {
    let expected = reference(work);
    let mut rng = Lcg(seed);
    let mut restarts = 0;
    for t in 0..4 {
        let dir = scratch(&format!("{}-{protocol}-{}-{seed}-{t}", work.example, layout.len()));
        let delay = Duration::from_millis(rng.below(300));
        let victim = rng.below(4);
        let Trial { result, stdout, stderr, killed } = trial(work, layout, protocol, delay, victim, &dir);
        let context = format!("{} trial {t} (seed {seed}, kill after {delay:?}, victim {victim})", work.example);
        assert_eq!(result, expected, "{context}: the result changed\n{stderr}");
        if work.example == "ft_ring" {
            assert!(saved_messages(&stdout) > 0, "{context}: no message in transit was saved: {stdout}");
        }
        if killed {
            assert!(stderr.contains("was killed by signal 9"), "{context}: {stderr}");
            assert!(stderr.contains("grappe: restarting the job from checkpoint wave"), "{context}: {stderr}");
            assert!(stderr.contains("grappe: restarted from checkpoint wave"), "{context}: {stderr}");
            restarts += 1;
        }
    }
    assert!(restarts >= 3, "only {restarts} of 4 kills landed: the job ends too soon for this test");
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
    let run = || checkpointed_run(&dir, &[]);
    let first = run();
    assert!(first.status.success(), "{}", util::describe(&first));
    let committed = std::fs::read_to_string(dir.join("COMMITTED")).unwrap();
    let waves: Vec<u64> = committed
        .trim()
        .trim_start_matches("grappe committed waves:")
        .split_whitespace()
        .map(|w| w.parse().unwrap())
        .collect();
    assert_eq!(waves.len(), 2, "{committed}");
    let image = dir.join(format!("rank-2/wave-{}.img", waves[0]));
    let mut bytes = std::fs::read(&image).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 1;
    std::fs::write(&image, bytes).unwrap();
    // Running again restores (the job had finished: it resumes at its end).
    let second = run();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(second.status.success(), "{}", util::describe(&second));
    assert!(stderr.contains(&format!("rank 2: cannot restore wave {}", waves[0])), "{stderr}");
    assert!(stderr.contains("is corrupt"), "{stderr}");
    assert!(stderr.contains(&format!("restarted from checkpoint wave {}", waves[1])), "{stderr}");
    assert_eq!(result_of(&String::from_utf8_lossy(&second.stdout)), expected);
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
    let run =
        || checkpointed_run(&images, &[("GRAPPE_CKPT_SECRET", secret), ("GRAPPE_FT_SERVERS", &servers.join(","))]);
    let first = run();
    assert!(first.status.success(), "{}", util::describe(&first));
    std::fs::remove_dir_all(images.join("rank-1")).unwrap();
    let second = run();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(second.status.success(), "{}", util::describe(&second));
    assert!(stderr.contains("rank 1: local copy of wave") && stderr.contains(&servers[1]), "{stderr}");
    assert!(stderr.contains("restarted from checkpoint wave"), "{stderr}");
    assert!(!stderr.contains("cannot restore"), "{stderr}");
    assert_eq!(result_of(&String::from_utf8_lossy(&second.stdout)), expected);
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

/// `kill -USR1` on the launcher asks for a wave at once, whatever the
/// interval: its scheduler creates the request, rank 0 takes it.
#[test]
fn sigusr1_on_the_launcher_takes_a_wave() {
    let dir = scratch("sigusr1");
    let mut cmd = Command::new(util::grappe());
    cmd.args(["run", "-n", "2", "--checkpoint-every", "1h", "--checkpoint-dir"])
        .arg(&dir)
        .arg(util::example("jacobi"))
        .args([SIZE, ITERATIONS])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("grappe starts");
    let launcher = child.id() as i32;
    let started = Instant::now();
    // The handler is in place before the ranks are started.
    while children(launcher as u32).is_empty() && child.try_wait().unwrap().is_none() {
        assert!(started.elapsed() < Duration::from_secs(60), "no rank started in a minute");
        std::thread::sleep(Duration::from_millis(2));
    }
    unsafe { libc::kill(launcher, libc::SIGUSR1) };
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("grappe: checkpoint wave asked for on request"), "{stderr}");
    let committed = std::fs::read_to_string(dir.join("COMMITTED")).unwrap();
    assert_eq!(committed.trim(), "grappe committed waves: 1", "one wave, the requested one\n{stderr}");
    assert!(!dir.join("REQUEST").exists() && !dir.join("WAVE").exists(), "the wave is over");
}

/// A checkpoint directory that fills up: the wave that does not fit is
/// not committed, the error says why, the job goes on to the right result
/// and the committed wave stays. (A 12 MiB tmpfs in a mount namespace of
/// the job's own; each wave of 2 ranks × 4 MiB needs 8 MiB.)
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
        "mount -t tmpfs -o size=12m grappe-ft-full {d} && {grappe} run -n 2 --checkpoint-every 30ms \
         --checkpoint-dir {d} {bench} 4 3000 20000 && ls {d}/rank-0 {d}/rank-1",
        d = dir.display(),
        grappe = util::grappe().display(),
        bench = util::example("ft_bench").display(),
    );
    let mut cmd = Command::new("unshare");
    cmd.args(["--mount", "--propagation", "private", "sh", "-c", &script]);
    let output = util::run_bounded(cmd, Duration::from_secs(120));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{}", util::describe(&output));
    assert!(stderr.contains("No space left on device"), "{stderr}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains(&format!("checksum={expected}")), "{stdout}");
    let committed: u64 = stdout.split("committed=").nth(1).unwrap().split_whitespace().next().unwrap().parse().unwrap();
    let waves: u64 = stdout.split("waves=").nth(1).unwrap().split_whitespace().next().unwrap().parse().unwrap();
    assert!(committed >= 1 && committed < waves, "{waves} waves, {committed} committed: {stdout}\n{stderr}");
    // What is left on the full disk (listed inside the namespace): no
    // half-written image.
    assert!(stdout.contains("wave-") && !stdout.contains(".partial"), "{stdout}");
}
