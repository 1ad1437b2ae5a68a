//! Non-blocking point-to-point, made safe with scopes.
//!
//! A request borrows its buffer; Rust cannot prevent a request from being
//! forgotten (`mem::forget`) while the runtime still writes into the
//! buffer, so requests live in a [`Scope`], like threads in
//! `std::thread::scope`: buffers are borrowed for the whole scope, and the
//! scope waits for every request still pending when its closure returns,
//! or, if the closure failed, gives them up (see [`Communicator::scope`]).

use std::cell::RefCell;
use std::marker::PhantomData;
use std::rc::Rc;

use crate::{Error, Result, SizeProblem};
use grappe_proto::{RecvTarget, RequestId, Started, Status};

use crate::handlers::{fatal, handled_by};
use crate::p2p::check_elements;
use crate::selectors::{Source, Tag};
use crate::trace::{
    BlockingCall, Span, Traced, delivered, failed_call, trace_completion, trace_failed_completion, traced_span,
};
use crate::{Buffer, BufferMut, Communicator, ErrorHandler, RankContext};
use grappe_trace::EventKind;

/// Requests started inside [`Communicator::scope`].
pub struct Scope<'scope, 'env: 'scope> {
    rank_ctx: Rc<RankContext>,
    pending: RefCell<Vec<RequestId>>,
    /// The error handler of the communicator that opened the scope, for
    /// a failure of a request it waits for at its end.
    errors: ErrorHandler,
    _scope: PhantomData<&'scope mut &'scope ()>,
    _env: PhantomData<&'env mut &'env ()>,
}

/// What the closure of a [`Communicator::scope`] returns: `()`, or a
/// `Result` whose `Err` says that the closure failed. A closure that
/// fails (or panics) makes its scope give up the requests it left
/// pending rather than wait for them.
pub trait ScopeResult {
    /// True if the closure failed.
    fn failed(&self) -> bool;
}

impl ScopeResult for () {
    fn failed(&self) -> bool {
        false
    }
}

impl<T, E> ScopeResult for std::result::Result<T, E> {
    fn failed(&self) -> bool {
        self.is_err()
    }
}

/// A pending send or receive. Wait for it, test it, or let the scope wait.
#[must_use = "a request does nothing unless waited for (or its scope ends)"]
pub struct Request<'scope> {
    rank_ctx: &'scope Rc<RankContext>,
    pending: &'scope RefCell<Vec<RequestId>>,
    state: State,
    elem: usize,
    /// The error handler of the communicator the request was started on.
    errors: ErrorHandler,
    /// Set when the rank records a trace.
    traced: Option<Box<Traced>>,
    /// Set for a request that stands for a blocking call, when the rank
    /// records a trace: recorded as that call once it completes.
    collective: Option<Box<BlockingCall>>,
    /// The tag the status reports, for a claimed message (see
    /// [`Communicator::imrecv`]), whose receive matched it by its claim.
    tag: Option<i32>,
    /// The slot of the rank's match log its match fills, for a wildcard
    /// receive under `--record-matches`.
    match_slot: Option<usize>,
}

enum State {
    Pending(RequestId),
    Done(Status),
    /// Completed, failed: every wait or test reports it (a receive whose
    /// message was longer than its buffer, as MPI's do).
    Failed(Error),
    Taken,
}

