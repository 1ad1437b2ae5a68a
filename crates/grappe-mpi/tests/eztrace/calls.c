/* A program for EZTrace's MPI module: on each of 10 rounds every rank
 * calls MPI_Sendrecv around a ring, MPI_Iallreduce and MPI_Wait, and
 * MPI_Barrier; rank 0 prints the last round's sum of ranks. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int token = rank, got = -1, sum = 0;
    for (int i = 0; i < 10; i++) {
        MPI_Sendrecv(&token, 1, MPI_INT, (rank + 1) % size, 3, &got, 1, MPI_INT, (rank + size - 1) % size, 3,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Request request;
        MPI_Iallreduce(&got, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &request);
        MPI_Wait(&request, MPI_STATUS_IGNORE);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (rank == 0)
        printf("sum of ranks %d\n", sum);
    MPI_Finalize();
    return 0;
}
