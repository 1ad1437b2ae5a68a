//! Protocol tunables, read once from the environment.

use grappe_settings::{SettingError, Vars};

/// Thresholds and sizes of the protocols.
///
/// | variable | meaning | default |
/// |---|---|---|
/// | `GRAPPE_EAGER_MAX` | largest message sent eagerly to a rank of another process; larger ones use rendezvous | 8192, capped by the ring |
/// | `GRAPPE_EAGER_MAX_THREADS` | the same, between thread ranks of one process | 2048, capped by the ring |
/// | `GRAPPE_RDV_CHUNK` | bytes per rendezvous chunk (sender and receiver claim chunks) | 131072 |
/// | `GRAPPE_NET_PULL_MIN` | smallest message to a rank of another host that waits in its sender's buffer until a receive matches it and its receiver pulls it; smaller ones go at once, staged | 65536 |
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
    /// Messages to ranks of other hosts of at least this many bytes go by
    /// a receiver-driven rendezvous (the receiver pulls them once matched):
    /// no copy into a buffer for messages not received yet, and a sender
    /// that cannot run ahead of its receiver but by the small ones.
    pub net_pull_min: usize,
    /// Move large messages with a single copy when the route allows it.
    pub single_copy: bool,
}

impl ProtoSettings {
    /// Reads the settings from the environment; `ring_bytes` caps the
    /// eager limit.
    pub fn from_env(ring_bytes: usize) -> Result<ProtoSettings, SettingError> {
        ProtoSettings::from_vars(ring_bytes, Vars::process())
    }

    /// Reads the settings from `vars`; `ring_bytes` caps the eager limit.
    pub fn from_vars(ring_bytes: usize, vars: Vars<'_>) -> Result<ProtoSettings, SettingError> {
        let defaults = ProtoSettings::for_ring(ring_bytes);
        let eager: usize = vars.number("GRAPPE_EAGER_MAX", defaults.eager_max, BYTES)?;
        let eager_threads: usize = vars.number("GRAPPE_EAGER_MAX_THREADS", defaults.eager_max_threads, BYTES)?;
        Ok(ProtoSettings {
            eager_max: eager.min(max_eager(ring_bytes)),
            eager_max_threads: eager_threads.min(max_eager(ring_bytes)),
            rdv_chunk: vars.number::<usize>("GRAPPE_RDV_CHUNK", defaults.rdv_chunk, BYTES)?.max(4096),
            net_pull_min: vars.number("GRAPPE_NET_PULL_MIN", defaults.net_pull_min, BYTES)?,
            single_copy: vars.word("GRAPPE_SINGLE_COPY", true, &[("auto", true), ("off", false)])?,
        })
    }

    /// Defaults for a ring size.
    pub fn for_ring(ring_bytes: usize) -> ProtoSettings {
        ProtoSettings {
            eager_max: 8192.min(max_eager(ring_bytes)),
            eager_max_threads: 2048.min(max_eager(ring_bytes)),
            rdv_chunk: 128 << 10,
            net_pull_min: 64 << 10,
            single_copy: true,
        }
    }
}

/// An eager message may take at most a quarter of a ring, so that several
/// fit in flight.
fn max_eager(ring_bytes: usize) -> usize {
    (ring_bytes / 4).min(grappe_fabric::ring::max_payload(ring_bytes))
}

const BYTES: &str = "a number of bytes";

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use super::*;

    fn read(pairs: &[(&str, &str)]) -> Result<ProtoSettings, SettingError> {
        let lookup = |name: &str| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| OsString::from(*v));
        ProtoSettings::from_vars(64 << 10, Vars::from_lookup(&lookup))
    }

    #[test]
    fn settings_are_read_and_capped_by_the_ring() {
        let settings =
            read(&[("GRAPPE_EAGER_MAX", "1000000"), ("GRAPPE_RDV_CHUNK", "100"), ("GRAPPE_SINGLE_COPY", "off")])
                .unwrap();
        assert_eq!(settings.eager_max, max_eager(64 << 10));
        assert_eq!((settings.rdv_chunk, settings.single_copy), (4096, false));
        assert_eq!(read(&[("GRAPPE_NET_PULL_MIN", "1048576")]).unwrap().net_pull_min, 1 << 20);
        assert_eq!(read(&[]).unwrap(), ProtoSettings::for_ring(64 << 10));
    }

    #[test]
    fn a_bad_setting_names_the_variable_its_value_and_what_it_takes() {
        let error = read(&[("GRAPPE_EAGER_MAX_THREADS", "2k")]).unwrap_err();
        assert_eq!(error.to_string(), "GRAPPE_EAGER_MAX_THREADS=\"2k\": expected a number of bytes");
        let error = read(&[("GRAPPE_SINGLE_COPY", "on")]).unwrap_err();
        assert_eq!((error.var, error.value.as_str(), &*error.expected), ("GRAPPE_SINGLE_COPY", "on", "auto or off"));
    }
}
