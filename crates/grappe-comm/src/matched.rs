//! Matched probes (MPI's `MPI_Mprobe`, `MPI_Improbe`, `MPI_Mrecv`,
//! `MPI_Imrecv`): a probe that takes the message out of matching, so that
//! no other receive (of another thread, or a wildcard one) can take it
//! before the receive that the probe's status sized.

use grappe_proto::{CLAIMED_CTX, RecvTarget, Started};
use grappe_trace::EventKind;

use crate::p2p::check_elements;
use crate::selectors::{Source, Tag};
use crate::{BufferMut, Communicator, Error, Request, Result, Scope, Status};

/// A message claimed by [`Communicator::mprobe`] or [`Communicator::improbe`]:
/// only [`Communicator::mrecv`] or [`Communicator::imrecv`] on the same
/// communicator receive it.
#[derive(Debug)]
#[must_use = "a claimed message stays in the runtime until received"]
pub struct Message {
    claim: i32,
    status: Status,
}

impl Message {
    /// The message's source, tag and length.
    pub fn status(&self) -> Status {
        self.status
    }
}

impl crate::p2p::Matched for Message {
    fn matched_status(&self) -> &Status {
        &self.status
    }
}

impl Communicator {
    /// Waits for a matching message and claims it.
    #[track_caller]
    pub fn mprobe(&self, src: impl Into<Source>, tag: impl Into<Tag>) -> Result<Message> {
        let span = self.span();
        let (source, selector) = (src.into(), tag.into());
        let message = self.steered(source, selector, |asked, tag| {
            let (src, tag) = self.check_recv(asked, tag)?;
            let inner = self.live()?;
            let claim = inner.rank_ctx.next_claim();
            let status = inner.rank_ctx.engine().claim_blocking(src, self.p2p_ctx(), tag, claim).map_err(Error::from);
            self.trace_probed(span, EventKind::Probe, source, selector, status.as_ref().map(|s| Some(*s)));
            status.map(|status| Message { claim, status })
        });
        self.handled("mprobe", message)
    }

    /// Claims a matching message if one has arrived.
    #[track_caller]
    pub fn improbe(&self, src: impl Into<Source>, tag: impl Into<Tag>) -> Result<Option<Message>> {
        let span = self.span();
        let (source, selector) = (src.into(), tag.into());
        let message = self.probe_steered(source, selector, |asked, tag| {
            let (src, tag) = self.check_recv(asked, tag)?;
            let inner = self.live()?;
            let claim = inner.rank_ctx.next_claim();
            let status = inner.rank_ctx.engine().claim(src, self.p2p_ctx(), tag, claim).map_err(Error::from);
            self.trace_probed(span, EventKind::Iprobe, source, selector, status.as_ref().copied());
            status.map(|found| found.map(|status| Message { claim, status }))
        });
        self.handled("improbe", message)
    }

    /// Receives a claimed message into `buf`; its status as it arrived.
    #[track_caller]
    pub fn mrecv<B: BufferMut + ?Sized>(&self, message: Message, buf: &mut B) -> Result<Status> {
        let span = self.span();
        let elem = buf.elem_size();
        let (src, tag) = (Source::Rank(message.status.source), Tag::Is(message.claim));
        let mut done = self.recv_done(CLAIMED_CTX, buf.bytes_mut(), src, tag);
        if let Ok(done) = &mut done {
            done.status.tag = message.status.tag;
        }
        self.trace_done(span, src, Tag::Is(message.status.tag), &done);
        self.handled("mrecv", done.and_then(|done| check_elements(done.status, elem)))
    }

    /// Starts receiving a claimed message into `buf` (borrowed for the
    /// scope). The request's status has the message's own tag.
    #[track_caller]
    pub fn imrecv<'scope, B: BufferMut + ?Sized>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        message: Message,
        buf: &'scope mut B,
    ) -> Result<Request<'scope>> {
        let elem = buf.elem_size();
        let bytes = buf.bytes_mut();
        let started = self.live().and_then(|_| {
            let world = self.world_rank_of(message.status.source)?;
            let target = RecvTarget::Buffer { ptr: bytes.as_mut_ptr(), cap: bytes.len() };
            // SAFETY: `bytes` is borrowed for 'scope, and the scope waits for
            // the request, or gives it up, before 'scope ends.
            let started = unsafe { scope.engine().irecv(target, Some(world), CLAIMED_CTX, Some(message.claim)) };
            Ok(started?)
        });
        let request = started.map(|started| match started {
            Started::Done(mut done) => {
                done.status.tag = message.status.tag;
                Started::Done(done)
            }
            pending => pending,
        });
        let request = scope.track_claimed(request, elem, self.error_handler(), message.status.tag);
        self.handled("imrecv", request)
    }
}
