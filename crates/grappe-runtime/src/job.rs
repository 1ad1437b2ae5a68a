//! A job as one process sees it: which ranks it hosts, the host segment
//! they share with the other processes of the host, and how to run them.
//!
//! Start-up, over PMI when a launcher started us:
//!
//! 1. every process publishes how many thread ranks it hosts and on which
//!    host (hostname and boot id), then a fence;
//! 2. ranks are numbered in process order; all processes must share one
//!    host (the network fabric is not built yet);
//! 3. process 0 creates the segment file and publishes its name, a fence,
//!    the others open it;
//! 4. every process announces its ranks in the segment, a barrier, and
//!    process 0 unlinks the file (the mappings keep it alive, and nothing
//!    is left in /dev/shm even if a process is killed later).

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
    /// World rank -> host-local index.
    pub locals: Vec<usize>,
    pub proto: ProtoSettings,
    pub wait: WaitSettings,
    /// Where and how to record traces (`GRAPPE_TRACE`), if at all.
    pub trace: Option<crate::tracing::TraceSettings>,
    /// The job's id, the same in every process (the process manager's),
    /// written in each rank's trace so that traces of two runs are told apart.
    pub id: String,
    /// Worker threads asked for (`GRAPPE_WORKERS`), if any.
    pub workers: Option<usize>,
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
        let job = Job::assemble(host, 0..n, n, id)?;
        job.announce();
        Ok(job)
    }

    fn processes(mut pmi: Box<dyn Pmi>, per_process: usize) -> Result<(Job, Box<dyn Pmi>)> {
        let me = pmi.rank();
        let host_id = host_identity();
        pmi.put(&format!("grappe-proc-{me}"), &format!("{per_process},{host_id}"))?;
        pmi.fence()?;
        let mut first = 0;
        let mut total = 0;
        for p in 0..pmi.size() {
            let value = pmi.get(&format!("grappe-proc-{p}"))?;
            let (count, host) = parse_process_entry(p, &value)?;
            if host != host_id {
                return Err(StartError::SeveralHosts { process: p, host, me, my_host: host_id });
            }
            if p == me {
                first = total;
            }
            total += count;
        }
        let path = segment_path(pmi.job_id());
        let host = if me == 0 {
            let host = HostMemory::create_file(&path, layout_params(total)?)?;
            pmi.put("grappe-segment", &path.to_string_lossy())?;
            pmi.fence()?;
            host
        } else {
            pmi.fence()?;
            let published = pmi.get("grappe-segment")?;
            HostMemory::open_file(&PathBuf::from(published))?
        };
        let registered = doorbell::register_asymmetric();
        host.vote_asymmetric(registered);
        let job = Job::assemble(Arc::new(host), first..first + per_process, total, pmi.job_id())?;
        job.announce();
        pmi.barrier()?;
        if me == 0 {
            let _ = job.host.segment().unlink();
        }
        if registered && job.host.asymmetric_agreed() {
            doorbell::enable_asymmetric();
        }
        Ok((job, pmi))
    }

    fn assemble(host: Arc<HostMemory>, mine: Range<usize>, total: usize, id: &str) -> Result<Job> {
        let cpus = allowed_cpus().len().max(1);
        let proto = ProtoSettings::from_env(host.params().ring_bytes)?;
        let wait = WaitSettings::from_env(total > cpus)?;
        let trace = crate::tracing::TraceSettings::from_env()?;
        let workers = workers_setting(Vars::process())?;
        Ok(Job { host, mine, locals: (0..total).collect(), proto, wait, trace, id: id.to_owned(), workers })
    }

    /// Publishes this process's ranks in the segment. The doorbell of a
    /// rank is that of its worker: the local index of the worker's first rank.
    fn announce(&self) {
        for spec in self.worker_plan() {
            let bell = self.locals[spec.ranks[0]];
            for &rank in &spec.ranks {
                grappe_proto::announce(&self.host, rank, self.locals[rank], bell);
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
                let cpu = cpus.get(self.locals[ranks[0]] % cpus.len().max(1)).copied();
                WorkerPlan { ranks, cpu }
            })
            .collect()
    }

    /// The doorbell of each worker of the plan, ready for the scheduler.
    pub fn worker_specs<'a>(&'a self, plan: &[WorkerPlan]) -> Vec<WorkerSpec<'a>> {
        plan.iter()
            .map(|p| WorkerSpec {
                ranks: p.ranks.clone(),
                bell: self.host.doorbell(self.locals[p.ranks[0]]),
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
fn workers_setting(vars: Vars<'_>) -> Result<Option<usize>> {
    let Some(text) = vars.text("GRAPPE_WORKERS")? else { return Ok(None) };
    match text.trim().parse() {
        Ok(workers) => Ok(Some(workers)),
        Err(_) => Err(SettingError::new("GRAPPE_WORKERS", text, "a number of worker threads").into()),
    }
}

/// Hostname and boot id: two processes share memory only if both match.
fn host_identity() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    format!("{}/{}", name.trim(), boot.trim()).replace([' ', ';', '=', ','], "_")
}

/// The `ranks,host` entry of process `process`.
fn parse_process_entry(process: usize, value: &str) -> Result<(usize, String)> {
    let refuse = |expected| StartError::ProcessEntry { process, value: value.to_owned(), expected };
    let (count, host) = value.split_once(',').ok_or_else(|| refuse("`ranks,host`"))?;
    let count = count.parse().map_err(|_| refuse("`ranks,host` with a number of ranks"))?;
    Ok((count, host.to_owned()))
}

/// Where process 0 creates the host segment: `GRAPPE_SHM_DIR` (a tmpfs),
/// `/dev/shm` by default.
fn segment_path(job_id: &str) -> PathBuf {
    let dir = std::env::var_os("GRAPPE_SHM_DIR")
        .map_or_else(|| PathBuf::from(grappe_fabric::segment::SHM_DIR), PathBuf::from);
    dir.join(format!("grappe-{}-host0", grappe_launch::pmi::file_safe(job_id)))
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
    fn a_process_entry_is_ranks_then_host_and_a_bad_one_is_named() {
        assert_eq!(parse_process_entry(1, "4,h/b").unwrap(), (4, "h/b".to_owned()));
        for (value, expected) in [("4", "`ranks,host`"), ("four,h/b", "`ranks,host` with a number of ranks")] {
            let error = parse_process_entry(3, value).unwrap_err();
            let StartError::ProcessEntry { process: 3, value: shown, expected: said } = &error else {
                panic!("{error:?}")
            };
            assert_eq!((shown.as_str(), *said), (value, expected));
            assert_eq!(error.to_string(), format!("process 3 published {value:?}, expected {expected}"));
        }
    }
}
