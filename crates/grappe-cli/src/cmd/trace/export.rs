//! `grappe trace export`.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use anyhow::{Context, Result, bail};
use clap::builder::PossibleValue;
use clap::{Args, ValueEnum};
use grappe_analysis::stream::{Window, WindowSummary};
use grappe_analysis::{AnalysisError, CausalStream, GlobalTime, TraceSet};
use grappe_direct::DirectWriter;
use grappe_export::{ExportSummary, Format, StreamExporter, Writer};

use super::common::{
    EstimationArgs, IntervalArgs, TraceInput, check_output, events_to_read, note_partial, open, progress,
    refuse_to_overwrite_input,
};

const INTERVAL_HELP: &str = "\
With --from and --to, only that interval of the run is written: the events that overlap it,
the user regions open at its start, and the arrows of the messages sent and received in it.
Dates stay those of the whole run's export.";

/// The formats and what each is for, then the interval's rules.
fn after_help() -> String {
    let formats: Vec<String> = Format::ALL.iter().map(|f| format!("  {:<10}{}", f.name(), f.purpose())).collect();
    format!("Formats:\n{}\n\n{INTERVAL_HELP}", formats.join("\n"))
}

/// Converts a trace for the viewers HPC users have, on global time.
#[derive(Debug, Args)]
#[command(after_help = after_help())]
pub struct ExportArgs {
    #[command(flatten)]
    input: TraceInput,
    #[command(flatten)]
    estimation: EstimationArgs,
    /// Output format.
    #[arg(short, long, value_enum)]
    format: FormatArg,
    /// Output file (for otf2: the archive's path without `.otf2`).
    #[arg(short, long, value_name = "PATH")]
    output: PathBuf,
    /// chrome, paje: give each call its source location (`file:line:column`).
    /// Chrome: in its args, shown when the slice is selected (a fifth more
    /// instructions, a ninth more bytes). Pajé: as field `Site` of its state
    /// (`pj_dump -u`; a ninth more instructions, a quarter more bytes). OTF2
    /// always has them (a `call site` attribute), and so does Perfetto (a
    /// `site` annotation, each location written once).
    #[arg(long)]
    sites: bool,
    #[command(flatten)]
    interval: IntervalArgs,
}

/// `--format`: the formats grappe_export lists, by name.
#[derive(Debug, Clone, Copy)]
struct FormatArg(Format);

impl ValueEnum for FormatArg {
    fn value_variants<'a>() -> &'a [Self] {
        static ALL: LazyLock<[FormatArg; Format::ALL.len()]> = LazyLock::new(|| Format::ALL.map(FormatArg));
        &*ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.0.name()))
    }
}

pub fn execute(args: ExportArgs) -> Result<i32> {
    let format = args.format.0;
    if args.sites && !format.has_sites_option() {
        let takers: Vec<&str> = Format::ALL.into_iter().filter(|f| f.has_sites_option()).map(Format::name).collect();
        bail!("--sites is an option of --format {}, not of {}", takers.join(" and "), format.name());
    }
    let writer = format.writer(args.sites)?;
    let window = args.interval.is_set().then(|| args.interval.window("the interval exported")).transpose()?;
    // An OTF2 archive is two paths made from the one given (checked
    // where they are made).
    if matches!(writer, Writer::Stream(_)) {
        check_output(&args.output)?;
    }
    let (set, time) = open(&args.input.trace, &args.estimation)?;
    refuse_to_overwrite_input(&set, &args.output)?;
    // An interval is only part of the events: no total then.
    let bar = progress("exporting", || if window.is_some() { None } else { events_to_read(&set, 1) });
    let mut tick = |n| bar.set_position(n);
    // Without OTF2, a byte stream is the only way a format is written.
    #[cfg_attr(not(feature = "otf2"), allow(clippy::infallible_destructuring_match))]
    let writer = match writer {
        #[cfg(feature = "otf2")]
        Writer::Otf2Archive => {
            let open = || stream_of(&set, &time, window);
            let line = export_otf2(&set, &open, &args.output, &mut tick)?;
            bar.finish_and_clear();
            sayln!("{}: {line}", args.output.display());
            return Ok(0);
        }
        Writer::Stream(writer) => writer,
    };
    let stream = stream_of(&set, &time, window)?;
    let s = export_text(writer, stream, &args.output, &mut tick)?;
    let line = format!("{} events, {} messages, {:.1} MB", s.events, s.messages, s.written_bytes as f64 / 1e6);
    bar.finish_and_clear();
    note_partial(&s.stream);
    sayln!("{}: {line}", args.output.display());
    if let Some(window) = &s.stream.window {
        sayln!("  {}", window_line(window, s.stream.origin.unwrap_or(0)));
    }
    if !s.blocks.is_empty() {
        // ParaGraph shows user blocks by number only: this says which is which.
        // Escaped: a name's newline or tab would break the legend's line.
        let legend: Vec<String> =
            s.blocks.iter().zip(1..).map(|(name, k)| format!("{k} {}", name.escape_debug())).collect();
        sayln!("  PICL user blocks: {}", legend.join(", "));
    }
    Ok(0)
}

