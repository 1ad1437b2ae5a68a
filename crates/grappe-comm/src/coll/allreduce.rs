//! Allreduce: every rank gets the reduction of every rank's vector.

use bytemuck::Pod;
use grappe_proto::{Error, Result};

use super::arena::{Arena, SLOT_BYTES, Slots};
use super::ops::Operation;
use crate::selectors::{Source, Tag};
use crate::{Buffer, BufferMut, Communicator};

/// Tag of allreduce messages on the collective context.
const TAG: i32 = 2;

impl Communicator {
    /// Reduces `send` over all ranks with `op` into `recv` on every rank.
    /// Results combine contributions in rank order, so every rank gets the
    /// same bits, run after run.
    pub fn allreduce<S, R, O>(&self, send: &S, recv: &mut R, op: O) -> Result<()>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Elem = S::Elem> + ?Sized,
        O: Operation<S::Elem>,
    {
        self.live()?;
        let (send, recv) = (send.elems(), recv.elems_mut());
        if send.len() != recv.len() {
            return Err(Error::BufferSize {
                op: "allreduce",
                detail: format!("send has {} elements, receive {}", send.len(), recv.len()),
            });
        }
        let bytes = std::mem::size_of_val(send);
        match Arena::of(self) {
            Some(arena) if bytes <= SLOT_BYTES => {
                arena.exchange(bytemuck::cast_slice(send), bytemuck::cast_slice_mut(recv), |slots, result| {
                    reduce_in_rank_order(slots, result, &op)
                })
            }
            _ => self.allreduce_by_messages(send, recv, &op),
        }
    }

    /// Gather to rank 0 in rank order, reduce, broadcast back.
    fn allreduce_by_messages<T: Pod, O: Operation<T>>(&self, send: &[T], recv: &mut [T], op: &O) -> Result<()> {
        let ctx = self.coll_ctx();
        recv.copy_from_slice(send);
        if self.rank() == 0 {
            let mut incoming = send.to_vec();
            for src in 1..self.size() {
                self.recv_bytes(ctx, bytemuck::cast_slice_mut(&mut incoming), Source::Rank(src), Tag::Is(TAG))?;
                op.combine(recv, &incoming);
            }
            for dest in 1..self.size() {
                self.send_bytes(ctx, bytemuck::cast_slice(recv), dest, TAG)?;
            }
        } else {
            self.send_bytes(ctx, bytemuck::cast_slice(send), 0, TAG)?;
            self.recv_bytes(ctx, bytemuck::cast_slice_mut(recv), Source::Rank(0), Tag::Is(TAG))?;
        }
        Ok(())
    }
}

/// `result = slot[0] ⊕ slot[1] ⊕ ...`, slots holding `T` elements.
/// Arena slots are 64-byte aligned, so they are read in place as `[T]`.
fn reduce_in_rank_order<T: Pod, O: Operation<T>>(slots: &Slots<'_>, result: &mut [u8], op: &O) {
    let acc: &mut [T] = bytemuck::cast_slice_mut(result);
    acc.copy_from_slice(bytemuck::cast_slice(slots.get(0)));
    for rank in 1..slots.len() {
        op.combine(acc, bytemuck::cast_slice(slots.get(rank)));
    }
}
