//! `grappe trace ...`: the trace tools, over a directory of per-rank traces
//! (`grappe run --trace DIR`) or a merged trace file.

/// `print!` for the tools' standard output. When its reader has gone
/// (`grappe trace info | head`), the tool stops there, quietly and with
/// status 0, as a filter killed by SIGPIPE would; `print!` would panic.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::cmd::trace::write_out(format_args!($($arg)*))
    };
}

/// [`say!`] and a newline.
macro_rules! sayln {
    ($($arg:tt)*) => {
        say!("{}\n", format_args!($($arg)*))
    };
}

mod check;
mod clock;
mod common;
mod correct;
mod export;
mod info;
mod merge;
mod model_test;
mod predict;
mod profile;
mod report;
mod resim;

use clap::{Args, Subcommand};

const AFTER_HELP: &str = "\
TRACE is a directory written by `grappe run --trace DIR` (one rank-NNNNN.gtrace file per rank)
or a file written by `grappe trace merge`. Exit status: 0 on success, 1 when `check` finds
problems, 2 when the input cannot be read (the message names the file, the offset and what was
expected there).";

/// Read, check and convert traces.
#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub struct TraceArgs {
    #[command(subcommand)]
    command: TraceCommand,
}

#[derive(Debug, Subcommand)]
enum TraceCommand {
    Info(info::InfoArgs),
    Check(check::CheckArgs),
    Clock(clock::ClockArgs),
    Merge(merge::MergeArgs),
    ModelTest(model_test::ModelTestArgs),
    Profile(profile::ProfileArgs),
    Export(export::ExportArgs),
    Report(report::ReportArgs),
    Correct(correct::CorrectArgs),
    Predict(predict::PredictArgs),
}

/// Runs a trace tool; returns the exit status.
pub fn execute(args: TraceArgs) -> i32 {
    let result = match args.command {
        TraceCommand::Info(a) => info::execute(a),
        TraceCommand::Check(a) => check::execute(a),
        TraceCommand::Clock(a) => clock::execute(a),
        TraceCommand::Merge(a) => merge::execute(a),
        TraceCommand::ModelTest(a) => model_test::execute(a),
        TraceCommand::Profile(a) => profile::execute(a),
        TraceCommand::Export(a) => export::execute(a),
        TraceCommand::Report(a) => report::execute(a),
        TraceCommand::Correct(a) => correct::execute(a),
        TraceCommand::Predict(a) => predict::execute(a),
    };
    result.unwrap_or_else(|e| {
        eprintln!("grappe trace: {}", super::describe(&e));
        if let Some(hint) = super::open_files::hint(&*e, "the tools open every rank's file at once") {
            eprintln!("grappe trace: {hint}");
        }
        2
    })
}

/// Writes to standard output for [`say!`].
pub(crate) fn write_out(args: std::fmt::Arguments) {
    use std::io::Write;
    if let Err(e) = std::io::stdout().lock().write_fmt(args) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("grappe trace: cannot write to standard output: {e}");
        std::process::exit(2);
    }
}
