//! `grappe run`: launch a program as N ranks on this host (a thin wrapper over
//! [`grappe_launch::launcher::launch`]).

mod checkpoint;
mod hosts;

use crate::cmd::time::parse_duration;
use clap::Args;
use grappe_launch::launcher::{GatherSpec, JobFailure, LaunchError, LaunchSpec, Layout, ProcessFailure, launch};
use std::ffi::OsString;
use std::time::Duration;

const AFTER_HELP: &str = "\
Each process gets PMI_FD, PMI_RANK, PMI_SIZE (processes, not ranks), GRAPPE_RANKS_PER_PROCESS,
GRAPPE_JOB_ID and GRAPPE_LAUNCHER=grappe, and is served PMI-1 (as by MPICH's mpiexec). Process p
hosts ranks p*T .. p*T+T-1. If a process fails (non-zero exit, signal, exit without PMI finalize,
PMI abort), the whole job is stopped and grappe exits with that process's status (128+signal for
a signal, 124 for --timeout). Leftover /dev/shm/grappe-<GRAPPE_JOB_ID>* files are removed.

With --hosts or --hostfile, processes are placed as hydra places them (each host takes its slots,
or --ppn, in turn, round after round) and each host's are started by an agent, `grappe agent`,
run through the remote shell (`ssh -x HOST PATH-OF-GRAPPE agent`, or --launcher-exec CMD called
as `CMD HOST PATH-OF-GRAPPE agent`); grappe must be at the same path on every host, and the
processes start in the same working directory with the launcher's environment (except PMI_*,
SLURM_*, SSH_*, HOSTNAME and GRAPPE_NET_ADDR). A host whose agent is lost stops the job.

Inside a Slurm allocation (salloc, sbatch) and without --hosts or --hostfile, the hosts are the
allocation's nodes (SLURM_JOB_NODELIST) with SLURM_TASKS_PER_NODE slots each, and each node's
agent is started by `srun --nodes=1 --ntasks=1 --overlap --nodelist HOST` (an allocation of this
host alone runs as outside Slurm; --hosts localhost keeps a job on this host).";

/// Launch PROGRAM as N ranks on this host, or across hosts (--hosts, --hostfile).
#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub struct RunArgs {
    /// Number of ranks.
    #[arg(short = 'n', long = "ranks", value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..))]
    ranks: u32,

    /// Run all N ranks as threads of one process.
    #[arg(long, conflicts_with = "threads_per_process")]
    threads: bool,

    /// Run N/T processes hosting T thread ranks each (T must divide N).
    #[arg(long, value_name = "T", value_parser = clap::value_parser!(u32).range(1..))]
    threads_per_process: Option<u32>,

    /// Prefix every output line with `[rank] `, or `[first-last] ` for a process of thread ranks.
    #[arg(long)]
    label: bool,

    /// Stop the job after TIME: 1.5s, 500ms, 2m (bare numbers are seconds).
    #[arg(long, value_name = "TIME", value_parser = parse_duration)]
    timeout: Option<Duration>,

    /// When the job stops (a rank failed, a signal, --timeout), how long
    /// its processes have after SIGTERM to end their traces and
    /// checkpoints before SIGKILL: 500ms by default; more on a machine
    /// too loaded to flush a trace in that time.
    #[arg(long, value_name = "TIME", value_parser = parse_duration)]
    kill_grace: Option<Duration>,

    /// Record a trace of every rank in DIR (one file per rank, on local
    /// storage; read it with `grappe trace`). The per-rank files of an
    /// earlier run in DIR are removed first. Sets GRAPPE_TRACE for the ranks.
    #[arg(long, value_name = "DIR")]
    trace: Option<std::path::PathBuf>,

    /// Print the job's run time on stderr at its end, as `run time: X s`:
    /// its slowest rank's, from the end of the rank's start-up to the
    /// start of its finalize (so neither start-up nor clock sampling nor
    /// the end of a trace counts), traced or not.
    #[arg(long)]
    report_time: bool,

    /// Log what each wildcard receive or probe of the program matched
    /// (source and tag, in each rank's order) in FILE.RANK, one file per
    /// rank, for a later run to replay with --replay-matches. Sets
    /// GRAPPE_RECORD_MATCHES for the ranks.
    #[arg(long, value_name = "FILE", conflicts_with = "replay_matches")]
    record_matches: Option<std::path::PathBuf>,

    /// Force each wildcard receive or probe to match what it matched in the
    /// run that recorded FILE.RANK (--record-matches), so that both runs
    /// follow the same path. A call the log cannot steer (another
    /// selector, or the log ran out) fails naming its rank and index. Sets
    /// GRAPPE_REPLAY_MATCHES for the ranks.
    #[arg(long, value_name = "FILE")]
    replay_matches: Option<std::path::PathBuf>,

    #[command(flatten)]
    checkpoint: checkpoint::CheckpointArgs,

    #[command(flatten)]
    hosts: hosts::HostArgs,

    /// The program to run, then its arguments.
    #[arg(required = true, num_args = 1.., trailing_var_arg = true,
          allow_hyphen_values = true, value_name = "PROGRAM [ARGS]")]
    command: Vec<OsString>,
}

