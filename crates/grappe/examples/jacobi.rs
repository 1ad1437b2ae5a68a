//! Jacobi relaxation of Laplace's equation on a square plate, the main
//! example of grappe: rows are split among ranks, each iteration exchanges
//! halo rows with the neighbours (`sendrecv`) and agrees on convergence
//! (`allreduce` of the largest change).
//!
//!     grappe run -n 4 target/release/examples/jacobi [N] [MAX_ITERATIONS]
//!
//! Traced (`grappe run --trace DIR`), it shows two regions per iteration,
//! "halo exchange" and "sweep", and the largest change as a counter.
//!
//! It checkpoints: under `grappe run --checkpoint-dir D --checkpoint-every
//! 1s`, a wave saves each rank's rows at the top of an iteration, and a job
//! whose rank dies restarts from the last committed wave with the same
//! result to the last bit.
//!
//! The top edge is held at 100, the other edges at 0. Rank 0 prints the
//! iterations, the final change, the temperature at the centre and a
//! checksum that does not depend on how many ranks ran it.

use std::error::Error;
use std::time::Instant;

use grappe::ft::Checkpointer;
use grappe::{Communicator, Max, Sum};
use serde::{Deserialize, Serialize};

/// Stop when no point changes by more than this.
const TOLERANCE: f64 = 1e-4;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(128);
    let max_iterations: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(50_000);
    grappe::ft::run(
        |world| Relaxation { plate: Plate::new(world, n), iteration: 0, change: f64::INFINITY },
        |world, ft, state| -> Result<(), String> {
            let start = Instant::now();
            state.relax(world, ft, max_iterations).map_err(|e| e.to_string())?;
            let Relaxation { plate, iteration, change } = state;
            let checksum = plate.checksum(world).map_err(|e| e.to_string())?;
            let centre = plate.value_at(world, n / 2, n / 2).map_err(|e| e.to_string())?;
            if world.rank() == 0 {
                println!(
                    "jacobi n={n} ranks={} iterations={iteration} change={change:.3e} centre={centre:.6} checksum={checksum:.9e} bits={:016x} seconds={:.3}",
                    world.size(),
                    checksum.to_bits(),
                    start.elapsed().as_secs_f64()
                );
            }
            Ok(())
        },
    );
}

/// The whole state of a rank between two iterations: what a checkpoint
/// saves (`grappe run --checkpoint-dir`).
#[derive(Serialize, Deserialize)]
struct Relaxation {
    plate: Plate,
    /// Iterations done.
    iteration: usize,
    /// The largest change of the last one.
    change: f64,
}

impl Relaxation {
    /// Iterates until converged or `max` iterations, with a checkpoint
    /// point at the top of each iteration.
    fn relax(&mut self, world: &Communicator, ft: &mut Checkpointer, max: usize) -> Result<(), Box<dyn Error>> {
        while self.iteration < max && self.change >= TOLERANCE {
            ft.point(self)?;
            self.change = self.plate.iterate(world)?;
            self.iteration += 1;
        }
        Ok(())
    }
}

/// This rank's rows of the plate, with one halo row above and below.
#[derive(Serialize, Deserialize)]
struct Plate {
    n: usize,
    /// First global row owned by this rank.
    first: usize,
    /// Rows owned by this rank.
    rows: usize,
    cur: Vec<f64>,
    next: Vec<f64>,
}

impl Plate {
    fn new(world: &Communicator, n: usize) -> Plate {
        let (size, rank) = (world.size(), world.rank());
        let base = n / size;
        let extra = n % size;
        let rows = base + usize::from(rank < extra);
        let first = rank * base + rank.min(extra);
        let mut plate = Plate { n, first, rows, cur: vec![0.0; (rows + 2) * n], next: vec![0.0; (rows + 2) * n] };
        plate.set_boundary();
        plate
    }

    /// Global row `first - 1` is the top halo; global row 0 is the hot edge.
    fn set_boundary(&mut self) {
        if self.first == 0 {
            for grid in [&mut self.cur, &mut self.next] {
                grid[self.n..2 * self.n].fill(100.0);
            }
        }
    }

    fn row(&self, local: usize) -> &[f64] {
        &self.cur[local * self.n..(local + 1) * self.n]
    }

    /// One iteration; returns the largest change over the plate.
    fn iterate(&mut self, world: &Communicator) -> grappe::Result<f64> {
        self.exchange_halos(world)?;
        let local = {
            let _sweep = world.region("sweep");
            self.sweep()
        };
        let mut change = 0.0;
        world.allreduce(&local, &mut change, Max)?;
        // A counter in the trace (ignored when tracing is off).
        world.trace_counter("largest change (1e-6)", (change * 1e6) as i64);
        std::mem::swap(&mut self.cur, &mut self.next);
        Ok(change)
    }

    /// Sends the first and last owned rows to the neighbours and receives
    /// their edge rows into the halos.
    fn exchange_halos(&mut self, world: &Communicator) -> grappe::Result<()> {
        let _halos = world.region("halo exchange");
        let (rank, size, n, rows) = (world.rank(), world.size(), self.n, self.rows);
        if rank > 0 {
            let (halo, owned) = self.cur.split_at_mut(n);
            world.sendrecv(&owned[..n], rank - 1, 0, halo, rank - 1, 1)?;
        }
        if rank + 1 < size {
            let (owned, halo) = self.cur.split_at_mut((rows + 1) * n);
            world.sendrecv(&owned[rows * n..], rank + 1, 1, &mut halo[..n], rank + 1, 0)?;
        }
        Ok(())
    }

    /// One Jacobi sweep over the interior points; returns the largest change.
    fn sweep(&mut self) -> f64 {
        let n = self.n;
        let mut change: f64 = 0.0;
        for local in 1..=self.rows {
            let global = self.first + local - 1;
            if global == 0 || global == n - 1 {
                continue;
            }
            let cur = &self.cur;
            let (up, row, down) = (
                &cur[(local - 1) * n..local * n],
                &cur[local * n..(local + 1) * n],
                &cur[(local + 1) * n..(local + 2) * n],
            );
            let out = &mut self.next[local * n..(local + 1) * n];
            for j in 1..n - 1 {
                let value = 0.25 * (up[j] + down[j] + row[j - 1] + row[j + 1]);
                change = change.max((value - row[j]).abs());
                out[j] = value;
            }
        }
        change
    }

    /// Sum of all points weighted by position, in rank order (the same
    /// bits whatever the number of ranks: rank 0 adds the per-row sums).
    fn checksum(&self, world: &Communicator) -> grappe::Result<f64> {
        let mut sums = vec![0.0; self.n];
        for local in 1..=self.rows {
            let global = self.first + local - 1;
            sums[global] = self.row(local).iter().enumerate().map(|(j, v)| v * (1 + global * self.n + j) as f64).sum();
        }
        let mut all = vec![0.0; self.n];
        world.allreduce(&sums[..], &mut all[..], Sum)?;
        Ok(all.iter().sum())
    }

    /// The value at global (row, col), known on every rank.
    fn value_at(&self, world: &Communicator, row: usize, col: usize) -> grappe::Result<f64> {
        let mine =
            if (self.first..self.first + self.rows).contains(&row) { self.row(row - self.first + 1)[col] } else { 0.0 };
        let mut value = 0.0;
        world.allreduce(&mine, &mut value, Sum)?;
        Ok(value)
    }
}
