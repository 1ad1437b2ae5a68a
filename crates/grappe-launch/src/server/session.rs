//! Serving one process: read a request line, act, write the reply, until the peer hangs up.

use super::{ServerEvent, Shared};
use crate::wire::{WireMessage, check_token_in, simple};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, PoisonError};

/// Why a session ended early.
enum Stop {
    /// The peer closed the connection, or the server is shutting down.
    Closed,
    /// The peer broke the protocol; the detail completes "process p ...".
    Violation(String),
}

struct Session {
    shared: Arc<Shared>,
    process: usize,
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

/// Serves process `process` on `stream` until it disconnects or the server shuts down.
pub(super) fn serve(shared: Arc<Shared>, process: usize, stream: UnixStream) {
    let reader = match stream.try_clone() {
        Ok(clone) => BufReader::new(clone),
        Err(e) => return violation(&shared, process, format!("could not be served: {e}")),
    };
    let mut session = Session { shared, process, reader, writer: stream };
    if let Err(Stop::Violation(detail)) = session.run() {
        // Hang up, so that the process's pending PMI call fails instead of waiting forever.
        let _ = session.writer.shutdown(std::net::Shutdown::Both);
        violation(&session.shared, process, detail);
    }
}

fn violation(shared: &Shared, process: usize, detail: String) {
    (shared.notify)(ServerEvent::ProtocolError { process, detail });
}

impl Session {
    fn run(&mut self) -> Result<(), Stop> {
        while let Some(request) = self.read_request()? {
            self.shared.lock().spoke[self.process] = true;
            if let Some(reply) = self.handle(request)? {
                self.write(&reply)?;
            }
        }
        Ok(())
    }

    /// The next request, `None` at a clean end of stream.
    fn read_request(&mut self) -> Result<Option<WireMessage>, Stop> {
        let mut line = Vec::new();
        let limit = simple::MAX_LINE as u64;
        match (&mut self.reader).take(limit).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return Ok(None),
            Ok(_) => {}
        }
        if !line.ends_with(b"\n") && line.len() < simple::MAX_LINE {
            return Ok(None); // Hung up in the middle of a line: the exit status will tell why.
        }
        simple::parse_line(&line).map(Some).map_err(|e| Stop::Violation(format!("sent a malformed PMI-1 line: {e}")))
    }

    fn write(&mut self, reply: &WireMessage) -> Result<(), Stop> {
        let line = simple::encode_line(reply)
            .map_err(|e| Stop::Violation(format!("got a reply grappe cannot encode: {e}")))?;
        self.writer.write_all(line.as_bytes()).map_err(|_| Stop::Closed)
    }

    fn handle(&mut self, request: WireMessage) -> Result<Option<WireMessage>, Stop> {
        let config = &self.shared.config;
        let reply = match request.command.as_str() {
            "init" => return self.init(&request).map(Some),
            "get_maxes" => {
                WireMessage::new("maxes").with("kvsname_max", 256).with("keylen_max", 64).with("vallen_max", 1024)
            }
            "get_appnum" => WireMessage::new("appnum").with("appnum", 0),
            "get_my_kvsname" => WireMessage::new("my_kvsname").with("kvsname", &config.kvsname),
            "get_universe_size" => WireMessage::new("universe_size").with("size", config.processes),
            "put" => self.put(&request),
            "get" => self.get(&request),
            "barrier_in" => {
                self.barrier()?;
                WireMessage::new("barrier_out").with("rc", 0)
            }
            "finalize" => {
                self.shared.lock().finalized[self.process] = true;
                WireMessage::new("finalize_ack").with("rc", 0)
            }
            "abort" => {
                self.abort(&request);
                return Ok(None);
            }
            _ => {
                let detail = format!("sent the PMI-1 command `{request}`, which grappe does not serve");
                return Err(Stop::Violation(detail));
            }
        };
        Ok(Some(reply))
    }

    fn init(&self, request: &WireMessage) -> Result<WireMessage, Stop> {
        let version = request.get("pmi_version").unwrap_or("?");
        let subversion = request.get("pmi_subversion").unwrap_or("?");
        if version == "1" && matches!(subversion, "0" | "1") {
            return Ok(WireMessage::new("response_to_init")
                .with("pmi_version", 1)
                .with("pmi_subversion", 1)
                .with("rc", 0));
        }
        Err(Stop::Violation(format!(
            "asked for PMI version {version}.{subversion}, but grappe run serves PMI-1 only \
             (is GRAPPE_PMI=2 set?)"
        )))
    }

    /// An error reply `reply` with `rc=-1` and a one-token message.
    fn refuse(reply: &str, message: String) -> WireMessage {
        let message = message.replace(|ch: char| ch == ' ' || ch == ';' || ch.is_control(), "_");
        WireMessage::new(reply).with("rc", -1).with("msg", message)
    }

    fn check_kvsname(&self, request: &WireMessage) -> Result<(), String> {
        match request.get("kvsname") {
            Some(name) if name == self.shared.config.kvsname => Ok(()),
            Some(name) => Err(format!("unknown_kvsname_{name}")),
            None => Err("missing_kvsname".to_owned()),
        }
    }

    fn put(&self, request: &WireMessage) -> WireMessage {
        if let Err(message) = self.check_kvsname(request) {
            return Self::refuse("put_result", message);
        }
        let (Some(key), value) = (request.get("key"), request.get("value").unwrap_or("")) else {
            return Self::refuse("put_result", "missing_key".to_owned());
        };
        if check_token_in(key, true, ' ').is_err() || check_token_in(value, false, ' ').is_err() {
            return Self::refuse("put_result", format!("unstorable_key_or_value_for_{key}"));
        }
        self.shared.lock().store.insert(key.to_owned(), value.to_owned());
        WireMessage::new("put_result").with("rc", 0).with("msg", "success")
    }

    fn get(&self, request: &WireMessage) -> WireMessage {
        if let Err(message) = self.check_kvsname(request) {
            return Self::refuse("get_result", message);
        }
        let Some(key) = request.get("key") else {
            return Self::refuse("get_result", "missing_key".to_owned());
        };
        let value = match key {
            // MPICH asks for this to find which ranks share a node.
            "PMI_process_mapping" => Some(match &self.shared.config.process_mapping {
                Some(mapping) => mapping.clone(),
                None => format!("(vector,(0,1,{}))", self.shared.config.processes),
            }),
            _ => self.shared.lock().store.get(key).cloned(),
        };
        match value {
            Some(value) => WireMessage::new("get_result").with("rc", 0).with("msg", "success").with("value", value),
            None => Self::refuse("get_result", format!("key_{key}_not_found")).with("value", "unknown"),
        }
    }

    /// Waits until every process has entered this barrier, or the server shuts down.
    fn barrier(&self) -> Result<(), Stop> {
        let mut state = self.shared.lock();
        let generation = state.generation;
        state.arrived += 1;
        if state.arrived == self.shared.config.processes {
            state.arrived = 0;
            state.generation += 1;
            self.shared.barrier_released.notify_all();
            return Ok(());
        }
        while state.generation == generation && !state.stopping {
            state = self.shared.barrier_released.wait(state).unwrap_or_else(PoisonError::into_inner);
        }
        match state.generation == generation {
            true => Err(Stop::Closed),
            false => Ok(()),
        }
    }

    fn abort(&self, request: &WireMessage) {
        let code = request.get("exitcode").and_then(|text| text.trim().parse().ok()).unwrap_or(1);
        let message = request.get("error_msg").unwrap_or("").to_owned();
        (self.shared.notify)(ServerEvent::Abort { process: self.process, code, message });
    }
}
