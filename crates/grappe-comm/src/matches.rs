//! Recording and replaying what wildcard receives matched (instant
//! replay, after Leu): a reference run logs, for each receive or probe
//! that left its source or its tag open, the source and tag it got, in
//! the order the rank posted them; a replay forces each such call to the
//! logged source and tag, so that it follows the reference run's path
//! whatever the timing (a traced run and its untraced reference, say).
//!
//! Only the calls of the program's point-to-point traffic are logged
//! (blocking and non-blocking receives, sendrecv's receive, probes and
//! matched probes); collectives match their own messages. A non-blocking
//! probe that finds nothing is not logged: under replay it looks for the
//! next logged message only, and takes its log entry when it finds it.
//!
//! The log of a rank is a text file, one line per wildcard call:
//! `CTX ASKED_SOURCE ASKED_TAG SOURCE TAG`, `*` for a wildcard asked, `-`
//! for a receive that matched nothing (cancelled). A replay checks each
//! call against its line: another communicator, or another selector,
//! means the program took another path, and the call fails naming the
//! rank and the call's index rather than waiting for a message that may
//! never come. A blocking receive or probe also checks, before it takes
//! its message, that the first message of the logged source its own
//! selector accepts has the logged tag (a source's messages arrive in the
//! order it sent them, so the recorded run took that one), and fails when
//! no message of that source comes for a while (the ranks wait for each
//! other on another path). Non-blocking receives and sendrecv's receive
//! are steered but not checked so: a replay that diverges there waits.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use grappe_proto::Status;

use crate::selectors::{Source, Tag};
use crate::{Error, Result};

/// First line of a log file.
const HEADER: &str = "# grappe match log v1";

/// What one wildcard call asked for and got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// Context id of the communicator.
    pub ctx: u32,
    /// The source asked (communicator rank), `None` for any.
    pub asked_source: Option<usize>,
    /// The tag asked, `None` for any.
    pub asked_tag: Option<i32>,
    /// What it matched (communicator rank, tag); `None` if nothing.
    pub matched: Option<(usize, i32)>,
}

/// A rank's log, being recorded or replayed.
#[derive(Debug)]
pub struct MatchLog {
    rank: usize,
    path: PathBuf,
    mode: Mode,
    /// How long a replayed blocking call waits for its logged message to
    /// come first before it takes the run for diverged.
    patience: Duration,
}

/// The default of [`MatchLog::with_patience`].
pub const DEFAULT_PATIENCE: Duration = Duration::from_secs(60);

#[derive(Debug)]
enum Mode {
    /// One slot per wildcard call, in posting order, filled when it matches.
    Record(Vec<Entry>),
    /// The reference run's entries and the next to follow.
    Replay { entries: Vec<Entry>, next: usize },
}

/// How a wildcard call goes: what to post, and the slot to fill.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Steered {
    /// The source to post.
    pub source: Source,
    /// The tag to post.
    pub tag: Tag,
    /// The slot of the log the match fills (recording only).
    pub slot: Option<usize>,
    /// The index of the log entry it follows (replay only).
    pub replayed: Option<usize>,
}

impl MatchLog {
    /// An empty log that rank `rank` records, to be saved in `path`.
    pub fn record(rank: usize, path: PathBuf) -> MatchLog {
        MatchLog { rank, path, mode: Mode::Record(Vec::new()), patience: DEFAULT_PATIENCE }
    }

    /// Rank `rank`'s log read from `path`, to replay.
    pub fn replay(rank: usize, path: PathBuf) -> std::io::Result<MatchLog> {
        let text = std::fs::read_to_string(&path)?;
        let entries = parse(&text).map_err(|(line, why)| {
            std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{}:{line}: {why}", path.display()))
        })?;
        Ok(MatchLog { rank, path, mode: Mode::Replay { entries, next: 0 }, patience: DEFAULT_PATIENCE })
    }

