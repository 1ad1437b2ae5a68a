/* MPI_Intercomm_create with remote leaders named in the wrong group (each
 * leader names itself): each leader's call fails, saying the remote leader
 * must belong to the other group, and its group's other ranks fail too,
 * told by their leader, instead of waiting forever (MPI_ERRORS_RETURN).
 * Every rank prints "rank R: <message>" and the program exits 0. Run on
 * grappe only: the program is erroneous and MPICH waits forever. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm half, inter = MPI_COMM_NULL;
    int in_a = rank < size / 2;
    MPI_Comm_split(MPI_COMM_WORLD, in_a, rank, &half);
    int own_leader = in_a ? 0 : size / 2;
    int rc = MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, own_leader, 5, &inter);
    char text[MPI_MAX_ERROR_STRING] = "success";
    int len = 0;
    if (rc != MPI_SUCCESS)
        MPI_Error_string(rc, text, &len);
    printf("rank %d: %s\n", rank, text);
    fflush(stdout);
    MPI_Comm_free(&half);
    MPI_Finalize();
    return 0;
}
