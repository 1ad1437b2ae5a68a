//! The PMI of a process started without a launcher: rank 0 of 1, a local key-value store.

use super::{Limits, Pmi, PmiError, PmiKind};
use std::collections::HashMap;

/// A job of one process.
#[derive(Debug)]
pub struct Singleton {
    job_id: String,
    store: HashMap<String, String>,
    finalized: bool,
}

impl Singleton {
    /// A singleton job named `job_id`.
    pub fn new(job_id: String) -> Singleton {
        Singleton { job_id, store: HashMap::new(), finalized: false }
    }

    fn check_open(&self, operation: &'static str) -> Result<(), PmiError> {
        match self.finalized {
            true => Err(PmiError::Finalized { operation }),
            false => Ok(()),
        }
    }
}

impl Pmi for Singleton {
    fn rank(&self) -> usize {
        0
    }

    fn size(&self) -> usize {
        1
    }

    fn job_id(&self) -> &str {
        &self.job_id
    }

    fn put(&mut self, key: &str, value: &str) -> Result<(), PmiError> {
        self.check_open("put")?;
        Limits::PORTABLE.check_key(key)?;
        Limits::PORTABLE.check_value(key, value)?;
        self.store.insert(key.to_owned(), value.to_owned());
        Ok(())
    }

    fn fence(&mut self) -> Result<(), PmiError> {
        self.check_open("fence")
    }

    fn get(&mut self, key: &str) -> Result<String, PmiError> {
        self.check_open("get")?;
        Limits::PORTABLE.check_key(key)?;
        self.store.get(key).cloned().ok_or_else(|| PmiError::KeyNotFound { key: key.to_owned(), server_message: None })
    }

    fn barrier(&mut self) -> Result<(), PmiError> {
        self.check_open("barrier")
    }

    fn finalize(&mut self) -> Result<(), PmiError> {
        self.check_open("finalize")?;
        self.finalized = true;
        Ok(())
    }

    fn abort(&mut self, _code: i32, _msg: &str) -> Result<(), PmiError> {
        // Nobody else to stop: the caller exits with the code.
        Ok(())
    }

    fn kind(&self) -> PmiKind {
        PmiKind::Singleton
    }
}
