//! PMI-1 "simple" client, as served by MPICH's hydra and by `grappe run`.
//!
//! Conversation (one request, one reply, except `abort` which has no reply):
//! `init` → `response_to_init`, `get_maxes` → `maxes`, `get_my_kvsname` → `my_kvsname`, then
//! `put` → `put_result`, `barrier_in` → `barrier_out`, `get` → `get_result`,
//! `finalize` → `finalize_ack`. Rank and size come from `PMI_RANK` and `PMI_SIZE`.

use super::{Limits, Pmi, PmiError, PmiKind, file_safe, sanitize_message};
use crate::pmi::transport::Connection;
use crate::wire::{TextProblem, WireMessage, simple};

/// Longest request line sent, newline included. MPICH's simple PMI client never writes more
/// (`PMIU_MAXLINE`), and Slurm's PMI-1 mode reads no more: a longer put was seen to be cut and
/// lost there. Hydra and `grappe run` accept more, but a program must work under all of them.
pub const MAX_REQUEST_LINE: usize = 1024;

/// A PMI-1 connection.
#[derive(Debug)]
pub struct SimpleClient {
    connection: Connection,
    rank: usize,
    size: usize,
    kvsname: String,
    job_id: String,
    limits: Limits,
    finalized: bool,
}

impl SimpleClient {
    /// Performs the PMI-1 handshake on `connection` for process `rank` of `size`.
    pub fn connect(connection: Connection, rank: usize, size: usize) -> Result<Self, PmiError> {
        let mut client = SimpleClient {
            connection,
            rank,
            size,
            kvsname: String::new(),
            job_id: String::new(),
            limits: Limits::PORTABLE,
            finalized: false,
        };
        let init = WireMessage::new("init").with("pmi_version", 1).with("pmi_subversion", 1);
        let reply = client.request(init, "response_to_init", "init")?;
        let version = reply.require_int("pmi_version").map_err(PmiError::malformed("init"))?;
        if version != 1 {
            return Err(PmiError::Protocol {
                expected: "pmi_version=1 in response_to_init".to_owned(),
                got: reply.to_string(),
            });
        }
        let maxes = client.request(WireMessage::new("get_maxes"), "maxes", "get_maxes")?;
        client.limits = limits_from(&maxes)?;
        let reply = client.request(WireMessage::new("get_my_kvsname"), "my_kvsname", "init")?;
        client.kvsname = reply.require("kvsname").map_err(PmiError::malformed("init"))?.to_owned();
        client.job_id = file_safe(&client.kvsname);
        Ok(client)
    }

    /// The limits this server imposes on keys and values.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Sends `message`, reads one reply, and checks that it is `expected` with `rc` 0.
    fn request(&mut self, message: WireMessage, expected: &str, during: &'static str) -> Result<WireMessage, PmiError> {
        if self.finalized {
            return Err(PmiError::Finalized { operation: during });
        }
        let command = message.command.clone();
        self.connection.send_line(&message, during)?;
        let reply = self.connection.recv_line(during)?;
        if reply.command != expected {
            return Err(PmiError::Protocol {
                expected: format!("`cmd={expected}` in reply to `cmd={command}`"),
                got: reply.to_string(),
            });
        }
        check_rc(&command, &reply, during)?;
        Ok(reply)
    }
}

/// The `rc` of `reply` must be 0; otherwise a [`PmiError::Refused`] with the server's `msg`.
fn check_rc(command: &str, reply: &WireMessage, during: &'static str) -> Result<(), PmiError> {
    match reply.rc().map_err(PmiError::malformed(during))? {
        0 => Ok(()),
        rc => Err(PmiError::Refused { command: command.to_owned(), rc, message: reply.get("msg").map(str::to_owned) }),
    }
}

/// A put line must fit in [`MAX_REQUEST_LINE`]: the value's share of it is what the kvsname and
/// the key leave.
fn check_line_length(message: &WireMessage, key: &str, value: &str) -> Result<(), PmiError> {
    let line = simple::encode_line(message).map_err(PmiError::malformed("put"))?;
    match line.len().checked_sub(MAX_REQUEST_LINE) {
        None | Some(0) => Ok(()),
        Some(excess) => Err(PmiError::InvalidValue {
            key: key.to_owned(),
            problem: TextProblem::TooLong { len: value.len(), max: value.len().saturating_sub(excess) },
        }),
    }
}

fn limits_from(maxes: &WireMessage) -> Result<Limits, PmiError> {
    let during = "get_maxes";
    let keylen = maxes.require_int("keylen_max").map_err(PmiError::malformed(during))?;
    let vallen = maxes.require_int("vallen_max").map_err(PmiError::malformed(during))?;
    Ok(Limits::from_server_maxima(keylen, vallen))
}

impl Pmi for SimpleClient {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn job_id(&self) -> &str {
        &self.job_id
    }

    fn put(&mut self, key: &str, value: &str) -> Result<(), PmiError> {
        self.limits.check_key(key)?;
        self.limits.check_value(key, value)?;
        let message = WireMessage::new("put").with("kvsname", &self.kvsname).with("key", key).with("value", value);
        check_line_length(&message, key, value)?;
        self.request(message, "put_result", "put").map(drop)
    }

    fn fence(&mut self) -> Result<(), PmiError> {
        // PMI-1 has no separate commit: hydra publishes the puts it cached at barrier_in.
        self.barrier()
    }

    fn get(&mut self, key: &str) -> Result<String, PmiError> {
        self.limits.check_key(key)?;
        if self.finalized {
            return Err(PmiError::Finalized { operation: "get" });
        }
        let message = WireMessage::new("get").with("kvsname", &self.kvsname).with("key", key);
        self.connection.send_line(&message, "get")?;
        let reply = self.connection.recv_line("get")?;
        if reply.command != "get_result" {
            return Err(PmiError::Protocol {
                expected: "`cmd=get_result` in reply to `cmd=get`".to_owned(),
                got: reply.to_string(),
            });
        }
        match reply.rc().map_err(PmiError::malformed("get"))? {
            0 => Ok(reply.require("value").map_err(PmiError::malformed("get"))?.to_owned()),
            _ => {
                Err(PmiError::KeyNotFound { key: key.to_owned(), server_message: reply.get("msg").map(str::to_owned) })
            }
        }
    }

    fn barrier(&mut self) -> Result<(), PmiError> {
        self.request(WireMessage::new("barrier_in"), "barrier_out", "barrier").map(drop)
    }

    fn finalize(&mut self) -> Result<(), PmiError> {
        self.request(WireMessage::new("finalize"), "finalize_ack", "finalize")?;
        self.finalized = true;
        Ok(())
    }

    fn abort(&mut self, code: i32, msg: &str) -> Result<(), PmiError> {
        let message = WireMessage::new("abort").with("exitcode", code).with("error_msg", sanitize_message(msg));
        self.connection.send_line(&message, "abort")
    }

    fn kind(&self) -> PmiKind {
        PmiKind::Simple1
    }
}
