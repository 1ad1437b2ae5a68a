//! A job as one process sees it: which ranks it hosts, the host segment
//! they share with the other processes of the host, and how to run them.
//!
//! Start-up, over PMI when a launcher started us:
//!
//! 1. every process publishes how many thread ranks it hosts and on which
//!    host (hostname, boot id and the file system of its segments), then a
//!    fence;
//! 2. ranks are numbered in process order, and numbered again on their
//!    host ([`Placement`]);
//! 3. the first process of each host creates that host's segment file,
//!    sized for the host's ranks, and publishes its name; on a job across
//!    hosts every process also publishes the address it listens on, and
//!    process 0 the job's secret (see [`crate::network`]); a fence, the
//!    other processes of each host open its segment;
//! 4. across hosts, every rank connects to every rank of the other hosts;
//! 5. every process announces its ranks in its segment, a barrier, and the
//!    first process of each host unlinks the file (the mappings keep it
//!    alive, and nothing is left in /dev/shm even if a process is killed
//!    later).

use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;

use grappe_fabric::{HostMemory, doorbell};
use grappe_launch::Pmi;
use grappe_proto::ProtoSettings;
use grappe_sched::{WaitSettings, WorkerSpec, allowed_cpus};
use grappe_settings::{SettingError, Vars};

use crate::StartError;
use crate::settings::layout_params;

type Result<T, E = StartError> = std::result::Result<T, E>;

/// What this process needs to run its ranks.
pub(crate) struct Job {
    pub host: Arc<HostMemory>,
    /// World ranks hosted by this process.
    pub mine: Range<usize>,
    /// World rank -> index among the ranks of its host, for the ranks of
    /// this process's host; `None` for ranks of other hosts.
    pub locals: Vec<Option<usize>>,
    /// World rank -> the index its worker's core is chosen by: the rank's
    /// index among the ranks of its machine (`None` for other hosts).
    on_machine: Vec<Option<usize>>,
    /// The links of this process's ranks to ranks of other hosts, until
    /// each rank takes its own ([`Job::take_links`]).
    links: crate::network::Links,
    pub proto: ProtoSettings,
    pub wait: WaitSettings,
    /// Where and how to record traces (`GRAPPE_TRACE`), if at all.
    pub trace: Option<crate::tracing::TraceSettings>,
    /// The job's id, the same in every process (the process manager's),
    /// written in each rank's trace so that traces of two runs are told apart.
    pub id: String,
    /// Worker threads asked for (`GRAPPE_WORKERS`), if any.
    pub workers: Option<usize>,
    /// Whether wildcard matches are recorded or replayed
    /// (`GRAPPE_RECORD_MATCHES`, `GRAPPE_REPLAY_MATCHES`).
    pub matches: Option<crate::matches::MatchSettings>,
}

impl Job {
    /// The job of a process started by a launcher (or alone: a singleton),
    /// and the process manager to finalize once the ranks are done.
    pub fn from_environment() -> Result<(Job, Box<dyn Pmi>)> {
        let pmi = grappe_launch::connect_from_env()?;
        let per_process = grappe_launch::env::ranks_per_process()?;
        if pmi.size() == 1 {
            return Ok((Job::threads(per_process, pmi.job_id())?, pmi));
        }
        Job::processes(pmi, per_process)
    }

    /// `n` thread ranks in this process, no launcher involved.
    pub fn threads(n: usize, id: &str) -> Result<Job> {
        if doorbell::register_asymmetric() {
            doorbell::enable_asymmetric();
        }
        let host = Arc::new(HostMemory::anonymous(layout_params(n)?)?);
        let locals: Vec<Option<usize>> = (0..n).map(Some).collect();
        let shape = Shape { mine: 0..n, locals: locals.clone(), on_machine: locals, machine_ranks: n };
        let job = Job::assemble(host, shape, crate::network::Links::none(), id, JobSettings::from_env()?)?;
        job.announce();
        Ok(job)
    }

