//! The engine's links: one per rank of the job.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use grappe_fabric::layout::{STATE_FAILED, STATE_FINALIZED, STATE_JOINING, STATE_RUNNING, STATE_STOPPED};
use grappe_fabric::link::Outbox;
use grappe_fabric::put::{PROBE_WORD, Route, probe_cross_memory};
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
    pub place: Place,
    /// Large messages go through the link in fragments: cross-memory
    /// attach is refused, or the rank is on another host.
    pub staged: bool,
    /// Largest message sent eagerly to this rank.
    pub eager_max: usize,
    pub out: Outbox,
}

/// Where a peer runs.
pub(crate) enum Place {
    /// On this host: its mailboxes, doorbell and memory are reachable.
    Host(HostPeer),
    /// On another host, behind a network link.
    Remote(RemotePeer),
}

/// A rank of this host.
pub(crate) struct HostPeer {
    pub local: usize,
    pub pid: u32,
    pub route: Route,
    /// The doorbell of the peer's worker, inside the host segment.
    bell: *const Doorbell,
}

/// A rank of another host.
pub(crate) struct RemotePeer {
    /// The host's name, for diagnostics.
    pub host: String,
    /// The host's number in the job, the same on every rank: ranks with
    /// equal numbers share a host (see [`Engine::host_of`](super::Engine::host_of)).
    pub host_index: usize,
    /// The last state the rank announced (a [`Kind::State`](crate::wire::Kind::State)
    /// record): running until it says otherwise.
    pub state: std::cell::Cell<u32>,
    /// Why its link broke while it ran, once it did.
    pub lost: std::cell::RefCell<Option<String>>,
}

/// A link to a rank of another host, made by the runtime at start-up.
pub struct RemoteLink {
    /// The sending side.
    pub out: Outbox,
    /// The receiving side.
    pub inbox: grappe_fabric::link::Inbox,
    /// The rank's host, for diagnostics.
    pub host: String,
    /// The host's number in the job (the same on every rank).
    pub host_index: usize,
}

impl Peer {
    /// The peer's host-local index, if it runs on this host.
    pub fn local(&self) -> Option<usize> {
        match &self.place {
            Place::Host(p) => Some(p.local),
            Place::Remote(_) => None,
        }
    }

    /// The peer on this host, for what only shared memory does
    /// (rendezvous slots, cross-memory copies): the engine offers those
    /// only to ranks of its host, and refuses records that ask for them
    /// from others.
    pub fn on_host(&self) -> &HostPeer {
        match &self.place {
            Place::Host(p) => p,
            Place::Remote(p) => unreachable!("shared-memory transfer with a rank of host {}", p.host),
        }
    }
}

pub(crate) struct Net {
    pub host: Arc<HostMemory>,
    pub me_local: usize,
    pub peers: Vec<Peer>,
    /// World ranks behind network links, for the passes that flush their
    /// backlogs and read their state.
    pub remote: Vec<usize>,
}

impl Net {
    /// `locals[w]`: the host-local index of world rank `w`, or `None` for
    /// a rank of another host, whose sending side and host are `remote[w]`.
    pub fn connect(
        host: Arc<HostMemory>,
        me: usize,
        locals: &[Option<usize>],
        remote: &mut [Option<(Outbox, String, usize)>],
        settings: &ProtoSettings,
    ) -> Result<Net> {
        let my_pid = std::process::id();
        let me_local = locals[me].expect("a rank runs on its own host");
        let mut peers = Vec::with_capacity(locals.len());
        for (world, &local) in locals.iter().enumerate() {
            let Some(local) = local else {
                let (out, host, host_index) = remote[world].take().ok_or(Error::NotAnnounced { rank: world })?;
                let state = std::cell::Cell::new(STATE_RUNNING);
                let place = Place::Remote(RemotePeer { host, host_index, state, lost: Default::default() });
                peers.push(Peer { place, staged: true, eager_max: settings.eager_max, out });
                continue;
            };
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
            let out = Outbox::Ring(unsafe { host.producer(me_local, local) });
            let eager_max = if route == Route::SameProcess { settings.eager_max_threads } else { settings.eager_max };
            peers.push(Peer { place: Place::Host(HostPeer { local, pid, route, bell }), staged, eager_max, out });
        }
        let remote = (0..peers.len()).filter(|&w| peers[w].local().is_none()).collect();
        Ok(Net { host, me_local, peers, remote })
    }

    /// Takes note of the state world rank `world`, of another host, says
    /// it is in (a [`Kind::State`](crate::wire::Kind::State) record).
    pub fn remote_state(&self, world: usize, payload: &[u8]) -> Result<()> {
        let corrupt = |detail: String| Error::Corrupt { source_rank: world, detail };
        let Place::Remote(peer) = &self.peers[world].place else {
            return Err(corrupt("a state record from a rank of this host".into()));
        };
        let state = payload
            .try_into()
            .map(u32::from_le_bytes)
            .map_err(|_| corrupt(format!("a state record of {} bytes, not 4", payload.len())))?;
        match state {
            STATE_RUNNING | STATE_FINALIZED | STATE_FAILED | STATE_STOPPED => peer.state.set(state),
            _ => return Err(corrupt(format!("unknown state {state} in a state record"))),
        }
        Ok(())
    }

    /// The error of the link to world rank `world` if it broke: it will
    /// never take a record again.
    pub fn broken_link(&self, world: usize) -> Option<Error> {
        let Place::Remote(peer) = &self.peers[world].place else { return None };
        let failure = self.peers[world].out.failure()?;
        let cause = match peer.state.get() {
            STATE_RUNNING => format!("its link broke: {failure}"),
            state => format!("{} ({failure})", state_cause(state)),
        };
        Some(Error::PeerLost { rank: world, host: peer.host.clone(), cause })
    }

