//! An FFT-like kernel: spectral steps of the heat equation on an N×N
//! periodic grid (N a power of two), grid rows split among ranks. Each
//! step is a 2-D FFT (1-D FFTs of the local rows, an all-to-all
//! transpose, 1-D FFTs again), a damping of each mode, and the inverse
//! transform with its own transposes: local compute and `alltoall`.
//!
//!     grappe run -n 4 target/release/examples/fft [N] [STEPS]
//!
//! Every 1-D transform works on a whole row, whatever the split, and the
//! checksum adds per-row sums in row order: the same bits on 1, 2 or 4
//! ranks (N a multiple of the ranks), traced or not.

use grappe::{Communicator, Sum};
use std::f64::consts::PI;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(256);
    let steps: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(10);
    grappe::run(|world| -> grappe::Result<()> {
        let size = world.size();
        if !n.is_power_of_two() || n % size != 0 {
            if world.rank() == 0 {
                eprintln!("fft: N={n} must be a power of two and a multiple of the {size} ranks");
            }
            std::process::exit(2);
        }
        let mut grid = Grid::new(world, n);
        let twiddles = Twiddles::new(n);
        for _ in 0..steps {
            grid.step(world, &twiddles)?;
        }
        let checksum = grid.checksum(world)?;
        if world.rank() == 0 {
            println!("fft n={n} ranks={size} steps={steps} checksum={checksum:.12e} bits={:016x}", checksum.to_bits());
        }
        Ok(())
    });
}

/// This rank's rows of the grid, complex values as (re, im) pairs.
struct Grid {
    n: usize,
    first: usize,
    rows: usize,
    data: Vec<f64>,
    scratch: Vec<f64>,
}

impl Grid {
    /// A deterministic initial field: a few bumps.
    fn new(world: &Communicator, n: usize) -> Grid {
        let rows = n / world.size();
        let first = world.rank() * rows;
        let mut data = vec![0.0; rows * n * 2];
        for r in 0..rows {
            for c in 0..n {
                let (y, x) = ((first + r) as f64 / n as f64, c as f64 / n as f64);
                data[(r * n + c) * 2] =
                    (2.0 * PI * x).sin() * (4.0 * PI * y).cos() + ((first + r) * 31 + c) as f64 % 3.0;
            }
        }
        Grid { n, first, rows, data, scratch: vec![0.0; rows * n * 2] }
    }

    /// One spectral step: forward transform, damping, inverse transform.
    fn step(&mut self, world: &Communicator, tw: &Twiddles) -> grappe::Result<()> {
        self.fft_rows(tw, false);
        self.transpose(world)?;
        self.fft_rows(tw, false);
        self.damp();
        self.fft_rows(tw, true);
        self.transpose(world)?;
        self.fft_rows(tw, true);
        let scale = 1.0 / (self.n * self.n) as f64;
        self.data.iter_mut().for_each(|v| *v *= scale);
        Ok(())
    }

    fn fft_rows(&mut self, tw: &Twiddles, inverse: bool) {
        let n = self.n;
        for row in self.data.chunks_exact_mut(2 * n) {
            fft(row, tw, inverse);
        }
    }

    /// Damps mode (k, l) (this rank holds rows of the transposed grid).
    fn damp(&mut self) {
        let n = self.n;
        let wave = |k: usize| if k <= n / 2 { k as f64 } else { k as f64 - n as f64 };
        for r in 0..self.rows {
            let k = wave(self.first + r);
            for c in 0..n {
                let l = wave(c);
                let factor = (-1e-4 * (k * k + l * l)).exp();
                self.data[(r * n + c) * 2] *= factor;
                self.data[(r * n + c) * 2 + 1] *= factor;
            }
        }
    }

    /// Transposes the grid: blocks out with one all-to-all.
    fn transpose(&mut self, world: &Communicator) -> grappe::Result<()> {
        let (n, b, size) = (self.n, self.rows, world.size());
        // Block for rank j: my rows × its columns, row after row.
        for j in 0..size {
            for r in 0..b {
                let from = (r * n + j * b) * 2;
                let to = (j * b * b + r * b) * 2;
                self.scratch[to..to + 2 * b].copy_from_slice(&self.data[from..from + 2 * b]);
            }
        }
        world.alltoall(&self.scratch[..], &mut self.data[..])?;
        // Block from rank i holds its rows i*b+r × my columns c: element
        // (c, i*b+r) of the transposed grid.
        self.scratch.copy_from_slice(&self.data);
        for i in 0..size {
            for r in 0..b {
                for c in 0..b {
                    let from = (i * b * b + r * b + c) * 2;
                    let to = (c * n + i * b + r) * 2;
                    self.data[to] = self.scratch[from];
                    self.data[to + 1] = self.scratch[from + 1];
                }
            }
        }
        Ok(())
    }

    /// Sum of the real parts weighted by position: per row, then in row order.
    fn checksum(&self, world: &Communicator) -> grappe::Result<f64> {
        let n = self.n;
        let mut sums = vec![0.0; n];
        for r in 0..self.rows {
            let global = self.first + r;
            sums[global] = (0..n).map(|c| self.data[(r * n + c) * 2] * (1 + global * n + c) as f64).sum();
        }
        let mut all = vec![0.0; n];
        world.allreduce(&sums[..], &mut all[..], Sum)?;
        Ok(all.iter().sum())
    }
}

/// exp(-2πik/n) for k < n/2.
struct Twiddles(Vec<(f64, f64)>);

impl Twiddles {
    fn new(n: usize) -> Twiddles {
        Twiddles((0..n / 2).map(|k| (-2.0 * PI * k as f64 / n as f64).sin_cos()).map(|(s, c)| (c, s)).collect())
    }
}

/// In-place iterative radix-2 FFT of interleaved complex values
/// (unscaled; `inverse` conjugates the twiddles).
fn fft(v: &mut [f64], tw: &Twiddles, inverse: bool) {
    let n = v.len() / 2;
    let bits = n.trailing_zeros();
    for i in 0..n {
        let j = i.reverse_bits() >> (usize::BITS - bits);
        if j > i {
            v.swap(2 * i, 2 * j);
            v.swap(2 * i + 1, 2 * j + 1);
        }
    }
    let mut len = 2;
    while len <= n {
        let stride = n / len;
        for start in (0..n).step_by(len) {
            for k in 0..len / 2 {
                let (wr, wi) = tw.0[k * stride];
                let wi = if inverse { -wi } else { wi };
                let (a, b) = (start + k, start + k + len / 2);
                let (br, bi) = (v[2 * b], v[2 * b + 1]);
                let (tr, ti) = (br * wr - bi * wi, br * wi + bi * wr);
                let (ar, ai) = (v[2 * a], v[2 * a + 1]);
                v[2 * a] = ar + tr;
                v[2 * a + 1] = ai + ti;
                v[2 * b] = ar - tr;
                v[2 * b + 1] = ai - ti;
            }
        }
        len *= 2;
    }
}