    /// The log with another patience: how long a replayed blocking call
    /// waits for any message of its logged source (one that could be the
    /// logged one) before it fails, the ranks having taken another path
    /// than the recorded run and waiting for each other.
    pub fn with_patience(mut self, patience: Duration) -> MatchLog {
        self.patience = patience;
        self
    }

    /// See [`Self::with_patience`].
    pub fn patience(&self) -> Duration {
        self.patience
    }

    /// The file of world rank `rank` in a log named `base`: `base.RANK`.
    pub fn file_of(base: &Path, rank: usize) -> PathBuf {
        let mut name = base.as_os_str().to_owned();
        name.push(format!(".{rank}"));
        PathBuf::from(name)
    }

    /// Where the log is read from or saved to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The entries recorded (or read) so far.
    pub fn entries(&self) -> &[Entry] {
        match &self.mode {
            Mode::Record(entries) | Mode::Replay { entries, .. } => entries,
        }
    }

    /// Saves a recorded log; a replayed one is left as it is.
    pub fn save(&self) -> std::io::Result<()> {
        match &self.mode {
            Mode::Record(entries) => std::fs::write(&self.path, format(entries)),
            Mode::Replay { .. } => Ok(()),
        }
    }

    /// A receive or blocking probe on `ctx` asking for (`source`, `tag`):
    /// what to post. Calls that name both go as they are.
    pub fn steer(&mut self, ctx: u32, source: Source, tag: Tag) -> Result<Steered> {
        let asked = asked(ctx, source, tag);
        if asked.asked_source.is_some() && asked.asked_tag.is_some() {
            return Ok(Steered { source, tag, slot: None, replayed: None });
        }
        match &mut self.mode {
            Mode::Record(entries) => {
                entries.push(asked);
                Ok(Steered { source, tag, slot: Some(entries.len() - 1), replayed: None })
            }
            Mode::Replay { entries, next } => {
                let index = *next;
                let steered = follow(self.rank, &self.path, entries, index, asked, source, tag)?;
                *next += 1;
                Ok(steered)
            }
        }
    }

    /// A non-blocking probe: what to look for. Under replay the entry is
    /// taken only once the probe finds its message ([`Self::probed`]).
    pub fn steer_probe(&mut self, ctx: u32, source: Source, tag: Tag) -> Result<Steered> {
        let asked = asked(ctx, source, tag);
        if asked.asked_source.is_some() && asked.asked_tag.is_some() {
            return Ok(Steered { source, tag, slot: None, replayed: None });
        }
        match &self.mode {
            Mode::Record(_) => Ok(Steered { source, tag, slot: None, replayed: None }),
            Mode::Replay { entries, next } => follow(self.rank, &self.path, entries, *next, asked, source, tag),
        }
    }

    /// A non-blocking probe asked (`source`, `tag`) on `ctx` and found
    /// `status`: logged, or its entry taken.
    pub fn probed(&mut self, ctx: u32, source: Source, tag: Tag, status: &Status) {
        let mut entry = asked(ctx, source, tag);
        if entry.asked_source.is_some() && entry.asked_tag.is_some() {
            return;
        }
        match &mut self.mode {
            Mode::Record(entries) => {
                entry.matched = Some((status.source, status.tag));
                entries.push(entry);
            }
            Mode::Replay { next, .. } => *next += 1,
        }
    }

    /// The call of `slot` matched `status`.
    pub fn matched(&mut self, slot: usize, status: &Status) {
        if let Mode::Record(entries) = &mut self.mode
            && let Some(entry) = entries.get_mut(slot)
        {
            entry.matched = Some((status.source, status.tag));
        }
    }

    /// The error of a replayed call `index` whose message is not the
    /// logged one: the sender took another path.
    pub fn diverged(&self, index: usize, detail: String) -> Error {
        Error::ReplayDiverged { rank: self.rank, index, log: self.path.clone(), detail }
    }