    /// The job of a process among several. A process that cannot start
    /// says why, then aborts the job through the process manager, which
    /// stops the others (they would wait for it at the next fence, or for
    /// its connections). It says why first: the process manager may kill
    /// it as soon as it aborts, and the abort's message, on PMI's wire,
    /// loses its spaces.
    fn processes(mut pmi: Box<dyn Pmi>, per_process: usize) -> Result<(Job, Box<dyn Pmi>)> {
        match Job::join(&mut *pmi, per_process) {
            Ok(job) => Ok((job, pmi)),
            Err(e) => {
                crate::say(&format!("process {} cannot start the job: {e}", pmi.rank()));
                let _ = pmi.abort(1, "start-up-failed");
                Err(e)
            }
        }
    }

    fn join(pmi: &mut dyn Pmi, per_process: usize) -> Result<Job> {
        // Settings read alike by every process are checked before the
        // job's shared state exists: a bad one fails every process on its
        // own, naming it, rather than a peer on a segment that a process
        // failing first removed.
        let settings = JobSettings::from_env()?;
        let me = pmi.rank();
        let host_id = host_identity(me, pmi.size(), Vars::process())?;
        let connect = crate::network::connect_setting()?;
        pmi.put(&format!("grappe-proc-{me}"), &format!("{per_process},{connect},{host_id}"))?;
        pmi.fence()?;
        let mut entries = Vec::with_capacity(pmi.size());
        for p in 0..pmi.size() {
            let (count, connects, host) = parse_process_entry(p, &pmi.get(&format!("grappe-proc-{p}"))?)?;
            // Every process sees every entry: all stop here alike, none
            // waits for connections another will not make.
            if connects != connect {
                let expected = format!("{connects}, as on process {p}: every process of a job connects the same way");
                return Err(SettingError::new("GRAPPE_TCP_CONNECT", connect, expected).into());
            }
            entries.push((count, host));
        }
        let placement = Placement::of(&entries);
        let my_host = placement.process_host[me];
        let first_of_host = placement.process_host.iter().position(|&h| h == my_host) == Some(me);
        let path = segment_path(pmi.job_id(), my_host);
        let host_ranks = placement.host_ranks[my_host];
        let created = match first_of_host {
            true => Some(HostMemory::create_file(&path, layout_params(host_ranks)?)?),
            false => None,
        };
        // Until it is unlinked as planned (after the barrier below), a start
        // that fails removes the file, or it would stay in /dev/shm.
        let _remove_on_failure = RemoveOnDrop(created.as_ref().map(|_| path.clone()));
        if created.is_some() {
            pmi.put(&format!("grappe-segment-{my_host}"), &path.to_string_lossy())?;
        }
        let listening = match placement.hosts() > 1 {
            true => Some(crate::network::Listening::start(pmi, me)?),
            false => None,
        };
        pmi.fence()?;
        let host = match created {
            Some(host) => host,
            None => HostMemory::open_file(&PathBuf::from(pmi.get(&format!("grappe-segment-{my_host}"))?))?,
        };
        let first = placement.process_first[me];
        let mine = first..first + per_process;
        let links = match listening {
            Some(listening) => listening.connect_all(pmi, &placement, mine.clone())?,
            None => {
                crate::network::check_setting()?;
                crate::network::Links::none()
            }
        };
        let registered = doorbell::register_asymmetric();
        host.vote_asymmetric(registered);
        let locals = placement.locals_seen_from(my_host);
        let on_machine = placement.machine_indexes_seen_from(my_host);
        let machine_ranks = placement.machine_ranks(my_host);
        let shape = Shape { mine, locals, on_machine, machine_ranks };
        let job = Job::assemble(Arc::new(host), shape, links, pmi.job_id(), settings)?;
        job.announce();
        job.links.wake_on_arrival(&job)?;
        pmi.barrier()?;
        if first_of_host {
            let _ = job.host.segment().unlink();
        }
        if registered && job.host.asymmetric_agreed() {
            doorbell::enable_asymmetric();
        }
        Ok(job)
    }

