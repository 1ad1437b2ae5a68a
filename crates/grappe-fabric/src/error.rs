//! Errors of the fabric layer. Each says which side is to blame and carries
//! the numbers that explain it.

use std::path::PathBuf;

use crate::layout::LayoutError;

/// What went wrong below the protocols.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FabricError {
    /// The host segment could not be created or mapped.
    #[error("cannot {action} {} ({len} bytes): {source}", segment_name(path.as_deref()))]
    Segment {
        /// create, open, map or resize.
        action: &'static str,
        /// The file, or `None` for anonymous memory.
        path: Option<PathBuf>,
        /// Requested size.
        len: usize,
        /// The system's answer.
        #[source]
        source: std::io::Error,
    },
    /// The segment exists but was laid out by another version or job.
    #[error("shared segment {path:?} is not usable: {reason}")]
    BadSegment {
        /// The file that was opened.
        path: PathBuf,
        /// What did not match (magic, version, sizes).
        #[source]
        reason: LayoutError,
    },
    /// The layout parameters cannot describe a working segment.
    #[error("invalid fabric settings: {0}")]
    BadParams(#[from] LayoutError),
    /// A single-copy transfer between processes failed.
    #[error("cross-memory copy of {len} bytes {direction} process {pid} failed: {source}")]
    CrossMemory {
        /// `"to"` for put, `"from"` for get.
        direction: &'static str,
        /// The peer process.
        pid: u32,
        /// Bytes requested.
        len: usize,
        /// The system's answer (EPERM: ptrace policy; ESRCH: peer is gone).
        #[source]
        source: std::io::Error,
    },
    /// A network link broke or carried what is not records (the link's
    /// error, which names the peer's address, as text: it is reported
    /// again to every request that needed the link).
    #[error("{0}")]
    Link(String),
    /// A network link's peer closed it between two records: the end of
    /// its stream (the engine decides whether more was due).
    #[error("{0}")]
    LinkClosed(String),
    /// A transfer would read or write outside a registered region.
    #[error("transfer of {len} bytes at offset {offset} exceeds region of {region_len} bytes")]
    OutOfRegion {
        /// Offset inside the region.
        offset: usize,
        /// Bytes of the transfer.
        len: usize,
        /// Registered length.
        region_len: usize,
    },
}

fn segment_name(path: Option<&std::path::Path>) -> String {
    match path {
        Some(path) => format!("shared segment {}", path.display()),
        None => "anonymous shared memory".to_owned(),
    }
}

impl FabricError {
    /// The same error again, for a failure reported more than once (a
    /// request tested, then waited for): a system cause keeps its error
    /// number, or its kind and text.
    pub fn repeat(&self) -> FabricError {
        match self {
            FabricError::Segment { action, path, len, source } => {
                FabricError::Segment { action, path: path.clone(), len: *len, source: io_again(source) }
            }
            FabricError::BadSegment { path, reason } => {
                FabricError::BadSegment { path: path.clone(), reason: reason.clone() }
            }
            FabricError::BadParams(why) => FabricError::BadParams(why.clone()),
            FabricError::Link(what) => FabricError::Link(what.clone()),
            FabricError::LinkClosed(what) => FabricError::LinkClosed(what.clone()),
            FabricError::CrossMemory { direction, pid, len, source } => {
                FabricError::CrossMemory { direction, pid: *pid, len: *len, source: io_again(source) }
            }
            FabricError::OutOfRegion { offset, len, region_len } => {
                FabricError::OutOfRegion { offset: *offset, len: *len, region_len: *region_len }
            }
        }
    }
}

fn io_again(error: &std::io::Error) -> std::io::Error {
    match error.raw_os_error() {
        Some(code) => std::io::Error::from_raw_os_error(code),
        None => std::io::Error::new(error.kind(), error.to_string()),
    }
}

impl From<grappe_fabric_tcp::LinkError> for FabricError {
    fn from(error: grappe_fabric_tcp::LinkError) -> FabricError {
        match error.is_clean_close() {
            true => FabricError::LinkClosed(error.to_string()),
            false => FabricError::Link(error.to_string()),
        }
    }
}

#[cfg(feature = "libfabric")]
impl From<grappe_fabric_ofi::LinkError> for FabricError {
    fn from(error: grappe_fabric_ofi::LinkError) -> FabricError {
        match error.is_clean_close() {
            true => FabricError::LinkClosed(error.to_string()),
            false => FabricError::Link(error.to_string()),
        }
    }
}
