//! OTF2 export of grappe traces, so that Vampir and the Score-P tools
//! (Scalasca, Cube's trace tools, otf2-print) open them.
//!
//! The archive is written by the real OTF2 library (3.0 or later, linked
//! by `build.rs`), never by an encoder of our own: the format is the
//! library's, and readers are tested against it. Layout, as Score-P:
//!
//! - a location group (process) and a location (CPU thread) per world
//!   rank, numbered by rank, under a system tree node per host;
//! - a region per runtime call, named as MPI names it (`MPI_Send`,
//!   `MPI_Allreduce`...; a send and the receive marked as its second
//!   half are one `MPI_Sendrecv`) with OTF2's MPI paradigm and roles, and
//!   a region per user region (name and source location);
//! - `MPI_COMM_WORLD` and a communicator per grappe context id seen,
//!   their groups from the traces' communicator creations (a context never
//!   seen created is taken as world-sized);
//! - counters as metrics, points as string parameters.
//!
//! Dates are the stream's global nanoseconds (timer resolution 1 GHz).
//! Per-rank files are written a location at a time, each rank's events
//! in its file's order (OTF2 orders nothing across locations), so that
//! the export holds one location's buffer whatever the ranks. A merged
//! file or a window of the run comes with its ranks interleaved: it is
//! read once per group of [`OPEN_LOCATIONS`] ranks, each pass writing its
//! group's locations, so that the export holds at most that many buffers.
//! The event mapping is in `events.rs`, the definitions in `defs.rs`, the
//! calls into the library in `archive.rs` over the declarations of `ffi.rs`.
//!
//! This is the crate's only module with `unsafe` code, and only in the
//! three submodules allowed it (the crate denies it everywhere else, and
//! forbids it in a build without this feature): `ffi.rs`, declarations
//! only; `archive.rs`, the calls into the library behind types whose order
//! of use OTF2 accepts; `memory.rs`, the buffers' memory OTF2's callbacks
//! ask for. Every unsafe block says why it is sound.

// Unsafe blocks, each argued: the calls into the library.
#[allow(unsafe_code)]
mod archive;
mod comm_defs;
mod defs;
mod error;
mod events;
// Unsafe blocks, each argued: the buffers' memory, for the library.
#[allow(unsafe_code)]
mod memory;
mod strings;
// Declarations only (`unsafe extern "C"`).
#[allow(unsafe_code)]
mod ffi;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use grappe_analysis::{AnalysisError, CausalStream, ChannelTally, RankSource, StreamSummary, TraceSet};
use grappe_trace::format::RankThread;

use self::archive::{AnchorInfo, Chunks, EventPhase};
use self::defs::RankPlace;
pub use self::error::Otf2Error;
use self::events::Exporter;

/// What an export wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Otf2Summary {
    /// OTF2 events in the archive (enters, leaves, messages...), as the
    /// locations' definitions count them.
    pub events_written: u64,
    /// Point-to-point messages whose send and receive are both in it.
    pub messages: u64,
    /// Locations (one per world rank).
    pub locations: u64,
    /// User region leaves with no matching enter (left out).
    pub unmatched_leaves: u64,
    /// The most memory OTF2's buffers held at once, in bytes: one chunk
    /// per location plus the definitions, however many events.
    pub buffer_peak_bytes: u64,
    /// The anchor file, `dir/name.otf2`, to give to readers.
    pub anchor: PathBuf,
    /// What the stream saw (and its window kept).
    pub stream: StreamSummary,
}

/// Events read between calls of `progress`.
const PROGRESS_EVERY: u64 = grappe_analysis::PROGRESS_EVERY;

/// The most locations a merged file's or a window's export keeps open at
/// once: each holds a 4 MiB buffer (`chunks`), so 256 MiB. A job with
/// more ranks is read once per group of this many (256 ranks: 4 passes),
/// where all open at once held 1 GiB.
pub const OPEN_LOCATIONS: u32 = 64;

/// A causal stream of the traces from their start, opened anew for each
/// pass over a merged file or a window.
pub type OpenStream<'a> = &'a dyn Fn() -> Result<CausalStream, AnalysisError>;

/// Writes the events of the causal stream of `set` (`open` opens it) as
/// the OTF2 archive `dir/name.otf2` + `dir/name/`, which must not exist
/// (`dir` is created if needed). `progress` gets the number of events
/// read, now and then, ending at the events of the stream: a stream read
/// in several passes counts each pass's events as a share of one (the
/// events read over the passes divided by the passes). On error, the
/// partial archive is removed.
pub fn write_otf2(
    set: &TraceSet,
    open: OpenStream,
    dir: &Path,
    name: &str,
    progress: &mut dyn FnMut(u64),
) -> Result<Otf2Summary, Otf2Error> {
    write_otf2_open_at_most(set, open, dir, name, OPEN_LOCATIONS, progress)
}

