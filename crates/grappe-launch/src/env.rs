//! Every environment variable that passes between a launcher and a rank process, in one place.
//!
//! A rank process learns everything about its job from these variables: which PMI server to talk
//! to, its place in the job and how many ranks it hosts as threads. `grappe run` sets all of them
//! (see [`crate::launcher`]); under MPICH's hydra or Slurm's `srun` only the `PMI_*` ones exist and
//! the `GRAPPE_*` ones take their defaults.
//!
//! | variable | set by | meaning | default when absent |
//! | --- | --- | --- | --- |
//! | [`PMI_FD`] | all launchers | fd of the inherited PMI socket | singleton (no launcher) |
//! | [`PMI_RANK`] | all launchers | PMI rank of this process | required with `PMI_FD` |
//! | [`PMI_SIZE`] | all launchers | number of processes in the job | required with `PMI_FD` |
//! | [`PMI_JOBID`] | Slurm (pmi2) | job id sent in the PMI-2 `fullinit` | empty |
//! | [`GRAPPE_PMI`] | the user | force `1`, `2` or `singleton` | detected, see [`PMI_VERSION_RULES`] |
//! | [`GRAPPE_LAUNCHER`] | `grappe run` | `grappe` when launched by grappe | not grappe |
//! | [`GRAPPE_JOB_ID`] | `grappe run` | unique, file-name safe job id | the PMI job id |
//! | [`GRAPPE_RANKS_PER_PROCESS`] | `grappe run` | thread ranks hosted by each process | 1 |
//! | [`SLURM_JOB_ID`], [`SLURM_STEP_ID`] | Slurm | tell that we run inside a Slurm step | not Slurm |

/// A variable the launcher (or the user) set to a value a rank cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("environment variable {var}={value:?} {reason}")]
pub struct BadEnv {
    /// The variable.
    pub var: &'static str,
    /// Its value (empty when it is missing).
    pub value: String,
    /// What is wrong with it, completing "VAR=value ...".
    pub reason: &'static str,
}

/// Number of the inherited file descriptor on which the PMI server listens.
///
/// Set by hydra (`mpiexec.mpich`), by Slurm's `srun --mpi=pmi2` and by `grappe run`. The process
/// owns that descriptor: the PMI client takes it over and marks it close-on-exec.
/// Absent: the process is a singleton (rank 0 of 1) with a local key-value store.
pub const PMI_FD: &str = "PMI_FD";

/// PMI rank of this process, `0..PMI_SIZE`. With thread ranks (`GRAPPE_RANKS_PER_PROCESS` = T),
/// process p hosts the grappe ranks `p*T .. p*T+T-1`. Required whenever [`PMI_FD`] is set.
pub const PMI_RANK: &str = "PMI_RANK";

/// Number of processes in the job (not the number of grappe ranks when processes host thread
/// ranks). Required whenever [`PMI_FD`] is set.
pub const PMI_SIZE: &str = "PMI_SIZE";

/// Slurm's PMI-2 job id (`<jobid>.<stepid>`), echoed back to the server in `fullinit`.
/// Absent: an empty `pmijobid` is sent (Slurm ignores its value).
pub const PMI_JOBID: &str = "PMI_JOBID";

/// User override of the PMI flavour: `1` (PMI-1 "simple", also accepted: `simple`, `pmi1`), `2`
/// (PMI-2 wire, also `pmi2`) or `singleton`. Absent or empty: detected, see
/// [`PMI_VERSION_RULES`]. Any other value is a [`BadEnv`].
pub const GRAPPE_PMI: &str = "GRAPPE_PMI";

/// How the PMI flavour is chosen when [`GRAPPE_PMI`] is not set.
pub const PMI_VERSION_RULES: &str = "no PMI_FD: singleton; GRAPPE_LAUNCHER=grappe: PMI-1; \
     PMI_JOBID, SLURM_STEP_ID or SLURM_JOB_ID set (Slurm): PMI-2; otherwise PMI-1";

/// Name of the launcher that started this process: `grappe` under `grappe run`.
///
/// `grappe run` serves PMI-1 only, so this wins over the Slurm variables that a `grappe run`
/// inside a Slurm allocation passes on to its children. Absent: another launcher (or none).
pub const GRAPPE_LAUNCHER: &str = "GRAPPE_LAUNCHER";