impl Communicator {
    /// Runs `f` with a scope for non-blocking requests; when `f` returns,
    /// waits for the requests it left pending.
    ///
    /// If `f` fails (returns an `Err`, or panics), the scope does not wait
    /// for them, since their peers may never complete them (a receive that
    /// no rank sends to, a send that no rank receives): it gives them up.
    /// A receive not matched yet is cancelled; a transfer under way is
    /// finished by this rank alone; a send still going out keeps going from
    /// a copy; but a large send already offered to a receiver that has not
    /// matched it cannot be taken back: the rank then gives up all its
    /// memory, which marks it failed for its peers (they stop waiting for
    /// it, and their receives of its messages fail with
    /// [`Error::PeerDied`]). Either way no peer touches the scope's buffers
    /// once it has returned, and the error or panic goes on.
    ///
    /// # Panics
    /// If a request left pending by a closure that succeeded fails: its
    /// error would otherwise be lost. The requests still pending then are
    /// given up as above. (If this communicator's errors are fatal, the
    /// job ends instead.)
    pub fn scope<'env, F, T>(&'env self, f: F) -> T
    where
        F: for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> T,
        T: ScopeResult,
    {
        let scope = Scope {
            rank_ctx: self.rank_context().clone(),
            pending: RefCell::new(Vec::new()),
            errors: self.error_handler(),
            _scope: PhantomData,
            _env: PhantomData,
        };
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&scope)));
        let leftover = std::mem::take(&mut *scope.pending.borrow_mut());
        let failed = result.as_ref().map_or(true, ScopeResult::failed);
        let mut engine = scope.rank_ctx.engine();
        let mut leftover = leftover.into_iter();
        // A failed wait gives its own request up (see `Engine::wait`).
        let error = match failed {
            true => None,
            false => leftover.by_ref().find_map(|id| engine.wait(id).err()).map(Error::from),
        };
        leftover.for_each(|id| engine.abandon(id));
        drop(engine);
        if let Some(e) = error {
            if scope.errors == ErrorHandler::Fatal {
                fatal(&scope.rank_ctx, self.world_rank_of(self.rank()).unwrap_or(0), "the end of a scope", &e);
            }
            panic!("a request left pending at the end of its scope failed: {e}");
        }
        result.unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }

    /// Starts sending `buf` to `dest`; the buffer stays borrowed for the scope.
    #[track_caller]
    pub fn isend<'scope, B: Buffer + ?Sized>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        buf: &'scope B,
        dest: usize,
        tag: i32,
    ) -> Result<Request<'scope>> {
        let span = self.span();
        let request = self.start_send(span, scope, buf.bytes(), dest, tag, false, false);
        self.handled("isend", request)
    }

    /// Starts the send of a blocking call that waits for the request
    /// itself (grappe's MPI library under `MPI_THREAD_MULTIPLE`: `sync`
    /// for `MPI_Ssend`). A traced rank records it, once the request
    /// completes, as the blocking send it stands for.
    #[track_caller]
    pub fn isend_for_blocking_call<'scope>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        buf: &'scope [u8],
        dest: usize,
        tag: i32,
        sync: bool,
    ) -> Result<Request<'scope>> {
        let span = self.span();
        let request = self.start_send(span, scope, buf, dest, tag, sync, true);
        self.handled("send", request)
    }

    /// Starts the receive of a blocking call that waits for the request
    /// itself, as [`isend_for_blocking_call`](Self::isend_for_blocking_call)
    /// does a send's.
    #[track_caller]
    pub fn irecv_for_blocking_call<'scope>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        buf: &'scope mut [u8],
        src: impl Into<Source>,
        tag: impl Into<Tag>,
    ) -> Result<Request<'scope>> {
        let span = self.span();
        let request = self.start_recv(span, scope, buf, 1, src.into(), tag.into(), true);
        self.handled("recv", request)
    }

    /// Starts a synchronous send (MPI's `MPI_Issend`): it completes once
    /// the receiver has matched the message, whatever its size.
    #[track_caller]
    pub fn issend<'scope, B: Buffer + ?Sized>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        buf: &'scope B,
        dest: usize,
        tag: i32,
    ) -> Result<Request<'scope>> {
        let span = self.span();
        let request = self.start_send(span, scope, buf.bytes(), dest, tag, true, false);
        self.handled("issend", request)
    }

    /// Starts the message of a round of MPI's partitioned communication
    /// (`MPI_Psend_init`): on the communicator's partitioned context, which
    /// only [`irecv_partitioned`](Self::irecv_partitioned) matches. Not
    /// traced: the trace has no record for partitioned rounds.
    pub fn isend_partitioned<'scope>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        buf: &'scope [u8],
        dest: usize,
        tag: i32,
    ) -> Result<Request<'scope>> {
        let start = || {
            let world = self.check_dest(dest, tag)?;
            let me = self.live()?.rank as u32;
            let mut engine = scope.rank_ctx.engine();
            // SAFETY: as in `start_send`.
            let started = unsafe { engine.isend(buf.as_ptr(), buf.len(), world, self.partitioned_ctx(), tag, me) }?;
            drop(engine);
            Ok(scope.track(Ok(started), 0, self.error_handler(), None))
        };
        self.handled("isend_partitioned", start())
    }

    /// Starts the receive of a round of MPI's partitioned communication
    /// (`MPI_Precv_init`) from rank `src` with `tag` (no wildcards, as MPI
    /// says), on the partitioned context.
    pub fn irecv_partitioned<'scope>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        buf: &'scope mut [u8],
        src: usize,
        tag: i32,
    ) -> Result<Request<'scope>> {
        let request = self.start_partitioned_recv(scope, buf, src, tag);
        self.handled("irecv_partitioned", request)
    }

    fn start_partitioned_recv<'scope>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        buf: &'scope mut [u8],
        src: usize,
        tag: i32,
    ) -> Result<Request<'scope>> {
        let (world, tag) = self.check_recv(Source::Rank(src), Tag::Is(tag))?;
        self.live()?;
        let started = post_recv(scope, buf, world, self.partitioned_ctx(), tag)?;
        Ok(scope.track(started, 1, self.error_handler(), None))
    }

    /// `blocking`: for a blocking call (see `isend_for_blocking_call`).
    #[allow(clippy::too_many_arguments)]
    fn start_send<'scope>(
        &self,
        span: Span,
        scope: &'scope Scope<'scope, '_>,
        bytes: &'scope [u8],
        dest: usize,
        tag: i32,
        sync: bool,
        blocking: bool,
    ) -> Result<Request<'scope>> {
        let world = self.check_dest(dest, tag)?;
        let inner = self.live()?;
        let (data, len, ctx, me) = (bytes.as_ptr(), bytes.len(), self.p2p_ctx(), inner.rank as u32);
        let mut engine = scope.rank_ctx.engine();
        // SAFETY: `bytes` is borrowed for 'scope, and the scope waits for
        // the request, or gives it up (`Engine::abandon`), before 'scope
        // ends.
        let started = unsafe {
            match sync {
                true => engine.issend(data, len, world, ctx, tag, me),
                false => engine.isend(data, len, world, ctx, tag, me),
            }
        }?;
        drop(engine);
        if blocking {
            let call = BlockingCall::send(self, span, dest, tag, bytes.len());
            return Ok(scope.track(Ok(started), 0, self.error_handler(), None).record_as(call));
        }
        let traced = self.trace_isend(span, dest, tag, bytes.len());
        Ok(scope.track(Ok(started), 0, self.error_handler(), traced))
    }

    /// Starts receiving into `buf`; the buffer stays borrowed for the scope.
    #[track_caller]
    pub fn irecv<'scope, B: BufferMut + ?Sized>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        buf: &'scope mut B,
        src: impl Into<Source>,
        tag: impl Into<Tag>,
    ) -> Result<Request<'scope>> {
        let span = self.span();
        let elem = buf.elem_size();
        let request = self.start_recv(span, scope, buf.bytes_mut(), elem, src.into(), tag.into(), false);
        self.handled("irecv", request)
    }

    /// `blocking`: for a blocking call (see `irecv_for_blocking_call`).
    #[allow(clippy::too_many_arguments)]
    fn start_recv<'scope>(
        &self,
        span: Span,
        scope: &'scope Scope<'scope, '_>,
        bytes: &'scope mut [u8],
        elem: usize,
        source: Source,
        selector: Tag,
        blocking: bool,
    ) -> Result<Request<'scope>> {
        let steered = match (source, selector) {
            (Source::Any, _) | (_, Tag::Any) => self.steer(source, selector)?,
            _ => crate::matches::Steered { source, tag: selector, slot: None, replayed: None },
        };
        let (src, tag) = self.check_recv(steered.source, steered.tag)?;
        self.live()?;
        let started = post_recv(scope, bytes, src, self.p2p_ctx(), tag)?;
        if blocking {
            // Whether the message was here as the receive started: the
            // `arrived` flag of a blocking receive's record.
            let arrived = match &started {
                Ok(Started::Pending(id)) => scope.rank_ctx.engine().arrived_by_now(*id).unwrap_or(false),
                _ => true,
            };
            let call = BlockingCall::recv(self, span, source, selector, arrived);
            let request = scope.track(started, elem, self.error_handler(), None).record_as(call);
            return Ok(request.filling(steered.slot));
        }
        let traced = self.trace_irecv(span, source, selector);
        Ok(scope.track(started, elem, self.error_handler(), traced).filling(steered.slot))
    }
}

