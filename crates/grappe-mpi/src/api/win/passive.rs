//! Passive-target synchronization (`MPI_Win_lock`, `MPI_Win_lock_all`...):
//! the origin reaches the target's memory itself, since no thread of the
//! target serves requests while its program computes.
//!
//! That is possible when every rank of the window runs on one host: the
//! origin reads and writes the target's window with
//! `process_vm_readv`/`process_vm_writev` (the target's pid and base are
//! exchanged when the window is made), and the locks are words in a
//! shared-memory segment the window's ranks map. Each rank has two: its
//! window's lock (a writer bit and a count of readers: exclusive and
//! shared locks as MPI defines them) and a mutex that accumulates to it
//! hold for their read-modify-write, which makes them atomic per element
//! between origins holding shared locks. Accesses complete when they are
//! called, so flushes have nothing left to wait for.
//!
//! Where the ranks are on several hosts, the calls fail with
//! `MPI_ERR_UNSUPPORTED_OPERATION`, naming the call, the target and why.

use std::ffi::c_int;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::abi::class;
use crate::errors::{MpiError, Result};

use super::Access;

/// Bits of a lock word: the writer bit, and the readers below it.
const WRITER: u64 = 1 << 63;

/// `MPI_LOCK_EXCLUSIVE` and `MPI_LOCK_SHARED`.
pub(super) const LOCK_EXCLUSIVE: c_int = 234;
pub(super) const LOCK_SHARED: c_int = 235;

/// What one rank's access to the others' memory needs.
pub(super) struct Reach {
    /// Every rank's process and window base, by window rank.
    pids: Vec<i32>,
    bases: Vec<usize>,
    segment: Segment,
}

/// A shared mapping of a file in `/dev/shm`: the lock words, or the
/// memory of a shared-memory window.
pub(super) struct Segment {
    words: *mut AtomicU64,
    len: usize,
}

// SAFETY: the mapping is shared memory reached only through atomics.
unsafe impl Send for Segment {}
// SAFETY: as above.
unsafe impl Sync for Segment {}

/// The regions of a dynamic window a rank publishes for its origins to
/// check their accesses against: at most this many.
const REGIONS: usize = 64;
/// Per rank: the lock, the accumulate mutex, the number of regions
/// (`u64::MAX`: more than [`REGIONS`]), then each region's start and length.
const WORDS_PER_RANK: usize = 8 + 2 * REGIONS;
const REGION_COUNT: usize = 2;
const FIRST_REGION: usize = 8;

impl Segment {
    /// Maps the segment file at `path` (made to hold `ranks` ranks' words).
    fn map(path: &str, ranks: usize, create: bool) -> std::io::Result<Segment> {
        Segment::map_bytes(path, ranks * WORDS_PER_RANK * 8, create)
    }

    /// Maps `len` bytes (at least one) of the file at `path`, made (zeroed) if `create`.
    pub(super) fn map_bytes(path: &str, len: usize, create: bool) -> std::io::Result<Segment> {
        let len = len.max(1);
        let file = std::fs::OpenOptions::new().read(true).write(true).create(create).truncate(false).open(path)?;
        if create {
            file.set_len(len as u64)?;
        }
        use std::os::fd::AsRawFd;
        // SAFETY: a shared mapping of the file's `len` bytes, which the
        // segment owns until it is dropped.
        let words = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if words == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Segment { words: words.cast(), len })
    }

    /// Where the mapping starts in this process.
    pub(super) fn start(&self) -> usize {
        self.words as usize
    }

    /// Word `which` of rank `rank` (see [`WORDS_PER_RANK`]).
    fn word(&self, rank: usize, which: usize) -> &AtomicU64 {
        debug_assert!(which < WORDS_PER_RANK);
        // SAFETY: inside the mapping, which holds WORDS_PER_RANK words per
        // rank, zeroed at creation, alive as long as `self`.
        unsafe { &*self.words.add(rank * WORDS_PER_RANK + which) }
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, which nothing uses any more.
        unsafe { libc::munmap(self.words.cast(), self.len) };
    }
}

