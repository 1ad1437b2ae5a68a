/* Large collectives through the C library: MPI_Ibcast + MPI_Wait,
 * MPI_Bcast and MPI_Allgather of N bytes (MPI_BYTE) on every rank,
 * warm-up 3, then the mean of ITERATIONS calls, in µs, on rank 0:
 *
 *     mpicc.mpich -O2 bench/coll_large.c -o coll_large
 *     LD_LIBRARY_PATH=target/mpi/lib grappe run -n 2 ./coll_large N [ITERATIONS]
 *     GRAPPE_MPI_THREAD_LEVEL=multiple ...   (blocking collectives as schedules)
 *     mpiexec.mpich -n 2 ./coll_large N      (MPICH, the same binary)
 *
 * Prints one line: "N ibcast_us bcast_us allgather_us". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static double mean_us(int iterations, void (*op)(char *, char *, int), char *a, char *b, int n)
{
    for (int i = 0; i < 3; i++)
        op(a, b, n);
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (int i = 0; i < iterations; i++)
        op(a, b, n);
    return (MPI_Wtime() - start) / iterations * 1e6;
}

static void ibcast(char *a, char *b, int n)
{
    (void)b;
    MPI_Request request;
    MPI_Ibcast(a, n, MPI_BYTE, 0, MPI_COMM_WORLD, &request);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
}

static void bcast(char *a, char *b, int n)
{
    (void)b;
    MPI_Bcast(a, n, MPI_BYTE, 0, MPI_COMM_WORLD);
}

static void allgather(char *a, char *b, int n)
{
    MPI_Allgather(a, n, MPI_BYTE, b, n, MPI_BYTE, MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int n = argc > 1 ? atoi(argv[1]) : 1 << 20;
    int iterations = argc > 2 ? atoi(argv[2]) : 50;
    char *a = malloc(n), *b = malloc((size_t)n * size);
    for (int i = 0; i < n; i++)
        a[i] = (char)(i + rank);
    double t_ibcast = mean_us(iterations, ibcast, a, b, n);
    double t_bcast = mean_us(iterations, bcast, a, b, n);
    double t_allgather = mean_us(iterations, allgather, a, b, n);
    if (rank == 0)
        printf("%d %.1f %.1f %.1f\n", n, t_ibcast, t_bcast, t_allgather);
    free(a), free(b);
    MPI_Finalize();
    return 0;
}
