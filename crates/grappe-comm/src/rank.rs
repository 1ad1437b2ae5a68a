//! What one rank owns: its protocol engine and its communicator bookkeeping.

use std::cell::{Cell, RefCell, RefMut};

use grappe_proto::Engine;

/// The per-rank state shared by all communicators of the rank.
///
/// A rank runs on one thread (or coroutine) at a time, so interior
/// mutability with `RefCell` is all the synchronisation needed; engine
/// borrows never outlive one call.
pub struct RankContext {
    engine: RefCell<Engine>,
    /// Next context id this rank has not used (see `Communicator::dup`).
    next_ctx: Cell<u32>,
}

impl RankContext {
    /// Wraps a connected engine.
    pub fn new(engine: Engine) -> RankContext {
        RankContext { engine: RefCell::new(engine), next_ctx: Cell::new(crate::communicator::FIRST_FREE_CTX) }
    }

    /// The engine, for one operation.
    #[inline]
    pub fn engine(&self) -> RefMut<'_, Engine> {
        self.engine.borrow_mut()
    }

    pub(crate) fn next_ctx(&self) -> u32 {
        self.next_ctx.get()
    }

    pub(crate) fn used_ctx(&self, ctx: u32) {
        self.next_ctx.set(self.next_ctx.get().max(ctx + crate::communicator::CTX_STRIDE));
    }
}
