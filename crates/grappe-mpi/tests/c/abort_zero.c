/* MPI_Abort with error code 0 still ends the whole job, and the job's exit
 * status is 0, the code the program chose (as MPICH's mpiexec returns it):
 * OpenCoarrays ends a coarray Fortran job this way when one image executes
 * STOP, a normal termination that scripts and test drivers read as
 * success. Rank 1 (rank 0 alone) calls MPI_Abort(MPI_COMM_WORLD, 0) while
 * every other rank waits in MPI_Recv for a message that only comes if
 * MPI_Abort returns. The expectation (run-c-tests): the launcher exits
 * quickly with status 0, and no rank prints "FAIL". */
#include "check.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_start("abort_zero");
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int aborter = size > 1 ? 1 : 0;
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == aborter) {
        MPI_Abort(MPI_COMM_WORLD, 0);
        fprintf(stderr, "FAIL abort_zero.c rank %d: MPI_Abort returned\n", rank);
        for (int r = 0; r < size; r++)
            if (r != rank)
                MPI_Send(NULL, 0, MPI_INT, r, 1, MPI_COMM_WORLD);
    } else {
        MPI_Recv(NULL, 0, MPI_INT, aborter, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        fprintf(stderr, "FAIL abort_zero.c rank %d: still running after rank %d's MPI_Abort\n", rank, aborter);
    }
    MPI_Finalize();
    return 1;
}