impl RunArgs {
    fn layout(&self) -> Layout {
        match (self.threads, self.threads_per_process) {
            (true, _) => Layout::Threads,
            (false, Some(per_process)) => Layout::ThreadsPerProcess(per_process as usize),
            (false, None) => Layout::ProcessPerRank,
        }
    }

    fn into_spec(self) -> Result<LaunchSpec, String> {
        let layout = self.layout();
        let trace = self.trace.as_ref().map(|dir| std::path::absolute(dir).unwrap_or_else(|_| dir.clone()));
        let mut command = self.command.into_iter();
        let program = command.next().unwrap_or_default();
        let mut spec = LaunchSpec::new(program, self.ranks as usize);
        spec.args = command.collect();
        spec.layout = layout;
        spec.label = self.label;
        spec.timeout = self.timeout;
        if let Some(grace) = self.kill_grace {
            spec.kill_grace = grace;
        }
        spec.forward_signals = true;
        if let Some(dir) = trace {
            spec.env.push(("GRAPPE_TRACE".into(), dir.clone().into_os_string()));
            spec.gather = Some(GatherSpec { dir, file_of_rank: trace_file_name });
        }
        let absolute = |path: &std::path::PathBuf| std::path::absolute(path).unwrap_or_else(|_| path.clone());
        if let Some(base) = &self.record_matches {
            spec.env.push(("GRAPPE_RECORD_MATCHES".into(), absolute(base).into_os_string()));
        }
        if let Some(base) = &self.replay_matches {
            spec.env.push(("GRAPPE_REPLAY_MATCHES".into(), absolute(base).into_os_string()));
        }
        spec.env.extend(self.checkpoint.env());
        spec.hosts = self.hosts.spec()?;
        if spec.hosts.is_none() {
            spec.gather = None; // On this host the files are where they belong already.
        }
        Ok(spec)
    }
}

/// Runs the job (again after a failure, when it checkpoints); returns
/// grappe's exit status.
pub fn execute(args: RunArgs) -> i32 {
    let trace = args.trace.clone();
    let report_time = args.report_time;
    // A rerun into the same directory replaces the earlier run's traces,
    // including those of ranks this run does not have.
    if let Some(Err(e)) = trace.as_deref().map(grappe_trace::remove_rank_files) {
        eprintln!("grappe: --trace: {e}");
        return 1;
    }
    let checkpoint = args.checkpoint.clone();
    if let Err(e) = checkpoint.check_servers(args.ranks as usize) {
        eprintln!("grappe: {}", super::describe(&e));
        return 1;
    }
    let mut spares = match args.hosts.spares() {
        Ok(spares) => spares,
        Err(e) => {
            eprintln!("grappe: {e}");
            return 2;
        }
    };
    let mut spec = match args.into_spec() {
        Ok(spec) => spec,
        Err(e) => {
            eprintln!("grappe: {e}");
            return 2;
        }
    };
    let _scheduler = match checkpoint.scheduler() {
        Ok(scheduler) => scheduler,
        Err(e) => {
            eprintln!("grappe: {}", super::describe(&e));
            return 1;
        }
    };
    let mut restarts = 0;
    loop {
        match launch(&spec) {
            Ok(outcome) => {
                if let Some(failure) = &outcome.failure {
                    eprintln!("grappe: {failure}");
                    if checkpoint.should_restart(&outcome, restarts) {
                        restarts += 1;
                        if let (Some(lost), Some(hosts)) = (lost_host(failure), spec.hosts.as_mut())
                            && let Some(how) = hosts::replace_lost_host(hosts, &lost, &mut spares)
                        {
                            eprintln!("grappe: host {lost} is lost: the job restarts {how}");
                        }
                        continue;
                    }
                }
                if let Some(dir) = trace {
                    say_where_the_trace_is(&dir, outcome.failure.is_some());
                }
                if let (true, Some(run_time)) = (report_time, outcome.run_time) {
                    eprintln!("run time: {:.6} s", run_time.as_secs_f64());
                }
                return outcome.exit_code();
            }
            Err(error) => {
                eprintln!("grappe: {error}");
                // A restart that cannot reach a host goes on without it,
                // as long as restarts are left.
                if let (LaunchError::Host { host, .. }, Some(hosts), 1..) = (&error, spec.hosts.as_mut(), restarts)
                    && let Some(how) = hosts::replace_lost_host(hosts, host, &mut spares)
                    && checkpoint.should_restart_without_host(host, &how, restarts)
                {
                    restarts += 1;
                    continue;
                }
                if let Some(hint) = super::open_files::hint(&error, "the launcher holds a socket and pipes per process")
                {
                    eprintln!("grappe: {hint}");
                }
                return error.exit_code();
            }
        }
    }
}