/// The path of a window's segment in `/dev/shm`, `what` and `id` naming
/// it. Under `grappe run` the name starts with the job's id
/// (`grappe-<GRAPPE_JOB_ID>-...`, which the launcher removes after the job):
/// a rank that dies between the segment's creation and its unlinking (a
/// coarray image that fails while the others make a window) leaves no file.
pub(super) fn segment_path(what: &str, id: i64) -> String {
    match std::env::var("GRAPPE_JOB_ID") {
        Ok(job) if !job.is_empty() && !job.contains('/') => format!("/dev/shm/grappe-{job}-{what}-{id:x}"),
        _ => format!("/dev/shm/grappe-{what}-{id:x}"),
    }
}

/// A number naming this host: its name and boot (processes of one host
/// with different pid namespaces would still differ in the pid the
/// others see, so the launcher's ranks of one machine are what counts).
pub(super) fn host_id() -> i64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    nix::unistd::gethostname().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default().hash(&mut hasher);
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default().hash(&mut hasher);
    hasher.finish() as i64
}

/// The reach of a window whose ranks all run on this host (collective
/// over its communicator `comm`, of which this is rank `rank`): `Err`
/// says why passive target is not available.
pub(super) fn reach(comm: c_int, rank: usize, size: usize, base: usize) -> Result<std::result::Result<Reach, String>> {
    // A value only this window's rank holds, which the others read back
    // through the pid it gives: a pid that names another process (ranks
    // in other pid namespaces) is found out before any access trusts it.
    let token = Box::new(std::process::id() as i64 ^ (unique() << 24) ^ base as i64 ^ rank as i64);
    let mine = [std::process::id() as i64, base as i64, host_id(), &*token as *const i64 as i64, *token];
    let all = super::collective::allgather(comm, &mine, size)?;
    let all: Vec<[i64; 5]> = all.chunks(5).map(|c| [c[0], c[1], c[2], c[3], c[4]]).collect();
    let hosts: Vec<i64> = all.iter().map(|c| c[2]).collect();
    if let Some(other) = hosts.iter().position(|&h| h != hosts[0]) {
        return Ok(Err(format!(
            "the window's ranks run on several hosts (rank {other} is not on rank 0's host), and grappe reaches a target's memory only on its own host"
        )));
    }
    let mut id = [std::process::id() as i64 ^ (unique() << 20)];
    super::collective::bcast(comm, &mut id, 0)?;
    let path = segment_path("win", id[0]);
    // Rank 0 makes the file; the others open it once it exists.
    let made = (rank == 0).then(|| Segment::map(&path, size, true));
    super::collective::barrier(comm)?;
    let segment = made.unwrap_or_else(|| Segment::map(&path, size, false));
    let reached = all.iter().all(|peer| read_token(peer[0] as i32, peer[3] as usize) == Some(peer[4]));
    let failed = [(segment.is_err() || !reached) as i64];
    let outcomes = super::collective::allgather(comm, &failed, size)?;
    super::collective::barrier(comm)?;
    if rank == 0 {
        let _ = std::fs::remove_file(&path);
    }
    if let Some(bad) = outcomes.iter().position(|&f| f != 0) {
        return Ok(Err(format!(
            "rank {bad} could not map the window's lock words ({path}) or read the other ranks' memory through their pids"
        )));
    }
    let segment = segment.expect("checked on every rank");
    Ok(Ok(Reach {
        pids: all.iter().map(|c| c[0] as i32).collect(),
        bases: all.iter().map(|c| c[1] as usize).collect(),
        segment,
    }))
}