    fn assemble(
        host: Arc<HostMemory>,
        shape: Shape,
        links: crate::network::Links,
        id: &str,
        settings: JobSettings,
    ) -> Result<Job> {
        let Shape { mine, locals, on_machine, machine_ranks } = shape;
        let cpus = allowed_cpus().len().max(1);
        let proto = ProtoSettings::from_env(host.params().ring_bytes)?;
        let wait = WaitSettings::from_env(machine_ranks > cpus)?;
        let JobSettings { trace, workers, matches } = settings;
        Ok(Job { host, mine, locals, on_machine, links, proto, wait, trace, id: id.to_owned(), workers, matches })
    }

    /// The host-local index of world rank `rank` of this process.
    pub fn local(&self, rank: usize) -> usize {
        self.locals[rank].expect("a rank of this process runs on this host")
    }

    /// How many ranks the job has.
    pub fn world_size(&self) -> usize {
        self.locals.len()
    }

    /// Stops this process's heartbeats to the next host, saying goodbye:
    /// the process ends normally.
    pub fn finish_heartbeats(&self) {
        self.links.finish_heartbeats();
    }

    /// The links of world rank `rank` (of this process) to the ranks of
    /// other hosts, by world rank; taken once, when the rank connects.
    pub fn take_links(&self, rank: usize) -> Vec<Option<grappe_proto::RemoteLink>> {
        self.links.take(rank, self.world_size())
    }

    /// Publishes this process's ranks in the segment. The doorbell of a
    /// rank is that of its worker: the local index of the worker's first rank.
    fn announce(&self) {
        for spec in self.worker_plan() {
            let bell = self.local(spec.ranks[0]);
            for &rank in &spec.ranks {
                grappe_proto::announce(&self.host, rank, self.local(rank), bell);
            }
        }
    }

    /// Ranks of this process spread over one worker per core (at most one
    /// per rank): worker `w` gets every `W`-th rank.
    pub fn worker_plan(&self) -> Vec<WorkerPlan> {
        let cpus = allowed_cpus();
        let ranks = self.mine.len();
        let workers = self.workers.unwrap_or(cpus.len()).clamp(1, ranks.max(1));
        (0..workers)
            .map(|w| {
                let ranks: Vec<usize> = self.mine.clone().skip(w).step_by(workers).collect();
                let on_machine = self.on_machine[ranks[0]].expect("a rank of this process runs on this machine");
                let cpu = cpus.get(on_machine % cpus.len().max(1)).copied();
                WorkerPlan { ranks, cpu }
            })
            .collect()
    }

    /// The doorbell of each worker of the plan, ready for the scheduler.
    pub fn worker_specs<'a>(&'a self, plan: &[WorkerPlan]) -> Vec<WorkerSpec<'a>> {
        plan.iter()
            .map(|p| WorkerSpec {
                ranks: p.ranks.clone(),
                bell: self.host.doorbell(self.local(p.ranks[0])),
                cpu: p.cpu,
            })
            .collect()
    }
}

/// The ranks one worker runs and the CPU it is pinned to.
pub(crate) struct WorkerPlan {
    pub ranks: Vec<usize>,
    pub cpu: Option<usize>,
}

/// `GRAPPE_WORKERS`: worker threads per process (one per core by
/// default; never more than ranks, nor fewer than one).
/// Where a process's ranks are among the job's: its own, each world
/// rank's index on this host and on this machine, the machine's ranks.
struct Shape {
    mine: Range<usize>,
    locals: Vec<Option<usize>>,
    on_machine: Vec<Option<usize>>,
    machine_ranks: usize,
}

/// The settings of a job that do not depend on its shape.
struct JobSettings {
    trace: Option<crate::tracing::TraceSettings>,
    workers: Option<usize>,
    matches: Option<crate::matches::MatchSettings>,
}

impl JobSettings {
    fn from_env() -> Result<JobSettings> {
        // The waiting settings too are checked here, though what they
        // give depends on the job's shape (see `assemble`).
        WaitSettings::from_env(false)?;
        Ok(JobSettings {
            trace: crate::tracing::TraceSettings::from_env()?,
            workers: workers_setting(Vars::process())?,
            matches: crate::matches::MatchSettings::from_env()?,
        })
    }
}

fn workers_setting(vars: Vars<'_>) -> Result<Option<usize>> {
    let Some(text) = vars.text("GRAPPE_WORKERS")? else { return Ok(None) };
    match text.trim().parse() {
        Ok(workers) => Ok(Some(workers)),
        Err(_) => Err(SettingError::new("GRAPPE_WORKERS", text, "a number of worker threads").into()),
    }
}