    /// Replayed entries not reached by the end of the run (the program
    /// made fewer wildcard calls than the reference run).
    pub fn unfollowed(&self) -> usize {
        match &self.mode {
            Mode::Record(_) => 0,
            Mode::Replay { entries, next } => entries.len().saturating_sub(*next),
        }
    }
}

fn asked(ctx: u32, source: Source, tag: Tag) -> Entry {
    let asked_source = match source {
        Source::Rank(rank) => Some(rank),
        Source::Any => None,
    };
    let asked_tag = match tag {
        Tag::Is(tag) => Some(tag),
        Tag::Any => None,
    };
    Entry { ctx, asked_source, asked_tag, matched: None }
}

/// The replay of call `index`, which asked `asked`, against the log.
fn follow(
    rank: usize,
    path: &Path,
    entries: &[Entry],
    index: usize,
    asked: Entry,
    source: Source,
    tag: Tag,
) -> Result<Steered> {
    let diverged = |detail: String| Error::ReplayDiverged { rank, index, log: path.to_owned(), detail };
    let Some(entry) = entries.get(index) else {
        return Err(diverged(format!("the log ran out: it holds {} wildcard calls", entries.len())));
    };
    if (entry.ctx, entry.asked_source, entry.asked_tag) != (asked.ctx, asked.asked_source, asked.asked_tag) {
        return Err(diverged(format!(
            "the program asks for {} but the log's call asked for {}",
            describe(&asked),
            describe(entry)
        )));
    }
    Ok(match entry.matched {
        Some((src, t)) => Steered { source: Source::Rank(src), tag: Tag::Is(t), slot: None, replayed: Some(index) },
        // It matched nothing in the reference run (cancelled): left open.
        None => Steered { source, tag, slot: None, replayed: None },
    })
}

fn describe(entry: &Entry) -> String {
    let source = entry.asked_source.map_or("any source".to_owned(), |s| format!("source {s}"));
    let tag = entry.asked_tag.map_or("any tag".to_owned(), |t| format!("tag {t}"));
    format!("{source}, {tag} on communicator {}", entry.ctx)
}

fn format(entries: &[Entry]) -> String {
    let mut text = format!("{HEADER}\n");
    let or_any = |v: Option<String>| v.unwrap_or_else(|| "*".to_owned());
    for e in entries {
        let (src, tag) = match e.matched {
            Some((s, t)) => (s.to_string(), t.to_string()),
            None => ("-".to_owned(), "-".to_owned()),
        };
        let asked_source = or_any(e.asked_source.map(|s| s.to_string()));
        let asked_tag = or_any(e.asked_tag.map(|t| t.to_string()));
        let _ = writeln!(text, "{} {asked_source} {asked_tag} {src} {tag}", e.ctx);
    }
    text
}

/// The entries of a log file; `Err((line, why))` for a bad line.
fn parse(text: &str) -> std::result::Result<Vec<Entry>, (usize, String)> {
    let mut lines = text.lines().enumerate();
    match lines.next() {
        Some((_, HEADER)) => {}
        _ => return Err((1, format!("not a match log (expected {HEADER:?})"))),
    }
    let mut entries = Vec::new();
    for (i, line) in lines {
        let bad = |why: &str| (i + 1, format!("{why} in {line:?} (expected CTX ASKED_SOURCE ASKED_TAG SOURCE TAG)"));
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [ctx, asked_source, asked_tag, src, tag] = fields[..] else { return Err(bad("not five fields")) };
        let ctx = ctx.parse().map_err(|_| bad("bad context id"))?;
        let asked_source = wildcard::<usize>(asked_source).map_err(|_| bad("bad source asked"))?;
        let asked_tag = wildcard::<i32>(asked_tag).map_err(|_| bad("bad tag asked"))?;
        let matched = match (src, tag) {
            ("-", "-") => None,
            (s, t) => Some((s.parse().map_err(|_| bad("bad source"))?, t.parse().map_err(|_| bad("bad tag"))?)),
        };
        entries.push(Entry { ctx, asked_source, asked_tag, matched });
    }
    Ok(entries)
}

