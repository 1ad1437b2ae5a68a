//! Communicators as the tools tell them apart.
//!
//! A context id does not name one communicator: disjoint communicators
//! may share it (a `split` gives every part the same id, as in MPICH), and
//! every rank's `COMM_SELF`-like communicator may too. A communicator is
//! its context id *and* its members; each rank records a
//! [`Body::CommCreate`] when it joins one, and its later records name it
//! by id alone, so the id means the communicator that rank created.
//!
//! [`Comms`] observes the creations rank by rank and numbers each
//! distinct (id, members) once, in the order first seen; an id a rank
//! uses without having created it (the world's, or one whose creation is
//! outside the trace) is numbered once per id, with no members: the tools
//! take it as world-sized.

use std::fmt::Write as _;

use grappe_trace::{Body, Members};
use rustc_hash::FxHashMap;

/// World ranks with a table of their communicators; a rank beyond (only
/// a corrupt trace has one) sees every id as never created.
const MAX_RANKS: u32 = 1 << 24;

/// Members listed in a communicator's name; longer lists are cut.
const NAMED_MEMBERS: usize = 8;

/// One communicator.
#[derive(Debug, Clone, Copy)]
pub struct Communicator {
    /// Its context id.
    pub id: u32,
    /// World ranks in its rank order; `None` if never seen created.
    pub members: Option<Members>,
    /// The parent's number, as the first creation seen gives it.
    pub parent: Option<u32>,
}

/// The communicators seen, numbered from 0 (see the module's doc).
#[derive(Debug, Default)]
pub struct Comms {
    all: Vec<Communicator>,
    /// Rank in each created communicator of each member (by number;
    /// empty for the never-created ones).
    rank_of: Vec<FxHashMap<u32, u32>>,
    created: FxHashMap<(u32, &'static [u32]), u32>,
    uncreated: FxHashMap<u32, u32>,
    /// Each rank's communicators: (id, number), sorted by id. A rank has a
    /// few, so a binary search beats hashing (rank, id) on every event.
    of_rank: Vec<Vec<(u32, u32)>>,
    /// The last never-created id resolved (the world's, mostly).
    last_uncreated: Option<(u32, u32)>,
}

impl Comms {
    /// Learns a communicator if `body` is a creation on `rank`; its number.
    pub fn observe(&mut self, rank: u32, body: &Body) -> Option<u32> {
        match *body {
            Body::CommCreate { comm, parent, members } => Some(self.created(rank, comm, parent, members)),
            _ => None,
        }
    }

    /// `rank` joined communicator `id` of `members`, made from its `parent`.
    pub fn created(&mut self, rank: u32, id: u32, parent: u32, members: Members) -> u32 {
        let parent = (parent != id).then(|| self.resolve(rank, parent));
        let c = match self.created.get(&(id, members.as_slice())) {
            Some(&c) => c,
            None => self.add(Communicator { id, members: Some(members), parent }),
        };
        if rank < MAX_RANKS {
            let r = rank as usize;
            if self.of_rank.len() <= r {
                self.of_rank.resize_with(r + 1, Vec::new);
            }
            let table = &mut self.of_rank[r];
            // A freed id may be given again: the latest creation counts.
            match table.binary_search_by_key(&id, |&(i, _)| i) {
                Ok(i) => table[i].1 = c,
                Err(i) => table.insert(i, (id, c)),
            }
        }
        c
    }

    fn add(&mut self, comm: Communicator) -> u32 {
        let c = self.all.len() as u32;
        let rank_of = match comm.members {
            Some(m) => {
                self.created.insert((comm.id, m.as_slice()), c);
                m.iter().zip(0u32..).map(|(&w, r)| (w, r)).collect()
            }
            None => {
                self.uncreated.insert(comm.id, c);
                FxHashMap::default()
            }
        };
        self.all.push(comm);
        self.rank_of.push(rank_of);
        c
    }

    /// The number of the communicator `rank` created as `id`, if it did.
    #[inline]
    pub fn find(&self, rank: u32, id: u32) -> Option<u32> {
        let table = self.of_rank.get(rank as usize)?;
        table.binary_search_by_key(&id, |&(i, _)| i).ok().map(|i| table[i].1)
    }

