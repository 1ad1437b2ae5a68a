//! The client of a checkpoint server: what ranks and the launcher use.

use std::fs::{self, File};
use std::io::{BufReader, BufWriter, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::Path;
use std::time::Duration;

use crate::error::{FtError, Result};
use crate::settings::FtSettings;
use crate::wire::{Conn, NONCE_LEN, Request, SERVER_MAGIC, proof, push_text};

pub use crate::wire::WaveListing as WaveInfo;

/// How long a client waits for a server by default: to connect, and for
/// each read or write (the server fsyncs an image before it acknowledges
/// it, so a large image on a slow disk needs some seconds).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// A connection to one checkpoint server, authenticated for one job.
pub struct CheckpointClient {
    conn: Conn<TcpStream>,
}

impl CheckpointClient {
    /// Connects to `addr` and proves the job's secret, waiting
    /// [`DEFAULT_TIMEOUT`] at most for each step.
    pub fn connect(addr: &str, job: &str, secret: &[u8]) -> Result<CheckpointClient> {
        CheckpointClient::connect_within(addr, job, secret, DEFAULT_TIMEOUT)
    }

    /// Connects to one of the job's servers, within the job's time limit.
    pub fn for_job(settings: &FtSettings, server: &str) -> Result<CheckpointClient> {
        CheckpointClient::connect_within(server, &settings.name, &settings.secret, settings.server_timeout)
    }

    /// Connects to `addr` and proves the job's secret. Every later call
    /// waits at most `limit` for each read or write: a server that stops
    /// answering (stopped, hung, cut off) is an [`FtError::Silent`] naming
    /// it, never a hang.
    pub fn connect_within(addr: &str, job: &str, secret: &[u8], limit: Duration) -> Result<CheckpointClient> {
        let name = format!("checkpoint server {addr}");
        let stream = connect_stream(addr, limit, &name)?;
        let _ = stream.set_nodelay(true);
        let limited = stream.set_read_timeout(Some(limit)).and_then(|()| stream.set_write_timeout(Some(limit)));
        limited.map_err(|e| FtError::Net { what: format!("setting the time limit of {name}"), source: e })?;
        let mut conn = Conn::new(stream, name).with_timeout(limit);
        let mut magic = [0u8; 8];
        for byte in magic.iter_mut() {
            *byte = conn.read_u8("the server's greeting")?;
        }
        if &magic != SERVER_MAGIC {
            return Err(conn.protocol(format!("the greeting \"GRCKSRV1\", found {magic:?}")));
        }
        let mut nonce = [0u8; NONCE_LEN];
        for byte in nonce.iter_mut() {
            *byte = conn.read_u8("the server's challenge")?;
        }
        let mut hello = Vec::new();
        push_text(&mut hello, job);
        hello.extend_from_slice(&proof(secret, &nonce, job));
        conn.send_raw(&hello)?;
        conn.read_status()?;
        Ok(CheckpointClient { conn })
    }

    /// Stores the image `source` gives as (wave, rank); returns its size
    /// once the server has it on disk.
    pub fn put(&mut self, wave: u64, rank: u32, source: &mut dyn Read) -> Result<u64> {
        self.conn.send_request(Request::Put { wave, rank })?;
        let (total, _) = self.conn.send_stream(source, &format!("the image of rank {rank}"))?;
        self.conn.read_status()?;
        Ok(total)
    }

    /// Stores a file.
    pub fn put_file(&mut self, wave: u64, rank: u32, path: &Path) -> Result<u64> {
        let file = File::open(path).map_err(|e| FtError::Disk { path: path.to_path_buf(), source: e })?;
        self.put(wave, rank, &mut BufReader::with_capacity(1 << 20, file))
    }

    /// Fetches (wave, rank) into `sink`; its size. On an error what went
    /// into `sink` must be dropped.
    pub fn get(&mut self, wave: u64, rank: u32, sink: &mut dyn Write) -> Result<u64> {
        self.conn.send_request(Request::Get { wave, rank })?;
        self.conn.read_status()?;
        let end = self.conn.recv_stream(sink)?;
        self.conn.read_status()?;
        match end.sink_error {
            Some(e) => Err(FtError::Net { what: format!("storing the image of rank {rank}, wave {wave}"), source: e }),
            None => Ok(end.total),
        }
    }

    /// Fetches (wave, rank) into a file, which exists only if the whole
    /// image arrived intact.
    pub fn get_file(&mut self, wave: u64, rank: u32, path: &Path) -> Result<u64> {
        let partial = path.with_extension("partial");
        let disk = |e| FtError::Disk { path: partial.clone(), source: e };
        let file = File::create(&partial).map_err(disk)?;
        let mut sink = BufWriter::with_capacity(1 << 20, file);
        let got = self.get(wave, rank, &mut sink).and_then(|n| {
            let file = sink.into_inner().map_err(|e| disk(e.into_error()))?;
            file.sync_all().map_err(disk)?;
            Ok(n)
        });
        match got {
            Ok(n) => fs::rename(&partial, path).map(|_| n).map_err(|e| FtError::Disk { path: path.into(), source: e }),
            Err(e) => {
                let _ = fs::remove_file(&partial);
                Err(e)
            }
        }
    }

    /// Marks a wave complete on this server.
    pub fn commit(&mut self, wave: u64) -> Result<()> {
        self.conn.send_request(Request::Commit { wave })?;
        self.conn.read_status()
    }

    /// Keeps `waves` (marking them committed) and deletes every other wave
    /// of the job on this server.
    pub fn keep(&mut self, waves: &[u64]) -> Result<()> {
        self.conn.send_request(Request::Keep { waves: waves.to_vec() })?;
        self.conn.read_status()
    }

    /// The waves this server holds for the job, oldest first.
    pub fn waves(&mut self) -> Result<Vec<WaveInfo>> {
        self.conn.send_request(Request::Waves)?;
        self.conn.read_status()?;
        let count = self.conn.read_u32("wave count")?;
        let mut waves = Vec::new();
        for _ in 0..count {
            let wave = self.conn.read_u64("wave")?;
            let committed = self.conn.read_u8("committed flag")? != 0;
            let n = self.conn.read_u32("rank count")?;
            if n > 1 << 24 {
                return Err(self.conn.protocol(format!("at most 2^24 ranks, not {n}")));
            }
            let ranks = (0..n).map(|_| self.conn.read_u32("rank")).collect::<Result<_>>()?;
            waves.push(WaveInfo { wave, committed, ranks });
        }
        Ok(waves)
    }
}

/// A TCP connection to `addr`, trying each of its addresses for `limit`.
fn connect_stream(addr: &str, limit: Duration, name: &str) -> Result<TcpStream> {
    let resolved: Vec<SocketAddr> = addr
        .to_socket_addrs()
        .map_err(|e| FtError::Net { what: format!("resolving the address of {name}"), source: e })?
        .collect();
    let mut last = None;
    for candidate in resolved {
        match TcpStream::connect_timeout(&candidate, limit) {
            Ok(stream) => return Ok(stream),
            Err(e) => last = Some(e),
        }
    }
    Err(match last {
        Some(e) if e.kind() == std::io::ErrorKind::TimedOut => {
            FtError::Silent { peer: name.to_owned(), what: "connecting".into(), after: limit }
        }
        Some(e) => FtError::Net { what: format!("connecting to {name}"), source: e },
        None => FtError::Invalid(format!("{addr} resolves to no address")),
    })
}

/// Runs `op` on every server that holds images of a job of `ranks` ranks,
/// all at once (a silent server costs one time limit, not one each); each
/// server's outcome, in order.
pub fn on_servers<T: Send>(
    settings: &FtSettings,
    ranks: usize,
    op: impl Fn(&mut CheckpointClient) -> Result<T> + Sync,
) -> Vec<(String, Result<T>)> {
    on_servers_except(settings, ranks, &[], op)
}

/// [`on_servers`] but for the servers of `skip` (known not to answer:
/// each would cost a time limit to learn it again).
pub fn on_servers_except<T: Send>(
    settings: &FtSettings,
    ranks: usize,
    skip: &[String],
    op: impl Fn(&mut CheckpointClient) -> Result<T> + Sync,
) -> Vec<(String, Result<T>)> {
    let used = &settings.servers[..settings.servers.len().min(ranks)];
    let servers: Vec<&String> = used.iter().filter(|server| !skip.contains(server)).collect();
    std::thread::scope(|scope| {
        let op = &op;
        let calls: Vec<_> = servers
            .iter()
            .map(|&server| {
                scope.spawn(move || CheckpointClient::for_job(settings, server).and_then(|mut c| op(&mut c)))
            })
            .collect();
        servers
            .into_iter()
            .zip(calls)
            .map(|(server, call)| {
                let outcome =
                    call.join().unwrap_or_else(|_| Err(FtError::Invalid(format!("the call to {server} panicked"))));
                (server.clone(), outcome)
            })
            .collect()
    })
}

/// What a job's servers answered when it started.
#[derive(Debug, Default)]
pub struct ServerCheck {
    /// Servers that refused the job (its secret or its name): it would run
    /// unprotected, so it must not start.
    pub refused: Vec<(String, FtError)>,
    /// Servers that could not be reached or did not answer: the waves are
    /// not committed until they do.
    pub unreachable: Vec<(String, FtError)>,
}

/// Connects to every server of a job of `ranks` ranks and proves its
/// secret, as the job's waves will.
pub fn check_servers(settings: &FtSettings, ranks: usize) -> ServerCheck {
    let mut check = ServerCheck::default();
    for (server, outcome) in on_servers(settings, ranks, |_| Ok(())) {
        match outcome {
            Ok(()) => {}
            Err(e) => {
                // A server at its client limit is busy, not refusing the job.
                let refusal = matches!(&e, FtError::Refused { reason, .. } if !reason.starts_with("busy:"));
                if refusal { &mut check.refused } else { &mut check.unreachable }.push((server, e));
            }
        }
    }
    check
}
