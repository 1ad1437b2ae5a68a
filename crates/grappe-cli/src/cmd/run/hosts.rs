//! `grappe run --hosts`: where the processes run when the job spans hosts.

use clap::Args;
use grappe_launch::hosts::{HostSlots, parse_host_list, read_hostfile, slurm};
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
    /// The hosts part of the launch spec; `None` for a job on this host alone. Without
    /// `--hosts` or `--hostfile`, inside a Slurm allocation, its nodes and their task counts
    /// (each node's agent started by `srun`), unless the allocation is this host alone.
    pub fn spec(&self) -> Result<Option<HostsSpec>, String> {
        self.spec_with(|key| std::env::var(key).ok())
    }

    fn spec_with(&self, lookup: impl Fn(&str) -> Option<String>) -> Result<Option<HostsSpec>, String> {
        let mut launcher_exec = None;
        let hosts: Vec<HostSlots> = match (&self.hosts, &self.hostfile) {
            (Some(list), _) => parse_host_list(list).map_err(|e| format!("--hosts: {e}"))?,
            (None, Some(file)) => read_hostfile(file).map_err(|e| format!("--hostfile: {e}"))?,
            (None, None) => match slurm::allocation(lookup) {
                Some(allocation) => {
                    let hosts = allocation.map_err(|e| format!("the Slurm allocation: {e}"))?;
                    if let [only] = &hosts[..] {
                        if grappe_launch::hosts::is_this_host(&only.name) && self.no_host_option_given() {
                            return Ok(None);
                        }
                    }
                    launcher_exec = Some(slurm::SRUN_LAUNCHER.iter().map(OsString::from).collect());
                    hosts
                }
                None if !self.no_host_option_given() => {
                    return Err("--ppn, --launcher-exec, --agent, --no-autofork and --spare-hosts need --hosts, \
                                --hostfile or a Slurm allocation"
                        .to_owned());
                }
                None => return Ok(None),
            },
        };
        let mut spec = HostsSpec::new(hosts);
        spec.ppn = self.ppn.map(|ppn| ppn as usize);
        if let Some(agent) = &self.agent {
            spec.agent = agent.clone();
        }
        spec.fork_local = !self.no_autofork;
        if let Some(exec) = launcher_exec {
            spec.launcher_exec = exec;
        }
        if let Some(exec) = &self.launcher_exec {
            let words: Vec<OsString> = exec.split_whitespace().map(OsString::from).collect();
            if words.is_empty() {
                return Err("--launcher-exec: the command is empty".to_owned());
            }
            spec.launcher_exec = words;
        }
        Ok(Some(spec))
    }

    /// None of the options that only make sense across hosts was given.
    fn no_host_option_given(&self) -> bool {
        self.ppn.is_none()
            && self.launcher_exec.is_none()
            && self.spare_hosts.is_none()
            && self.agent.is_none()
            && !self.no_autofork
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

    fn no_options() -> HostArgs {
        HostArgs {
            hosts: None,
            hostfile: None,
            ppn: None,
            spare_hosts: None,
            launcher_exec: None,
            agent: None,
            no_autofork: false,
        }
    }

    fn slurm(nodes: &'static str, tasks: &'static str) -> impl Fn(&str) -> Option<String> {
        move |key| match key {
            "SLURM_JOB_NODELIST" => Some(nodes.to_owned()),
            "SLURM_TASKS_PER_NODE" => Some(tasks.to_owned()),
            _ => None,
        }
    }

    #[test]
    fn a_slurm_allocation_gives_the_hosts_and_srun_starts_the_agents() {
        let spec = no_options().spec_with(slurm("c[1-2]", "2,1")).unwrap().expect("hosts");
        assert_eq!(spec.hosts, parse_host_list("c1:2,c2").unwrap());
        assert_eq!(spec.launcher_exec[0], "srun");
        assert_eq!(spec.launcher_exec.last().unwrap(), "--nodelist", "the host name comes next");

        let mut given = no_options();
        given.launcher_exec = Some("my-rsh -q".to_owned());
        let spec = given.spec_with(slurm("c[1-2]", "2,1")).unwrap().expect("hosts");
        assert_eq!(spec.launcher_exec, ["my-rsh", "-q"], "--launcher-exec wins over srun");

        let mut listed = no_options();
        listed.hosts = Some("x:3".to_owned());
        let spec = listed.spec_with(slurm("c[1-2]", "2,1")).unwrap().expect("hosts");
        assert_eq!(spec.hosts, parse_host_list("x:3").unwrap(), "--hosts wins over the allocation");
        assert_ne!(spec.launcher_exec[0], "srun");
    }

    #[test]
    fn an_allocation_of_this_host_alone_runs_as_without_slurm() {
        assert!(no_options().spec_with(slurm("localhost", "4")).unwrap().is_none());
        let outside = |_: &str| None;
        assert!(no_options().spec_with(outside).unwrap().is_none());
        let mut ppn = no_options();
        ppn.ppn = Some(2);
        assert!(ppn.spec_with(outside).unwrap_err().contains("need --hosts, --hostfile or a Slurm allocation"));
    }

    #[test]
    fn a_bad_allocation_is_refused_naming_the_variable() {
        let error = no_options().spec_with(slurm("c[1-", "1")).unwrap_err();
        assert_eq!(error, "the Slurm allocation: SLURM_JOB_NODELIST=\"c[1-\": a bracket that is never closed");
    }

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
