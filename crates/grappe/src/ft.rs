//! Programs that survive the death of a rank: coordinated checkpoints of
//! the application's state, and restart from the last committed wave.
//!
//! ```no_run
//! #[derive(serde::Serialize, serde::Deserialize)]
//! struct State { iteration: u64, sum: f64 }
//!
//! grappe::ft::run(
//!     |_world| State { iteration: 0, sum: 0.0 },
//!     |world, ft, state| -> grappe::Result<()> {
//!         while state.iteration < 1000 {
//!             ft.point(state).expect("checkpoint"); // the whole state is `state` here
//!             let mut total = 0.0;
//!             world.allreduce(&(world.rank() as f64), &mut total, grappe::Sum)?;
//!             state.sum += total;
//!             state.iteration += 1;
//!         }
//!         Ok(())
//!     },
//! );
//! ```
//!
//! `grappe run --checkpoint-dir D --checkpoint-every 30s ./prog` takes a
//! wave every 30 s and restarts the job when a rank dies. The body starts
//! from `init` on a fresh run and from the restored state after a restart,
//! so it must resume from what the state says (the loop above does). The
//! rule of [`grappe_ft::wave`]: every rank calls `point` the same number of
//! times. Messages may cross points (they are saved with the wave), except
//! a rendezvous still being sent by a pending `isend`, which makes a wave
//! be skipped.
//!
//! Without `GRAPPE_FT_DIR` (no `--checkpoint-dir`), points cost one
//! comparison and nothing is saved.
//!
//! With `GRAPPE_FT_HOLD=FILE`, the ranks wait after `body` (taking waves of
//! the final state) until FILE exists: fault-injection tests use it so
//! that the job cannot end before their kills land. A job restarted from a
//! wave taken there runs `body` again from its final state.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::run::RankResult;
use grappe_comm::Communicator;

pub use grappe_ft::{Checkpointer, FtError, FtSettings, FtStats, Protocol};

/// Runs a checkpointed program: `init` gives a rank's state on a fresh
/// start, `body` runs from a state (fresh or restored) with the rank's
/// [`Checkpointer`].
pub fn run<S, I, F, R>(init: I, body: F)
where
    S: Serialize + DeserializeOwned,
    I: Fn(&Communicator) -> S + Sync,
    F: Fn(&Communicator, &mut Checkpointer, &mut S) -> R + Sync,
    R: RankResult,
{
    crate::run(|world| -> Result<(), String> {
        let mut ft = Checkpointer::new(world).map_err(|e| e.to_string())?;
        let mut state = match ft.restore().map_err(|e| e.to_string())? {
            Some(state) => state,
            None => init(world),
        };
        body(world, &mut ft, &mut state).into_outcome()?;
        ft.hold(&state).map_err(|e| e.to_string())?;
        ft.finish().map(|_| ()).map_err(|e| e.to_string())
    });
}
