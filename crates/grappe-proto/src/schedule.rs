//! Non-blocking collectives as schedules: rounds of sends, receives and
//! local steps that the engine runs as one request.
//!
//! A collective started without blocking must move on while its rank does
//! something else, including waiting in another call. The engine therefore
//! owns the whole collective: its buffers, the rounds still to run, and
//! the requests of the round under way. Every pass of progress (in any
//! wait, test or probe of the rank) finishes what it can of the current
//! round and starts the next (MPICH's "schedules" work the same way). The
//! collective's algorithm, which peer gets what in which round, is decided
//! above, where communicators and collectives live; here is only what
//! runs it.
//!
//! A round starts by running its local steps (combining what the previous
//! rounds received, copying, delivering the result), in order, then posts
//! its sends and receives; it is over when they all completed. A receive
//! must bring exactly the bytes its round expects: more or fewer means the
//! ranks called the collective with different sizes, which the schedule
//! reports as a mismatch naming both.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::ops::Range;

use crate::{Call, Error, Mismatch};

/// A step a rank runs on its own between rounds, over the schedule's
/// buffers (see [`Schedule::buffer`]). `Send`, like the engine that holds it.
pub type LocalStep = Box<dyn FnMut(&mut [Vec<u8>]) + Send>;

/// A step that decides at run time what the schedule does next: it may
/// rewrite the buffers and add rounds after its own (an agreement that
/// starts over when it failed, as the context agreement of
/// `MPI_Comm_idup` does). `Send`, like [`LocalStep`].
pub type ExtendStep = Box<dyn FnOnce(&mut Schedule) + Send>;

/// Names one buffer of a schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BufferId(pub(crate) usize);

impl BufferId {
    /// The buffer's index in the slice local steps get.
    pub fn index(self) -> usize {
        self.0
    }
}

pub(crate) enum Step {
    Send { dest: usize, buf: usize, range: Range<usize> },
    Recv { src: usize, src_comm: usize, buf: usize, range: Range<usize> },
    Local(LocalStep),
    Extend(ExtendStep),
}

/// A receive of the round under way, and the size it must have.
pub(crate) struct Posted {
    pub key: usize,
    /// For a receive: its sender (communicator rank) and the bytes expected.
    pub expect: Option<(usize, usize)>,
}

/// A collective to run without blocking: build it, then hand it to
/// [`Engine::start_collective`](crate::Engine::start_collective).
pub struct Schedule {
    /// The collective, for errors ("MPI_Iallreduce").
    pub(crate) name: Cow<'static, str>,
    pub(crate) ctx: u32,
    pub(crate) tag: i32,
    /// This rank in the communicator.
    pub(crate) me: usize,
    pub(crate) buffers: Vec<Vec<u8>>,
    pub(crate) rounds: VecDeque<Vec<Step>>,
    /// The requests of the round under way.
    pub(crate) posted: Vec<Posted>,
}

impl Schedule {
    /// An empty schedule of collective `name`, whose messages travel on
    /// context `ctx` with tag `tag` (a tag no other collective of the
    /// context uses while this one runs), run by rank `me` of the
    /// communicator.
    pub fn new(name: impl Into<Cow<'static, str>>, ctx: u32, tag: i32, me: usize) -> Schedule {
        Schedule {
            name: name.into(),
            ctx,
            tag,
            me,
            buffers: Vec::new(),
            rounds: VecDeque::from([Vec::new()]),
            posted: Vec::new(),
        }
    }

    /// Adds a buffer holding `bytes`; steps name it by the id returned.
    /// A buffer's length never changes once added (receives land in it).
    pub fn buffer(&mut self, bytes: Vec<u8>) -> BufferId {
        self.buffers.push(bytes);
        BufferId(self.buffers.len() - 1)
    }

    /// The length of buffer `buf`.
    pub fn len_of(&self, buf: BufferId) -> usize {
        self.buffers[buf.0].len()
    }

    /// Starts a new round: the steps added next run once every send and
    /// receive of the rounds before have completed.
    pub fn round(&mut self) -> &mut Schedule {
        if !self.rounds.back().is_some_and(Vec::is_empty) {
            self.rounds.push_back(Vec::new());
        }
        self
    }

    /// Sends bytes `range` of `buf` to world rank `dest`.
    ///
    /// # Panics
    /// If `range` is not inside the buffer (a bug of the algorithm).
    pub fn send(&mut self, dest: usize, buf: BufferId, range: Range<usize>) -> &mut Schedule {
        assert!(range.end <= self.buffers[buf.0].len(), "a send of bytes {range:?} of a shorter buffer");
        self.push(Step::Send { dest, buf: buf.0, range })
    }

    /// Receives exactly `range.len()` bytes into `range` of `buf` from
    /// world rank `src`, rank `src_comm` of the communicator.
    ///
    /// # Panics
    /// If `range` is not inside the buffer (a bug of the algorithm).
    pub fn recv(&mut self, src: usize, src_comm: usize, buf: BufferId, range: Range<usize>) -> &mut Schedule {
        assert!(range.end <= self.buffers[buf.0].len(), "a receive into bytes {range:?} of a shorter buffer");
        self.push(Step::Recv { src, src_comm, buf: buf.0, range })
    }

    /// Runs `step` over the buffers when the round starts. It must not
    /// touch a buffer that a send or receive of its own round uses.
    pub fn local(&mut self, step: impl FnMut(&mut [Vec<u8>]) + Send + 'static) -> &mut Schedule {
        self.push(Step::Local(Box::new(step)))
    }

    /// Runs `step` on the schedule itself when the round starts: it may
    /// rewrite the buffers and add rounds (with [`round`](Self::round) and
    /// the others), which run after the round under way. It must be the
    /// round's only step, so that it touches no buffer a send or receive
    /// of the round uses.
    pub fn extend(&mut self, step: impl FnOnce(&mut Schedule) + Send + 'static) -> &mut Schedule {
        self.push(Step::Extend(Box::new(step)))
    }

    /// The buffers, for a step of [`extend`](Self::extend).
    pub fn buffers_mut(&mut self) -> &mut [Vec<u8>] {
        &mut self.buffers
    }

    fn push(&mut self, step: Step) -> &mut Schedule {
        self.rounds.back_mut().expect("a schedule always has a last round").push(step);
        self
    }

    /// The mismatch a receive of `got` bytes from `src_comm` shows, where
    /// `expected` were due.
    pub(crate) fn size_mismatch(&self, src_comm: usize, expected: usize, got: usize) -> Error {
        let call = |rank, bytes| Call { rank, op: None, bytes: Some(bytes as u64), root: None };
        Error::CollectiveMismatch(Box::new(Mismatch {
            op: self.name.clone(),
            found_by: self.me,
            calls: vec![call(self.me, expected), call(src_comm, got)],
            evidence: format!("rank {} expected {expected} bytes from rank {src_comm} and got {got}", self.me),
        }))
    }
}

/// Where a collective started without blocking stands, as its request.
pub(crate) enum CollectiveState {
    Running,
    Done,
    Failed(Error),
}
