//! Running the schedules of non-blocking collectives (see
//! [`crate::schedule`]): each is one request of the engine, moved on by
//! every pass of progress.

use super::Engine;
use crate::request::Request;
use crate::schedule::{CollectiveState, Posted, Schedule, Step};
use crate::{Completion, Error, RecvTarget, RequestId, Result, Started, Status};

impl Engine {
    /// Starts a collective described by `schedule`: its first rounds run
    /// at once, the others as the rank makes progress, in this call or any
    /// later wait, test or probe. Wait for it or test it as any request;
    /// its completion reports no data (its local steps deliver it).
    pub fn start_collective(&mut self, schedule: Schedule) -> Result<Started> {
        let key = self.book.reqs.insert(Request::Collective(CollectiveState::Running));
        let mut schedule = Box::new(schedule);
        self.advance_schedule(key, &mut schedule);
        if matches!(self.book.reqs[key], Request::Collective(CollectiveState::Running)) {
            self.book.collectives.push((key, schedule));
        }
        self.book.started(RequestId(key))
    }

    /// Moves every running schedule on as far as it goes now. True if any
    /// step ran.
    pub(super) fn advance_collectives(&mut self) -> bool {
        let mut running = std::mem::take(&mut self.book.collectives);
        let mut moved = false;
        running.retain_mut(|(key, schedule)| {
            moved |= self.advance_schedule(*key, schedule);
            matches!(self.book.reqs[*key], Request::Collective(CollectiveState::Running))
        });
        // Nothing starts a collective while schedules advance: the list
        // taken is the whole of it.
        debug_assert!(self.book.collectives.is_empty());
        self.book.collectives = running;
        moved
    }

    /// Finishes what completed of the round under way and starts the next
    /// rounds while they complete on the spot. True if anything moved.
    fn advance_schedule(&mut self, key: usize, schedule: &mut Schedule) -> bool {
        let mut moved = self.collect_round(key, schedule);
        while schedule.posted.is_empty() && self.running(key) {
            let Some(round) = schedule.rounds.pop_front() else {
                self.book.reqs[key] = Request::Collective(CollectiveState::Done);
                return true;
            };
            moved = true;
            for step in round {
                if let Err(e) = self.run_step(schedule, step) {
                    self.fail_schedule(key, schedule, e);
                    return true;
                }
            }
            self.collect_round(key, schedule);
        }
        moved
    }

    fn running(&self, key: usize) -> bool {
        matches!(self.book.reqs[key], Request::Collective(CollectiveState::Running))
    }

    /// Takes the completed requests of the round under way; the first
    /// failure fails the whole collective.
    fn collect_round(&mut self, key: usize, schedule: &mut Schedule) -> bool {
        let mut moved = false;
        let mut i = 0;
        while i < schedule.posted.len() {
            let Some(done) = self.book.take_finished(schedule.posted[i].key) else {
                i += 1;
                continue;
            };
            moved = true;
            let posted = schedule.posted.swap_remove(i);
            let checked = done.and_then(|done| check_size(schedule, posted.expect, done.status.bytes));
            if let Err(e) = checked.map_err(|e| as_mismatch(schedule, posted.expect, e)) {
                self.fail_schedule(key, schedule, e);
                return true;
            }
        }
        moved
    }

    /// Runs a local step, or posts a send or receive of the round.
    fn run_step(&mut self, schedule: &mut Schedule, step: Step) -> Result<()> {
        let (ctx, tag, me) = (schedule.ctx, schedule.tag, schedule.me as u32);
        let (started, expect) = match step {
            Step::Local(mut local) => {
                local(&mut schedule.buffers);
                return Ok(());
            }
            Step::Extend(extend) => {
                extend(schedule);
                return Ok(());
            }
            Step::Send { dest, buf, range } => {
                let bytes = &schedule.buffers[buf][range];
                // SAFETY: the schedule owns the buffer and neither frees,
                // resizes nor touches it (local steps run between rounds)
                // until this send completed or was given up.
                (unsafe { self.isend(bytes.as_ptr(), bytes.len(), dest, ctx, tag, me) }, None)
            }
            Step::Recv { src, src_comm, buf, range } => {
                let len = range.len();
                let bytes = &mut schedule.buffers[buf][range];
                let target = RecvTarget::Buffer { ptr: bytes.as_mut_ptr(), cap: len };
                // SAFETY: as for the send.
                (unsafe { self.irecv(target, Some(src), ctx, Some(tag)) }, Some((src_comm, len)))
            }
        };
        match started.map_err(|e| as_mismatch(schedule, expect, e))? {
            Started::Done(done) => check_size(schedule, expect, done.status.bytes),
            Started::Pending(id) => {
                schedule.posted.push(Posted { key: id.0, expect });
                Ok(())
            }
        }
    }

    /// Fails the collective with `error`: the requests of its round are
    /// given up and no later round runs.
    fn fail_schedule(&mut self, key: usize, schedule: &mut Schedule, error: Error) {
        for posted in std::mem::take(&mut schedule.posted) {
            self.abandon(RequestId(posted.key));
        }
        schedule.rounds.clear();
        self.book.reqs[key] = Request::Collective(CollectiveState::Failed(error));
    }

    /// Gives up a running collective (see [`Engine::abandon`]).
    pub(super) fn abandon_collective(&mut self, key: usize) {
        if let Some(at) = self.book.collectives.iter().position(|(k, _)| *k == key) {
            let (_, schedule) = self.book.collectives.swap_remove(at);
            for posted in schedule.posted {
                self.abandon(RequestId(posted.key));
            }
        }
        self.book.reqs.remove(key);
    }
}

/// A receive must bring exactly the bytes its round expects.
fn check_size(schedule: &Schedule, expect: Option<(usize, usize)>, got: usize) -> Result<()> {
    match expect {
        Some((src_comm, expected)) if got != expected => Err(schedule.size_mismatch(src_comm, expected, got)),
        _ => Ok(()),
    }
}

/// A message longer than the receive expected is a mismatch of the
/// ranks' calls too.
fn as_mismatch(schedule: &Schedule, expect: Option<(usize, usize)>, error: Error) -> Error {
    match (error, expect) {
        (Error::Truncated { message_bytes, .. }, Some((src_comm, expected))) => {
            schedule.size_mismatch(src_comm, expected, message_bytes)
        }
        (error, _) => error,
    }
}

/// The completion a finished collective reports: no source, tag or data.
pub(super) fn completion(state: CollectiveState) -> Result<Completion> {
    match state {
        CollectiveState::Failed(e) => Err(e),
        _ => Ok(Completion { status: Status { source: 0, tag: 0, bytes: 0 }, data: None, arrived: false }),
    }
}
