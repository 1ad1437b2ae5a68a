//! `grappe checkpoint-server`: stores and returns the images of a job's
//! ranks, by (job, wave, rank).
//!
//! One thread per connection, at most [`ServerConfig::max_clients`] at a
//! time (a checkpoint wave opens one connection per rank assigned to this
//! server; beyond the limit a client is refused with a reason, not left
//! waiting). Images stream from the socket to disk a chunk at a time, so
//! memory does not grow with their size.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::error::{FtError, Result};
use crate::store::Store;
use crate::wire::{Conn, MAC_LEN, Request, SERVER_MAGIC, check_job, nonce, proof_holds};

/// How a server runs.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Directory of the images.
    pub dir: PathBuf,
    /// Address to listen on (`host:port`; port 0 picks one).
    pub listen: String,
    /// The secret clients must prove they hold.
    pub secret: Vec<u8>,
    /// Connections served at once.
    pub max_clients: usize,
    /// A connection silent this long is closed.
    pub idle_timeout: Duration,
}

impl ServerConfig {
    /// Defaults: 256 clients, 5 minutes of silence.
    pub fn new(dir: PathBuf, listen: String, secret: Vec<u8>) -> Self {
        ServerConfig { dir, listen, secret, max_clients: 256, idle_timeout: Duration::from_secs(300) }
    }
}

/// A bound server.
pub struct CheckpointServer {
    listener: TcpListener,
    shared: Arc<Shared>,
}

struct Shared {
    store: Store,
    config: ServerConfig,
    clients: AtomicUsize,
}

impl CheckpointServer {
    /// Opens the store and binds the address.
    pub fn bind(config: ServerConfig) -> Result<CheckpointServer> {
        if config.secret.is_empty() {
            return Err(FtError::Invalid("an empty secret would let anyone in".into()));
        }
        let store = Store::open(&config.dir)?;
        let listener = TcpListener::bind(&config.listen)
            .map_err(|e| FtError::Net { what: format!("listening on {}", config.listen), source: e })?;
        Ok(CheckpointServer { listener, shared: Arc::new(Shared { store, config, clients: AtomicUsize::new(0) }) })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr().expect("a bound listener has an address")
    }

    /// Serves until the process ends.
    pub fn serve(self) -> Result<()> {
        for stream in self.listener.incoming() {
            let stream = match stream {
                Ok(stream) => stream,
                Err(e) => {
                    eprintln!("grappe checkpoint-server: accept failed: {e}");
                    continue;
                }
            };
            let shared = Arc::clone(&self.shared);
            std::thread::spawn(move || shared.serve_client(stream));
        }
        Ok(())
    }
}

impl Shared {
    fn serve_client(&self, stream: TcpStream) {
        let peer = stream.peer_addr().map_or_else(|_| "a client".to_owned(), |a| a.to_string());
        let _ = stream.set_nodelay(true);
        let _ = stream.set_read_timeout(Some(self.config.idle_timeout));
        let mut conn = Conn::new(stream, format!("client {peer}")).with_timeout(self.config.idle_timeout);
        let admitted = self.clients.fetch_add(1, Ordering::AcqRel) < self.config.max_clients;
        let outcome = if admitted {
            self.session(&mut conn)
        } else {
            conn.send_status(Err(&format!("busy: {} clients already", self.config.max_clients)))
        };
        self.clients.fetch_sub(1, Ordering::AcqRel);
        if let Err(e) = outcome {
            eprintln!("grappe checkpoint-server: {e}");
        }
    }