/// The 8 bytes at `address` in process `pid`, if they can be read.
fn read_token(pid: i32, address: usize) -> Option<i64> {
    let mut value = 0i64;
    let local = libc::iovec { iov_base: (&mut value as *mut i64).cast(), iov_len: 8 };
    let remote = libc::iovec { iov_base: address as *mut libc::c_void, iov_len: 8 };
    // SAFETY: `local` is this frame's 8 bytes; the kernel checks the remote address.
    let done = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
    (done == 8).then_some(value)
}

/// A number that differs between windows of a process.
fn unique() -> i64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed) as i64
}

impl Reach {
    /// Takes target `rank`'s window lock.
    pub(super) fn lock(&self, rank: usize, exclusive: bool) {
        let word = self.segment.word(rank, 0);
        loop {
            let now = word.load(Ordering::Acquire);
            let next = match exclusive {
                true if now == 0 => Some(WRITER),
                false if now & WRITER == 0 => Some(now + 1),
                _ => None,
            };
            if let Some(next) = next {
                if word.compare_exchange_weak(now, next, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
                    return;
                }
            }
            std::thread::yield_now();
        }
    }

    pub(super) fn unlock(&self, rank: usize, exclusive: bool) {
        let word = self.segment.word(rank, 0);
        match exclusive {
            true => word.store(0, Ordering::Release),
            false => drop(word.fetch_sub(1, Ordering::AcqRel)),
        }
    }

    /// Runs `f` holding target `rank`'s accumulate mutex.
    fn atomically<R>(&self, rank: usize, f: impl FnOnce() -> R) -> R {
        let word = self.segment.word(rank, 1);
        while word.compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed).is_err() {
            std::thread::yield_now();
        }
        let result = f();
        word.store(0, Ordering::Release);
        result
    }

    /// Publishes this rank's attached regions (`MPI_Win_attach`) for the
    /// origins' checks.
    pub(super) fn publish_regions(&self, rank: usize, regions: &[(usize, usize)]) {
        let count = self.segment.word(rank, REGION_COUNT);
        if regions.len() > REGIONS {
            count.store(u64::MAX, Ordering::Release);
            return;
        }
        for (i, &(start, len)) in regions.iter().enumerate() {
            self.segment.word(rank, FIRST_REGION + 2 * i).store(start as u64, Ordering::Relaxed);
            self.segment.word(rank, FIRST_REGION + 2 * i + 1).store(len as u64, Ordering::Relaxed);
        }
        count.store(regions.len() as u64, Ordering::Release);
    }

    /// Checks that every piece of `access` lies in memory `target` attached
    /// to its dynamic window.
    pub(super) fn check_attached(&self, target: usize, access: &Access, call: &str) -> Result<()> {
        let count = self.segment.word(target, REGION_COUNT).load(Ordering::Acquire);
        let (offset, n) = (access.offset, access.count);
        if count == u64::MAX {
            return Err(MpiError::new(
                class::UNSUPPORTED_OPERATION,
                format!(
                    "{call} to target rank {target} at address {offset:#x}: the target attached more than {REGIONS} regions, past what passive target can check"
                ),
            ));
        }
        let regions: Vec<(u64, u64)> = (0..count as usize)
            .map(|i| {
                let word = |k| self.segment.word(target, FIRST_REGION + 2 * i + k).load(Ordering::Relaxed);
                (word(0), word(1))
            })
            .collect();
        let inside = |at: i64, len: usize| {
            at >= 0 && regions.iter().any(|&(start, rlen)| at as u64 >= start && at as u64 + len as u64 <= start + rlen)
        };
        match access.pieces().find(|&(at, len)| !inside(at, len)) {
            None => Ok(()),
            Some((at, len)) => Err(MpiError::new(
                class::RMA_RANGE,
                format!(
                    "{call} to target rank {target} at address {offset:#x} ({n} elements): bytes {at:#x}..{:#x} are not in memory it attached",
                    at + len as i64
                ),
            )),
        }
    }

    /// The target's remote pieces of `access`, as addresses in its process.
    fn remote(&self, target: usize, access: &Access) -> Vec<libc::iovec> {
        access
            .runs()
            .map(|(at, len)| libc::iovec {
                iov_base: (self.bases[target] as i64 + at) as usize as *mut libc::c_void,
                iov_len: len,
            })
            .collect()
    }

    fn read(&self, target: usize, access: &Access, call: &str) -> Result<Vec<u8>> {
        let mut data = vec![0u8; access.packed_len()];
        let remote = self.remote(target, access);
        let local = [libc::iovec { iov_base: data.as_mut_ptr().cast(), iov_len: data.len() }];
        // SAFETY: `local` is this process's buffer of the pieces' length;
        // the kernel checks the remote addresses.
        let done = unsafe {
            transfer(&local, &remote, |l, ln, r, rn| libc::process_vm_readv(self.pids[target], l, ln, r, rn, 0))
        };
        check(done, data.len(), target, access, call, "read")?;
        Ok(data)
    }

    fn write(&self, target: usize, access: &Access, data: &[u8], call: &str) -> Result<()> {
        let remote = self.remote(target, access);
        let local = [libc::iovec { iov_base: data.as_ptr().cast_mut().cast(), iov_len: data.len() }];
        // SAFETY: as in `read`; the local buffer is only read.
        let done = unsafe {
            transfer(&local, &remote, |l, ln, r, rn| libc::process_vm_writev(self.pids[target], l, ln, r, rn, 0))
        };
        check(done, data.len(), target, access, call, "write")
    }

    /// Makes `access` on `target` now: what it read, for the kinds that read.
    pub(super) fn apply(&self, target: usize, access: &Access, call: &str) -> Result<Vec<u8>> {
        match access.kind {
            super::Kind::Put => self.write(target, access, &access.data, call).map(|()| Vec::new()),
            super::Kind::Get => self.read(target, access, call),
            _ => self.atomically(target, || {
                let current = self.read(target, access, call)?;
                if let Some(new) = super::new_value(access, &current) {
                    self.write(target, access, &new, call)?;
                }
                Ok(current)
            }),
        }
    }
}

