//! Blocking point-to-point: typed buffers, vectors, serialised values.
//!
//! Every call checks its arguments first (rank in range, tag valid,
//! communicator alive) and returns a typed error with the numbers; nothing
//! panics on user error.

use bytemuck::Pod;
use grappe_proto::{Completion, OwnedBytes, RecvTarget, Started, Status};
use grappe_trace::EventKind;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::selectors::{Source, TAG_UB, Tag};
use crate::{Buffer, BufferMut, Communicator, Error, Result};

impl Communicator {
    /// Sends `buf` to rank `dest` with `tag` (standard mode: returns when
    /// the buffer may be reused).
    #[track_caller]
    #[inline(always)]
    pub fn send<B: Buffer + ?Sized>(&self, buf: &B, dest: usize, tag: i32) -> Result<()> {
        let span = self.span();
        let sent = self.send_bytes(self.p2p_ctx(), buf.bytes(), dest, tag);
        self.trace_sent(span, dest, tag, buf.bytes().len(), false, &sent);
        self.handled("send", sent)
    }

    /// Sends `buf` to rank `dest` with `tag` in synchronous mode (MPI's
    /// `MPI_Ssend`): returns once the receiver has matched the message,
    /// whatever its size.
    #[track_caller]
    pub fn ssend<B: Buffer + ?Sized>(&self, buf: &B, dest: usize, tag: i32) -> Result<()> {
        let span = self.span();
        let sent = self.send_bytes_as(self.p2p_ctx(), buf.bytes(), dest, tag, true);
        self.trace_sent(span, dest, tag, buf.bytes().len(), true, &sent);
        self.handled("ssend", sent)
    }

    /// Receives into `buf` a message from `src` with `tag` (either may be a
    /// wildcard). The message may be shorter than the buffer; a longer one
    /// is [`Error::Truncated`].
    #[track_caller]
    #[inline(always)]
    pub fn recv<B: BufferMut + ?Sized>(
        &self,
        buf: &mut B,
        src: impl Into<Source>,
        tag: impl Into<Tag>,
    ) -> Result<Status> {
        let span = self.span();
        let elem = buf.elem_size();
        let (src, tag) = (src.into(), tag.into());
        let done = self.steered(src, tag, |asked, tag| self.recv_done(self.p2p_ctx(), buf.bytes_mut(), asked, tag));
        self.trace_done(span, src, tag, &done);
        self.handled("recv", done.and_then(|done| check_elements(done.status, elem)))
    }

    /// Sends `send` to `dest` and receives into `recv` from `src`, without
    /// deadlock whatever the peers do first.
    #[track_caller]
    pub fn sendrecv<S, R>(
        &self,
        send: &S,
        dest: usize,
        send_tag: i32,
        recv: &mut R,
        src: impl Into<Source>,
        recv_tag: impl Into<Tag>,
    ) -> Result<Status>
    where
        S: Buffer + ?Sized,
        R: BufferMut + ?Sized,
    {
        let span = self.span();
        let elem = recv.elem_size();
        let (ctx, bytes, src, recv_tag) = (self.p2p_ctx(), send.bytes(), src.into(), recv_tag.into());
        let halves = self.steer(src, recv_tag).and_then(|steered| {
            let halves =
                self.sendrecv_halves(ctx, bytes, dest, send_tag, recv.bytes_mut(), steered.source, steered.tag);
            if let Ok((_, Ok(done))) = &halves {
                self.rank_context().matched(steered.slot, &done.status);
            }
            halves
        });
        self.trace_sendrecv(span, dest, send_tag, bytes.len(), src, recv_tag, &halves);
        let status = halves.and_then(|(sent, received)| {
            sent?;
            check_elements(received?.status, elem)
        });
        self.handled("sendrecv", status)
    }

    /// Sends a vector. To a thread rank of the same process the allocation
    /// itself moves (no copy); to another process it is copied.
    #[track_caller]
    pub fn send_vec<T: Pod>(&self, data: Vec<T>, dest: usize, tag: i32) -> Result<()> {
        let span = self.span();
        let bytes = std::mem::size_of_val(&data[..]);
        let sent = self.send_owned(data, dest, tag);
        self.trace_sent(span, dest, tag, bytes, false, &sent);
        self.handled("send_vec", sent)
    }

