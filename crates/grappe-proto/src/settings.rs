//! Protocol tunables, read once from the environment.

/// Thresholds and sizes of the protocols.
///
/// | variable | meaning | default |
/// |---|---|---|
/// | `GRAPPE_EAGER_MAX` | largest message sent eagerly to a rank of another process; larger ones use rendezvous | 8192, capped by the ring |
/// | `GRAPPE_EAGER_MAX_THREADS` | the same, between thread ranks of one process | 2048, capped by the ring |
/// | `GRAPPE_RDV_CHUNK` | bytes per rendezvous chunk (sender and receiver claim chunks) | 131072 |
/// | `GRAPPE_SINGLE_COPY` | `auto`: large messages move with one copy (memcpy between threads, cross-memory attach between processes, when allowed); `off`: stage them through the mailboxes (two pipelined copies) | `auto` |
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProtoSettings {
    /// Eager limit in bytes, to ranks of other processes.
    pub eager_max: usize,
    /// Eager limit in bytes, between threads of one process. Lower: there
    /// a rendezvous is two `memcpy` in parallel with no system call, which
    /// beats two sequential copies through the mailbox from about 2 KiB
    /// (measured, see BENCHMARKS.md); between processes the cross-memory
    /// system calls move that point to about 8 KiB.
    pub eager_max_threads: usize,
    /// Rendezvous chunk in bytes.
    pub rdv_chunk: usize,
    /// Move large messages with a single copy when the route allows it.
    pub single_copy: bool,
}

impl ProtoSettings {
    /// Reads the settings; `ring_bytes` caps the eager limit.
    pub fn from_env(ring_bytes: usize) -> Result<ProtoSettings, String> {
        let defaults = ProtoSettings::for_ring(ring_bytes);
        let eager: usize = parse("GRAPPE_EAGER_MAX", defaults.eager_max)?;
        let eager_threads: usize = parse("GRAPPE_EAGER_MAX_THREADS", defaults.eager_max_threads)?;
        Ok(ProtoSettings {
            eager_max: eager.min(max_eager(ring_bytes)),
            eager_max_threads: eager_threads.min(max_eager(ring_bytes)),
            rdv_chunk: parse::<usize>("GRAPPE_RDV_CHUNK", defaults.rdv_chunk)?.max(4096),
            single_copy: match std::env::var("GRAPPE_SINGLE_COPY").as_deref() {
                Err(_) | Ok("auto") => true,
                Ok("off") => false,
                Ok(other) => return Err(format!("GRAPPE_SINGLE_COPY={other:?}: expected `auto` or `off`")),
            },
        })
    }

    /// Defaults for a ring size.
    pub fn for_ring(ring_bytes: usize) -> ProtoSettings {
        ProtoSettings {
            eager_max: 8192.min(max_eager(ring_bytes)),
            eager_max_threads: 2048.min(max_eager(ring_bytes)),
            rdv_chunk: 128 << 10,
            single_copy: true,
        }
    }
}

/// An eager message may take at most a quarter of a ring, so that several
/// fit in flight.
fn max_eager(ring_bytes: usize) -> usize {
    (ring_bytes / 4).min(grappe_fabric::ring::max_payload(ring_bytes))
}

fn parse<T: std::str::FromStr>(var: &str, default: T) -> Result<T, String> {
    match std::env::var(var) {
        Err(_) => Ok(default),
        Ok(text) => text.trim().parse().map_err(|_| format!("{var}={text:?} is not a valid number")),
    }
}