/// `*` as `None`, else the number.
fn wildcard<T: std::str::FromStr>(text: &str) -> std::result::Result<Option<T>, T::Err> {
    if text == "*" { Ok(None) } else { text.parse().map(Some) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn status(source: usize, tag: i32) -> Status {
        Status { source, tag, bytes: 8 }
    }

    #[test]
    fn a_recorded_log_replays_its_matches_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.0");
        let mut log = MatchLog::record(0, path.clone());
        let a = log.steer(4, Source::Any, Tag::Is(3)).unwrap();
        let b = log.steer(4, Source::Rank(1), Tag::Any).unwrap();
        assert_eq!(log.steer(4, Source::Rank(1), Tag::Is(2)).unwrap().slot, None, "explicit calls are not logged");
        log.matched(b.slot.unwrap(), &status(1, 9));
        log.matched(a.slot.unwrap(), &status(2, 3));
        log.probed(4, Source::Any, Tag::Any, &status(3, 5));
        log.save().unwrap();

        let mut replay = MatchLog::replay(0, path).unwrap();
        let forced = |s: Steered| (s.source, s.tag);
        assert_eq!(forced(replay.steer(4, Source::Any, Tag::Is(3)).unwrap()), (Source::Rank(2), Tag::Is(3)));
        assert_eq!(forced(replay.steer(4, Source::Rank(1), Tag::Any).unwrap()), (Source::Rank(1), Tag::Is(9)));
        // A probe that finds nothing leaves its entry for the next.
        let probe = replay.steer_probe(4, Source::Any, Tag::Any).unwrap();
        assert_eq!(forced(probe), (Source::Rank(3), Tag::Is(5)));
        assert_eq!(forced(replay.steer_probe(4, Source::Any, Tag::Any).unwrap()), (Source::Rank(3), Tag::Is(5)));
        replay.probed(4, Source::Any, Tag::Any, &status(3, 5));
        assert_eq!(replay.unfollowed(), 0);
    }

    #[test]
    fn a_call_that_differs_from_the_log_or_outruns_it_fails_naming_rank_and_index() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.2");
        std::fs::write(&path, format!("{HEADER}\n4 * 3 1 3\n")).unwrap();
        let mut replay = MatchLog::replay(2, path.clone()).unwrap();
        let error = replay.steer(4, Source::Rank(2), Tag::Any).unwrap_err().to_string();
        assert!(error.contains("rank 2") && error.contains("#0"), "{error}");
        assert!(error.contains("source 2, any tag") && error.contains("any source, tag 3"), "{error}");
        replay.steer(4, Source::Any, Tag::Is(3)).unwrap();
        let error = replay.steer(4, Source::Any, Tag::Is(3)).unwrap_err().to_string();
        assert!(error.contains("#1") && error.contains("ran out"), "{error}");
    }

    #[test]
    fn bad_files_are_refused_with_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.0");
        std::fs::write(&path, "hello\n").unwrap();
        assert!(MatchLog::replay(0, path.clone()).unwrap_err().to_string().contains(":1: not a match log"));
        std::fs::write(&path, format!("{HEADER}\n4 * 3 x 3\n")).unwrap();
        let error = MatchLog::replay(0, path).unwrap_err().to_string();
        assert!(error.contains(":2: bad source"), "{error}");
    }

    proptest! {
        #[test]
        fn logs_read_back_as_written(raw in proptest::collection::vec(
            (0u32..100, proptest::option::of(0usize..64), proptest::option::of(0i32..1000),
             proptest::option::of((0usize..64, 0i32..1000))), 0..40)) {
            let entries: Vec<Entry> = raw.into_iter()
                .map(|(ctx, asked_source, asked_tag, matched)| Entry { ctx, asked_source, asked_tag, matched })
                .collect();
            prop_assert_eq!(parse(&format(&entries)).unwrap(), entries);
        }
    }
}