/// Hostname, boot id and the shared-memory file system: two processes
/// share memory only if all three match. Processes in network namespaces
/// of one machine share a boot id, and are told apart by the host names
/// their namespaces give them, or, when they share a host name, by a
/// /dev/shm of their own (a segment made on one is not seen on the other).
///
/// `GRAPPE_EMULATED_HOSTS=K` splits the job's `processes` into `K` hosts
/// of one machine (process `p` on host `p·K/processes`), which talk over
/// the network fabric through the loopback interface: the multi-host
/// paths, tested and measured without a second host.
fn host_identity(me: usize, processes: usize, vars: Vars<'_>) -> Result<String> {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    let real = real_identity(name.trim(), boot.trim(), shm_device(&segment_dir()));
    let emulated: usize = vars.number("GRAPPE_EMULATED_HOSTS", 1, "a number of hosts (at least 1)")?;
    if emulated == 0 {
        return Err(SettingError::new("GRAPPE_EMULATED_HOSTS", "0", "a number of hosts (at least 1)").into());
    }
    Ok(match emulated {
        1 => real,
        k => format!("{real}#{}", me * k.min(processes) / processes.max(1)),
    })
}

/// `name/boot/device`, without the separators of the PMI entries.
fn real_identity(name: &str, boot: &str, shm_device: u64) -> String {
    format!("{name}/{boot}/{shm_device:x}").replace([' ', ';', '=', ','], "_")
}

/// The device of the file system that holds the segments (0 if it cannot
/// be read: creating the segment then fails, saying why).
fn shm_device(dir: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(dir).map_or(0, |m| m.dev())
}

/// Where the job's ranks run: hosts in order of their first process,
/// ranks numbered in process order and, on each host, in world order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Placement {
    /// Process -> its host.
    pub process_host: Vec<usize>,
    /// Process -> its first world rank.
    pub process_first: Vec<usize>,
    /// World rank -> its host.
    pub rank_host: Vec<usize>,
    /// World rank -> its index among its host's ranks.
    pub rank_local: Vec<usize>,
    /// World rank -> its index among the ranks of its machine: hosts
    /// emulated on one machine, or network namespaces of one machine,
    /// share its cores, and binding ranks to cores counts them all.
    pub rank_on_machine: Vec<usize>,
    /// Host -> its identity.
    pub host_names: Vec<String>,
    /// Host -> how many ranks it runs.
    pub host_ranks: Vec<usize>,
}

impl Placement {
    /// The placement of processes that published `entries` (ranks, host).
    pub fn of(entries: &[(usize, String)]) -> Placement {
        let mut p = Placement {
            process_host: Vec::new(),
            process_first: Vec::new(),
            rank_host: Vec::new(),
            rank_local: Vec::new(),
            rank_on_machine: Vec::new(),
            host_names: Vec::new(),
            host_ranks: Vec::new(),
        };
        for (count, name) in entries {
            let host = match p.host_names.iter().position(|n| n == name) {
                Some(host) => host,
                None => {
                    p.host_names.push(name.clone());
                    p.host_ranks.push(0);
                    p.host_names.len() - 1
                }
            };
            p.process_host.push(host);
            p.process_first.push(p.rank_host.len());
            let machine = machine_of(name);
            let on_machine = p.rank_host.iter().filter(|&&h| machine_of(&p.host_names[h]) == machine).count();
            for i in 0..*count {
                p.rank_on_machine.push(on_machine + i);
                p.rank_host.push(host);
                p.rank_local.push(p.host_ranks[host]);
                p.host_ranks[host] += 1;
            }
        }
        p
    }

    /// The process that runs world rank `rank`.
    pub fn process_of(&self, rank: usize) -> usize {
        self.process_first.partition_point(|&first| first <= rank) - 1
    }

    /// World rank -> index among its machine's ranks, for ranks of `host`.
    pub fn machine_indexes_seen_from(&self, host: usize) -> Vec<Option<usize>> {
        self.rank_host.iter().zip(&self.rank_on_machine).map(|(&h, &i)| (h == host).then_some(i)).collect()
    }

