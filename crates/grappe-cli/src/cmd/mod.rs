//! One module per subcommand, each with its clap arguments and an `execute` returning the exit
//! status.

pub mod checkpoint_server;
pub mod run;
pub mod trace;
