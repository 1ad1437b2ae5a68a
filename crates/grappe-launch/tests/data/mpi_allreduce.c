/* An ordinary MPICH program: grappe run must serve it PMI-1 exactly as hydra does. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    int rank, size, sum;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    sum = rank;
    MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("mpi rank %d of %d sum %d\n", rank, size, sum);
    MPI_Finalize();
    return 0;
}
