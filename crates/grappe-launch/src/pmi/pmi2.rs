//! PMI-2 client, as served by Slurm's `srun --mpi=pmi2` (checked against Slurm 22.05).
//!
//! Conversation: the PMI-1 line `cmd=init pmi_version=2 pmi_subversion=0` and its PMI-1 reply
//! (Slurm reads at most 64 bytes for it, so nothing may be sent before the reply arrives), then
//! framed messages: `fullinit` (gives rank and size), `job-getid`, `kvs-put`, `kvs-fence`,
//! `kvs-get` (with `jobid` and `srcid=-1`), `finalize`, and `abort` (no reply). PMI-2 has no
//! barrier; a fence without puts is one.

use super::{Limits, Pmi, PmiError, PmiKind, file_safe, sanitize_message};
use crate::pmi::transport::Connection;
use crate::wire::WireMessage;

/// A PMI-2 connection.
#[derive(Debug)]
pub struct Pmi2Client {
    connection: Connection,
    rank: usize,
    size: usize,
    jobid: String,
    job_id: String,
    finalized: bool,
}

impl Pmi2Client {
    /// Performs the PMI-2 handshake for process `rank`; `pmi_jobid` is `PMI_JOBID` (may be empty).
    pub fn connect(mut connection: Connection, rank: usize, pmi_jobid: &str) -> Result<Self, PmiError> {
        negotiate_version(&mut connection)?;
        let mut client =
            Pmi2Client { connection, rank, size: 0, jobid: String::new(), job_id: String::new(), finalized: false };
        let fullinit =
            WireMessage::new("fullinit").with("pmijobid", pmi_jobid).with("pmirank", rank).with("threaded", "FALSE");
        let reply = client.request(fullinit, "fullinit-response", "fullinit")?;
        client.rank = reply_usize(&reply, "rank", "fullinit")?;
        client.size = reply_usize(&reply, "size", "fullinit")?;
        if client.rank >= client.size {
            return Err(PmiError::Protocol {
                expected: "rank below size in fullinit-response".to_owned(),
                got: reply.to_string(),
            });
        }
        let reply = client.request(WireMessage::new("job-getid"), "job-getid-response", "job-getid")?;
        client.jobid = reply.require("jobid").map_err(PmiError::malformed("job-getid"))?.to_owned();
        client.job_id = file_safe(&client.jobid);
        Ok(client)
    }

    fn request(&mut self, message: WireMessage, expected: &str, during: &'static str) -> Result<WireMessage, PmiError> {
        if self.finalized {
            return Err(PmiError::Finalized { operation: during });
        }
        let command = message.command.clone();
        self.connection.send_frame(&message, during)?;
        let reply = self.connection.recv_frame(during)?;
        if reply.command != expected {
            return Err(PmiError::Protocol {
                expected: format!("`cmd={expected}` in reply to `cmd={command}`"),
                got: reply.to_string(),
            });
        }
        match reply.rc().map_err(PmiError::malformed(during))? {
            0 => Ok(reply),
            rc => Err(PmiError::Refused { command, rc, message: reply.get("errmsg").map(str::to_owned) }),
        }
    }
}

/// The PMI-1 style version handshake that precedes PMI-2 framing.
fn negotiate_version(connection: &mut Connection) -> Result<(), PmiError> {
    let init = WireMessage::new("init").with("pmi_version", 2).with("pmi_subversion", 0);
    connection.send_line(&init, "init")?;
    let reply = connection.recv_line("init")?;
    let version = reply.get("pmi_version");
    if reply.command != "response_to_init" || version != Some("2") {
        return Err(PmiError::Protocol {
            expected: "`cmd=response_to_init pmi_version=2`".to_owned(),
            got: reply.to_string(),
        });
    }
    match reply.rc().map_err(PmiError::malformed("init"))? {
        0 => Ok(()),
        rc => Err(PmiError::Refused { command: "init".to_owned(), rc, message: None }),
    }
}

fn reply_usize(reply: &WireMessage, key: &str, during: &'static str) -> Result<usize, PmiError> {
    let value = reply.require_int(key).map_err(PmiError::malformed(during))?;
    usize::try_from(value)
        .map_err(|_| PmiError::Protocol { expected: format!("a non-negative {key}"), got: reply.to_string() })
}

impl Pmi for Pmi2Client {
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
        Limits::PORTABLE.check_key(key)?;
        Limits::PORTABLE.check_value(key, value)?;
        let message = WireMessage::new("kvs-put").with("key", key).with("value", value);
        self.request(message, "kvs-put-response", "kvs-put").map(drop)
    }

    fn fence(&mut self) -> Result<(), PmiError> {
        self.request(WireMessage::new("kvs-fence"), "kvs-fence-response", "kvs-fence").map(drop)
    }

    fn get(&mut self, key: &str) -> Result<String, PmiError> {
        Limits::PORTABLE.check_key(key)?;
        let message = WireMessage::new("kvs-get").with("jobid", &self.jobid).with("srcid", -1).with("key", key);
        let reply = self.request(message, "kvs-get-response", "kvs-get")?;
        match (reply.get("found"), reply.get("value")) {
            (Some(found), Some(value)) if found.eq_ignore_ascii_case("TRUE") => Ok(value.to_owned()),
            (Some(found), _) if found.eq_ignore_ascii_case("FALSE") => {
                Err(PmiError::KeyNotFound { key: key.to_owned(), server_message: None })
            }
            _ => Err(PmiError::Protocol {
                expected: "`found=TRUE;value=...` or `found=FALSE` in kvs-get-response".to_owned(),
                got: reply.to_string(),
            }),
        }
    }

    fn barrier(&mut self) -> Result<(), PmiError> {
        self.fence()
    }

    fn finalize(&mut self) -> Result<(), PmiError> {
        self.request(WireMessage::new("finalize"), "finalize-response", "finalize")?;
        self.finalized = true;
        Ok(())
    }

    fn abort(&mut self, code: i32, msg: &str) -> Result<(), PmiError> {
        // PMI-2 carries no exit code: Slurm kills the step. Put the code in the message.
        let text = sanitize_message(&format!("exit code {code}: {msg}"));
        let message = WireMessage::new("abort").with("isworld", "TRUE").with("msg", text);
        self.connection.send_frame(&message, "abort")
    }

    fn kind(&self) -> PmiKind {
        PmiKind::Pmi2
    }
}
