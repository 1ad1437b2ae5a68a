//! The launcher side of PMI-1 "simple": one key-value space per job, a barrier, finalize and
//! abort, served to each child process over its end of a socketpair.
//!
//! It speaks what MPICH's hydra speaks (see [`crate::wire::simple`]), so MPICH programs as well as
//! grappe's own client work under `grappe run`. One thread per process reads that process's
//! requests; the threads share the store and the barrier under one mutex. The server never
//! decides the fate of the job: it reports aborts and protocol violations through the `notify`
//! callback, and [`PmiServer::shutdown`] releases every thread (including those waiting in a
//! barrier that a dead process will never join).

mod session;

use std::collections::HashMap;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

/// What the server needs to know about the job.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Name of the job's key-value space (`grappe run` uses the job id).
    pub kvsname: String,
    /// Number of processes; process `p` is served on `connections[p]`.
    pub processes: usize,
    /// MPICH's `PMI_process_mapping` (which processes share a node); `None`: all on one.
    pub process_mapping: Option<String>,
}

/// Something a process did that the launcher must act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerEvent {
    /// Process `process` sent `cmd=abort`.
    Abort { process: usize, code: i32, message: String },
    /// Process `process` sent something that is not valid PMI-1; the server stopped serving it.
    ProtocolError { process: usize, detail: String },
}

/// Callback through which the server reports [`ServerEvent`]s.
pub type Notify = Box<dyn Fn(ServerEvent) + Send + Sync>;

/// A running PMI-1 server.
pub struct PmiServer {
    shared: Arc<Shared>,
    sockets: Vec<UnixStream>,
    threads: Vec<JoinHandle<()>>,
}

struct Shared {
    config: ServerConfig,
    state: Mutex<State>,
    barrier_released: Condvar,
    notify: Notify,
}

struct State {
    store: HashMap<String, String>,
    /// Processes waiting in the current barrier.
    arrived: usize,
    /// Number of barriers completed; a waiter leaves when it changes.
    generation: u64,
    /// Processes that sent at least one request: a process that never
    /// did may not be a PMI program at all.
    spoke: Vec<bool>,
    finalized: Vec<bool>,
    stopping: bool,
}

impl PmiServer {
    /// Starts serving process `p` on `connections[p]` (one connection per process).
    pub fn start(config: ServerConfig, connections: Vec<UnixStream>, notify: Notify) -> std::io::Result<PmiServer> {
        if connections.len() != config.processes {
            let detail =
                format!("{} connections for {} processes: need one per process", connections.len(), config.processes);
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, detail));
        }
        let state = State {
            store: HashMap::new(),
            arrived: 0,
            generation: 0,
            spoke: vec![false; config.processes],
            finalized: vec![false; config.processes],
            stopping: false,
        };
        let shared = Arc::new(Shared { config, state: Mutex::new(state), barrier_released: Condvar::new(), notify });
        let mut sockets = Vec::with_capacity(connections.len());
        let mut threads = Vec::with_capacity(connections.len());
        for (process, stream) in connections.into_iter().enumerate() {
            sockets.push(stream.try_clone()?);
            let shared = Arc::clone(&shared);
            let thread = std::thread::Builder::new()
                .name(format!("grappe-pmi-{process}"))
                .spawn(move || session::serve(shared, process, stream))?;
            threads.push(thread);
        }
        Ok(PmiServer { shared, sockets, threads })
    }

    /// Whether process `process` sent any request at all.
    pub fn has_spoken(&self, process: usize) -> bool {
        self.shared.lock().spoke.get(process).copied().unwrap_or(false)
    }

    /// Whether process `process` sent `cmd=finalize` (and was answered).
    pub fn has_finalized(&self, process: usize) -> bool {
        self.shared.lock().finalized.get(process).copied().unwrap_or(false)
    }

    /// The value a process put under `key`, if any.
    pub fn value(&self, key: &str) -> Option<String> {
        self.shared.lock().store.get(key).cloned()
    }

    /// Stops serving: releases barrier waiters, closes every connection, joins the threads.
    pub fn shutdown(self) {
        self.shared.lock().stopping = true;
        self.shared.barrier_released.notify_all();
        for socket in &self.sockets {
            // The peer may already be gone; there is nothing to do about a failed shutdown.
            let _ = socket.shutdown(std::net::Shutdown::Both);
        }
        for thread in self.threads {
            // A panicking session thread has already lost its connection; the job goes on.
            let _ = thread.join();
        }
    }
}

impl std::fmt::Debug for PmiServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PmiServer")
            .field("config", &self.shared.config)
            .field("connections", &self.sockets.len())
            .finish_non_exhaustive()
    }
}

impl Shared {
    /// The state; a poisoned lock is still usable because every update is a single assignment.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests;