/// [`write_otf2`], a merged file or a window read once per group of
/// `open_locations` ranks (at least 1).
pub fn write_otf2_open_at_most(
    set: &TraceSet,
    open: OpenStream,
    dir: &Path,
    name: &str,
    open_locations: u32,
    progress: &mut dyn FnMut(u64),
) -> Result<Otf2Summary, Otf2Error> {
    check_name(dir, name)?;
    std::fs::create_dir_all(dir).map_err(|source| Otf2Error::Create { path: dir.to_owned(), source })?;
    let anchor = dir.join(format!("{name}.otf2"));
    let archive_dir = dir.join(name);
    for path in [&anchor, &archive_dir] {
        if path.symlink_metadata().is_ok() {
            return Err(Otf2Error::Exists { path: path.clone() });
        }
    }
    check_creatable(&archive_dir, &anchor)?;
    let world = set.world_size();
    memory::unmap_large_frees();
    let phase = EventPhase::create(dir, name, chunks(world), &anchor_info(set), world)?;
    let exporter = Exporter::new(phase, world);
    let written = open().map_err(Otf2Error::from).and_then(|stream| {
        let origin = stream.origin();
        match stream.into_ranks() {
            Ok(ranks) => write_by_location(set, ranks, origin, exporter, progress),
            Err(stream) => write_in_passes(set, open, *stream, open_locations.max(1), exporter, progress),
        }
    });
    match written {
        Ok(summary) => Ok(Otf2Summary { anchor, ..summary }),
        Err(e) => {
            // Ours since the archive was opened: OTF2 refuses existing ones.
            let _ = std::fs::remove_dir_all(&archive_dir);
            let _ = std::fs::remove_file(&anchor);
            Err(e)
        }
    }
}

/// Creates the archive's directory and anchor file, and removes them:
/// what cannot be created is named with the system's reason before OTF2
/// tries (it would name only the call that failed).
fn check_creatable(archive_dir: &Path, anchor: &Path) -> Result<(), Otf2Error> {
    let cannot = |path: &Path, source| Otf2Error::Create { path: path.to_owned(), source };
    std::fs::create_dir(archive_dir).map_err(|e| cannot(archive_dir, e))?;
    let _ = std::fs::remove_dir(archive_dir);
    std::fs::File::create_new(anchor).map_err(|e| cannot(anchor, e))?;
    let _ = std::fs::remove_file(anchor);
    Ok(())
}

fn anchor_info(set: &TraceSet) -> AnchorInfo {
    let header = &set.files()[0].header;
    let reference = set.file_of(0).map_or(header, |f| &f.header);
    let job = if header.job.is_empty() { String::new() } else { format!("job {}, ", header.job) };
    let untraced = set.missing_ranks();
    let traced = set.world_size() as usize - untraced.len();
    AnchorInfo {
        creator: format!("grappe {} (grappe trace export)", env!("CARGO_PKG_VERSION")),
        machine: reference.host.clone(),
        description: format!(
            "grappe {job}{traced} of {} ranks traced, dates on rank 0's clock ({})",
            set.world_size(),
            reference.clock.source
        ),
        job: header.job.clone(),
    }
}

/// Writes a merged file or a window of the run, whose ranks come
/// interleaved: the stream read once per group of `open_locations` ranks
/// (`first` already opened, `open` opening it for the next passes), each
/// pass writing the events of its group's locations and closing them.
/// Every pass reads the same events and matches them alike; an event of a
/// rank outside the job goes to the exporter, which refuses it.
fn write_in_passes(
    set: &TraceSet,
    open: OpenStream,
    first: CausalStream,
    open_locations: u32,
    mut exporter: Exporter,
    progress: &mut dyn FnMut(u64),
) -> Result<Otf2Summary, Otf2Error> {
    let world = set.world_size();
    // Every pass reads every event: progress in shares of one pass.
    let passes = world.div_ceil(open_locations).max(1) as u64;
    let (mut read, mut stream, mut group) = (0u64, first, 0..open_locations.min(world));
    loop {
        while let Some(linked) = stream.next_event()? {
            let rank = linked.event.rank;
            if group.contains(&rank) || rank >= world {
                exporter.write(linked)?;
            }
            read += 1;
            if read % PROGRESS_EVERY == 0 {
                progress(read / passes);
            }
        }
        for rank in group.clone() {
            exporter.finish_location(rank)?;
        }
        if group.end >= world {
            break;
        }
        group = group.end..group.end.saturating_add(open_locations).min(world);
        stream = open()?;
    }
    progress(read / passes);
    close_archive(set, exporter, None, stream.summary())
}