    /// Writes what the network links hold back; true if anything went out.
    pub fn flush_links(&mut self) -> bool {
        let mut moved = false;
        for &world in &self.remote {
            moved |= self.peers[world].out.flush();
        }
        moved
    }

    /// True if a network link holds bytes back.
    pub fn backlogged(&self) -> bool {
        self.remote.iter().any(|&world| self.peers[world].out.backlogged())
    }

    /// True if world rank `world` is a thread of this process.
    pub fn same_process(&self, world: usize) -> bool {
        matches!(&self.peers[world].place, Place::Host(peer) if peer.route == Route::SameProcess)
    }

    /// Wakes world rank `world` if it sleeps.
    #[inline]
    pub fn ring(&self, world: usize) {
        if let Place::Host(peer) = &self.peers[world].place {
            // SAFETY: the doorbell lives in the host segment kept by `self.host`.
            unsafe { &*peer.bell }.ring();
        }
    }

    /// Rendezvous slot `slot` of the rank with host-local index `owner`.
    pub fn slot(&self, owner: usize, slot: u32) -> &Slot {
        // SAFETY: the slot is inside the host segment, alive as long as self.
        unsafe { Slot::at(self.host.rdv_slot(owner, slot as usize)) }
    }

    /// The error for the link from world rank `world`, which ended:
    /// none for a connection closed between records after its rank said
    /// it finalized (or stopped, or failed: peers learn that from its
    /// state), an error otherwise (a rank lost with its process or host, a
    /// stream that is not records).
    pub fn link_error(&self, world: usize, error: grappe_fabric::FabricError) -> Option<Error> {
        let Place::Remote(peer) = &self.peers[world].place else { return Some(Error::Fabric(error)) };
        let clean = matches!(error, grappe_fabric::FabricError::LinkClosed(_));
        match peer.state.get() {
            STATE_RUNNING => {
                let cause = format!("its link broke: {error}");
                *peer.lost.borrow_mut() = Some(cause.clone());
                Some(Error::PeerLost { rank: world, host: peer.host.clone(), cause })
            }
            _ if clean => None,
            _ => Some(Error::Fabric(error)),
        }
    }

    /// The error for a failed copy with world rank `world`.
    pub fn copy_error(&self, world: usize, error: grappe_fabric::FabricError) -> Error {
        let pid = self.peers[world].on_host().pid;
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
        let mut stopped = None;
        for (world, peer) in self.peers.iter().enumerate() {
            match &peer.place {
                Place::Host(host_peer) => {
                    if host_peer.local == self.me_local {
                        continue;
                    }
                    if self.check_host_peer(world, host_peer)? == STATE_STOPPED {
                        stopped.get_or_insert(world);
                    }
                }
                Place::Remote(remote) => match remote.state.get() {
                    state @ STATE_FAILED => return Err(self.ended(world, state)),
                    STATE_STOPPED => _ = stopped.get_or_insert(world),
                    STATE_FINALIZED => {}
                    _ => {
                        let lost = remote.lost.borrow().clone();
                        if let Some(cause) = lost.or_else(|| peer.out.failure().map(|e| format!("its link broke: {e}")))
                        {
                            return Err(Error::PeerLost { rank: world, host: remote.host.clone(), cause });
                        }
                    }
                },
            }
        }
        match stopped {
            Some(world) => Err(self.ended(world, STATE_STOPPED)),
            None => Ok(()),
        }
    }

    /// The state of a rank of this host, or the error of one that failed
    /// or whose process died.
    fn check_host_peer(&self, world: usize, peer: &HostPeer) -> Result<u32> {
        let state = self.host.control(peer.local).state.load(Ordering::Acquire);
        match state {
            STATE_FAILED => Err(ended(world, peer.pid, state)),
            STATE_STOPPED | STATE_FINALIZED => Ok(state),
            _ if peer.pid != std::process::id() && !process_alive(peer.pid) => {
                Err(Error::PeerDied { rank: world, pid: peer.pid, cause: "its process no longer exists".into() })
            }
            _ => Ok(state),
        }
    }

    /// The error of world rank `world`, which ended in `state`.
    pub fn ended(&self, world: usize, state: u32) -> Error {
        match &self.peers[world].place {
            Place::Host(peer) => ended(world, peer.pid, state),
            Place::Remote(peer) => {
                Error::PeerLost { rank: world, host: peer.host.clone(), cause: state_cause(state).into() }
            }
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
        let owner_local = self.peers[peer].on_host().local;
        let (me, owner) = (self.host.control(self.me_local), self.host.control(owner_local));
        me.accessing.store(owner_local as u32 + 1, Ordering::SeqCst);
        let state = owner.state.load(Ordering::SeqCst);
        let outcome = match state {
            STATE_RUNNING => Ok(copy()),
            _ => Err(self.ended(peer, state)),
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
        for peer in self.peers.iter().filter_map(|p| match &p.place {
            Place::Host(peer) => Some(peer),
            Place::Remote(_) => None,
        }) {
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

/// The error of a peer of this host that ended in `state` (failed or stopped).
fn ended(rank: usize, pid: u32, state: u32) -> Error {
    Error::PeerDied { rank, pid, cause: state_cause(state).into() }
}

/// Why a rank that ended in `state` is gone.
fn state_cause(state: u32) -> &'static str {
    match state {
        STATE_FAILED => "it reported a failure",
        STATE_STOPPED => "it stopped after another failure",
        STATE_FINALIZED => "it finalized",
        _ => "it did not finish joining the job",
    }
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
