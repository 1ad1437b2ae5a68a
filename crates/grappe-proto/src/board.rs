//! Where a rank stands in the collective calls of a communicator, for
//! the peers that wait for it.
//!
//! A rank whose collective call waits for a message (or for a receiver)
//! that does not come, for as long as a sleep that nobody cut short, asks
//! that peer where it stands: a probe record on the communicator's
//! collective context, which the peer's engine answers by itself with
//! its [`CallBoard`]'s words. Ranks that called collectives with
//! mismatched sizes may have chosen different algorithms and sent their
//! messages to ranks that do not expect them, so that nobody ever
//! receives a message of the wrong size: the answer shows it (the peer is
//! at the same call with another signature, or went past the call without
//! sending what this rank waits for), and this rank then revokes the
//! communicator's collectives like a rank that received a message of the
//! wrong size.

use crate::Mismatch;

/// A communicator's record of this rank's collective calls, which the
/// engine reads to answer probes and to judge answers (see the module
/// doc). Written by the communicator at the start of every call.
pub trait CallBoard: Send + Sync {
    /// This rank's latest call, as the words of an answer: its number
    /// among the communicator's calls first, then what describes it.
    fn current(&self) -> [u64; 4];

    /// Whether `peer`'s answer `theirs` shows a call that cannot match
    /// this rank's latest one, and how. `awaited`: this rank still waits
    /// for `peer` (a receive without its message, a send it has not
    /// taken) after everything `peer` did before answering (records
    /// between two ranks keep their order).
    fn stray(&self, peer: usize, theirs: [u64; 4], awaited: bool) -> Option<Mismatch>;

    /// The communicator's members, as world ranks, by communicator rank.
    fn members(&self) -> &[usize];

    /// This rank in the communicator.
    fn rank(&self) -> usize;

    /// The engine revoked the context (see `Engine::revoke`): the
    /// communicator's next calls fail at once, without asking the engine.
    fn revoked(&self);
}
