//! Workers: OS threads that run ranks, several of them as coroutines.

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Instant;

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use grappe_fabric::Doorbell;
use grappe_fabric::doorbell::Wake;

use crate::{Snooze, WaitSettings, bind_current_thread};

/// What the worker passes to a rank when resuming it.
#[derive(Debug, Clone, Copy)]
enum Resume {
    Go,
    TimedOut,
}

/// What a rank tells the worker when it gives way. `fresh` is true on the
/// first snooze of a wait, i.e. the rank did something since last resumed.
#[derive(Debug, Clone, Copy)]
struct Idle {
    fresh: bool,
}

type RankYielder = Yielder<Resume, Idle>;

thread_local! {
    /// The yielder of the coroutine running on this thread, if any.
    static YIELDER: Cell<*const RankYielder> = const { Cell::new(std::ptr::null()) };
    /// Coroutines alive on this worker.
    static LIVE: Cell<usize> = const { Cell::new(0) };
}

/// Called by [`crate::Backoff::snooze`]: if the calling rank shares its
/// worker with other live ranks, switch to them and report how we were
/// resumed; otherwise `None` (the rank waits alone).
#[inline]
pub(crate) fn suspend_if_shared(fresh: bool) -> Option<Snooze> {
    let yielder = YIELDER.get();
    if yielder.is_null() || LIVE.get() <= 1 {
        return None;
    }
    // SAFETY: YIELDER is set by the running coroutine to its own yielder,
    // which lives as long as the coroutine, i.e. during this call.
    let resume = unsafe { &*yielder }.suspend(Idle { fresh });
    // Other coroutines ran meanwhile and set their own yielder: restore ours.
    YIELDER.set(yielder);
    Some(match resume {
        Resume::Go => Snooze::Continue,
        Resume::TimedOut => Snooze::TimedOut,
    })
}

/// The ranks a worker runs, the doorbell that wakes it, where to pin it.
#[derive(Debug)]
pub struct WorkerSpec<'a> {
    /// Rank numbers, passed to the body.
    pub ranks: Vec<usize>,
    /// Rung by anyone who hands work to one of these ranks.
    pub bell: &'a Doorbell,
    /// CPU to pin the worker to.
    pub cpu: Option<usize>,
}

/// How one rank ended: its return value, or the panic that ended it.
#[derive(Debug)]
pub struct RankOutcome<R> {
    /// The rank number.
    pub rank: usize,
    /// The body's result, or the panic payload.
    pub result: std::thread::Result<R>,
}