/// The name of rank `rank`'s trace file.
fn trace_file_name(rank: usize) -> String {
    let path = grappe_trace::file_for(std::path::Path::new(""), rank as u32);
    path.to_string_lossy().into_owned()
}

/// The host whose loss failed the job, if that is what failed it.
fn lost_host(failure: &JobFailure) -> Option<String> {
    match failure {
        JobFailure::Process { process, failure: ProcessFailure::HostLost(_) } => {
            process.host.as_deref().map(str::to_owned)
        }
        _ => None,
    }
}

/// Where the job's trace is, if its ranks wrote one: a failed job may
/// have written none (its directory refused), or its files up to where
/// each rank stopped. Of a failed job, the files without a footer are
/// named: their ranks were killed (or never saw the failure, computing
/// outside the runtime), so their last events are lost.
fn say_where_the_trace_is(dir: &std::path::Path, failed: bool) {
    let files: Vec<(u32, std::path::PathBuf)> = std::fs::read_dir(dir).map_or_else(
        |_| Vec::new(),
        |entries| {
            let paths = entries.filter_map(|e| e.ok()).map(|e| e.path());
            paths.filter_map(|path| Some((grappe_trace::rank_of_file(&path)?, path))).collect()
        },
    );
    let shown = dir.display();
    match (files.len(), failed) {
        (0, _) => eprintln!("grappe: no trace was written in {shown}"),
        (_, false) => eprintln!("grappe: trace in {shown} (see `grappe trace info {shown}`)"),
        (_, true) => {
            let unfinished = unfinished_ranks(&files);
            if unfinished.is_empty() {
                eprintln!(
                    "grappe: the trace, up to where each rank stopped, is in {shown} (see `grappe trace info {shown}`)"
                );
            } else {
                let (list, files) = match unfinished.as_slice() {
                    [one] => (format!("rank {one}"), "its file: its"),
                    many => (format!("ranks {}", many.join(", ")), "their files: their"),
                };
                eprintln!(
                    "grappe: the trace, up to where each rank stopped, is in {shown} (see `grappe trace info {shown}`); \
                     {list} did not finish {files} last unwritten events are lost"
                );
            }
        }
    }
}

/// The ranks (by file, in rank order) whose trace file has no footer.
fn unfinished_ranks(files: &[(u32, std::path::PathBuf)]) -> Vec<String> {
    let complete = |path: &std::path::Path| {
        grappe_trace::TraceFile::open(path).is_ok_and(|mut trace| {
            trace.skim().is_ok() && matches!(trace.ending(), Some(grappe_trace::Ending::Complete(_)))
        })
    };
    let mut unfinished: Vec<u32> = files.iter().filter(|(_, path)| !complete(path)).map(|&(rank, _)| rank).collect();
    unfinished.sort_unstable();
    unfinished.into_iter().map(|rank| rank.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Wrapper {
        #[command(flatten)]
        run: RunArgs,
    }

    fn parse(args: &[&str]) -> Result<RunArgs, clap::Error> {
        Wrapper::try_parse_from(std::iter::once("run").chain(args.iter().copied())).map(|w| w.run)
    }

    #[test]
    fn program_arguments_are_passed_through_even_when_they_look_like_options() {
        let run = parse(&["-n", "4", "--label", "prog", "--label", "-n", "x"]).unwrap();
        assert!(run.label);
        assert_eq!(run.command, ["prog", "--label", "-n", "x"]);
        let spec = run.into_spec().unwrap();
        assert_eq!(spec.ranks, 4);
        assert_eq!(spec.args, ["--label", "-n", "x"]);
    }

    #[test]
    fn layouts_and_timeouts_parse() {
        let run =
            parse(&["-n", "8", "--threads-per-process", "4", "--timeout", "1.5", "--kill-grace", "3s", "p"]).unwrap();
        assert_eq!(run.kill_grace, Some(Duration::from_secs(3)));
        assert_eq!(run.layout(), Layout::ThreadsPerProcess(4));
        assert_eq!(run.timeout, Some(Duration::from_millis(1500)));
        assert_eq!(parse(&["-n", "2", "--threads", "p"]).unwrap().layout(), Layout::Threads);
        assert_eq!(parse(&["-n", "2", "p"]).unwrap().layout(), Layout::ProcessPerRank);
    }

    #[test]
    fn nonsense_is_refused_with_the_offending_value() {
        for bad in [
            &["-n", "0", "p"][..],
            &["-n", "2", "--threads", "--threads-per-process", "2", "p"],
            &["-n", "2", "--timeout", "-1", "p"],
            &["-n", "2", "--timeout", "soon", "p"],
            &["-n", "2"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?} was accepted");
        }
        let err = parse(&["-n", "2", "--timeout", "soon", "p"]).unwrap_err().to_string();
        assert!(err.contains("soon"), "{err}");
    }
}
