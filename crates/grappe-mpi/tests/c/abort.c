/* MPI_Abort ends the whole job: rank 1 (rank 0 alone) calls
 * MPI_Abort(MPI_COMM_WORLD, 7) while every other rank waits in MPI_Recv
 * for a message that only comes if MPI_Abort returns. The expectation
 * (run-c-tests): the launcher exits quickly with a non-zero status (7
 * under mpiexec and grappe run), and no rank prints "FAIL". */
#include "check.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_start("abort");
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int aborter = size > 1 ? 1 : 0;
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == aborter) {
        MPI_Abort(MPI_COMM_WORLD, 7);
        /* Not reached: if it is, release the others so that the job ends
         * at once with status 0, which the harness reports. */
        fprintf(stderr, "FAIL abort.c rank %d: MPI_Abort returned\n", rank);
        for (int r = 0; r < size; r++)
            if (r != rank)
                MPI_Send(NULL, 0, MPI_INT, r, 1, MPI_COMM_WORLD);
    } else {
        MPI_Recv(NULL, 0, MPI_INT, aborter, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        fprintf(stderr, "FAIL abort.c rank %d: still running after rank %d's MPI_Abort\n", rank, aborter);
    }
    MPI_Finalize();
    return 0;
}
