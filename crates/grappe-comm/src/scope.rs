//! Non-blocking point-to-point, made safe with scopes.
//!
//! A request borrows its buffer; Rust cannot prevent a request from being
//! forgotten (`mem::forget`) while the runtime still writes into the
//! buffer, so requests live in a [`Scope`], like threads in
//! `std::thread::scope`: buffers are borrowed for the whole scope, and the
//! scope waits for every request still pending when its closure returns.

use std::cell::RefCell;
use std::marker::PhantomData;
use std::rc::Rc;

use grappe_proto::{Error, RecvTarget, RequestId, Result, Started, Status};

use crate::p2p::check_elements;
use crate::selectors::{Source, Tag};
use crate::trace::{Span, Traced, delivered, failed_call, trace_completion, trace_failed_completion, traced_span};
use crate::{Buffer, BufferMut, Communicator, RankContext};
use grappe_trace::EventKind;

/// Requests started inside [`Communicator::scope`].
pub struct Scope<'scope, 'env: 'scope> {
    rank_ctx: Rc<RankContext>,
    pending: RefCell<Vec<RequestId>>,
    _scope: PhantomData<&'scope mut &'scope ()>,
    _env: PhantomData<&'env mut &'env ()>,
}

/// A pending send or receive. Wait for it, test it, or let the scope wait.
#[must_use = "a request does nothing unless waited for (or its scope ends)"]
pub struct Request<'scope> {
    rank_ctx: &'scope Rc<RankContext>,
    pending: &'scope RefCell<Vec<RequestId>>,
    state: State,
    elem: usize,
    /// Set when the rank records a trace.
    traced: Option<Box<Traced>>,
}

enum State {
    Pending(RequestId),
    Done(Status),
    /// Completed, its message longer than the buffer: the wait or test
    /// reports it, as MPI's do.
    Truncated(Truncation),
    Taken,
}

/// What [`Error::Truncated`] says, kept to be reported at each wait or test.
#[derive(Clone, Copy)]
struct Truncation {
    source_rank: usize,
    tag: i32,
    message_bytes: usize,
    buffer_bytes: usize,
}

impl Truncation {
    fn of(error: &Error) -> Option<Truncation> {
        match *error {
            Error::Truncated { source_rank, tag, message_bytes, buffer_bytes } => {
                Some(Truncation { source_rank, tag, message_bytes, buffer_bytes })
            }
            _ => None,
        }
    }

    fn error(self) -> Error {
        let Truncation { source_rank, tag, message_bytes, buffer_bytes } = self;
        Error::Truncated { source_rank, tag, message_bytes, buffer_bytes }
    }
}

impl Communicator {
    /// Runs `f` with a scope for non-blocking requests; when `f` returns,
    /// waits for the requests it left pending.
    ///
    /// # Panics
    /// If a request left pending fails: its error would otherwise be lost.
    pub fn scope<'env, F, T>(&'env self, f: F) -> T
    where
        F: for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> T,
    {
        let scope = Scope {
            rank_ctx: self.rank_context().clone(),
            pending: RefCell::new(Vec::new()),
            _scope: PhantomData,
            _env: PhantomData,
        };
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&scope)));
        let leftover = std::mem::take(&mut *scope.pending.borrow_mut());
        let mut engine = scope.rank_ctx.engine();
        for id in leftover {
            if let Err(e) = engine.wait(id) {
                if result.is_ok() {
                    panic!("a request left pending at the end of its scope failed: {e}");
                }
            }
        }
        drop(engine);
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
        let world = self.check_dest(dest, tag)?;
        let inner = self.live()?;
        let bytes = buf.bytes();
        // SAFETY: `buf` is borrowed for 'scope, and the scope waits for the
        // request before 'scope ends.
        let started = unsafe {
            scope.rank_ctx.engine().isend(bytes.as_ptr(), bytes.len(), world, self.p2p_ctx(), tag, inner.rank as u32)
        }?;
        let traced = self.trace_isend(span, dest, tag, bytes.len());
        Ok(scope.track(Ok(started), 0, traced))
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
        let (source, selector) = (src.into(), tag.into());
        let (src, tag) = self.check_recv(source, selector)?;
        self.live()?;
        let elem = buf.elem_size();
        let bytes = buf.bytes_mut();
        let target = RecvTarget::Buffer { ptr: bytes.as_mut_ptr(), cap: bytes.len() };
        // SAFETY: as for `isend`.
        let started = match unsafe { scope.rank_ctx.engine().irecv(target, src, self.p2p_ctx(), tag) } {
            Ok(started) => Ok(started),
            // A message already here and too long: the request is posted
            // and completes failed, so its wait reports it (and records it).
            Err(e) => Err(Truncation::of(&e).ok_or(e)?),
        };
        let traced = self.trace_irecv(span, source, selector);
        Ok(scope.track(started, elem, traced))
    }
}

