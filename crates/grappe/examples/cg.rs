//! A CG-like kernel: conjugate gradients on the 5-point Laplacian of an
//! M×M grid, grid rows split among ranks. Each iteration does a local
//! sparse matrix-vector product after a halo exchange with the two
//! neighbours (`sendrecv`), and two dot products, each an `allreduce`.
//!
//!     grappe run -n 4 target/release/examples/cg [M] [ITERATIONS]
//!
//! The dot products reduce one partial sum per grid row (a vector of M
//! values, each non-zero on one rank only) and add them in row order, so
//! every rank count computes the same sums to the last bit: the checksum
//! is the same on 1, 2 or 4 ranks, traced or not.

use grappe::{Communicator, Sum};

const UP: i32 = 21;
const DOWN: i32 = 22;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let m: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(256);
    let iterations: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(200);
    grappe::run(|world| -> grappe::Result<()> {
        let mut cg = Cg::new(world, m);
        let residual = cg.solve(world, iterations)?;
        // The sum of x, in row order (each x times 1.0 is x exactly).
        let checksum = cg.dot(world, &cg.x, &vec![1.0; cg.x.len()])?;
        if world.rank() == 0 {
            println!(
                "cg m={m} ranks={} iterations={iterations} residual={residual:.9e} checksum={checksum:.12e} bits={:016x}",
                world.size(),
                checksum.to_bits()
            );
        }
        Ok(())
    });
}

/// This rank's grid rows of the CG vectors. `p` has one halo row above
/// and one below; the others hold the owned rows only.
struct Cg {
    m: usize,
    first: usize,
    rows: usize,
    x: Vec<f64>,
    r: Vec<f64>,
    p: Vec<f64>,
    q: Vec<f64>,
}

impl Cg {
    /// Solves A x = b with b[i] = 1 + (i mod 7), from x = 0.
    fn new(world: &Communicator, m: usize) -> Cg {
        let (size, rank) = (world.size(), world.rank());
        let rows = m / size + usize::from(rank < m % size);
        let first = rank * (m / size) + rank.min(m % size);
        let b: Vec<f64> = (0..rows * m).map(|k| 1.0 + ((first * m + k) % 7) as f64).collect();
        let mut p = vec![0.0; (rows + 2) * m];
        p[m..(rows + 1) * m].copy_from_slice(&b);
        Cg { m, first, rows, x: vec![0.0; rows * m], r: b, p, q: vec![0.0; rows * m] }
    }

    /// Runs `iterations` CG steps; returns the last squared residual norm.
    fn solve(&mut self, world: &Communicator, iterations: usize) -> grappe::Result<f64> {
        // No allocation in the loop: a kernel that allocated and freed its
        // vectors every iteration would time the allocator (glibc trims
        // and grows its heap around them) as much as the computation.
        let owned = self.m..(self.rows + 1) * self.m;
        let mut rr = self.dot(world, &self.r, &self.r)?;
        for _ in 0..iterations {
            self.exchange_halos(world)?;
            self.multiply();
            let pq = self.dot(world, &self.p[owned.clone()], &self.q)?;
            let alpha = if pq == 0.0 { 0.0 } else { rr / pq };
            for ((x, r), (p, q)) in
                self.x.iter_mut().zip(self.r.iter_mut()).zip(self.p[owned.clone()].iter().zip(&self.q))
            {
                *x += alpha * p;
                *r -= alpha * q;
            }
            let next = self.dot(world, &self.r, &self.r)?;
            let beta = if rr == 0.0 { 0.0 } else { next / rr };
            rr = next;
            for (p, r) in self.p[self.m..].iter_mut().zip(&self.r) {
                *p = r + beta * *p;
            }
        }
        Ok(rr)
    }

    /// Fills the halo rows of `p` from the neighbours (zero at the edges).
    fn exchange_halos(&mut self, world: &Communicator) -> grappe::Result<()> {
        let (rank, size, m, rows) = (world.rank(), world.size(), self.m, self.rows);
        if rows == 0 {
            return Ok(());
        }
        if rank > 0 {
            let (halo, owned) = self.p.split_at_mut(m);
            world.sendrecv(&owned[..m], rank - 1, UP, halo, rank - 1, DOWN)?;
        }
        if rank + 1 < size {
            let (owned, halo) = self.p.split_at_mut((rows + 1) * m);
            world.sendrecv(&owned[rows * m..], rank + 1, DOWN, &mut halo[..m], rank + 1, UP)?;
        }
        Ok(())
    }

    /// q = A p for the 5-point Laplacian (4 on the diagonal, -1 around).
    fn multiply(&mut self) {
        let m = self.m;
        for row in 0..self.rows {
            let (up, mid, down) = (&self.p[row * m..], &self.p[(row + 1) * m..], &self.p[(row + 2) * m..]);
            for j in 0..m {
                let left = if j > 0 { mid[j - 1] } else { 0.0 };
                let right = if j + 1 < m { mid[j + 1] } else { 0.0 };
                self.q[row * m + j] = 4.0 * mid[j] - up[j] - down[j] - left - right;
            }
        }
    }

    /// The dot product of two owned vectors, the same bits on any number
    /// of ranks (see the module's documentation): per grid row here, then
    /// in row order.
    fn dot(&self, world: &Communicator, a: &[f64], b: &[f64]) -> grappe::Result<f64> {
        let m = self.m;
        let mut sums = vec![0.0; m];
        for row in 0..self.rows {
            let (a, b) = (&a[row * m..(row + 1) * m], &b[row * m..(row + 1) * m]);
            sums[self.first + row] = a.iter().zip(b).map(|(x, y)| x * y).sum();
        }
        let mut all = vec![0.0; m];
        world.allreduce(&sums[..], &mut all[..], Sum)?;
        Ok(all.iter().sum())
    }
}
