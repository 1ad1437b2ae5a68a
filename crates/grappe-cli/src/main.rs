//! `grappe`: the command-line front end of the grappe runtime. Each subcommand lives in its own
//! module under `cmd/` and returns the process exit status.
#![forbid(unsafe_code)]

mod cmd;

use clap::{Parser, Subcommand};

/// Run and inspect grappe message-passing programs.
#[derive(Debug, Parser)]
#[command(name = "grappe", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Run(Box<cmd::run::RunArgs>),
    Trace(cmd::trace::TraceArgs),
    CheckpointServer(cmd::checkpoint_server::CheckpointServerArgs),
    /// The per-host agent of `grappe run --hosts`, started by the launcher's remote shell; it
    /// speaks only to the launcher, over its standard input and output.
    #[command(hide = true)]
    Agent,
}

fn main() {
    let cli = Cli::parse();
    cmd::open_files::raise_limit();
    let status = match cli.command {
        Command::Run(args) => cmd::run::execute(*args),
        Command::Trace(args) => cmd::trace::execute(args),
        Command::CheckpointServer(args) => cmd::checkpoint_server::execute(args),
        Command::Agent => grappe_launch::hosts::agent::serve(std::io::stdin().lock(), std::io::stdout()),
    };
    std::process::exit(status);
}