/// The value of [`GRAPPE_LAUNCHER`] that `grappe run` sets.
pub const GRAPPE_LAUNCHER_NAME: &str = "grappe";

/// Unique id of the job, safe in file names (`<launcher pid>-<12 hex digits>`).
///
/// The runtime names its shared-memory segments `/dev/shm/grappe-<GRAPPE_JOB_ID>*`, and
/// `grappe run` removes those that are left after the job. Under `grappe run` it is also the PMI
/// kvsname, so [`crate::pmi::Pmi::job_id`] returns the same string. Absent: use
/// [`crate::pmi::Pmi::job_id`].
pub const GRAPPE_JOB_ID: &str = "GRAPPE_JOB_ID";

/// Number of grappe ranks each process hosts as threads (`--threads-per-process T`, or N for
/// `--threads`). A positive integer; absent or empty: 1 (one rank per process), which is what
/// processes started by hydra or Slurm get.
pub const GRAPPE_RANKS_PER_PROCESS: &str = "GRAPPE_RANKS_PER_PROCESS";

/// The key under which each process of a job leaves the process manager, at its PMI finalize, the
/// run time of its slowest rank: `grappe-run-time-ns-P` for process P, in nanoseconds from the end
/// of the rank's start-up to the start of its finalize. `grappe run --report-time` prints the
/// job's (the largest).
pub const RUN_TIME_KEY: &str = "grappe-run-time-ns-";

/// Set by Slurm in every task: the allocation's job id. Used only to detect Slurm.
pub const SLURM_JOB_ID: &str = "SLURM_JOB_ID";

/// Set by Slurm in every task of a job step. Used only to detect Slurm.
pub const SLURM_STEP_ID: &str = "SLURM_STEP_ID";

/// Number of grappe ranks this process hosts as threads: [`GRAPPE_RANKS_PER_PROCESS`], 1 when
/// absent. A value that is not a positive integer is an error naming the variable.
pub fn ranks_per_process() -> Result<usize, BadEnv> {
    match var(GRAPPE_RANKS_PER_PROCESS)? {
        None => Ok(1),
        Some(text) => parse_positive(GRAPPE_RANKS_PER_PROCESS, &text),
    }
}

/// The value of `name`, `None` when it is unset or empty. A value that is not UTF-8 is an error.
pub(crate) fn var(name: &'static str) -> Result<Option<String>, BadEnv> {
    match std::env::var(name) {
        Ok(value) if value.is_empty() => Ok(None),
        Ok(value) => Ok(Some(value)),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(raw)) => {
            Err(BadEnv { var: name, value: raw.to_string_lossy().into_owned(), reason: "is not valid UTF-8" })
        }
    }
}

/// The value of `name`, which must be set.
pub(crate) fn required_var(name: &'static str) -> Result<String, BadEnv> {
    var(name)?.ok_or(BadEnv { var: name, value: String::new(), reason: "must be set when PMI_FD is set" })
}

/// `text` as an unsigned integer, or an error naming `name`.
pub(crate) fn parse_usize(name: &'static str, text: &str) -> Result<usize, BadEnv> {
    text.trim().parse().map_err(|_| BadEnv { var: name, value: text.to_owned(), reason: "is not an unsigned integer" })
}

fn parse_positive(name: &'static str, text: &str) -> Result<usize, BadEnv> {
    match parse_usize(name, text)? {
        0 => Err(BadEnv { var: name, value: text.to_owned(), reason: "must be at least 1" }),
        n => Ok(n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positive_counts_parse_and_garbage_names_the_variable() {
        assert_eq!(parse_positive(GRAPPE_RANKS_PER_PROCESS, "4").ok(), Some(4));
        assert_eq!(parse_positive(GRAPPE_RANKS_PER_PROCESS, " 2 ").ok(), Some(2));
        for bad in ["0", "-1", "two", "1.5", "99999999999999999999999"] {
            let err = parse_positive(GRAPPE_RANKS_PER_PROCESS, bad).unwrap_err();
            let text = err.to_string();
            assert!(text.contains(GRAPPE_RANKS_PER_PROCESS), "{text}");
            assert!(text.contains(bad), "{text}");
        }
    }
}