impl Scope<'static, 'static> {
    /// A scope that never ends, for an API whose callers keep requests
    /// across calls and answer for their buffers themselves (MPI's C
    /// library, where a request is a handle and its buffer a pointer that
    /// the standard says must stay valid until the request completes). Its
    /// requests borrow buffers for `'static`, which only `unsafe` code that
    /// takes that responsibility can make out of a pointer; a request
    /// still pending when the rank ends is that code's concern.
    pub fn detached(rank_ctx: Rc<RankContext>) -> Scope<'static, 'static> {
        Scope {
            rank_ctx,
            pending: RefCell::new(Vec::new()),
            errors: ErrorHandler::Return,
            _scope: PhantomData,
            _env: PhantomData,
        }
    }
}

/// Posts a receive into `bytes` from world rank `src` on context `ctx`:
/// what the request starts with (`Err` inside: a message already here and
/// too long, for which the request is posted and completes failed, so
/// that its wait reports it and records it), or why it could not be
/// posted.
fn post_recv<'scope>(
    scope: &'scope Scope<'scope, '_>,
    bytes: &'scope mut [u8],
    src: Option<usize>,
    ctx: u32,
    tag: Option<i32>,
) -> Result<Result<Started>> {
    let target = RecvTarget::Buffer { ptr: bytes.as_mut_ptr(), cap: bytes.len() };
    // SAFETY: the buffer is borrowed for the scope, which outlives the
    // request: the engine writes into it only while the request lives.
    match unsafe { scope.rank_ctx.engine().irecv(target, src, ctx, tag) } {
        Ok(started) => Ok(Ok(started)),
        Err(e @ grappe_proto::Error::Truncated { .. }) => Ok(Err(e.into())),
        Err(e) => Err(e.into()),
    }
}

