/* A C program whose traced calls must be recorded at its own lines: each
 * call is on a line that names it (c_programs.rs finds the lines by these
 * names and looks for them in the trace's profile), at every thread level
 * (GRAPPE_MPI_THREAD_LEVEL). */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, x = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        MPI_Send(&x, 1, MPI_INT, 1, 0, MPI_COMM_WORLD); /* site: send */
    else if (rank == 1)
        MPI_Recv(&x, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* site: recv */
    MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD); /* site: allreduce */
    MPI_Barrier(MPI_COMM_WORLD); /* site: barrier */
    MPI_Finalize();
    return 0;
}
