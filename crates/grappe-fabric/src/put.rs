//! Single-copy transfers: put into, and get from, a peer's registered region.
//!
//! This is the remote-write primitive of the fabric. A rank *registers* a
//! buffer (here: describes it; an RDMA backend would pin it) and publishes
//! the [`RemoteRegion`]; a peer then moves bytes with one copy, choosing the
//! mechanism from the [`Route`] to the owner:
//!
//! * same process (thread ranks): `memcpy`;
//! * other process on the host: cross-memory attach, `process_vm_writev` /
//!   `process_vm_readv`, which copies directly between the two address
//!   spaces inside the kernel.
//!
//! Cross-memory attach needs ptrace permission on the peer. Processes of a
//! job grant it to each other with [`allow_peer_access`] and check it with
//! [`probe_cross_memory`]; when it is refused (containers with seccomp, Yama
//! scope 2), the protocols fall back to copying through the mailboxes.

use crate::FabricError;
use crate::layout::PROBE_VALUE;

/// A buffer of some rank, as its peers see it.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RemoteRegion {
    /// Address in the owner's address space.
    pub addr: u64,
    /// Length in bytes.
    pub len: u64,
}

impl RemoteRegion {
    /// Describes a local buffer so that peers can read it.
    pub fn of(buf: &[u8]) -> RemoteRegion {
        RemoteRegion { addr: buf.as_ptr() as u64, len: buf.len() as u64 }
    }

    /// Describes a local buffer so that peers can write it.
    pub fn of_mut(buf: &mut [u8]) -> RemoteRegion {
        RemoteRegion { addr: buf.as_mut_ptr() as u64, len: buf.len() as u64 }
    }

    fn check(&self, offset: usize, len: usize) -> Result<u64, FabricError> {
        match offset.checked_add(len) {
            Some(end) if end as u64 <= self.len => Ok(self.addr + offset as u64),
            _ => Err(FabricError::OutOfRegion { offset, len, region_len: self.len as usize }),
        }
    }
}

/// How bytes reach the owner of a region. A closed set: the hot path
/// matches on it instead of calling through a trait object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// The owner is a thread of this process.
    SameProcess,
    /// The owner is another process on this host, reachable by
    /// cross-memory attach.
    CrossMemory {
        /// The owner's process id.
        pid: u32,
    },
}

impl Route {
    /// Copies `src` into `dst` at `offset`.
    ///
    /// # Safety
    /// For [`Route::SameProcess`], `dst` must describe memory of this process
    /// that stays valid for the call and that nobody else reads or writes in
    /// `[offset, offset + src.len())` meanwhile. For other routes the kernel
    /// checks the addresses; the owner must still not touch those bytes.
    pub unsafe fn put(&self, src: &[u8], dst: RemoteRegion, offset: usize) -> Result<(), FabricError> {
        let addr = dst.check(offset, src.len())?;
        match *self {
            // SAFETY: the caller guarantees validity and exclusivity.
            Route::SameProcess => unsafe {
                std::ptr::copy_nonoverlapping(src.as_ptr(), addr as *mut u8, src.len());
                Ok(())
            },
            Route::CrossMemory { pid } => cross_memory(pid, Direction::Put, src.as_ptr() as *mut u8, addr, src.len()),
        }
    }

    /// Copies from `src` at `offset` into `dst`.
    ///
    /// # Safety
    /// As for [`Route::put`], with the owner not writing the source bytes.
    pub unsafe fn get(&self, dst: &mut [u8], src: RemoteRegion, offset: usize) -> Result<(), FabricError> {
        let addr = src.check(offset, dst.len())?;
        match *self {
            // SAFETY: the caller guarantees validity and exclusivity.
            Route::SameProcess => unsafe {
                std::ptr::copy_nonoverlapping(addr as *const u8, dst.as_mut_ptr(), dst.len());
                Ok(())
            },
            Route::CrossMemory { pid } => cross_memory(pid, Direction::Get, dst.as_mut_ptr(), addr, dst.len()),
        }
    }
}

#[derive(Clone, Copy)]
enum Direction {
    Put,
    Get,
}