impl<'scope> Scope<'scope, '_> {
    pub(crate) fn track(
        &'scope self,
        started: Result<Started>,
        elem: usize,
        errors: ErrorHandler,
        traced: Option<Box<Traced>>,
    ) -> Request<'scope> {
        let state = match started {
            Err(error) => State::Failed(error),
            Ok(Started::Done(done)) => State::Done(done.status),
            Ok(Started::Pending(id)) => {
                self.pending.borrow_mut().push(id);
                State::Pending(id)
            }
        };
        Request {
            rank_ctx: &self.rank_ctx,
            pending: &self.pending,
            state,
            elem,
            errors,
            traced,
            collective: None,
            tag: None,
            match_slot: None,
        }
    }

    /// Tracks the receive of a claimed message, whose status reports `tag`.
    pub(crate) fn track_claimed(
        &'scope self,
        started: Result<Started>,
        elem: usize,
        errors: ErrorHandler,
        tag: i32,
    ) -> Result<Request<'scope>> {
        let mut request = self.track(started, elem, errors, None);
        request.tag = Some(tag);
        if let State::Failed(error) = request.state {
            request.state = State::Taken;
            return Err(error);
        }
        Ok(request)
    }

    /// The rank's engine, for one operation.
    pub(crate) fn engine(&self) -> std::cell::RefMut<'_, grappe_proto::Engine> {
        self.rank_ctx.engine()
    }
}