/// The stream to export: the whole run, or the interval asked for.
fn stream_of(set: &TraceSet, time: &GlobalTime, window: Option<Window>) -> Result<CausalStream, AnalysisError> {
    let stream = CausalStream::open(set, time)?;
    Ok(match window {
        Some(window) => stream.windowed(window),
        None => stream,
    })
}

/// What an interval's export kept, in the run's dates.
fn window_line(w: &WindowSummary, origin: u64) -> String {
    let (from, to) = (ms(w.from_ns.saturating_sub(origin)), ms(w.to_ns.saturating_sub(origin)));
    let to = if w.to_ns == u64::MAX { "the end".to_owned() } else { to };
    let mut line = format!("the interval {from} to {to}: {} of the {} events read", w.kept, w.read);
    if w.cut_messages > 0 {
        let (receives, have) = if w.cut_messages == 1 { ("receive", "has its") } else { ("receives", "have their") };
        line.push_str(&format!("; {} {receives} {have} send before the interval, and no arrow", w.cut_messages));
    }
    if w.kept == 0 && w.read > 0 && w.last_ns < w.from_ns {
        line.push_str(&format!("; the run ends at {}, before the interval", ms(w.last_ns.saturating_sub(origin))));
    } else if w.kept == 0 {
        line.push_str("; no event of the run overlaps it");
    }
    line
}

/// `ns` in milliseconds, to the microsecond, or to the nanosecond if it has them.
fn ms(ns: u64) -> String {
    let decimals = if ns % 1_000 == 0 { 3 } else { 6 };
    format!("{:.*} ms", decimals, ns as f64 / 1e6)
}

fn export_text(
    writer: StreamExporter,
    stream: CausalStream,
    path: &Path,
    tick: &mut dyn FnMut(u64),
) -> Result<ExportSummary> {
    // Exports are written once and read once by a viewer, often gigabytes:
    // not worth the page cache's copy (see grappe_direct).
    let mut out = DirectWriter::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let summary = writer(stream, &mut out, tick).with_context(|| format!("cannot write {}", path.display()))?;
    out.finish().with_context(|| format!("cannot write {}", path.display()))?;
    Ok(summary)
}

#[cfg(feature = "otf2")]
fn export_otf2(
    set: &TraceSet,
    open: grappe_export::otf2::OpenStream,
    output: &Path,
    tick: &mut dyn FnMut(u64),
) -> Result<String> {
    let name = output.file_name().and_then(|n| n.to_str()).context("the OTF2 output needs a file name")?;
    let name = name.strip_suffix(".otf2").unwrap_or(name);
    let dir = output.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if let Some(file) = dir.ancestors().find(|a| a.exists()).filter(|a| !a.is_dir()) {
        bail!("{}: {} is a file, not a directory", output.display(), file.display());
    }
    let summary = grappe_export::otf2::write_otf2(set, open, dir, name, tick)?;
    note_partial(&summary.stream);
    let mut line = format!(
        "{} OTF2 events on {} locations, {} messages; open {}",
        summary.events_written,
        summary.locations,
        summary.messages,
        summary.anchor.display()
    );
    if let Some(window) = &summary.stream.window {
        line.push_str(&format!("\n  {}", window_line(window, summary.stream.origin.unwrap_or(0))));
    }
    Ok(line)
}
