//! The engine's links: one per rank of the job.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use grappe_fabric::layout::{STATE_FAILED, STATE_FINALIZED, STATE_JOINING, STATE_RUNNING, STATE_STOPPED};
use grappe_fabric::put::{PROBE_WORD, Route, probe_cross_memory};
use grappe_fabric::ring::Producer;
use grappe_fabric::{Doorbell, HostMemory};

use crate::rendezvous::Slot;
use crate::{Error, ProtoSettings, Result};

/// Publishes this rank in the host segment: process, doorbell, world rank.
/// Every rank announces itself before any rank connects.
pub fn announce(host: &HostMemory, world: usize, local: usize, bell: usize) {
    grappe_fabric::put::allow_peer_access();
    let control = host.control(local);
    control.pid.store(std::process::id(), Ordering::Relaxed);
    control.bell.store(bell as u32, Ordering::Relaxed);
    control.world_rank.store(world as u32, Ordering::Relaxed);
    control.probe_addr.store(&PROBE_WORD as *const u64 as u64, Ordering::Relaxed);
    control.state.store(STATE_RUNNING, Ordering::Release);
}

/// Marks a rank that never connected (it found a peer failed, see
/// [`Engine::connect`](crate::Engine::connect)) as stopped, so that its
/// peers stop waiting for it.
pub fn mark_stopped(host: &HostMemory, local: usize) {
    host.control(local).state.store(STATE_STOPPED, Ordering::SeqCst);
}

/// How we reach one rank.
pub(crate) struct Peer {
    pub local: usize,
    pub pid: u32,
    pub route: Route,
    /// Cross-memory attach is refused: large messages go through the
    /// mailbox in fragments.
    pub staged: bool,
    /// Largest message sent eagerly to this rank.
    pub eager_max: usize,
    pub out: Producer,
    /// The doorbell of the peer's worker, inside the host segment.
    bell: *const Doorbell,
}

pub(crate) struct Net {
    pub host: Arc<HostMemory>,
    pub me_local: usize,
    pub peers: Vec<Peer>,
}

impl Net {
    pub fn connect(host: Arc<HostMemory>, me: usize, locals: &[usize], settings: &ProtoSettings) -> Result<Net> {
        let my_pid = std::process::id();
        let me_local = locals[me];
        let mut peers = Vec::with_capacity(locals.len());
        for (world, &local) in locals.iter().enumerate() {
            let control = host.control(local);
            let pid = control.pid.load(Ordering::Relaxed);
            match control.state.load(Ordering::Acquire) {
                STATE_JOINING => {
                    return Err(Error::NotAnnounced { rank: world });
                }
                // It announced itself and has ended since: a rank that
                // starts late (a coroutine whose worker was busy) sees
                // the failure, not a start-up problem.
                state @ (STATE_FAILED | STATE_STOPPED) => return Err(ended(world, pid, state)),
                _ => {}
            }
            let (route, staged) = if pid == my_pid {
                (Route::SameProcess, !settings.single_copy)
            } else {
                let reachable =
                    settings.single_copy && probe_cross_memory(pid, control.probe_addr.load(Ordering::Relaxed)).is_ok();
                (Route::CrossMemory { pid }, !reachable)
            };
            let bell = host.doorbell(control.bell.load(Ordering::Relaxed) as usize) as *const Doorbell;
            // SAFETY: rank `me` is the only producer of its rings, built once here.
            let out = unsafe { host.producer(me_local, local) };
            let eager_max = if route == Route::SameProcess { settings.eager_max_threads } else { settings.eager_max };
            peers.push(Peer { local, pid, route, staged, eager_max, out, bell });
        }
        Ok(Net { host, me_local, peers })
    }

    /// Wakes world rank `world` if it sleeps.
    #[inline]
    pub fn ring(&self, world: usize) {
        // SAFETY: the doorbell lives in the host segment kept by `self.host`.
        unsafe { &*self.peers[world].bell }.ring();
    }

    /// Rendezvous slot `slot` of the rank with host-local index `owner`.
    pub fn slot(&self, owner: usize, slot: u32) -> &Slot {
        // SAFETY: the slot is inside the host segment, alive as long as self.
        unsafe { Slot::at(self.host.rdv_slot(owner, slot as usize)) }
    }

