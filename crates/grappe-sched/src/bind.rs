//! Pinning workers to cores.

/// The CPUs this process may run on, in increasing order.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: the kernel writes at most the size given into `set`.
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        return (0..n).collect();
    }
    // SAFETY: CPU_ISSET reads the set filled above.
    (0..libc::CPU_SETSIZE as usize).filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) }).collect()
}

/// Pins the calling thread to `cpu`. Failure is not fatal (the OS may
/// forbid it); it only costs locality, so it is reported, not raised.
pub fn bind_current_thread(cpu: usize) -> std::io::Result<()> {
    // SAFETY: as above; sched_setaffinity(0) applies to the calling thread.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: CPU_SET only sets a bit of `set`, bounds-checked (a cpu past
    // CPU_SETSIZE panics instead of writing outside).
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a valid cpu_set_t of the size given.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
}
