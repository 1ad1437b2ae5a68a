//! The ranks of a communicator that spans hosts, grouped by host, for
//! collectives that keep most of their traffic inside a host (shared
//! memory) and send one rank's share per host over the network.
//!
//! Each host's lowest rank is its leader. A hierarchical reduction
//! combines inside each host at its leader, between leaders, and hands
//! the result back inside each host: the network carries one vector per
//! host and round instead of one per rank, and ranks other than leaders
//! sleep through the network rounds (on an oversubscribed host, the
//! leaders then have the cores).

use std::collections::BTreeMap;

use crate::Communicator;

impl Communicator {
    /// The communicator's ranks grouped by host; `None` for an
    /// intercommunicator, or when grouping gains nothing. Found once, from
    /// what the engine knows of every rank's host: no messages.
    pub(crate) fn host_groups(&self) -> Option<&HostGroups> {
        self.inner
            .hosts
            .get_or_init(|| {
                if self.inner.local.is_some() {
                    return None;
                }
                let engine = self.rank_context().engine();
                let host_of: Vec<Option<usize>> = self.inner.group.iter().map(|&world| engine.host_of(world)).collect();
                HostGroups::of(&host_of, self.rank())
            })
            .as_ref()
    }
}

impl Communicator {
    /// A number shared by the ranks of this communicator that run on this
    /// rank's host, and by no other: the lowest world rank among them. The
    /// color of a split by host (MPI's `MPI_COMM_TYPE_SHARED`).
    pub fn host_color(&self) -> u32 {
        if let Some(local) = &self.inner.local {
            // An intercommunicator: its local group's ranks.
            return local.host_color();
        }
        let engine = self.rank_context().engine();
        let here = self.inner.group.iter().copied().filter(|&world| engine.host_of(world).is_none());
        here.min().expect("a rank runs on its own host") as u32
    }

    /// True if the communicator's ranks run on more than one host.
    pub fn spans_hosts(&self) -> bool {
        if let Some(local) = &self.inner.local {
            return local.spans_hosts();
        }
        let engine = self.rank_context().engine();
        self.inner.group.iter().any(|&world| engine.host_of(world).is_some())
    }
}

/// A communicator's ranks grouped by host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostGroups {
    /// The ranks of this rank's host, ascending; the first is its leader.
    pub local: Vec<usize>,
    /// Every host's leader, ascending.
    pub leaders: Vec<usize>,
    /// Every host's ranks are consecutive: combining inside hosts, then
    /// between leaders in rank order, combines all ranks in rank order
    /// (right for operations that are associative only).
    pub in_runs: bool,
}

impl HostGroups {
    /// The groups of a communicator whose rank `r` runs on host
    /// `host_of[r]`, as this rank (`me`) sees it: `None` for its own host,
    /// a number shared by all ranks for the others. `None` when grouping
    /// gains nothing: one host, or one rank per host.
    pub fn of(host_of: &[Option<usize>], me: usize) -> Option<HostGroups> {
        let mut by_host: BTreeMap<Option<usize>, Vec<usize>> = BTreeMap::new();
        for (rank, &host) in host_of.iter().enumerate() {
            by_host.entry(host).or_default().push(rank);
        }
        if by_host.len() < 2 || by_host.len() == host_of.len() {
            return None;
        }
        let mut leaders: Vec<usize> = by_host.values().map(|ranks| ranks[0]).collect();
        leaders.sort_unstable();
        let in_runs = by_host.values().all(|ranks| ranks[ranks.len() - 1] - ranks[0] + 1 == ranks.len());
        let local = by_host.remove(&host_of[me]).expect("a rank is on its own host");
        Some(HostGroups { local, leaders, in_runs })
    }

    /// This rank's host's leader.
    pub fn leader(&self) -> usize {
        self.local[0]
    }

    /// This rank's position among the leaders, if it is one.
    pub fn leader_position(&self, rank: usize) -> Option<usize> {
        self.leaders.binary_search(&rank).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn one_host_or_one_rank_per_host_is_not_grouped() {
        assert_eq!(HostGroups::of(&[None, None, None], 1), None);
        assert_eq!(HostGroups::of(&[Some(1), None, Some(2)], 1), None);
    }

    #[test]
    fn hosts_in_runs_keep_rank_order() {
        // Seen from rank 2, on the second host of 4 x 2.
        let host_of = [Some(0), Some(0), None, None, Some(2), Some(2), Some(3), Some(3)];
        let groups = HostGroups::of(&host_of, 2).unwrap();
        assert_eq!(groups, HostGroups { local: vec![2, 3], leaders: vec![0, 2, 4, 6], in_runs: true });
        assert_eq!((groups.leader(), groups.leader_position(2), groups.leader_position(3)), (2, Some(1), None));
    }

    #[test]
    fn round_robin_placement_is_not_in_runs() {
        let host_of = [None, Some(5), None, Some(5)];
        let groups = HostGroups::of(&host_of, 2).unwrap();
        assert_eq!(groups, HostGroups { local: vec![0, 2], leaders: vec![0, 1], in_runs: false });
    }

    proptest! {
        /// Every rank, whatever host it sees as its own, finds the same
        /// leaders and the same `in_runs`, and its own host's ranks.
        #[test]
        fn every_rank_agrees(hosts in proptest::collection::vec(0usize..4, 2..12)) {
            let seen_from = |me: usize| -> Vec<Option<usize>> {
                hosts.iter().map(|&h| (h != hosts[me]).then_some(h)).collect()
            };
            let first = HostGroups::of(&seen_from(0), 0);
            for me in 0..hosts.len() {
                let groups = HostGroups::of(&seen_from(me), me);
                prop_assert_eq!(groups.is_some(), first.is_some());
                if let (Some(g), Some(f)) = (&groups, &first) {
                    prop_assert_eq!(&g.leaders, &f.leaders);
                    prop_assert_eq!(g.in_runs, f.in_runs);
                    let mine: Vec<usize> = (0..hosts.len()).filter(|&r| hosts[r] == hosts[me]).collect();
                    prop_assert_eq!(&g.local, &mine);
                }
            }
        }
    }
}
