/* A window's error handler is MPI_ERRORS_ARE_FATAL unless the program sets
 * another, whatever its communicator's is: an access past the target's
 * window ends the job, naming the call and the target rank, although
 * MPI_COMM_WORLD's handler returns errors. A program that survives prints
 * "survived" and exits 1. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rank, size, memory[4] = {0, 0, 0, 0};
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Win win;
    MPI_Win_create(memory, sizeof memory, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_fence(0, win);
    int value = 1;
    MPI_Put(&value, 1, MPI_INT, size - 1, 7, 1, MPI_INT, win);
    MPI_Win_fence(0, win);
    printf("survived\n");
    MPI_Win_free(&win);
    MPI_Finalize();
    return 1;
}
