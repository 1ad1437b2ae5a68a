//! α of the runtime's calls, measured in place, group by group.
//!
//! The recorder times its own work in a tight loop, where a call's two
//! clock reads run back to back (19.5 ns on the AMD EPYC). In a real call
//! the call's own work runs beside them and recording adds less (12.8 ns
//! to an `iprobe`, 15.0 to a send or a receive). Compensation subtracts α
//! from the program's dates, so α must be what recording adds to a call
//! as the program makes it: the rank measures that before it records, on
//! its own calls, and the recorder writes it as the α of each kind.
//!
//! Each group is timed in a loop of its own calls only, all traced or
//! none: switching recording on for one call of a mixed loop made every
//! traced call look 10 ns dearer than in a loop of its kind, which is how
//! programs make calls in the loops where recording matters.

use grappe_trace::alpha::CallCosts;
use grappe_trace::{Recorder, TraceClock};

use crate::{Communicator, Result, Source, Tag};

/// Batches; in each, every loop is timed traced and untraced, in
/// alternating order, so that both halves see the same machine. A group's
/// α is the median of its batches' differences, which a preempted batch
/// does not move.
const BATCHES: usize = 15;
/// Iterations of a loop per timing.
const ITERATIONS: usize = 256;

/// The loops timed, one per group of calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Loop {
    /// A send and a receive to self.
    Blocking,
    /// An `iprobe` that finds nothing.
    Probe,
    /// An `isend` and an `irecv` to self and their two waits.
    NonBlocking,
}

impl Loop {
    const ALL: [Loop; 3] = [Loop::Blocking, Loop::Probe, Loop::NonBlocking];

    fn calls_per_iteration(self) -> usize {
        match self {
            Loop::Blocking => 2,
            Loop::Probe => 1,
            Loop::NonBlocking => 4,
        }
    }
}

impl Communicator {
    /// What recording adds to each group of runtime calls on this rank, in
    /// ns per call: 8-byte messages to self through the public calls,
    /// traced into a scratch recorder (which keeps nothing) against
    /// untraced. Call it before the rank's recorder is installed: messages
    /// to self match no other rank's, so the calls leave the rank as they
    /// found it.
    pub fn measure_call_recording(&self) -> Result<CallCosts> {
        let ctx = self.rank_context();
        // Room for every event recorded: a full buffer would drop, which
        // costs differently.
        let events = Loop::ALL.iter().map(|l| l.calls_per_iteration()).sum::<usize>() * ITERATIONS * BATCHES;
        ctx.install_recorder(Recorder::scratch(self.rank() as u32, self.size() as u32, events));
        let mut added: [Vec<f64>; 3] = Default::default();
        let measured = (|| -> Result<()> {
            for batch in 0..BATCHES {
                for (group, &timed) in Loop::ALL.iter().enumerate() {
                    let (traced, untraced) = if batch % 2 == 0 {
                        let traced = self.time_loop(timed, true)?;
                        (traced, self.time_loop(timed, false)?)
                    } else {
                        let untraced = self.time_loop(timed, false)?;
                        (self.time_loop(timed, true)?, untraced)
                    };
                    added[group].push(traced - untraced);
                }
            }
            Ok(())
        })();
        drop(ctx.take_recorder());
        measured?;
        let [blocking, probe, nonblocking] = added.map(|differences| median(differences).ceil().max(1.0) as u32);
        Ok(CallCosts { blocking, probe, nonblocking })
    }

    /// ns per call of loop `timed`, its calls recorded or not.
    fn time_loop(&self, timed: Loop, traced: bool) -> Result<f64> {
        let (me, clock) = (self.rank(), TraceClock::shared());
        self.rank_context().pause_tracing(!traced);
        let (mut word, sent) = ([0u64; 1], [7u64; 1]);
        let start = clock.now();
        for i in 0..ITERATIONS as u64 {
            match timed {
                Loop::Blocking => {
                    self.send(&[i], me, 0)?;
                    self.recv(&mut word, Source::Rank(me), Tag::Is(0))?;
                }
                Loop::Probe => {
                    std::hint::black_box(self.iprobe(Source::Rank(me), Tag::Is(1))?);
                }
                Loop::NonBlocking => self.scope(|scope| -> Result<()> {
                    let send = self.isend(scope, &sent, me, 2)?;
                    let recv = self.irecv(scope, &mut word, Source::Rank(me), Tag::Is(2))?;
                    send.wait()?;
                    recv.wait().map(drop)
                })?,
            }
        }
        let ns = clock.to_ns(clock.now()).saturating_sub(clock.to_ns(start)) as f64;
        Ok(ns / (ITERATIONS * timed.calls_per_iteration()) as f64)
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
