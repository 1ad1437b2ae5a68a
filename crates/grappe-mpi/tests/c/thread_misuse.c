/* A program that breaks its thread level: MPI_Init (MPI_THREAD_SINGLE),
 * then two threads calling MPI at once. Below MPI_THREAD_MULTIPLE grappe's
 * library takes no lock (MPI's rule says no two calls overlap); a call
 * that finds another inside fails, naming the problem, and under the
 * default error handler the job ends. Not a conformance test: the
 * program is erroneous, and what MPICH does with it is undefined. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>

static void *hammer(void *arg)
{
    (void)arg;
    int rank, flag;
    for (long i = 0; i < 200000000L; i++) {
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Iprobe(MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    pthread_t a, b;
    pthread_create(&a, NULL, hammer, NULL);
    pthread_create(&b, NULL, hammer, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("no overlapping call was noticed\n");
    MPI_Finalize();
    return 0;
}
