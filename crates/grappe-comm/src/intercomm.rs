//! Intercommunicators: two disjoint groups whose ranks talk to the other
//! group's (MPI's `MPI_Intercomm_create`).
//!
//! An intercommunicator is a [`Communicator`] whose group is the *remote*
//! group: the ranks its point-to-point calls name are the other group's,
//! and [`Communicator::size`] is that group's size. A message names its
//! sender by the sender's rank in its own communicator, which the engine
//! carries with every message already, so a receive's status gives the
//! sender's rank in the remote group, as MPI wants, with no translation.
//! The local group lives beside it as a private intracommunicator
//! ([`Communicator::local_comm`]): the agreements of `merge` and `dup` run
//! on it, and so do the local halves of the collectives built on top.
//!
//! The context of a new intercommunicator is agreed on as an
//! intracommunicator's is (every member proposes the lowest context it
//! never used, all take the maximum), the two groups' leaders exchanging
//! their groups' proposals.

use crate::internal::{MANAGEMENT_TAG, allgather_words};
use crate::selectors::{Source, Tag};
use crate::{Communicator, Error, Result};

/// What one group's leader tells the other's when an intercommunicator
/// is made: the context its group proposes, its order for a merge, and its
/// members (world ranks).
struct Offer {
    ctx: u64,
    high: bool,
    members: Vec<usize>,
}

impl Communicator {
    /// Whether this is an intercommunicator.
    pub fn is_inter(&self) -> bool {
        self.inner.local.is_some()
    }

    /// The local group of an intercommunicator, as an intracommunicator
    /// private to it; `None` for an intracommunicator.
    pub fn local_comm(&self) -> Option<&Communicator> {
        self.inner.local.as_ref()
    }

    /// An intercommunicator between this communicator's ranks and another
    /// group, like `MPI_Intercomm_create`: collective over this
    /// communicator, whose rank `local_leader` reaches the other group's
    /// leader through `peer` (significant at the leader only: the peer
    /// communicator, the remote leader's rank in it, and the tag of the
    /// leaders' messages on it).
    #[track_caller]
    pub fn intercomm_create(
        &self,
        local_leader: usize,
        peer: Option<(&Communicator, usize, i32)>,
    ) -> Result<Communicator> {
        let created = self.intercomm_from(local_leader, peer);
        self.handled("intercomm_create", created)
    }

    fn intercomm_from(&self, local_leader: usize, peer: Option<(&Communicator, usize, i32)>) -> Result<Communicator> {
        let inner = self.live()?;
        self.world_rank_of(local_leader)?;
        let local = self.dup_from(self.span_without_site())?;
        let proposal = local.proposed_ctx()?;
        let members: Vec<usize> = inner.group.clone();
        let remote = match (inner.rank == local_leader, peer) {
            (true, Some((peer, remote_leader, tag))) => {
                let mine = Offer { ctx: proposal, high: false, members };
                Some(peer.world_rank_of(remote_leader).and_then(|world| {
                    if inner.group.contains(&world) {
                        // Its own group's rank would never answer.
                        return Err(Error::RemoteLeaderInGroup { rank: remote_leader, world });
                    }
                    exchange_offers(&mine, |send, recv| {
                        peer.leader_exchange(peer.p2p_ctx(), remote_leader, tag, send, recv)
                    })
                }))
            }
            (true, None) => Some(Err(Error::InvalidRank { rank: local_leader, size: self.size() })),
            (false, _) => None,
        };
        let agreed = local.hand_out_from(local_leader, remote.map(|r| r.map(|r| (proposal.max(r.ctx), r))))?;
        let (ctx, theirs) = agreed;
        Ok(Communicator::new_inter(local, ctx, theirs.members))
    }

    /// An intracommunicator of both groups of this intercommunicator, like
    /// `MPI_Intercomm_merge`: the group that passes `high` false comes
    /// first; if both pass the same, the group whose leader has the lower
    /// world rank. Collective over both groups.
    #[track_caller]
    pub fn merge(&self, high: bool) -> Result<Communicator> {
        let merged = self.merge_from(high);
        self.handled("merge", merged)
    }

    fn merge_from(&self, high: bool) -> Result<Communicator> {
        let inner = self.live()?;
        let local = self.local_comm().ok_or(Error::NotIntercomm)?;
        let proposal = local.proposed_ctx()?;
        let mine = Offer { ctx: proposal, high, members: local.inner.group.clone() };
        let remote = match local.rank() {
            0 => Some(exchange_offers(&mine, |send, recv| {
                self.leader_exchange(self.coll_ctx(), 0, MANAGEMENT_TAG, send, recv)
            })),
            _ => None,
        };
        let (ctx, theirs) = local.hand_out_from(0, remote.map(|r| r.map(|r| (proposal.max(r.ctx), r))))?;
        let local_first = match (high, theirs.high) {
            (false, true) => true,
            (true, false) => false,
            _ => mine.members[0] < theirs.members[0],
        };
        let (group, rank) = match local_first {
            true => ([&mine.members[..], &theirs.members[..]].concat(), local.rank()),
            false => ([&theirs.members[..], &mine.members[..]].concat(), theirs.members.len() + local.rank()),
        };
        let merged = Communicator::new(inner.rank_ctx.clone(), ctx as u32, rank, group, None);
        merged.set_error_handler(self.error_handler());
        Ok(merged)
    }

