//! The match log of a job's wildcard receives (see
//! `grappe_comm::matches`): recorded under `GRAPPE_RECORD_MATCHES=BASE`,
//! replayed under `GRAPPE_REPLAY_MATCHES=BASE` (what `grappe run
//! --record-matches` and `--replay-matches` set). Rank R's log is the file
//! `BASE.R`, so that ranks in separate processes write their own.

use std::path::PathBuf;
use std::time::Duration;

use grappe_comm::RankContext;
use grappe_comm::matches::MatchLog;
use grappe_settings::{SettingError, Vars};

use crate::StartError;

/// Whether this job records or replays its wildcard matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MatchSettings {
    Record(PathBuf),
    /// The log, and how long a replayed call waits for its message
    /// (`GRAPPE_REPLAY_PATIENCE_S`, seconds).
    Replay(PathBuf, Duration),
}

impl MatchSettings {
    pub fn from_env() -> Result<Option<MatchSettings>, SettingError> {
        MatchSettings::from_vars(Vars::process())
    }

    pub fn from_vars(vars: Vars<'_>) -> Result<Option<MatchSettings>, SettingError> {
        match (vars.path("GRAPPE_RECORD_MATCHES"), vars.path("GRAPPE_REPLAY_MATCHES")) {
            (Some(record), Some(_)) => Err(SettingError::new(
                "GRAPPE_RECORD_MATCHES",
                record.display().to_string(),
                "no GRAPPE_REPLAY_MATCHES beside it: a run records its matches or replays them, not both",
            )),
            (Some(record), None) => Ok(Some(MatchSettings::Record(record))),
            (None, Some(replay)) => {
                let default = grappe_comm::matches::DEFAULT_PATIENCE.as_secs();
                let patience = vars.number("GRAPPE_REPLAY_PATIENCE_S", default, "seconds")?;
                Ok(Some(MatchSettings::Replay(replay, Duration::from_secs(patience.max(1)))))
            }
            (None, None) => Ok(None),
        }
    }
}

/// Gives rank `rank` its log, read from its file if it replays.
pub(crate) fn install(settings: &Option<MatchSettings>, rank: usize, ctx: &RankContext) -> Result<(), StartError> {
    let log = match settings {
        None => return Ok(()),
        Some(MatchSettings::Record(base)) => MatchLog::record(rank, MatchLog::file_of(base, rank)),
        Some(MatchSettings::Replay(base, patience)) => {
            let path = MatchLog::file_of(base, rank);
            let log =
                MatchLog::replay(rank, path.clone()).map_err(|source| StartError::MatchLog { rank, path, source })?;
            log.with_patience(*patience)
        }
    };
    ctx.install_match_log(log);
    Ok(())
}

/// At the end of rank `rank`: saves its recorded log; says so if a
/// replayed one was not followed to its end (the run made fewer
/// wildcard calls than the recorded one).
pub(crate) fn finish(rank: usize, ctx: &RankContext) -> std::io::Result<()> {
    let Some(log) = ctx.take_match_log() else { return Ok(()) };
    let left = log.unfollowed();
    if left > 0 {
        eprintln!(
            "grappe: warning: rank {rank} ended with {left} wildcard calls of its match log {} not replayed",
            log.path().display()
        );
    }
    log.save().map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", log.path().display())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn read(pairs: &[(&str, &str)]) -> Result<Option<MatchSettings>, SettingError> {
        let lookup = |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| OsString::from(v));
        MatchSettings::from_vars(Vars::from_lookup(&lookup))
    }

    #[test]
    fn a_run_records_or_replays_never_both() {
        assert_eq!(read(&[]).unwrap(), None);
        assert_eq!(read(&[("GRAPPE_RECORD_MATCHES", "/m")]).unwrap(), Some(MatchSettings::Record("/m".into())));
        assert_eq!(
            read(&[("GRAPPE_REPLAY_MATCHES", "/m")]).unwrap(),
            Some(MatchSettings::Replay("/m".into(), Duration::from_secs(60)))
        );
        let patient = read(&[("GRAPPE_REPLAY_MATCHES", "/m"), ("GRAPPE_REPLAY_PATIENCE_S", "5")]).unwrap();
        assert_eq!(patient, Some(MatchSettings::Replay("/m".into(), Duration::from_secs(5))));
        let both = read(&[("GRAPPE_RECORD_MATCHES", "/a"), ("GRAPPE_REPLAY_MATCHES", "/b")]).unwrap_err();
        assert!(both.to_string().contains("not both"), "{both}");
    }
}
