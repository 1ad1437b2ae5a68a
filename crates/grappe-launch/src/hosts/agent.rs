//! The agent: `grappe agent`, started on each host by the launcher's remote shell. It starts the
//! host's processes (each with its PMI socket, as `grappe run` does on one host), relays their
//! PMI traffic and output to the launcher over its standard input and output, reports how each
//! ended, and kills them all if the launcher goes away.
//!
//! Its processes die with it (their parent-death signal is SIGKILL), so a killed agent takes its
//! host's processes along, and the launcher, seeing the channel close, names the host.

use super::channel::{ChannelError, Ended, Frame, FrameReader, Stream};
use crate::launcher::{self, JobPlan, LaunchSpec};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::collections::HashMap;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::Child;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long the agent waits for its processes' last output after they all ended.
const OUTPUT_DRAIN: Duration = Duration::from_secs(1);

/// What the launcher tells an agent: the job and this host's share of it. Byte strings are the
/// raw bytes of OS strings (paths and environment need not be UTF-8).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AgentJob {
    pub job_id: String,
    /// The host's name on the launcher's command line, for messages.
    pub host: String,
    pub program: Vec<u8>,
    pub args: Vec<Vec<u8>>,
    /// Variables set for every process, over the agent's own environment.
    pub env: Vec<(Vec<u8>, Vec<u8>)>,
    /// The launcher's working directory, where the processes start (as hydra does).
    pub workdir: Vec<u8>,
    /// Processes of the whole job.
    pub processes: usize,
    pub ranks_per_process: usize,
    /// The processes this host runs.
    pub mine: Vec<usize>,
    /// Files the processes write into this directory (the ranks' traces) that the launcher
    /// gathers: removed before the processes start (no file of an earlier run is sent for a
    /// rank that never wrote its own), sent back once they have ended.
    pub gather_dir: Option<Vec<u8>>,
    /// Names of the files to gather, in `gather_dir`.
    pub gather: Vec<String>,
}

/// The writing end of the channel, shared by the threads that report.
type Out = Arc<Mutex<Box<dyn Write + Send>>>;

fn send(out: &Out, frame: &Frame) {
    // A launcher that is gone no longer reads; the agent notices on its input and stops.
    let _ = frame.write_to(&mut *out.lock().unwrap_or_else(PoisonError::into_inner));
}

/// Runs the agent on `input` and `output` (the remote shell's stdin and stdout); returns its exit
/// status: 0 when every process ended and the launcher closed the channel.
pub fn serve(input: impl Read, output: impl Write + Send + 'static) -> i32 {
    let out: Out = Arc::new(Mutex::new(Box::new(output)));
    let mut reader = FrameReader::new(input);
    let job = match read_job(&mut reader) {
        Ok(job) => job,
        Err(message) => {
            send(&out, &Frame::Failed { status: 1, message });
            return 1;
        }
    };
    let gather_dir = job.gather_dir.as_ref().map(|dir| PathBuf::from(OsString::from_vec(dir.clone())));
    if let Some(dir) = &gather_dir {
        for name in &job.gather {
            let _ = std::fs::remove_file(dir.join(name));
        }
    }
    let host = match Host::start(&job, &out) {
        Ok(host) => host,
        Err((status, message)) => {
            send(&out, &Frame::Failed { status, message });
            return 1;
        }
    };
    let launcher_stayed = host.relay_until_closed(&mut reader);
    let status = host.finish(&job, launcher_stayed);
    if let Some(dir) = &gather_dir {
        send_files(dir, &job.gather, &out);
    }
    status
}