    /// The handshake, then requests until the client closes.
    fn session(&self, conn: &mut Conn<TcpStream>) -> Result<()> {
        let Some(job) = self.handshake(conn)? else { return Ok(()) };
        while let Some(request) = conn.read_request()? {
            match request {
                Request::Put { wave, rank } => self.put(conn, &job, wave, rank)?,
                Request::Get { wave, rank } => self.get(conn, &job, wave, rank)?,
                Request::Commit { wave } => {
                    let done = self.store.commit(&job, wave);
                    if done.is_ok() {
                        eprintln!("grappe checkpoint-server: job {job} wave {wave} committed");
                    }
                    reply(conn, done)?;
                }
                Request::Keep { waves } => {
                    let kept = self.store.keep(&job, &waves);
                    if kept.is_ok() {
                        eprintln!("grappe checkpoint-server: job {job} keeps waves {waves:?}");
                    }
                    reply(conn, kept)?;
                }
                Request::Waves => match self.store.waves(&job) {
                    Ok(waves) => {
                        conn.send_status(Ok(()))?;
                        let mut msg = (waves.len() as u32).to_le_bytes().to_vec();
                        for w in &waves {
                            msg.extend_from_slice(&w.wave.to_le_bytes());
                            msg.push(u8::from(w.committed));
                            msg.extend_from_slice(&(w.ranks.len() as u32).to_le_bytes());
                            w.ranks.iter().for_each(|r| msg.extend_from_slice(&r.to_le_bytes()));
                        }
                        conn.send_raw(&msg)?;
                    }
                    Err(e) => reply(conn, Err(e))?,
                },
            }
        }
        Ok(())
    }

    /// Challenges the client; its job if it proved the secret.
    fn handshake(&self, conn: &mut Conn<TcpStream>) -> Result<Option<String>> {
        let challenge = nonce();
        let mut hello = SERVER_MAGIC.to_vec();
        hello.extend_from_slice(&challenge);
        conn.send_raw(&hello)?;
        let job = conn.read_text("job name")?;
        let mut proof = [0u8; MAC_LEN];
        for byte in proof.iter_mut() {
            *byte = conn.read_u8("secret proof")?;
        }
        if let Err(reason) = check_job(&job) {
            conn.send_status(Err(&reason.to_string()))?;
            return Ok(None);
        }
        if !proof_holds(&self.config.secret, &challenge, &job, &proof) {
            eprintln!("grappe checkpoint-server: {} refused: wrong secret for job {job}", conn.name());
            conn.send_status(Err("authentication failed: the job's secret does not match this server's"))?;
            return Ok(None);
        }
        conn.send_status(Ok(()))?;
        Ok(Some(job))
    }

    fn put(&self, conn: &mut Conn<TcpStream>, job: &str, wave: u64, rank: u32) -> Result<()> {
        let started = Instant::now();
        let mut partial = match self.store.begin_put(job, wave, rank) {
            Ok(partial) => partial,
            Err(e) => {
                // Read the image anyway, so the connection stays in step.
                conn.recv_stream(&mut std::io::sink())?;
                return reply(conn, Err(e));
            }
        };
        let end = match conn.recv_stream(&mut partial) {
            Ok(end) => end,
            Err(e) => {
                partial.abandon();
                return Err(e);
            }
        };
        let path = self.store.image_path(job, wave, rank);
        let stored = match end.sink_error {
            Some(e) => {
                partial.abandon();
                Err(FtError::Disk { path, source: e })
            }
            None => partial.finish(end.total, end.crc),
        };
        if stored.is_ok() {
            let seconds = started.elapsed().as_secs_f64();
            eprintln!(
                "grappe checkpoint-server: job {job} wave {wave} rank {rank}: {:.1} MB in {seconds:.3} s",
                end.total as f64 / 1e6
            );
        }
        reply(conn, stored)
    }

    fn get(&self, conn: &mut Conn<TcpStream>, job: &str, wave: u64, rank: u32) -> Result<()> {
        let mut image = match self.store.open_image(job, wave, rank) {
            Ok(image) => image,
            Err(e) => return reply(conn, Err(e)),
        };
        conn.send_status(Ok(()))?;
        conn.send_stream(&mut image, "a stored image")?;
        let verdict = image.verify();
        if let Err(e) = &verdict {
            eprintln!("grappe checkpoint-server: {e}");
        }
        reply(conn, verdict)
    }
}

/// Sends the outcome of a request as a status.
fn reply(conn: &mut Conn<TcpStream>, outcome: Result<()>) -> Result<()> {
    match outcome {
        Ok(()) => conn.send_status(Ok(())),
        Err(e) => conn.send_status(Err(&e.to_string())),
    }
}
