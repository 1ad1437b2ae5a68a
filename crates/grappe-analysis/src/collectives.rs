//! Collective instances: the k-th collective of every rank on one
//! communicator (an id *and* its members: the halves of a split share an
//! id, see [`Comms`]) is one instance; a rank waits in it from its entry to the
//! last rank's entry.
//!
//! Only the instances in flight are kept. One is resolved when every
//! expected member entered, or when the stream has gone past the end of
//! every entry it holds (a member entering later would start after all
//! the others left: it is not coming, its trace is cut or absent).

use grappe_trace::Body;
use rustc_hash::FxHashMap;

use crate::comms::Comms;
use crate::stream::CausalStream;

/// Instances kept at most; beyond, all are resolved with what they have.
const MAX_OPEN: usize = 1 << 16;

/// One rank's part in an instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// World rank.
    pub rank: u32,
    /// Entry date.
    pub start: u64,
    /// Exit date.
    pub end: u64,
    /// Waiting is counted from here (≥ `start`; the caller may exclude a
    /// prefix already counted).
    pub from: u64,
    /// The caller's handle of this entry.
    pub tag: u64,
}

impl Entry {
    /// The waiting of this entry given the last entry of its instance.
    fn waiting(&self, last_entry: u64) -> u64 {
        last_entry.min(self.end).saturating_sub(self.from)
    }
}

#[derive(Debug, Default)]
struct Instance {
    entries: Vec<Entry>,
    max_end: u64,
}

/// The instances in flight, and the communicators' sizes.
#[derive(Debug)]
pub struct Instances {
    /// By (communicator number, k).
    open: FxHashMap<(u32, u64), Instance>,
    comms: Comms,
    /// Members expected in each communicator, by number (those past the
    /// end were never seen created: `default_members`).
    members: Vec<u32>,
    default_members: u32,
    /// Ranks of the job with no trace, sorted: no instance waits for them.
    untraced: Vec<u32>,
    /// Instances resolved before every expected member entered.
    pub incomplete: u64,
}

impl Instances {
    /// `default_members`: ranks of a communicator whose creation was not
    /// seen (the world's).
    pub fn new(default_members: u32) -> Self {
        Instances {
            open: FxHashMap::default(),
            comms: Comms::default(),
            members: Vec::new(),
            default_members,
            untraced: Vec::new(),
            incomplete: 0,
        }
    }

    /// Instances of a stream's collectives: the world's have the ranks
    /// that have a trace (a file, even cut or empty, in a per-rank set or
    /// among those a merged one was made from). Not the ranks read so
    /// far: a merged file's first block may lack some (started late,
    /// killed before their first flush), whose instances would then
    /// complete without them, unlike those of the per-rank files.
    pub fn for_stream(stream: &CausalStream, world_size: u32) -> Self {
        let mut untraced = stream.untraced().to_vec();
        untraced.sort_unstable();
        let traced = world_size.saturating_sub(untraced.len() as u32).max(1);
        Instances { untraced, ..Instances::new(traced) }
    }

    /// Learns a communicator and its size from `rank`'s creation event.
    pub fn observe_creation(&mut self, rank: u32, body: &Body) {
        let Some(c) = self.comms.observe(rank, body) else { return };
        let Body::CommCreate { members, .. } = body else { return };
        let traced = members.iter().filter(|m| self.untraced.binary_search(m).is_err()).count();
        let c = c as usize;
        if self.members.len() <= c {
            self.members.resize(c + 1, self.default_members);
        }
        self.members[c] = (traced as u32).max(1);
    }

    /// The `k`-th collective of `entry.rank` on its communicator `comm`
    /// (a context id); `resolved` gets each entry and its waiting when the
    /// instance completes.
    pub fn enter(&mut self, comm: u32, k: u64, entry: Entry, resolved: &mut impl FnMut(&Entry, u64)) {
        let comm = self.comms.resolve(entry.rank, comm);
        let expected = self.members.get(comm as usize).copied().unwrap_or(self.default_members) as usize;
        let instance = self.open.entry((comm, k)).or_default();
        instance.max_end = instance.max_end.max(entry.end);
        instance.entries.push(entry);
        if instance.entries.len() >= expected
            && let Some(done) = self.open.remove(&(comm, k))
        {
            resolve(&done, resolved);
        } else if self.open.len() > MAX_OPEN {
            self.drain(resolved);
        }
    }

    /// Resolves the instances whose every entry ended before `now`.
    pub fn expire(&mut self, now: u64, resolved: &mut impl FnMut(&Entry, u64)) {
        let stale: Vec<(u32, u64)> = self.open.iter().filter(|(_, i)| i.max_end < now).map(|(k, _)| *k).collect();
        for key in stale {
            if let Some(instance) = self.open.remove(&key) {
                self.incomplete += 1;
                resolve(&instance, resolved);
            }
        }
    }

    /// Resolves every instance left (at the end of the stream).
    pub fn drain(&mut self, resolved: &mut impl FnMut(&Entry, u64)) {
        for (_, instance) in self.open.drain() {
            self.incomplete += 1;
            resolve(&instance, resolved);
        }
    }
}

fn resolve(instance: &Instance, resolved: &mut impl FnMut(&Entry, u64)) {
    let last = instance.entries.iter().map(|e| e.start).max().unwrap_or(0);
    for entry in &instance.entries {
        resolved(entry, entry.waiting(last));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keep(got: &mut Vec<(u32, u64)>) -> impl FnMut(&Entry, u64) + '_ {
        move |e, w| got.push((e.rank, w))
    }

    fn entry(rank: u32, start: u64, end: u64) -> Entry {
        Entry { rank, start, end, from: start, tag: rank as u64 }
    }

    #[test]
    fn ranks_wait_for_the_last_entry_clamped_at_their_exit() {
        let mut instances = Instances::new(3);
        let mut got = Vec::new();
        let mut keep = |e: &Entry, w: u64| got.push((e.rank, w));
        instances.enter(7, 0, entry(0, 100, 500), &mut keep);
        instances.enter(7, 0, entry(1, 300, 500), &mut keep);
        // Rank 2 left early (a broadcast root): waiting clamped at its exit.
        instances.enter(7, 0, entry(2, 50, 80), &mut keep);
        got.sort_unstable();
        assert_eq!(got, vec![(0, 200), (1, 0), (2, 30)]);
        assert_eq!(instances.incomplete, 0);
    }

    #[test]
    fn an_instance_missing_a_member_is_resolved_once_the_stream_passed_it() {
        let mut instances = Instances::new(4);
        let created = Body::CommCreate { comm: 9, parent: 0, members: vec![1, 3].into() };
        instances.observe_creation(1, &created);
        instances.observe_creation(3, &created);
        let mut got = Vec::new();
        instances.enter(0, 0, entry(0, 100, 400), &mut keep(&mut got));
        instances.enter(0, 0, entry(1, 150, 400), &mut keep(&mut got));
        instances.enter(9, 0, entry(1, 500, 600), &mut keep(&mut got));
        instances.enter(9, 0, entry(3, 550, 600), &mut keep(&mut got));
        assert_eq!(got, vec![(1, 50), (3, 0)]);
        instances.expire(400, &mut keep(&mut got));
        assert_eq!(got.len(), 2, "not stale yet");
        instances.expire(401, &mut keep(&mut got));
        got.sort_unstable();
        assert_eq!(got, vec![(0, 50), (1, 0), (1, 50), (3, 0)]);
        assert_eq!(instances.incomplete, 1);
    }
}
