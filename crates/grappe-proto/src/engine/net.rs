//! The engine's links: one per rank of the job.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use grappe_fabric::layout::{STATE_FAILED, STATE_FINALIZED, STATE_RUNNING};
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
            if control.state.load(Ordering::Acquire) != STATE_RUNNING {
                return Err(Error::Bootstrap(format!("rank {world} did not announce itself in the host segment")));
            }
            let pid = control.pid.load(Ordering::Relaxed);
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
    /// or if this process was asked to stop (see [`crate::stop`]).
    pub fn check_peers(&self) -> Result<()> {
        if let Some(signal) = crate::stop::requested() {
            return Err(Error::Stopped { signal });
        }
        let my_pid = std::process::id();
        for (world, peer) in self.peers.iter().enumerate() {
            let state = self.host.control(peer.local).state.load(Ordering::Acquire);
            if state == STATE_FAILED {
                return Err(Error::PeerDied { rank: world, pid: peer.pid, cause: "it reported a failure".into() });
            }
            if peer.pid != my_pid && state != STATE_FINALIZED && !process_alive(peer.pid) {
                return Err(Error::PeerDied {
                    rank: world,
                    pid: peer.pid,
                    cause: "its process no longer exists".into(),
                });
            }
        }
        Ok(())
    }
}

fn process_alive(pid: u32) -> bool {
    // SAFETY: kill with signal 0 only checks for existence and permission.
    let rc = unsafe { libc::kill(pid as libc::pid_t, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}