    /// The error for a failed copy with world rank `world`.
    pub fn copy_error(&self, world: usize, error: grappe_fabric::FabricError) -> Error {
        let pid = self.peers[world].pid;
        match &error {
            grappe_fabric::FabricError::CrossMemory { source, .. } if source.raw_os_error() == Some(libc::ESRCH) => {
                Error::PeerDied { rank: world, pid, cause: "its process exited during a transfer".into() }
            }
            _ => Error::Fabric(error),
        }
    }

    /// Fails if a rank hosted by another process died or said it failed,
    /// or if this process was asked to stop (see [`crate::stop`]). A rank
    /// that failed first, or whose process died, is named before one that
    /// only stopped because of a failure.
    pub fn check_peers(&self) -> Result<()> {
        if let Some(signal) = crate::stop::requested() {
            return Err(Error::Stopped { signal });
        }
        let my_pid = std::process::id();
        let mut stopped = None;
        for (world, peer) in self.peers.iter().enumerate() {
            if peer.local == self.me_local {
                continue;
            }
            let state = self.host.control(peer.local).state.load(Ordering::Acquire);
            match state {
                STATE_FAILED => return Err(ended(world, peer.pid, state)),
                STATE_STOPPED => _ = stopped.get_or_insert(world),
                STATE_FINALIZED => {}
                _ if peer.pid != my_pid && !process_alive(peer.pid) => {
                    return Err(Error::PeerDied {
                        rank: world,
                        pid: peer.pid,
                        cause: "its process no longer exists".into(),
                    });
                }
                _ => {}
            }
        }
        match stopped {
            Some(world) => Err(ended(world, self.peers[world].pid, STATE_STOPPED)),
            None => Ok(()),
        }
    }

    /// Runs `copy`, which reads or writes the memory of world rank `peer`,
    /// unless that rank has given up its requests (it no longer runs):
    /// then its buffers may be gone, and the copy is refused with
    /// [`Error::PeerDied`].
    ///
    /// This rank names `peer` in its `accessing` word for the whole copy,
    /// and the owner of the memory, once it no longer runs, waits until
    /// nobody names it ([`Net::wait_for_accessors`]). Both sides write
    /// their word, then read the other's, sequentially consistent: either
    /// the copy sees the owner stopped, or the owner sees the copy and
    /// waits for it to end.
    pub fn touching<T>(&self, peer: usize, copy: impl FnOnce() -> T) -> Result<T> {
        let (me, owner) = (self.host.control(self.me_local), self.host.control(self.peers[peer].local));
        me.accessing.store(self.peers[peer].local as u32 + 1, Ordering::SeqCst);
        let state = owner.state.load(Ordering::SeqCst);
        let outcome = match state {
            STATE_RUNNING => Ok(copy()),
            _ => Err(ended(peer, self.peers[peer].pid, state)),
        };
        me.accessing.store(0, Ordering::Release);
        outcome
    }

    /// Waits until no rank is copying to or from this rank's memory (see
    /// [`Net::touching`]). Copies are never suspended halfway, so this
    /// waits for copies running on other threads only; a copier whose
    /// process died copies nothing more.
    pub fn wait_for_accessors(&self) {
        let me = self.me_local as u32 + 1;
        let my_pid = std::process::id();
        for peer in &self.peers {
            let accessing = &self.host.control(peer.local).accessing;
            let mut polls = 0u32;
            while accessing.load(Ordering::SeqCst) == me {
                polls += 1;
                if polls % 1024 == 0 && peer.pid != my_pid && !process_running(peer.pid) {
                    break;
                }
                std::thread::yield_now();
            }
        }
    }
}

/// The error of a peer that ended in `state` (failed or stopped).
fn ended(rank: usize, pid: u32, state: u32) -> Error {
    let cause = match state {
        STATE_FAILED => "it reported a failure",
        STATE_STOPPED => "it stopped after another failure",
        STATE_FINALIZED => "it finalized",
        _ => "it did not finish joining the job",
    };
    Error::PeerDied { rank, pid, cause: cause.into() }
}

/// Whether process `pid` exists and is not a zombie (a launcher that
/// has not reaped a dead rank yet keeps it as one).
fn process_running(pid: u32) -> bool {
    if !process_alive(pid) {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name, which is in parentheses.
        Ok(stat) => stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next()) != Some('Z'),
        Err(_) => false,
    }
}

fn process_alive(pid: u32) -> bool {
    // SAFETY: kill with signal 0 only checks for existence and permission.
    let rc = unsafe { libc::kill(pid as libc::pid_t, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}
