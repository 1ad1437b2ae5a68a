/* MPI_ERRORS_ARE_FATAL, the default: rank 0's MPI_Send to rank size+5
 * ends the whole job, while the other ranks wait in MPI_Recv for a message
 * that only comes if the error was not fatal. The expectation
 * (run-c-tests): the launcher exits quickly with a non-zero status and
 * the job's stderr says what went wrong (it names MPI_Send and the bad
 * rank), and no rank prints "FAIL". */
#include "check.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_start("fatal");
    int rank, size, buf = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        int rc = MPI_Send(&buf, 1, MPI_INT, size + 5, 0, MPI_COMM_WORLD);
        /* Not reached: if it is, release the others so that the job ends
         * at once with status 0, which the harness reports. */
        fprintf(stderr, "FAIL fatal.c rank 0: MPI_Send to rank %d returned %d under MPI_ERRORS_ARE_FATAL\n",
                size + 5, rc);
        for (int r = 1; r < size; r++)
            MPI_Send(NULL, 0, MPI_INT, r, 1, MPI_COMM_WORLD);
    } else {
        MPI_Recv(NULL, 0, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        fprintf(stderr, "FAIL fatal.c rank %d: still running after rank 0's fatal error\n", rank);
    }
    MPI_Finalize();
    return 0;
}
