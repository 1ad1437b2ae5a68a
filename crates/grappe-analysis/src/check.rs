//! `grappe trace check`: is the trace consistent? Tachyons (a receive
//! dated before its send on global time), messages without their other
//! half, sizes that disagree, records out of order, files cut short.
//!
//! Calls that failed because a peer died or the job was stopped are
//! listed apart, as information: where each survivor of a failed rank was
//! stuck. They are not a problem of the trace, which recorded them as
//! they happened, and they carry no message to match. The failure itself
//! is the run's: `grappe run` reports it, and a killed rank's file has no
//! footer, which is a problem here.

use std::fmt;

use grappe_trace::Ending;
use serde::Serialize;

use crate::error::Result;
use crate::failed::{FailedCall, FailedCalls, WHY};
use crate::matching::{Channel, Message, receive_of};
use crate::stream::{CausalStream, LinkedRef, StreamSummary, incomplete};

/// Examples kept per kind of problem.
const EXAMPLES: usize = 10;

/// A message seen with its two ends.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MessageDates {
    /// Its channel.
    pub channel: Channel,
    /// Send start, global ns.
    pub send_start: u64,
    /// Receive end, global ns.
    pub recv_end: u64,
    /// Bytes sent.
    pub sent: u64,
    /// Bytes received.
    pub received: u64,
}

impl MessageDates {
    /// Receive end minus send start: negative for a tachyon.
    pub fn gap_ns(&self) -> i64 {
        self.recv_end as i64 - self.send_start as i64
    }
}

/// A receive with no send, or a send never received.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Orphan {
    /// Its channel.
    pub channel: Channel,
    /// When (global ns).
    pub date: u64,
}

/// The consistency of a trace.
#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    /// Events read.
    pub events: u64,
    /// Messages matched.
    pub messages: u64,
    /// Receives dated before their send.
    pub tachyons: u64,
    /// Some of them, worst first.
    pub tachyon_examples: Vec<MessageDates>,
    /// Smallest receive-end minus send-start over all messages, ns (the
    /// margin global time left; negative with tachyons).
    pub min_gap_ns: Option<i64>,
    /// Messages whose received size differs from the sent size.
    pub size_mismatches: u64,
    /// Some of them.
    pub size_examples: Vec<MessageDates>,
    /// Receives with no send in the trace.
    pub unmatched_receives: u64,
    /// Some of them.
    pub unmatched_examples: Vec<Orphan>,
    /// Sends no receive took.
    pub unreceived_sends: u64,
    /// Some of them.
    pub unreceived_examples: Vec<Orphan>,
    /// Ranks of the job with no trace.
    pub untraced_ranks: Vec<u32>,
    /// Receives from those ranks (their send is not in the trace: not a
    /// problem of the trace, and not counted as one).
    pub receives_from_untraced: u64,
    /// Sends to those ranks (likewise).
    pub sends_to_untraced: u64,
    /// Per rank: records, disorder, ending.
    pub stream: StreamSummary,
    /// Files that end without their footer or dropped events, described.
    pub unfinished: Vec<String>,
    /// Calls that failed because a peer died or the job was stopped (not
    /// a problem of the trace).
    pub failed_calls: u64,
    /// The first of them, in the stream's order.
    pub failed_examples: Vec<FailedCall>,
}

/// Reads the whole stream and checks it. `progress` gets the events read.
pub fn check(stream: CausalStream, progress: &mut dyn FnMut(u64)) -> Result<CheckReport> {
    check_observing(stream, progress, &mut |_| {})
}