impl Request<'_> {
    /// Waits for completion. For a receive, the status of the message.
    #[track_caller]
    pub fn wait(mut self) -> Result<Status> {
        let span = self.span();
        let (status, arrived) = match std::mem::replace(&mut self.state, State::Taken) {
            State::Done(status) => (Ok(status), true),
            State::Failed(error) => (Err(error), true),
            State::Pending(id) => {
                // Waited for or given up below: the scope has no more to do.
                self.forget(id);
                match self.arrived_now(id) {
                    Ok(arrived) => {
                        (self.rank_ctx.engine().wait(id).map(|done| done.status).map_err(Error::from), arrived)
                    }
                    Err(e) => {
                        self.rank_ctx.engine().abandon(id);
                        (Err(e), false)
                    }
                }
            }
            State::Taken => unreachable!("a request is waited for once"),
        };
        let status = status.map(|status| self.own_tag(status));
        if let Some(traced) = &self.traced {
            // A truncated receive is recorded too (see `delivered`).
            match (delivered(status.as_ref()), &status) {
                (Some(delivered), _) => trace_completion(traced, span, EventKind::Wait, Some(delivered), arrived),
                (None, Err(e)) if failed_call(e) => trace_failed_completion(traced, span, EventKind::Wait),
                (None, _) => {}
            }
        }
        let status = status.and_then(|status| check_elements(status, self.elem));
        if let Some(call) = self.collective.take() {
            call.ended(&status);
        }
        handled_by(self.errors, self.rank_ctx, "wait", status)
    }

    /// Marks a request that stands for a blocking call (see [`BlockingCall`]).
    pub(crate) fn record_as(mut self, call: Option<Box<BlockingCall>>) -> Self {
        self.collective = call;
        self
    }

    #[track_caller]
    fn span(&self) -> Span {
        match &self.traced {
            Some(traced) => traced_span(traced),
            None => Span::OFF,
        }
    }

    /// The status if the request completed; `Ok(None)` if still pending.
    /// A request that completed failed reports its error at every test
    /// (and at its wait); an error of the engine itself (a dead peer)
    /// leaves it pending.
    #[track_caller]
    pub fn test(&mut self) -> Result<Option<Status>> {
        let span = self.span();
        let tested = self.test_at(span);
        handled_by(self.errors, self.rank_ctx, "test", tested)
    }

    fn test_at(&mut self, span: Span) -> Result<Option<Status>> {
        let (status, arrived) = match &self.state {
            State::Done(status) => (Some(*status), true),
            State::Failed(error) => return Err(self.trace_failed_test(span, error.repeat(), true)),
            &State::Pending(id) => {
                let arrived = match self.arrived_now(id) {
                    Ok(arrived) => arrived,
                    Err(e) => return Err(self.trace_failed_test(span, e, false)),
                };
                let tested = self.rank_ctx.engine().test(id).map_err(Error::from);
                let done = match tested {
                    Ok(done) => done,
                    Err(e) => {
                        if !self.rank_ctx.engine().knows(id) {
                            // The request's own failure: it is over.
                            self.forget(id);
                            self.state = State::Failed(e.repeat());
                        }
                        return Err(self.trace_failed_test(span, e, arrived));
                    }
                };
                if let Some(done) = &done {
                    self.forget(id);
                    self.state = State::Done(done.status);
                }
                (done.map(|d| d.status), arrived)
            }
            State::Taken => unreachable!("a request is waited for once"),
        };
        let status = status.map(|status| self.own_tag(status));
        if let Some(traced) = &self.traced {
            trace_completion(traced, span, EventKind::Test, status, arrived);
        }
        if status.is_some()
            && let Some(call) = self.collective.take()
        {
            call.ended(&Ok(status.expect("checked")));
        }
        status.map(|s| check_elements(s, self.elem)).transpose()
    }

    /// A test whose receive completed truncated is recorded as its
    /// completion (see `delivered`), one that failed (see `failed_call`)
    /// as failed; `error` is returned as it is.
    fn trace_failed_test(&self, span: Span, error: Error, arrived: bool) -> Error {
        let Some(traced) = &self.traced else { return error };
        match delivered(Err(&error)) {
            Some(delivered) => trace_completion(traced, span, EventKind::Test, Some(delivered), arrived),
            None if failed_call(&error) => trace_failed_completion(traced, span, EventKind::Test),
            None => {}
        }
        error
    }

    /// For a traced receive: whether its message is here as a wait or
    /// test of it begins (the `arrived` flag of that record).
    fn arrived_now(&self, id: RequestId) -> Result<bool> {
        match &self.traced {
            Some(traced) if traced.is_recv() => Ok(self.rank_ctx.engine().arrived_by_now(id)?),
            _ => Ok(false),
        }
    }

    /// `status`, with the tag this request reports.
    fn own_tag(&self, mut status: Status) -> Status {
        if let Some(tag) = self.tag {
            status.tag = tag;
        }
        self.rank_ctx.matched(self.match_slot, &status);
        status
    }

    /// Fills `slot` of the rank's match log when the request completes.
    pub(crate) fn filling(mut self, slot: Option<usize>) -> Self {
        self.match_slot = slot;
        self
    }

    /// Cancels a receive that has not matched a message yet (MPI's
    /// `MPI_Cancel`): true if it is cancelled, and then it is over (no wait
    /// needed); false if it matched already, completed, or is a send, which
    /// complete as usual.
    pub fn cancel(&mut self) -> bool {
        let State::Pending(id) = self.state else { return false };
        if !self.rank_ctx.engine().cancel(id) {
            return false;
        }
        self.forget(id);
        self.state = State::Taken;
        true
    }

    /// True if a wait would not block: the request completed (or failed).
    pub fn is_complete(&self) -> bool {
        self.is_finished()
    }

    fn is_finished(&self) -> bool {
        match self.state {
            State::Pending(id) => self.rank_ctx.engine().is_finished(id),
            _ => true,
        }
    }

    fn forget(&self, id: RequestId) {
        self.pending.borrow_mut().retain(|&p| p != id);
    }
}

