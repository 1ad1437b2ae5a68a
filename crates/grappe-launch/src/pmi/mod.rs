//! The rank-process side of bootstrapping: a small PMI client.
//!
//! A process asks its launcher who it is ([`Pmi::rank`], [`Pmi::size`]) and exchanges business
//! cards with the other processes through the launcher's key-value store: every process
//! [`put`](Pmi::put)s its own, [`fence`](Pmi::fence)s, then [`get`](Pmi::get)s the others'.
//! [`connect_from_env`] picks the flavour the launcher speaks:
//! - [`PmiKind::Simple1`]: PMI-1 "simple" over `PMI_FD` (`grappe run`, MPICH's hydra `mpiexec`);
//! - [`PmiKind::Pmi2`]: the PMI-2 wire over `PMI_FD` (Slurm's `srun --mpi=pmi2`);
//! - [`PmiKind::Singleton`]: no launcher, one process with a local store.

mod error;
mod pmi2;
mod simple;
mod singleton;
mod transport;

pub use error::PmiError;
pub use pmi2::Pmi2Client;
pub use simple::{MAX_REQUEST_LINE, SimpleClient};
pub use singleton::Singleton;
pub use transport::Connection;

use crate::env;
use crate::wire::{TextProblem, check_token};
use std::fmt;

/// A connection to the job's process manager.
pub trait Pmi: Send {
    /// This process's rank in the job (the PMI rank, one per process).
    fn rank(&self) -> usize;
    /// Number of processes in the job.
    fn size(&self) -> usize;
    /// Unique id of the job (kvsname or jobid), made safe for file names.
    fn job_id(&self) -> &str;
    /// Publishes `key=value`; visible to the other processes after the next [`Pmi::fence`].
    fn put(&mut self, key: &str, value: &str) -> Result<(), PmiError>;
    /// Commit and barrier: afterwards every put of every process before its fence is visible.
    fn fence(&mut self) -> Result<(), PmiError>;
    /// The value some process put under `key`; [`PmiError::KeyNotFound`] names a missing key.
    fn get(&mut self, key: &str) -> Result<String, PmiError>;
    /// Waits until every process of the job has called `barrier`.
    fn barrier(&mut self) -> Result<(), PmiError>;
    /// Tells the launcher this process is done with PMI; required before a clean exit.
    fn finalize(&mut self) -> Result<(), PmiError>;
    /// Asks the launcher to stop the whole job with exit `code`. The caller should then exit.
    fn abort(&mut self, code: i32, msg: &str) -> Result<(), PmiError>;
    /// Which wire protocol this connection speaks.
    fn kind(&self) -> PmiKind;
}

/// The PMI flavours grappe speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PmiKind {
    /// No launcher: rank 0 of 1, with an in-memory key-value store.
    Singleton,
    /// PMI-1 "simple" wire protocol (hydra, `grappe run`).
    Simple1,
    /// PMI-2 wire protocol (Slurm `srun --mpi=pmi2`).
    Pmi2,
}

impl fmt::Display for PmiKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PmiKind::Singleton => "singleton",
            PmiKind::Simple1 => "pmi1",
            PmiKind::Pmi2 => "pmi2",
        })
    }
}

/// Connects to the launcher described by the environment (see [`crate::env`]).
pub fn connect_from_env() -> Result<Box<dyn Pmi>, PmiError> {
    match select_kind(env::var)? {
        PmiKind::Singleton => Ok(Box::new(Singleton::new(singleton_job_id()?))),
        PmiKind::Simple1 => {
            let rank = rank_from_env()?;
            let size = env::parse_usize(env::PMI_SIZE, &env::required_var(env::PMI_SIZE)?)?;
            if rank >= size {
                return Err(env::BadEnv {
                    var: env::PMI_RANK,
                    value: rank.to_string(),
                    reason: "is not below PMI_SIZE",
                }
                .into());
            }
            let connection = Connection::take_inherited()?;
            Ok(Box::new(SimpleClient::connect(connection, rank, size)?))
        }
        PmiKind::Pmi2 => {
            let rank = rank_from_env()?;
            let jobid = env::var(env::PMI_JOBID)?.unwrap_or_default();
            let connection = Connection::take_inherited()?;
            Ok(Box::new(Pmi2Client::connect(connection, rank, &jobid)?))
        }
    }
}