/// Sends each file of `names` in `dir` that exists, in chunks, each followed by its end.
fn send_files(dir: &std::path::Path, names: &[String], out: &Out) {
    const CHUNK: usize = 1 << 20;
    for (index, name) in names.iter().enumerate() {
        let Ok(mut file) = std::fs::File::open(dir.join(name)) else { continue };
        let mut buffer = vec![0u8; CHUNK];
        loop {
            match file.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => send(out, &Frame::File { file: index as u32, bytes: buffer[..n].to_vec() }),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        send(out, &Frame::FileEnd { file: index as u32 });
    }
}

fn read_job(reader: &mut FrameReader<impl Read>) -> Result<AgentJob, String> {
    match reader.next_frame() {
        Ok(Frame::Job(json)) => {
            serde_json::from_slice(&json).map_err(|e| format!("the job description cannot be read: {e}"))
        }
        Ok(other) => Err(format!("expected the job description first, got {other:?}")),
        Err(e) => Err(format!("no job description: {e}")),
    }
}

/// The host's running processes.
struct Host {
    children: Vec<Child>,
    /// Agent ends of the processes' PMI sockets, by process index.
    pmi: HashMap<usize, UnixStream>,
    ended: Arc<AtomicUsize>,
    /// One message per output stream and exit watcher when it is done.
    done: Receiver<()>,
    threads: usize,
}

impl Host {
    /// Starts every process of the host and its relays; reports each as started.
    fn start(job: &AgentJob, out: &Out) -> Result<Host, (u32, String)> {
        let (spec, plan) = plan(job)?;
        let (done_sender, done) = channel();
        let mut host = Host { children: Vec::new(), pmi: HashMap::new(), ended: Arc::default(), done, threads: 0 };
        for &process in &job.mine {
            let (agent_end, child_end) =
                UnixStream::pair().map_err(|e| (1, format!("cannot create a PMI socket pair: {e}")))?;
            let mut child = match launcher::spawn_process(&spec, &plan, process, child_end.into()) {
                Ok(child) => child,
                Err(e) => {
                    host.kill(Signal::SIGKILL);
                    return Err((e.exit_code() as u32, e.to_string()));
                }
            };
            let relay = agent_end.try_clone().map_err(|e| (1, format!("cannot relay PMI: {e}")))?;
            host.pmi.insert(process, agent_end);
            let wire = process as u32;
            host.threads += relay_pmi(wire, relay, out.clone(), done_sender.clone());
            for (stream, source) in [
                (Stream::Stdout, child.stdout.take().map(|s| Box::new(s) as Box<dyn Read + Send>)),
                (Stream::Stderr, child.stderr.take().map(|s| Box::new(s) as Box<dyn Read + Send>)),
            ] {
                if let Some(source) = source {
                    host.threads += relay_output(wire, stream, source, out.clone(), done_sender.clone());
                }
            }
            host.threads += watch_exit(wire, child.id(), out.clone(), host.ended.clone(), done_sender.clone());
            send(out, &Frame::Started { process: wire, pid: child.id() });
            host.children.push(child);
        }
        Ok(host)
    }

    /// Serves the launcher's frames until it closes the channel; returns whether it closed it
    /// only after every process had ended (the normal end of a job).
    fn relay_until_closed(&self, reader: &mut FrameReader<impl Read>) -> bool {
        loop {
            match reader.next_frame() {
                Ok(Frame::Pmi { process, bytes }) => {
                    if let Some(mut socket) = self.pmi.get(&(process as usize)) {
                        // A process that died no longer reads; its exit report says so.
                        let _ = socket.write_all(&bytes);
                    }
                }
                Ok(Frame::Signal(signal)) => self.kill(Signal::try_from(signal).unwrap_or(Signal::SIGTERM)),
                Ok(_) => {} // Nothing else is meant for an agent; ignore rather than kill the job.
                Err(ChannelError::Closed) => return self.ended.load(Ordering::Acquire) == self.children.len(),
                Err(_) => return false,
            }
        }
    }

    /// Kills what still runs if the launcher left early, waits for the last output, reaps, and
    /// removes the job's shared memory on this host.
    fn finish(mut self, job: &AgentJob, launcher_stayed: bool) -> i32 {
        if !launcher_stayed {
            self.kill(Signal::SIGKILL);
        }
        for socket in self.pmi.values() {
            let _ = socket.shutdown(std::net::Shutdown::Both);
        }
        let deadline = Instant::now() + OUTPUT_DRAIN;
        for _ in 0..self.threads {
            if self.done.recv_timeout(deadline.saturating_duration_since(Instant::now())).is_err() {
                break;
            }
        }
        for child in &mut self.children {
            let _ = child.wait();
        }
        launcher::shm::remove_job_segments(&job.job_id);
        i32::from(!launcher_stayed)
    }

    /// Sends `signal` to the process group of every process.
    fn kill(&self, signal: Signal) {
        for child in &self.children {
            if let Ok(pid) = i32::try_from(child.id()) {
                // ESRCH: that one already ended.
                let _ = killpg(Pid::from_raw(pid), signal);
            }
        }
    }
}

/// The launch spec and plan that `spawn_process` takes, from the job's description.
fn plan(job: &AgentJob) -> Result<(LaunchSpec, JobPlan), (u32, String)> {
    let os = |bytes: &[u8]| OsString::from_vec(bytes.to_vec());
    let workdir = PathBuf::from(os(&job.workdir));
    std::env::set_current_dir(&workdir)
        .map_err(|e| (1, format!("cannot enter the working directory {}: {e}", workdir.display())))?;
    let env: Vec<(OsString, OsString)> = job.env.iter().map(|(key, value)| (os(key), os(value))).collect();
    let path = env.iter().find(|(key, _)| key.as_bytes() == b"PATH").map(|(_, value)| value.clone());
    let program =
        launcher::resolve_program(&PathBuf::from(os(&job.program)), path.or_else(|| std::env::var_os("PATH")))
            .map_err(|e| (e.exit_code() as u32, e.to_string()))?;
    let mut spec = LaunchSpec::new(program.clone(), job.processes * job.ranks_per_process);
    spec.args = job.args.iter().map(|arg| os(arg)).collect();
    spec.env = env;
    let plan = JobPlan {
        job_id: job.job_id.clone(),
        program,
        processes: job.processes,
        ranks_per_process: job.ranks_per_process,
    };
    Ok((spec, plan))
}

/// Relays what process `process` writes on its PMI socket; returns the threads started.
fn relay_pmi(process: u32, mut socket: UnixStream, out: Out, done: std::sync::mpsc::Sender<()>) -> usize {
    spawn_counted("grappe-agent-pmi", done, move || {
        let mut buffer = vec![0u8; 64 * 1024];
        while let Ok(n @ 1..) = socket.read(&mut buffer) {
            send(&out, &Frame::Pmi { process, bytes: buffer[..n].to_vec() });
        }
    })
}

fn relay_output(
    process: u32,
    stream: Stream,
    mut source: Box<dyn Read + Send>,
    out: Out,
    done: std::sync::mpsc::Sender<()>,
) -> usize {
    spawn_counted("grappe-agent-output", done, move || {
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            match source.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => send(&out, &Frame::Output { process, stream, bytes: buffer[..n].to_vec() }),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
    })
}

fn watch_exit(process: u32, pid: u32, out: Out, ended: Arc<AtomicUsize>, done: std::sync::mpsc::Sender<()>) -> usize {
    spawn_counted("grappe-agent-wait", done, move || {
        let exit = match launcher::wait_without_reaping(pid) {
            Ok(launcher::ExitKind::Code(code)) => Ended::Code(code),
            Ok(launcher::ExitKind::Signal(signal)) => Ended::Signal(signal),
            Err(_) => Ended::Unknown,
        };
        ended.fetch_add(1, Ordering::AcqRel);
        send(&out, &Frame::Exited { process, ended: exit });
    })
}

/// Runs `body` on a thread that says on `done` when it ends; 1 if it started, else 0 (its
/// work is then not done, which the launcher learns from the missing reports).
fn spawn_counted(name: &str, done: std::sync::mpsc::Sender<()>, body: impl FnOnce() + Send + 'static) -> usize {
    let started = std::thread::Builder::new().name(name.to_owned()).spawn(move || {
        body();
        let _ = done.send(());
    });
    usize::from(started.is_ok())
}

impl AgentJob {
    /// The description as the `Job` frame's payload.
    pub fn to_frame(&self) -> Frame {
        Frame::Job(serde_json::to_vec(self).unwrap_or_default())
    }
}
