//! Jobs across hosts: which host runs which process, the agent that starts a host's processes,
//! and the channel between that agent and the launcher.
//!
//! `grappe run --hosts a:4,b` starts one agent per host through a remote shell (`ssh -x HOST
//! grappe agent` by default, or `--launcher-exec CMD`, called as `CMD HOST grappe agent` as
//! hydra calls its launcher). The agent's standard input and output are the only channel: the
//! launcher sends the job's description and PMI replies down it, and the agent sends back its
//! processes' PMI requests, their output and how they ended ([`channel`]). No address of the
//! launcher has to be reachable from the hosts, and the remote shell is the only authentication.
//!
//! Processes are placed as hydra places them ([`place`]): each host takes as many processes as it
//! has slots (`a:4` four, a bare name one, `--ppn` overriding every count), in order, and round
//! after round past the last host.

pub mod agent;
pub mod channel;
pub mod slurm;

use std::fmt;
use std::path::Path;

/// A host and how many processes it takes per round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSlots {
    pub name: String,
    pub slots: usize,
}

/// Why a host list or a hostfile was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostListError {
    #[error("the host list is empty")]
    Empty,
    #[error("host entry `{entry}`{}: {reason}", where_in(*.line))]
    BadEntry { entry: String, line: Option<usize>, reason: &'static str },
    #[error("cannot read the hostfile {path}: {reason}")]
    Unreadable { path: String, reason: String },
}

fn where_in(line: Option<usize>) -> String {
    line.map_or_else(String::new, |line| format!(" (line {line})"))
}

/// Parses `a:4,b,c:2` (hydra's `-hosts`): names, each with an optional slot count.
pub fn parse_host_list(text: &str) -> Result<Vec<HostSlots>, HostListError> {
    let hosts = text.split(',').map(str::trim).filter(|entry| !entry.is_empty());
    let hosts: Vec<HostSlots> = hosts.map(|entry| parse_entry(entry, None)).collect::<Result<_, _>>()?;
    match hosts.is_empty() {
        true => Err(HostListError::Empty),
        false => Ok(hosts),
    }
}

/// Parses a hostfile: one host per line as `name`, `name:N` (hydra) or `name slots=N` (Open
/// MPI); `#` starts a comment.
pub fn read_hostfile(path: &Path) -> Result<Vec<HostSlots>, HostListError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| HostListError::Unreadable { path: path.display().to_string(), reason: e.to_string() })?;
    parse_hostfile(&text)
}

/// The text of a hostfile, see [`read_hostfile`].
pub fn parse_hostfile(text: &str) -> Result<Vec<HostSlots>, HostListError> {
    let mut hosts = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let entry = match line.split_once(char::is_whitespace) {
            Some((name, rest)) => open_mpi_entry(name, rest.trim(), index + 1)?,
            None => line.to_owned(),
        };
        hosts.push(parse_entry(&entry, Some(index + 1))?);
    }
    match hosts.is_empty() {
        true => Err(HostListError::Empty),
        false => Ok(hosts),
    }
}

/// `name slots=N` as `name:N`.
fn open_mpi_entry(name: &str, rest: &str, line: usize) -> Result<String, HostListError> {
    match rest.strip_prefix("slots=") {
        Some(count) => Ok(format!("{name}:{}", count.trim())),
        None => Err(HostListError::BadEntry {
            entry: format!("{name} {rest}"),
            line: Some(line),
            reason: "expected `name`, `name:N` or `name slots=N`",
        }),
    }
}

fn parse_entry(entry: &str, line: Option<usize>) -> Result<HostSlots, HostListError> {
    let bad = |reason| HostListError::BadEntry { entry: entry.to_owned(), line, reason };
    let (name, slots) = match entry.rsplit_once(':') {
        Some((name, count)) => {
            (name, count.trim().parse::<usize>().map_err(|_| bad("the slot count is not a number"))?)
        }
        None => (entry, 1),
    };
    if slots == 0 {
        return Err(bad("a host needs at least one slot"));
    }
    if name.is_empty() || name.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad("not a host name"));
    }
    Ok(HostSlots { name: name.to_owned(), slots })
}

/// For each of `processes` processes, the index of its host in `hosts`: every host takes its
/// slots (or `ppn`) in turn, round after round.
pub fn place(processes: usize, hosts: &[HostSlots], ppn: Option<usize>) -> Vec<usize> {
    let per_round: Vec<usize> = hosts.iter().map(|host| ppn.unwrap_or(host.slots).max(1)).collect();
    let mut placement = Vec::with_capacity(processes);
    'rounds: while !hosts.is_empty() {
        for (host, &slots) in per_round.iter().enumerate() {
            for _ in 0..slots {
                if placement.len() == processes {
                    break 'rounds;
                }
                placement.push(host);
            }
        }
    }
    placement
}

/// The hosts a job uses, and which processes each runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPlan {
    /// Names of the hosts that run at least one process, in order of first use.
    pub names: Vec<String>,
    /// For each host of `names`, its processes in increasing order.
    pub processes: Vec<Vec<usize>>,
    /// For each process, the index of its host in `names`.
    host_of_process: Vec<usize>,
}

