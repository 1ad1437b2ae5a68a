//! `grappe checkpoint-server`: the storage of checkpoint images.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use grappe_ft::{CheckpointServer, ServerConfig};

const AFTER_HELP: &str = "\
The secret is read from --secret-file, else from the GRAPPE_CKPT_SECRET environment variable;
clients prove they hold it (HMAC challenge), it never crosses the network. Images are kept as
DIR/<job>/wave-<n>/rank-<r>.img, each fsynced before it is acknowledged. A job tells the server
which waves its commit record names (after each commit and restart): the job's other waves are
deleted. Waves never committed are deleted when the first image of a newer wave arrives.";

/// Stores and returns checkpoint images by (job, wave, rank).
#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub struct CheckpointServerArgs {
    /// Directory of the images.
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    /// Address to listen on (port 0 picks a free one, printed at start).
    #[arg(long, value_name = "HOST:PORT", default_value = "0.0.0.0:7070")]
    listen: String,
    /// File holding the secret clients must prove.
    #[arg(long, value_name = "FILE")]
    secret_file: Option<PathBuf>,
    /// Connections served at once; more are refused with a reason.
    #[arg(long, value_name = "N", default_value_t = 256)]
    max_clients: usize,
    /// Seconds of silence after which a connection is closed.
    #[arg(long, value_name = "SECS", default_value_t = 300)]
    idle_timeout: u64,
}

pub fn execute(args: CheckpointServerArgs) -> i32 {
    run(args).unwrap_or_else(|e| {
        eprintln!("grappe checkpoint-server: {}", super::describe(&e));
        2
    })
}

fn run(args: CheckpointServerArgs) -> Result<i32> {
    let secret = match &args.secret_file {
        Some(file) => std::fs::read(file).with_context(|| format!("reading the secret from {}", file.display()))?,
        None => match std::env::var("GRAPPE_CKPT_SECRET") {
            Ok(s) => s.into_bytes(),
            Err(_) => bail!("no secret: give --secret-file FILE or set GRAPPE_CKPT_SECRET"),
        },
    };
    let mut config = ServerConfig::new(args.dir.clone(), args.listen.clone(), trim_newline(secret));
    config.max_clients = args.max_clients;
    config.idle_timeout = Duration::from_secs(args.idle_timeout);
    let server = CheckpointServer::bind(config)?;
    // Scripts and tests read this line to learn the port.
    println!("grappe checkpoint-server: listening on {} (images in {})", server.local_addr(), args.dir.display());
    server.serve()?;
    Ok(0)
}

/// A secret file written by `echo` ends with a newline that is not part
/// of the secret.
fn trim_newline(mut secret: Vec<u8>) -> Vec<u8> {
    while secret.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
        secret.pop();
    }
    secret
}