    fn send_owned<T: Pod>(&self, data: Vec<T>, dest: usize, tag: i32) -> Result<()> {
        let inner = self.live()?;
        let world = self.check_dest(dest, tag)?;
        let mut engine = inner.rank_ctx.engine();
        match engine.isend_owned(OwnedBytes::from_vec(data), world, self.p2p_ctx(), tag, inner.rank as u32)? {
            Started::Pending(id) => engine.wait(id)?,
            Started::Done(_) => return Ok(()),
        };
        Ok(())
    }

    /// Receives a whole message as a vector, whatever its length.
    #[track_caller]
    pub fn recv_vec<T: Pod>(&self, src: impl Into<Source>, tag: impl Into<Tag>) -> Result<(Vec<T>, Status)> {
        let span = self.span();
        let (src, tag) = (src.into(), tag.into());
        let align = std::mem::align_of::<T>();
        let received = self.steered(src, tag, |asked, tag| self.recv_owned(self.p2p_ctx(), align, asked, tag));
        let received = self.trace_owned(span, src, tag, received);
        let elements = received.and_then(|(owned, status)| {
            let type_size = std::mem::size_of::<T>();
            let elements =
                owned.into_vec().map_err(|owned| Error::TypeSizeMismatch { bytes: owned.len(), type_size })?;
            Ok((elements, status))
        });
        self.handled("recv_vec", elements)
    }

    /// Sends any serialisable value (bincode encoding).
    #[track_caller]
    pub fn send_obj<T: Serialize + ?Sized>(&self, value: &T, dest: usize, tag: i32) -> Result<()> {
        let span = self.span();
        let sent = bincode::serialize(value)
            .map_err(|e| Error::Serialize { type_name: std::any::type_name::<T>(), reason: e.to_string() })
            .and_then(|bytes| {
                let sent = self.send_bytes(self.p2p_ctx(), &bytes, dest, tag);
                self.trace_sent(span, dest, tag, bytes.len(), false, &sent);
                sent
            });
        self.handled("send_obj", sent)
    }

    /// Receives a value sent with [`send_obj`](Self::send_obj).
    #[track_caller]
    pub fn recv_obj<T: DeserializeOwned>(&self, src: impl Into<Source>, tag: impl Into<Tag>) -> Result<(T, Status)> {
        let span = self.span();
        let (src, tag) = (src.into(), tag.into());
        let received = self.steered(src, tag, |asked, tag| self.recv_owned(self.p2p_ctx(), 8, asked, tag));
        let value = self.trace_owned(span, src, tag, received).and_then(|(owned, status)| {
            let value = bincode::deserialize(owned.as_slice()).map_err(|e| Error::Deserialize {
                source_rank: status.source,
                bytes: status.bytes,
                type_name: std::any::type_name::<T>(),
                reason: e.to_string(),
            })?;
            Ok((value, status))
        });
        self.handled("recv_obj", value)
    }

    /// Waits for a matching message and returns its status without
    /// receiving it.
    #[track_caller]
    pub fn probe(&self, src: impl Into<Source>, tag: impl Into<Tag>) -> Result<Status> {
        let span = self.span();
        let (source, selector) = (src.into(), tag.into());
        let status = self.steered(source, selector, |asked, tag| {
            let (src, tag) = self.check_recv(asked, tag)?;
            let inner = self.live()?;
            let status = inner.rank_ctx.engine().probe(src, self.p2p_ctx(), tag).map_err(Error::from);
            self.trace_probed(span, EventKind::Probe, source, selector, status.as_ref().map(|s| Some(*s)));
            status
        });
        self.handled("probe", status)
    }

    /// The status of a matching message that has arrived, if any.
    #[track_caller]
    pub fn iprobe(&self, src: impl Into<Source>, tag: impl Into<Tag>) -> Result<Option<Status>> {
        let span = self.span();
        let (source, selector) = (src.into(), tag.into());
        let status = self.probe_steered(source, selector, |asked, tag| {
            let (src, tag) = self.check_recv(asked, tag)?;
            let inner = self.live()?;
            let status = inner.rank_ctx.engine().iprobe(src, self.p2p_ctx(), tag).map_err(Error::from);
            self.trace_probed(span, EventKind::Iprobe, source, selector, status.as_ref().copied());
            status
        });
        self.handled("iprobe", status)
    }