impl<'scope> Scope<'scope, '_> {
    fn track(
        &'scope self,
        started: std::result::Result<Started, Truncation>,
        elem: usize,
        traced: Option<Box<Traced>>,
    ) -> Request<'scope> {
        let state = match started {
            Err(truncation) => State::Truncated(truncation),
            Ok(Started::Done(done)) => State::Done(done.status),
            Ok(Started::Pending(id)) => {
                self.pending.borrow_mut().push(id);
                State::Pending(id)
            }
        };
        Request { rank_ctx: &self.rank_ctx, pending: &self.pending, state, elem, traced }
    }
}

impl Request<'_> {
    /// Waits for completion. For a receive, the status of the message.
    #[track_caller]
    pub fn wait(mut self) -> Result<Status> {
        let span = self.span();
        let (status, arrived) = match std::mem::replace(&mut self.state, State::Taken) {
            State::Done(status) => (Ok(status), true),
            State::Truncated(truncation) => (Err(truncation.error()), true),
            State::Pending(id) => {
                self.forget(id);
                match self.arrived_now(id) {
                    Ok(arrived) => (self.rank_ctx.engine().wait(id).map(|done| done.status), arrived),
                    Err(e) => (Err(e), false),
                }
            }
            State::Taken => unreachable!("a request is waited for once"),
        };
        if let Some(traced) = &self.traced {
            // A truncated receive is recorded too (see `delivered`).
            match (delivered(status.as_ref()), &status) {
                (Some(delivered), _) => trace_completion(traced, span, EventKind::Wait, Some(delivered), arrived),
                (None, Err(e)) if failed_call(e) => trace_failed_completion(traced, span, EventKind::Wait),
                (None, _) => {}
            }
        }
        check_elements(status?, self.elem)
    }

    #[track_caller]
    fn span(&self) -> Span {
        match &self.traced {
            Some(traced) => traced_span(traced),
            None => Span::OFF,
        }
    }

    /// The status if the request completed; `Ok(None)` if still pending.
    #[track_caller]
    pub fn test(&mut self) -> Result<Option<Status>> {
        let span = self.span();
        let (status, arrived) = match self.state {
            State::Done(status) => (Some(status), true),
            State::Truncated(truncation) => return Err(self.trace_failed_test(span, truncation.error(), true)),
            State::Pending(id) => {
                let arrived = match self.arrived_now(id) {
                    Ok(arrived) => arrived,
                    Err(e) => return Err(self.trace_failed_test(span, e, false)),
                };
                let done = match self.rank_ctx.engine().test(id) {
                    Ok(done) => done,
                    Err(e) => {
                        if let Some(truncation) = Truncation::of(&e) {
                            self.forget(id);
                            self.state = State::Truncated(truncation);
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
        if let Some(traced) = &self.traced {
            trace_completion(traced, span, EventKind::Test, status, arrived);
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
            Some(traced) if traced.is_recv() => self.rank_ctx.engine().arrived_by_now(id),
            _ => Ok(false),
        }
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
    let first = requests.first().ok_or_else(|| Error::BufferSize { op: "wait_any", detail: "no requests".into() })?;
    let ids: Vec<RequestId> = requests
        .iter()
        .map(|r| match r.state {
            State::Pending(id) => Some(id),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()
        .unwrap_or_default();
    if ids.len() == requests.len() {
        let rank_ctx = first.rank_ctx;
        rank_ctx.engine().block_until(|engine| ids.iter().any(|id| engine.is_finished(*id)))?;
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