/// Runs `body(rank)` for every rank of every worker and returns when all
/// are done. The first worker runs on the calling thread.
pub fn run_workers<R: Send + 'static>(
    specs: Vec<WorkerSpec<'_>>,
    settings: &WaitSettings,
    body: &(dyn Fn(usize) -> R + Sync),
) -> Vec<RankOutcome<R>> {
    let mut specs = specs.into_iter();
    let Some(first) = specs.next() else { return Vec::new() };
    std::thread::scope(|scope| {
        let others: Vec<_> = specs
            .enumerate()
            .map(|(i, spec)| {
                std::thread::Builder::new()
                    .name(format!("grappe-worker-{}", i + 1))
                    .stack_size(settings.stack_bytes.max(2 << 20))
                    .spawn_scoped(scope, move || run_worker(spec, settings, body))
                    .expect("cannot start a worker thread")
            })
            .collect();
        let mut outcomes = run_worker(first, settings, body);
        for handle in others {
            match handle.join() {
                Ok(more) => outcomes.extend(more),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        outcomes.sort_by_key(|o| o.rank);
        outcomes
    })
}

fn run_worker<R: Send + 'static>(
    spec: WorkerSpec<'_>,
    settings: &WaitSettings,
    body: &(dyn Fn(usize) -> R + Sync),
) -> Vec<RankOutcome<R>> {
    if let (true, Some(cpu)) = (settings.bind, spec.cpu) {
        let _ = bind_current_thread(cpu);
    }
    if let [rank] = spec.ranks[..] {
        let result = catch_unwind(AssertUnwindSafe(|| body(rank)));
        return vec![RankOutcome { rank, result }];
    }
    run_coroutines(&spec, settings, body)
}

type RankCoroutine<R> = Coroutine<Resume, Idle, std::thread::Result<R>, DefaultStack>;

fn run_coroutines<R: Send + 'static>(
    spec: &WorkerSpec<'_>,
    settings: &WaitSettings,
    body: &(dyn Fn(usize) -> R + Sync),
) -> Vec<RankOutcome<R>> {
    // SAFETY: the coroutines borrow `body` for 'static only on paper: every
    // one of them is run to completion, or dropped (which unwinds its
    // stack), before this function returns, while `body` is borrowed.
    let body: &'static (dyn Fn(usize) -> R + Sync) = unsafe { std::mem::transmute(body) };
    let mut live: Vec<(usize, RankCoroutine<R>)> =
        spec.ranks.iter().map(|&rank| (rank, spawn_rank(rank, settings.stack_bytes, body))).collect();
    let mut outcomes = Vec::with_capacity(live.len());
    let mut idle = IdleClock::new(settings);
    let mut resume = Resume::Go;
    while !live.is_empty() {
        LIVE.set(live.len());
        let progress = run_round(&mut live, resume, &mut outcomes);
        resume = Resume::Go;
        if progress {
            idle.reset();
            continue;
        }
        match idle.next_step() {
            Step::Spin => std::hint::spin_loop(),
            Step::Yield => std::thread::yield_now(),
            Step::Sleep => {
                spec.bell.prepare();
                LIVE.set(live.len());
                if run_round(&mut live, Resume::Go, &mut outcomes) {
                    spec.bell.cancel();
                    idle.reset();
                } else if spec.bell.sleep(settings.sleep_timeout) == Wake::TimedOut {
                    resume = Resume::TimedOut;
                    idle.reset();
                } else {
                    idle.reset();
                }
            }
        }
    }
    YIELDER.set(std::ptr::null());
    LIVE.set(0);
    outcomes
}

fn spawn_rank<R: Send + 'static>(
    rank: usize,
    stack_bytes: usize,
    body: &'static (dyn Fn(usize) -> R + Sync),
) -> RankCoroutine<R> {
    let stack = DefaultStack::new(stack_bytes).expect("cannot reserve a rank stack (GRAPPE_STACK_KIB)");
    Coroutine::with_stack(stack, move |yielder: &RankYielder, _first: Resume| {
        YIELDER.set(yielder as *const RankYielder);
        catch_unwind(AssertUnwindSafe(|| body(rank)))
    })
}

/// Resumes every live rank once; true if any of them made progress.
fn run_round<R>(live: &mut Vec<(usize, RankCoroutine<R>)>, resume: Resume, outcomes: &mut Vec<RankOutcome<R>>) -> bool {
    let mut progress = false;
    let mut i = 0;
    while i < live.len() {
        match live[i].1.resume(resume) {
            CoroutineResult::Yield(Idle { fresh }) => {
                progress |= fresh;
                i += 1;
            }
            CoroutineResult::Return(result) => {
                let (rank, _) = live.swap_remove(i);
                outcomes.push(RankOutcome { rank, result });
                LIVE.set(live.len());
                progress = true;
            }
        }
    }
    progress
}

enum Step {
    Spin,
    Yield,
    Sleep,
}

/// How long a worker has gone without progress, and what that calls for.
struct IdleClock<'a> {
    settings: &'a WaitSettings,
    rounds: u32,
    yield_start: Option<Instant>,
}

impl<'a> IdleClock<'a> {
    fn new(settings: &'a WaitSettings) -> Self {
        IdleClock { settings, rounds: 0, yield_start: None }
    }

    fn reset(&mut self) {
        self.rounds = 0;
        self.yield_start = None;
    }

    fn next_step(&mut self) -> Step {
        self.rounds = self.rounds.saturating_add(1);
        if self.rounds <= self.settings.spin_iters {
            return Step::Spin;
        }
        let start = *self.yield_start.get_or_insert_with(Instant::now);
        if start.elapsed() < self.settings.yield_for { Step::Yield } else { Step::Sleep }
    }
}
