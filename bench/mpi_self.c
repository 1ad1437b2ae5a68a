/* One rank sends 8 bytes to itself N times through the MPI C interface: the
   C counterpart of grappe's `comm_self` example, for callgrind's instruction
   counts of the C library's per-call path. Built with mpicc.mpich, run alone
   (a singleton) on grappe's library:
     LD_LIBRARY_PATH=target/mpi/lib valgrind --tool=callgrind ./mpi_self 10000
   and again with 20000: the difference over 10000 is one send and one receive. */
#include <mpi.h>
#include <stdlib.h>
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  long n = argc > 1 ? atol(argv[1]) : 100000;
  char buf[8];
  for (long i = 0; i < n; i++) {
    MPI_Send(&i, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
    MPI_Recv(buf, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  MPI_Finalize();
  return 0;
}