    /// A standard send of `bytes` that completes at once (an eager message
    /// with room in the peer's mailbox), or is not started: `None`, and the
    /// caller sends the general way. For a library whose other threads may
    /// need the engine while this one would wait in it (MPI's
    /// `MPI_THREAD_MULTIPLE`): what completes at once never waits.
    #[track_caller]
    #[inline]
    pub fn send_if_immediate(&self, bytes: &[u8], dest: usize, tag: i32) -> Option<Result<()>> {
        let inner = self.live().ok()?;
        let world = self.check_dest(dest, tag).ok()?;
        let span = self.span();
        let (data, len, me) = (bytes.as_ptr(), bytes.len(), inner.rank as u32);
        // SAFETY: `bytes` is borrowed for the call, which is all a send
        // that completes at once needs.
        unsafe { inner.rank_ctx.engine().send_if_immediate(data, len, world, self.p2p_ctx(), tag, me) }?;
        let sent = Ok(());
        self.trace_sent(span, dest, tag, len, false, &sent);
        Some(sent)
    }

    /// A blocking receive into `buf` from `src` with `tag` (both named) of
    /// a message already here, or `None`, and nothing is started: as
    /// [`send_if_immediate`](Self::send_if_immediate), for callers that
    /// poll between pauses of their own. `first` says this is the
    /// receive's first look (a message found then arrived before it).
    #[track_caller]
    #[inline]
    pub fn recv_if_here(&self, buf: &mut [u8], src: usize, tag: i32, first: bool) -> Option<Result<Status>> {
        let (source, tag) = (Source::Rank(src), Tag::Is(tag));
        let (world, tag_word) = match self.check_recv(source, tag).ok()? {
            (Some(world), Some(tag_word)) => (world, tag_word),
            _ => return None,
        };
        let inner = self.live().ok()?;
        let span = self.span();
        let target = RecvTarget::Buffer { ptr: buf.as_mut_ptr(), cap: buf.len() };
        // SAFETY: `buf` is borrowed for the call, which completes the
        // receive or starts nothing.
        let done =
            unsafe { inner.rank_ctx.engine().recv_if_here(target, world, self.p2p_ctx(), Some(tag_word), first) }?;
        let done = done.map_err(Error::from);
        self.trace_done(span, source, tag, &done);
        Some(self.handled("recv", done.map(|done| done.status)))
    }

    // ---- byte-level paths, shared with the collectives ----

    #[inline(always)]
    pub(crate) fn send_bytes(&self, ctx: u32, bytes: &[u8], dest: usize, tag: i32) -> Result<()> {
        self.send_bytes_as(ctx, bytes, dest, tag, false)
    }

    /// A blocking send, synchronous (`sync`, see [`Communicator::ssend`]) or not.
    #[inline(always)]
    pub(crate) fn send_bytes_as(&self, ctx: u32, bytes: &[u8], dest: usize, tag: i32, sync: bool) -> Result<()> {
        let inner = self.live()?;
        let world = self.check_dest(dest, tag)?;
        let mut engine = inner.rank_ctx.engine();
        let (data, len, me) = (bytes.as_ptr(), bytes.len(), inner.rank as u32);
        // SAFETY: `bytes` stays borrowed until the send completes below.
        let started = unsafe {
            match sync {
                true => engine.issend(data, len, world, ctx, tag, me),
                false => engine.isend(data, len, world, ctx, tag, me),
            }
        };
        match started? {
            Started::Done(_) => return Ok(()),
            Started::Pending(id) => engine.wait(id)?,
        };
        Ok(())
    }

    pub(crate) fn recv_bytes(&self, ctx: u32, buf: &mut [u8], src: Source, tag: Tag) -> Result<Status> {
        self.recv_done(ctx, buf, src, tag).map(|done| done.status)
    }

    /// A blocking receive, with all the engine says about it.
    #[inline(always)]
    pub(crate) fn recv_done(&self, ctx: u32, buf: &mut [u8], src: Source, tag: Tag) -> Result<Completion> {
        let (src, tag) = self.check_recv(src, tag)?;
        let inner = self.live()?;
        let target = RecvTarget::Buffer { ptr: buf.as_mut_ptr(), cap: buf.len() };
        // SAFETY: `buf` stays borrowed for the whole blocking receive.
        Ok(unsafe { inner.rank_ctx.engine().recv(target, src, ctx, tag) }?)
    }

