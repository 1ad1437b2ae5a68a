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

    /// Hosts that take the place of a lost host when a checkpointed job
    /// restarts (`a,b`): the first spare gets the lost host's slots. With no
    /// spare left, the job restarts on the remaining hosts.
    #[arg(long, value_name = "LIST", requires = "checkpoint_dir")]
    spare_hosts: Option<String>,

    /// The remote shell that starts each host's agent, called as `CMD HOST GRAPPE agent`
    /// (`ssh -x` by default; words are split at spaces).
    #[arg(long, value_name = "CMD")]
    launcher_exec: Option<String>,

    /// The grappe executable on the hosts, when it is not at this one's path.
    #[arg(long, value_name = "PATH")]
    agent: Option<PathBuf>,

    /// Start this host's agent through the remote shell too. By default,
    /// as hydra does, a host named `localhost` or by this host's name gets
    /// its agent started directly.
    #[arg(long)]
    no_autofork: bool,
}

impl HostArgs {
    /// The hosts part of the launch spec; `None` for a job on this host alone.
    pub fn spec(&self) -> Result<Option<HostsSpec>, String> {
        let hosts: Vec<HostSlots> = match (&self.hosts, &self.hostfile) {
            (Some(list), _) => parse_host_list(list).map_err(|e| format!("--hosts: {e}"))?,
            (None, Some(file)) => read_hostfile(file).map_err(|e| format!("--hostfile: {e}"))?,
            (None, None)
                if self.ppn.is_some()
                    || self.launcher_exec.is_some()
                    || self.spare_hosts.is_some()
                    || self.agent.is_some()
                    || self.no_autofork =>
            {
                return Err(
                    "--ppn, --launcher-exec, --agent, --no-autofork and --spare-hosts need --hosts or --hostfile"
                        .to_owned(),
                );
            }
            (None, None) => return Ok(None),
        };
        let mut spec = HostsSpec::new(hosts);
        spec.ppn = self.ppn.map(|ppn| ppn as usize);
        if let Some(agent) = &self.agent {
            spec.agent = agent.clone();
        }
        spec.fork_local = !self.no_autofork;
        if let Some(exec) = &self.launcher_exec {
            let words: Vec<OsString> = exec.split_whitespace().map(OsString::from).collect();
            if words.is_empty() {
                return Err("--launcher-exec: the command is empty".to_owned());
            }
            spec.launcher_exec = words;
        }
        Ok(Some(spec))
    }

    /// The spare hosts, in order.
    pub fn spares(&self) -> Result<Vec<String>, String> {
        match &self.spare_hosts {
            None => Ok(Vec::new()),
            Some(list) => Ok(parse_host_list(list)
                .map_err(|e| format!("--spare-hosts: {e}"))?
                .into_iter()
                .map(|host| host.name)
                .collect()),
        }
    }
}

/// Takes `lost` out of the job's hosts before a restart: the first of
/// `spares` takes its slots, or, with none left, the other hosts take its
/// processes. Returns how the job restarts, or `None` when no host is left.
pub fn replace_lost_host(hosts: &mut HostsSpec, lost: &str, spares: &mut Vec<String>) -> Option<String> {
    let index = hosts.hosts.iter().position(|host| host.name == lost)?;
    if !spares.is_empty() {
        let spare = spares.remove(0);
        hosts.hosts[index].name = spare.clone();
        return Some(format!("on spare host {spare} in its place"));
    }
    hosts.hosts.retain(|host| host.name != lost);
    let left: Vec<&str> = hosts.hosts.iter().map(|host| host.name.as_str()).collect();
    match left.is_empty() {
        true => None,
        false => Some(format!("on the remaining hosts ({})", left.join(", "))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_host_gives_its_slots_to_a_spare_then_to_the_others() {
        let mut hosts = HostsSpec::new(parse_host_list("a:2,b:2,c").unwrap());
        let mut spares = vec!["s".to_owned()];
        assert_eq!(replace_lost_host(&mut hosts, "b", &mut spares).as_deref(), Some("on spare host s in its place"));
        assert_eq!(hosts.hosts, parse_host_list("a:2,s:2,c").unwrap());
        assert!(spares.is_empty());
        let said = replace_lost_host(&mut hosts, "s", &mut spares);
        assert_eq!(said.as_deref(), Some("on the remaining hosts (a, c)"));
        assert_eq!(hosts.hosts, parse_host_list("a:2,c").unwrap());
        assert_eq!(replace_lost_host(&mut hosts, "zz", &mut spares), None, "not a host of the job");
        replace_lost_host(&mut hosts, "a", &mut spares);
        assert_eq!(replace_lost_host(&mut hosts, "c", &mut spares), None, "no host left");
    }
}
