//! Which connections a process holds: ranks 0 and 2 exchange two round
//! trips of 8 bytes (rank 0 prints how long each took, `exchange
//! first_us=T1 second_us=T2`: with connections made on demand, the first
//! makes the connection), the other ranks talk to nobody, then every rank
//! prints how many TCP
//! connections its process holds (`rank R tcp_connections=N`), read from
//! the kernel: the established TCP sockets (`/proc/self/net/tcp`, `tcp6`)
//! among the process's descriptors.
//!
//!     GRAPPE_EMULATED_HOSTS=2 GRAPPE_TCP_CONNECT=lazy grappe run -n 4 target/debug/examples/tcp_links
//!
//! On two hosts of two ranks (0, 1 and 2, 3), connections made at start-up
//! join every rank to both ranks of the other host; made on demand, only
//! ranks 0 and 2 hold one. The count includes the process's other
//! connections (its process manager's), the same in both cases: compare
//! counts, not their values. Run one rank per process.

use std::collections::HashSet;
use std::time::Instant;

fn main() {
    grappe::run(|world| -> grappe::Result<()> {
        let mut word = [world.rank() as u64];
        let mut took = [0.0; 2];
        for round_trip in &mut took {
            let start = Instant::now();
            match world.rank() {
                0 => {
                    world.send(&word, 2, 0)?;
                    world.recv(&mut word, 2, 1)?;
                }
                2 => {
                    world.recv(&mut word, 0, 0)?;
                    world.send(&word, 0, 1)?;
                }
                _ => {}
            }
            *round_trip = start.elapsed().as_secs_f64() * 1e6;
        }
        if world.rank() == 0 {
            println!("exchange first_us={:.1} second_us={:.1}", took[0], took[1]);
        }
        println!("rank {} tcp_connections={}", world.rank(), established_tcp_sockets());
        Ok(())
    });
}

/// Established TCP sockets among this process's descriptors (a socket
/// duplicated counts once).
fn established_tcp_sockets() -> usize {
    let mine: HashSet<String> = std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd is readable")
        .filter_map(|entry| std::fs::read_link(entry.ok()?.path()).ok())
        .filter_map(|target| {
            let target = target.to_string_lossy().into_owned();
            Some(target.strip_prefix("socket:[")?.strip_suffix(']')?.to_owned())
        })
        .collect();
    let mut established = HashSet::new();
    for table in ["/proc/self/net/tcp", "/proc/self/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else { continue };
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // sl local remote st ... uid timeout inode: state 01 is ESTABLISHED.
            if let (Some(&"01"), Some(inode)) = (fields.get(3), fields.get(9))
                && mine.contains(*inode)
            {
                established.insert(inode.to_string());
            }
        }
    }
    established.len()
}