    /// How many ranks run on the machine of `host` (on its cores).
    pub fn machine_ranks(&self, host: usize) -> usize {
        let machine = machine_of(&self.host_names[host]);
        self.rank_host.iter().filter(|&&h| machine_of(&self.host_names[h]) == machine).count()
    }

    /// How many hosts the job spans.
    pub fn hosts(&self) -> usize {
        self.host_names.len()
    }

    /// World rank -> host-local index, for ranks of `host`; `None` for the
    /// others.
    pub fn locals_seen_from(&self, host: usize) -> Vec<Option<usize>> {
        self.rank_host.iter().zip(&self.rank_local).map(|(&h, &local)| (h == host).then_some(local)).collect()
    }

    /// The name of host `host` for people: its host name, and the
    /// emulated host's number if there is one (the boot id left out).
    pub fn host_label(&self, host: usize) -> String {
        let identity = &self.host_names[host];
        let name = identity.split('/').next().unwrap_or(identity);
        match identity.rsplit_once('#') {
            Some((_, emulated)) => format!("{name}#{emulated}"),
            None => name.to_owned(),
        }
    }
}

/// The `ranks,host` entry of process `process`.
fn parse_process_entry(process: usize, value: &str) -> Result<(usize, String, String)> {
    let refuse = |expected| StartError::ProcessEntry { process, value: value.to_owned(), expected };
    let (count, rest) = value.split_once(',').ok_or_else(|| refuse("`ranks,connections,host`"))?;
    let (connect, host) = rest.split_once(',').ok_or_else(|| refuse("`ranks,connections,host`"))?;
    let count = count.parse().map_err(|_| refuse("`ranks,connections,host` with a number of ranks"))?;
    Ok((count, connect.to_owned(), host.to_owned()))
}

/// The machine of a host identity: its boot id (hosts emulated on one
/// machine, and network namespaces, share it).
fn machine_of(identity: &str) -> &str {
    let after_name = identity.split_once('/').map_or(identity, |(_, boot)| boot);
    after_name.split(['/', '#']).next().unwrap_or(after_name)
}

/// Where the first process of host `host` creates its segment. The
/// process's pid is in the name: job ids repeat (a Slurm restarted with a
/// fresh state numbers its jobs from 1 again), and a file left by a killed
/// job must not stop a new one.
fn segment_path(job_id: &str, host: usize) -> PathBuf {
    let pid = std::process::id();
    segment_dir().join(format!("grappe-{}-host{host}-{pid}", grappe_launch::pmi::file_safe(job_id)))
}

