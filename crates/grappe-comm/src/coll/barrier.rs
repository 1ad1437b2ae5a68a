//! Barrier: an empty arena exchange, or dissemination with messages.

use crate::Result;
use grappe_trace::CollectiveKind;

use super::signature::Signature;
use super::tags;
use super::xfer::Channel;
use crate::Communicator;

impl Communicator {
    /// Blocks until every rank of the communicator has called `barrier`.
    #[track_caller]
    pub fn barrier(&self) -> Result<()> {
        let bytes = 0;
        self.traced(CollectiveKind::Barrier, None, bytes, || {
            let mut ch = Channel::new(self, "barrier", tags::BARRIER)?;
            ch.run(Signature::sized(CollectiveKind::Barrier, 0), |ch| {
                if ch.size == 1 {
                    return Ok(());
                }
                match ch.arena() {
                    Some(arena) => arena.exchange(ch, &[], &mut [], |_, _| {}),
                    None => dissemination(ch),
                }
            })
        })
    }
}

/// ⌈log2 n⌉ rounds: in round k, send to rank + 2^k, receive from rank - 2^k.
fn dissemination(ch: &Channel<'_>) -> Result<()> {
    let (n, me) = (ch.size, ch.rank);
    let mut distance = 1;
    while distance < n {
        let to = (me + distance) % n;
        let from = (me + n - distance) % n;
        ch.sendrecv::<u8>(&[], to, &mut [], from)?;
        distance *= 2;
    }
    Ok(())
}