    pub(crate) fn recv_owned(&self, ctx: u32, align: usize, src: Source, tag: Tag) -> Result<(OwnedBytes, Status)> {
        let (src, tag) = self.check_recv(src, tag)?;
        let inner = self.live()?;
        // SAFETY: the runtime allocates the buffer; nothing is borrowed.
        let done = unsafe { inner.rank_ctx.engine().recv(RecvTarget::Allocate { align }, src, ctx, tag) }?;
        let data = done.data.expect("allocating receives return their buffer");
        Ok((data, done.status))
    }

    /// Sends `send` while receiving into `recv`: each half's outcome apart
    /// (a trace records each; the receive's completion tells its status and
    /// whether its message had arrived before it was posted); `Err` if it
    /// was refused before it started.
    #[allow(clippy::too_many_arguments)] // MPI_Sendrecv's own
    pub(crate) fn sendrecv_halves(
        &self,
        ctx: u32,
        send: &[u8],
        dest: usize,
        send_tag: i32,
        recv: &mut [u8],
        src: Source,
        recv_tag: Tag,
    ) -> Result<(Result<()>, Result<Completion>)> {
        let (src, recv_tag) = self.check_recv(src, recv_tag)?;
        let inner = self.live()?;
        let world = self.check_dest(dest, send_tag)?;
        let target = RecvTarget::Buffer { ptr: recv.as_mut_ptr(), cap: recv.len() };
        let mut engine = inner.rank_ctx.engine();
        // SAFETY: both buffers stay borrowed until both requests complete.
        // A message already here and too long fails the receive, not the
        // send: the peer waits for it.
        let recv_req = match unsafe { engine.irecv(target, src, ctx, recv_tag) } {
            Err(e) if !matches!(e, grappe_proto::Error::Truncated { .. }) => return Err(e.into()),
            posted => posted,
        };
        // SAFETY: as above: `send` stays borrowed until the send completes below.
        let send_req = unsafe { engine.isend(send.as_ptr(), send.len(), world, ctx, send_tag, inner.rank as u32) };
        let send_result = match send_req {
            Ok(Started::Pending(id)) => engine.wait(id).map(|_| ()),
            Ok(Started::Done(_)) => Ok(()),
            Err(e) => Err(e),
        };
        let received = match recv_req {
            Ok(Started::Done(done)) => Ok(done),
            Ok(Started::Pending(id)) => engine.wait(id),
            Err(truncated) => Err(truncated),
        };
        Ok((send_result.map_err(Error::from), received.map_err(Error::from)))
    }

    /// World rank of `dest`, after checking it and the tag.
    #[inline]
    pub(crate) fn check_dest(&self, dest: usize, tag: i32) -> Result<usize> {
        if !(0..=TAG_UB).contains(&tag) {
            return Err(Error::InvalidTag { tag, max: TAG_UB });
        }
        self.world_rank_of(dest)
    }

    /// Source and tag as the engine wants them: world rank or any; tag or any.
    #[inline]
    pub(crate) fn check_recv(&self, src: Source, tag: Tag) -> Result<(Option<usize>, Option<i32>)> {
        let src = match src {
            Source::Rank(rank) => Some(self.world_rank_of(rank)?),
            Source::Any => None,
        };
        let tag = match tag {
            Tag::Is(t) if t < 0 => return Err(Error::InvalidTag { tag: t, max: TAG_UB }),
            Tag::Is(t) => Some(t),
            Tag::Any => None,
        };
        Ok((src, tag))
    }
}

/// What a completed call reports of the message it matched.
pub(crate) trait Matched {
    fn matched_status(&self) -> &Status;
}

impl Matched for Completion {
    fn matched_status(&self) -> &Status {
        &self.status
    }
}

impl Matched for Status {
    fn matched_status(&self) -> &Status {
        self
    }
}

impl Matched for (OwnedBytes, Status) {
    fn matched_status(&self) -> &Status {
        &self.1
    }
}