    /// The communicator `rank` means by `id`: the one it created, else the
    /// id's never-created one (numbered now if new).
    #[inline]
    pub fn resolve(&mut self, rank: u32, id: u32) -> u32 {
        match self.find(rank, id) {
            Some(c) => c,
            None => self.uncreated(id),
        }
    }

    /// The never-created communicator of `id` (numbered now if new).
    #[inline]
    pub fn uncreated(&mut self, id: u32) -> u32 {
        if let Some((last, c)) = self.last_uncreated
            && last == id
        {
            return c;
        }
        let c = match self.uncreated.get(&id) {
            Some(&c) => c,
            None => self.add(Communicator { id, members: None, parent: None }),
        };
        self.last_uncreated = Some((id, c));
        c
    }

    /// Communicator number `c`.
    pub fn get(&self, c: u32) -> Option<&Communicator> {
        self.all.get(c as usize)
    }

    /// Every communicator, by number.
    pub fn all(&self) -> &[Communicator] {
        &self.all
    }

    /// The rank in communicator `c` of world rank `world`, if it was seen
    /// created and `world` is a member.
    #[inline]
    pub fn rank_in(&self, c: u32, world: u32) -> Option<u32> {
        self.rank_of.get(c as usize)?.get(&world).copied()
    }

    /// The world rank of rank `rank` of communicator `c`: itself if `c`
    /// was never seen created (taken as the world), `None` past its size.
    #[inline]
    pub fn world_rank(&self, c: u32, rank: u32) -> Option<u32> {
        match self.get(c)?.members {
            Some(m) => m.get(rank as usize).copied(),
            None => Some(rank),
        }
    }

    /// A readable name: "comm 2 (ranks 0, 2, 4, 6)", or "comm 2" for a
    /// communicator never seen created.
    pub fn name(&self, c: u32) -> String {
        let Some(comm) = self.get(c) else { return format!("comm #{c} (unknown)") };
        let Some(members) = comm.members else { return format!("comm {}", comm.id) };
        let mut name = format!("comm {} (", comm.id);
        match members.len() {
            1 => name.push_str("rank "),
            n if n > NAMED_MEMBERS => {
                let _ = write!(name, "{n} ranks: ");
            }
            _ => name.push_str("ranks "),
        }
        let listed = members.len().min(NAMED_MEMBERS);
        for (i, m) in members.iter().take(listed).enumerate() {
            let _ = write!(name, "{}{m}", if i > 0 { ", " } else { "" });
        }
        if members.len() > listed {
            name.push_str(", …");
        }
        name.push(')');
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create(comms: &mut Comms, rank: u32, id: u32, members: &[u32]) -> u32 {
        comms.observe(rank, &Body::CommCreate { comm: id, parent: 0, members: members.into() }).unwrap()
    }

    #[test]
    fn halves_of_a_split_sharing_an_id_are_two_communicators() {
        let mut comms = Comms::default();
        let (even, odd) = ([0, 2], [1, 3]);
        let e0 = create(&mut comms, 0, 2, &even);
        let o1 = create(&mut comms, 1, 2, &odd);
        assert_eq!(create(&mut comms, 2, 2, &even), e0);
        assert_eq!(create(&mut comms, 3, 2, &odd), o1);
        assert_ne!(e0, o1);
        assert_eq!(comms.find(3, 2), Some(o1));
        assert_eq!(comms.find(2, 2), Some(e0));
        assert_eq!(comms.rank_in(o1, 3), Some(1));
        assert_eq!(comms.world_rank(o1, 0), Some(1));
        assert_eq!(comms.name(o1), "comm 2 (ranks 1, 3)");
        let world = comms.find(0, 0);
        assert_eq!(world, None, "the world is never created");
        let w = comms.resolve(0, 0);
        assert_eq!(comms.resolve(3, 0), w);
        assert_eq!(comms.get(e0).unwrap().parent, Some(w));
        assert_eq!(comms.world_rank(w, 5), Some(5));
        assert_eq!(comms.name(w), "comm 0");
    }

    #[test]
    fn long_member_lists_are_cut_in_names() {
        let mut comms = Comms::default();
        let c = create(&mut comms, 0, 4, &(0..20).collect::<Vec<_>>());
        assert_eq!(comms.name(c), "comm 4 (20 ranks: 0, 1, 2, 3, 4, 5, 6, 7, …)");
        let s = create(&mut comms, 5, 1, &[5]);
        assert_eq!(comms.name(s), "comm 1 (rank 5)");
    }
}
