//! The client of a checkpoint server: what ranks and the launcher use.

use std::fs::{self, File};
use std::io::{BufReader, BufWriter, Read, Write};
use std::net::TcpStream;
use std::path::Path;

use crate::error::{FtError, Result};
use crate::wire::{Conn, NONCE_LEN, Request, SERVER_MAGIC, proof, push_text};

pub use crate::wire::WaveListing as WaveInfo;

/// A connection to one checkpoint server, authenticated for one job.
pub struct CheckpointClient {
    conn: Conn<TcpStream>,
}

impl CheckpointClient {
    /// Connects to `addr` and proves the job's secret.
    pub fn connect(addr: &str, job: &str, secret: &[u8]) -> Result<CheckpointClient> {
        let stream = TcpStream::connect(addr)
            .map_err(|e| FtError::Net { what: format!("connecting to checkpoint server {addr}"), source: e })?;
        let _ = stream.set_nodelay(true);
        let mut conn = Conn::new(stream, format!("checkpoint server {addr}"));
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
