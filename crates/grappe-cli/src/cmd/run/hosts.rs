//! `grappe run --hosts`: where the processes run when the job spans hosts.

use clap::Args;
use grappe_launch::hosts::{HostSlots, parse_host_list, read_hostfile};
use grappe_launch::launcher::HostsSpec;
use std::ffi::OsString;
use std::path::PathBuf;

/// Hosts to run on, as hydra's `mpiexec` takes them.
#[derive(Debug, Clone, Args)]
pub struct HostArgs {
    /// Run across these hosts: `a:4,b,c:2` gives a four slots, b one and c two; processes fill
    /// the slots in order, round after round.
    #[arg(long, value_name = "LIST", conflicts_with = "hostfile")]
    hosts: Option<String>,

    /// Read the hosts from FILE: one per line, `name`, `name:N` or `name slots=N`.
    #[arg(long, value_name = "FILE")]
    hostfile: Option<PathBuf>,

    /// Processes per host and round, whatever the slots say.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    ppn: Option<u32>,

    /// The remote shell that starts each host's agent, called as `CMD HOST GRAPPE agent`
    /// (`ssh -x` by default; words are split at spaces).
    #[arg(long, value_name = "CMD")]
    launcher_exec: Option<String>,
}

impl HostArgs {
    /// The hosts part of the launch spec; `None` for a job on this host alone.
    pub fn spec(&self) -> Result<Option<HostsSpec>, String> {
        let hosts: Vec<HostSlots> = match (&self.hosts, &self.hostfile) {
            (Some(list), _) => parse_host_list(list).map_err(|e| format!("--hosts: {e}"))?,
            (None, Some(file)) => read_hostfile(file).map_err(|e| format!("--hostfile: {e}"))?,
            (None, None) if self.ppn.is_some() || self.launcher_exec.is_some() => {
                return Err("--ppn and --launcher-exec need --hosts or --hostfile".to_owned());
            }
            (None, None) => return Ok(None),
        };
        let mut spec = HostsSpec::new(hosts);
        spec.ppn = self.ppn.map(|ppn| ppn as usize);
        if let Some(exec) = &self.launcher_exec {
            let words: Vec<OsString> = exec.split_whitespace().map(OsString::from).collect();
            if words.is_empty() {
                return Err("--launcher-exec: the command is empty".to_owned());
            }
            spec.launcher_exec = words;
        }
        Ok(Some(spec))
    }
}
