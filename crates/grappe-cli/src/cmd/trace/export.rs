//! `grappe trace export`.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use grappe_analysis::stream::{Window, WindowSummary};
use grappe_analysis::{AnalysisError, CausalStream, GlobalTime, TraceSet};
use grappe_direct::DirectWriter;
use grappe_export::{ExportSummary, chrome, paje, picl};
use grappe_otf2::OpenStream;

use super::common::{
    EstimationArgs, IntervalArgs, TraceInput, note_partial, open, progress, refuse_to_overwrite_input,
};

const AFTER_HELP: &str = "\
Formats: chrome (trace-event JSON: open it in https://ui.perfetto.dev or chrome://tracing),
paje (ViTE, pajeng), otf2 (Vampir, Score-P tools: OUTPUT names the archive, OUTPUT.otf2 is the
anchor file to open), picl (ParaGraph).

With --from and --to, only that interval of the run is written: the events that overlap it,
the user regions open at its start, and the arrows of the messages sent and received in it.
Dates stay those of the whole run's export.";

/// Converts a trace for the viewers HPC users have, on global time.
#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub struct ExportArgs {
    #[command(flatten)]
    input: TraceInput,
    #[command(flatten)]
    estimation: EstimationArgs,
    /// Output format.
    #[arg(short, long, value_enum)]
    format: Format,
    /// Output file (for otf2: the archive's path without `.otf2`).
    #[arg(short, long, value_name = "PATH")]
    output: PathBuf,
    /// chrome, paje: give each call its source location (`file:line:column`).
    /// Chrome: in its args, shown when the slice is selected (a fifth more
    /// instructions, a ninth more bytes). Pajé: as field `Site` of its state
    /// (`pj_dump -u`; a ninth more instructions, a quarter more bytes). OTF2
    /// always has them (a `call site` attribute).
    #[arg(long)]
    sites: bool,
    #[command(flatten)]
    interval: IntervalArgs,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Format {
    Chrome,
    Paje,
    Otf2,
    Picl,
}

pub fn execute(args: ExportArgs) -> Result<i32> {
    if args.sites && !matches!(args.format, Format::Chrome | Format::Paje) {
        let format = args.format.to_possible_value().map(|v| v.get_name().to_owned()).unwrap_or_default();
        bail!("--sites is an option of --format chrome and paje, not of {format}");
    }
    let window = args.interval.is_set().then(|| args.interval.window("the interval exported")).transpose()?;
    let (set, time) = open(&args.input.trace, &args.estimation)?;
    refuse_to_overwrite_input(&set, &args.output)?;
    let bar = progress("exporting");
    let mut tick = |n| bar.set_position(n);
    let writer: TextWriter = match args.format {
        Format::Otf2 => {
            let open = || stream_of(&set, &time, window);
            let line = export_otf2(&set, &open, &args.output, &mut tick)?;
            bar.finish_and_clear();
            sayln!("{}: {line}", args.output.display());
            return Ok(0);
        }
        Format::Chrome if args.sites => chrome::write_chrome_with_sites,
        Format::Chrome => chrome::write_chrome,
        Format::Paje if args.sites => paje::write_paje_with_sites,
        Format::Paje => paje::write_paje,
        Format::Picl => picl::write_picl,
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

/// The exporters that write one text file.
type TextWriter =
    fn(CausalStream, &mut (dyn Write + Send), &mut dyn FnMut(u64)) -> grappe_analysis::Result<ExportSummary>;

fn export_text(
    writer: TextWriter,
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

fn export_otf2(set: &TraceSet, open: OpenStream, output: &Path, tick: &mut dyn FnMut(u64)) -> Result<String> {
    let name = output.file_name().and_then(|n| n.to_str()).context("the OTF2 output needs a file name")?;
    let name = name.strip_suffix(".otf2").unwrap_or(name);
    let dir = output.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if let Some(file) = dir.ancestors().find(|a| a.exists()).filter(|a| !a.is_dir()) {
        bail!("{}: {} is a file, not a directory", output.display(), file.display());
    }
    let summary = grappe_otf2::write_otf2(set, open, dir, name, tick)?;
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