impl Communicator {
    /// Runs a receive or blocking probe asking for (`source`, `tag`) as
    /// the rank's match log steers it (`--record-matches`,
    /// `--replay-matches`): `call` gets what to ask for; what it matched
    /// is logged. Explicit calls, and every call without a log, cost one
    /// test.
    #[inline(always)]
    pub(crate) fn steered<T: Matched>(
        &self,
        source: Source,
        tag: Tag,
        call: impl FnOnce(Source, Tag) -> Result<T>,
    ) -> Result<T> {
        if !matches!(source, Source::Any) && !matches!(tag, Tag::Any) {
            return call(source, tag);
        }
        let steered = self.steer(source, tag)?;
        if let Some(index) = steered.replayed {
            self.await_replayed(index, tag, steered)?;
        }
        let done = call(steered.source, steered.tag);
        if let Ok(done) = &done {
            self.rank_context().matched(steered.slot, done.matched_status());
        }
        done
    }

    /// Before a blocking call forced to the logged source and tag, waits
    /// for the first message from that source that the call's own tag
    /// selector `asked_tag` accepts: the one the recorded run matched,
    /// since a source's messages arrive in the order it sent them. Another
    /// tag means the program took another path than the recorded run,
    /// and the call fails rather than waiting for a message that may
    /// never come.
    fn await_replayed(&self, index: usize, asked_tag: Tag, steered: crate::matches::Steered) -> Result<()> {
        let (Source::Rank(source), Tag::Is(logged)) = (steered.source, steered.tag) else { return Ok(()) };
        let (src, tag) = self.check_recv(steered.source, asked_tag)?;
        let ctx = self.p2p_ctx();
        let patience = self.rank_context().replay_patience();
        let deadline = std::time::Instant::now() + patience;
        let mut first = None;
        self.live()?.rank_ctx.engine().block_until(|engine| {
            first = engine.first_arrived(src, ctx, tag);
            first.is_some() || std::time::Instant::now() > deadline
        })?;
        let Some(first) = first else {
            let detail = format!(
                "no message from source {source} came in {patience:?} (GRAPPE_REPLAY_PATIENCE_S): the ranks took \
                 another path than the recorded run"
            );
            return Err(self.rank_context().replay_diverged(index, detail));
        };
        if first.tag != logged {
            let detail = format!(
                "the log says source {source} tag {logged}, but the next message from {source} has tag {}",
                first.tag
            );
            return Err(self.rank_context().replay_diverged(index, detail));
        }
        Ok(())
    }

    /// The match log's steering of a wildcard call on this communicator.
    pub(crate) fn steer(&self, source: Source, tag: Tag) -> Result<crate::matches::Steered> {
        self.rank_context().steer(self.p2p_ctx(), source, tag)
    }

    /// As [`steered`](Self::steered), for a non-blocking probe (see
    /// [`crate::matches::MatchLog::steer_probe`]).
    pub(crate) fn probe_steered<T: Matched>(
        &self,
        source: Source,
        tag: Tag,
        call: impl FnOnce(Source, Tag) -> Result<Option<T>>,
    ) -> Result<Option<T>> {
        if !matches!(source, Source::Any) && !matches!(tag, Tag::Any) {
            return call(source, tag);
        }
        let (ctx, rank_ctx) = (self.p2p_ctx(), self.rank_context());
        let steered = rank_ctx.steer_probe(ctx, source, tag)?;
        let found = call(steered.source, steered.tag);
        if let Ok(Some(found)) = &found {
            rank_ctx.probed(ctx, source, tag, found.matched_status());
        }
        found
    }
}

impl Communicator {
    /// Records a receive into a buffer the runtime allocated (which never
    /// truncates), and passes its outcome on.
    #[inline]
    fn trace_owned(
        &self,
        span: crate::trace::Span,
        src: Source,
        tag: Tag,
        received: Result<(OwnedBytes, Status)>,
    ) -> Result<(OwnedBytes, Status)> {
        match &received {
            Ok((_, status)) => self.trace_recv(span, src, &Ok(*status), false),
            Err(e) if crate::trace::failed_call(e) => self.trace_failed_recv(span, src, tag),
            Err(_) => {}
        }
        received
    }
}

/// A received length must be a whole number of elements.
#[inline]
pub(crate) fn check_elements(status: Status, elem: usize) -> Result<Status> {
    if elem > 1 && status.bytes % elem != 0 {
        return Err(Error::TypeSizeMismatch { bytes: status.bytes, type_size: elem });
    }
    Ok(status)
}