/// [`check`], showing each event to `observe` too: a tool that reads the
/// trace twice learns in the check's pass what its second pass needs
/// (the report: the run's span and where its calls lie).
pub fn check_observing(
    mut stream: CausalStream,
    progress: &mut dyn FnMut(u64),
    observe: &mut dyn FnMut(LinkedRef<'_>),
) -> Result<CheckReport> {
    let mut report = CheckReport {
        events: 0,
        messages: 0,
        tachyons: 0,
        tachyon_examples: Vec::new(),
        min_gap_ns: None,
        size_mismatches: 0,
        size_examples: Vec::new(),
        unmatched_receives: 0,
        unmatched_examples: Vec::new(),
        unreceived_sends: 0,
        unreceived_examples: Vec::new(),
        untraced_ranks: stream.untraced().to_vec(),
        receives_from_untraced: 0,
        sends_to_untraced: 0,
        stream: stream.summary(),
        unfinished: Vec::new(),
        failed_calls: 0,
        failed_examples: Vec::new(),
    };
    let mut failed = FailedCalls::new(EXAMPLES);
    while let Some(linked) = stream.next_event()? {
        report.events += 1;
        observe(linked);
        failed.observe(linked.event);
        if report.events % crate::PROGRESS_EVERY == 0 {
            progress(report.events);
        }
        match *linked.message {
            // A send outside a window is matched all the same.
            Message::Received { channel, send } | Message::SendOutside { channel, send } => {
                let received = receive_of(linked.event).map_or(0, |(_, bytes)| bytes);
                let dates = MessageDates {
                    channel,
                    send_start: send.start,
                    recv_end: linked.event.end,
                    sent: send.bytes,
                    received,
                };
                report.message(dates);
            }
            Message::Unmatched { channel } if report.untraced_ranks.contains(&channel.src) => {
                report.receives_from_untraced += 1;
            }
            Message::Unmatched { channel } => {
                report.unmatched_receives += 1;
                keep(&mut report.unmatched_examples, Orphan { channel, date: linked.event.end });
            }
            Message::Sent { .. } | Message::None => {}
        }
    }
    progress(report.events);
    let (mut unreceived, to_untraced): (Vec<Orphan>, Vec<Orphan>) = stream
        .matcher()
        .unreceived()
        .map(|(c, s)| Orphan { channel: *c, date: s.start })
        .partition(|o| !report.untraced_ranks.contains(&o.channel.dst));
    report.sends_to_untraced = to_untraced.len() as u64;
    unreceived.sort_by_key(|o| o.date);
    report.unreceived_sends = unreceived.len() as u64;
    report.unreceived_examples = unreceived.into_iter().take(EXAMPLES).collect();
    report.stream = stream.summary();
    report.unfinished = incomplete(&report.stream);
    failed.finish();
    report.failed_calls = failed.count();
    report.failed_examples = failed.examples().to_vec();
    Ok(report)
}

fn keep<T>(examples: &mut Vec<T>, example: T) {
    if examples.len() < EXAMPLES {
        examples.push(example);
    }
}

impl CheckReport {
    fn message(&mut self, dates: MessageDates) {
        self.messages += 1;
        let gap = dates.gap_ns();
        self.min_gap_ns = Some(self.min_gap_ns.map_or(gap, |g| g.min(gap)));
        if gap < 0 {
            self.tachyons += 1;
            self.tachyon_examples.push(dates);
            self.tachyon_examples.sort_by_key(MessageDates::gap_ns);
            self.tachyon_examples.truncate(EXAMPLES);
        }
        if dates.sent != dates.received {
            self.size_mismatches += 1;
            keep(&mut self.size_examples, dates);
        }
    }

    /// One line per kind of problem found; empty for a consistent trace.
    pub fn problems(&self) -> Vec<String> {
        let mut p = Vec::new();
        let mut count = |n: u64, what: &str| {
            if n > 0 {
                p.push(format!("{n} {what}"));
            }
        };
        count(self.tachyons, "tachyons (receives dated before their send; --repair-tachyons moves them after it)");
        count(self.size_mismatches, "messages received with another size than sent");
        count(self.unmatched_receives, "receives with no send in the trace");
        count(self.unreceived_sends, "sends never received");
        count(self.stream.forced, "receives waiting for each other's sends in a cycle (contradictory traces)");
        let disorder: u64 = self.stream.flows.iter().map(|f| f.disorder).sum();
        count(disorder, "records out of order");
        p.extend(self.unfinished.iter().cloned());
        if !self.untraced_ranks.is_empty() {
            // Their messages are not checked: a trace without them is not
            // known to be consistent.
            let ranks = crate::set::list_ranks(&self.untraced_ranks);
            p.push(format!("{} ranks with no trace ({ranks}, see the notes)", self.untraced_ranks.len()));
        }
        p
    }
}

impl CheckReport {
    /// A global date as the other tools give it (`--from`, the exports,
    /// the report): from the run's first event.
    fn run_date(&self, date: u64) -> String {
        let since = date.saturating_sub(self.stream.origin.unwrap_or(0));
        format!("{:.6} ms from the run's start", since as f64 / 1e6)
    }
}

impl CheckReport {
    /// The failed calls, as information: where each rank was stuck, from
    /// when, for how long.
    fn write_failed_calls(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.failed_calls == 0 {
            return Ok(());
        }
        writeln!(f, "{} calls failed ({WHY}; not a problem of the trace):", self.failed_calls)?;
        for call in &self.failed_examples {
            let waited = call.duration_ns() as f64 / 1e6;
            writeln!(f, "  {}: called at {}, failed {waited:.3} ms later", call.what(), self.run_date(call.start))?;
        }
        let stopped = self.stopped_ranks();
        if !stopped.is_empty() {
            let ranks = crate::set::list_ranks(&stopped);
            writeln!(
                f,
                "  the ranks whose trace stops without a footer (killed, or died outside the runtime): {ranks}"
            )?;
        }
        Ok(())
    }

    /// The ranks whose file has no footer (or, in a merged file, whose
    /// file had none): the likely dead peers of failed calls.
    fn stopped_ranks(&self) -> Vec<u32> {
        let unfinished =
            |ending: &Option<Ending>| matches!(ending, Some(Ending::Unfinished { .. } | Ending::Cut { .. }));
        let files = self.stream.flows.iter().filter(|flow| unfinished(&flow.ending)).map(|flow| flow.rank);
        let merged = match &self.stream.merged_ending {
            Some(Ending::Complete(footer)) => footer.incomplete.iter().map(|input| input.rank).collect(),
            _ => Vec::new(),
        };
        let mut ranks: Vec<u32> = files.chain(merged).collect();
        ranks.sort_unstable();
        ranks.dedup();
        ranks
    }
}

fn channel(c: &Channel) -> String {
    format!("rank {} -> rank {} (comm {}, tag {})", c.src, c.dst, c.comm, c.tag)
}

impl fmt::Display for CheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} events, {} messages matched", self.events, self.messages)?;
        if let Some(gap) = self.min_gap_ns {
            writeln!(f, "smallest receive-end minus send-start: {gap} ns")?;
        }
        if self.stream.deferred > 0 {
            writeln!(f, "{} receives were deferred behind their send during the merge", self.stream.deferred)?;
        }
        if self.stream.repairs.receives > 0 {
            writeln!(f, "{}", self.stream.repairs)?;
        }
        for t in &self.tachyon_examples {
            writeln!(f, "  tachyon: {} received {} ns before it was sent", channel(&t.channel), -t.gap_ns())?;
        }
        for m in &self.size_examples {
            writeln!(f, "  size: {} sent {} bytes, received {}", channel(&m.channel), m.sent, m.received)?;
        }
        for o in &self.unmatched_examples {
            writeln!(f, "  unmatched receive: {} ended at {}", channel(&o.channel), self.run_date(o.date))?;
        }
        for o in &self.unreceived_examples {
            writeln!(f, "  never received: {} sent at {}", channel(&o.channel), self.run_date(o.date))?;
        }
        if !self.untraced_ranks.is_empty() {
            writeln!(
                f,
                "not checked: {} receives from and {} sends to the ranks with no trace ({})",
                self.receives_from_untraced,
                self.sends_to_untraced,
                crate::set::list_ranks(&self.untraced_ranks)
            )?;
        }
        for flow in self.stream.flows.iter().filter(|f| f.disorder > 0) {
            let first = flow.first_disorder.as_deref().unwrap_or("");
            writeln!(f, "  rank {}: {} records out of order; first: {first}", flow.rank, flow.disorder)?;
        }
        self.write_failed_calls(f)?;
        let problems = self.problems();
        if problems.is_empty() {
            let matched =
                if self.untraced_ranks.is_empty() { "every message" } else { "every message of the traced ranks" };
            writeln!(f, "consistent: no tachyon, {matched} matched, every rank in order")
        } else {
            writeln!(f, "problems:")?;
            problems.iter().try_for_each(|p| writeln!(f, "  - {p}"))
        }
    }
}