impl HostPlan {
    /// Groups the placement of [`place`] by host, leaving out hosts without a process.
    pub fn new(processes: usize, hosts: &[HostSlots], ppn: Option<usize>) -> HostPlan {
        let mut plan = HostPlan { names: Vec::new(), processes: Vec::new(), host_of_process: Vec::new() };
        for (process, host) in place(processes, hosts, ppn).into_iter().enumerate() {
            let name = &hosts[host].name;
            let index = match plan.names.iter().position(|known| known == name) {
                Some(index) => index,
                None => {
                    plan.names.push(name.clone());
                    plan.processes.push(Vec::new());
                    plan.names.len() - 1
                }
            };
            plan.processes[index].push(process);
            plan.host_of_process.push(index);
        }
        plan
    }

    /// The host index of `process`.
    pub fn host_of(&self, process: usize) -> Option<usize> {
        self.host_of_process.get(process).copied()
    }

    /// MPICH's `PMI_process_mapping` for this placement: `(vector,(first,hosts,count),...)`
    /// blocks of consecutive processes on one node.
    pub fn process_mapping(&self, total: usize) -> String {
        let mut blocks: Vec<(usize, usize)> = Vec::new(); // (node, count)
        for process in 0..total {
            let node = self.host_of(process).unwrap_or(0);
            match blocks.last_mut() {
                Some((last, count)) if *last == node => *count += 1,
                _ => blocks.push((node, 1)),
            }
        }
        let parts: Vec<String> = blocks.iter().map(|(node, count)| format!("({node},1,{count})")).collect();
        format!("(vector,{})", parts.join(","))
    }
}

impl fmt::Display for HostSlots {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.name, self.slots)
    }
}

/// Whether `name` names the host this launcher runs on: `localhost`, or its host name (whole
/// or up to the first dot).
pub fn is_this_host(name: &str) -> bool {
    let own = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let own = own.trim();
    let short = |host: &str| host.split('.').next().unwrap_or(host).to_owned();
    name == "localhost" || (!own.is_empty() && (name == own || short(name) == short(own)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(text: &str) -> Vec<HostSlots> {
        parse_host_list(text).unwrap()
    }

    #[test]
    fn slots_fill_in_order_then_round_robin() {
        assert_eq!(place(7, &hosts("a:4,b,c:2"), None), [0, 0, 0, 0, 1, 2, 2]);
        assert_eq!(place(9, &hosts("a:2,b"), None), [0, 0, 1, 0, 0, 1, 0, 0, 1]);
        assert_eq!(place(5, &hosts("a,b"), None), [0, 1, 0, 1, 0]);
        assert_eq!(place(5, &hosts("a:4,b"), Some(2)), [0, 0, 1, 1, 0]);
        assert_eq!(place(2, &hosts("a:4,b"), None), [0, 0]);
    }

    #[test]
    fn a_plan_leaves_out_idle_hosts_and_maps_nodes_as_mpich_does() {
        let plan = HostPlan::new(5, &hosts("a:2,b:2,c"), None);
        assert_eq!(plan.names, ["a", "b", "c"]);
        assert_eq!(plan.processes, [vec![0, 1], vec![2, 3], vec![4]]);
        assert_eq!(plan.process_mapping(5), "(vector,(0,1,2),(1,1,2),(2,1,1))");
        let idle = HostPlan::new(2, &hosts("a:2,b:2"), None);
        assert_eq!(idle.names, ["a"]);
        let round = HostPlan::new(4, &hosts("a,b"), None);
        assert_eq!(round.processes, [vec![0, 2], vec![1, 3]]);
        assert_eq!(round.process_mapping(4), "(vector,(0,1,1),(1,1,1),(0,1,1),(1,1,1))");
    }

    #[test]
    fn a_host_named_twice_is_one_host() {
        let plan = HostPlan::new(3, &hosts("a,b,a"), None);
        assert_eq!(plan.names, ["a", "b"]);
        assert_eq!(plan.processes, [vec![0, 2], vec![1]]);
    }

    #[test]
    fn hostfiles_of_hydra_and_open_mpi_read_alike() {
        let text = "# cluster\nnode1:4\nnode2 slots=2   # second\n\nnode3\n";
        assert_eq!(parse_hostfile(text).unwrap(), hosts("node1:4,node2:2,node3"));
    }

    #[test]
    fn bad_entries_name_the_entry_and_the_line() {
        let err = parse_host_list("a,b:x").unwrap_err().to_string();
        assert_eq!(err, "host entry `b:x`: the slot count is not a number");
        let err = parse_host_list("a:0").unwrap_err().to_string();
        assert!(err.contains("at least one slot"), "{err}");
        let err = parse_hostfile("a\nb cores=3\n").unwrap_err().to_string();
        assert!(err.contains("line 2") && err.contains("b cores=3"), "{err}");
        assert_eq!(parse_host_list(" , ").unwrap_err(), HostListError::Empty);
        assert_eq!(parse_hostfile("# nothing\n").unwrap_err(), HostListError::Empty);
        let err = read_hostfile(Path::new("/nonexistent/hosts")).unwrap_err().to_string();
        assert!(err.contains("/nonexistent/hosts"), "{err}");
    }
}
