//! `grappe run --checkpoint-dir`: the checkpoint settings handed to the
//! ranks, the wave scheduler, and the restarts after a rank dies.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::Context;

use clap::{Args, ValueEnum};
use grappe_ft::WaveScheduler;
use grappe_ft::local::{CheckpointDir, RecordState};
use grappe_launch::launcher::{JobFailure, JobOutcome};

use crate::cmd::time::parse_duration;

/// Coordinated checkpoints and automatic restart (MPICH-V style).
#[derive(Debug, Clone, Args)]
pub struct CheckpointArgs {
    /// Take checkpoint waves and keep the images (and the commit record)
    /// in DIR; restart the job from the last committed wave if a rank dies.
    /// The program must checkpoint its state (`grappe::ft::run`).
    #[arg(long, value_name = "DIR")]
    checkpoint_dir: Option<PathBuf>,
    /// Time from the end of one wave to the next: `30s`, `500ms`, `2m`, or
    /// seconds. The launcher asks for the waves; `kill -USR1` on it asks
    /// for one at once, and so does `touch DIR/REQUEST`.
    #[arg(long, value_name = "TIME", value_parser = parse_duration, default_value = "60s",
          requires = "checkpoint_dir")]
    checkpoint_every: Duration,
    /// pcl: every rank waits at the wave's point until it is committed;
    /// vcl: images are stored in the background while ranks compute.
    #[arg(long, value_enum, value_name = "PROTOCOL", default_value = "pcl", requires = "checkpoint_dir")]
    checkpoint_protocol: CheckpointProtocol,
    /// Checkpoint servers (`grappe checkpoint-server`), `host:port,...`;
    /// rank r uses server r mod count. Needs GRAPPE_CKPT_SECRET.
    #[arg(long, value_name = "LIST", requires = "checkpoint_dir")]
    checkpoint_servers: Option<String>,
    /// How long a rank waits for a checkpoint server (to connect, and for
    /// each read or write) before the wave fails and the job goes on.
    #[arg(long, value_name = "TIME", value_parser = parse_duration, requires = "checkpoint_servers")]
    checkpoint_server_timeout: Option<Duration>,
    /// Restarts allowed before giving up.
    #[arg(long, value_name = "N", default_value_t = 3, requires = "checkpoint_dir")]
    max_restarts: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum CheckpointProtocol {
    Pcl,
    Vcl,
}

impl CheckpointArgs {
    /// The environment of the ranks.
    pub fn env(&self) -> Vec<(OsString, OsString)> {
        let Some(dir) = &self.checkpoint_dir else { return Vec::new() };
        let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.clone());
        let protocol = match self.checkpoint_protocol {
            CheckpointProtocol::Pcl => "pcl",
            CheckpointProtocol::Vcl => "vcl",
        };
        let mut env = vec![
            ("GRAPPE_FT_DIR".into(), dir.into_os_string()),
            // The launcher's scheduler asks for the waves, not rank 0's timer.
            ("GRAPPE_FT_INTERVAL_MS".into(), "0".into()),
            ("GRAPPE_FT_PROTOCOL".into(), protocol.into()),
        ];
        if let Some(servers) = &self.checkpoint_servers {
            env.push(("GRAPPE_FT_SERVERS".into(), servers.into()));
        }
        if let Some(limit) = self.checkpoint_server_timeout {
            env.push(("GRAPPE_FT_SERVER_TIMEOUT_MS".into(), limit.as_millis().max(1).to_string().into()));
        }
        env
    }

    /// Before the first launch: the checkpoint servers the ranks will use
    /// (`--checkpoint-servers`, or GRAPPE_FT_SERVERS as under mpiexec)
    /// must accept the job, or it would run unprotected. An error says
    /// which server refused and why, or what setting the ranks would
    /// refuse. A server that does not answer is no error here (rank 0 says
    /// the job is unprotected until it does).
    pub fn check_servers(&self, ranks: usize) -> anyhow::Result<()> {
        let env = self.env();
        let var =
            |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()).or_else(|| std::env::var_os(name));
        let Some(settings) = grappe_ft::FtSettings::from_vars(var)? else { return Ok(()) };
        let check = grappe_ft::client::check_servers(&settings, ranks);
        if let Some((server, e)) = check.refused.first() {
            anyhow::bail!("checkpoint server {server} refused the job ({e}): not starting a job it would not protect");
        }
        Ok(())
    }

    /// The wave scheduler of the job, for as long as it is kept (across
    /// restarts): every `--checkpoint-every`, and on SIGUSR1.
    pub fn scheduler(&self) -> anyhow::Result<Option<WaveScheduler>> {
        let Some(dir) = &self.checkpoint_dir else { return Ok(None) };
        let asked = Arc::new(AtomicBool::new(false));
        signal_hook::flag::register(signal_hook::consts::SIGUSR1, asked.clone())
            .context("cannot take SIGUSR1 for checkpoint requests")?;
        let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.clone());
        let scheduler = WaveScheduler::start(dir, Some(self.checkpoint_every), asked)
            .context("cannot start the checkpoint scheduler")?;
        Ok(Some(scheduler))
    }

    /// After a failed attempt: whether to launch again, saying so.
    pub fn should_restart(&self, outcome: &JobOutcome, restarts_done: u32) -> bool {
        let Some(dir) = &self.checkpoint_dir else { return false };
        // A timeout or an interrupt is the user's stop, not a fault.
        if !matches!(outcome.failure, Some(JobFailure::Process { .. })) {
            return false;
        }
        if restarts_done >= self.max_restarts {
            eprintln!("grappe: {} restarts done (--max-restarts): giving up", self.max_restarts);
            return false;
        }
        // Which wave the ranks restore is theirs to say (rank 0 does): the
        // newest committed one may not be readable by every rank.
        let from = match CheckpointDir::new(dir.clone()).read_record() {
            RecordState::Absent => "from the start (no wave committed yet)",
            RecordState::Valid(record) if record.newest().is_none() => "from the start (no wave committed yet)",
            _ => "from the newest committed wave every rank can restore",
        };
        eprintln!("grappe: restarting the job {from} (restart {} of {})", restarts_done + 1, self.max_restarts);
        true
    }

    /// After a restart that could not start on a lost host: whether to
    /// launch again without it (or on a spare), saying so.
    pub fn should_restart_without_host(&self, host: &str, replacement: &str, restarts_done: u32) -> bool {
        if self.checkpoint_dir.is_none() {
            return false;
        }
        if restarts_done >= self.max_restarts {
            eprintln!("grappe: {} restarts done (--max-restarts): giving up", self.max_restarts);
            return false;
        }
        eprintln!(
            "grappe: host {host} is lost: restarting the job {replacement} (restart {} of {})",
            restarts_done + 1,
            self.max_restarts
        );
        true
    }
}
