//! α of a runtime call, measured in place.
//!
//! The recorder times its own work in a tight loop, where a call's two
//! clock reads run back to back (19.5 ns on the AMD EPYC). In a real call
//! the call's own work runs beside them and recording adds less (12.8 ns
//! to an `iprobe`, 15.0 to a send or a receive). Compensation subtracts α
//! from the program's dates, so α must be what recording adds to a call
//! as the program makes it: the rank measures that before it records, on
//! its own calls, and the recorder writes it as the α of every call.

use grappe_trace::{Recorder, TraceClock};

use crate::{Communicator, Result, Source, Tag};

/// Batches, each timed traced and untraced (in alternating order) so that
/// both halves see the same machine; α is the median of the batches'
/// differences, which a preempted batch does not move.
const BATCHES: usize = 15;
/// Send and receive pairs per batch.
const PAIRS: usize = 256;

impl Communicator {
    /// What recording adds to a runtime call on this rank, in ns: 8-byte
    /// sends and receives to self through the public calls, traced into a
    /// scratch recorder (which keeps nothing) against untraced. Call it
    /// before the rank's recorder is installed: messages to self match no
    /// other rank's, so the calls leave the rank as they found it.
    pub fn measure_call_recording(&self) -> Result<u32> {
        let ctx = self.rank_context();
        let me = self.rank();
        let world_size = self.size() as u32;
        ctx.install_recorder(Recorder::scratch(me as u32, world_size, 2 * PAIRS * BATCHES));
        let clock = TraceClock::shared();
        let per_call = |traced: bool| -> Result<f64> {
            ctx.pause_tracing(!traced);
            let mut word = [0u64; 1];
            let start = clock.now();
            for i in 0..PAIRS as u64 {
                self.send(&[i], me, 0)?;
                self.recv(&mut word, Source::Rank(me), Tag::Is(0))?;
            }
            Ok(clock.to_ns(clock.now()).saturating_sub(clock.to_ns(start)) as f64 / (2 * PAIRS) as f64)
        };
        let mut added = Vec::with_capacity(BATCHES);
        let mut measured = || -> Result<()> {
            for batch in 0..BATCHES {
                let (traced, untraced) = if batch % 2 == 0 {
                    let traced = per_call(true)?;
                    (traced, per_call(false)?)
                } else {
                    let untraced = per_call(false)?;
                    (per_call(true)?, untraced)
                };
                added.push(traced - untraced);
            }
            Ok(())
        };
        let outcome = measured();
        drop(ctx.take_recorder());
        outcome?;
        Ok(median(added).ceil().max(1.0) as u32)
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