/// One `process_vm_{read,write}v` loop: the kernel may copy less than asked.
fn cross_memory(pid: u32, dir: Direction, local: *mut u8, remote: u64, len: usize) -> Result<(), FabricError> {
    let mut done = 0usize;
    while done < len {
        let local_iov = libc::iovec { iov_base: local.wrapping_add(done) as *mut libc::c_void, iov_len: len - done };
        let remote_iov = libc::iovec { iov_base: (remote + done as u64) as *mut libc::c_void, iov_len: len - done };
        // SAFETY: the local iovec covers a live slice owned by the caller;
        // the kernel validates the remote one against the peer's mappings.
        let n = unsafe {
            match dir {
                Direction::Put => libc::process_vm_writev(pid as libc::pid_t, &local_iov, 1, &remote_iov, 1, 0),
                Direction::Get => libc::process_vm_readv(pid as libc::pid_t, &local_iov, 1, &remote_iov, 1, 0),
            }
        };
        if n <= 0 {
            let source = if n == 0 {
                std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "peer mapping ended")
            } else {
                std::io::Error::last_os_error()
            };
            let direction = match dir {
                Direction::Put => "to",
                Direction::Get => "from",
            };
            return Err(FabricError::CrossMemory { direction, pid, len, source });
        }
        done += n as usize;
    }
    Ok(())
}

/// Lets any process of this user read and write our memory with
/// cross-memory attach, even under Yama ptrace scope 1. Harmless where
/// Yama is absent.
pub fn allow_peer_access() {
    // SAFETY: prctl with integer arguments has no memory effects.
    unsafe {
        libc::prctl(libc::PR_SET_PTRACER, libc::PR_SET_PTRACER_ANY, 0, 0, 0);
    }
}

/// A word holding [`PROBE_VALUE`] whose address is published in the rank
/// control block so that peers can test cross-memory access to us.
pub static PROBE_WORD: u64 = PROBE_VALUE;

/// Checks that cross-memory copies from process `pid` work, by reading its
/// probe word at `addr`.
pub fn probe_cross_memory(pid: u32, addr: u64) -> Result<(), FabricError> {
    let mut word = [0u8; 8];
    let region = RemoteRegion { addr, len: 8 };
    // SAFETY: the cross-memory route never dereferences `addr` itself.
    unsafe { Route::CrossMemory { pid }.get(&mut word, region, 0)? };
    if u64::from_ne_bytes(word) == PROBE_VALUE {
        Ok(())
    } else {
        Err(FabricError::CrossMemory {
            direction: "from",
            pid,
            len: 8,
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, "probe word has the wrong value"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_process_put_and_get_copy_exactly_the_range() {
        let mut target = vec![0u8; 64];
        let region = RemoteRegion::of_mut(&mut target);
        // SAFETY: `target` is ours, alive, and nobody else touches it.
        unsafe { Route::SameProcess.put(&[1, 2, 3], region, 10).unwrap() };
        assert_eq!(&target[9..14], &[0, 1, 2, 3, 0]);
        let mut back = [0u8; 3];
        // SAFETY: `back` is ours and `target` is only read.
        unsafe { Route::SameProcess.get(&mut back, RemoteRegion::of(&target), 10).unwrap() };
        assert_eq!(back, [1, 2, 3]);
    }

    #[test]
    fn out_of_region_transfers_are_refused_with_the_numbers() {
        let mut target = vec![0u8; 16];
        let region = RemoteRegion::of_mut(&mut target);
        // SAFETY: as above; the out-of-range put is refused before any copy.
        let err = unsafe { Route::SameProcess.put(&[0; 8], region, 12) }.unwrap_err();
        assert!(matches!(err, FabricError::OutOfRegion { offset: 12, len: 8, region_len: 16 }), "{err}");
    }

    #[test]
    // prctl(2) and process_vm_readv(2) are syscalls Miri does not implement.
    #[cfg_attr(miri, ignore)]
    fn cross_memory_reaches_our_own_process() {
        // CMA on our own pid exercises the syscall path without a peer.
        allow_peer_access();
        let pid = std::process::id();
        probe_cross_memory(pid, &PROBE_WORD as *const u64 as u64).expect("cross-memory attach on self");
        let source: Vec<u8> = (0..100_000u32).map(|i| i as u8).collect();
        let mut dest = vec![0u8; source.len()];
        // SAFETY: the kernel checks the remote range; `source` outlives the call.
        unsafe { Route::CrossMemory { pid }.get(&mut dest, RemoteRegion::of(&source), 0).unwrap() };
        assert_eq!(dest, source);
    }

    #[test]
    // Miri can spawn no process (posix_spawn) nor call process_vm_readv(2).
    #[cfg_attr(miri, ignore)]
    fn cross_memory_to_a_dead_process_names_it() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        let err = probe_cross_memory(pid, 0x1000).unwrap_err();
        assert!(err.to_string().contains(&pid.to_string()), "{err}");
    }
}