    /// A duplicate of this intercommunicator: the same groups, new
    /// contexts. Collective over both groups.
    pub(crate) fn dup_inter(&self) -> Result<Communicator> {
        self.live()?;
        let local = self.local_comm().ok_or(Error::NotIntercomm)?.dup_from(self.span_without_site())?;
        let proposal = local.proposed_ctx()?;
        let mine = Offer { ctx: proposal, high: false, members: local.inner.group.clone() };
        let remote = match local.rank() {
            0 => Some(exchange_offers(&mine, |send, recv| {
                self.leader_exchange(self.coll_ctx(), 0, MANAGEMENT_TAG, send, recv)
            })),
            _ => None,
        };
        let (ctx, theirs) = local.hand_out_from(0, remote.map(|r| r.map(|r| (proposal.max(r.ctx), r))))?;
        let dup = Communicator::new_inter(local, ctx, theirs.members);
        dup.set_error_handler(self.error_handler());
        Ok(dup)
    }

    pub(crate) fn new_inter(local: Communicator, ctx: u64, remote: Vec<usize>) -> Communicator {
        let (rank_ctx, rank, errors) = (local.inner.rank_ctx.clone(), local.rank(), local.error_handler());
        let inter = Communicator::build(rank_ctx, ctx as u32, rank, remote, None, Some(local));
        inter.set_error_handler(errors);
        inter
    }

    /// The context every member of this communicator can take: the
    /// largest of their lowest unused ones. Collective.
    fn proposed_ctx(&self) -> Result<u64> {
        let next = self.inner.rank_ctx.next_ctx()? as u64;
        let table = allgather_words(self, &[next], |_| {})?;
        Ok(table.iter().map(|w| w[0]).max().expect("a communicator has members"))
    }

    /// Rank `leader` hands every member what it agreed with the other
    /// group (its `decided`: the context and the other group's offer), or
    /// that it failed, so that no member waits for a leader that gave up.
    fn hand_out_from(&self, leader: usize, decided: Option<Result<(u64, Offer)>>) -> Result<(u64, Offer)> {
        let ctx = self.coll_ctx();
        let words = match &decided {
            Some(Ok((agreed, offer))) => encode(*agreed, offer),
            Some(Err(_)) => vec![LEADER_FAILED],
            None => {
                let (bytes, _) = self.recv_owned(ctx, 8, Source::Rank(leader), Tag::Is(MANAGEMENT_TAG))?;
                let world = self.world_rank_of(leader).unwrap_or(leader);
                if bytes.as_slice() == LEADER_FAILED.to_ne_bytes() {
                    return Err(Error::LeaderFailed { leader: world });
                }
                return decode(bytes.as_slice()).ok_or_else(|| malformed(world));
            }
        };
        for member in (0..self.size()).filter(|&m| m != leader) {
            self.send_bytes(ctx, bytemuck::cast_slice(&words), member, MANAGEMENT_TAG)?;
        }
        decided.expect("the leader decided")
    }

    /// Sends `send` to rank `dest` on context `ctx` while receiving from
    /// it: the leaders' exchange, whatever its length.
    fn leader_exchange(&self, ctx: u32, dest: usize, tag: i32, send: &[u8], recv: &mut Vec<u8>) -> Result<()> {
        let len = (send.len() as u64).to_ne_bytes();
        let mut their_len = [0u8; 8];
        let (sent, got) =
            self.sendrecv_halves(ctx, &len, dest, tag, &mut their_len, Source::Rank(dest), Tag::Is(tag))?;
        sent?;
        got?;
        recv.resize(u64::from_ne_bytes(their_len) as usize, 0);
        let (sent, got) = self.sendrecv_halves(ctx, send, dest, tag, recv, Source::Rank(dest), Tag::Is(tag))?;
        sent?;
        got.map(|_| ())
    }
}

/// The leaders' exchange of their groups' offers: the other group's.
fn exchange_offers(mine: &Offer, exchange: impl FnOnce(&[u8], &mut Vec<u8>) -> Result<()>) -> Result<Offer> {
    let words = encode(0, mine);
    let mut theirs = Vec::new();
    exchange(bytemuck::cast_slice(&words), &mut theirs)?;
    decode(&theirs).map(|(_, offer)| offer).ok_or_else(|| malformed(usize::MAX))
}

/// The error of an offer that does not decode: another program's message
/// on the peer communicator's tag, or memory gone bad.
fn malformed(source_rank: usize) -> Error {
    Error::Corrupt {
        source_rank,
        detail: "malformed intercommunicator offer (another message on the leaders' tag?)".into(),
    }
}

/// What a leader that failed hands its members (an offer has 4 words at
/// least).
const LEADER_FAILED: u64 = u64::MAX;

/// `[agreed, ctx, high, n, members...]`.
fn encode(agreed: u64, offer: &Offer) -> Vec<u64> {
    let head = [agreed, offer.ctx, offer.high as u64, offer.members.len() as u64];
    head.into_iter().chain(offer.members.iter().map(|&m| m as u64)).collect()
}

fn decode(bytes: &[u8]) -> Option<(u64, Offer)> {
    let words: Vec<u64> = bytes.chunks_exact(8).map(|b| u64::from_ne_bytes(b.try_into().expect("8 bytes"))).collect();
    let (&[agreed, ctx, high, n], rest) = words.split_first_chunk::<4>()?;
    let members: Vec<usize> = rest.iter().map(|&m| m as usize).collect();
    (members.len() as u64 == n).then_some((agreed, Offer { ctx, high: high != 0, members }))
}
