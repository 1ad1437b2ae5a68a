//! Starting one child process with its PMI socket and its environment.
#![allow(unsafe_code)] // Only `pre_exec`, to let the child keep its PMI descriptor across exec.

use super::{JobPlan, LaunchError, LaunchSpec};
use crate::env;
use std::ffi::OsString;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

/// `count` connected socket pairs: `(launcher ends, child ends)`. Both ends are close-on-exec
/// (std creates them so), so no child inherits another's socket.
pub(super) fn socket_pairs(count: usize) -> Result<(Vec<UnixStream>, Vec<OwnedFd>), LaunchError> {
    let mut launcher_ends = Vec::with_capacity(count);
    let mut child_ends = Vec::with_capacity(count);
    for _ in 0..count {
        let (launcher_end, child_end) = UnixStream::pair().map_err(LaunchError::setup("creating a PMI socket pair"))?;
        launcher_ends.push(launcher_end);
        child_ends.push(OwnedFd::from(child_end));
    }
    Ok((launcher_ends, child_ends))
}

/// Starts process `process` of the job with `pmi_end` as its `PMI_FD`. The child gets its own
/// process group, so that stopping it also stops what it started, and a terminal's Ctrl-C
/// reaches only the launcher, which forwards it.
pub(crate) fn spawn_process(
    spec: &LaunchSpec,
    plan: &JobPlan,
    process: usize,
    pmi_end: OwnedFd,
) -> Result<Child, LaunchError> {
    let fd = pmi_end.as_raw_fd();
    let mut command = Command::new(&plan.program);
    command
        .args(&spec.args)
        .envs(spec.env.iter().map(|(key, value)| (key, value)))
        .env(env::PMI_FD, fd.to_string())
        .env(env::PMI_RANK, process.to_string())
        .env(env::PMI_SIZE, plan.processes.to_string())
        .env(env::GRAPPE_RANKS_PER_PROCESS, plan.ranks_per_process.to_string())
        .env(env::GRAPPE_JOB_ID, &plan.job_id)
        .env(env::GRAPPE_LAUNCHER, env::GRAPPE_LAUNCHER_NAME)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    // SAFETY: `keep_across_exec` runs in the forked child before exec and calls only fcntl and
    // prctl, which are async-signal-safe, and allocates nothing.
    unsafe {
        command.pre_exec(move || keep_across_exec(fd));
    }
    let child = command.spawn().map_err(|source| LaunchError::Spawn { path: plan.program.clone(), process, source })?;
    drop(pmi_end); // The child has its copy; ours would keep the socket open after it dies.
    Ok(child)
}

/// In the child between fork and exec: clears close-on-exec on the PMI descriptor, and asks the
/// kernel to kill the child if the launcher dies, so that no rank outlives a killed launcher.
fn keep_across_exec(fd: RawFd) -> std::io::Result<()> {
    // SAFETY: fcntl on a descriptor number only reads and sets its flags.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
    // SAFETY: as above.
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    die_with_launcher()
}

/// Starts the remote shell that runs `host`'s agent: `exec... HOST AGENT agent`, its standard
/// streams piped, in its own process group, killed if the launcher dies (so that the agent sees
/// its input close and stops the host's processes). With no shell (`exec` empty), the agent of
/// this very host, it is started directly.
pub(super) fn spawn_remote_shell(exec: &[OsString], host: &str, agent: &std::path::Path) -> std::io::Result<Child> {
    let mut command = match exec.split_first() {
        Some((shell, shell_args)) => {
            let mut command = Command::new(shell);
            command.args(shell_args).arg(host).arg(agent);
            command
        }
        None => Command::new(agent),
    };
    command.arg("agent").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    // SAFETY: `die_with_launcher` runs in the forked child before exec and calls only prctl,
    // which is async-signal-safe, and allocates nothing.
    unsafe {
        command.pre_exec(die_with_launcher);
    }
    command.spawn()
}

/// In the child between fork and exec: SIGKILL when the launcher dies.
fn die_with_launcher() -> std::io::Result<()> {
    // SAFETY: PR_SET_PDEATHSIG only sets a signal number in the calling process.
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