/// Chooses the PMI flavour from environment lookups (`lookup` returns `None` when unset),
/// following [`env::GRAPPE_PMI`] or else [`env::PMI_VERSION_RULES`].
pub fn select_kind(
    lookup: impl Fn(&'static str) -> Result<Option<String>, env::BadEnv>,
) -> Result<PmiKind, env::BadEnv> {
    let has_fd = lookup(env::PMI_FD)?.is_some();
    if let Some(choice) = lookup(env::GRAPPE_PMI)? {
        let kind = match choice.as_str() {
            "1" | "simple" | "pmi1" => PmiKind::Simple1,
            "2" | "pmi2" => PmiKind::Pmi2,
            "singleton" => return Ok(PmiKind::Singleton),
            _ => return Err(bad_choice(choice, "is not one of 1, 2, singleton")),
        };
        return match has_fd {
            true => Ok(kind),
            false => Err(bad_choice(choice, "needs PMI_FD, which no launcher set")),
        };
    }
    if !has_fd {
        return Ok(PmiKind::Singleton);
    }
    if lookup(env::GRAPPE_LAUNCHER)?.as_deref() == Some(env::GRAPPE_LAUNCHER_NAME) {
        return Ok(PmiKind::Simple1);
    }
    for slurm_var in [env::PMI_JOBID, env::SLURM_STEP_ID, env::SLURM_JOB_ID] {
        if lookup(slurm_var)?.is_some() {
            return Ok(PmiKind::Pmi2);
        }
    }
    Ok(PmiKind::Simple1)
}

fn bad_choice(value: String, reason: &'static str) -> env::BadEnv {
    env::BadEnv { var: env::GRAPPE_PMI, value, reason }
}

fn rank_from_env() -> Result<usize, env::BadEnv> {
    env::parse_usize(env::PMI_RANK, &env::required_var(env::PMI_RANK)?)
}

fn singleton_job_id() -> Result<String, PmiError> {
    Ok(match env::var(env::GRAPPE_JOB_ID)? {
        Some(id) => file_safe(&id),
        None => crate::ids::new_job_id("singleton"),
    })
}

/// Longest key and value that `put` accepts.
///
/// Servers advertise `keylen_max=64` and `vallen_max=1024` (hydra, Slurm), counting the C string
/// terminator as MPICH does: hydra was seen storing a 1025-byte value as its first 1023 bytes.
/// So the usable lengths are one less, and a server that advertises more is still held to these,
/// so that a program that works under `grappe run` also works under hydra and Slurm. PMI-1 also
/// limits a whole request line ([`MAX_REQUEST_LINE`]), which leaves a value about 900
/// bytes next to a long key; the [`PmiError::InvalidValue`] then gives the exact maximum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub key_len: usize,
    pub value_len: usize,
}

impl Limits {
    /// The portable limits: 63-byte keys, 1023-byte values.
    pub const PORTABLE: Limits = Limits { key_len: 63, value_len: 1023 };

    /// The portable limits, lowered to what a server advertising these maxima can store.
    pub fn from_server_maxima(keylen_max: i64, vallen_max: i64) -> Limits {
        let usable = |advertised: i64, portable: usize| {
            usize::try_from(advertised.saturating_sub(1)).map_or(0, |n| n.min(portable))
        };
        Limits {
            key_len: usable(keylen_max, Self::PORTABLE.key_len),
            value_len: usable(vallen_max, Self::PORTABLE.value_len),
        }
    }

    /// Checks a key for `put` and `get`: not empty, not too long, no space, `=`, `;` or control.
    pub fn check_key(&self, key: &str) -> Result<(), PmiError> {
        let problem = check_token(key, true).err().or_else(|| too_long(key, self.key_len));
        match problem {
            Some(problem) => Err(PmiError::InvalidKey { key: crate::wire::excerpt(key), problem }),
            None => Ok(()),
        }
    }

    /// Checks a value for `put`: not too long, no space, `=`, `;` or control character.
    pub fn check_value(&self, key: &str, value: &str) -> Result<(), PmiError> {
        let problem =
            check_token(value, false).err().or_else(|| equals_sign(value)).or_else(|| too_long(value, self.value_len));
        match problem {
            Some(problem) => Err(PmiError::InvalidValue { key: key.to_owned(), problem }),
            None => Ok(()),
        }
    }
}

fn too_long(text: &str, max: usize) -> Option<TextProblem> {
    (text.len() > max).then_some(TextProblem::TooLong { len: text.len(), max })
}

fn equals_sign(value: &str) -> Option<TextProblem> {
    value.find('=').map(|at| TextProblem::Forbidden { ch: '=', at })
}

/// `id` with every character outside `[A-Za-z0-9._-]` replaced by `_`, so it fits a file name.
pub fn file_safe(id: &str) -> String {
    let safe: String = id
        .chars()
        .map(|ch| match ch {
            'A'..='Z' | 'a'..='z' | '0'..='9' | '.' | '-' | '_' => ch,
            _ => '_',
        })
        .collect();
    match safe.trim_start_matches('.') {
        "" => "job".to_owned(),
        trimmed => trimmed.to_owned(),
    }
}

/// Text for a PMI abort message: framing characters become `_`, at most 200 bytes kept.
pub(crate) fn sanitize_message(message: &str) -> String {
    let mut text: String = message
        .chars()
        .map(|ch| match ch {
            ' ' | '=' | ';' => '_',
            ch if ch.is_control() => '_',
            ch => ch,
        })
        .collect();
    if text.len() > 200 {
        let cut = (0..=200).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
        text.truncate(cut);
    }
    text
}

#[cfg(test)]
mod tests;