/// Waits for every request; statuses in the same order. Stops at the first
/// error (the remaining requests are then waited for by their scope).
#[track_caller]
pub fn wait_all<'s>(requests: impl IntoIterator<Item = Request<'s>>) -> Result<Vec<Status>> {
    // A loop, not `map(Request::wait)`: the waits are then recorded at the
    // caller's site.
    let mut statuses = Vec::new();
    for request in requests {
        statuses.push(request.wait()?);
    }
    Ok(statuses)
}

/// Waits until one request completes; removes it from `requests` and
/// returns its index and status.
#[track_caller]
pub fn wait_any(requests: &mut Vec<Request<'_>>) -> Result<(usize, Status)> {
    let first = requests.first().ok_or(Error::BufferSize { op: "wait_any", detail: SizeProblem::NoRequests })?;
    let (errors, rank_ctx) = (first.errors, first.rank_ctx);
    let ids: Vec<RequestId> = requests
        .iter()
        .map(|r| match r.state {
            State::Pending(id) => Some(id),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()
        .unwrap_or_default();
    if ids.len() == requests.len() {
        let waited = rank_ctx.engine().block_until(|engine| ids.iter().any(|id| engine.is_finished(*id)));
        let waited = waited.map_err(Error::from);
        handled_by(errors, rank_ctx, "wait_any", waited)?;
    }
    let index = requests.iter().position(Request::is_finished).expect("a finished request");
    let status = requests.remove(index).wait()?;
    Ok((index, status))
}

/// True when every request has completed (and then completes them all).
#[track_caller]
pub fn test_all(requests: &mut [Request<'_>]) -> Result<bool> {
    let mut all = true;
    for request in requests.iter_mut() {
        all &= request.test()?.is_some();
    }
    Ok(all)
}
