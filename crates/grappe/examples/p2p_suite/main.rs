//! The point-to-point conformance suite as a program, so that the same
//! checks run under every launch: `grappe run` (threads, processes,
//! hybrid), MPICH's `mpiexec`, Slurm's `srun`. Exits non-zero (naming the
//! failed check) on the first failure; rank 0 prints one line on success.

mod checks;

fn main() {
    grappe::run(|world| -> Result<(), String> {
        checks::run_all(world)?;
        if world.rank() == 0 {
            println!("p2p suite passed on {} ranks", world.size());
        }
        Ok(())
    });
}