/// Writes per-rank files a location at a time, each rank's events in its
/// file's order. OTF2 wants no order across locations, and each open
/// location holds a 4 MiB chunk, so this holds one, and one rank's reader,
/// whatever the ranks (the stream, with all open, held 591 MiB for 256).
/// Messages are counted per channel: no causal order is needed to write
/// them, as each receive names its sender.
fn write_by_location(
    set: &TraceSet,
    ranks: Vec<RankSource>,
    origin: Option<u64>,
    mut exporter: Exporter,
    progress: &mut dyn FnMut(u64),
) -> Result<Otf2Summary, Otf2Error> {
    let (mut read, mut tally, mut flows) = (0u64, ChannelTally::default(), Vec::with_capacity(ranks.len()));
    // One rank's reader at a time, dropped once read.
    for source in ranks {
        let mut rank = source.open()?;
        while let Some(event) = rank.next_event()? {
            tally.observe(event);
            exporter.write_event(event, true)?;
            read += 1;
            if read % PROGRESS_EVERY == 0 {
                progress(read);
            }
        }
        exporter.finish_location(rank.rank())?;
        flows.push(rank.summary().clone());
    }
    progress(read);
    let stream = StreamSummary {
        flows,
        deferred: 0,
        forced: 0,
        repairs: Default::default(),
        matched: tally.matched(),
        unmatched_receives: tally.unmatched_receives(),
        unreceived_sends: tally.unreceived_sends(),
        origin,
        window: None,
        merged_ending: None,
    };
    close_archive(set, exporter, Some(tally.matched()), stream)
}

/// Ends the event phase, writes the definitions and closes the archive.
/// `messages`: matched messages, if not counted by the exporter.
fn close_archive(
    set: &TraceSet,
    exporter: Exporter,
    messages: Option<u64>,
    stream: StreamSummary,
) -> Result<Otf2Summary, Otf2Error> {
    let (defs, written, mut out) = exporter.finish()?;
    defs.write(&mut out, &places(set, &written.events), written.clock)?;
    let buffer_peak_bytes = out.close()?;
    Ok(Otf2Summary {
        buffer_peak_bytes,
        events_written: written.events.iter().sum(),
        messages: messages.unwrap_or(written.messages),
        locations: written.events.len() as u64,
        unmatched_leaves: written.unmatched_leaves,
        anchor: PathBuf::new(),
        stream,
    })
}

/// Host, pid, thread and event count of each world rank.
fn places(set: &TraceSet, events: &[u64]) -> Vec<RankPlace> {
    let tid = |thread: &Option<RankThread>| thread.as_ref().map(|t| t.tid);
    let mut known: HashMap<u32, (&str, u32, Option<u32>)> = HashMap::new();
    for f in set.files() {
        if let Some(rank) = f.header.rank {
            known.insert(rank, (&f.header.host, f.header.pid, tid(&f.header.thread)));
        }
        for m in &f.header.merged_from {
            known.insert(m.rank, (&m.host, m.pid, tid(&m.thread)));
        }
    }
    (0u32..)
        .zip(events)
        .map(|(rank, &events)| {
            let place = known.get(&rank);
            let (host, pid, tid) = (place.map(|p| p.0.to_owned()), place.map(|p| p.1), place.and_then(|p| p.2));
            RankPlace { host, pid, tid, events }
        })
        .collect()
}

/// Buffer sizes for a job of `world` ranks. Event buffers: 4 MiB, one
/// per location (`memory.rs`), whatever the job's size. A smaller chunk
/// saves nothing: OTF2's file layer copies every write under 4 MiB into a
/// 4 MiB buffer of the file's own (`OTF2_FILE_BUFFER_SIZE`), kept until the
/// file is closed; with 1 MiB chunks, a 256-rank export held 1 MiB + up to
/// 4 MiB per location. A 4 MiB chunk is written straight from where it is.
/// So an export holds 4 MiB per open location: one from per-rank files,
/// written a location at a time; up to [`OPEN_LOCATIONS`] from a merged
/// file or a window of the run, whose ranks come interleaved.
/// Definition buffers: large enough for the largest record, a group of
/// every rank (at most 9 bytes a member), and no larger, as one is
/// allocated and cleared per location.
fn chunks(world: u32) -> Chunks {
    let world = world.max(1) as u64;
    Chunks { events: OTF2_FILE_BUFFER, definitions: 9 * world + (64 << 10) }
}

/// `OTF2_FILE_BUFFER_SIZE` (not in OTF2's public headers): writes of at
/// least this many bytes go to the file without a copy.
const OTF2_FILE_BUFFER: u64 = 4 << 20;

/// An archive name is one path component.
fn check_name(dir: &Path, name: &str) -> Result<(), Otf2Error> {
    let reason = if name.is_empty() {
        "an empty archive name"
    } else if name.contains('/') || name.contains('\0') {
        "an archive name is a file name: no '/' or NUL"
    } else if name == "." || name == ".." {
        "not a usable archive name"
    } else {
        return Ok(());
    };
    Err(Otf2Error::InvalidPath { path: dir.join(name), reason })
}
