//! Barrier: an empty arena exchange, or dissemination with messages.

use grappe_proto::Result;

use super::arena::Arena;
use crate::Communicator;
use crate::selectors::{Source, Tag};

/// Tag of barrier messages on the collective context.
const TAG: i32 = super::tags::BARRIER;

impl Communicator {
    /// Blocks until every rank of the communicator has called `barrier`.
    #[track_caller]
    pub fn barrier(&self) -> Result<()> {
        let bytes = 0;
        self.traced(grappe_trace::CollectiveKind::Barrier, None, bytes, || {
            self.live()?;
            if self.size() == 1 {
                return Ok(());
            }
            match Arena::of(self) {
                Some(arena) => arena.exchange(&[], &mut [], |_, _| {}),
                None => self.dissemination_barrier(),
            }
        })
    }

    /// ⌈log2 n⌉ rounds: in round k, send to rank + 2^k, receive from rank - 2^k.
    fn dissemination_barrier(&self) -> Result<()> {
        let (n, me, ctx) = (self.size(), self.rank(), self.coll_ctx());
        let mut distance = 1;
        while distance < n {
            let to = (me + distance) % n;
            let from = (me + n - distance) % n;
            self.sendrecv_bytes(ctx, &[], to, TAG, &mut [], Source::Rank(from), Tag::Is(TAG))?;
            distance *= 2;
        }
        Ok(())
    }
}
