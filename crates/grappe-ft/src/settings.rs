//! How a job checkpoints, from the environment `grappe run` sets (or the
//! user, under mpiexec or srun).
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `GRAPPE_FT_DIR` | directory of the images and the commit record; fault tolerance is off without it | off |
//! | `GRAPPE_FT_INTERVAL_MS` | rank 0's own timer, for jobs started by mpiexec or srun: time from the end of a wave to the next (0: none; `grappe run` sets 0, its scheduler asks for waves through `DIR/REQUEST`) | 60000 |
//! | `GRAPPE_FT_PROTOCOL` | `pcl` (blocking: markers, drain, save, commit, resume) or `vcl` (save at the point, log the channels until the markers, store in the background, commit later) | `pcl` |
//! | `GRAPPE_FT_SERVERS` | checkpoint servers, `host:port,...`; rank r uses server r mod count | none |
//! | `GRAPPE_FT_NAME` | the job's name on the servers | `grappe-` + a hash of the directory |
//! | `GRAPPE_CKPT_SECRET` | the secret the servers require | (needed with servers) |

use std::path::PathBuf;
use std::time::Duration;

use crate::error::{FtError, Result};

/// The two protocols of MPICH-V's comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// Blocking: every rank stops at the wave's point until the wave is
    /// committed.
    Pcl,
    /// Non-blocking: the state is saved at the point, the channels are
    /// logged until every marker is in, and the image is written and
    /// uploaded in the background while the rank computes; the wave is
    /// committed at a later point.
    Vcl,
}

/// Checkpoint settings of a job.
#[derive(Clone, Debug)]
pub struct FtSettings {
    pub dir: PathBuf,
    pub interval: Option<Duration>,
    pub protocol: Protocol,
    pub servers: Vec<String>,
    pub name: String,
    pub secret: Vec<u8>,
}

impl FtSettings {
    /// `None` when `GRAPPE_FT_DIR` is unset (no checkpoints).
    pub fn from_env() -> Result<Option<FtSettings>> {
        let Some(dir) = std::env::var_os("GRAPPE_FT_DIR").filter(|d| !d.is_empty()) else { return Ok(None) };
        let dir = PathBuf::from(dir);
        let interval = match std::env::var("GRAPPE_FT_INTERVAL_MS") {
            Err(_) => Some(Duration::from_secs(60)),
            Ok(v) => match v.trim().parse::<u64>() {
                Ok(0) => None,
                Ok(ms) => Some(Duration::from_millis(ms)),
                Err(_) => return Err(FtError::Settings(format!("GRAPPE_FT_INTERVAL_MS={v:?} is not milliseconds"))),
            },
        };
        let protocol = match std::env::var("GRAPPE_FT_PROTOCOL").as_deref() {
            Err(_) | Ok("pcl") => Protocol::Pcl,
            Ok("vcl") => Protocol::Vcl,
            Ok(other) => return Err(FtError::Settings(format!("GRAPPE_FT_PROTOCOL={other:?}: expected pcl or vcl"))),
        };
        let servers: Vec<String> = std::env::var("GRAPPE_FT_SERVERS")
            .map(|v| v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect())
            .unwrap_or_default();
        let secret = std::env::var("GRAPPE_CKPT_SECRET").map(String::into_bytes).unwrap_or_default();
        if !servers.is_empty() && secret.is_empty() {
            return Err(FtError::Settings("GRAPPE_FT_SERVERS is set but GRAPPE_CKPT_SECRET is not".into()));
        }
        let name = std::env::var("GRAPPE_FT_NAME").unwrap_or_else(|_| default_name(&dir));
        crate::wire::check_job(&name).map_err(|e| FtError::Settings(format!("GRAPPE_FT_NAME: {e}")))?;
        Ok(Some(FtSettings { dir, interval, protocol, servers, name, secret }))
    }

    /// The server of a rank.
    pub fn server_of(&self, rank: usize) -> Option<&str> {
        (!self.servers.is_empty()).then(|| self.servers[rank % self.servers.len()].as_str())
    }
}

/// A name that stays the same across restarts of a job (the same
/// directory) and differs between jobs.
fn default_name(dir: &std::path::Path) -> String {
    let absolute = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    format!("grappe-{:08x}", crc32fast::hash(absolute.as_os_str().as_encoded_bytes()))
}
