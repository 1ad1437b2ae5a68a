/* The fixed cost of a call into an MPI library: MPI_Comm_rank, and
 * MPI_Iprobe with nothing to find, on one rank; best of 5 runs of 2e6 (1e6)
 * calls each. BENCHMARKS.md ("What the C layer costs").
 *
 *     mpicc.mpich -O2 -o mpi_call_cost bench/mpi_call_cost.c
 *     LD_LIBRARY_PATH=target/mpi/lib grappe run -n 1 ./mpi_call_cost
 *     mpiexec.mpich -n 1 ./mpi_call_cost */
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int r = 0, s = 0, flag;
  double best = 1e9, bestp = 1e9;
  for (int rep = 0; rep < 5; rep++) {
    double t = MPI_Wtime();
    for (int i = 0; i < 2000000; i++) { MPI_Comm_rank(MPI_COMM_WORLD, &r); s += r; }
    t = (MPI_Wtime() - t) / 2000000 * 1e9; if (t < best) best = t;
    t = MPI_Wtime();
    for (int i = 0; i < 1000000; i++) { MPI_Iprobe(MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE); s += flag; }
    t = (MPI_Wtime() - t) / 1000000 * 1e9; if (t < bestp) bestp = t;
  }
  printf("MPI_Comm_rank %.1f ns, MPI_Iprobe %.1f ns\n", best, bestp);
  MPI_Finalize();
  return s < 0;
}
