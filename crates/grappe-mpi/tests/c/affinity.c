/* Prints how many CPUs the rank's thread may run on after MPI_Init. */
#define _GNU_SOURCE
#include <mpi.h>
#include <sched.h>
#include <stdio.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    cpu_set_t set;
    CPU_ZERO(&set);
    sched_getaffinity(0, sizeof set, &set);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    printf("rank %d runs on %d cpus\n", rank, CPU_COUNT(&set));
    MPI_Finalize();
    return 0;
}
