//! Clock samples: the four timestamps of one ping-pong exchange (Fig. 3.1).
//!
//! Timestamps are **signed nanoseconds** (`i64`) of each rank's local clock.
//! Signed because differences between clocks and simulated clocks with a
//! negative offset need no special case; `i64` covers ±292 years, so a trace's
//! `u64` monotonic dates convert with `i64::try_from`. All arithmetic on them
//! inside the crate is done in `i128`, so no input can overflow.

use serde::{Deserialize, Serialize};

use crate::error::ClockError;
use crate::phase::Phase;

/// One ping-pong exchange between the reference rank and a peer.
///
/// Dates are signed nanoseconds of each side's local clock: signed so that
/// differences and simulated clocks with a negative offset need no special
/// case; a trace's `u64` monotonic dates convert with `i64::try_from`
/// (±292 years). The crate does its arithmetic on them in `i128`, so no
/// input overflows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sample {
    /// lt_ref(S_ref^k): the reference sends the ping (reference clock).
    pub t_send_ref: i64,
    /// lt_j(R_j^k): the peer receives the ping (peer clock).
    pub t_recv_peer: i64,
    /// lt_j(S_j^k): the peer sends the pong back (peer clock).
    pub t_send_peer: i64,
    /// lt_ref(R_ref^k): the reference receives the pong (reference clock).
    pub t_recv_ref: i64,
}

impl Sample {
    /// A sample from its four dates, in protocol order.
    pub fn new(t_send_ref: i64, t_recv_peer: i64, t_send_peer: i64, t_recv_ref: i64) -> Self {
        Sample { t_send_ref, t_recv_peer, t_send_peer, t_recv_ref }
    }

    /// Round trip seen by the reference, lt_ref(R_ref) − lt_ref(S_ref).
    pub fn round_trip(&self) -> i128 {
        i128::from(self.t_recv_ref) - i128::from(self.t_send_ref)
    }

    /// Turnaround on the peer, lt_j(S_j) − lt_j(R_j).
    pub fn hold(&self) -> i128 {
        i128::from(self.t_send_peer) - i128::from(self.t_recv_peer)
    }

    /// Time on the wire, both ways: round trip minus turnaround. Mixing the
    /// two clocks is harmless here: the drift over one turnaround is ~1e-5
    /// of a few microseconds.
    pub fn wire_time(&self) -> i128 {
        self.round_trip() - self.hold()
    }

    /// Twice the offset lt_j − lt_ref at the pong's arrival (Eq. 3.9 minus
    /// x): (r − s_ref) + (s − r_ref). Kept doubled so it stays an integer.
    pub(crate) fn twice_midpoint_offset(&self) -> i128 {
        (i128::from(self.t_recv_peer) - i128::from(self.t_send_ref))
            + (i128::from(self.t_send_peer) - i128::from(self.t_recv_ref))
    }

    fn check(&self, phase: Phase, index: usize) -> Result<(), ClockError> {
        let reason = if self.round_trip() < 0 {
            "the pong arrives before the ping left (negative round trip)"
        } else if self.hold() < 0 {
            "the peer replies before it received the ping (negative turnaround)"
        } else {
            return Ok(());
        };
        Err(ClockError::InvalidSample { phase, index, reason })
    }
}

/// All samples between the reference and one peer, by phase. Within a phase
/// the samples are kept in the order given, which should be time order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SampleSet {
    before: Vec<Sample>,
    after: Vec<Sample>,
}

impl SampleSet {
    /// An empty set.
    pub fn new() -> Self {
        SampleSet::default()
    }

    /// A set from the two phases' samples.
    pub fn from_phases(before: Vec<Sample>, after: Vec<Sample>) -> Self {
        SampleSet { before, after }
    }

    /// Appends one sample to a phase.
    pub fn push(&mut self, phase: Phase, sample: Sample) {
        self.phase_mut(phase).push(sample);
    }

    /// Appends several samples to a phase.
    pub fn extend(&mut self, phase: Phase, samples: impl IntoIterator<Item = Sample>) {
        self.phase_mut(phase).extend(samples);
    }

    /// The samples of one phase.
    pub fn phase(&self, phase: Phase) -> &[Sample] {
        match phase {
            Phase::Before => &self.before,
            Phase::After => &self.after,
        }
    }

    /// Every sample with its phase, Before first.
    pub fn iter(&self) -> impl Iterator<Item = (Phase, &Sample)> {
        let before = self.before.iter().map(|s| (Phase::Before, s));
        before.chain(self.after.iter().map(|s| (Phase::After, s)))
    }

    /// Number of samples in both phases.
    pub fn len(&self) -> usize {
        self.before.len() + self.after.len()
    }

    /// True when no phase has a sample.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn phase_mut(&mut self, phase: Phase) -> &mut Vec<Sample> {
        match phase {
            Phase::Before => &mut self.before,
            Phase::After => &mut self.after,
        }
    }

    /// The samples of a phase, refused if the phase is empty or, when
    /// `monotonic` (the clocks are assumed to read in order), a sample has
    /// a negative round trip or turnaround. Clocks with read noise larger
    /// than a message's latency (a jittery simulated clock, a coarse
    /// counter) do give such samples; the robust estimator takes them.
    pub(crate) fn checked_phase(&self, phase: Phase, monotonic: bool) -> Result<&[Sample], ClockError> {
        let samples = self.phase(phase);
        if samples.is_empty() {
            return Err(ClockError::EmptyPhase { phase });
        }
        if monotonic {
            for (index, sample) in samples.iter().enumerate() {
                sample.check(phase, index)?;
            }
        }
        Ok(samples)
    }
}