/// Removes a file when dropped (a missing file is fine: it was unlinked).
struct RemoveOnDrop(Option<PathBuf>);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        if let Some(path) = &self.0 {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// The directory of the segments: `GRAPPE_SHM_DIR` (a tmpfs), `/dev/shm`
/// by default.
fn segment_dir() -> PathBuf {
    std::env::var_os("GRAPPE_SHM_DIR").map_or_else(|| PathBuf::from(grappe_fabric::segment::SHM_DIR), PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_count_that_does_not_parse_is_refused() {
        let set = |value: &'static str| move |name: &str| (name == "GRAPPE_WORKERS").then(|| value.into());
        assert_eq!(workers_setting(Vars::from_lookup(&set(" 3"))).unwrap(), Some(3));
        assert_eq!(workers_setting(Vars::from_lookup(&|_| None)).unwrap(), None);
        let error = workers_setting(Vars::from_lookup(&set("all"))).unwrap_err();
        assert_eq!(error.to_string(), "GRAPPE_WORKERS=\"all\": expected a number of worker threads");
    }

    #[test]
    fn ranks_are_numbered_by_process_and_again_on_their_host() {
        let entries: Vec<(usize, String)> =
            [(2, "a/1"), (1, "b/2"), (1, "a/1"), (2, "c/3#3")].iter().map(|(n, h)| (*n, h.to_string())).collect();
        let p = Placement::of(&entries);
        assert_eq!(p.process_host, [0, 1, 0, 2]);
        assert_eq!(p.process_first, [0, 2, 3, 4]);
        assert_eq!(p.rank_host, [0, 0, 1, 0, 2, 2]);
        assert_eq!(p.rank_local, [0, 1, 0, 2, 0, 1]);
        assert_eq!(p.rank_on_machine, [0, 1, 0, 2, 0, 1], "hosts a, b and c are three machines");
        let emulated: Vec<(usize, String)> =
            [(1, "m/9#0"), (2, "m/9#1")].iter().map(|(n, h)| (*n, h.to_string())).collect();
        assert_eq!(Placement::of(&emulated).rank_on_machine, [0, 1, 2], "emulated hosts share their machine");
        assert_eq!(Placement::of(&emulated).machine_ranks(1), 3);
        assert_eq!(p.machine_ranks(0), 3);
        assert_eq!(p.host_ranks, [3, 1, 2]);
        assert_eq!(p.locals_seen_from(0), [Some(0), Some(1), None, Some(2), None, None]);
        assert_eq!(p.host_label(2), "c#3");
        assert_eq!(p.host_label(1), "b");
    }

    #[test]
    fn processes_that_see_different_shared_memory_are_different_hosts_of_one_machine() {
        // Two network namespaces with the same host name, each with a
        // /dev/shm of its own: a segment made on one is not seen on the other.
        let (a, b) = (real_identity("node", "b00t", 0x2a), real_identity("node", "b00t", 0x2b));
        assert_ne!(a, b);
        assert_eq!(real_identity("node", "b00t", 0x2a), a, "the same file system is the same host");
        let p = Placement::of(&[(1, a), (2, b)]);
        assert_eq!(p.hosts(), 2);
        assert_eq!(p.rank_on_machine, [0, 1, 2], "one machine");
        assert_eq!((p.host_label(0), p.host_label(1)), ("node".to_owned(), "node".to_owned()));
        let emulated = format!("{}#1", real_identity("node", "b00t", 0x2a));
        assert_eq!(machine_of(&emulated), "b00t");
        assert_eq!(Placement::of(&[(1, emulated)]).host_label(0), "node#1");
    }

    #[test]
    fn the_shared_memory_device_tells_file_systems_apart() {
        assert_ne!(shm_device(std::path::Path::new("/proc")), shm_device(std::path::Path::new("/")));
        assert_eq!(shm_device(std::path::Path::new("/no/such/dir")), 0);
    }

    #[test]
    fn emulated_hosts_split_the_processes_in_order_and_zero_is_refused() {
        let set = |value: &'static str| move |name: &str| (name == "GRAPPE_EMULATED_HOSTS").then(|| value.into());
        let hosts: Vec<String> = (0..4).map(|p| host_identity(p, 4, Vars::from_lookup(&set("2"))).unwrap()).collect();
        assert_eq!(hosts[0], hosts[1]);
        assert_eq!(hosts[2], hosts[3]);
        assert_ne!(hosts[1], hosts[2]);
        let real = host_identity(3, 4, Vars::from_lookup(&|_| None)).unwrap();
        assert!(!real.contains('#'), "{real}");
        let error = host_identity(0, 4, Vars::from_lookup(&set("0"))).unwrap_err();
        assert!(error.to_string().contains("GRAPPE_EMULATED_HOSTS"), "{error}");
    }

    #[test]
    fn a_process_entry_is_ranks_connections_then_host_and_a_bad_one_is_named() {
        assert_eq!(parse_process_entry(1, "4,lazy,h/b,c").unwrap(), (4, "lazy".to_owned(), "h/b,c".to_owned()));
        for (value, expected) in [
            ("4", "`ranks,connections,host`"),
            ("4,h/b", "`ranks,connections,host`"),
            ("four,eager,h/b", "`ranks,connections,host` with a number of ranks"),
        ] {
            let error = parse_process_entry(3, value).unwrap_err();
            let StartError::ProcessEntry { process: 3, value: shown, expected: said } = &error else {
                panic!("{error:?}")
            };
            assert_eq!((shown.as_str(), *said), (value, expected));
            assert_eq!(error.to_string(), format!("process 3 published {value:?}, expected {expected}"));
        }
    }
}