/// Runs a `process_vm_*v` call over the pieces, at most IOV_MAX at a time:
/// the bytes moved, or -1.
///
/// # Safety
/// `local` describes this process's memory, as the call requires.
unsafe fn transfer(
    local: &[libc::iovec],
    remote: &[libc::iovec],
    call: impl Fn(*const libc::iovec, libc::c_ulong, *const libc::iovec, libc::c_ulong) -> isize,
) -> isize {
    const IOV_MAX: usize = 1024;
    let [whole] = local else { return -1 };
    let mut moved = 0isize;
    for chunk in remote.chunks(IOV_MAX) {
        let len: usize = chunk.iter().map(|v| v.iov_len).sum();
        let part = libc::iovec { iov_base: whole.iov_base.wrapping_byte_add(moved as usize), iov_len: len };
        let done = call(&part, 1, chunk.as_ptr(), chunk.len() as libc::c_ulong);
        if done < 0 {
            return done;
        }
        moved += done;
        if done as usize != len {
            break;
        }
    }
    moved
}

fn check(done: isize, wanted: usize, target: usize, access: &Access, call: &str, what: &str) -> Result<()> {
    if done == wanted as isize {
        return Ok(());
    }
    let error = std::io::Error::last_os_error();
    let (offset, count) = (access.offset, access.count);
    let (class, why) = match (done, error.raw_os_error()) {
        (d, _) if d >= 0 => (class::RMA_RANGE, format!("only {d} of {wanted} bytes are mapped there")),
        (_, Some(libc::EFAULT)) => (class::RMA_RANGE, "the target's memory there is not mapped".to_owned()),
        _ => {
            (class::UNSUPPORTED_OPERATION, format!("the system refused to {what} the target process's memory: {error}"))
        }
    };
    Err(MpiError::new(
        class,
        format!("{call} to target rank {target} at byte offset {offset} ({count} elements): {why}"),
    ))
}
