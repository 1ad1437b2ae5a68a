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
//! | `GRAPPE_FT_SERVER_TIMEOUT_MS` | how long a rank waits for a server (to connect, and for each read or write) before that wave fails | 30000 |
//! | `GRAPPE_FT_HOLD` | a file: the job does not end before it exists (its ranks wait at a last point, where waves go on); for fault-injection tests, which must land their kills before the job ends | none |

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use grappe_settings::{SettingError, Vars};

use crate::error::Result;

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
    /// How long to wait for a server, per step.
    pub server_timeout: Duration,
    /// The file whose existence lets the job end.
    pub hold: Option<PathBuf>,
}

impl FtSettings {
    /// `None` when `GRAPPE_FT_DIR` is unset (no checkpoints).
    pub fn from_env() -> Result<Option<FtSettings>> {
        FtSettings::from_vars(|name| std::env::var_os(name))
    }

    /// The same from the variables `var` gives: what a job's ranks will
    /// read, for a launcher to check before it starts them.
    pub fn from_vars(var: impl Fn(&str) -> Option<OsString>) -> Result<Option<FtSettings>> {
        let vars = Vars::from_lookup(&var);
        let Some(dir) = vars.path("GRAPPE_FT_DIR") else { return Ok(None) };
        let interval = match vars.number("GRAPPE_FT_INTERVAL_MS", 60_000, "milliseconds")? {
            0 => None,
            ms => Some(Duration::from_millis(ms)),
        };
        let protocol =
            vars.word("GRAPPE_FT_PROTOCOL", Protocol::Pcl, &[("pcl", Protocol::Pcl), ("vcl", Protocol::Vcl)])?;
        let servers: Vec<String> = vars
            .text("GRAPPE_FT_SERVERS")?
            .map(|v| v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect())
            .unwrap_or_default();
        let secret = vars.text("GRAPPE_CKPT_SECRET")?.map(String::into_bytes).unwrap_or_default();
        if !servers.is_empty() && secret.is_empty() {
            let expected = "the servers' secret, since GRAPPE_FT_SERVERS is set";
            return Err(SettingError::new("GRAPPE_CKPT_SECRET", "", expected).into());
        }
        let name = vars.text("GRAPPE_FT_NAME")?.unwrap_or_else(|| default_name(&dir));
        if let Err(e) = crate::wire::check_job(&name) {
            return Err(SettingError::new("GRAPPE_FT_NAME", name, "a job name").because(e).into());
        }
        let server_timeout = match vars.text("GRAPPE_FT_SERVER_TIMEOUT_MS")? {
            None => crate::client::DEFAULT_TIMEOUT,
            Some(v) => match v.trim().parse::<u64>() {
                Ok(ms) if ms > 0 => Duration::from_millis(ms),
                _ => return Err(SettingError::new("GRAPPE_FT_SERVER_TIMEOUT_MS", v, "milliseconds above 0").into()),
            },
        };
        let hold = vars.path("GRAPPE_FT_HOLD");
        Ok(Some(FtSettings { dir, interval, protocol, servers, name, secret, server_timeout, hold }))
    }

    /// The server of a rank.
    pub fn server_of(&self, rank: usize) -> Option<&str> {
        (!self.servers.is_empty()).then(|| self.servers[rank % self.servers.len()].as_str())
    }
}

/// The job's name on the servers when `GRAPPE_FT_NAME` does not give
/// one: it stays the same across restarts of a job (the same directory)
/// and differs between jobs.
pub fn default_name(dir: &std::path::Path) -> String {
    let absolute = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    format!("grappe-{:08x}", crc32fast::hash(absolute.as_os_str().as_encoded_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FtError;

    fn read(pairs: &[(&str, &str)]) -> Result<Option<FtSettings>> {
        FtSettings::from_vars(|name| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| OsString::from(*v)))
    }

    #[test]
    fn settings_are_read_with_their_defaults() {
        assert!(read(&[("GRAPPE_FT_PROTOCOL", "bogus")]).unwrap().is_none(), "off without a directory");
        let settings = read(&[("GRAPPE_FT_DIR", "/ck"), ("GRAPPE_FT_INTERVAL_MS", "0"), ("GRAPPE_FT_PROTOCOL", "vcl")]);
        let settings = settings.unwrap().expect("on");
        assert_eq!(
            (settings.interval, settings.protocol, settings.name),
            (None, Protocol::Vcl, default_name("/ck".as_ref()))
        );
        assert_eq!(settings.server_timeout, crate::client::DEFAULT_TIMEOUT);
    }

    #[test]
    fn a_bad_setting_names_the_variable_its_value_and_what_it_takes() {
        for (var, value, said) in [
            ("GRAPPE_FT_INTERVAL_MS", "1s", "GRAPPE_FT_INTERVAL_MS=\"1s\": expected milliseconds"),
            ("GRAPPE_FT_PROTOCOL", "ulfm", "GRAPPE_FT_PROTOCOL=\"ulfm\": expected pcl or vcl"),
            ("GRAPPE_FT_SERVER_TIMEOUT_MS", "0", "GRAPPE_FT_SERVER_TIMEOUT_MS=\"0\": expected milliseconds above 0"),
            (
                "GRAPPE_FT_SERVERS",
                "h:1",
                "GRAPPE_CKPT_SECRET=\"\": expected the servers' secret, since GRAPPE_FT_SERVERS is set",
            ),
        ] {
            let error = read(&[("GRAPPE_FT_DIR", "/ck"), (var, value)]).unwrap_err();
            assert!(matches!(&error, FtError::Setting(_)), "{error:?}");
            assert_eq!(error.to_string(), said);
        }
    }

    #[test]
    fn a_bad_job_name_is_refused_with_why() {
        let error = read(&[("GRAPPE_FT_DIR", "/ck"), ("GRAPPE_FT_NAME", ".x")]).unwrap_err();
        let FtError::Setting(setting) = &error else { panic!("{error:?}") };
        assert_eq!((setting.var, setting.value.as_str()), ("GRAPPE_FT_NAME", ".x"));
        assert!(error.to_string().contains("starts with a dot"), "{error}");
    }
}
